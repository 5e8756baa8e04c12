//! The option values that are more than a number or a name: [`ConcurrencyMode`],
//! [`SignatureVersion`], [`TimePrecision`], [`SpoolSync`] (each parsed from and shown as the
//! text the options take), and the largest batch the producer builds. Plain values: what
//! `options` and `spec` describe and `ProducerConfig` holds; imports neither.

use std::time::Duration;

use crate::wire::limits::MAX_LOG_GROUP_BYTES;

/// Largest batch the producer builds: 4 MiB of logs leaves room for the topic, source and
/// tags under the service's 5 MiB log group.
pub(crate) const MAX_BATCH_BYTES: usize = MAX_LOG_GROUP_BYTES - 1024 * 1024;

/// How many batches a destination is sent at once (the `send_concurrency_mode` option).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConcurrencyMode {
    /// Learnt per destination from its round trips and push backs, paced after a push back.
    #[default]
    Adaptive,
    /// Always `send_concurrency`.
    Fixed,
}

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
/// The default is `ns`, measured (`lab/examples/time_precision.rs`): on logs that vary as
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

/// How far the spool is synced to the disk (the `spool_sync` option), written `none`,
/// `batch` or `interval:<ms>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SpoolSync {
    /// Never explicitly: survives the process's death (the page cache outlives it), not a
    /// power loss.
    #[default]
    None,
    /// Every `interval`, on a timer thread: a power loss loses at most the last interval.
    Interval(Duration),
    /// Each batch's files before it is sent; a batch whose sync fails is written again on a
    /// fresh file and synced, or sent from memory and counted as not durable.
    Batch,
}

impl SpoolSync {
    /// What the option takes, for messages.
    pub const FORMS: &'static str = "none, batch or interval:<ms> (ms at least 1)";

    /// Parses `none`, `batch` or `interval:<ms>` (`ms` at least 1).
    pub fn parse(text: &str) -> Option<SpoolSync> {
        match text.trim() {
            "none" => Some(SpoolSync::None),
            "batch" => Some(SpoolSync::Batch),
            other => {
                let ms: u64 = other.strip_prefix("interval:")?.trim().parse().ok()?;
                (ms > 0).then(|| SpoolSync::Interval(Duration::from_millis(ms)))
            }
        }
    }
}

impl std::fmt::Display for SpoolSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpoolSync::None => f.write_str("none"),
            SpoolSync::Batch => f.write_str("batch"),
            SpoolSync::Interval(every) => write!(f, "interval:{}", every.as_millis()),
        }
    }
}

impl serde::Serialize for SpoolSync {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for SpoolSync {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        SpoolSync::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format_args!(
                "{text:?} is not a sync mode: expected {}",
                SpoolSync::FORMS
            ))
        })
    }
}
