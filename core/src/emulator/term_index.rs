//! The words of a logstore's logs, so a search reads only the logs that may match: built at the
//! first search after the logstore's index is made (not at ingest, which stays as fast with an
//! index as without), brought up to date at each later search with the groups that arrived
//! since, and built again when retention dropped groups it covers or the index changed.
//!
//! For each log: where it is (shard, group sequence, place in the group) and its time; for each
//! word of the `line` index and of each text key, the logs holding it (words folded to lower
//! case unless the index is case-sensitive); for each numeric key, its values in order. A
//! search asks [`TermIndex::candidates`] for the logs a query may match: exactly those for
//! words, prefixes and comparisons and their `and` / `or`, a superset for phrases, and no
//! answer (every log) for `not`, topics, sources and tags; the caller then checks the
//! candidates that are not exact against the query itself. About 8 bytes a word occurrence and
//! 24 a log, for at most [`MAX_INDEXED_LOGS`] logs: groups beyond them are read log by log.
//!
//! Runs on the searching request's thread, under the logstore's own lock (searches of one
//! logstore take turns; ingest never waits for it).

use std::collections::HashMap;
use std::sync::Arc;

use super::catalog::{Index, KeyIndex, TextIndex};
use super::search::{Compare, Key, Pattern, Query};
use super::store::{stored_logs, StoredGroup};

/// The most logs one logstore's index holds (about 170 bytes each for S1 logs): beyond them,
/// the groups that arrived later are read log by log, so a large retention never makes the
/// index outgrow what a machine has.
pub(crate) const MAX_INDEXED_LOGS: usize = 2_000_000;

/// Where one log is, and when it was.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogRef {
    pub(crate) shard: u32,
    pub(crate) seq: u64,
    pub(crate) log: u32,
    pub(crate) time: u32,
    pub(crate) time_ns: u32,
}

/// One retained group a search may read, with its place in its shard.
#[derive(Clone)]
pub(crate) struct ViewGroup {
    pub(crate) shard: u32,
    pub(crate) seq: u64,
    pub(crate) group: StoredGroup,
}

/// The logs a query may match: `ids` into [`TermIndex::logs`], sorted; `exact` when every one
/// matches (no check needed).
pub(crate) struct Candidates {
    pub(crate) ids: Vec<u32>,
    pub(crate) exact: bool,
}

pub(crate) struct TermIndex {
    /// At most this many logs ([`MAX_INDEXED_LOGS`]; fewer in tests).
    limit: usize,
    /// The index configuration it was built for.
    config: Option<Arc<Index>>,
    pub(crate) logs: Vec<LogRef>,
    /// Per shard: the first group sequence it covers and the next one to read.
    covered: Vec<(u64, u64)>,
    line: HashMap<String, Vec<u32>>,
    keys: HashMap<String, HashMap<String, Vec<u32>>>,
    /// Per numeric key: (value, log), sorted before a search reads them.
    numbers: HashMap<String, Vec<(f64, u32)>>,
    sorted: bool,
}

impl Default for TermIndex {
    fn default() -> Self {
        TermIndex {
            limit: MAX_INDEXED_LOGS,
            config: None,
            logs: Vec::new(),
            covered: Vec::new(),
            line: HashMap::new(),
            keys: HashMap::new(),
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

fn push(postings: &mut HashMap<String, Vec<u32>>, word: &str, id: u32) {
    match postings.get_mut(word) {
        // A word twice in one log is one posting.
        Some(list) if list.last() == Some(&id) => {}
        Some(list) => list.push(id),
        None => {
            postings.insert(word.to_owned(), vec![id]);
        }
    }
}

fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

fn union(lists: impl IntoIterator<Item = Vec<u32>>) -> Vec<u32> {
    let mut out: Vec<u32> = lists.into_iter().flatten().collect();
    out.sort_unstable();
    out.dedup();
    out
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
                config: Some(config.clone()),
                covered: first
                    .iter()
                    .map(|f| (f.unwrap_or(0), f.unwrap_or(0)))
                    .collect(),
                ..TermIndex::default()
            };
        }
        for g in groups {
            if self.logs.len() >= self.limit {
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

    fn add_group(&mut self, config: &Index, g: &ViewGroup) {
        for (place, log) in stored_logs(g.shard, &g.group).into_iter().enumerate() {
            let id = self.logs.len() as u32;
            self.logs.push(LogRef {
                shard: g.shard,
                seq: g.seq,
                log: place as u32,
                time: log.time,
                time_ns: log.time_ns.unwrap_or(0),
            });
            for (key, value) in &log.contents {
                if let Some(line) = &config.line {
                    for word in line.words(value) {
                        push(&mut self.line, &fold(line, word), id);
                    }
                }
                match config.keys.get(key) {
                    Some(KeyIndex::Text(text)) => {
                        let words = self.keys.entry(key.clone()).or_default();
                        for word in text.words(value) {
                            push(words, &fold(text, word), id);
                        }
                    }
                    Some(KeyIndex::Long | KeyIndex::Double) => {
                        if let Ok(n) = value.trim().parse::<f64>() {
                            self.numbers.entry(key.clone()).or_default().push((n, id));
                            self.sorted = false;
                        }
                    }
                    None => {}
                }
            }
        }
    }

    fn words(
        &self,
        postings: &HashMap<String, Vec<u32>>,
        text: &TextIndex,
        p: &Pattern,
    ) -> Candidates {
        match p {
            Pattern::Word(w) => Candidates {
                ids: postings
                    .get(fold(text, w).as_ref())
                    .cloned()
                    .unwrap_or_default(),
                exact: true,
            },
            Pattern::Prefix(prefix) => {
                // Every word of the index read: a prefix search costs the number of distinct
                // words, not of logs.
                let prefix = fold(text, prefix);
                Candidates {
                    ids: union(
                        postings
                            .iter()
                            .filter(|(w, _)| w.starts_with(prefix.as_ref()))
                            .map(|(_, ids)| ids.clone()),
                    ),
                    exact: true,
                }
            }
            Pattern::Phrase(words) => {
                let mut lists = words.iter().map(|w| {
                    postings
                        .get(fold(text, w).as_ref())
                        .map_or(&[][..], Vec::as_slice)
                });
                let first = lists.next().unwrap_or_default().to_vec();
                Candidates {
                    ids: lists.fold(first, |acc, l| intersect(&acc, l)),
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
            return Some(Candidates {
                ids: (0..self.logs.len() as u32).collect(),
                exact: true,
            });
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
                    let empty = HashMap::new();
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
                    ids: lists.fold(first, |acc, l| intersect(&acc, &l)),
                    exact,
                })
            }
            Query::Or(any) => {
                let known: Option<Vec<Candidates>> = any.iter().map(|q| self.narrow(q)).collect();
                let known = known?;
                let exact = known.iter().all(|c| c.exact);
                Some(Candidates {
                    ids: union(known.into_iter().map(|c| c.ids)),
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
        let mut ids: Vec<u32> = values[range].iter().map(|(_, id)| *id).collect();
        ids.sort_unstable();
        Candidates { ids, exact: true }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulator::search;
    use crate::wire::compress::Compression;
    use crate::wire::proto::{Log, LogGroup};
    use bytes::Bytes;
    use prost::Message;

    fn group(shard: u32, seq: u64, logs: &[(u32, &[(&str, &str)])]) -> ViewGroup {
        let g = LogGroup {
            logs: logs
                .iter()
                .map(|(time, fields)| Log::of_fields(*time, None, fields))
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
            Some(c) => c.ids.clone(),
            None => (0..terms.logs.len() as u32).collect(),
        };
        let exact = candidates.as_ref().is_some_and(|c| c.exact);
        let mut out: Vec<(u64, u32)> = ids
            .into_iter()
            .map(|id| terms.logs[id as usize])
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
        for limit in [MAX_INDEXED_LOGS, 100] {
            let mut terms = TermIndex {
                limit,
                ..TermIndex::default()
            };
            let (early, _) = groups.split_at(5);
            terms.refresh(&index, 2, early);
            terms.refresh(&index, 2, &groups);
            assert_eq!(terms.logs.len(), (12 * 20).min(limit));
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
                    "{q} (limit {limit})"
                );
            }
        }
        let mut terms = TermIndex::default();
        terms.refresh(&index, 2, &groups);
        // Retention dropped the oldest group of shard 0: built again, without it.
        terms.refresh(&index, 2, &groups[2..]);
        let query = search::parse("*").unwrap();
        assert_eq!(terms.logs.len(), 10 * 20);
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
