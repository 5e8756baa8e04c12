//! What the emulator accepted, per project / logstore / shard, plus exact running totals.
//!
//! Groups are kept as they arrived, after validation: a PutLogs body is kept compressed (logs
//! compress tenfold and more, and a benchmark streaming hundreds of megabytes a second then
//! neither fills memory nor spends its CPU faulting fresh pages in), and is decompressed and
//! decoded only when read back. Each shard keeps at most its share of the logstore's retention
//! budget, counted in bytes held: when a new group would exceed it, the oldest groups are dropped (their sequence numbers stay used, so
//! cursors remain valid), while the totals keep counting everything ever accepted. This keeps
//! long benchmarks from exhausting memory. One mutex guards the map; callers hold it only to
//! append or copy out, never while decoding or doing I/O.

use std::collections::{BTreeMap, VecDeque};

use parking_lot::Mutex;

use super::catalog::{Index, LogstoreSettings};
use super::error::ApiError;
use super::quotas::Throttled;
use super::stored::{GroupLogs, ViewGroup};
pub use super::stored::{StoredGroup, StoredLog};
use super::term_index::TermIndex;
use crate::wire::hashkey;
use crate::wire::limits::MAX_SHARDS_PER_LOGSTORE;
use crate::wire::names::{self, NameKind};

#[derive(Default)]
pub(crate) struct Shard {
    pub(crate) groups: VecDeque<StoredGroup>,
    /// Sequence number of `groups[0]`.
    pub(crate) first_seq: u64,
    pub(crate) bytes: usize,
}

impl Shard {
    pub(crate) fn end_seq(&self) -> u64 {
        self.first_seq + self.groups.len() as u64
    }
}

pub(crate) struct Logstore {
    pub(crate) shards: Vec<Shard>,
    pub(crate) created: u32,
    lb_next: u32,
    /// Exact totals since creation (or reset), unaffected by retention.
    pub(crate) total_logs: u64,
    pub(crate) total_groups: u64,
    /// What CreateLogStore / UpdateLogStore set (see `catalog`).
    pub(crate) settings: LogstoreSettings,
    /// Its index, once one is created: what GetLogs and GetHistograms search.
    pub(crate) index: Option<std::sync::Arc<Index>>,
    /// The words of its logs, built by the first search (see `term_index`).
    pub(crate) terms: std::sync::Arc<Mutex<TermIndex>>,
}

impl Logstore {
    pub(crate) fn new(shard_count: u32, now: u32) -> Self {
        Logstore {
            shards: (0..shard_count.max(1)).map(|_| Shard::default()).collect(),
            created: now,
            lb_next: 0,
            total_logs: 0,
            total_groups: 0,
            settings: LogstoreSettings::new(now),
            index: None,
            terms: Default::default(),
        }
    }
}

/// A project: its description, its times and its logstores.
pub(crate) struct Project {
    pub(crate) description: String,
    pub(crate) created: u32,
    pub(crate) modified: u32,
    pub(crate) logstores: BTreeMap<String, Logstore>,
}

impl Project {
    pub(crate) fn new(description: String, now: u32) -> Self {
        Project {
            description,
            created: now,
            modified: now,
            logstores: BTreeMap::new(),
        }
    }
}

/// Where in a logstore a group goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Placement {
    /// Any writable shard, round robin.
    LoadBalance,
    /// The shard whose range holds this hash key.
    HashKey(u128),
}

/// Why groups were not appended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No such logstore.
    Missing(Missing),
    /// A shard quota refused (every writable shard, without a hash key).
    Throttled {
        reason: Throttled,
        /// The logstore may gain a shard.
        may_split: bool,
    },
}

/// Why a logstore could not be found or made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Missing {
    Project,
    Logstore,
    /// The name breaks the service's rule, so it can never exist.
    InvalidName(NameKind),
    /// Auto-create would pass the configured number of logstores.
    AutoCreateLimit(usize),
}

/// Checks both names against the service's rules.
fn check_names(project: &str, logstore: &str) -> Result<(), Missing> {
    if !names::is_valid_name(NameKind::Project, project) {
        return Err(Missing::InvalidName(NameKind::Project));
    }
    if !names::is_valid_name(NameKind::Logstore, logstore) {
        return Err(Missing::InvalidName(NameKind::Logstore));
    }
    Ok(())
}

/// Totals of one logstore.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LogstoreTotals {
    /// Logs accepted since creation.
    pub logs: u64,
    /// Groups accepted since creation.
    pub groups: u64,
    /// Groups still held (the rest were dropped by retention).
    pub retained_groups: u64,
}

pub(crate) struct Store {
    inner: Mutex<BTreeMap<String, Project>>,
    pub(crate) auto_create: bool,
    pub(crate) shard_count: u32,
    pub(crate) retention_bytes: usize,
    /// Most logstores (over every project) auto-create makes.
    pub(crate) max_logstores: usize,
    /// Logstores held now, over every project.
    count: std::sync::atomic::AtomicUsize,
}

/// Refuses a shard count the service would (400 `ParameterInvalid`, naming the limit).
pub(crate) fn check_shard_count(shards: u32) -> Result<(), ApiError> {
    if (1..=MAX_SHARDS_PER_LOGSTORE).contains(&shards) {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "ParameterInvalid",
            format!("shard count {shards} is out of range: 1 to {MAX_SHARDS_PER_LOGSTORE}"),
        ))
    }
}

impl Store {
    pub(crate) fn new(
        auto_create: bool,
        shard_count: u32,
        retention_bytes: usize,
        max_logstores: usize,
    ) -> Self {
        Store {
            inner: Mutex::new(BTreeMap::new()),
            auto_create,
            shard_count: shard_count.max(1),
            retention_bytes,
            max_logstores,
            count: Default::default(),
        }
    }

    /// Creates a logstore of `shards` shards (default: the configured count); refuses names
    /// the service refuses, a count outside its 1 to [`MAX_SHARDS_PER_LOGSTORE`], and a
    /// logstore past `max_logstores`, before allocating anything. Creating one that exists is
    /// a no-op.
    pub(crate) fn create(
        &self,
        project: &str,
        logstore: &str,
        shards: Option<u32>,
        now: u32,
    ) -> Result<(), ApiError> {
        if let Err(Missing::InvalidName(kind)) = check_names(project, logstore) {
            let (what, name) = match kind {
                NameKind::Project => ("project", project),
                NameKind::Logstore => ("logstore", logstore),
            };
            return Err(ApiError::bad_request(
                "ParameterInvalid",
                format!("{what} name {:?} {}", shorten(name), kind.rule()),
            ));
        }
        let shards = shards.unwrap_or(self.shard_count);
        check_shard_count(shards)?;
        let mut inner = self.inner.lock();
        if inner
            .get(project)
            .is_some_and(|p| p.logstores.contains_key(logstore))
        {
            return Ok(());
        }
        self.insert(&mut inner, project, logstore, shards, now)
            .map_err(|_| {
                ApiError::new(
                    hyper::http::StatusCode::FORBIDDEN,
                    "ExceedQuota",
                    format!(
                        "the emulator holds its limit of {} logstores",
                        self.max_logstores
                    ),
                )
            })
    }

    fn insert(
        &self,
        inner: &mut BTreeMap<String, Project>,
        project: &str,
        logstore: &str,
        shards: u32,
        now: u32,
    ) -> Result<(), Missing> {
        use std::sync::atomic::Ordering::Relaxed;
        if self.count.load(Relaxed) >= self.max_logstores {
            return Err(Missing::AutoCreateLimit(self.max_logstores));
        }
        self.count.fetch_add(1, Relaxed);
        inner
            .entry(project.to_owned())
            .or_insert_with(|| Project::new(String::new(), now))
            .logstores
            .insert(logstore.to_owned(), Logstore::new(shards, now));
        Ok(())
    }

    pub(crate) fn reset(&self) {
        let mut inner = self.inner.lock();
        inner.clear();
        self.count.store(0, std::sync::atomic::Ordering::Relaxed);
    }

    /// Checks that the logstore exists, creating it when auto-create is on (within
    /// `max_logstores`, and only under names the service allows).
    pub(crate) fn ensure(&self, project: &str, logstore: &str, now: u32) -> Result<(), Missing> {
        check_names(project, logstore)?;
        let mut inner = self.inner.lock();
        if let Some(p) = inner.get(project) {
            if p.logstores.contains_key(logstore) {
                return Ok(());
            }
        }
        if !self.auto_create {
            return Err(if inner.contains_key(project) {
                Missing::Logstore
            } else {
                Missing::Project
            });
        }
        self.insert(&mut inner, project, logstore, self.shard_count, now)
    }

    /// Appends groups to one shard of an existing logstore; returns the shard.
    #[cfg(test)]
    pub(crate) fn append(
        &self,
        project: &str,
        logstore: &str,
        placement: Placement,
        groups: impl IntoIterator<Item = StoredGroup>,
    ) -> Result<u32, Missing> {
        self.append_admitted(project, logstore, placement, groups, |_| Ok(()))
            .map_err(|refused| match refused {
                Refused::Missing(m) => m,
                // Nothing refuses here.
                Refused::Throttled { .. } => Missing::Logstore,
            })
    }

    /// Appends groups to the shard `placement` names — without a hash key, the first from the
    /// round-robin cursor that `admit` lets through; with one, its shard if `admit` lets it
    /// through. Refused, nothing is stored, and it says whether the logstore may gain a shard
    /// (its `autoSplit` on and below its `maxSplitShard`).
    pub(crate) fn append_admitted(
        &self,
        project: &str,
        logstore: &str,
        placement: Placement,
        groups: impl IntoIterator<Item = StoredGroup>,
        mut admit: impl FnMut(u32) -> Result<(), Throttled>,
    ) -> Result<u32, Refused> {
        let mut inner = self.inner.lock();
        let Some(p) = inner.get_mut(project) else {
            return Err(Refused::Missing(Missing::Project));
        };
        let Some(ls) = p.logstores.get_mut(logstore) else {
            return Err(Refused::Missing(Missing::Logstore));
        };
        let count = ls.shards.len() as u32;
        let may_split = ls.settings.auto_split && count < ls.settings.max_split_shard;
        let index = match placement {
            Placement::HashKey(key) => {
                let index = hashkey::shard_of(key, count);
                admit(index).map_err(|reason| Refused::Throttled { reason, may_split })?;
                index
            }
            Placement::LoadBalance => {
                let mut refusal = None;
                let mut chosen = None;
                for step in 1..=count {
                    let index = ls.lb_next.wrapping_add(step) % count;
                    match admit(index) {
                        Ok(()) => {
                            chosen = Some(index);
                            ls.lb_next = index;
                            break;
                        }
                        Err(reason) => refusal = Some(reason),
                    }
                }
                match (chosen, refusal) {
                    (Some(index), _) => index,
                    (None, Some(reason)) => return Err(Refused::Throttled { reason, may_split }),
                    (None, None) => return Err(Refused::Missing(Missing::Logstore)),
                }
            }
        };
        let budget = (self.retention_bytes / count as usize).max(1);
        let shard = &mut ls.shards[index as usize];
        for group in groups {
            ls.total_logs += u64::from(group.logs);
            ls.total_groups += 1;
            shard.bytes += group.body.len();
            shard.groups.push_back(group);
            while shard.bytes > budget && shard.groups.len() > 1 {
                if let Some(old) = shard.groups.pop_front() {
                    shard.bytes -= old.body.len();
                    shard.first_seq += 1;
                }
            }
        }
        Ok(index)
    }

    /// Adds a shard to a logstore (an auto split), up to its `maxSplitShard`; says whether it
    /// did.
    pub(crate) fn add_shard(&self, project: &str, logstore: &str) -> bool {
        let mut inner = self.inner.lock();
        let Some(ls) = inner
            .get_mut(project)
            .and_then(|p| p.logstores.get_mut(logstore))
        else {
            return false;
        };
        if (ls.shards.len() as u32) >= ls.settings.max_split_shard.min(MAX_SHARDS_PER_LOGSTORE) {
            return false;
        }
        ls.shards.push(Shard::default());
        true
    }

    /// Runs `f` on every project under the lock (the management API's changes); the count of
    /// logstores is taken again after it.
    pub(crate) fn projects_mut<T>(&self, f: impl FnOnce(&mut BTreeMap<String, Project>) -> T) -> T {
        let mut inner = self.inner.lock();
        let out = f(&mut inner);
        let held = inner.values().map(|p| p.logstores.len()).sum();
        self.count.store(held, std::sync::atomic::Ordering::Relaxed);
        out
    }

    /// Logstores held now, over every project.
    pub(crate) fn logstore_count(&self) -> usize {
        self.count.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs `f` on a logstore under the lock.
    pub(crate) fn with_logstore<T>(
        &self,
        project: &str,
        logstore: &str,
        f: impl FnOnce(&Logstore) -> T,
    ) -> Result<T, Missing> {
        let inner = self.inner.lock();
        let Some(p) = inner.get(project) else {
            return Err(Missing::Project);
        };
        let Some(ls) = p.logstores.get(logstore) else {
            return Err(Missing::Logstore);
        };
        Ok(f(ls))
    }

    pub(crate) fn totals(&self, project: &str, logstore: &str) -> Option<LogstoreTotals> {
        self.with_logstore(project, logstore, |ls| LogstoreTotals {
            logs: ls.total_logs,
            groups: ls.total_groups,
            retained_groups: ls.shards.iter().map(|s| s.groups.len() as u64).sum(),
        })
        .ok()
    }

    /// Every retained log of a logstore, shard by shard in arrival order, decoded.
    pub(crate) fn logs(&self, project: &str, logstore: &str) -> Vec<StoredLog> {
        self.page(project, logstore, 0, usize::MAX, usize::MAX).logs
    }

    /// `limit` retained logs from the `offset`-th, in the order of [`Store::logs`], and no more
    /// than [`PAGE_BYTES`] of fields (at least one log). Only the
    /// groups that hold them are copied out (reference counts) and decoded, without the lock,
    /// so a page costs memory in proportion to its size, not to the logstore's. Offsets count
    /// retained logs: retention dropping old groups between two pages shifts them.
    pub(crate) fn logs_page(
        &self,
        project: &str,
        logstore: &str,
        offset: usize,
        limit: usize,
    ) -> LogsPage {
        self.page(project, logstore, offset, limit, PAGE_BYTES)
    }

    /// A page of at most `limit` logs and `max_bytes` of fields (at least one log).
    fn page(
        &self,
        project: &str,
        logstore: &str,
        offset: usize,
        limit: usize,
        max_bytes: usize,
    ) -> LogsPage {
        let mut skip = offset;
        let mut need = limit;
        let mut more = false;
        // (shard, group, logs of it to skip, logs of it to take)
        let chosen: Vec<(u32, StoredGroup, usize, usize)> = self
            .with_logstore(project, logstore, |ls| {
                let mut chosen = Vec::new();
                'shards: for (i, shard) in ls.shards.iter().enumerate() {
                    for g in &shard.groups {
                        let n = g.logs as usize;
                        if need == 0 {
                            if n > 0 {
                                more = true;
                                break 'shards;
                            }
                            continue;
                        }
                        if skip >= n {
                            skip -= n;
                            continue;
                        }
                        let available = n - skip;
                        let take = available.min(need);
                        need -= take;
                        more |= available > take;
                        chosen.push((i as u32, g.clone(), skip, take));
                        skip = 0;
                    }
                }
                chosen
            })
            .unwrap_or_default();
        let mut logs = Vec::new();
        let mut bytes = 0usize;
        let mut full = false;
        for (shard, stored, skip, take) in chosen {
            if full {
                break;
            }
            for log in stored_logs(shard, &stored)
                .into_iter()
                .skip(skip)
                .take(take)
            {
                let size: usize = log.contents.iter().map(|(k, v)| k.len() + v.len()).sum();
                if !logs.is_empty() && bytes.saturating_add(size) > max_bytes {
                    // The page is full by size: the rest comes on the next one.
                    (full, more) = (true, true);
                    break;
                }
                bytes += size;
                logs.push(log);
            }
        }
        let next_offset = more.then(|| offset + logs.len());
        LogsPage { logs, next_offset }
    }
}

/// The logs of one stored group, decoded, with its metadata. Bodies were validated on the way
/// in; one that does not decode (an emulator bug) gives none.
pub(crate) fn stored_logs(shard: u32, stored: &StoredGroup) -> Vec<StoredLog> {
    let group = GroupLogs::read(shard, stored);
    (0..group.len()).filter_map(|at| group.get(at)).collect()
}

/// What a query reads of a logstore: its retained groups (shared, not copied), by shard in
/// sequence order, its index, its TTL in days, and the words of its logs.
pub(crate) struct SearchView {
    pub(crate) groups: Vec<ViewGroup>,
    /// Every shard's groups (no shard was named).
    pub(crate) whole: bool,
    pub(crate) shards: usize,
    pub(crate) index: Option<std::sync::Arc<Index>>,
    pub(crate) ttl_days: u32,
    pub(crate) terms: std::sync::Arc<Mutex<TermIndex>>,
}

impl Store {
    /// The groups a query reads (of one shard, when given), taken under the lock and read
    /// without it.
    pub(crate) fn search_view(
        &self,
        project: &str,
        logstore: &str,
        shard: Option<u32>,
    ) -> Result<SearchView, Missing> {
        self.with_logstore(project, logstore, |ls| SearchView {
            groups: ls
                .shards
                .iter()
                .enumerate()
                .filter(|(i, _)| shard.is_none_or(|s| s as usize == *i))
                .flat_map(|(i, s)| {
                    s.groups.iter().enumerate().map(move |(at, g)| ViewGroup {
                        shard: i as u32,
                        seq: s.first_seq + at as u64,
                        group: g.clone(),
                    })
                })
                .collect(),
            whole: shard.is_none(),
            shards: ls.shards.len(),
            index: ls.index.clone(),
            ttl_days: ls.settings.ttl_days,
            terms: ls.terms.clone(),
        })
    }
}

/// Field bytes in one page at most (always at least one log), whatever its count.
const PAGE_BYTES: usize = 8 * 1024 * 1024;

/// One page of [`Store::logs_page`].
pub(crate) struct LogsPage {
    /// The logs of the page.
    pub(crate) logs: Vec<StoredLog>,
    /// The offset of the next page; `None` when this one reached the end.
    pub(crate) next_offset: Option<usize>,
}

/// A name as an error message quotes it: at most 80 characters.
pub(crate) fn shorten(name: &str) -> String {
    match name.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &name[..at]),
        None => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use prost::Message;

    use super::*;
    use crate::wire::compress::Compression;

    fn group(bytes: usize) -> StoredGroup {
        StoredGroup {
            codec: Compression::None,
            raw_size: bytes,
            body: Bytes::from(vec![0u8; bytes]),
            received: 0,
            logs: 2,
        }
    }

    #[test]
    fn retention_drops_oldest_but_totals_stay_exact() {
        let store = Store::new(true, 1, 1000, 10);
        store.ensure("proj", "logs", 0).unwrap();
        for _ in 0..10 {
            store
                .append("proj", "logs", Placement::LoadBalance, [group(300)])
                .unwrap();
        }
        let totals = store.totals("proj", "logs").unwrap();
        assert_eq!(
            (totals.logs, totals.groups, totals.retained_groups),
            (20, 10, 3)
        );
        store
            .with_logstore("proj", "logs", |ls| {
                assert_eq!((ls.shards[0].first_seq, ls.shards[0].end_seq()), (7, 10))
            })
            .unwrap();
    }

    #[test]
    fn missing_logstores_are_refused_without_auto_create() {
        let store = Store::new(false, 2, 1 << 20, 10);
        assert_eq!(store.ensure("proj", "logs", 0), Err(Missing::Project));
        store.create("proj", "other", None, 0).unwrap();
        assert_eq!(store.ensure("proj", "logs", 0), Err(Missing::Logstore));
        store.create("proj", "logs", Some(4), 0).unwrap();
        assert_eq!(store.ensure("proj", "logs", 0), Ok(()));
        store
            .with_logstore("proj", "logs", |ls| assert_eq!(ls.shards.len(), 4))
            .unwrap();
    }

    #[test]
    fn load_balance_spreads_and_hash_keys_route() {
        let store = Store::new(true, 2, 1 << 20, 10);
        store.ensure("proj", "logs", 0).unwrap();
        let a = store
            .append("proj", "logs", Placement::LoadBalance, [group(1)])
            .unwrap();
        let b = store
            .append("proj", "logs", Placement::LoadBalance, [group(1)])
            .unwrap();
        assert_ne!(a, b);
        assert_eq!(
            store
                .append("proj", "logs", Placement::HashKey(0), [group(1)])
                .unwrap(),
            0
        );
        assert_eq!(
            store
                .append("proj", "logs", Placement::HashKey(u128::MAX), [group(1)])
                .unwrap(),
            1
        );
    }

    #[test]
    fn names_the_service_refuses_are_never_created() {
        let store = Store::new(true, 2, 1 << 20, 10);
        for (project, logstore) in [
            ("proj", ".."),
            ("proj", "日志"),
            ("P-roj", "logs"),
            ("", "logs"),
        ] {
            assert!(matches!(
                store.ensure(project, logstore, 0),
                Err(Missing::InvalidName(_))
            ));
            let refused = store.create(project, logstore, None, 0).unwrap_err();
            assert_eq!(refused.code, "ParameterInvalid");
        }
        let long = "x".repeat(5000);
        let refused = store.create("proj", &long, None, 0).unwrap_err();
        assert!(refused.message.len() < 300, "{}", refused.message);
        assert_eq!(store.count.load(std::sync::atomic::Ordering::Relaxed), 0);
    }

    #[test]
    fn auto_create_stops_at_its_limit_and_reset_frees_the_room() {
        let store = Store::new(true, 2, 1 << 20, 3);
        for name in ["one", "two", "six"] {
            store.ensure("proj", name, 0).unwrap();
        }
        store.ensure("proj", "one", 0).unwrap();
        assert_eq!(
            store.ensure("proj", "ten", 0),
            Err(Missing::AutoCreateLimit(3))
        );
        assert_eq!(
            store.create("other", "ten", None, 0).unwrap_err().code,
            "ExceedQuota"
        );
        store.reset();
        store.ensure("proj", "ten", 0).unwrap();
    }

    #[test]
    fn pages_cover_every_log_once_in_order() {
        use crate::wire::proto::{Log, LogGroup};
        let store = Store::new(true, 2, 1 << 20, 10);
        store.ensure("proj", "logs", 0).unwrap();
        let mut n = 0u32;
        for size in [3usize, 1, 4, 2, 5] {
            let logs: Vec<Log> = (0..size)
                .map(|_| {
                    n += 1;
                    Log::of_fields(n, None, &[("n", &n.to_string())])
                })
                .collect();
            let raw = LogGroup::of_logs(logs, "", "", &[]).encode_to_vec();
            let stored = StoredGroup {
                codec: Compression::None,
                raw_size: raw.len(),
                body: Bytes::from(raw),
                received: 0,
                logs: size as u32,
            };
            store
                .append("proj", "logs", Placement::HashKey(0), [stored])
                .unwrap();
        }
        let all: Vec<String> = store
            .logs("proj", "logs")
            .iter()
            .map(|l| l.get("n").unwrap().to_owned())
            .collect();
        assert_eq!(all.len(), 15);
        for limit in [1usize, 2, 4, 7, 15, 100] {
            let mut offset = Some(0);
            let mut seen = Vec::new();
            while let Some(at) = offset {
                let page = store.logs_page("proj", "logs", at, limit);
                assert!(page.logs.len() <= limit);
                seen.extend(page.logs.iter().map(|l| l.get("n").unwrap().to_owned()));
                offset = page.next_offset;
            }
            assert_eq!(seen, all, "limit {limit}");
        }
        let past = store.logs_page("proj", "logs", 99, 10);
        assert!(past.logs.is_empty() && past.next_offset.is_none());
    }

    #[test]
    fn a_page_is_bounded_by_bytes_too_but_the_whole_read_is_not() {
        use crate::wire::proto::{Log, LogGroup};
        let store = Store::new(true, 1, 64 << 20, 10);
        store.ensure("proj", "logs", 0).unwrap();
        let value = "v".repeat(1 << 20);
        for _ in 0..3 {
            let logs: Vec<Log> = (0..4)
                .map(|_| Log::of_fields(1, None, &[("a", &value)]))
                .collect();
            let raw = LogGroup::of_logs(logs, "", "", &[]).encode_to_vec();
            let stored = StoredGroup {
                codec: Compression::None,
                raw_size: raw.len(),
                body: Bytes::from(raw),
                received: 0,
                logs: 4,
            };
            store
                .append("proj", "logs", Placement::LoadBalance, [stored])
                .unwrap();
        }
        let first = store.logs_page("proj", "logs", 0, 1000);
        assert_eq!((first.logs.len(), first.next_offset), (7, Some(7)));
        let second = store.logs_page("proj", "logs", 7, 1000);
        assert_eq!((second.logs.len(), second.next_offset), (5, None));
        assert_eq!(store.logs("proj", "logs").len(), 12);
    }
}
