//! The producer's configuration: one struct, the single source of truth for every option of
//! the engine and of the Python and Node fronts (which take the same names).
//!
//! Every field has a documented default and unit; [`ProducerConfig::validate`] checks each
//! against the service's limits and returns a [`ConfigError`] naming the key, the value and the
//! allowed range. Validation does no I/O; resolving the endpoint, credentials and HTTP client
//! happens once when the producer is built.

use std::net::SocketAddr;
use std::time::Duration;

use crate::wire::compress::Compression;
use crate::wire::keys::KeyPolicy;
use crate::wire::limits::{
    MAX_KEY_BYTES, MAX_LOGS_PER_GROUP, MAX_LOG_GROUP_BYTES, MAX_RAW_BODY_BYTES, MAX_SOURCE_BYTES,
    MAX_TOPIC_BYTES,
};
use crate::wire::names::{self, NameKind};

/// Largest batch the producer builds: 4 MiB of logs leaves room for the topic, source and
/// tags under the service's 5 MiB log group.
pub const MAX_BATCH_BYTES: usize = MAX_LOG_GROUP_BYTES - 1024 * 1024;

/// Which signature the producer sends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SignatureVersion {
    /// HMAC-SHA1 (every SDK's default).
    #[default]
    V1,
    /// SLS4-HMAC-SHA256; needs `region`.
    V4,
}

/// How much of a log's time is written: the seconds always; the sub-second part to the
/// nanosecond, the millisecond, or not at all. Four bytes that change on every log cost lz4
/// its matches between consecutive records; milliseconds shared by the records of one
/// millisecond compress nearly as well as none and still order a query's results within a
/// second.
///
/// The default is `ns`, measured (`core/examples/time_precision.rs`): on logs that vary as
/// real ones do (an access log, 4:1 under lz4) the nanoseconds cost 5 % more bytes on the wire
/// than milliseconds or none (71 against 68 bytes per log), at any rate; milliseconds save
/// something only when many records share a millisecond and are otherwise near-identical
/// (the S1 benchmark at 200 000 logs/s: 5.5 against 8.7 bytes per log; at 1 000 logs/s the
/// two are equal). For 5 % the default keeps the order of records within a millisecond and the
/// time a front was given (Python's `time.time()`, a `LogRecord`'s `created`). `s` also reads
/// the coarse clock (a few milliseconds old, about a quarter of the cost).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TimePrecision {
    /// Seconds only (what the vendor's C producer writes).
    #[serde(rename = "s")]
    Seconds,
    /// Seconds and the millisecond (the nanosecond field, rounded down to a whole millisecond).
    #[serde(rename = "ms")]
    Milliseconds,
    /// Seconds and the nanosecond. The default.
    #[default]
    #[serde(rename = "ns")]
    Nanoseconds,
}

impl TimePrecision {
    /// The sub-second part written for `nanos` at this precision.
    #[inline]
    pub fn apply(self, nanos: Option<u32>) -> Option<u32> {
        match self {
            TimePrecision::Seconds => None,
            TimePrecision::Milliseconds => nanos.map(|n| n - n % 1_000_000),
            TimePrecision::Nanoseconds => nanos,
        }
    }
}

/// Every option of a producer. Build one with `ProducerConfig::new(endpoint, project,
/// logstore)` or a preset, adjust fields, and hand it to `Producer::new`.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProducerConfig {
    /// Service endpoint, `http://` or `https://` (scheme optional, `http` by default), e.g.
    /// `https://cn-hangzhou.log.aliyuncs.com` or the emulator's `http://127.0.0.1:PORT`.
    /// A host name is addressed as `{project}.{host}`; an IP address is connected to directly
    /// with `Host: {project}.{ip}`.
    pub endpoint: String,
    /// Default project of records.
    pub project: String,
    /// Default logstore of records.
    pub logstore: String,
    /// AccessKeyId (with `access_key_secret`), unless `api_key` or a credentials provider is used.
    pub access_key_id: String,
    /// AccessKeySecret.
    pub access_key_secret: String,
    /// STS security token, for temporary keys.
    pub security_token: Option<String>,
    /// API key sent as `Authorization: Bearer`; exclusive with access keys.
    pub api_key: Option<String>,
    /// Signature version. Default v1.
    pub signature_version: SignatureVersion,
    /// Region for signature v4, e.g. `cn-hangzhou`.
    pub region: Option<String>,
    /// Default topic (`__topic__`). Default empty.
    pub topic: String,
    /// Default source (`__source__`). Default: this host's outbound IP address.
    pub source: Option<String>,
    /// Tags added to every group, in order, before `__pack_id__`.
    pub tags: Vec<(String, String)>,
    /// A batch seals when its raw (uncompressed) size reaches this many bytes. Default 3 MiB;
    /// 1 byte to 4 MiB (the service takes log groups of up to 5 MiB).
    pub batch_max_bytes: usize,
    /// A batch seals when it holds this many logs. Default 4096; 1 to 40 960.
    pub batch_max_count: usize,
    /// A batch seals this many milliseconds after its first log. Default 2000; 0 sends every
    /// add at once.
    pub linger_ms: u64,
    /// Raw bytes held in open, sealed, in-flight and retrying batches at most. Default 64 MiB.
    pub buffer_max_bytes: usize,
    /// When the buffer is full, an add waits up to this many milliseconds for room, then fails
    /// with `BufferFull`. Default 0: fail at once, never block the caller.
    pub max_block_ms: u64,
    /// Batches being sent at once. Default 8; 1 to 1024.
    pub send_concurrency: usize,
    /// Body compression. Default lz4.
    pub compression: Compression,
    /// TCP connect timeout, ms. Default 10 000.
    pub connect_timeout_ms: u64,
    /// Whole-request timeout, ms. Default 15 000.
    pub request_timeout_ms: u64,
    /// Attempts per batch, the first included. Default 10; 1 means no retry.
    pub max_attempts: u32,
    /// First retry delay, ms (full jitter: each delay is random in `[0, min(cap, base·2^n)]`).
    /// Default 200.
    pub backoff_base_ms: u64,
    /// Longest retry delay, ms. Default 10 000.
    pub backoff_max_ms: u64,
    /// A batch not delivered this many ms after its first log fails. Default 600 000.
    pub delivery_timeout_ms: u64,
    /// Extra attempts for a 401 (credentials may rotate meanwhile). Default 3.
    pub unauthorized_attempts: u32,
    /// PEM file of an extra CA to trust for HTTPS (certificate checks stay on).
    pub ca_file: Option<String>,
    /// Connect to this address whatever the endpoint resolves to (the request keeps its Host).
    pub remote_address: Option<SocketAddr>,
    /// Map shard keys onto `shard_buckets` evenly spread hash keys (md5), as the Go and Java
    /// producers do. Default off: shard keys are sent as given (hex).
    pub adjust_shard_hash: bool,
    /// Buckets for `adjust_shard_hash`, a power of two from 1 to 256. Default 64.
    pub shard_buckets: u32,
    /// Add the `__pack_id__` tag (`PREFIX-SEQ`), stable across retries. Default on.
    pub pack_id: bool,
    /// Which field keys `add` accepts. Default: what the service accepts.
    pub key_policy: KeyPolicy,
    /// How long dropping a producer waits for delivery, ms. Default 2000.
    pub drop_timeout_ms: u64,
    /// A directory where every accepted record is also kept until its batch is delivered, so
    /// that a killed process loses nothing: the next producer opened on the directory sends
    /// what was left. Default none (memory only). Producers share it: each takes a slot
    /// directory of its own under it (`slot-<n>`), so the worker processes of a pre-fork
    /// server can all be given the same `spool_dir`; a slot left by a process that died is
    /// sent by the next producer that takes it (or that finds it unheld).
    pub spool_dir: Option<String>,
    /// How many producers may hold a slot of `spool_dir` at once; one more is refused with
    /// the spool-locked error naming the directory and a holder's pid. Default 64; 1 to 1024
    /// (1: one producer per directory).
    pub spool_slots: u32,
    /// Most bytes of spool files on disk, per producer (per slot); beyond it records wait or
    /// fail as for a full buffer. Default 1 GiB; at least 1 MiB.
    pub spool_max_bytes: u64,
    /// How far the spool is synced to disk: `none` (survives the process's death, not a
    /// power loss), `batch` (each batch synced when it seals, before it is sent) or
    /// `interval:<ms>`. Default `none`.
    pub spool_sync: String,
    /// How long the Python and Node fronts spend delivering what is held when the process
    /// gets SIGTERM or SIGINT, ms, before letting the signal take its usual course (the
    /// application's own handler, or the default: the process ends by that signal). 0 turns
    /// the handling off. Default 5000. The Rust engine itself installs no handler: a Rust
    /// application calls `close` from its own.
    pub close_on_signal_ms: u64,
    /// How much of each log's time is written: `"s"`, `"ms"` or `"ns"` (see
    /// [`TimePrecision`]). Default `"ns"`.
    pub time_precision: TimePrecision,
}

impl std::fmt::Debug for ProducerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut redacted = self.clone();
        if !redacted.access_key_secret.is_empty() {
            redacted.access_key_secret = "<redacted>".into();
        }
        redacted.security_token = redacted.security_token.map(|_| "<redacted>".into());
        redacted.api_key = redacted.api_key.map(|_| "<redacted>".into());
        f.write_str(&serde_json::to_string(&redacted).unwrap_or_default())
    }
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            endpoint: String::new(),
            project: String::new(),
            logstore: String::new(),
            access_key_id: String::new(),
            access_key_secret: String::new(),
            security_token: None,
            api_key: None,
            signature_version: SignatureVersion::V1,
            region: None,
            topic: String::new(),
            source: None,
            tags: Vec::new(),
            batch_max_bytes: 3 * 1024 * 1024,
            batch_max_count: 4096,
            linger_ms: 2000,
            buffer_max_bytes: 64 * 1024 * 1024,
            max_block_ms: 0,
            send_concurrency: 8,
            compression: Compression::Lz4,
            connect_timeout_ms: 10_000,
            request_timeout_ms: 15_000,
            max_attempts: 10,
            backoff_base_ms: 200,
            backoff_max_ms: 10_000,
            delivery_timeout_ms: 600_000,
            unauthorized_attempts: 3,
            ca_file: None,
            remote_address: None,
            adjust_shard_hash: false,
            shard_buckets: 64,
            pack_id: true,
            key_policy: KeyPolicy::Service,
            drop_timeout_ms: 2000,
            spool_dir: None,
            spool_slots: 64,
            spool_max_bytes: 1 << 30,
            spool_sync: "none".into(),
            close_on_signal_ms: 5000,
            time_precision: TimePrecision::Nanoseconds,
        }
    }
}

/// A configuration value that cannot work, naming the key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A required key is empty.
    #[error("`{key}` is required")]
    Missing {
        /// The key.
        key: &'static str,
    },
    /// No credentials: no `access_key_id`, no `api_key`, no provider, and nothing in the
    /// environment.
    #[error("no credentials: give `access_key_id` and `access_key_secret` (or `api_key`, or a credentials provider), or set {ENV_ACCESS_KEY_ID} and {ENV_ACCESS_KEY_SECRET}")]
    NoCredentials,
    /// A number outside its range.
    #[error("`{key}` is {value}, but must be from {min} to {max}")]
    OutOfRange {
        /// The key.
        key: &'static str,
        /// The value given.
        value: u64,
        /// Smallest allowed.
        min: u64,
        /// Largest allowed.
        max: u64,
    },
    /// A value of the wrong form.
    #[error("`{key}` = {value:?} is invalid: {reason}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// The value given.
        value: String,
        /// Why.
        reason: String,
    },
    /// An option given with the wrong type or an unknown name (from [`ProducerConfig::from_json`]).
    #[error("`{key}`: {message}")]
    Parse {
        /// The option (empty when the JSON itself is malformed).
        key: String,
        /// What is wrong; never the value of a secret.
        message: String,
    },
    /// A preset name that does not exist.
    #[error("unknown preset {0:?} (expected \"server\" or \"pi\")")]
    UnknownPreset(String),
}

fn range(key: &'static str, value: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::OutOfRange {
            key,
            value,
            min,
            max,
        })
    }
}

/// serde's message for a bad option, made plain: an unknown name gets the nearest known one
/// ("did you mean") instead of the list of all of them, and a wrong type says the unit the
/// option's name implies.
fn explain_parse_error(key: &str, text: String) -> String {
    if let Some(rest) = text.strip_prefix("unknown field `") {
        let unknown = rest.split('`').next().unwrap_or_default();
        let nearest = ProducerConfig::option_names()
            .into_iter()
            .map(|name| (strsim::damerau_levenshtein(unknown, &name), name))
            .filter(|(distance, name)| *distance <= 2.max(name.len() / 4))
            .min();
        return match nearest {
            Some((_, name)) => format!("unknown option; did you mean `{name}`?"),
            None => "unknown option (every option is listed on ProducerConfig)".to_owned(),
        };
    }
    if !text.starts_with("invalid type") && !text.starts_with("invalid value") {
        return text;
    }
    let unit = if key.ends_with("_ms") {
        " (milliseconds)"
    } else if key.ends_with("_bytes") {
        " (bytes)"
    } else {
        ""
    };
    let integer = [" u8", " u16", " u32", " u64", " usize"]
        .iter()
        .any(|t| text.ends_with(t));
    if integer {
        let head = text
            .rsplit_once(", expected")
            .map_or(text.as_str(), |(h, _)| h);
        format!("{head}, expected a whole number{unit}")
    } else {
        format!("{text}{unit}")
    }
}

/// The environment variable read for the AccessKeyId when no credentials are given.
pub const ENV_ACCESS_KEY_ID: &str = "ALIBABA_CLOUD_ACCESS_KEY_ID";
/// The environment variable read for the AccessKeySecret.
pub const ENV_ACCESS_KEY_SECRET: &str = "ALIBABA_CLOUD_ACCESS_KEY_SECRET";
/// The environment variable read for an STS security token.
pub const ENV_SECURITY_TOKEN: &str = "ALIBABA_CLOUD_SECURITY_TOKEN";

/// Options whose values error messages never show.
const SECRET_OPTIONS: [&str; 4] = [
    "access_key_id",
    "access_key_secret",
    "security_token",
    "api_key",
];

fn name(key: &'static str, kind: NameKind, value: &str) -> Result<(), ConfigError> {
    if value.is_empty() {
        return Err(ConfigError::Missing { key });
    }
    if names::is_valid_name(kind, value) {
        Ok(())
    } else {
        Err(ConfigError::Invalid {
            key,
            value: value.into(),
            reason: kind.rule().into(),
        })
    }
}

impl ProducerConfig {
    /// A configuration with the defaults and the three required keys.
    pub fn new(
        endpoint: impl Into<String>,
        project: impl Into<String>,
        logstore: impl Into<String>,
    ) -> Self {
        ProducerConfig {
            endpoint: endpoint.into(),
            project: project.into(),
            logstore: logstore.into(),
            ..Default::default()
        }
    }

    /// The vendor's benchmark configurations (`docs/scenarios.md`): `server` (64 MiB buffer,
    /// batches of 4 MiB / 4096 logs / 3 s, 16 sends at once) and `pi` (10 MiB buffer, batches
    /// of 1 MiB / 1000 logs / 3 s, 4 sends at once).
    pub fn preset(name: &str) -> Result<Self, ConfigError> {
        let base = ProducerConfig::default();
        match name {
            "server" => Ok(ProducerConfig {
                buffer_max_bytes: 64 << 20,
                batch_max_bytes: 4 << 20,
                batch_max_count: 4096,
                linger_ms: 3000,
                send_concurrency: 16,
                ..base
            }),
            "pi" => Ok(ProducerConfig {
                buffer_max_bytes: 10 << 20,
                batch_max_bytes: 1 << 20,
                batch_max_count: 1000,
                linger_ms: 3000,
                send_concurrency: 4,
                ..base
            }),
            other => Err(ConfigError::UnknownPreset(other.into())),
        }
    }

    /// Parses a configuration given as JSON with the engine's option names (what the Python and
    /// Node fronts pass), then validates it. A wrong type or an unknown name is an error naming
    /// the option; the value of a secret (`access_key_id`, `access_key_secret`,
    /// `security_token`, `api_key`) never appears in the message.
    pub fn from_json(json: &str) -> Result<ProducerConfig, ConfigError> {
        let mut de = serde_json::Deserializer::from_str(json);
        let config: ProducerConfig = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let key = e.path().to_string();
            let key = if key == "." { String::new() } else { key };
            let error = e.into_inner();
            let message = if SECRET_OPTIONS.iter().any(|s| key.starts_with(s)) {
                "must be a string (the value given is not shown)".to_owned()
            } else {
                let text = error.to_string();
                // The option is named; where in the JSON it was is noise to the caller.
                let text = match text.rfind(" at line ") {
                    Some(at) => text[..at].to_owned(),
                    None => text,
                };
                explain_parse_error(&key, text)
            };
            ConfigError::Parse { key, message }
        })?;
        Ok(config)
    }

    /// This configuration with the keys of the standard environment variables
    /// (`ALIBABA_CLOUD_ACCESS_KEY_ID`, `ALIBABA_CLOUD_ACCESS_KEY_SECRET`, and
    /// `ALIBABA_CLOUD_SECURITY_TOKEN` for an STS key) when it names no credentials itself (no
    /// `access_key_id`, no `api_key`); otherwise unchanged. [`Producer::build`] does this when
    /// no credentials provider is given.
    ///
    /// [`Producer::build`]: super::Producer::build
    pub fn with_environment_credentials(self) -> ProducerConfig {
        self.with_credentials_from(|name| std::env::var(name).ok())
    }

    fn with_credentials_from(self, var: impl Fn(&str) -> Option<String>) -> ProducerConfig {
        if !self.access_key_id.is_empty() || self.api_key.is_some() {
            return self;
        }
        let Some(id) = var(ENV_ACCESS_KEY_ID).filter(|v| !v.is_empty()) else {
            return self;
        };
        ProducerConfig {
            access_key_id: id,
            access_key_secret: var(ENV_ACCESS_KEY_SECRET).unwrap_or_default(),
            security_token: var(ENV_SECURITY_TOKEN).filter(|v| !v.is_empty()),
            ..self
        }
    }

    /// Every option's name, as the fronts spell them.
    pub fn option_names() -> Vec<String> {
        match serde_json::to_value(ProducerConfig::default()) {
            Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// The preset names [`preset`](ProducerConfig::preset) knows.
    pub const PRESETS: [&'static str; 2] = ["server", "pi"];

    /// The options a preset sets (those that differ from the defaults), as a JSON object with
    /// the engine's option names: what the Python and Node fronts merge under the caller's
    /// own options, so the values live only here.
    pub fn preset_options_json(name: &str) -> Result<String, ConfigError> {
        let preset = serde_json::to_value(ProducerConfig::preset(name)?);
        let base = serde_json::to_value(ProducerConfig::default());
        let (Ok(serde_json::Value::Object(preset)), Ok(serde_json::Value::Object(base))) =
            (preset, base)
        else {
            return Err(ConfigError::UnknownPreset(name.into()));
        };
        let changed: serde_json::Map<String, serde_json::Value> = preset
            .into_iter()
            .filter(|(k, v)| base.get(k) != Some(v))
            .collect();
        Ok(serde_json::Value::Object(changed).to_string())
    }

    /// Checks every key; the first problem found is returned.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.endpoint.trim().is_empty() {
            return Err(ConfigError::Missing { key: "endpoint" });
        }
        let (_, host) = split_endpoint(&self.endpoint)?;
        if host.is_empty() {
            return Err(ConfigError::Invalid {
                key: "endpoint",
                value: self.endpoint.clone(),
                reason: "has no host".into(),
            });
        }
        name("project", NameKind::Project, &self.project)?;
        name("logstore", NameKind::Logstore, &self.logstore)?;
        match (
            &self.api_key,
            self.access_key_id.is_empty(),
            self.access_key_secret.is_empty(),
        ) {
            (Some(k), true, true) if !k.is_empty() => {}
            (Some(_), _, _) => {
                return Err(ConfigError::Invalid {
                    key: "api_key",
                    value: "<redacted>".into(),
                    reason:
                        "is exclusive with access_key_id/access_key_secret and must not be empty"
                            .into(),
                })
            }
            (None, true, _) => return Err(ConfigError::NoCredentials),
            (None, false, true) => {
                return Err(ConfigError::Missing {
                    key: "access_key_secret",
                })
            }
            (None, false, false) => {}
        }
        if self.signature_version == SignatureVersion::V4
            && self.region.as_deref().unwrap_or("").is_empty()
        {
            return Err(ConfigError::Missing { key: "region" });
        }
        if self.topic.len() > MAX_TOPIC_BYTES {
            return Err(ConfigError::OutOfRange {
                key: "topic",
                value: self.topic.len() as u64,
                min: 0,
                max: MAX_TOPIC_BYTES as u64,
            });
        }
        if let Some(s) = &self.source {
            range("source", s.len() as u64, 0, MAX_SOURCE_BYTES as u64)?;
        }
        for (k, _) in &self.tags {
            if k.is_empty() || k.len() > MAX_KEY_BYTES || k == "__pack_id__" {
                return Err(ConfigError::Invalid {
                    key: "tags",
                    value: k.clone(),
                    reason: "tag keys are 1 to 128 bytes and not __pack_id__".into(),
                });
            }
        }
        range(
            "batch_max_bytes",
            self.batch_max_bytes as u64,
            1,
            MAX_BATCH_BYTES as u64,
        )?;
        range(
            "batch_max_count",
            self.batch_max_count as u64,
            1,
            MAX_LOGS_PER_GROUP as u64,
        )?;
        range("linger_ms", self.linger_ms, 0, 3_600_000)?;
        range(
            "buffer_max_bytes",
            self.buffer_max_bytes as u64,
            self.batch_max_bytes.min(MAX_RAW_BODY_BYTES) as u64,
            1 << 40,
        )?;
        range("max_block_ms", self.max_block_ms, 0, 3_600_000)?;
        range("spool_max_bytes", self.spool_max_bytes, 1 << 20, 1 << 50)?;
        range("spool_slots", u64::from(self.spool_slots), 1, 1024)?;
        if super::spool::SpoolSync::parse(&self.spool_sync).is_none() {
            return Err(ConfigError::Invalid {
                key: "spool_sync",
                value: self.spool_sync.clone(),
                reason: "must be none, batch or interval:<ms>".into(),
            });
        }
        if self
            .spool_dir
            .as_deref()
            .is_some_and(|d| d.trim().is_empty())
        {
            return Err(ConfigError::Invalid {
                key: "spool_dir",
                value: String::new(),
                reason: "must name a directory (leave it unset for no spool)".into(),
            });
        }
        range("close_on_signal_ms", self.close_on_signal_ms, 0, 600_000)?;
        range("send_concurrency", self.send_concurrency as u64, 1, 1024)?;
        range("connect_timeout_ms", self.connect_timeout_ms, 1, 600_000)?;
        range("request_timeout_ms", self.request_timeout_ms, 1, 3_600_000)?;
        range("max_attempts", u64::from(self.max_attempts), 1, 1_000_000)?;
        range("backoff_base_ms", self.backoff_base_ms, 1, 3_600_000)?;
        range(
            "backoff_max_ms",
            self.backoff_max_ms,
            self.backoff_base_ms,
            3_600_000,
        )?;
        range(
            "delivery_timeout_ms",
            self.delivery_timeout_ms,
            1,
            30 * 86_400_000,
        )?;
        range(
            "unauthorized_attempts",
            u64::from(self.unauthorized_attempts),
            0,
            1000,
        )?;
        if !self.shard_buckets.is_power_of_two() || self.shard_buckets > 256 {
            return Err(ConfigError::Invalid {
                key: "shard_buckets",
                value: self.shard_buckets.to_string(),
                reason: "must be a power of two from 1 to 256".into(),
            });
        }
        range("drop_timeout_ms", self.drop_timeout_ms, 0, 600_000)?;
        Ok(())
    }

    /// `linger_ms` as a duration.
    pub fn linger(&self) -> Duration {
        Duration::from_millis(self.linger_ms)
    }
}

/// Splits an endpoint into (https?, host[:port]) without scheme, path or trailing slash.
pub(crate) fn split_endpoint(endpoint: &str) -> Result<(bool, String), ConfigError> {
    let e = endpoint.trim();
    let (https, rest) = if let Some(r) = e.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = e.strip_prefix("http://") {
        (false, r)
    } else if e.contains("://") {
        return Err(ConfigError::Invalid {
            key: "endpoint",
            value: e.into(),
            reason: "scheme must be http or https".into(),
        });
    } else {
        (false, e)
    };
    let host = rest.split('/').next().unwrap_or("").to_owned();
    Ok((https, host))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> ProducerConfig {
        ProducerConfig {
            access_key_id: "id".into(),
            access_key_secret: "s".into(),
            ..ProducerConfig::new("http://127.0.0.1:1", "proj", "logs")
        }
    }

    #[test]
    fn json_errors_name_the_option_and_never_show_a_secret() {
        let err = ProducerConfig::from_json(r#"{"linger_ms": "10"}"#).unwrap_err();
        assert!(matches!(&err, ConfigError::Parse { key, .. } if key == "linger_ms"));
        assert!(!err.to_string().contains("line 1"), "{err}");
        assert_eq!(
            err.to_string(),
            "`linger_ms`: invalid type: string \"10\", expected a whole number (milliseconds)"
        );
        let err = ProducerConfig::from_json(r#"{"lingr_ms": 10}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`lingr_ms`: unknown option; did you mean `linger_ms`?"
        );
        let err = ProducerConfig::from_json(r#"{"bufer_max_bytes": -1}"#).unwrap_err();
        assert!(
            err.to_string().contains("did you mean `buffer_max_bytes`?"),
            "{err}"
        );
        let err = ProducerConfig::from_json(r#"{"colour": 1}"#).unwrap_err();
        assert!(err.to_string().contains("unknown option ("), "{err}");
        let err = ProducerConfig::from_json(r#"{"batch_max_bytes": -1}"#).unwrap_err();
        assert!(err.to_string().ends_with("(bytes)"), "{err}");
        for secret in SECRET_OPTIONS {
            let json = format!(r#"{{"{secret}": 987654321}}"#);
            let err = ProducerConfig::from_json(&json).unwrap_err();
            let text = err.to_string();
            assert!(
                text.contains(secret) && !text.contains("987654321"),
                "{text}"
            );
        }
        let ok = ProducerConfig::from_json(r#"{"project": "p", "linger_ms": 5}"#).unwrap();
        assert_eq!((ok.project.as_str(), ok.linger_ms), ("p", 5));
    }

    #[test]
    fn environment_credentials_fill_in_only_when_none_are_given() {
        let env = |name: &str| {
            Some(match name {
                ENV_ACCESS_KEY_ID => "env-id".to_owned(),
                ENV_ACCESS_KEY_SECRET => "env-secret".to_owned(),
                ENV_SECURITY_TOKEN => "env-token".to_owned(),
                _ => return None,
            })
        };
        let bare = ProducerConfig::new("http://127.0.0.1:1", "proj", "logs");
        assert!(matches!(bare.validate(), Err(ConfigError::NoCredentials)));
        let filled = bare.clone().with_credentials_from(env);
        assert_eq!(
            (
                filled.access_key_id.as_str(),
                filled.access_key_secret.as_str(),
                filled.security_token.as_deref()
            ),
            ("env-id", "env-secret", Some("env-token"))
        );
        assert!(filled.validate().is_ok());
        let given = ok().with_credentials_from(env);
        assert_eq!(
            (given.access_key_id.as_str(), given.security_token),
            ("id", None)
        );
        let bearer = ProducerConfig {
            api_key: Some("k".into()),
            ..bare.clone()
        }
        .with_credentials_from(env);
        assert!(bearer.access_key_id.is_empty());
        let unset = bare.with_credentials_from(|_| None);
        assert!(unset.access_key_id.is_empty());
    }

    #[test]
    fn preset_options_are_the_changed_keys_only() {
        let pi: serde_json::Value =
            serde_json::from_str(&ProducerConfig::preset_options_json("pi").unwrap()).unwrap();
        assert_eq!(
            pi,
            serde_json::json!({"buffer_max_bytes": 10 << 20, "batch_max_bytes": 1 << 20,
                "batch_max_count": 1000, "linger_ms": 3000, "send_concurrency": 4})
        );
        for name in ProducerConfig::PRESETS {
            let options = ProducerConfig::preset_options_json(name).unwrap();
            let applied: ProducerConfig = serde_json::from_str(&options).unwrap();
            assert_eq!(applied, ProducerConfig::preset(name).unwrap());
        }
        assert!(matches!(
            ProducerConfig::preset_options_json("laptop"),
            Err(ConfigError::UnknownPreset(_))
        ));
    }

    #[test]
    fn defaults_validate_and_presets_match_the_vendor_runs() {
        ok().validate().unwrap();
        let server = ProducerConfig::preset("server").unwrap();
        assert_eq!(
            (
                server.buffer_max_bytes,
                server.batch_max_bytes,
                server.batch_max_count,
                server.linger_ms,
                server.send_concurrency
            ),
            (64 << 20, 4 << 20, 4096, 3000, 16)
        );
        let pi = ProducerConfig::preset("pi").unwrap();
        assert_eq!(
            (
                pi.buffer_max_bytes,
                pi.batch_max_bytes,
                pi.batch_max_count,
                pi.linger_ms,
                pi.send_concurrency
            ),
            (10 << 20, 1 << 20, 1000, 3000, 4)
        );
        assert_eq!(
            ProducerConfig::preset("desktop"),
            Err(ConfigError::UnknownPreset("desktop".into()))
        );
    }

    #[test]
    fn errors_name_the_key() {
        let cases: Vec<(ProducerConfig, &str)> = vec![
            (
                ProducerConfig {
                    endpoint: "".into(),
                    ..ok()
                },
                "endpoint",
            ),
            (
                ProducerConfig {
                    endpoint: "ftp://x".into(),
                    ..ok()
                },
                "endpoint",
            ),
            (
                ProducerConfig {
                    project: "".into(),
                    ..ok()
                },
                "project",
            ),
            (
                ProducerConfig {
                    logstore: "a b".into(),
                    ..ok()
                },
                "logstore",
            ),
            (
                ProducerConfig {
                    access_key_id: "".into(),
                    ..ok()
                },
                "access_key_id",
            ),
            (
                ProducerConfig {
                    access_key_secret: "".into(),
                    ..ok()
                },
                "access_key_secret",
            ),
            (
                ProducerConfig {
                    api_key: Some("k".into()),
                    ..ok()
                },
                "api_key",
            ),
            (
                ProducerConfig {
                    signature_version: SignatureVersion::V4,
                    ..ok()
                },
                "region",
            ),
            (
                ProducerConfig {
                    batch_max_bytes: 9 << 20,
                    ..ok()
                },
                "batch_max_bytes",
            ),
            (
                ProducerConfig {
                    batch_max_count: 40_961,
                    ..ok()
                },
                "batch_max_count",
            ),
            (
                ProducerConfig {
                    batch_max_count: 0,
                    ..ok()
                },
                "batch_max_count",
            ),
            (
                ProducerConfig {
                    send_concurrency: 0,
                    ..ok()
                },
                "send_concurrency",
            ),
            (
                ProducerConfig {
                    buffer_max_bytes: 10,
                    ..ok()
                },
                "buffer_max_bytes",
            ),
            (
                ProducerConfig {
                    max_attempts: 0,
                    ..ok()
                },
                "max_attempts",
            ),
            (
                ProducerConfig {
                    backoff_max_ms: 1,
                    ..ok()
                },
                "backoff_max_ms",
            ),
            (
                ProducerConfig {
                    shard_buckets: 3,
                    ..ok()
                },
                "shard_buckets",
            ),
            (
                ProducerConfig {
                    topic: "t".repeat(129),
                    ..ok()
                },
                "topic",
            ),
            (
                ProducerConfig {
                    tags: vec![("__pack_id__".into(), "x".into())],
                    ..ok()
                },
                "tags",
            ),
        ];
        for (config, key) in cases {
            let err = config.validate().expect_err(key);
            assert!(
                err.to_string().contains(&format!("`{key}`")),
                "{key}: {err}"
            );
        }
        let api = ProducerConfig {
            api_key: Some("k".into()),
            access_key_id: "".into(),
            access_key_secret: "".into(),
            ..ok()
        };
        api.validate().unwrap();
    }

    #[test]
    fn config_round_trips_through_json_and_rejects_unknown_keys() {
        let c = ok();
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<ProducerConfig>(&json).unwrap(), c);
        assert!(serde_json::from_str::<ProducerConfig>(r#"{"lingerMs":1}"#).is_err());
        assert!(!format!(
            "{:?}",
            ProducerConfig {
                access_key_secret: "hunter2".into(),
                ..ok()
            }
        )
        .contains("hunter2"));
    }

    #[test]
    fn endpoints_split() {
        assert_eq!(
            split_endpoint("https://a.b.com/").unwrap(),
            (true, "a.b.com".into())
        );
        assert_eq!(
            split_endpoint("127.0.0.1:80").unwrap(),
            (false, "127.0.0.1:80".into())
        );
    }
}
