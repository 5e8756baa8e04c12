//! The emulator's request handler: one synchronous function from a complete request to a
//! complete response, with no I/O, so the HTTP server, the benchmarks and the tests all drive
//! exactly the same code.
//!
//! PutLogs goes through every check the service makes, in the service's order, and the first
//! failure refuses the whole request: API version, Content-Type, Content-Length, the signature
//! (v1, v4 or bearer, with STS tokens and ±15 min date skew), the project and logstore,
//! `x-log-bodyrawsize`, Content-MD5, the compression type, decompression to exactly the
//! declared size, then a zero-copy validation of the `LogGroup` (or `LogGroupList` in
//! `batch_group` mode). Accepted groups are stored as they arrived (compressed), once valid.
//! The SLS read APIs (ListShards, GetCursor, PullLogs) and the unauthenticated `/_emulator/`
//! test API are served here too. Every answer carries a lowercase `x-log-requestid`.
//!
//! Runs on whichever thread calls it (the server's tokio workers); it never blocks except on
//! the store's short mutex.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use chrono::{DateTime, NaiveDateTime, Utc};
use hyper::http::{HeaderValue, Method, Request, Response, StatusCode};
use md5::Digest as _;
use parking_lot::Mutex;

use super::error::ApiError;
use super::faults::{Fault, Faults};
use super::store::{Missing, Placement, Store, StoredGroup};
use super::EmulatorConfig;
use crate::wire::compress::{self, CodecError, Compression};
use crate::wire::hashkey;
use crate::wire::limits::{API_VERSION, MAX_RAW_BODY_BYTES};
use crate::wire::proto::put_varint;
use crate::wire::scan::{self, ScanError};
use crate::wire::sign::{self, Authorization, EMPTY_BODY_SHA256, V1_SIGNATURE_METHOD};

thread_local! {
    /// Per server thread decompression area for validating PutLogs bodies (they are stored
    /// compressed, so the decoded bytes are only needed while checking them).
    static DECODE_SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Exact running totals of what the emulator saw.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counters {
    /// Every request, of any kind.
    pub requests: u64,
    /// PutLogs requests, accepted or not.
    pub put_requests: u64,
    /// PutLogs requests accepted.
    pub accepted_requests: u64,
    /// Logs accepted.
    pub logs: u64,
    /// Log groups accepted.
    pub log_groups: u64,
    /// Uncompressed bytes accepted.
    pub raw_bytes: u64,
    /// Bytes accepted as sent (compressed).
    pub compressed_bytes: u64,
    /// Refused requests by errorCode (injected errors included).
    pub rejected: BTreeMap<String, u64>,
    /// Requests that met an injected fault.
    pub faults_injected: u64,
}

#[derive(Default)]
struct AtomicCounters {
    requests: AtomicU64,
    put_requests: AtomicU64,
    accepted_requests: AtomicU64,
    logs: AtomicU64,
    log_groups: AtomicU64,
    raw_bytes: AtomicU64,
    compressed_bytes: AtomicU64,
    rejected: Mutex<BTreeMap<String, u64>>,
}

struct Key {
    secret: String,
    token: Option<String>,
}

/// The request handler and everything it owns (store, faults, counters).
pub struct Service {
    config: EmulatorConfig,
    keys: HashMap<String, Key>,
    api_keys: HashSet<String>,
    pub(crate) store: Store,
    pub(crate) faults: Faults,
    counters: AtomicCounters,
    id_prefix: u32,
    id_next: AtomicU64,
}

/// The parts of a request every check looks at, parsed once.
struct Head<'a> {
    method: &'a Method,
    path: &'a str,
    query: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    headers: Vec<(&'a str, &'a str)>,
}

impl Head<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        sign::header(&self.headers, name)
    }

    fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_ref())
    }
}

fn unix_now() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(0)
}

fn json_response(value: &impl serde::Serialize) -> Response<Bytes> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut resp = Response::new(Bytes::from(body));
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    resp
}

fn missing(m: Missing, project: &str, logstore: &str) -> ApiError {
    match m {
        Missing::Project => ApiError::new(
            StatusCode::NOT_FOUND,
            "ProjectNotExist",
            format!("The Project does not exist : {project}"),
        ),
        Missing::Logstore => ApiError::new(
            StatusCode::NOT_FOUND,
            "LogStoreNotExist",
            format!("logstore {logstore} does not exist"),
        ),
    }
}

fn scan_error(e: ScanError) -> ApiError {
    let code = if matches!(e, ScanError::InvalidKey { .. }) {
        "InvalidKey"
    } else {
        "PostBodyInvalid"
    };
    ApiError::bad_request(code, e.to_string())
}

fn codec_error(e: CodecError) -> ApiError {
    match e {
        CodecError::UnknownType(t) => ApiError::bad_request(
            "InvalidCompressType",
            format!("compress type {t} is not supported"),
        ),
        CodecError::RawSizeTooLarge { .. } => {
            ApiError::bad_request("PostBodyTooLarge", e.to_string())
        }
        other => ApiError::bad_request(
            "PostBodyUncompressError",
            format!("post body uncompressed fail: {other}"),
        ),
    }
}

/// Cursors are base64 of the group's sequence number in its shard, like the service's
/// opaque numeric cursors.
fn encode_cursor(seq: u64) -> String {
    base64::engine::general_purpose::STANDARD.encode(seq.to_string())
}

fn decode_cursor(cursor: &str) -> Result<u64, ApiError> {
    base64::engine::general_purpose::STANDARD
        .decode(cursor.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            ApiError::bad_request("InvalidCursor", format!("cursor {cursor:?} is not valid"))
        })
}

fn parse_http_date(value: &str) -> Option<i64> {
    DateTime::parse_from_rfc2822(value.trim())
        .ok()
        .map(|d| d.timestamp())
}

fn parse_v4_date(value: &str) -> Option<i64> {
    NaiveDateTime::parse_from_str(value.trim(), "%Y%m%dT%H%M%SZ")
        .ok()
        .map(|d| d.and_utc().timestamp())
}

impl Service {
    /// A handler for `config`.
    pub fn new(config: EmulatorConfig) -> Self {
        let mut keys = HashMap::new();
        for k in &config.access_keys {
            keys.insert(
                k.id.clone(),
                Key {
                    secret: k.secret.clone(),
                    token: None,
                },
            );
        }
        for k in &config.sts_keys {
            keys.insert(
                k.id.clone(),
                Key {
                    secret: k.secret.clone(),
                    token: Some(k.token.clone()),
                },
            );
        }
        let store = Store::new(
            config.auto_create,
            config.shard_count,
            config.retention_bytes,
        );
        Service {
            api_keys: config.api_keys.iter().cloned().collect(),
            keys,
            store,
            faults: Faults::default(),
            counters: AtomicCounters::default(),
            id_prefix: fastrand::u32(..),
            id_next: AtomicU64::new(1),
            config,
        }
    }

    /// The configuration it serves.
    pub fn config(&self) -> &EmulatorConfig {
        &self.config
    }

    /// A snapshot of the counters.
    pub fn counters(&self) -> Counters {
        let c = &self.counters;
        Counters {
            requests: c.requests.load(Ordering::Relaxed),
            put_requests: c.put_requests.load(Ordering::Relaxed),
            accepted_requests: c.accepted_requests.load(Ordering::Relaxed),
            logs: c.logs.load(Ordering::Relaxed),
            log_groups: c.log_groups.load(Ordering::Relaxed),
            raw_bytes: c.raw_bytes.load(Ordering::Relaxed),
            compressed_bytes: c.compressed_bytes.load(Ordering::Relaxed),
            rejected: c.rejected.lock().clone(),
            faults_injected: self.faults.applied(),
        }
    }

    /// Forgets every stored log, counter and fault.
    pub fn reset(&self) {
        self.store.reset();
        self.faults.clear();
        let c = &self.counters;
        for a in [
            &c.requests,
            &c.put_requests,
            &c.accepted_requests,
            &c.logs,
            &c.log_groups,
            &c.raw_bytes,
            &c.compressed_bytes,
        ] {
            a.store(0, Ordering::Relaxed);
        }
        c.rejected.lock().clear();
    }

    /// A fresh 24-hex-digit request id.
    pub fn next_request_id(&self) -> String {
        format!(
            "{:08X}{:016X}",
            self.id_prefix,
            self.id_next.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// Counts a PutLogs request answered by an injected fault (the handler never sees it).
    pub(crate) fn count_faulted_put(&self) {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        self.counters.put_requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a refusal by code (used for injected errors too).
    pub(crate) fn count_rejection(&self, code: &str) {
        *self
            .counters
            .rejected
            .lock()
            .entry(code.to_owned())
            .or_default() += 1;
    }

    /// An error response, counted.
    pub(crate) fn error_response(&self, error: &ApiError) -> Response<Bytes> {
        self.count_rejection(error.code);
        let mut resp = Response::new(Bytes::from(error.body()));
        *resp.status_mut() = error.status;
        resp.headers_mut()
            .insert("content-type", HeaderValue::from_static("application/json"));
        resp
    }

    /// Stamps a request id on a response.
    pub(crate) fn stamp(&self, resp: &mut Response<Bytes>) {
        if let Ok(v) = HeaderValue::from_str(&self.next_request_id()) {
            resp.headers_mut().insert("x-log-requestid", v);
        }
    }

    /// The project a request addresses: the first label of its `Host`, or the default project
    /// for IP addresses, `localhost`, single-label names, or when host projects are off.
    pub fn project_of(&self, host: Option<&str>) -> String {
        let default = || self.config.default_project.clone();
        let Some(host) = host.map(str::trim) else {
            return default();
        };
        if !self.config.project_from_host {
            return default();
        }
        let name = if host.starts_with('[') {
            return default();
        } else {
            host.rsplit_once(':')
                .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
                .map_or(host, |(h, _)| h)
        };
        if name.parse::<IpAddr>().is_ok() || name.eq_ignore_ascii_case("localhost") {
            return default();
        }
        match name.split_once('.') {
            Some((label, _)) if !label.is_empty() => label.to_ascii_lowercase(),
            _ => default(),
        }
    }

    /// For a PutLogs request, the (project, logstore) it writes to; `None` for other requests.
    pub fn put_logs_target<B>(&self, req: &Request<B>) -> Option<(String, String)> {
        if req.method() != Method::POST {
            return None;
        }
        let segments: Vec<&str> = req
            .uri()
            .path()
            .trim_start_matches('/')
            .split('/')
            .collect();
        let logstore = match segments.as_slice() {
            ["logstores", ls] | ["logstores", ls, "shards", "lb" | "route"] => *ls,
            _ => return None,
        };
        let host = req.headers().get("host").and_then(|v| v.to_str().ok());
        Some((self.project_of(host), logstore.to_owned()))
    }

    /// Handles one complete request.
    pub fn handle(&self, req: Request<Bytes>) -> Response<Bytes> {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        let mut resp = match self.route(&req) {
            Ok(resp) => resp,
            Err(error) => self.error_response(&error),
        };
        self.stamp(&mut resp);
        resp
    }

    fn route(&self, req: &Request<Bytes>) -> Result<Response<Bytes>, ApiError> {
        let path = req.uri().path();
        let head = Head {
            method: req.method(),
            path,
            query: req
                .uri()
                .query()
                .map(|q| form_urlencoded::parse(q.as_bytes()).collect())
                .unwrap_or_default(),
            headers: req
                .headers()
                .iter()
                .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)))
                .collect(),
        };
        if let Some(rest) = path.strip_prefix("/_emulator/") {
            return self.admin(&head, rest, req.body());
        }
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (req.method(), segments.as_slice()) {
            (&Method::POST, ["logstores", ls] | ["logstores", ls, "shards", "lb" | "route"]) => {
                self.put_logs(&head, ls, req.body().clone())
            }
            (&Method::GET, ["logstores", ls, "shards"]) => self.list_shards(&head, ls),
            (&Method::GET, ["logstores", ls, "shards", shard]) => {
                let shard: u32 = shard.parse().map_err(|_| {
                    ApiError::bad_request(
                        "ParameterInvalid",
                        format!("shard id {shard:?} is not a number"),
                    )
                })?;
                match head.param("type") {
                    Some("cursor") => self.get_cursor(&head, ls, shard),
                    Some("log" | "logs") => self.pull_logs(&head, ls, shard),
                    other => Err(ApiError::bad_request(
                        "ParameterInvalid",
                        format!("unsupported type {other:?}"),
                    )),
                }
            }
            _ => Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("the emulator does not serve {} {path}", req.method()),
            )),
        }
    }

    // === checks ===

    fn check_skew(&self, date: &str, at: i64) -> Result<(), ApiError> {
        let server_now = Utc::now() + chrono::Duration::seconds(self.config.clock_offset_secs);
        if (server_now.timestamp() - at).abs() > self.config.max_clock_skew_secs {
            let server = server_now.format("%a, %d %b %Y %H:%M:%S GMT");
            return Err(ApiError::bad_request(
                "RequestTimeExpired",
                format!("request time {date} has been expired while server time is {server}"),
            ));
        }
        Ok(())
    }

    fn key_for(&self, head: &Head<'_>, access_key_id: &str) -> Result<&Key, ApiError> {
        let key = self.keys.get(access_key_id).ok_or_else(|| {
            ApiError::unauthorized(format!("AccessKeyId not found: {access_key_id}"))
        })?;
        let sent = head.header("x-acs-security-token");
        match (&key.token, sent) {
            (None, None) => Ok(key),
            (Some(expected), Some(sent)) if sign::constant_time_eq(expected, sent) => Ok(key),
            (Some(_), None) => Err(ApiError::unauthorized(
                "The security token you provided is missing for a temporary AccessKeyId.",
            )),
            _ => Err(ApiError::unauthorized(
                "The security token you provided is invalid.",
            )),
        }
    }

    fn authenticate(&self, head: &Head<'_>, body: &[u8]) -> Result<(), ApiError> {
        let value = head
            .header("authorization")
            .ok_or_else(|| ApiError::unauthorized("missing Authorization header"))?;
        let query: Vec<(&str, &str)> = head
            .query
            .iter()
            .map(|(k, v)| (k.as_ref(), v.as_ref()))
            .collect();
        match Authorization::parse(value) {
            None => Err(ApiError::unauthorized("unsupported Authorization header")),
            Some(Authorization::Bearer(key)) => {
                if self.api_keys.contains(key) {
                    Ok(())
                } else {
                    Err(ApiError::unauthorized("The API key is invalid."))
                }
            }
            Some(Authorization::V1 {
                access_key_id,
                signature,
            }) => {
                match head.header("x-log-signaturemethod") {
                    None => {
                        return Err(ApiError::bad_request(
                            "MissingSignatureMethod",
                            "x-log-signaturemethod is missing",
                        ))
                    }
                    Some(m) if m != V1_SIGNATURE_METHOD => {
                        return Err(ApiError::bad_request(
                            "InvalidSignatureMethod",
                            format!("signature method {m} is not supported"),
                        ))
                    }
                    Some(_) => {}
                }
                let (date, fallback) = match (head.header("date"), head.header("x-log-date")) {
                    (Some(d), _) => (d, false),
                    (None, Some(d)) => (d, true),
                    (None, None) => {
                        return Err(ApiError::bad_request(
                            "MissingDate",
                            "the Date header is missing",
                        ))
                    }
                };
                let at = parse_http_date(date).ok_or_else(|| {
                    ApiError::bad_request(
                        "InvalidDateFormat",
                        format!("Date {date:?} is not an RFC 1123 date"),
                    )
                })?;
                self.check_skew(date, at)?;
                let key = self.key_for(head, access_key_id)?;
                let string_to_sign = if fallback {
                    let mut headers = head.headers.clone();
                    headers.push(("date", date));
                    sign::v1_string_to_sign(head.method.as_str(), head.path, &query, &headers)
                } else {
                    sign::v1_string_to_sign(head.method.as_str(), head.path, &query, &head.headers)
                };
                let expected = sign::v1_signature(&key.secret, &string_to_sign);
                if sign::constant_time_eq(&expected, signature) {
                    Ok(())
                } else {
                    Err(ApiError::new(
                        StatusCode::UNAUTHORIZED,
                        "SignatureNotMatch",
                        format!("Signature {signature} not matched."),
                    ))
                }
            }
            Some(Authorization::V4 {
                access_key_id,
                day,
                region,
                signature,
            }) => {
                let date = head
                    .header("x-log-date")
                    .ok_or_else(|| ApiError::bad_request("MissingDate", "x-log-date is missing"))?;
                let at = parse_v4_date(date).ok_or_else(|| {
                    ApiError::bad_request(
                        "InvalidDateFormat",
                        format!("x-log-date {date:?} is not yyyyMMddTHHmmssZ"),
                    )
                })?;
                self.check_skew(date, at)?;
                let content_hash = head.header("x-log-content-sha256").ok_or_else(|| {
                    ApiError::bad_request("MissingContentSha256", "x-log-content-sha256 is missing")
                })?;
                if content_hash != EMPTY_BODY_SHA256 && content_hash != sign::sha256_hex(body) {
                    return Err(ApiError::new(
                        StatusCode::UNAUTHORIZED,
                        "SignatureNotMatch",
                        "x-log-content-sha256 does not match the body",
                    ));
                }
                let key = self.key_for(head, access_key_id)?;
                let expected = sign::v4_signature(
                    &key.secret,
                    region,
                    head.method.as_str(),
                    head.path,
                    &query,
                    &head.headers,
                );
                if !date.starts_with(day) || !sign::constant_time_eq(&expected, signature) {
                    return Err(ApiError::new(
                        StatusCode::UNAUTHORIZED,
                        "SignatureNotMatch",
                        format!("Signature {signature} not matched."),
                    ));
                }
                Ok(())
            }
        }
    }

    fn check_api_version(head: &Head<'_>) -> Result<(), ApiError> {
        match head.header("x-log-apiversion") {
            None => Err(ApiError::bad_request(
                "MissingAPIVersion",
                "x-log-apiversion is missing",
            )),
            Some(API_VERSION) => Ok(()),
            Some(v) => Err(ApiError::bad_request(
                "InvalidAPIVersion",
                format!("API version {v} is not supported"),
            )),
        }
    }

    // === PutLogs ===

    fn put_logs(
        &self,
        head: &Head<'_>,
        logstore: &str,
        body: Bytes,
    ) -> Result<Response<Bytes>, ApiError> {
        self.counters.put_requests.fetch_add(1, Ordering::Relaxed);
        Self::check_api_version(head)?;
        match head.header("content-type") {
            None => {
                return Err(ApiError::bad_request(
                    "MissingContentType",
                    "Content-Type is missing",
                ))
            }
            Some(t) if !t.trim().eq_ignore_ascii_case("application/x-protobuf") => {
                return Err(ApiError::bad_request(
                    "InvalidContentType",
                    format!("Content-Type {t} is not application/x-protobuf"),
                ))
            }
            Some(_) => {}
        }
        if head.header("content-length").is_none() {
            return Err(ApiError::new(
                StatusCode::LENGTH_REQUIRED,
                "MissingContentLength",
                "Content-Length is missing",
            ));
        }
        self.authenticate(head, &body)?;
        let project = self.project_of(head.header("host"));
        self.store
            .ensure(&project, logstore, unix_now())
            .map_err(|m| missing(m, &project, logstore))?;

        let raw_size: usize = match head.header("x-log-bodyrawsize") {
            None => {
                return Err(ApiError::bad_request(
                    "MissingBodyRawSize",
                    "x-log-bodyrawsize is missing",
                ))
            }
            Some(v) => v.trim().parse().map_err(|_| {
                ApiError::bad_request(
                    "InvalidBodyRawSize",
                    format!("x-log-bodyrawsize {v:?} is not a number"),
                )
            })?,
        };
        if raw_size > MAX_RAW_BODY_BYTES {
            return Err(ApiError::bad_request(
                "PostBodyTooLarge",
                format!("body raw size {raw_size} exceeds the limit of {MAX_RAW_BODY_BYTES} bytes"),
            ));
        }
        if let Some(md5) = head.header("content-md5") {
            let actual = md5::Md5::digest(&body);
            if !hex::decode(md5.trim()).is_ok_and(|sent| sent.as_slice() == actual.as_slice()) {
                return Err(ApiError::bad_request(
                    "InvalidContentMD5",
                    format!("Content-MD5 {md5} does not match the body"),
                ));
            }
        }
        let codec =
            Compression::from_header(head.header("x-log-compresstype")).map_err(codec_error)?;
        let hash_key = head.param("key").or_else(|| head.header("x-log-hashkey"));
        let placement = match hash_key {
            None => Placement::LoadBalance,
            Some(k) => Placement::HashKey(hashkey::parse(k.trim()).ok_or_else(|| {
                ApiError::bad_request(
                    "ParameterInvalid",
                    format!("hash key {k:?} is not 1 to 32 hex digits"),
                )
            })?),
        };
        let groups = DECODE_SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let raw = compress::decompress_into(codec, &body, raw_size, &mut scratch)
                .map_err(codec_error)?;
            let received = unix_now();
            let policy = self.config.key_policy;
            if head.header("x-log-mode") == Some("batch_group") {
                // Each group of the list is kept on its own, so these are kept uncompressed.
                let raw = Bytes::copy_from_slice(raw);
                Ok(scan::scan_log_group_list(&raw, policy)
                    .map_err(scan_error)?
                    .into_iter()
                    .map(|(range, summary)| StoredGroup {
                        raw_size: range.len(),
                        body: raw.slice(range),
                        codec: Compression::None,
                        received,
                        logs: summary.logs,
                    })
                    .collect::<Vec<_>>())
            } else {
                let summary = scan::scan_log_group(raw, policy).map_err(scan_error)?;
                Ok(vec![StoredGroup {
                    body: body.clone(),
                    codec,
                    raw_size,
                    received,
                    logs: summary.logs,
                }])
            }
        })?;
        let logs: u64 = groups.iter().map(|g| u64::from(g.logs)).sum();
        let group_count = groups.len() as u64;
        self.store
            .append(&project, logstore, placement, groups)
            .map_err(|m| missing(m, &project, logstore))?;

        let c = &self.counters;
        c.accepted_requests.fetch_add(1, Ordering::Relaxed);
        c.logs.fetch_add(logs, Ordering::Relaxed);
        c.log_groups.fetch_add(group_count, Ordering::Relaxed);
        c.raw_bytes.fetch_add(raw_size as u64, Ordering::Relaxed);
        c.compressed_bytes
            .fetch_add(body.len() as u64, Ordering::Relaxed);
        Ok(Response::new(Bytes::new()))
    }

    // === read APIs ===

    fn read_target(&self, head: &Head<'_>, logstore: &str) -> Result<String, ApiError> {
        Self::check_api_version(head)?;
        self.authenticate(head, &[])?;
        let project = self.project_of(head.header("host"));
        self.store
            .ensure(&project, logstore, unix_now())
            .map_err(|m| missing(m, &project, logstore))?;
        Ok(project)
    }

    fn list_shards(&self, head: &Head<'_>, logstore: &str) -> Result<Response<Bytes>, ApiError> {
        let project = self.read_target(head, logstore)?;
        let shards = self
            .store
            .with_logstore(&project, logstore, |ls| {
                let n = ls.shards.len() as u32;
                (0..n)
                    .map(|i| {
                        let (begin, end) = hashkey::shard_range(i, n);
                        serde_json::json!({
                            "shardID": i,
                            "status": "readwrite",
                            "inclusiveBeginKey": hashkey::format(begin),
                            "exclusiveEndKey": hashkey::format(end),
                            "createTime": ls.created,
                        })
                    })
                    .collect::<Vec<_>>()
            })
            .map_err(|m| missing(m, &project, logstore))?;
        Ok(json_response(&shards))
    }

    fn shard_bounds(
        &self,
        project: &str,
        logstore: &str,
        shard: u32,
        from_time: Option<u32>,
    ) -> Result<(u64, u64, Option<u64>), ApiError> {
        self.store
            .with_logstore(project, logstore, |ls| {
                ls.shards.get(shard as usize).map(|s| {
                    let at_time = from_time.map(|t| {
                        s.groups
                            .iter()
                            .position(|g| g.received >= t)
                            .map_or(s.end_seq(), |i| s.first_seq + i as u64)
                    });
                    (s.first_seq, s.end_seq(), at_time)
                })
            })
            .map_err(|m| missing(m, project, logstore))?
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::NOT_FOUND,
                    "ShardNotExist",
                    format!("shard {shard} does not exist"),
                )
            })
    }

    fn get_cursor(
        &self,
        head: &Head<'_>,
        logstore: &str,
        shard: u32,
    ) -> Result<Response<Bytes>, ApiError> {
        let project = self.read_target(head, logstore)?;
        let from = head
            .param("from")
            .ok_or_else(|| ApiError::bad_request("ParameterInvalid", "from is missing"))?;
        let from_time = match from {
            "begin" | "end" => None,
            t => Some(t.parse::<u32>().map_err(|_| {
                ApiError::bad_request(
                    "ParameterInvalid",
                    format!("from {t:?} is not begin, end or a unix time"),
                )
            })?),
        };
        let (first, end, at_time) = self.shard_bounds(&project, logstore, shard, from_time)?;
        let seq = match from {
            "begin" => first,
            "end" => end,
            _ => at_time.unwrap_or(end),
        };
        Ok(json_response(
            &serde_json::json!({ "cursor": encode_cursor(seq) }),
        ))
    }

    fn pull_logs(
        &self,
        head: &Head<'_>,
        logstore: &str,
        shard: u32,
    ) -> Result<Response<Bytes>, ApiError> {
        let project = self.read_target(head, logstore)?;
        let cursor = decode_cursor(
            head.param("cursor")
                .ok_or_else(|| ApiError::bad_request("ParameterInvalid", "cursor is missing"))?,
        )?;
        let count: u64 = match head.param("count") {
            None => 1000,
            Some(c) => c
                .parse()
                .ok()
                .filter(|c| (1..=1000).contains(c))
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "ParameterInvalid",
                        format!("count {c:?} is not 1 to 1000"),
                    )
                })?,
        };
        let end_cursor = head.param("end_cursor").map(decode_cursor).transpose()?;
        let (chosen, next) = self
            .store
            .with_logstore(&project, logstore, |ls| {
                let s = ls.shards.get(shard as usize)?;
                let start = cursor.clamp(s.first_seq, s.end_seq());
                let limit = (start + count)
                    .min(s.end_seq())
                    .min(end_cursor.unwrap_or(u64::MAX))
                    .max(start);
                // Like the service, answer with fewer groups rather than an oversized body:
                // at most 10 MiB raw, but always at least one group.
                let mut chosen = Vec::new();
                let mut raw_len = 0usize;
                let range = (start - s.first_seq) as usize..(limit - s.first_seq) as usize;
                for g in s.groups.range(range) {
                    if !chosen.is_empty() && raw_len + g.raw_size + 10 > MAX_RAW_BODY_BYTES {
                        break;
                    }
                    // The group's field tag, its length varint, the group.
                    raw_len +=
                        1 + prost::encoding::encoded_len_varint(g.raw_size as u64) + g.raw_size;
                    chosen.push(g.clone());
                }
                let next = start + chosen.len() as u64;
                Some((chosen, next))
            })
            .map_err(|m| missing(m, &project, logstore))?
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::NOT_FOUND,
                    "ShardNotExist",
                    format!("shard {shard} does not exist"),
                )
            })?;
        // Decompressed outside the store's lock.
        let groups = chosen.len() as u64;
        let mut raw = Vec::new();
        for g in &chosen {
            let group = g.raw().map_err(|e| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalServerError",
                    e.to_string(),
                )
            })?;
            raw.push(0x0a);
            put_varint(&mut raw, group.len() as u64);
            raw.extend_from_slice(&group);
        }
        let codec = match head.header("accept-encoding").map(str::trim) {
            Some(e) if e.eq_ignore_ascii_case("lz4") => Compression::Lz4,
            Some(e) if e.eq_ignore_ascii_case("zstd") => Compression::Zstd,
            Some(e) if e.eq_ignore_ascii_case("deflate") => Compression::Deflate,
            _ => Compression::None,
        };
        let body = if raw.is_empty() {
            Vec::new()
        } else {
            compress::compress(codec, &raw).map_err(|e| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalServerError",
                    e.to_string(),
                )
            })?
        };
        let mut resp = Response::new(Bytes::from(body));
        let h = resp.headers_mut();
        h.insert(
            "content-type",
            HeaderValue::from_static("application/x-protobuf"),
        );
        let mut put = |name: &'static str, value: String| {
            if let Ok(v) = HeaderValue::from_str(&value) {
                h.insert(name, v);
            }
        };
        put("x-log-cursor", encode_cursor(next));
        put("x-log-count", groups.to_string());
        put("x-log-bodyrawsize", raw.len().to_string());
        if let (false, Some(value)) = (raw.is_empty(), codec.header_value()) {
            put("x-log-compresstype", value.to_owned());
        }
        Ok(resp)
    }

    // === /_emulator/ ===

    fn admin(
        &self,
        head: &Head<'_>,
        rest: &str,
        body: &Bytes,
    ) -> Result<Response<Bytes>, ApiError> {
        let bad_json = |e: serde_json::Error| {
            ApiError::bad_request("ParameterInvalid", format!("bad JSON body: {e}"))
        };
        match (head.method, rest) {
            (&Method::GET, "health") => Ok(json_response(&serde_json::json!({ "ok": true }))),
            (&Method::GET, "counters") => Ok(json_response(&self.counters())),
            (&Method::POST, "reset") => {
                self.reset();
                Ok(json_response(&serde_json::json!({ "ok": true })))
            }
            (&Method::POST, "faults") => {
                let fault: Fault = serde_json::from_slice(body).map_err(bad_json)?;
                self.faults.add(fault);
                Ok(json_response(&serde_json::json!({ "ok": true })))
            }
            (&Method::DELETE, "faults") => {
                self.faults.clear();
                Ok(json_response(&serde_json::json!({ "ok": true })))
            }
            (&Method::POST, "logstores") => {
                #[derive(serde::Deserialize)]
                struct Create {
                    project: String,
                    logstore: String,
                    shards: Option<u32>,
                }
                let c: Create = serde_json::from_slice(body).map_err(bad_json)?;
                self.store
                    .create(&c.project, &c.logstore, c.shards, unix_now());
                Ok(json_response(&serde_json::json!({ "ok": true })))
            }
            (&Method::GET, "totals") => {
                let project = head
                    .param("project")
                    .map_or_else(|| self.config.default_project.clone(), str::to_owned);
                let logstore = head.param("logstore").ok_or_else(|| {
                    ApiError::bad_request("ParameterInvalid", "logstore is missing")
                })?;
                let totals = self.store.totals(&project, logstore).unwrap_or_default();
                Ok(json_response(&totals))
            }
            (&Method::GET, "logs") => {
                let project = head
                    .param("project")
                    .map_or_else(|| self.config.default_project.clone(), str::to_owned);
                let logstore = head.param("logstore").ok_or_else(|| {
                    ApiError::bad_request("ParameterInvalid", "logstore is missing")
                })?;
                let totals = self
                    .store
                    .totals(&project, logstore)
                    .ok_or_else(|| missing(Missing::Logstore, &project, logstore))?;
                let logs = self.store.logs(&project, logstore);
                Ok(json_response(
                    &serde_json::json!({ "project": project, "logstore": logstore, "totals": totals, "logs": logs }),
                ))
            }
            _ => Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("no emulator API {} /_emulator/{rest}", head.method),
            )),
        }
    }
}
