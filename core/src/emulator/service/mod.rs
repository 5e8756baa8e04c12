//! The emulator's request handler: one synchronous function from a complete request to a
//! complete response, with no I/O, so the HTTP server, the benchmarks and the tests all drive
//! exactly the same code.
//!
//! # PutLogs
//!
//! PutLogs goes through every check the service makes, in the service's order, and the first
//! failure refuses the whole request: API version, Content-Type, Content-Length, the signature
//! (v1, v4 or bearer, with STS tokens and ±15 min date skew), the project and logstore,
//! `x-log-bodyrawsize`, Content-MD5, the compression type, decompression to exactly the
//! declared size, then a zero-copy validation of the `LogGroup` (or `LogGroupList` in
//! `batch_group` mode). Accepted groups are stored as they arrived (compressed), once valid.
//! The SLS read APIs (ListShards, GetCursor, PullLogs), the management and query APIs, and
//! the unauthenticated `/_emulator/`
//! test API are served here too, and the STS and ECS metadata calls of the default
//! credential chain (`identity`). Every answer carries a lowercase `x-log-requestid`.
//!
//! # Parts
//!
//! One file per part: `auth` (signatures, credentials, the request date), `put_logs`,
//! `read` (ListShards, GetCursor, PullLogs), `manage` (projects, logstores, indexes),
//! `query` (GetLogs, GetHistograms) and `admin` (`/_emulator/`).
//!
//! # Threads
//!
//! Runs on whichever thread calls it (the server's tokio workers); it never blocks except on
//! the store's short mutex.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hyper::http::{HeaderValue, Method, Request, Response, StatusCode};
use parking_lot::{Mutex, RwLock};

use super::config::{EmulatorConfig, StsKey};
use super::error::ApiError;
use super::faults::Faults;
use super::network::Network;
use super::quotas::Quotas;
use super::store::{shorten, Missing, Store};
use crate::wire::compress::CodecError;
use crate::wire::names::NameKind;
use crate::wire::scan::ScanError;
use crate::wire::sign;

mod admin;
mod auth;
pub(super) mod identity;
mod manage;
mod put_logs;
mod query;
mod read;

thread_local! {
    /// Per server thread decompression area for validating PutLogs bodies (they are stored
    /// compressed, so the decoded bytes are only needed while checking them).
    static DECODE_SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Exact running totals of what the emulator saw.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counters {
    /// Every request to the service's APIs (the emulator's own `/_emulator/` API is not
    /// counted).
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
    /// Accepted groups whose `__pack_id__` tag had been accepted before in the same logstore
    /// (among the last 262 144 groups with one): batches delivered more than once.
    pub duplicate_groups: u64,
    /// Temporary keys handed out by the emulated STS and ECS metadata service.
    #[serde(default)]
    pub credentials_issued: u64,
    /// PutLogs requests refused by a write quota, by quota: `project_inflow`, `project_qps`,
    /// `shard_bytes`, `shard_writes` (also counted in `rejected` under their errorCode).
    #[serde(default)]
    pub throttled: BTreeMap<String, u64>,
    /// Shards added by auto split.
    #[serde(default)]
    pub shard_splits: u64,
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
    duplicate_groups: AtomicU64,
    credentials_issued: AtomicU64,
    rejected: Mutex<BTreeMap<String, u64>>,
}

#[derive(Clone)]
struct Key {
    secret: String,
    token: Option<String>,
    /// Unix seconds from which it is refused (keys the emulator's STS issued).
    expires_at: Option<i64>,
}

/// The request handler and everything it owns (store, faults, counters).
pub struct Service {
    config: EmulatorConfig,
    /// Permanent and temporary keys; the temporary ones can be replaced while serving
    /// ([`Service::replace_sts_keys`]), as an STS token expires and a new one is issued.
    keys: RwLock<HashMap<String, Key>>,
    api_keys: HashSet<String>,
    pub(crate) store: Store,
    pub(crate) faults: Faults,
    /// The network clients see (latency, bandwidth).
    pub(crate) network: Network,
    /// The write quotas.
    pub(crate) quotas: Quotas,
    counters: AtomicCounters,
    pack_ids: Mutex<put_logs::PackIds>,
    /// Live ECS metadata session tokens and when they expire (unix seconds).
    metadata_tokens: Mutex<HashMap<String, i64>>,
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

/// An error answer: its status and the service's JSON body.
fn error_body(error: &ApiError) -> Response<Bytes> {
    let mut resp = Response::new(Bytes::from(error.body()));
    *resp.status_mut() = error.status;
    resp.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    resp
}

/// The console: one page, embedded, loading nothing from the network; it reads the
/// `/_emulator/` API (with the admin token, when one is set, which it asks for).
fn console() -> Response<Bytes> {
    let mut resp = Response::new(Bytes::from_static(include_bytes!("../console.html")));
    let h = resp.headers_mut();
    h.insert(
        "content-type",
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert("cache-control", HeaderValue::from_static("no-store"));
    h.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
             connect-src 'self'; img-src 'self' data:",
        ),
    );
    resp
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
        // Such a name can never exist on the service: it answers that it does not.
        Missing::InvalidName(kind @ NameKind::Project) => ApiError::new(
            StatusCode::NOT_FOUND,
            "ProjectNotExist",
            format!(
                "The Project does not exist : {:?} (a project name {})",
                shorten(project),
                kind.rule()
            ),
        ),
        Missing::InvalidName(kind @ NameKind::Logstore) => ApiError::new(
            StatusCode::NOT_FOUND,
            "LogStoreNotExist",
            format!(
                "logstore {:?} does not exist (a logstore name {})",
                shorten(logstore),
                kind.rule()
            ),
        ),
        Missing::AutoCreateLimit(limit) => ApiError::new(
            StatusCode::NOT_FOUND,
            "LogStoreNotExist",
            format!(
                "logstore {logstore} does not exist and the emulator holds its limit of {limit} \
                 logstores (max_logstores)"
            ),
        ),
    }
}

fn scan_error(e: ScanError) -> ApiError {
    let code = match e {
        ScanError::InvalidKey { .. } => "InvalidKey",
        ScanError::GroupTooLarge { .. } => "PostBodyTooLarge",
        _ => "PostBodyInvalid",
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

impl Service {
    /// Replaces every temporary (STS) key with `keys`: requests signed with a replaced key are
    /// refused from now on (401 Unauthorized), as the service refuses an expired token.
    pub fn replace_sts_keys(&self, keys: &[StsKey]) {
        let mut map = self.keys.write();
        map.retain(|_, key| key.token.is_none());
        for k in keys {
            map.insert(
                k.id.clone(),
                Key {
                    secret: k.secret.clone(),
                    token: Some(k.token.clone()),
                    expires_at: None,
                },
            );
        }
    }

    /// A handler for `config`.
    pub fn new(config: EmulatorConfig) -> Self {
        let mut keys = HashMap::new();
        for k in &config.access_keys {
            keys.insert(
                k.id.clone(),
                Key {
                    secret: k.secret.clone(),
                    token: None,
                    expires_at: None,
                },
            );
        }
        for k in &config.sts_keys {
            keys.insert(
                k.id.clone(),
                Key {
                    secret: k.secret.clone(),
                    token: Some(k.token.clone()),
                    expires_at: None,
                },
            );
        }
        let store = Store::new(
            config.auto_create,
            config.shard_count,
            config.retention_bytes,
            config.max_logstores,
        );
        Service {
            api_keys: config.api_keys.iter().cloned().collect(),
            keys: RwLock::new(keys),
            store,
            faults: Faults::default(),
            network: Network::new(config.network),
            quotas: Quotas::new(config.quotas),
            counters: AtomicCounters::default(),
            pack_ids: Mutex::default(),
            metadata_tokens: Mutex::default(),
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
        let (throttled, shard_splits) = self.quotas.counts();
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
            duplicate_groups: c.duplicate_groups.load(Ordering::Relaxed),
            credentials_issued: c.credentials_issued.load(Ordering::Relaxed),
            throttled,
            shard_splits,
        }
    }

    /// Forgets every stored log, counter and fault.
    pub fn reset(&self) {
        self.store.reset();
        self.faults.clear();
        self.quotas.reset();
        let c = &self.counters;
        for a in [
            &c.requests,
            &c.put_requests,
            &c.accepted_requests,
            &c.logs,
            &c.log_groups,
            &c.raw_bytes,
            &c.compressed_bytes,
            &c.duplicate_groups,
            &c.credentials_issued,
        ] {
            a.store(0, Ordering::Relaxed);
        }
        c.rejected.lock().clear();
        self.pack_ids.lock().clear();
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
        error_body(error)
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

    /// Whether a request asks for the console: `GET /` from a browser, unsigned (the SDKs'
    /// ListProject is the same path, signed).
    fn is_console<B>(req: &Request<B>) -> bool {
        req.method() == Method::GET
            && req.uri().path() == "/"
            && !req.headers().contains_key("authorization")
            && !req.headers().contains_key("x-log-apiversion")
    }

    /// Handles one complete request.
    pub fn handle(&self, req: Request<Bytes>) -> Response<Bytes> {
        // The emulator's own API is not the service's traffic: it never touches the counters
        // that tests assert on.
        let admin = req.uri().path().starts_with("/_emulator/") || Service::is_console(&req);
        let identity = Service::is_identity(req.uri().path(), req.uri().query());
        if !admin && !identity {
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
        }
        let mut resp = match self.route(&req) {
            Ok(resp) => resp,
            Err(error) if admin => error_body(&error),
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
            self.check_admin_token(&head)?;
            return self.admin(&head, rest, req.body());
        }
        if Service::is_identity(path, req.uri().query()) {
            return Ok(self.identity(&head));
        }
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (req.method(), segments.as_slice()) {
            (&Method::POST, ["logstores", ls] | ["logstores", ls, "shards", "lb" | "route"]) => {
                self.put_logs(&head, ls, req.body().clone())
            }
            (&Method::GET, [""]) if Service::is_console(req) => Ok(console()),
            (_, [""]) => self.project_api(&head, req.body()),
            (&Method::GET | &Method::POST, ["logstores"]) => self.logstores_api(&head, req.body()),
            (&Method::GET, ["logstores", ls]) => match head.param("type") {
                None => self.logstore_api(&head, ls, req.body()),
                Some("log" | "logs") => self.get_logs(&head, ls, req.body(), false),
                Some("histogram") => self.get_histograms(&head, ls),
                Some(other) => Err(ApiError::bad_request(
                    "ParameterInvalid",
                    format!("unsupported type {other:?}"),
                )),
            },
            (&Method::PUT | &Method::DELETE, ["logstores", ls]) => {
                self.logstore_api(&head, ls, req.body())
            }
            (&Method::POST, ["logstores", ls, "logs"]) => {
                self.get_logs(&head, ls, req.body(), true)
            }
            (_, ["logstores", ls, "index"]) => self.index_api(&head, ls, req.body()),
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
}
