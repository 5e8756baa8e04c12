//! The producer's configuration: one struct, [`ProducerConfig`], generated with its defaults
//! from the table of options ([`OPTIONS`], in `options.rs`), the single source of truth for
//! every option of the engine and of the Python and Node fronts (which take the same names).
//!
//! [`ProducerConfig::validate`] checks every value against the table's kinds and ranges and
//! the service's rules, and returns a [`ConfigError`] naming the key, the value and the allowed
//! range. Validation does no I/O; resolving the endpoint, credentials and HTTP client happens
//! once when the producer is built.

use crate::wire::limits::MAX_KEY_BYTES;
use crate::wire::names::{self, NameKind};

mod options;
mod spec;
mod values;

pub use options::{ProducerConfig, FRONT_OPTIONS, OPTIONS};
pub use spec::{Front, FrontOption, OptionKind, OptionSpec, Unit};
pub use values::{ConcurrencyMode, SignatureVersion, SpoolSync, TimePrecision};

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
    /// No credentials given, and none of the default chain's sources gave any.
    #[error("no credentials: give `access_key_id` and `access_key_secret` (or `api_key`, or a credentials provider), or set {ENV_ACCESS_KEY_ID} and {ENV_ACCESS_KEY_SECRET}, or set up another source of the default credential chain; {tried}")]
    NoCredentialsFound {
        /// Each source and why it gave nothing.
        tried: String,
    },
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
pub(crate) const ENV_ACCESS_KEY_ID: &str = "ALIBABA_CLOUD_ACCESS_KEY_ID";
/// The environment variable read for the AccessKeySecret.
pub(crate) const ENV_ACCESS_KEY_SECRET: &str = "ALIBABA_CLOUD_ACCESS_KEY_SECRET";
/// The environment variable read for an STS security token.
pub(crate) const ENV_SECURITY_TOKEN: &str = "ALIBABA_CLOUD_SECURITY_TOKEN";

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
    /// The endpoint's host (a name or an address, IPv6 without brackets) and port (the
    /// scheme's when the endpoint names none): what monitoring calls the server's address.
    /// The requests themselves go to `{project}.{host}`, one name per project.
    pub fn server_address(&self) -> Result<(String, u16), ConfigError> {
        let (https, host) = split_endpoint(&self.endpoint)?;
        let default_port = if https { 443 } else { 80 };
        let (name, port) = match host.rsplit_once(':') {
            // `[::1]:8080`, `host:8080`; a bare IPv6 address has colons but no brackets.
            Some((name, port)) if !name.contains(':') || name.ends_with(']') => {
                let port = port.parse().map_err(|_| ConfigError::Invalid {
                    key: "endpoint",
                    value: self.endpoint.clone(),
                    reason: format!("port {port:?} is not a number from 0 to 65535"),
                })?;
                (name, port)
            }
            _ => (host.as_str(), default_port),
        };
        let name = name.trim_start_matches('[').trim_end_matches(']');
        Ok((name.to_owned(), port))
    }

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
    /// batches of 4 MiB / 4096 logs / 3 s; up to 64 sends at once, which adaptive concurrency
    /// reaches only across a long round trip, where the vendor's 16 send threads would cap a
    /// region away at a third of loopback's throughput) and `pi` (10 MiB buffer, batches of
    /// 1 MiB / 1000 logs / 3 s, 4 sends at once).
    pub fn preset(name: &str) -> Result<Self, ConfigError> {
        let base = ProducerConfig::default();
        match name {
            "server" => Ok(ProducerConfig {
                buffer_max_bytes: 64 << 20,
                batch_max_bytes: 4 << 20,
                batch_max_count: 4096,
                linger_ms: 3000,
                send_concurrency: 64,
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

    /// Checks every key; the first problem found is returned. The table's kinds and ranges
    /// first, in its order, then the rules between options.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (spec, value) in OPTIONS.iter().zip(self.table_values()) {
            check_option(spec, value, self)?;
        }
        let (_, host) = split_endpoint(&self.endpoint)?;
        if host.is_empty() {
            return Err(ConfigError::Invalid {
                key: "endpoint",
                value: self.endpoint.clone(),
                reason: "has no host".into(),
            });
        }
        self.server_address()?;
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
            // No keys: the default credential chain looks for them when the producer is built.
            (None, true, true) => {}
            (None, true, false) => {
                return Err(ConfigError::Missing {
                    key: "access_key_id",
                })
            }
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
        for (k, _) in &self.tags {
            if k.is_empty() || k.len() > MAX_KEY_BYTES || k == "__pack_id__" {
                return Err(ConfigError::Invalid {
                    key: "tags",
                    value: k.clone(),
                    reason: "tag keys are 1 to 128 bytes and not __pack_id__".into(),
                });
            }
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
        if matches!(self.spool_sync, SpoolSync::Interval(every) if every.is_zero()) {
            return Err(ConfigError::Invalid {
                key: "spool_sync",
                value: self.spool_sync.to_string(),
                reason: format!("must be {}", SpoolSync::FORMS),
            });
        }
        Ok(())
    }

    /// The value of the whole-number option `name`, as the table checks it.
    fn number(&self, name: &str) -> Option<u64> {
        let at = OPTIONS.iter().position(|o| o.name == name)?;
        self.table_values().get(at)?.as_number()
    }
}

/// Checks one option's value against its kind in the table.
fn check_option(
    spec: &OptionSpec,
    value: &dyn spec::OptionValue,
    config: &ProducerConfig,
) -> Result<(), ConfigError> {
    let key = spec.name;
    match spec.kind {
        OptionKind::Text {
            required,
            max_bytes,
        } => {
            let text = value.as_text().unwrap_or_default();
            if required && text.trim().is_empty() {
                return Err(ConfigError::Missing { key });
            }
            text_length(key, text, max_bytes)
        }
        OptionKind::OptionalText { max_bytes } => {
            text_length(key, value.as_text().unwrap_or_default(), max_bytes)
        }
        OptionKind::Name(kind) => name(key, kind, value.as_text().unwrap_or_default()),
        OptionKind::Number {
            min,
            max,
            at_least,
            power_of_two,
            ..
        } => {
            let Some(number) = value.as_number() else {
                return Ok(());
            };
            if power_of_two && !number.is_power_of_two() {
                return Err(ConfigError::Invalid {
                    key,
                    value: number.to_string(),
                    reason: format!("must be a power of two from {min} to {max}"),
                });
            }
            let floor = at_least
                .and_then(|other| config.number(other))
                .map_or(min, |other| other.max(min));
            range(key, number, floor, max)
        }
        OptionKind::Secret { .. }
        | OptionKind::Flag
        | OptionKind::Choice(_)
        | OptionKind::Tags
        | OptionKind::Address => Ok(()),
    }
}

fn text_length(key: &'static str, text: &str, max_bytes: usize) -> Result<(), ConfigError> {
    if max_bytes == 0 {
        return Ok(());
    }
    range(key, text.len() as u64, 0, max_bytes as u64)
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
        assert!(bare.validate().is_ok(), "the default chain looks for keys");
        let secret_alone = ProducerConfig {
            access_key_secret: "s".into(),
            ..bare.clone()
        };
        assert!(matches!(
            secret_alone.validate(),
            Err(ConfigError::Missing {
                key: "access_key_id"
            })
        ));
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
    fn defaults_validate_and_presets_match_the_vendor_runs_with_a_higher_send_ceiling() {
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
            (64 << 20, 4 << 20, 4096, 3000, 64)
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
    fn every_range_and_choice_in_the_table_is_what_validation_and_parsing_enforce() {
        let mut numbers = 0;
        for spec in OPTIONS {
            match spec.kind {
                OptionKind::Number { min, max, .. } => {
                    numbers += 1;
                    let with = |value: u64| {
                        let mut json = serde_json::to_value(ok()).unwrap();
                        json[spec.name] = value.into();
                        // One this option must be at least goes as low as it can; one that
                        // must be at least this option follows it up.
                        if let OptionKind::Number {
                            at_least: Some(floor),
                            ..
                        } = spec.kind
                        {
                            json[floor] = 1.into();
                        }
                        for other in OPTIONS {
                            if let OptionKind::Number {
                                at_least: Some(floor),
                                max: other_max,
                                ..
                            } = other.kind
                            {
                                if floor == spec.name {
                                    let current = json[other.name].as_u64().unwrap();
                                    json[other.name] = current.max(value).min(other_max).into();
                                }
                            }
                        }
                        serde_json::from_value::<ProducerConfig>(json)
                            .map_err(|e| ConfigError::Parse {
                                key: spec.name.into(),
                                message: e.to_string(),
                            })
                            .and_then(|c| c.validate())
                    };
                    with(min).unwrap_or_else(|e| panic!("{}: min {min}: {e}", spec.name));
                    with(max).unwrap_or_else(|e| panic!("{}: max {max}: {e}", spec.name));
                    for bad in [min.checked_sub(1), max.checked_add(1)]
                        .into_iter()
                        .flatten()
                    {
                        let err = with(bad).expect_err(spec.name);
                        assert!(
                            err.to_string().contains(&format!("`{}`", spec.name)),
                            "{}: {bad}: {err}",
                            spec.name
                        );
                    }
                }
                OptionKind::Choice(words) => {
                    for word in words {
                        let word = word.replace("<ms>", "250");
                        let json = format!(r#"{{"{}": "{word}"}}"#, spec.name);
                        let parsed = ProducerConfig::from_json(&json)
                            .unwrap_or_else(|e| panic!("{}: {word}: {e}", spec.name));
                        let back = serde_json::to_value(&parsed).unwrap();
                        assert_eq!(back[spec.name], serde_json::json!(word));
                    }
                    let json = format!(r#"{{"{}": "sometimes"}}"#, spec.name);
                    let err = ProducerConfig::from_json(&json).expect_err(spec.name);
                    assert!(err.to_string().contains(spec.name), "{err}");
                }
                _ => {}
            }
        }
        assert!(numbers >= 15, "{numbers}");
        let interval_zero = ProducerConfig {
            spool_sync: SpoolSync::Interval(std::time::Duration::ZERO),
            ..ok()
        };
        assert!(interval_zero
            .validate()
            .unwrap_err()
            .to_string()
            .contains("spool_sync"));
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

    #[test]
    fn server_addresses_name_the_host_and_the_port() {
        let at = |endpoint: &str| ProducerConfig::new(endpoint, "p", "l").server_address();
        assert_eq!(
            at("https://cn-hangzhou.log.aliyuncs.com/").unwrap(),
            ("cn-hangzhou.log.aliyuncs.com".into(), 443)
        );
        assert_eq!(
            at("cn-hangzhou.log.aliyuncs.com").unwrap(),
            ("cn-hangzhou.log.aliyuncs.com".into(), 80)
        );
        assert_eq!(
            at("http://127.0.0.1:8080").unwrap(),
            ("127.0.0.1".into(), 8080)
        );
        assert_eq!(at("http://[::1]:9").unwrap(), ("::1".into(), 9));
        assert_eq!(at("https://[::1]").unwrap(), ("::1".into(), 443));
        let error = at("http://host:port").unwrap_err().to_string();
        assert!(
            error.contains("endpoint") && error.contains("\"port\""),
            "{error}"
        );
    }
}
