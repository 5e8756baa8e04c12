//! Routing: where a record goes.
//!
//! A record's [`Destination`] is (project, logstore, topic, source, shard key); each has one
//! open batch. Per-record [`SendOptions`] override the producer's defaults; the [`Router`]
//! checks them against the service's rules (names, sizes, shard keys) and builds the
//! destination, and a record with no overrides skips it entirely (the common case costs one
//! branch). Runs on the caller's thread; takes no lock; never blocks.

use std::sync::Arc;

use md5::Digest as _;

use super::config::ProducerConfig;
use super::encode::RecordError;
use crate::wire::hashkey;
use crate::wire::limits::{MAX_SOURCE_BYTES, MAX_TOPIC_BYTES};
use crate::wire::names::{self, NameKind};

/// Per-record options; `None` uses the producer's default.
#[derive(Clone, Copy, Debug, Default)]
pub struct SendOptions<'a> {
    /// Unix seconds; default now.
    pub time: Option<u32>,
    /// Nanosecond part; default now's when `time` is unset.
    pub time_ns: Option<u32>,
    /// Topic of this record.
    pub topic: Option<&'a str>,
    /// Source of this record.
    pub source: Option<&'a str>,
    /// Shard key: hex (up to 32 digits), or any text with `adjust_shard_hash`.
    pub shard_key: Option<&'a str>,
    /// Project of this record.
    pub project: Option<&'a str>,
    /// Logstore of this record.
    pub logstore: Option<&'a str>,
}

impl SendOptions<'_> {
    /// Whether no option is set: a record that can take the plain add
    /// ([`Producer::add_with`](super::Producer::add_with)).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.time.is_none() && self.time_ns.is_none() && self.is_default_destination()
    }

    /// Whether the record goes to the producer's own destination.
    #[inline]
    pub(crate) fn is_default_destination(&self) -> bool {
        self.topic.is_none()
            && self.source.is_none()
            && self.shard_key.is_none()
            && self.project.is_none()
            && self.logstore.is_none()
    }
}

/// Where a batch goes: one open batch per destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Destination {
    pub(crate) project: Arc<str>,
    pub(crate) logstore: Arc<str>,
    pub(crate) topic: Arc<str>,
    pub(crate) source: Arc<str>,
    pub(crate) hash_key: Option<Arc<str>>,
}

/// Resolves per-record options into destinations.
pub(crate) struct Router {
    /// The producer's own destination.
    pub(crate) default: Arc<Destination>,
    adjust_shard_hash: bool,
    shard_buckets: u32,
}

impl Router {
    /// A router for `config`, whose records come from `source` unless they say otherwise.
    pub(crate) fn new(config: &ProducerConfig, source: String) -> Router {
        Router {
            default: Arc::new(Destination {
                project: config.project.as_str().into(),
                logstore: config.logstore.as_str().into(),
                topic: config.topic.as_str().into(),
                source: source.into(),
                hash_key: None,
            }),
            adjust_shard_hash: config.adjust_shard_hash,
            shard_buckets: config.shard_buckets,
        }
    }

    /// The destination `opts` name, or why it cannot be used.
    pub(crate) fn destination(&self, opts: &SendOptions<'_>) -> Result<Destination, RecordError> {
        let d = &self.default;
        let hash_key = match opts.shard_key {
            None => None,
            Some(key) => Some(self.hash_key(key)?),
        };
        if let Some(t) = opts.topic {
            check_len("topic", t, MAX_TOPIC_BYTES)?;
        }
        if let Some(s) = opts.source {
            check_len("source", s, MAX_SOURCE_BYTES)?;
        }
        if let Some(p) = opts.project {
            check_name("project", NameKind::Project, p)?;
        }
        if let Some(l) = opts.logstore {
            check_name("logstore", NameKind::Logstore, l)?;
        }
        Ok(Destination {
            project: opts.project.map_or_else(|| d.project.clone(), Arc::from),
            logstore: opts.logstore.map_or_else(|| d.logstore.clone(), Arc::from),
            topic: opts.topic.map_or_else(|| d.topic.clone(), Arc::from),
            source: opts.source.map_or_else(|| d.source.clone(), Arc::from),
            hash_key,
        })
    }

    /// The hash key a shard key routes to: the key itself (hex, lowercased), or with
    /// `adjust_shard_hash` the start of one of `shard_buckets` evenly spread ranges (md5 of the
    /// key), as the Go and Java producers do.
    fn hash_key(&self, key: &str) -> Result<Arc<str>, RecordError> {
        if self.adjust_shard_hash {
            let digest = md5::Md5::digest(key.as_bytes());
            let value = u128::from_be_bytes(digest.into());
            let bits = self.shard_buckets.trailing_zeros();
            let kept = if bits == 0 {
                0
            } else {
                value & !(u128::MAX >> bits)
            };
            return Ok(hashkey::format(kept).into());
        }
        hashkey::parse(key).ok_or(RecordError::InvalidOption {
            what: "shard_key",
            value: key.into(),
            reason: "must be 1 to 32 hex digits".into(),
        })?;
        Ok(key.to_ascii_lowercase().into())
    }
}

fn check_len(what: &'static str, value: &str, limit: usize) -> Result<(), RecordError> {
    if value.len() <= limit {
        return Ok(());
    }
    Err(RecordError::InvalidOption {
        what,
        value: value.into(),
        reason: format!("is longer than {limit} bytes").into(),
    })
}

fn check_name(what: &'static str, kind: NameKind, value: &str) -> Result<(), RecordError> {
    if names::is_valid_name(kind, value) {
        Ok(())
    } else {
        Err(RecordError::InvalidOption {
            what,
            value: value.into(),
            reason: kind.rule().into(),
        })
    }
}

/// Splits a time in (fractional) unix seconds, as scripting languages hold it, into the
/// seconds and nanoseconds a log carries; refuses what does not fit `0..2^32` seconds.
pub fn split_unix_seconds(time: f64) -> Result<(u32, u32), RecordError> {
    if !(0.0..4_294_967_296.0).contains(&time) {
        return Err(RecordError::InvalidOption {
            what: "time",
            value: time.to_string(),
            reason: "is outside unix seconds 0..2^32".into(),
        });
    }
    let secs = time.floor();
    Ok((secs as u32, ((time - secs) * 1e9) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router(adjust: bool) -> Router {
        let config = ProducerConfig {
            adjust_shard_hash: adjust,
            shard_buckets: 4,
            topic: "t".into(),
            ..ProducerConfig::new("http://127.0.0.1:1", "proj", "store")
        };
        Router::new(&config, "10.0.0.1".into())
    }

    #[test]
    fn options_override_the_defaults() {
        let r = router(false);
        let d = r
            .destination(&SendOptions {
                logstore: Some("other"),
                shard_key: Some("0A"),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(&*d.project, "proj");
        assert_eq!(&*d.logstore, "other");
        assert_eq!(&*d.topic, "t");
        assert_eq!(&*d.source, "10.0.0.1");
        assert_eq!(d.hash_key.as_deref(), Some("0a"));
        assert!(SendOptions::default().is_default_destination());
    }

    #[test]
    fn options_are_empty_only_when_none_is_set() {
        assert!(SendOptions::default().is_empty());
        let each = [
            SendOptions {
                time: Some(1),
                ..Default::default()
            },
            SendOptions {
                time_ns: Some(1),
                ..Default::default()
            },
            SendOptions {
                topic: Some(""),
                ..Default::default()
            },
            SendOptions {
                source: Some("s"),
                ..Default::default()
            },
            SendOptions {
                shard_key: Some("0a"),
                ..Default::default()
            },
            SendOptions {
                project: Some("p"),
                ..Default::default()
            },
            SendOptions {
                logstore: Some("l"),
                ..Default::default()
            },
        ];
        for opts in each {
            assert!(!opts.is_empty(), "{opts:?}");
        }
    }

    #[test]
    fn bad_options_name_themselves() {
        let r = router(false);
        let long = "x".repeat(129);
        for (opts, what) in [
            (
                SendOptions {
                    shard_key: Some("xyz"),
                    ..Default::default()
                },
                "shard_key",
            ),
            (
                SendOptions {
                    topic: Some(&long),
                    ..Default::default()
                },
                "topic",
            ),
            (
                SendOptions {
                    source: Some(&long),
                    ..Default::default()
                },
                "source",
            ),
            (
                SendOptions {
                    project: Some("a b"),
                    ..Default::default()
                },
                "project",
            ),
            (
                SendOptions {
                    logstore: Some(""),
                    ..Default::default()
                },
                "logstore",
            ),
        ] {
            match r.destination(&opts) {
                Err(RecordError::InvalidOption { what: w, .. }) => assert_eq!(w, what),
                other => panic!("{what}: {other:?}"),
            }
        }
    }

    #[test]
    fn fractional_seconds_split_into_seconds_and_nanoseconds() {
        assert_eq!(
            split_unix_seconds(1_700_000_000.5),
            Ok((1_700_000_000, 500_000_000))
        );
        assert_eq!(split_unix_seconds(0.0), Ok((0, 0)));
        for bad in [-1.0, 4_294_967_296.0, f64::NAN, f64::INFINITY] {
            match split_unix_seconds(bad) {
                Err(RecordError::InvalidOption { what: "time", .. }) => {}
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn adjusted_shard_keys_fall_on_bucket_starts() {
        let r = router(true);
        let mut starts = std::collections::BTreeSet::new();
        for i in 0..64 {
            let key = format!("device-{i}");
            let d = r
                .destination(&SendOptions {
                    shard_key: Some(&key),
                    ..Default::default()
                })
                .unwrap();
            starts.insert(d.hash_key.unwrap().to_string());
        }
        // Four buckets: the hash keys are the starts of the four quarters of the ring.
        assert_eq!(starts.len(), 4, "{starts:?}");
        assert!(starts
            .iter()
            .all(|k| k.len() == 32 && k[1..].chars().all(|c| c == '0')));
    }
}
