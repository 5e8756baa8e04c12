//! The emulator's configuration ([`EmulatorConfig`]: address, keys, projects, limits, TLS,
//! faults, network and quotas), its defaults and its checks. Plain data read when an emulator
//! starts; imports nothing that runs one.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use super::error::EmulatorError;
use super::network::NetworkConfig;
use super::quotas::QuotaConfig;
use super::store;
use crate::wire::keys::KeyPolicy;

/// AccessKeyId the emulator accepts unless configured otherwise.
pub const DEFAULT_ACCESS_KEY_ID: &str = "loghose-emulator";
/// AccessKeySecret of [`DEFAULT_ACCESS_KEY_ID`].
pub const DEFAULT_ACCESS_KEY_SECRET: &str = "loghose-emulator-secret";
/// Project used for hosts that carry none (IP addresses, `localhost`).
pub const DEFAULT_PROJECT: &str = "loghose";

/// A permanent access key the emulator accepts.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AccessKey {
    /// AccessKeyId.
    pub id: String,
    /// AccessKeySecret.
    pub secret: String,
}

/// A temporary (STS) key: accepted only with its token in `x-acs-security-token`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StsKey {
    /// Temporary AccessKeyId.
    pub id: String,
    /// Temporary AccessKeySecret.
    pub secret: String,
    /// Security token.
    pub token: String,
}

/// Everything the emulator can be told.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmulatorConfig {
    /// Address to listen on. Default `127.0.0.1`.
    pub host: IpAddr,
    /// Port; 0 picks a free one. Default 0.
    pub port: u16,
    /// Permanent keys. Default: one, [`DEFAULT_ACCESS_KEY_ID`] / [`DEFAULT_ACCESS_KEY_SECRET`].
    pub access_keys: Vec<AccessKey>,
    /// Temporary keys with their tokens. Default none.
    pub sts_keys: Vec<StsKey>,
    /// Seconds a key handed out by the emulated STS (`AssumeRoleWithOIDC`, at most the
    /// `DurationSeconds` asked) or ECS metadata service lives before it is refused. Default
    /// 3 600.
    pub credentials_lifetime_secs: u64,
    /// API keys for `Authorization: Bearer`. Default none.
    pub api_keys: Vec<String>,
    /// Project for hosts that name none. Default [`DEFAULT_PROJECT`].
    pub default_project: String,
    /// Take the project from the first label of `Host` (`{project}.{endpoint}`). Default on;
    /// off serves every request as the default project (CNAME-style endpoints).
    pub project_from_host: bool,
    /// Create projects and logstores on first use. Default on; off answers 404
    /// `ProjectNotExist` / `LogStoreNotExist` until they are created.
    pub auto_create: bool,
    /// Shards of an auto-created logstore. Default 2.
    pub shard_count: u32,
    /// Most logstores held at once, over every project; past it auto-create answers 404
    /// `LogStoreNotExist` and the admin API 403 `ExceedQuota`. Default 1 000.
    pub max_logstores: usize,
    /// Bytes of accepted groups kept per logstore, counted as held: a compressed PutLogs body
    /// is kept (and counted) compressed. Older groups are dropped first, totals stay exact.
    /// Default 256 MiB.
    pub retention_bytes: usize,
    /// Largest accepted difference between a request's date and the clock, in seconds.
    /// Default 900 (the service's ±15 minutes).
    pub max_clock_skew_secs: i64,
    /// Which field keys are accepted. Default [`KeyPolicy::Service`].
    pub key_policy: KeyPolicy,
    /// Seconds added to the emulator's clock, to play a server whose clock differs from the
    /// client's (`RequestTimeExpired` tests). Default 0.
    pub clock_offset_secs: i64,
    /// Threads of the emulator's runtime. Default 2.
    pub worker_threads: usize,
    /// Serve HTTPS with this certificate instead of HTTP. Default none.
    pub tls: Option<EmulatorTls>,
    /// The network clients see: latency, jitter, bandwidth. Default none (loopback as it is).
    pub network: NetworkConfig,
    /// Write quotas per project and shard, auto split. Default none.
    pub quotas: QuotaConfig,
    /// A connection that has not sent a whole request head this many milliseconds after it
    /// began one is closed. Default 20 000.
    pub header_read_timeout_ms: u64,
    /// A request body that sends nothing for this many milliseconds is abandoned and its
    /// connection closed (what it held is freed). Default 10 000.
    pub body_idle_timeout_ms: u64,
    /// Connections served at once; one more is answered 503 and closed at once, so stalled
    /// clients cannot starve the rest. Default 4 096, lowered at start to what the process's
    /// open-file limit leaves room for (less 64 for everything else).
    pub max_connections: usize,
    /// Bytes of request bodies buffered at once over every connection; a body that does not
    /// fit is answered 503 `ServerBusy` (bodies over 64 KiB leave 8 MiB of it to small
    /// requests). At least 20 MiB, so a body of the largest size always fits. Default 48 MiB.
    pub max_body_buffer_bytes: usize,
    /// When set, every `/_emulator/` request must carry `Authorization: Bearer <token>`
    /// (else 401 `Unauthorized`). Required to listen on an address other than loopback, where
    /// the unauthenticated admin API would be open to the network. Default none.
    pub admin_token: Option<String>,
}

/// A certificate chain and key, PEM, for serving HTTPS.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EmulatorTls {
    /// Certificate chain, PEM, leaf first.
    pub cert_pem: String,
    /// Private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key_pem: String,
}

impl std::fmt::Debug for EmulatorTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmulatorTls")
            .field("key_pem", &"<redacted>")
            .finish_non_exhaustive()
    }
}

pub(super) fn tls_acceptor(tls: &EmulatorTls) -> Result<tokio_rustls::TlsAcceptor, EmulatorError> {
    let bad = |what: &str, e: &dyn std::fmt::Display| EmulatorError::Tls(format!("{what}: {e}"));
    let certs: Vec<_> = rustls_pemfile::certs(&mut tls.cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| bad("certificate", &e))?;
    if certs.is_empty() {
        return Err(EmulatorError::Tls("no certificate in cert_pem".into()));
    }
    let key = rustls_pemfile::private_key(&mut tls.key_pem.as_bytes())
        .map_err(|e| bad("private key", &e))?
        .ok_or_else(|| EmulatorError::Tls("no private key in key_pem".into()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("protocol versions", &e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad("certificate and key", &e))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            access_keys: vec![AccessKey {
                id: DEFAULT_ACCESS_KEY_ID.into(),
                secret: DEFAULT_ACCESS_KEY_SECRET.into(),
            }],
            sts_keys: Vec::new(),
            credentials_lifetime_secs: 3600,
            api_keys: Vec::new(),
            default_project: DEFAULT_PROJECT.into(),
            project_from_host: true,
            auto_create: true,
            shard_count: 2,
            max_logstores: 1000,
            retention_bytes: 256 * 1024 * 1024,
            max_clock_skew_secs: crate::wire::limits::MAX_CLOCK_SKEW_SECS,
            key_policy: KeyPolicy::Service,
            clock_offset_secs: 0,
            worker_threads: 2,
            tls: None,
            network: NetworkConfig::default(),
            quotas: QuotaConfig::default(),
            header_read_timeout_ms: 20_000,
            body_idle_timeout_ms: 10_000,
            max_connections: 4096,
            max_body_buffer_bytes: 48 * 1024 * 1024,
            admin_token: None,
        }
    }
}

/// The most threads the emulator's runtime may be given.
const MAX_WORKER_THREADS: usize = 256;
/// The smallest body budget: a body of the largest size plus the part kept for small ones.
const MIN_BODY_BUFFER_BYTES: usize = 20 * 1024 * 1024;
/// The largest clock offset or skew (a century): beyond it dates stop being representable.
const MAX_CLOCK_OFFSET_SECS: i64 = 100 * 365 * 24 * 3600;

impl EmulatorConfig {
    /// Refuses values the emulator cannot serve with: a shard count or default project the
    /// service would refuse, no room for a logstore, or the admin API on a non-loopback
    /// address without a token.
    pub fn check(&self) -> Result<(), EmulatorError> {
        let invalid =
            |key: &'static str, reason: String| Err(EmulatorError::Config { key, reason });
        if let Err(e) = store::check_shard_count(self.shard_count) {
            return invalid("shard_count", e.message);
        }
        let project_rule = crate::wire::names::NameKind::Project;
        if !crate::wire::names::is_valid_name(project_rule, &self.default_project) {
            return invalid(
                "default_project",
                format!("{:?} {}", self.default_project, project_rule.rule()),
            );
        }
        if !(1..=MAX_WORKER_THREADS).contains(&self.worker_threads) {
            return invalid(
                "worker_threads",
                format!("{} is not 1 to {MAX_WORKER_THREADS}", self.worker_threads),
            );
        }
        if self.max_logstores == 0 || self.max_connections == 0 {
            let key = if self.max_logstores == 0 {
                "max_logstores"
            } else {
                "max_connections"
            };
            return invalid(key, "must be at least 1".into());
        }
        if self.max_body_buffer_bytes < MIN_BODY_BUFFER_BYTES {
            return invalid(
                "max_body_buffer_bytes",
                format!(
                    "{} is below {MIN_BODY_BUFFER_BYTES}, the room a body of the largest size needs",
                    self.max_body_buffer_bytes
                ),
            );
        }
        if self.clock_offset_secs.abs() > MAX_CLOCK_OFFSET_SECS || self.max_clock_skew_secs < 0 {
            let key = if self.max_clock_skew_secs < 0 {
                "max_clock_skew_secs"
            } else {
                "clock_offset_secs"
            };
            return invalid(key, format!("must be 0 to {MAX_CLOCK_OFFSET_SECS} seconds"));
        }
        if self.admin_token.as_deref() == Some("") {
            return invalid("admin_token", "must not be empty".into());
        }
        if !self.host.is_loopback() && self.admin_token.is_none() {
            return invalid(
                "admin_token",
                format!(
                    "listening on {} would open the unauthenticated /_emulator/ API to the \
                     network: set an admin token (--admin-token, or LOGHOSE_EMULATOR_ADMIN_TOKEN) \
                     or listen on 127.0.0.1",
                    self.host
                ),
            );
        }
        Ok(())
    }
}
