//! The service's write quotas, played: per project (hard) and per shard (soft), each a token
//! bucket that a PutLogs request draws from, refused with the service's status, code and
//! message when empty.
//!
//! # The quotas
//!
//! | quota | service's figure | refused with |
//! |---|---|---|
//! | project raw bytes per minute | 100 GB | 403 `WriteQuotaExceed`, "Project write quota exceed: inflow: …" |
//! | project writes per minute | 600 000 | 403 `WriteQuotaExceed`, "Project write quota exceed: qps: …" |
//! | shard raw bytes per second | 5 MB (10 MB without an index) | 403 `ShardWriteQuotaExceed`, "shard write quota exceed, please split shard" |
//! | shard writes per second | 500 | the same |
//!
//! # Buckets and shards
//!
//! Each bucket holds one second of its rate (a per-minute quota refills at a sixtieth of it per
//! second) and starts full; a request is let through when its bucket holds its size, or is
//! full (so a request larger than a second's worth still passes, into debt). Project quotas
//! are checked first; then a request without a hash key goes to the first writable shard, from
//! the round-robin cursor, whose buckets let it through — refused only when every shard is over
//! (as the service answers "all writable shards over limit"); one with a hash key goes to its
//! shard only. A refused request takes nothing from any bucket.
//!
//! # Auto split
//!
//! With `auto_split` on, a logstore whose own `autoSplit` setting is on (the
//! default) gains a shard when a request is refused for its shards, at most one per
//! `split_interval_ms` and up to its `maxSplitShard`. The service splits a hot shard's key
//! range in two; the emulator spreads the ranges over the new count (hash keys move between
//! shards; what a shard already holds stays).
//!
//! # Set, counted, locked
//!
//! Nothing is set by default (no quota). Set by flags (`--shard-write-bytes-per-sec`,
//! …, `--service-quotas` for the service's figures) and the admin API (`PUT /_emulator/quotas`);
//! counted per reason in the counters (`throttled`, `shard_splits`). Any thread; the lock is
//! taken for a few arithmetic operations, under the store's lock when shards are chosen (this
//! module never takes the store's).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The write quotas (zero: no quota).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuotaConfig {
    /// Raw bytes a project takes per minute; 0: no limit.
    pub project_write_bytes_per_min: u64,
    /// PutLogs requests a project takes per minute; 0: no limit.
    pub project_writes_per_min: u64,
    /// Raw bytes a shard takes per second; 0: no limit.
    pub shard_write_bytes_per_sec: u64,
    /// PutLogs requests a shard takes per second; 0: no limit.
    pub shard_writes_per_sec: u64,
    /// Add a shard to a logstore whose shards refuse a request (if its `autoSplit` is on).
    pub auto_split: bool,
    /// At most one split per logstore this often, in milliseconds.
    pub split_interval_ms: u64,
}

impl Default for QuotaConfig {
    fn default() -> Self {
        QuotaConfig {
            project_write_bytes_per_min: 0,
            project_writes_per_min: 0,
            shard_write_bytes_per_sec: 0,
            shard_writes_per_sec: 0,
            auto_split: false,
            split_interval_ms: 1000,
        }
    }
}

impl QuotaConfig {
    /// The service's figures: 100 GB and 600 000 writes per minute per project, 5 MB and 500
    /// writes per second per shard (an indexed logstore's), auto split on.
    pub fn service() -> QuotaConfig {
        QuotaConfig {
            project_write_bytes_per_min: 100_000_000_000,
            project_writes_per_min: 600_000,
            shard_write_bytes_per_sec: 5_000_000,
            shard_writes_per_sec: 500,
            auto_split: true,
            split_interval_ms: 1000,
        }
    }

    fn is_set(&self) -> bool {
        self.project_write_bytes_per_min > 0
            || self.project_writes_per_min > 0
            || self.shard_write_bytes_per_sec > 0
            || self.shard_writes_per_sec > 0
    }
}

/// Which quota refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Throttled {
    ProjectInflow,
    ProjectQps,
    ShardBytes,
    ShardWrites,
}

impl Throttled {
    /// Its name in the counters.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Throttled::ProjectInflow => "project_inflow",
            Throttled::ProjectQps => "project_qps",
            Throttled::ShardBytes => "shard_bytes",
            Throttled::ShardWrites => "shard_writes",
        }
    }

    /// The service's errorCode.
    pub(crate) const fn code(self) -> &'static str {
        match self {
            Throttled::ProjectInflow | Throttled::ProjectQps => "WriteQuotaExceed",
            Throttled::ShardBytes | Throttled::ShardWrites => "ShardWriteQuotaExceed",
        }
    }

    /// The service's errorMessage.
    pub(crate) fn message(self, config: &QuotaConfig) -> String {
        match self {
            Throttled::ProjectInflow => format!(
                "Project write quota exceed: inflow: {} bytes per minute",
                config.project_write_bytes_per_min
            ),
            Throttled::ProjectQps => format!(
                "Project write quota exceed: qps: {} writes per minute",
                config.project_writes_per_min
            ),
            Throttled::ShardBytes | Throttled::ShardWrites => {
                "shard write quota exceed, please split shard".into()
            }
        }
    }
}

/// A token bucket of one second's worth of `per_sec`, starting full.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn new(per_sec: f64, now: Instant) -> Bucket {
        Bucket {
            tokens: per_sec,
            at: now,
        }
    }

    fn refill(&mut self, per_sec: f64, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * per_sec).min(per_sec);
        self.at = now;
    }

    /// Whether `amount` may be drawn (it fits, or the bucket is full).
    fn admits(&self, per_sec: f64, amount: f64) -> bool {
        self.tokens >= amount.min(per_sec)
    }
}

/// A pair of buckets: bytes and requests.
#[derive(Clone, Copy, Debug)]
struct Buckets {
    bytes: Bucket,
    writes: Bucket,
}

impl Buckets {
    /// A quota's two buckets, full.
    fn full(bytes_rate: f64, writes_rate: f64, now: Instant) -> Buckets {
        Buckets {
            bytes: Bucket::new(bytes_rate, now),
            writes: Bucket::new(writes_rate, now),
        }
    }
}

/// The quotas and their buckets.
#[derive(Debug)]
pub(crate) struct Quotas {
    config: Mutex<QuotaConfig>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    projects: HashMap<String, Buckets>,
    /// By (project, logstore, shard).
    shards: HashMap<(String, String, u32), Buckets>,
    /// By (project, logstore): the last split.
    splits: HashMap<(String, String), Instant>,
    /// Refused requests by reason, and splits made.
    throttled: std::collections::BTreeMap<&'static str, u64>,
    shard_splits: u64,
}

/// Why a request must wait, or what it may do.
pub(crate) type Admission = Result<(), Throttled>;

impl Quotas {
    pub(crate) fn new(config: QuotaConfig) -> Quotas {
        Quotas {
            config: Mutex::new(config),
            state: Mutex::new(State::default()),
        }
    }

    pub(crate) fn config(&self) -> QuotaConfig {
        *self.config.lock()
    }

    /// Replaces the quotas; the buckets start full again.
    pub(crate) fn replace(&self, config: QuotaConfig) {
        *self.config.lock() = config;
        let mut state = self.state.lock();
        state.projects.clear();
        state.shards.clear();
    }

    /// Forgets buckets and counts (the emulator's reset).
    pub(crate) fn reset(&self) {
        *self.state.lock() = State::default();
    }

    /// Whether any quota is set (else nothing is checked).
    pub(crate) fn is_set(&self) -> bool {
        self.config.lock().is_set()
    }

    /// Draws a request of `raw_bytes` from its project's buckets, or says which is empty.
    pub(crate) fn admit_project(&self, project: &str, raw_bytes: usize) -> Admission {
        let config = self.config();
        let bytes_rate = config.project_write_bytes_per_min as f64 / 60.0;
        let writes_rate = config.project_writes_per_min as f64 / 60.0;
        if bytes_rate == 0.0 && writes_rate == 0.0 {
            return Ok(());
        }
        let now = Instant::now();
        let mut state = self.state.lock();
        let buckets = state
            .projects
            .entry(project.to_owned())
            .or_insert_with(|| Buckets::full(bytes_rate, writes_rate, now));
        let verdict = draw(
            buckets,
            (bytes_rate, raw_bytes as f64),
            (writes_rate, 1.0),
            now,
        )
        .map_err(|bytes| {
            if bytes {
                Throttled::ProjectInflow
            } else {
                Throttled::ProjectQps
            }
        });
        if let Err(reason) = verdict {
            *state.throttled.entry(reason.as_str()).or_default() += 1;
        }
        verdict
    }

    /// Draws a request of `raw_bytes` from one shard's buckets, or says which is empty (not
    /// counted: the caller may try another shard).
    pub(crate) fn admit_shard(
        &self,
        project: &str,
        logstore: &str,
        shard: u32,
        raw_bytes: usize,
    ) -> Admission {
        let config = self.config();
        let bytes_rate = config.shard_write_bytes_per_sec as f64;
        let writes_rate = config.shard_writes_per_sec as f64;
        if bytes_rate == 0.0 && writes_rate == 0.0 {
            return Ok(());
        }
        let now = Instant::now();
        let mut state = self.state.lock();
        let buckets = state
            .shards
            .entry((project.to_owned(), logstore.to_owned(), shard))
            .or_insert_with(|| Buckets::full(bytes_rate, writes_rate, now));
        draw(
            buckets,
            (bytes_rate, raw_bytes as f64),
            (writes_rate, 1.0),
            now,
        )
        .map_err(|bytes| {
            if bytes {
                Throttled::ShardBytes
            } else {
                Throttled::ShardWrites
            }
        })
    }

    /// Counts a request every shard refused; says whether the logstore may split now.
    pub(crate) fn shards_refused(
        &self,
        project: &str,
        logstore: &str,
        reason: Throttled,
        logstore_may_split: bool,
    ) -> bool {
        let config = self.config();
        let now = Instant::now();
        let mut state = self.state.lock();
        *state.throttled.entry(reason.as_str()).or_default() += 1;
        if !config.auto_split || !logstore_may_split {
            return false;
        }
        let key = (project.to_owned(), logstore.to_owned());
        let interval = Duration::from_millis(config.split_interval_ms);
        if state
            .splits
            .get(&key)
            .is_some_and(|last| now.saturating_duration_since(*last) < interval)
        {
            return false;
        }
        state.splits.insert(key, now);
        state.shard_splits += 1;
        true
    }

    /// Refused requests by reason, and splits made.
    pub(crate) fn counts(&self) -> (std::collections::BTreeMap<String, u64>, u64) {
        let state = self.state.lock();
        (
            state
                .throttled
                .iter()
                .map(|(k, v)| ((*k).to_owned(), *v))
                .collect(),
            state.shard_splits,
        )
    }
}

/// Draws from both buckets when both admit; `Err(true)` when bytes refused, `Err(false)` when
/// writes did.
fn draw(
    buckets: &mut Buckets,
    (bytes_rate, bytes): (f64, f64),
    (writes_rate, writes): (f64, f64),
    now: Instant,
) -> Result<(), bool> {
    if bytes_rate > 0.0 {
        buckets.bytes.refill(bytes_rate, now);
        if !buckets.bytes.admits(bytes_rate, bytes) {
            return Err(true);
        }
    }
    if writes_rate > 0.0 {
        buckets.writes.refill(writes_rate, now);
        if !buckets.writes.admits(writes_rate, writes) {
            return Err(false);
        }
    }
    if bytes_rate > 0.0 {
        buckets.bytes.tokens -= bytes;
    }
    if writes_rate > 0.0 {
        buckets.writes.tokens -= writes;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_takes_a_second_of_its_rate_then_refuses_until_refilled() {
        let q = Quotas::new(QuotaConfig {
            shard_write_bytes_per_sec: 1_000_000,
            ..QuotaConfig::default()
        });
        for _ in 0..4 {
            assert_eq!(q.admit_shard("p", "l", 0, 250_000), Ok(()));
        }
        assert_eq!(
            q.admit_shard("p", "l", 0, 250_000),
            Err(Throttled::ShardBytes)
        );
        // Another shard has its own bucket.
        assert_eq!(q.admit_shard("p", "l", 1, 250_000), Ok(()));
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(q.admit_shard("p", "l", 0, 250_000), Ok(()));
    }

    #[test]
    fn a_request_larger_than_a_second_passes_a_full_bucket_into_debt() {
        let q = Quotas::new(QuotaConfig {
            shard_write_bytes_per_sec: 1_000_000,
            ..QuotaConfig::default()
        });
        assert_eq!(q.admit_shard("p", "l", 0, 3_000_000), Ok(()));
        assert_eq!(q.admit_shard("p", "l", 0, 1), Err(Throttled::ShardBytes));
    }

    #[test]
    fn writes_per_second_and_project_quotas_name_their_reason() {
        let q = Quotas::new(QuotaConfig {
            shard_writes_per_sec: 2,
            project_writes_per_min: 600,
            project_write_bytes_per_min: 6_000,
            ..QuotaConfig::default()
        });
        assert_eq!(q.admit_shard("p", "l", 0, 1), Ok(()));
        assert_eq!(q.admit_shard("p", "l", 0, 1), Ok(()));
        assert_eq!(q.admit_shard("p", "l", 0, 1), Err(Throttled::ShardWrites));
        // 6 000 bytes a minute: 100 a second, a bucket of 100.
        assert_eq!(q.admit_project("p", 100), Ok(()));
        assert_eq!(q.admit_project("p", 10), Err(Throttled::ProjectInflow));
        // 600 writes a minute: 10 a second.
        let q = Quotas::new(QuotaConfig {
            project_writes_per_min: 600,
            ..QuotaConfig::default()
        });
        for _ in 0..10 {
            assert_eq!(q.admit_project("p", 1), Ok(()));
        }
        assert_eq!(q.admit_project("p", 1), Err(Throttled::ProjectQps));
        assert_eq!(q.admit_project("other", 1), Ok(()));
        let (counts, _) = q.counts();
        assert_eq!(counts.get("project_qps"), Some(&1));
        assert_eq!(Throttled::ProjectQps.code(), "WriteQuotaExceed");
        assert!(Throttled::ProjectInflow
            .message(&QuotaConfig::service())
            .starts_with("Project write quota exceed: inflow: "));
    }

    #[test]
    fn splits_at_most_once_per_interval_and_only_when_allowed() {
        let q = Quotas::new(QuotaConfig {
            shard_writes_per_sec: 1,
            auto_split: true,
            split_interval_ms: 200,
            ..QuotaConfig::default()
        });
        assert!(q.shards_refused("p", "l", Throttled::ShardWrites, true));
        assert!(!q.shards_refused("p", "l", Throttled::ShardWrites, true));
        assert!(!q.shards_refused("p", "other", Throttled::ShardWrites, false));
        std::thread::sleep(Duration::from_millis(220));
        assert!(q.shards_refused("p", "l", Throttled::ShardWrites, true));
        let (counts, splits) = q.counts();
        assert_eq!((counts.get("shard_writes"), splits), (Some(&4), 2));
    }

    #[test]
    fn nothing_set_admits_everything() {
        let q = Quotas::new(QuotaConfig::default());
        assert!(!q.is_set());
        for _ in 0..10_000 {
            assert_eq!(q.admit_project("p", 5 << 20), Ok(()));
            assert_eq!(q.admit_shard("p", "l", 0, 5 << 20), Ok(()));
        }
    }
}
