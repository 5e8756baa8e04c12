//! The query API: GetLogs in both forms the SDKs send (`GET /logstores/{name}?type=log` with
//! the parameters in the query string, answered with a JSON array and `x-log-*` headers; and
//! `POST /logstores/{name}/logs` with them in a JSON body, answered `{"meta", "data"}`,
//! lz4-compressed when the client accepts it) and GetHistograms
//! (`GET /logstores/{name}?type=histogram`). The search is [`search`]'s, over the logstore's
//! index; logs are filtered by their own time (`from` ≤ time < `to`) and the logstore's TTL
//! (by the emulator's clock), ordered by time (newest first with `reverse`), and paged with
//! `line` (at most 100) and `offset`. Every answer is complete (`x-log-progress: Complete`).
//!
//! Bounded: a query reads what retention holds (each logstore's `retention_bytes`), one
//! group decoded at a time; it keeps 16 bytes per matching log, and decodes again only the
//! groups of the page it answers. Runs on the request's thread, outside the store's lock.

use std::time::Instant;

use bytes::Bytes;
use hyper::http::{HeaderValue, Response};
use serde_json::{json, Map, Value};

use super::{json_response, missing, unix_now, Head, Service};
use crate::emulator::catalog::Index;
use crate::emulator::error::ApiError;
use crate::emulator::search::{self, Query};
use crate::emulator::stored::{GroupLogs, StoredLog};
use crate::wire::compress::{self, Compression};

/// The most logs one GetLogs call answers.
const MAX_LINES: u64 = 100;
/// The most buckets a histogram has.
const MAX_BUCKETS: u64 = 60;

/// A GetLogs or GetHistograms request, whichever form it came in.
struct Ask {
    from: u32,
    to: u32,
    query: String,
    topic: Option<String>,
    line: u64,
    offset: u64,
    reverse: bool,
    shard: Option<u32>,
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("ParameterInvalid", message)
}

impl Ask {
    /// From named values (query string or JSON body), each read as text or a number.
    fn read(get: impl Fn(&str) -> Option<String>) -> Result<Ask, ApiError> {
        let number = |name: &str| -> Result<Option<u64>, ApiError> {
            match get(name) {
                None => Ok(None),
                Some(v) if v.is_empty() => Ok(None),
                Some(v) => v
                    .trim()
                    .parse::<u64>()
                    .map(Some)
                    .map_err(|_| invalid(format!("{name} {v:?} is not a whole number"))),
            }
        };
        let time = |name: &str| -> Result<u32, ApiError> {
            let t = number(name)?.ok_or_else(|| invalid(format!("{name} is missing")))?;
            u32::try_from(t)
                .map_err(|_| invalid(format!("{name} {t} is not a unix time in seconds")))
        };
        let (from, to) = (time("from")?, time("to")?);
        if from > to {
            return Err(invalid(format!("from {from} is after to {to}")));
        }
        let line = number("line")?.unwrap_or(MAX_LINES);
        if line > MAX_LINES {
            return Err(invalid(format!(
                "line {line} is over the limit of {MAX_LINES}"
            )));
        }
        let shard = number("shard")?
            .map(|s| u32::try_from(s).map_err(|_| invalid(format!("shard {s} does not exist"))))
            .transpose()?;
        Ok(Ask {
            from,
            to,
            query: get("query").unwrap_or_default(),
            topic: get("topic").filter(|t| !t.is_empty()),
            line,
            offset: number("offset")?.unwrap_or(0),
            reverse: get("reverse").is_some_and(|r| r.eq_ignore_ascii_case("true")),
            shard,
        })
    }
}

/// One matching log: where it is and when it was.
#[derive(Clone, Copy)]
struct Hit {
    time: u32,
    time_ns: u32,
    group: u32,
    log: u32,
}

/// What a search found: a page of logs, how many logs were read and how many matched.
struct Found {
    logs: Vec<Value>,
    read: u64,
    matched: usize,
}

/// A log as GetLogs answers it: its fields, with its time, source, topic and tags.
fn log_answer(log: StoredLog) -> Value {
    let mut object = Map::new();
    object.insert("__time__".into(), log.time.into());
    if let Some(ns) = log.time_ns {
        object.insert("__time_ns_part__".into(), ns.into());
    }
    object.insert("__source__".into(), log.source.unwrap_or_default().into());
    object.insert("__topic__".into(), log.topic.unwrap_or_default().into());
    for (k, v) in log.tags {
        object.insert(format!("__tag__:{k}"), v.into());
    }
    for (k, v) in log.contents {
        object.insert(k, v.into());
    }
    Value::Object(object)
}

impl Service {
    /// The logstore's view, its index (a query needs one) and the parsed query, checked.
    #[allow(clippy::type_complexity)]
    fn prepare(
        &self,
        project: &str,
        logstore: &str,
        ask: &Ask,
    ) -> Result<
        (
            crate::emulator::store::SearchView,
            std::sync::Arc<Index>,
            Query,
        ),
        ApiError,
    > {
        let view = self
            .store
            .search_view(project, logstore, ask.shard)
            .map_err(|m| missing(m, project, logstore))?;
        let index = view.index.clone().ok_or_else(|| {
            ApiError::bad_request(
                "IndexConfigNotExist",
                format!("logstore {logstore} has no index: create one (CreateIndex) to search it"),
            )
        })?;
        let query = search::parse(&ask.query).map_err(|e| invalid(e.0))?;
        search::check(&query, &index).map_err(|e| invalid(e.0))?;
        Ok((view, index, query))
    }

    /// Every log of the view matching `ask`, oldest first, and how many logs were read (decoded
    /// and checked). Over every shard, the term index narrows the logs to read (see
    /// `term_index`); a search of one shard reads them all.
    fn hits(
        view: &crate::emulator::store::SearchView,
        index: &std::sync::Arc<Index>,
        query: &Query,
        ask: &Ask,
    ) -> (Vec<Hit>, u64) {
        let ttl_start = unix_now().saturating_sub(view.ttl_days.saturating_mul(86_400));
        let from = ask.from.max(ttl_start);
        let in_time = |time: u32| time >= from && time < ask.to;
        let mut hits = Vec::new();
        let mut read = 0u64;
        let mut check = |g: usize, wanted: Option<&[u32]>, hits: &mut Vec<Hit>| {
            let group = &view.groups[g];
            let logs = GroupLogs::read(group.shard, &group.group);
            let mut take = |l: usize, log: &StoredLog| {
                read += 1;
                let in_topic = ask
                    .topic
                    .as_deref()
                    .is_none_or(|t| log.topic.as_deref().unwrap_or_default() == t);
                if in_time(log.time) && in_topic && search::matches(query, index, log) {
                    hits.push(Hit {
                        time: log.time,
                        time_ns: log.time_ns.unwrap_or(0),
                        group: g as u32,
                        log: l as u32,
                    });
                }
            };
            match wanted {
                None => {
                    for l in 0..logs.len() {
                        if let Some(log) = logs.get(l) {
                            take(l, &log);
                        }
                    }
                }
                Some(places) => {
                    for &l in places {
                        if let Some(log) = logs.get(l as usize) {
                            take(l as usize, &log);
                        }
                    }
                }
            }
        };
        if view.whole {
            let mut terms = view.terms.lock();
            terms.refresh(index, view.shards, &view.groups);
            let candidates = terms.candidates(query);
            let place: std::collections::HashMap<(u32, u64), usize> = view
                .groups
                .iter()
                .enumerate()
                .map(|(i, g)| ((g.shard, g.seq), i))
                .collect();
            let ids: Box<dyn Iterator<Item = u32>> = match &candidates {
                Some(c) => Box::new(c.ids.iter()),
                None => Box::new(0..terms.len() as u32),
            };
            let exact = candidates.as_ref().is_some_and(|c| c.exact) && ask.topic.is_none();
            // The candidates in time, by group (each group decoded once when they need a check).
            let mut by_group: std::collections::BTreeMap<usize, Vec<u32>> = Default::default();
            for id in ids {
                let r = terms.log(id);
                let Some(&g) = place.get(&(r.shard, r.seq)) else {
                    continue;
                };
                if !in_time(r.time) {
                    continue;
                }
                if exact {
                    hits.push(Hit {
                        time: r.time,
                        time_ns: r.time_ns,
                        group: g as u32,
                        log: r.log,
                    });
                } else {
                    by_group.entry(g).or_default().push(r.log);
                }
            }
            let unindexed: Vec<usize> = (0..view.groups.len())
                .filter(|&g| !terms.covers(view.groups[g].shard, view.groups[g].seq))
                .collect();
            drop(terms);
            for (g, places) in by_group {
                check(g, Some(&places), &mut hits);
            }
            for g in unindexed {
                check(g, None, &mut hits);
            }
        } else {
            for g in 0..view.groups.len() {
                check(g, None, &mut hits);
            }
        }
        // Logs of one time in the order they arrived in.
        hits.sort_by_key(|h| (h.time, h.time_ns, h.group, h.log));
        (hits, read)
    }

    /// One page of the logs matching `ask` in a logstore: GetLogs' and the console's search.
    fn search(&self, project: &str, logstore: &str, ask: &Ask) -> Result<Found, ApiError> {
        let (view, index, query) = self.prepare(project, logstore, ask)?;
        let (mut hits, read) = Self::hits(&view, &index, &query, ask);
        if ask.reverse {
            hits.reverse();
        }
        let page: Vec<Hit> = hits
            .iter()
            .skip(ask.offset as usize)
            .take(ask.line as usize)
            .copied()
            .collect();
        // The page's groups decoded again, each once.
        let mut decoded: std::collections::HashMap<u32, GroupLogs> = Default::default();
        let mut logs = Vec::with_capacity(page.len());
        for hit in &page {
            let group = decoded.entry(hit.group).or_insert_with(|| {
                let g = &view.groups[hit.group as usize];
                GroupLogs::read(g.shard, &g.group)
            });
            if let Some(log) = group.get(hit.log as usize) {
                logs.push(log_answer(log));
            }
        }
        Ok(Found {
            logs,
            read,
            matched: hits.len(),
        })
    }

    /// The console's search (`/_emulator/query`): GetLogs' parameters in the query string,
    /// answered `{"matched", "read", "logs"}`, on any logstore of any project.
    pub(super) fn admin_query(&self, head: &Head<'_>) -> Result<Response<Bytes>, ApiError> {
        let project = head
            .param("project")
            .map_or_else(|| self.config.default_project.clone(), str::to_owned);
        let logstore = head
            .param("logstore")
            .ok_or_else(|| invalid("logstore is missing"))?
            .to_owned();
        let ask = Ask::read(|name| head.param(name).map(str::to_owned))?;
        let found = self.search(&project, &logstore, &ask)?;
        Ok(json_response(&json!({
            "matched": found.matched,
            "read": found.read,
            "logs": found.logs,
        })))
    }

    /// GetLogs: `v2` is the POST form (JSON body, `{"meta", "data"}` answer).
    pub(super) fn get_logs(
        &self,
        head: &Head<'_>,
        logstore: &str,
        body: &[u8],
        v2: bool,
    ) -> Result<Response<Bytes>, ApiError> {
        let started = Instant::now();
        Self::check_api_version(head)?;
        self.authenticate(head, body)?;
        let ask = if v2 {
            let fields: Map<String, Value> = serde_json::from_slice(body).map_err(|e| {
                ApiError::bad_request(
                    "PostBodyInvalid",
                    format!("the body is not a JSON object: {e}"),
                )
            })?;
            Ask::read(|name| {
                fields.get(name).and_then(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Null => None,
                    other => Some(other.to_string()),
                })
            })?
        } else {
            Ask::read(|name| head.param(name).map(str::to_owned))?
        };
        let project = self.project_of(head.header("host"));
        let found = self.search(&project, logstore, &ask)?;
        let (data, read) = (found.logs, found.read);
        let elapsed = started.elapsed().as_millis() as u64;
        let count = data.len();
        if v2 {
            let answer = json!({
                "meta": {
                    "count": count,
                    "progress": "Complete",
                    "processedRows": read,
                    "elapsedMillisecond": elapsed,
                    "hasSQL": false,
                    "whereQuery": ask.query,
                    "aggQuery": "",
                    "isAccurate": true,
                    "powerSql": false,
                    "cpuSec": 0.0,
                    "cpuCores": 0,
                    "mode": 0,
                },
                "data": data,
            });
            return Ok(Self::maybe_compressed(head, &answer));
        }
        let mut resp = json_response(&data);
        let h = resp.headers_mut();
        h.insert("x-log-progress", HeaderValue::from_static("Complete"));
        h.insert("x-log-count", HeaderValue::from(count as u64));
        h.insert("x-log-processed-rows", HeaderValue::from(read));
        h.insert("x-log-elapsed-millisecond", HeaderValue::from(elapsed));
        h.insert("x-log-has-sql", HeaderValue::from_static("false"));
        Ok(resp)
    }

    /// A JSON answer, lz4-compressed when the client accepts it (`x-log-compresstype`,
    /// `x-log-bodyrawsize`), as the service answers the POST form.
    fn maybe_compressed(head: &Head<'_>, answer: &Value) -> Response<Bytes> {
        let accepts_lz4 = head
            .header("accept-encoding")
            .is_some_and(|e| e.split(',').any(|c| c.trim().eq_ignore_ascii_case("lz4")));
        let raw = serde_json::to_vec(answer).unwrap_or_default();
        let compressed = accepts_lz4
            .then(|| compress::compress(Compression::Lz4, &raw).ok())
            .flatten();
        let raw_len = raw.len();
        let mut resp = match compressed {
            Some(body) => {
                let mut resp = Response::new(Bytes::from(body));
                resp.headers_mut()
                    .insert("x-log-compresstype", HeaderValue::from_static("lz4"));
                resp
            }
            None => Response::new(Bytes::from(raw)),
        };
        let h = resp.headers_mut();
        h.insert("x-log-bodyrawsize", HeaderValue::from(raw_len as u64));
        h.insert("content-type", HeaderValue::from_static("application/json"));
        resp
    }

    /// GetHistograms: counts of matching logs over at most 60 equal buckets of `[from, to)`.
    pub(super) fn get_histograms(
        &self,
        head: &Head<'_>,
        logstore: &str,
    ) -> Result<Response<Bytes>, ApiError> {
        Self::check_api_version(head)?;
        self.authenticate(head, &[])?;
        let ask = Ask::read(|name| head.param(name).map(str::to_owned))?;
        let project = self.project_of(head.header("host"));
        let (view, index, query) = self.prepare(&project, logstore, &ask)?;
        let (hits, _) = Self::hits(&view, &index, &query, &ask);
        let span = u64::from(ask.to - ask.from).max(1);
        let width = span.div_ceil(MAX_BUCKETS).max(1);
        let mut buckets = Vec::new();
        let mut start = u64::from(ask.from);
        while start < u64::from(ask.to) || buckets.is_empty() {
            let end = (start + width).min(u64::from(ask.to).max(start + 1));
            // The hits are in time order: a bucket's count is the distance of its bounds.
            let below = |t: u64| hits.partition_point(|h| u64::from(h.time) < t);
            let count = below(end) - below(start);
            buckets.push(json!({"from": start, "to": end, "count": count, "progress": "Complete"}));
            start = end;
        }
        let mut resp = json_response(&buckets);
        let h = resp.headers_mut();
        h.insert("x-log-progress", HeaderValue::from_static("Complete"));
        h.insert("x-log-count", HeaderValue::from(hits.len() as u64));
        Ok(resp)
    }
}
