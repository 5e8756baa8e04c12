//! The words of a logstore's logs, so a search reads only the logs that may match: built at the
//! first search after the logstore's index is made (not at ingest, which stays as fast with an
//! index as without), brought up to date at each later search with the groups that arrived
//! since, and built again when retention dropped groups it covers or the index changed.
//!
//! # Layout
//!
//! Logs are numbered in the order they are indexed; a table of the indexed groups (shard,
//! sequence, first number) says where a number's log is, and one time a log says when it was.
//! For each word of the `line` index and of each text key (folded to lower case unless the index
//! is case-sensitive): its bytes, once, in one buffer, and the logs holding it — a word of one
//! log as that log's number, a word of many as a compressed bitmap (roaring), in which a word of
//! every log or every other log costs a bit or two a log. For each numeric key, its values in
//! order. A search asks [`TermIndex::candidates`] for the logs a query may match: exactly those
//! for words, prefixes and comparisons and their `and` / `or`, a superset for phrases, and no
//! answer (every log) for `not`, topics, sources and tags; the caller then checks the
//! candidates that are not exact against the query itself.
//!
//! # Bounds
//!
//! Bounded: at most [`MAX_INDEXED_LOGS`] logs and [`MAX_WORD_BYTES`] of distinct words; the
//! groups beyond them are read log by log. About 4 bytes a log (8 with nanoseconds), a distinct
//! word's length and 15–30 bytes more, 4 bytes a log of a word of a few logs and at most 2 bits
//! a log of a common one, and 16 bytes a numeric value: 1 M S1 logs take 39 MB (0.08× their
//! size), 1 M access logs 197 MB (0.63×) (`examples/query_cost.rs`).
//!
//! # Threads
//!
//! Runs on the searching request's thread, under the logstore's own lock (searches of one
//! logstore take turns; ingest never waits for it).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::{DefaultHashBuilder, HashTable};
use roaring::RoaringBitmap;

use super::catalog::{Index, KeyIndex, TextIndex};
use super::search::{Compare, Key, Pattern, Query};
use super::stored::{GroupLogs, ViewGroup};

/// The most logs one logstore's index holds: beyond them, the groups that arrived later are
/// read log by log, so a large retention never makes the index outgrow what a machine has.
pub(crate) const MAX_INDEXED_LOGS: usize = 2_000_000;

/// The most memory one logstore's distinct words take (their bytes, and 24 a word for the table
/// and the lists; logs of ever-new words, as ids and digests, grow it with their size): beyond
/// it, as beyond [`MAX_INDEXED_LOGS`].
pub(crate) const MAX_WORD_BYTES: usize = 512 << 20;

/// Where one log is, and when it was.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogRef {
    pub(crate) shard: u32,
    pub(crate) seq: u64,
    pub(crate) log: u32,
    pub(crate) time: u32,
    pub(crate) time_ns: u32,
}

/// The logs a query may match, by number (see [`TermIndex::log`]); `exact` when every one
/// matches (no check needed).
pub(crate) struct Candidates {
    pub(crate) ids: RoaringBitmap,
    pub(crate) exact: bool,
}

/// An indexed group: its place and the number of its first log.
#[derive(Clone, Copy)]
struct IndexedGroup {
    shard: u32,
    seq: u64,
    first: u32,
}

/// A log number at or above this in [`Word::logs`] is the place of its logs in
/// [`Words::many`] (log numbers stay below [`MAX_INDEXED_LOGS`]).
const MANY: u32 = 1 << 31;

/// A distinct word: `text[start..start + len]`, and its logs (one log's number, or
/// [`MANY`] + the place of their [`Postings`]).
#[derive(Clone, Copy)]
struct Word {
    start: u32,
    len: u32,
    logs: u32,
}

/// The most logs a word's list holds before it becomes a bitmap: a list costs 4 bytes a log,
/// a bitmap a few dozen bytes of its own and then 2 bytes a log or less.
const LIST_MAX: usize = 32;

/// The logs of a word of more than one log, in increasing order.
enum Postings {
    List(Vec<u32>),
    Bitmap(RoaringBitmap),
}

impl Postings {
    /// Notes log `id` (logs come in increasing order; the same log twice is noted once).
    fn push(&mut self, id: u32) {
        match self {
            Postings::List(list) if list.last() == Some(&id) => {}
            Postings::List(list) if list.len() < LIST_MAX => list.push(id),
            Postings::List(list) => {
                let mut bitmap: RoaringBitmap = list.iter().copied().collect();
                let _ = bitmap.try_push(id);
                *self = Postings::Bitmap(bitmap);
            }
            // `try_push` keeps only a larger number.
            Postings::Bitmap(bitmap) => {
                let _ = bitmap.try_push(id);
            }
        }
    }

    fn bitmap(&self) -> RoaringBitmap {
        match self {
            Postings::List(list) => list.iter().copied().collect(),
            Postings::Bitmap(bitmap) => bitmap.clone(),
        }
    }

    /// About the memory it holds beyond its own size.
    fn heap_bytes(&self) -> usize {
        // What an allocation costs beyond what it asked for (glibc's header, rounded).
        const ALLOCATION: usize = 16;
        match self {
            Postings::List(list) => ALLOCATION + list.capacity() * 4,
            Postings::Bitmap(bitmap) => {
                // (`statistics` counts an array's values as 4 bytes, a bitset in bits.)
                let s = bitmap.statistics();
                ALLOCATION
                    + s.n_containers as usize * 40
                    + s.n_array_containers as usize * ALLOCATION
                    + s.n_bytes_array_containers as usize / 2
                    + s.n_bytes_run_containers as usize
                    + s.n_bitset_containers as usize * 8192
            }
        }
    }
}

/// The distinct words of one text index (the `line` or one key) and the logs of each.
#[derive(Default)]
struct Words {
    text: Vec<u8>,
    table: HashTable<Word>,
    many: Vec<Postings>,
    hasher: DefaultHashBuilder,
}

impl Words {
    fn bytes_of<'t>(text: &'t [u8], w: &Word) -> &'t [u8] {
        &text[w.start as usize..(w.start + w.len) as usize]
    }

    /// Notes that log `id` holds `word` (logs are added in increasing order).
    fn add(&mut self, word: &str, id: u32) {
        let Words {
            text,
            table,
            many,
            hasher,
        } = self;
        let hash = hasher.hash_one(word.as_bytes());
        match table.find_mut(hash, |w| Self::bytes_of(text, w) == word.as_bytes()) {
            Some(w) if w.logs >= MANY => many[(w.logs - MANY) as usize].push(id),
            Some(w) if w.logs != id => {
                let logs = Postings::List(vec![w.logs, id]);
                w.logs = MANY + many.len() as u32;
                many.push(logs);
            }
            // A word twice in one log is one posting.
            Some(_) => {}
            None => {
                let start = text.len() as u32;
                text.extend_from_slice(word.as_bytes());
                let word = Word {
                    start,
                    len: word.len() as u32,
                    logs: id,
                };
                table.insert_unique(hash, word, |w| hasher.hash_one(Self::bytes_of(text, w)));
            }
        }
    }

    /// About the memory it holds.
    fn heap_bytes(&self) -> usize {
        self.text.capacity()
            + self.table.capacity() * (std::mem::size_of::<Word>() + 1)
            + self.many.capacity() * std::mem::size_of::<Postings>()
            + self.many.iter().map(Postings::heap_bytes).sum::<usize>()
    }

    fn logs_of(&self, w: &Word) -> RoaringBitmap {
        if w.logs >= MANY {
            self.many[(w.logs - MANY) as usize].bitmap()
        } else {
            RoaringBitmap::from_iter([w.logs])
        }
    }

    /// The logs holding `word`.
    fn logs(&self, word: &str) -> RoaringBitmap {
        let hash = self.hasher.hash_one(word.as_bytes());
        self.table
            .find(hash, |w| Self::bytes_of(&self.text, w) == word.as_bytes())
            .map(|w| self.logs_of(w))
            .unwrap_or_default()
    }

    /// The logs holding a word that starts with `prefix` (every distinct word read: a prefix
    /// search costs the number of distinct words, not of logs).
    fn logs_with_prefix(&self, prefix: &str) -> RoaringBitmap {
        let mut out = RoaringBitmap::new();
        for w in &self.table {
            if Self::bytes_of(&self.text, w).starts_with(prefix.as_bytes()) {
                match w.logs.checked_sub(MANY) {
                    Some(at) => match &self.many[at as usize] {
                        Postings::List(list) => out.extend(list.iter().copied()),
                        Postings::Bitmap(bitmap) => out |= bitmap,
                    },
                    None => {
                        out.insert(w.logs);
                    }
                }
            }
        }
        out
    }
}

pub(crate) struct TermIndex {
    /// At most this many logs ([`MAX_INDEXED_LOGS`]; fewer in tests).
    limit: usize,
    /// At most this much for distinct words ([`MAX_WORD_BYTES`]; less in tests).
    word_limit: usize,
    /// The index configuration it was built for.
    config: Option<Arc<Index>>,
    groups: Vec<IndexedGroup>,
    /// Per log, by number: its time in seconds.
    times: Vec<u32>,
    /// Per log: its nanoseconds; empty while every log's are 0 (or absent).
    nanos: Vec<u32>,
    /// Per shard: the first group sequence it covers and the next one to read.
    covered: Vec<(u64, u64)>,
    line: Words,
    keys: HashMap<String, Words>,
    /// What the distinct words of `line` and `keys` take (as [`MAX_WORD_BYTES`] counts).
    word_bytes: usize,
    /// Per numeric key: (value, log), sorted before a search reads them.
    numbers: HashMap<String, Vec<(f64, u32)>>,
    sorted: bool,
}

impl Default for TermIndex {
    fn default() -> Self {
        TermIndex {
            limit: MAX_INDEXED_LOGS,
            word_limit: MAX_WORD_BYTES,
            config: None,
            groups: Vec::new(),
            times: Vec::new(),
            nanos: Vec::new(),
            covered: Vec::new(),
            line: Words::default(),
            keys: HashMap::new(),
            word_bytes: 0,
            numbers: HashMap::new(),
            sorted: true,
        }
    }
}

/// A word as the index keeps it (borrowed when it already is: most words of most logs).
fn fold<'w>(text_index: &TextIndex, word: &'w str) -> std::borrow::Cow<'w, str> {
    if text_index.case_sensitive
        || (word.is_ascii() && !word.bytes().any(|b| b.is_ascii_uppercase()))
    {
        std::borrow::Cow::Borrowed(word)
    } else if word.is_ascii() {
        std::borrow::Cow::Owned(word.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Owned(word.to_lowercase())
    }
}

impl TermIndex {
    /// Brings the index up to date with `groups` (every retained group of the logstore, by
    /// shard in sequence order) for `config`, building it again when the configuration changed
    /// or retention dropped groups it covers.
    pub(crate) fn refresh(&mut self, config: &Arc<Index>, shards: usize, groups: &[ViewGroup]) {
        let mut first: Vec<Option<u64>> = vec![None; shards];
        for g in groups {
            let f = &mut first[g.shard as usize];
            *f = Some(f.map_or(g.seq, |s: u64| s.min(g.seq)));
        }
        let same_config = self.config.as_ref().is_some_and(|c| Arc::ptr_eq(c, config));
        let dropped = self.covered.len() != shards
            || self.covered.iter().zip(&first).any(|((from, next), now)| {
                // Retention dropped a group this index holds logs of.
                from < next && now.is_none_or(|now| now > *from)
            });
        if !same_config || dropped {
            *self = TermIndex {
                limit: self.limit,
                word_limit: self.word_limit,
                config: Some(config.clone()),
                covered: first
                    .iter()
                    .map(|f| (f.unwrap_or(0), f.unwrap_or(0)))
                    .collect(),
                ..TermIndex::default()
            };
        }
        for g in groups {
            if self.times.len() >= self.limit || self.word_bytes >= self.word_limit {
                // The rest is read log by log (see `covers`): the index's memory stays bounded.
                break;
            }
            let (from, next) = &mut self.covered[g.shard as usize];
            if g.seq < *next {
                continue;
            }
            if *from == *next {
                *from = g.seq;
            }
            *next = g.seq + 1;
            self.add_group(config, g);
        }
    }

    /// Whether the index holds the logs of this group (a search reads the others itself).
    pub(crate) fn covers(&self, shard: u32, seq: u64) -> bool {
        self.covered
            .get(shard as usize)
            .is_some_and(|(from, next)| seq >= *from && seq < *next)
    }

    /// How many logs it holds (numbered from 0).
    pub(crate) fn len(&self) -> usize {
        self.times.len()
    }

    /// Where log `id` is, and when it was (`id` below [`TermIndex::len`]).
    pub(crate) fn log(&self, id: u32) -> LogRef {
        let at = self
            .groups
            .partition_point(|g| g.first <= id)
            .saturating_sub(1);
        let g = self.groups[at];
        LogRef {
            shard: g.shard,
            seq: g.seq,
            log: id - g.first,
            time: self.times[id as usize],
            time_ns: self.nanos.get(id as usize).copied().unwrap_or(0),
        }
    }

    /// About the memory it holds (what `/_emulator/overview` reports).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.groups.capacity() * std::mem::size_of::<IndexedGroup>()
            + (self.times.capacity() + self.nanos.capacity()) * 4
            + self.line.heap_bytes()
            + self
                .keys
                .iter()
                .map(|(k, w)| k.len() + w.heap_bytes())
                .sum::<usize>()
            + self
                .numbers
                .iter()
                .map(|(k, v)| k.len() + v.capacity() * std::mem::size_of::<(f64, u32)>())
                .sum::<usize>()
    }

    fn add_group(&mut self, config: &Index, g: &ViewGroup) {
        self.groups.push(IndexedGroup {
            shard: g.shard,
            seq: g.seq,
            first: self.times.len() as u32,
        });
        let logs = GroupLogs::read(g.shard, &g.group);
        for at in 0..logs.len() {
            let id = self.times.len() as u32;
            // A log that cannot be read (it was checked when it arrived) is indexed with no
            // words: its number still names its place.
            let log = logs.fields(at).unwrap_or_default();
            self.times.push(log.time);
            match log.time_ns {
                Some(ns) if ns != 0 => {
                    self.nanos.resize(id as usize, 0);
                    self.nanos.push(ns);
                }
                _ if !self.nanos.is_empty() => self.nanos.push(0),
                _ => {}
            }
            for field in &log.contents {
                let (Ok(key), Ok(value)) = (
                    std::str::from_utf8(&field.key),
                    std::str::from_utf8(&field.value),
                ) else {
                    continue;
                };
                if let Some(line) = &config.line {
                    for word in line.words(value) {
                        self.line.add(&fold(line, word), id);
                    }
                }
                match config.keys.get(key) {
                    Some(KeyIndex::Text(text)) => {
                        if !self.keys.contains_key(key) {
                            self.keys.insert(key.to_owned(), Words::default());
                        }
                        if let Some(words) = self.keys.get_mut(key) {
                            for word in text.words(value) {
                                words.add(&fold(text, word), id);
                            }
                        }
                    }
                    Some(KeyIndex::Long | KeyIndex::Double) => {
                        if let Ok(n) = value.trim().parse::<f64>() {
                            if let Some(values) = self.numbers.get_mut(key) {
                                values.push((n, id));
                            } else {
                                self.numbers.insert(key.to_owned(), vec![(n, id)]);
                            }
                            self.sorted = false;
                        }
                    }
                    None => {}
                }
            }
        }
        self.word_bytes = std::iter::once(&self.line)
            .chain(self.keys.values())
            .map(|w| w.text.len() + 24 * w.table.len())
            .sum();
    }

    fn words(&self, words: &Words, text: &TextIndex, p: &Pattern) -> Candidates {
        match p {
            Pattern::Word(w) => Candidates {
                ids: words.logs(&fold(text, w)),
                exact: true,
            },
            Pattern::Prefix(prefix) => Candidates {
                ids: words.logs_with_prefix(&fold(text, prefix)),
                exact: true,
            },
            Pattern::Phrase(phrase) => {
                let mut lists = phrase.iter().map(|w| words.logs(&fold(text, w)));
                let first = lists.next().unwrap_or_default();
                Candidates {
                    ids: lists.fold(first, |acc, l| acc & l),
                    exact: false,
                }
            }
        }
    }

    /// The logs `query` may match; `None`: any log may (the index cannot narrow it).
    pub(crate) fn candidates(&mut self, query: &Query) -> Option<Candidates> {
        if !self.sorted {
            for values in self.numbers.values_mut() {
                values.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            }
            self.sorted = true;
        }
        if matches!(query, Query::All) {
            let mut ids = RoaringBitmap::new();
            ids.insert_range(0..self.times.len() as u32);
            return Some(Candidates { ids, exact: true });
        }
        self.narrow(query)
    }

    fn narrow(&self, query: &Query) -> Option<Candidates> {
        let config = self.config.as_ref()?;
        match query {
            Query::Text { key: None, pattern } => {
                Some(self.words(&self.line, config.line.as_ref()?, pattern))
            }
            Query::Text {
                key: Some(Key::Field(name)),
                pattern,
            } => match config.keys.get(name)? {
                KeyIndex::Text(text) => {
                    let empty = Words::default();
                    Some(self.words(self.keys.get(name).unwrap_or(&empty), text, pattern))
                }
                KeyIndex::Long | KeyIndex::Double => match pattern {
                    Pattern::Word(w) => {
                        let n = w.parse::<f64>().ok()?;
                        Some(self.compare(name, Compare::Eq, n))
                    }
                    _ => None,
                },
            },
            Query::Number { key, op, value } => Some(self.compare(key, *op, *value)),
            Query::And(all) => {
                let known: Vec<Candidates> = all.iter().filter_map(|q| self.narrow(q)).collect();
                let exact = known.len() == all.len() && known.iter().all(|c| c.exact);
                let mut lists = known.into_iter().map(|c| c.ids);
                let first = lists.next()?;
                Some(Candidates {
                    ids: lists.fold(first, |acc, l| acc & l),
                    exact,
                })
            }
            Query::Or(any) => {
                let known: Option<Vec<Candidates>> = any.iter().map(|q| self.narrow(q)).collect();
                let known = known?;
                let exact = known.iter().all(|c| c.exact);
                Some(Candidates {
                    ids: known
                        .into_iter()
                        .map(|c| c.ids)
                        .fold(RoaringBitmap::new(), |acc, l| acc | l),
                    exact,
                })
            }
            Query::All | Query::Not(_) | Query::Text { .. } => None,
        }
    }

    fn compare(&self, key: &str, op: Compare, value: f64) -> Candidates {
        let values = self.numbers.get(key).map_or(&[][..], Vec::as_slice);
        let below = |strict: bool| {
            values.partition_point(|(n, _)| if strict { *n < value } else { *n <= value })
        };
        let range = match op {
            Compare::Gt => below(false)..values.len(),
            Compare::Ge => below(true)..values.len(),
            Compare::Lt => 0..below(true),
            Compare::Le => 0..below(false),
            Compare::Eq => below(true)..below(false),
        };
        Candidates {
            ids: values[range].iter().map(|(_, id)| *id).collect(),
            exact: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulator::search;
    use crate::emulator::store::stored_logs;
    use crate::emulator::stored::StoredGroup;
    use crate::wire::compress::Compression;
    use crate::wire::proto::{Log, LogGroup};
    use bytes::Bytes;
    use prost::Message;

    fn group(shard: u32, seq: u64, logs: &[(u32, &[(&str, &str)])]) -> ViewGroup {
        let g = LogGroup {
            logs: logs
                .iter()
                // Nanoseconds on some logs of the later groups: the index keeps none until the
                // first it meets.
                .map(|(time, fields)| {
                    let nanos = (seq >= 3 && time % 3 == 0).then_some(time * 1000 + 1);
                    Log::of_fields(*time, nanos, fields)
                })
                .collect(),
            topic: Some("web".into()),
            ..LogGroup::default()
        };
        let raw = g.encode_to_vec();
        ViewGroup {
            shard,
            seq,
            group: StoredGroup {
                raw_size: raw.len(),
                body: Bytes::from(raw),
                codec: Compression::None,
                received: 0,
                logs: logs.len() as u32,
            },
        }
    }

    /// Every (group, log) matching `query` by reading each log, as a search without the index.
    fn scanned(groups: &[ViewGroup], index: &Index, query: &Query) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        for g in groups {
            for (l, log) in stored_logs(g.shard, &g.group).iter().enumerate() {
                if search::matches(query, index, log) {
                    out.push((g.seq, l as u32));
                }
            }
        }
        out
    }

    /// The same through the index: its candidates, checked when they are not exact.
    fn indexed(
        terms: &mut TermIndex,
        groups: &[ViewGroup],
        index: &Index,
        query: &Query,
    ) -> Vec<(u64, u32)> {
        let candidates = terms.candidates(query);
        let ids: Vec<u32> = match &candidates {
            Some(c) => c.ids.iter().collect(),
            None => (0..terms.len() as u32).collect(),
        };
        let exact = candidates.as_ref().is_some_and(|c| c.exact);
        let mut out: Vec<(u64, u32)> = ids
            .into_iter()
            .map(|id| {
                let r = terms.log(id);
                let g = groups
                    .iter()
                    .find(|g| g.shard == r.shard && g.seq == r.seq)
                    .unwrap();
                let log = &stored_logs(g.shard, &g.group)[r.log as usize];
                assert_eq!((r.time, r.time_ns), (log.time, log.time_ns.unwrap_or(0)));
                r
            })
            .filter(|r| {
                exact || {
                    let g = groups
                        .iter()
                        .find(|g| g.shard == r.shard && g.seq == r.seq)
                        .unwrap();
                    search::matches(
                        query,
                        index,
                        &stored_logs(g.shard, &g.group)[r.log as usize],
                    )
                }
            })
            .map(|r| (r.seq, r.log))
            .collect();
        // Groups beyond the index's limit, read log by log.
        let unindexed: Vec<ViewGroup> = groups
            .iter()
            .filter(|g| !terms.covers(g.shard, g.seq))
            .cloned()
            .collect();
        out.extend(scanned(&unindexed, index, query));
        out.sort_unstable();
        out
    }

    #[test]
    fn the_index_finds_what_reading_every_log_finds() {
        let index = Arc::new(
            Index::parse(
                serde_json::json!({
                    "line": {"token": [" ", ",", "/"]},
                    "keys": {
                        "level": {"type": "text"},
                        "code": {"type": "text", "caseSensitive": true},
                        "status": {"type": "long"},
                        "ms": {"type": "double"},
                    }
                }),
                0,
            )
            .unwrap(),
        );
        let words = ["alpha", "Beta", "gamma", "delta/epsilon", "Ünïcode", "beta"];
        let levels = ["error", "ERROR", "warn", "info"];
        let mut groups = Vec::new();
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for seq in 0..12u64 {
            let logs: Vec<(u32, Vec<(String, String)>)> = (0..20)
                .map(|_| {
                    let message = format!(
                        "{} {} {}",
                        words[next() % words.len()],
                        words[next() % words.len()],
                        words[next() % words.len()]
                    );
                    (
                        100 + (next() % 50) as u32,
                        vec![
                            ("message".to_owned(), message),
                            ("level".to_owned(), levels[next() % levels.len()].to_owned()),
                            ("code".to_owned(), ["E1", "e1", "W2"][next() % 3].to_owned()),
                            ("status".to_owned(), (200 + next() % 400).to_string()),
                            ("ms".to_owned(), format!("{}.{}", next() % 50, next() % 10)),
                        ],
                    )
                })
                .collect();
            let logs: Vec<(u32, Vec<(&str, &str)>)> = logs
                .iter()
                .map(|(t, f)| {
                    (
                        *t,
                        f.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
                    )
                })
                .collect();
            let logs: Vec<(u32, &[(&str, &str)])> =
                logs.iter().map(|(t, f)| (*t, f.as_slice())).collect();
            groups.push(group((seq % 2) as u32, seq / 2, &logs));
        }
        // Whole, and held to 100 logs (the rest read log by log); built in two steps (a search
        // before the later groups came), as searches do.
        // Also held by the memory of its words: 4 000 bytes are reached within the first groups.
        for (limit, word_limit) in [
            (MAX_INDEXED_LOGS, MAX_WORD_BYTES),
            (100, MAX_WORD_BYTES),
            (MAX_INDEXED_LOGS, 4_000),
        ] {
            let mut terms = TermIndex {
                limit,
                word_limit,
                ..TermIndex::default()
            };
            let (early, _) = groups.split_at(5);
            terms.refresh(&index, 2, early);
            terms.refresh(&index, 2, &groups);
            if word_limit == MAX_WORD_BYTES {
                assert_eq!(terms.len(), (12 * 20).min(limit));
            } else {
                assert!(terms.len() < 12 * 20 && terms.word_bytes >= word_limit);
            }
            for q in [
                "beta",
                "BETA and gamma",
                "alph*",
                "delta",
                "\"beta gamma\"",
                "ünïcode",
                "level: error",
                "level: err* or level: warn",
                "code: E1",
                "code: e1",
                "status > 400 and status <= 500",
                "status: 300",
                "437 or 250 or 599",
                "12*",
                "ms < 10.5",
                "ms >= 49",
                "not beta",
                "beta and not level: error",
                "(alpha or gamma) and status < 300",
                "__topic__: web and alpha",
                "*",
                "missingword",
            ] {
                let query = search::parse(q).unwrap();
                search::check(&query, &index).unwrap();
                let mut want = scanned(&groups, &index, &query);
                want.sort_unstable();
                assert_eq!(
                    indexed(&mut terms, &groups, &index, &query),
                    want,
                    "{q} (limit {limit}, {word_limit})"
                );
            }
        }
        let mut terms = TermIndex::default();
        terms.refresh(&index, 2, &groups);
        // Retention dropped the oldest group of shard 0: built again, without it.
        terms.refresh(&index, 2, &groups[2..]);
        let query = search::parse("*").unwrap();
        assert_eq!(terms.len(), 10 * 20);
        assert_eq!(
            indexed(&mut terms, &groups[2..], &index, &query).len(),
            10 * 20
        );
        // A new index configuration: built again for it.
        let keys_only = Arc::new(
            Index::parse(serde_json::json!({"keys": {"level": {"type": "text"}}}), 0).unwrap(),
        );
        terms.refresh(&keys_only, 2, &groups);
        let query = search::parse("level: warn").unwrap();
        let mut want = scanned(&groups, &keys_only, &query);
        want.sort_unstable();
        assert_eq!(indexed(&mut terms, &groups, &keys_only, &query), want);
    }
}
