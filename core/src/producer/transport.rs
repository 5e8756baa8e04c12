//! Transport: credentials, addressing, and one PutLogs request on the wire.
//!
//! Built once per producer from its configuration: the endpoint is split into scheme and host
//! (a host name is addressed as `{project}.{host}`; an IP address is connected to directly
//! with `Host: {project}.{ip}`), the HTTP client is shared with every producer of the process
//! that has the same transport settings ([`engine`](super::engine)) and is built when the first
//! request goes out (a producer that never sends, such as `loghose pipe` waiting for its first
//! line, never loads the HTTP and TLS code: 0.7 MB of resident memory), and where credentials
//! come from is decided once, by [`CredentialSource::resolve`]: static keys, a bearer key, a
//! [`CredentialsProvider`] asked before every attempt (so rotated STS tokens work mid-retry),
//! or the default credential chain.
//!
//! [`Transport::put`] signs with the clock corrected by the last offset the server reported,
//! sends, and reads the answer into an [`Answer`]: status, request id, the service's error
//! code and message, and the server's time when it said it. What the answer means is decided
//! elsewhere ([`retry`](super::retry)). Runs on the I/O runtime; never blocks a thread.
//!
//! `request_timeout_ms` counts the process's active time only: a function frozen mid-request
//! (SIGSTOP) reads at the thaw the answer that came meanwhile, rather than timing out and
//! sending the batch again (`within_active_time`).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use chrono::DateTime;

use super::config::{self, ConfigError, ProducerConfig, SignatureVersion};
use super::engine;
use super::error::ProducerError;
use super::retry::Answer;
use super::routing::Destination;
use crate::credentials::Chain;
use crate::wire::compress::Compression;
use crate::wire::request::{self, Auth, PutLogsTarget};
use crate::wire::sign::Credentials;

/// Supplies credentials before every attempt (for rotating STS tokens).
pub trait CredentialsProvider: Send + Sync {
    /// The credentials to sign the next request with, or why there are none.
    fn credentials(&self) -> Result<Credentials, String>;
}

pub(crate) enum CredentialSource {
    Static(Auth),
    Provider {
        provider: Arc<dyn CredentialsProvider>,
        region: Option<String>,
    },
    /// The default credential chain (no keys given).
    Chain {
        chain: Arc<Chain>,
        region: Option<String>,
    },
}

impl CredentialSource {
    /// Where a producer built from the validated `config` takes each request's credentials:
    /// the caller's `provider` first; else the bearer `api_key`; else the keys in `config`;
    /// with none of them, the default credential chain (probed now when only the metadata
    /// service could answer, so that a producer with no credentials anywhere fails here).
    pub(crate) fn resolve(
        config: &ProducerConfig,
        provider: Option<Arc<dyn CredentialsProvider>>,
        runtime: &tokio::runtime::Handle,
    ) -> Result<CredentialSource, ProducerError> {
        let region = (config.signature_version == SignatureVersion::V4)
            .then(|| config.region.clone().unwrap_or_default());
        if let Some(provider) = provider {
            return Ok(CredentialSource::Provider { provider, region });
        }
        if let Some(key) = &config.api_key {
            return Ok(CredentialSource::Static(Auth::Bearer(key.clone())));
        }
        if config.access_key_id.is_empty() {
            let chain = Arc::new(Chain::from_environment());
            probe_chain(&chain, runtime)?;
            return Ok(CredentialSource::Chain { chain, region });
        }
        let c = Credentials {
            access_key_id: config.access_key_id.clone(),
            access_key_secret: config.access_key_secret.clone(),
            security_token: config.security_token.clone(),
        };
        Ok(CredentialSource::Static(match region {
            Some(region) => Auth::V4 {
                credentials: c,
                region,
            },
            None => Auth::V1(c),
        }))
    }
}

/// Longest the constructor waits on the metadata service when it is the chain's only hope.
const CHAIN_PROBE_WAIT: Duration = Duration::from_secs(5);

/// With nothing set up but the ECS metadata service (which may or may not be there), asks it
/// now, so a producer with no credentials anywhere fails in its constructor, naming every
/// source, as it does without the chain; the keys it gets are kept for the first send. A
/// chain with a source set up is asked at the first send instead.
fn probe_chain(chain: &Arc<Chain>, runtime: &tokio::runtime::Handle) -> Result<(), ProducerError> {
    if chain.has_configured_source() {
        return Ok(());
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let asking = chain.clone();
    runtime.spawn(async move {
        let _ = tx.send(asking.credentials().await.map(|_| ()));
    });
    let outcome = rx
        .recv_timeout(CHAIN_PROBE_WAIT)
        .unwrap_or_else(|_| Err("the ECS metadata service did not answer in time".into()));
    outcome.map_err(|tried| ProducerError::Config(ConfigError::NoCredentialsFound { tried }))
}

/// How a producer reaches the service.
pub(crate) struct Transport {
    /// The shared client, from `client_key` at the first request.
    client: OnceLock<reqwest::Client>,
    client_key: engine::ClientKey,
    scheme: &'static str,
    /// `host[:port]` of the endpoint.
    pub(crate) endpoint_host: String,
    endpoint_is_ip: bool,
    credentials: CredentialSource,
    compression: Compression,
    /// Server clock minus ours, in ms, as the last clock-skew error said.
    clock_offset_ms: AtomicI64,
}

impl Transport {
    /// The transport for a validated `config`.
    pub(crate) fn new(
        config: &ProducerConfig,
        credentials: CredentialSource,
    ) -> Result<Transport, ProducerError> {
        let (https, endpoint_host) = config::split_endpoint(&config.endpoint)?;
        let bare_host = endpoint_host
            .rsplit_once(':')
            .filter(|(_, p)| p.parse::<u16>().is_ok())
            .map_or(endpoint_host.as_str(), |(h, _)| h);
        let endpoint_is_ip = bare_host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok();
        let ca_pem = match &config.ca_file {
            Some(path) => Some(std::fs::read(path).map_err(|source| ProducerError::CaFile {
                path: path.clone(),
                source,
            })?),
            None => None,
        };
        let client_key = engine::ClientKey {
            connect_timeout_ms: config.connect_timeout_ms,
            request_timeout_ms: config.request_timeout_ms,
            ca_pem,
            remote_address: config.remote_address,
            pool_size: config.send_concurrency,
            proxy_env: engine::proxy_env(),
        };
        let client = OnceLock::new();
        if client_key.ca_pem.is_some() {
            // A CA file means TLS is wanted: built now, so a bad file is the constructor's
            // error, not the first send's.
            let _ = client.set(engine::client(&client_key)?);
        }
        Ok(Transport {
            client,
            client_key,
            scheme: if https { "https" } else { "http" },
            endpoint_host,
            endpoint_is_ip,
            credentials,
            compression: config.compression,
            clock_offset_ms: AtomicI64::new(0),
        })
    }

    /// The credentials for the next attempt.
    async fn auth(&self) -> Result<Auth, String> {
        let (c, region) = match &self.credentials {
            CredentialSource::Static(a) => return Ok(a.clone()),
            CredentialSource::Provider { provider, region } => (provider.credentials()?, region),
            CredentialSource::Chain { chain, region } => (chain.credentials().await?, region),
        };
        Ok(match region {
            Some(region) => Auth::V4 {
                credentials: c,
                region: region.clone(),
            },
            None => Auth::V1(c),
        })
    }

    /// The default chain, when the credentials come from it.
    pub(crate) fn chain(&self) -> Option<&Arc<Chain>> {
        match &self.credentials {
            CredentialSource::Chain { chain, .. } => Some(chain),
            _ => None,
        }
    }

    /// (URL prefix, Host header) for a project.
    fn addressing(&self, project: &str) -> (String, String) {
        let host = format!("{project}.{}", self.endpoint_host);
        if self.endpoint_is_ip {
            (format!("{}://{}", self.scheme, self.endpoint_host), host)
        } else {
            (format!("{}://{host}", self.scheme), host)
        }
    }

    /// Takes the server's clock (unix seconds) as the reference for the next signatures.
    pub(crate) fn correct_clock(&self, server_time: i64) {
        let local = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.clock_offset_ms
            .store((server_time - local) * 1000, Ordering::Relaxed);
    }

    /// Now, as the server's clock reads it (as far as the last skew error told).
    fn signing_time(&self) -> SystemTime {
        let now = SystemTime::now();
        let offset = self.clock_offset_ms.load(Ordering::Relaxed);
        if offset >= 0 {
            now + Duration::from_millis(offset as u64)
        } else {
            now - Duration::from_millis(offset.unsigned_abs())
        }
    }

    /// One signed PutLogs of a compressed body; what came back.
    pub(crate) async fn put(&self, dest: &Destination, body: &Bytes, raw_len: usize) -> Answer {
        let credentials = match self.auth().await {
            Ok(a) => a,
            Err(message) => return Answer::credentials_unavailable(message),
        };
        let (url_base, host) = self.addressing(&dest.project);
        let target = PutLogsTarget {
            host: &host,
            logstore: &dest.logstore,
            hash_key: dest.hash_key.as_deref(),
        };
        let req = request::put_logs_compressed(
            target,
            body.clone(),
            raw_len,
            self.compression,
            &credentials,
            self.signing_time(),
        );
        let client = match self.client.get() {
            Some(c) => c,
            None => match engine::client(&self.client_key) {
                Ok(c) => self.client.get_or_init(|| c),
                Err(e) => {
                    return Answer::no_answer(false, format!("building the HTTP client: {e}"))
                }
            },
        };
        let mut builder = client.post(format!("{url_base}{}", req.path_and_query()));
        for (k, v) in &req.headers {
            if k != "Content-Length" {
                builder = builder.header(k.as_str(), v.as_str());
            }
        }
        let limit = Duration::from_millis(self.client_key.request_timeout_ms);
        let exchange = self.exchange(builder.body(req.body), &credentials);
        match within_active_time(limit, exchange).await {
            Some(answer) => answer,
            None => Answer::no_answer(
                true,
                format!(
                    "no answer within request_timeout_ms ({} ms) (endpoint {})",
                    limit.as_millis(),
                    self.endpoint_host
                ),
            ),
        }
    }

    /// Sends a built request and reads its answer.
    async fn exchange(&self, request: reqwest::RequestBuilder, credentials: &Auth) -> Answer {
        let resp = match request.send().await {
            Ok(r) => r,
            Err(e) => return Answer::no_answer(e.is_timeout(), describe(&e, &self.endpoint_host)),
        };
        let status = resp.status().as_u16();
        let request_id = resp
            .headers()
            .get("x-log-requestid")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if (200..300).contains(&status) {
            return Answer::delivered(status, request_id);
        }
        if status == 401 {
            if let (Some(chain), Auth::V1(c) | Auth::V4 { credentials: c, .. }) =
                (self.chain(), credentials)
            {
                chain.refused(&c.access_key_id);
            }
        }
        let date = resp
            .headers()
            .get("date")
            .and_then(|v| v.to_str().ok())
            .and_then(|d| DateTime::parse_from_rfc2822(d).ok())
            .map(|d| d.timestamp());
        let body = resp.bytes().await.unwrap_or_default();
        Answer::error(status, request_id, &body, date)
    }
}

/// How often a request's timeout looks at the clock.
const TIMEOUT_TICK: Duration = Duration::from_millis(100);

/// `exchange`, or `None` once it has run for `limit` of the process's active time. A gap between
/// two looks at the clock far longer than their interval is time the process spent stopped (a
/// function's freeze, SIGSTOP): it counts as one interval, so an answer that arrived while the
/// process was stopped is read at the thaw instead of being taken for a timeout (and its batch
/// sent again). The exchange is polled first whenever both are ready.
async fn within_active_time<F: std::future::Future>(
    limit: Duration,
    exchange: F,
) -> Option<F::Output> {
    let mut exchange = std::pin::pin!(exchange);
    let mut active = Duration::ZERO;
    let mut last = tokio::time::Instant::now();
    loop {
        let tick = tokio::time::sleep(TIMEOUT_TICK.min(limit.saturating_sub(active)));
        tokio::select! {
            biased;
            out = &mut exchange => return Some(out),
            () = tick => {
                let now = tokio::time::Instant::now();
                let gap = now - last;
                last = now;
                active += if gap > TIMEOUT_TICK * 10 { TIMEOUT_TICK } else { gap };
                if active >= limit {
                    return None;
                }
            }
        }
    }
}

/// A transport error with its causes (connection refused, DNS failure, TLS, timeout) and the
/// endpoint, which the HTTP client's own message leaves out.
fn describe(error: &reqwest::Error, endpoint: &str) -> String {
    let mut text = format!("{error}");
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    if !text.contains(endpoint) {
        text.push_str(&format!(" (endpoint {endpoint})"));
    }
    text
}

/// This host's address as the endpoint would see it (no packet is sent): the default source.
pub(crate) fn local_address(endpoint_host: &str) -> String {
    use std::net::{ToSocketAddrs, UdpSocket};
    let with_port = if endpoint_host
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        endpoint_host.to_owned()
    } else {
        format!("{endpoint_host}:80")
    };
    let found = with_port
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .and_then(|addr| {
            let socket = UdpSocket::bind(if addr.is_ipv4() {
                "0.0.0.0:0"
            } else {
                "[::]:0"
            })
            .ok()?;
            socket.connect(addr).ok()?;
            socket.local_addr().ok()
        });
    found.map_or_else(|| "127.0.0.1".to_owned(), |a| a.ip().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    #[tokio::test(start_paused = true)]
    async fn a_request_times_out_after_its_active_time_but_not_across_a_freeze() {
        let limit = Duration::from_secs(1);
        // No answer: given up after the limit (within a tick).
        let started = Instant::now();
        assert!(within_active_time(limit, std::future::pending::<()>())
            .await
            .is_none());
        assert!(started.elapsed() >= limit && started.elapsed() <= limit + TIMEOUT_TICK);
        // An answer in time is the answer.
        assert_eq!(within_active_time(limit, async { 7 }).await, Some(7));
        // Stopped for ten seconds mid-request (the clock jumps with nothing polled); at the thaw
        // the timer is seen first, and the answer a moment later is still read, not taken for a
        // timeout (counting the freeze, the limit would be long past).
        let (answer, answered) = tokio::sync::oneshot::channel::<u8>();
        let waiting = tokio::spawn(within_active_time(limit, answered));
        tokio::time::sleep(Duration::from_millis(300)).await;
        tokio::time::advance(Duration::from_secs(10)).await;
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished());
        answer.send(1).unwrap();
        assert_eq!(waiting.await.unwrap().map(Result::ok), Some(Some(1)));
        // And a request still unanswered after the freeze times out on its active time.
        let waiting = tokio::spawn(within_active_time(limit, std::future::pending::<()>()));
        tokio::time::sleep(Duration::from_millis(300)).await;
        tokio::time::advance(Duration::from_secs(10)).await;
        let thawed = Instant::now();
        assert!(waiting.await.unwrap().is_none());
        assert!(thawed.elapsed() >= Duration::from_millis(500));
    }
}
