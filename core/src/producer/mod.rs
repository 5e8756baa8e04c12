//! The producer: applications hand it records; it batches them per destination, compresses,
//! signs and sends them, retries what fails, and reports every batch's final outcome.
//!
//! # Data path
//!
//! `send` runs on the caller's thread: it locks one of a few accumulator shards (chosen per
//! thread, so adding threads rarely contend), validates and encodes the record straight at the
//! end of its destination's open batch, and reserves its bytes against `buffer_max_bytes`. A
//! record that overflows the batch, or finds the budget full, is copied out and takes the
//! general path without the lock (failing at once or blocking up to `max_block_ms`);
//! `send_with_scratch` encodes with no lock held, for fills that may run foreign code. A
//! batch seals when it reaches `batch_max_bytes` or `batch_max_count`, when its linger deadline
//! passes (one timer heap per producer serves every open batch), or on flush and close. Sealed
//! batches are sent on the shared I/O runtime (`engine`) by [`send`], at most
//! `send_concurrency` at a time.
//!
//! # Guarantees
//!
//! - Memory is bounded: the raw bytes of open and sealed batches plus the compressed bytes of
//!   in-flight and retrying batches never exceed `buffer_max_bytes` (a batch's reservation
//!   shrinks to its compressed size once compressed, since the raw buffer is then recycled).
//!   Batch buffers are memory mappings of their own ([`buffer`]): pages become resident as
//!   they are written and go back to the system when a buffer is dropped; two are kept for
//!   reuse (more while the budget is over half full, until the producer is at rest).
//! - Nothing is lost silently: a record is either refused by `send` (with a typed error, and
//!   counted as dropped or invalid) or accepted, and every accepted record ends in exactly one
//!   delivery report, delivered or failed (counted by code).
//! - `__pack_id__` (`PREFIX-SEQ`) is assigned at seal and stays the same across retries.
//! - `flush` and `close` are bounded by their timeout, idempotent, and safe from any thread;
//!   dropping a producer closes it within `drop_timeout_ms`.
//!
//! Report callbacks run on the producer's own reporter thread, in batches, never on the I/O
//! runtime; a panicking callback is counted and the producer lives on.

pub mod buffer;
pub mod config;
pub mod encode;
mod engine;
pub mod report;
mod send;

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use md5::Digest as _;
use parking_lot::{Condvar, Mutex};

pub use buffer::BatchBuf;
pub use config::{ConfigError, ProducerConfig, SignatureVersion};
pub use encode::{LogEncoder, RecordError};
pub use engine::process_id;
pub use report::{Completion, CompletionError, DeliveryReport, Outcome, Stats};

use crate::wire::hashkey;
use crate::wire::proto::put_len_field;
use crate::wire::request::Auth;
use crate::wire::sign::Credentials;

/// Supplies credentials before every attempt (for rotating STS tokens).
pub trait CredentialsProvider: Send + Sync {
    /// The credentials to sign the next request with, or why there are none.
    fn credentials(&self) -> Result<Credentials, String>;
}

/// Why a producer could not be built or a record was not accepted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProducerError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The record is invalid; nothing was accepted.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The buffer is full; the record was not accepted (counted as dropped).
    #[error("buffer full: {used} of {limit} bytes in use, record needs {needed} (waited {waited_ms} ms)")]
    BufferFull {
        /// Bytes in use.
        used: usize,
        /// `buffer_max_bytes`.
        limit: usize,
        /// The record's size.
        needed: usize,
        /// How long the add waited for room.
        waited_ms: u64,
    },
    /// The producer is closed; the record was not accepted.
    #[error("the producer is closed")]
    Closed,
    /// The shared I/O runtime could not start.
    #[error("cannot start the I/O runtime: {0}")]
    Engine(String),
    /// The TLS settings (`ca_file`) could not be used.
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// `ca_file` could not be read.
    #[error("cannot read ca_file {path}: {source}")]
    CaFile {
        /// The path.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl ProducerError {
    /// The error class the Python and Node fronts raise for this error (`ConfigError`,
    /// `InvalidRecordError`, `BufferFullError`, `ProducerClosedError`, or `LoghoseError`).
    pub fn class_name(&self) -> &'static str {
        match self {
            ProducerError::Config(_) | ProducerError::CaFile { .. } | ProducerError::Tls(_) => {
                "ConfigError"
            }
            ProducerError::Record(_) => "InvalidRecordError",
            ProducerError::BufferFull { .. } => "BufferFullError",
            ProducerError::Closed => "ProducerClosedError",
            ProducerError::Engine(_) => "LoghoseError",
        }
    }
}

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
    fn is_default(&self) -> bool {
        self.topic.is_none()
            && self.source.is_none()
            && self.shard_key.is_none()
            && self.project.is_none()
            && self.logstore.is_none()
    }
}

/// How a caller learns a record's outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Track {
    /// Only through stats and the report callback.
    #[default]
    None,
    /// A [`Completion`] resolved with the batch's report.
    Completion,
    /// The caller's number, listed in the batch report's `tickets` (for bindings that resolve
    /// their own futures in bulk when reports arrive).
    Ticket(u64),
}

/// What `close` could not deliver.
#[derive(Clone, Debug, Default)]
pub struct CloseReport {
    /// Records accepted and not delivered (failed, or abandoned at the timeout).
    pub undelivered: u64,
    /// The reports of the batches that failed (the most recent 10 000).
    pub failed: Vec<Arc<DeliveryReport>>,
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

struct OpenBatch {
    id: u64,
    dest: Arc<Destination>,
    buf: BatchBuf,
    records: u32,
    opened: Instant,
    completions: Vec<tokio::sync::oneshot::Sender<Arc<DeliveryReport>>>,
    tickets: Vec<u64>,
}

pub(crate) struct SealedBatch {
    pub(crate) id: u64,
    pub(crate) dest: Arc<Destination>,
    pub(crate) raw: BatchBuf,
    pub(crate) raw_len: usize,
    pub(crate) records: u32,
    pub(crate) opened: Instant,
    pub(crate) pack_id: String,
    pub(crate) reserved: usize,
    pub(crate) completions: Vec<tokio::sync::oneshot::Sender<Arc<DeliveryReport>>>,
    pub(crate) tickets: Vec<u64>,
}

#[derive(Default)]
struct Shard {
    default_batch: Option<OpenBatch>,
    batches: HashMap<Arc<Destination>, OpenBatch>,
    /// Records accepted through this shard (summed for stats and flush).
    accepted: u64,
    /// Bytes reserved from the buffer budget ahead of need, so most adds touch no shared
    /// atomic (at most `credit_chunk` per shard).
    credit: usize,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Deadline {
    at: Instant,
    batch_id: u64,
    shard: usize,
    dest: Option<Arc<DestinationOrd>>,
}

/// A destination with an arbitrary total order, for the timer heap.
#[derive(PartialEq, Eq)]
struct DestinationOrd(Arc<Destination>);

impl PartialOrd for DestinationOrd {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DestinationOrd {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        Arc::as_ptr(&self.0).cmp(&Arc::as_ptr(&other.0))
    }
}

enum CredentialSource {
    Static(Auth),
    Provider {
        provider: Arc<dyn CredentialsProvider>,
        region: Option<String>,
    },
}

pub(crate) struct Inner {
    pub(crate) config: ProducerConfig,
    pub(crate) client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    scheme: &'static str,
    endpoint_host: String,
    endpoint_is_ip: bool,
    credentials: CredentialSource,
    default_dest: Arc<Destination>,
    shards: Vec<Mutex<Shard>>,
    timers: Mutex<BinaryHeap<Reverse<Deadline>>>,
    timer_notify: tokio::sync::Notify,
    pub(crate) send_slots: tokio::sync::Semaphore,
    pub(crate) abort: tokio::sync::watch::Sender<bool>,
    closed: AtomicBool,
    pub(crate) clock_offset_ms: AtomicI64,
    pack_prefix: String,
    next_batch: AtomicU64,
    used_bytes: AtomicUsize,
    completed: AtomicU64,
    credit_chunk: usize,
    blocked_waiters: AtomicUsize,
    space: (Mutex<()>, Condvar),
    idle: (Mutex<()>, Condvar),
    delivered: AtomicU64,
    failed: AtomicU64,
    pub(crate) retried: AtomicU64,
    dropped: AtomicU64,
    invalid: AtomicU64,
    pub(crate) in_flight: AtomicU64,
    batches_delivered: AtomicU64,
    callback_errors: Arc<AtomicU64>,
    failures_by_code: Mutex<std::collections::BTreeMap<String, u64>>,
    failed_reports: Mutex<VecDeque<Arc<DeliveryReport>>>,
    reports: Mutex<Option<std::sync::mpsc::Sender<Arc<DeliveryReport>>>>,
    /// Batch buffers whose contents were sent, kept for the next batches so that steady
    /// operation maps no memory and faults no pages in: two normally, more while the buffer
    /// is over half full (see [`Inner::recycle`]).
    buffers: Mutex<Vec<BatchBuf>>,
    owner_pid: u32,
}

/// A record's destination (`None`: the producer's own) and time (seconds, nanoseconds).
type Prepared = (Option<Arc<Destination>>, u32, Option<u32>);

thread_local! {
    static SCRATCH: RefCell<BatchBuf> = RefCell::new(BatchBuf::with_capacity(4096));
    static SHARD_HINT: Cell<usize> = const { Cell::new(usize::MAX) };
}

static NEXT_SHARD_HINT: AtomicUsize = AtomicUsize::new(0);

fn shard_hint() -> usize {
    SHARD_HINT.with(|h| {
        if h.get() == usize::MAX {
            h.set(NEXT_SHARD_HINT.fetch_add(1, Ordering::Relaxed));
        }
        h.get()
    })
}

/// The wall clock as (seconds, nanoseconds) since the epoch, for records added without a time.
/// On Unix straight from `clock_gettime`: `SystemTime::now` plus `duration_since` costs about
/// a third more, measurable on a path that runs once per record.
#[inline]
fn now_parts() -> (u32, u32) {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes only the timespec it is given.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) } == 0 && ts.tv_sec >= 0 {
            return (ts.tv_sec as u32, ts.tv_nsec as u32);
        }
    }
    let d = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() as u32, d.subsec_nanos())
}

/// Hands freed heap memory back to the system. Batch buffers are mappings of their own and go
/// back when dropped ([`BatchBuf`]); what a burst leaves in glibc's heaps besides them
/// (compressed bodies, HTTP buffers, records copied out of full batches) would otherwise keep
/// the process near its peak. Trimming walks the heaps' free lists, so while buffers are being
/// dropped it runs at most every 100 ms, and once more, `at_rest`, when the last batch in
/// flight completes (at most every 10 ms).
pub(crate) fn release_free_memory(at_rest: bool) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static LAST_TRIM_MS: AtomicU64 = AtomicU64::new(0);
        let now_ms = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let last = LAST_TRIM_MS.load(Ordering::Relaxed);
        let interval = if at_rest { 10 } else { 100 };
        if now_ms.saturating_sub(last) >= interval
            && LAST_TRIM_MS
                .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            // SAFETY: malloc_trim only returns free memory to the system; it is thread-safe.
            unsafe {
                libc::malloc_trim(0);
            }
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = at_rest;
}

/// This host's address as the endpoint would see it (no packet is sent).
fn local_address(endpoint_host: &str) -> String {
    use std::net::{ToSocketAddrs, UdpSocket};
    let with_port = if endpoint_host
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        endpoint_host.to_owned()
    } else {
        format!("{endpoint_host}:80")
    };
    let found = with_port
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .and_then(|addr| {
            let socket = UdpSocket::bind(if addr.is_ipv4() {
                "0.0.0.0:0"
            } else {
                "[::]:0"
            })
            .ok()?;
            socket.connect(addr).ok()?;
            socket.local_addr().ok()
        });
    found.map_or_else(|| "127.0.0.1".to_owned(), |a| a.ip().to_string())
}

fn check_name(what: &'static str, value: &str) -> Result<(), RecordError> {
    if config::is_valid_name(value) {
        Ok(())
    } else {
        Err(RecordError::InvalidOption {
            what,
            value: value.into(),
            reason: "must be 1 to 128 of [A-Za-z0-9_-]",
        })
    }
}

impl Inner {
    pub(crate) fn auth(&self) -> Result<Auth, String> {
        match &self.credentials {
            CredentialSource::Static(a) => Ok(a.clone()),
            CredentialSource::Provider { provider, region } => {
                let c = provider.credentials()?;
                Ok(match region {
                    Some(region) => Auth::V4 {
                        credentials: c,
                        region: region.clone(),
                    },
                    None => Auth::V1(c),
                })
            }
        }
    }

    /// (URL prefix, Host header) for a project.
    pub(crate) fn addressing(&self, project: &str) -> (String, String) {
        let host = format!("{project}.{}", self.endpoint_host);
        if self.endpoint_is_ip {
            (format!("{}://{}", self.scheme, self.endpoint_host), host)
        } else {
            (format!("{}://{host}", self.scheme), host)
        }
    }

    /// A buffer for a new batch: a kept one if there is one. Otherwise the default
    /// destination's batch is mapped at its full limit at once (untouched pages cost no memory
    /// and it never grows); a batch for another destination starts small on the heap and grows,
    /// since there may be 100 000 of them open with a log or two each.
    fn take_buffer(&self, default_destination: bool) -> BatchBuf {
        if let Some(buf) = self.buffers.lock().pop() {
            return buf;
        }
        if default_destination {
            BatchBuf::with_capacity(self.config.batch_max_bytes + 1024)
        } else {
            BatchBuf::new()
        }
    }

    /// Keeps a sent batch's buffer for reuse: two at most normally, so an idle or lightly
    /// loaded producer holds little. While the buffer is over half full (sustained overload,
    /// the budget taken by batches waiting to be compressed and sent), up to as many as the
    /// budget holds batches: that memory is the user's budget in use anyway, and a fresh buffer
    /// per batch would fault every page of it in again (a tenth of the cost of a log). The
    /// extra buffers go back to the system when the last batch in flight completes
    /// ([`Inner::at_rest`]).
    pub(crate) fn recycle(&self, mut buf: BatchBuf) {
        // Only full-size buffers are worth keeping (a small keyed batch's is not).
        let full = self.config.batch_max_bytes.min(buffer::MAP_THRESHOLD);
        if (full..=2 * self.config.batch_max_bytes + 4096).contains(&buf.capacity()) {
            let pressed =
                self.used_bytes.load(Ordering::Relaxed) > self.config.buffer_max_bytes / 2;
            let keep = if pressed {
                (self.config.buffer_max_bytes / self.config.batch_max_bytes.max(1)).max(2)
            } else {
                2
            };
            let mut pool = self.buffers.lock();
            if pool.len() < keep {
                buf.clear();
                pool.push(buf);
                return;
            }
        }
        drop(buf);
        release_free_memory(false);
    }

    /// The last batch in flight completed: gives back the buffers kept for overload and the
    /// allocator's free memory.
    pub(crate) fn at_rest(&self) {
        let extra: Vec<BatchBuf> = {
            let mut pool = self.buffers.lock();
            let keep = pool.len().min(2);
            pool.split_off(keep)
        };
        drop(extra);
        release_free_memory(true);
    }

    /// Reserves `n` bytes without waiting: from a shard's `credit` when it has enough, else a
    /// chunk from the shared budget (the rest becomes credit), else exactly `n`.
    #[inline]
    fn reserve_now(&self, credit: &mut usize, n: usize) -> bool {
        if *credit >= n {
            *credit -= n;
            return true;
        }
        let chunk = n.max(self.credit_chunk);
        if self.try_reserve(chunk) {
            *credit += chunk - n;
            true
        } else {
            self.try_reserve(n)
        }
    }

    fn try_reserve(&self, n: usize) -> bool {
        let limit = self.config.buffer_max_bytes;
        self.used_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                (u + n <= limit).then_some(u + n)
            })
            .is_ok()
    }

    fn reserve(&self, n: usize) -> Result<(), ProducerError> {
        if self.try_reserve(n) {
            return Ok(());
        }
        let started = Instant::now();
        let limit = self.config.buffer_max_bytes;
        let full = |waited: Duration| ProducerError::BufferFull {
            used: self.used_bytes.load(Ordering::Relaxed),
            limit,
            needed: n,
            waited_ms: waited.as_millis() as u64,
        };
        if self.config.max_block_ms == 0 {
            return Err(full(Duration::ZERO));
        }
        let deadline = started + Duration::from_millis(self.config.max_block_ms);
        self.blocked_waiters.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.space.0.lock();
        let result = loop {
            if self.try_reserve(n) {
                break Ok(());
            }
            if self.closed.load(Ordering::Acquire) {
                break Err(ProducerError::Closed);
            }
            if self.space.1.wait_until(&mut guard, deadline).timed_out() && !self.try_reserve(n) {
                break Err(full(started.elapsed()));
            }
        };
        drop(guard);
        self.blocked_waiters.fetch_sub(1, Ordering::SeqCst);
        result
    }

    /// Returns part of a batch's reservation early (after compression).
    pub(crate) fn release_partial(&self, n: usize) {
        self.release(n);
    }

    fn release(&self, n: usize) {
        self.used_bytes.fetch_sub(n, Ordering::AcqRel);
        if self.blocked_waiters.load(Ordering::SeqCst) > 0 {
            let _g = self.space.0.lock();
            self.space.1.notify_all();
        }
    }

    fn destination(&self, opts: &SendOptions<'_>) -> Result<Arc<Destination>, RecordError> {
        let d = &self.default_dest;
        let hash_key: Option<Arc<str>> = match opts.shard_key {
            None => None,
            Some(key) if self.config.adjust_shard_hash => {
                let digest = md5::Md5::digest(key.as_bytes());
                let value = u128::from_be_bytes(digest.into());
                let bits = self.config.shard_buckets.trailing_zeros();
                let kept = if bits == 0 {
                    0
                } else {
                    value & !(u128::MAX >> bits)
                };
                Some(hashkey::format(kept).into())
            }
            Some(key) => {
                hashkey::parse(key).ok_or(RecordError::InvalidOption {
                    what: "shard_key",
                    value: key.into(),
                    reason: "must be 1 to 32 hex digits",
                })?;
                Some(key.to_ascii_lowercase().into())
            }
        };
        if let Some(t) = opts.topic {
            if t.len() > 128 {
                return Err(RecordError::InvalidOption {
                    what: "topic",
                    value: t.into(),
                    reason: "is longer than 128 bytes",
                });
            }
        }
        if let Some(s) = opts.source {
            if s.len() > 128 {
                return Err(RecordError::InvalidOption {
                    what: "source",
                    value: s.into(),
                    reason: "is longer than 128 bytes",
                });
            }
        }
        if let Some(p) = opts.project {
            check_name("project", p)?;
        }
        if let Some(l) = opts.logstore {
            check_name("logstore", l)?;
        }
        Ok(Arc::new(Destination {
            project: opts.project.map_or_else(|| d.project.clone(), Arc::from),
            logstore: opts.logstore.map_or_else(|| d.logstore.clone(), Arc::from),
            topic: opts.topic.map_or_else(|| d.topic.clone(), Arc::from),
            source: opts.source.map_or_else(|| d.source.clone(), Arc::from),
            hash_key,
        }))
    }

    fn seal(&self, batch: OpenBatch) -> SealedBatch {
        let OpenBatch {
            id,
            dest,
            mut buf,
            records,
            opened,
            completions,
            tickets,
        } = batch;
        let reserved = buf.len();
        // The group's tail: topic, source, tags, pack id.
        let mut tail = Vec::with_capacity(256);
        if !dest.topic.is_empty() {
            put_len_field(&mut tail, 0x1a, dest.topic.as_bytes());
        }
        put_len_field(&mut tail, 0x22, dest.source.as_bytes());
        let mut tag = Vec::with_capacity(64);
        for (k, v) in &self.config.tags {
            tag.clear();
            put_len_field(&mut tag, 0x0a, k.as_bytes());
            put_len_field(&mut tag, 0x12, v.as_bytes());
            put_len_field(&mut tail, 0x32, &tag);
        }
        let pack_id = format!("{}-{:X}", self.pack_prefix, id);
        if self.config.pack_id {
            tag.clear();
            put_len_field(&mut tag, 0x0a, b"__pack_id__");
            put_len_field(&mut tag, 0x12, pack_id.as_bytes());
            put_len_field(&mut tail, 0x32, &tag);
        }
        buf.extend_from_slice(&tail);
        let raw_len = buf.len();
        SealedBatch {
            id,
            dest,
            raw: buf,
            raw_len,
            records,
            opened,
            pack_id,
            reserved,
            completions,
            tickets,
        }
    }

    /// A new open batch for `dest`; notes its linger deadline in `new_deadline`.
    fn open_batch(
        &self,
        dest: &Option<Arc<Destination>>,
        new_deadline: &mut Option<(Instant, u64)>,
    ) -> OpenBatch {
        let id = self.next_batch.fetch_add(1, Ordering::Relaxed);
        let opened = Instant::now();
        if self.config.linger_ms > 0 {
            *new_deadline = Some((opened + Duration::from_millis(self.config.linger_ms), id));
        }
        OpenBatch {
            id,
            dest: dest.clone().unwrap_or_else(|| self.default_dest.clone()),
            buf: self.take_buffer(dest.is_none()),
            records: 0,
            opened,
            completions: Vec::new(),
            tickets: Vec::new(),
        }
    }

    /// Counts the record just written at the end of the batch in `slot`, attaches its
    /// tracking, and seals the batch when it is full (or lingering is off).
    #[inline]
    fn commit_record(
        &self,
        slot: &mut Option<OpenBatch>,
        track: Track,
        sealed: &mut Vec<SealedBatch>,
        new_deadline: &mut Option<(Instant, u64)>,
    ) -> Option<Completion> {
        let batch = slot.as_mut()?;
        batch.records += 1;
        let completion = match track {
            Track::None => None,
            Track::Ticket(ticket) => {
                batch.tickets.push(ticket);
                None
            }
            Track::Completion => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                batch.completions.push(tx);
                Some(Completion { rx })
            }
        };
        let config = &self.config;
        if config.linger_ms == 0
            || batch.records >= config.batch_max_count as u32
            || batch.buf.len() >= config.batch_max_bytes
        {
            if let Some(done) = slot.take() {
                sealed.push(self.seal(done));
                *new_deadline = None;
            }
        }
        completion
    }

    /// After the shard is unlocked: arms the new batch's deadline, sends what sealed.
    #[inline]
    fn after_append(
        self: &Arc<Self>,
        shard: usize,
        dest: &Option<Arc<Destination>>,
        new_deadline: Option<(Instant, u64)>,
        sealed: Vec<SealedBatch>,
    ) {
        if let Some((at, batch_id)) = new_deadline {
            let entry = Deadline {
                at,
                batch_id,
                shard,
                dest: dest.clone().map(|d| Arc::new(DestinationOrd(d))),
            };
            let mut heap = self.timers.lock();
            let earliest = heap.peek().is_none_or(|Reverse(top)| at < top.at);
            heap.push(Reverse(entry));
            drop(heap);
            if earliest {
                self.timer_notify.notify_one();
            }
        }
        if !sealed.is_empty() {
            self.dispatch(sealed);
        }
    }

    fn dispatch(self: &Arc<Self>, sealed: Vec<SealedBatch>) {
        for batch in sealed {
            self.runtime.spawn(send::deliver(self.clone(), batch));
        }
    }

    /// Ends a batch: releases its memory, counts it, tells whoever waits.
    pub(crate) fn complete(
        &self,
        report: Arc<DeliveryReport>,
        reserved: usize,
        completions: Vec<tokio::sync::oneshot::Sender<Arc<DeliveryReport>>>,
    ) {
        let records = u64::from(report.records);
        match &report.outcome {
            Outcome::Delivered => {
                self.delivered.fetch_add(records, Ordering::Relaxed);
                self.batches_delivered.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Failed { code, .. } => {
                self.failed.fetch_add(records, Ordering::Relaxed);
                *self
                    .failures_by_code
                    .lock()
                    .entry(code.clone())
                    .or_default() += records;
                let mut failed = self.failed_reports.lock();
                if failed.len() >= 10_000 {
                    failed.pop_front();
                }
                failed.push_back(report.clone());
            }
        }
        for c in completions {
            let _ = c.send(report.clone());
        }
        if let Some(tx) = self.reports.lock().as_ref() {
            let _ = tx.send(report);
        }
        self.release(reserved);
        self.completed.fetch_add(records, Ordering::AcqRel);
        let _g = self.idle.0.lock();
        self.idle.1.notify_all();
    }

    /// Records accepted so far.
    fn accepted(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().accepted).sum()
    }

    /// Records accepted and not yet at a final outcome.
    fn pending(&self) -> u64 {
        // Completions are read first: every completed record was accepted before, so the
        // difference never goes below zero.
        let completed = self.completed.load(Ordering::Acquire);
        self.accepted().saturating_sub(completed)
    }

    /// Bytes reserved ahead by the shards and not used yet.
    fn credits(&self) -> usize {
        self.shards.iter().map(|s| s.lock().credit).sum()
    }

    /// Gives the shards' unused reservations back to the budget.
    fn return_credits(&self) {
        let total: usize = self
            .shards
            .iter()
            .map(|s| std::mem::take(&mut s.lock().credit))
            .sum();
        if total > 0 {
            self.release(total);
        }
    }

    /// Seals the batch a deadline was set for, if it is still open.
    fn expire(self: &Arc<Self>, deadline: Deadline) {
        let sealed = {
            let mut shard = self.shards[deadline.shard].lock();
            let slot = match &deadline.dest {
                None => shard.default_batch.take_if(|b| b.id == deadline.batch_id),
                Some(d) => match shard.batches.get(&d.0) {
                    Some(b) if b.id == deadline.batch_id => shard.batches.remove(&d.0),
                    _ => None,
                },
            };
            slot.map(|b| self.seal(b))
        };
        if let Some(s) = sealed {
            self.dispatch(vec![s]);
        }
    }

    fn seal_all(self: &Arc<Self>) {
        for shard in &self.shards {
            let sealed: Vec<SealedBatch> = {
                let mut s = shard.lock();
                let mut out: Vec<SealedBatch> = s
                    .default_batch
                    .take()
                    .into_iter()
                    .map(|b| self.seal(b))
                    .collect();
                out.extend(s.batches.drain().map(|(_, b)| self.seal(b)));
                out
            };
            self.dispatch(sealed);
        }
    }

    fn wait_idle(&self, timeout: Duration) -> u64 {
        let deadline = Instant::now() + timeout;
        let mut guard = self.idle.0.lock();
        loop {
            if self.pending() == 0 {
                return 0;
            }
            if self
                .idle
                .1
                .wait_until(
                    &mut guard,
                    deadline.min(Instant::now() + Duration::from_millis(50)),
                )
                .timed_out()
                && Instant::now() >= deadline
            {
                return self.pending();
            }
        }
    }
}

async fn timer_loop(inner: Weak<Inner>, mut abort: tokio::sync::watch::Receiver<bool>) {
    loop {
        let Some(inner) = inner.upgrade() else { return };
        let now = Instant::now();
        let mut due = Vec::new();
        let next = {
            let mut heap = inner.timers.lock();
            while heap.peek().is_some_and(|Reverse(d)| d.at <= now) {
                if let Some(Reverse(d)) = heap.pop() {
                    due.push(d);
                }
            }
            heap.peek().map(|Reverse(d)| d.at)
        };
        for d in due {
            inner.expire(d);
        }
        let sleep = tokio::time::sleep_until(tokio::time::Instant::from_std(
            next.unwrap_or(now + Duration::from_secs(3600)),
        ));
        tokio::select! {
            _ = sleep => {}
            _ = inner.timer_notify.notified() => {}
            _ = abort.wait_for(|a| *a) => return,
        }
    }
}

/// A producer. Cheap to share by reference across threads; dropping it closes it.
pub struct Producer {
    inner: Arc<Inner>,
    reporter: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// A report callback: receives reports in batches on the producer's reporter thread.
pub type ReportCallback = Box<dyn FnMut(&[Arc<DeliveryReport>]) + Send>;

impl Producer {
    /// A producer for `config`, with static credentials from it.
    pub fn new(config: ProducerConfig) -> Result<Producer, ProducerError> {
        Producer::build(config, None, None)
    }

    /// A producer whose credentials come from `provider` before every attempt.
    pub fn with_credentials_provider(
        config: ProducerConfig,
        provider: Arc<dyn CredentialsProvider>,
    ) -> Result<Producer, ProducerError> {
        Producer::build(config, Some(provider), None)
    }

    /// The general constructor: optional credentials provider and report callback.
    pub fn build(
        config: ProducerConfig,
        provider: Option<Arc<dyn CredentialsProvider>>,
        on_reports: Option<ReportCallback>,
    ) -> Result<Producer, ProducerError> {
        let config =
            if provider.is_some() && config.access_key_id.is_empty() && config.api_key.is_none() {
                // The provider supplies the keys; placeholders satisfy validation.
                ProducerConfig {
                    access_key_id: "provider".into(),
                    access_key_secret: "provider".into(),
                    ..config
                }
            } else {
                config
            };
        config.validate()?;
        let (https, endpoint_host) = config::split_endpoint(&config.endpoint)?;
        let bare_host = endpoint_host
            .rsplit_once(':')
            .filter(|(_, p)| p.parse::<u16>().is_ok())
            .map_or(endpoint_host.as_str(), |(h, _)| h);
        let endpoint_is_ip = bare_host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok();
        let ca_pem = match &config.ca_file {
            Some(path) => Some(std::fs::read(path).map_err(|source| ProducerError::CaFile {
                path: path.clone(),
                source,
            })?),
            None => None,
        };
        let client = engine::client(&engine::ClientKey {
            connect_timeout_ms: config.connect_timeout_ms,
            request_timeout_ms: config.request_timeout_ms,
            ca_pem,
            remote_address: config.remote_address,
            pool_size: config.send_concurrency,
        })?;
        let runtime = engine::handle()?;
        let region = (config.signature_version == SignatureVersion::V4)
            .then(|| config.region.clone().unwrap_or_default());
        let credentials = match (provider, &config.api_key) {
            (Some(provider), _) => CredentialSource::Provider { provider, region },
            (None, Some(key)) => CredentialSource::Static(Auth::Bearer(key.clone())),
            (None, None) => {
                let c = Credentials {
                    access_key_id: config.access_key_id.clone(),
                    access_key_secret: config.access_key_secret.clone(),
                    security_token: config.security_token.clone(),
                };
                CredentialSource::Static(match region {
                    Some(region) => Auth::V4 {
                        credentials: c,
                        region,
                    },
                    None => Auth::V1(c),
                })
            }
        };
        let source = config
            .source
            .clone()
            .unwrap_or_else(|| local_address(&endpoint_host));
        let default_dest = Arc::new(Destination {
            project: config.project.as_str().into(),
            logstore: config.logstore.as_str().into(),
            topic: config.topic.as_str().into(),
            source: source.into(),
            hash_key: None,
        });
        let seed = format!(
            "{}-{}-{:?}-{}",
            config.logstore,
            engine::process_id(),
            SystemTime::now(),
            fastrand::u64(..)
        );
        let pack_prefix = format!("{:X}", md5::Md5::digest(seed.as_bytes()))[..16].to_owned();
        let shard_count = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, 16);
        let (abort, abort_rx) = tokio::sync::watch::channel(false);
        let (reports, reporter) = match on_reports {
            None => (None, None),
            Some(callback) => {
                let (tx, rx) = std::sync::mpsc::channel::<Arc<DeliveryReport>>();
                let errors = Arc::new(AtomicU64::new(0));
                (Some((tx, errors.clone())), Some((rx, callback, errors)))
            }
        };
        let callback_errors = reports
            .as_ref()
            .map_or_else(|| Arc::new(AtomicU64::new(0)), |(_, e)| e.clone());
        let config_buffer = config.buffer_max_bytes;
        let inner = Arc::new(Inner {
            send_slots: tokio::sync::Semaphore::new(config.send_concurrency),
            config,
            client,
            runtime: runtime.clone(),
            scheme: if https { "https" } else { "http" },
            endpoint_host,
            endpoint_is_ip,
            credentials,
            default_dest,
            shards: (0..shard_count)
                .map(|_| Mutex::new(Shard::default()))
                .collect(),
            timers: Mutex::new(BinaryHeap::new()),
            timer_notify: tokio::sync::Notify::new(),
            abort,
            closed: AtomicBool::new(false),
            clock_offset_ms: AtomicI64::new(0),
            pack_prefix,
            next_batch: AtomicU64::new(0),
            used_bytes: AtomicUsize::new(0),
            completed: AtomicU64::new(0),
            credit_chunk: (config_buffer / (8 * shard_count)).min(64 * 1024),
            blocked_waiters: AtomicUsize::new(0),
            space: (Mutex::new(()), Condvar::new()),
            idle: (Mutex::new(()), Condvar::new()),
            delivered: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            retried: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            invalid: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            batches_delivered: AtomicU64::new(0),
            callback_errors,
            failures_by_code: Mutex::new(Default::default()),
            failed_reports: Mutex::new(VecDeque::new()),
            reports: Mutex::new(reports.map(|(tx, _)| tx)),
            buffers: Mutex::new(Vec::new()),
            owner_pid: engine::process_id(),
        });
        runtime.spawn(timer_loop(Arc::downgrade(&inner), abort_rx));
        let reporter = match reporter {
            None => None,
            Some((rx, mut callback, errors)) => Some(
                std::thread::Builder::new()
                    .name("loghose-reports".into())
                    .spawn(move || {
                        while let Ok(first) = rx.recv() {
                            let mut batch = vec![first];
                            while batch.len() < 4096 {
                                match rx.try_recv() {
                                    Ok(r) => batch.push(r),
                                    Err(_) => break,
                                }
                            }
                            let call = std::panic::AssertUnwindSafe(|| callback(&batch));
                            if std::panic::catch_unwind(call).is_err() {
                                errors.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    })
                    .map_err(|e| ProducerError::Engine(e.to_string()))?,
            ),
        };
        Ok(Producer {
            inner,
            reporter: Mutex::new(reporter),
        })
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &ProducerConfig {
        &self.inner.config
    }

    /// Sends one record of text fields (fire and forget; the outcome arrives in reports and
    /// stats).
    pub fn send<K: AsRef<str>, V: AsRef<str>>(
        &self,
        fields: &[(K, V)],
        opts: &SendOptions<'_>,
    ) -> Result<(), ProducerError> {
        self.send_with(opts, Track::None, |enc| {
            for (k, v) in fields {
                enc.field_str(k.as_ref(), v.as_ref())?;
            }
            Ok(())
        })
        .map(drop)
    }

    /// Sends one record and returns a completion resolved with its batch's report.
    pub fn send_with_completion<K: AsRef<str>, V: AsRef<str>>(
        &self,
        fields: &[(K, V)],
        opts: &SendOptions<'_>,
    ) -> Result<Completion, ProducerError> {
        let completion = self.send_with(opts, Track::Completion, |enc| {
            for (k, v) in fields {
                enc.field_str(k.as_ref(), v.as_ref())?;
            }
            Ok(())
        })?;
        completion.ok_or(ProducerError::Closed)
    }

    /// The general add: `fill` writes the record's fields straight into the open batch of
    /// its destination (the bindings iterate their own dicts and objects here, with no
    /// intermediate copy).
    ///
    /// `fill` runs while one of the producer's accumulator shards is locked: it must not call
    /// into this producer, block, or run code that might (a binding whose values could run
    /// foreign code uses [`send_with_scratch`](Producer::send_with_scratch)). A failed `fill`
    /// leaves the batch exactly as it was.
    pub fn send_with<F>(
        &self,
        opts: &SendOptions<'_>,
        track: Track,
        fill: F,
    ) -> Result<Option<Completion>, ProducerError>
    where
        F: FnOnce(&mut LogEncoder<'_>) -> Result<(), RecordError>,
    {
        match self.try_send_in_place(opts, track, |enc| fill(enc).map(|()| true))? {
            Some(completion) => Ok(completion),
            // The fill above never declines.
            None => Err(ProducerError::Engine("in-place add declined".into())),
        }
    }

    /// [`send_with`](Producer::send_with) whose `fill` may decline with `Ok(false)` when it
    /// meets a value it cannot read without running foreign code: what it wrote is rolled
    /// back, nothing is counted, and `Ok(None)` tells the caller to send the record through
    /// [`send_with_scratch`](Producer::send_with_scratch) instead.
    pub fn try_send_in_place<F>(
        &self,
        opts: &SendOptions<'_>,
        track: Track,
        fill: F,
    ) -> Result<Option<Option<Completion>>, ProducerError>
    where
        F: FnOnce(&mut LogEncoder<'_>) -> Result<bool, RecordError>,
    {
        let inner = &self.inner;
        let prepared = self.prepare(opts);
        let (dest, secs, nanos) = prepared?;
        let max_bytes = inner.config.batch_max_bytes;
        let shard_index = shard_hint() % inner.shards.len();
        let mut guard = inner.shards[shard_index].lock();
        let shard = &mut *guard;
        let mut keyed: Option<OpenBatch> = None;
        let slot: &mut Option<OpenBatch> = match &dest {
            None => &mut shard.default_batch,
            Some(d) => {
                keyed = shard.batches.remove(d);
                &mut keyed
            }
        };
        let mut new_deadline = None;
        let batch = slot.get_or_insert_with(|| inner.open_batch(&dest, &mut new_deadline));
        let before = batch.buf.len();
        let encoded = {
            let mut enc = LogEncoder::begin(&mut batch.buf, secs, nanos, inner.config.key_policy);
            match fill(&mut enc) {
                Ok(true) => enc.finish(max_bytes).map(Some),
                // Dropping the encoder rolls the batch back.
                Ok(false) => Ok(None),
                Err(e) => Err(e),
            }
        };
        // The fast path needs the record to fit the batch and its bytes to be reserved without
        // waiting; otherwise the record is copied out and takes the general path below,
        // without the lock.
        let fast = match &encoded {
            Ok(Some(n)) => {
                let n = *n;
                let fits = before + n <= max_bytes || batch.records == 0;
                fits && inner.reserve_now(&mut shard.credit, n)
            }
            Ok(None) | Err(_) => false,
        };
        let mut sealed: Vec<SealedBatch> = Vec::new();
        let mut moved: Option<Vec<u8>> = None;
        let completion = if fast {
            shard.accepted += 1;
            inner.commit_record(slot, track, &mut sealed, &mut new_deadline)
        } else {
            if let Ok(Some(_)) = encoded {
                moved = Some(batch.buf[before..].to_vec());
                batch.buf.truncate(before);
            }
            if batch.records == 0 {
                // Opened for this record only: forget it (its timer finds nothing).
                if let Some(empty) = slot.take() {
                    inner.recycle(empty.buf);
                }
                new_deadline = None;
            }
            None
        };
        if let (Some(d), Some(open)) = (&dest, keyed.take()) {
            shard.batches.insert(d.clone(), open);
        }
        drop(guard);
        match encoded {
            Err(e) => {
                inner.invalid.fetch_add(1, Ordering::Relaxed);
                return Err(e.into());
            }
            Ok(None) => return Ok(None),
            Ok(Some(_)) => {}
        }
        inner.after_append(shard_index, &dest, new_deadline, sealed);
        match moved {
            Some(log) => self.append(&log, dest, track).map(Some),
            None => Ok(Some(completion)),
        }
    }

    /// [`send_with`](Producer::send_with) for a `fill` that may run foreign code (a
    /// binding's user-defined conversions): the record is encoded into a thread-local buffer
    /// with no lock held, then copied into its batch.
    pub fn send_with_scratch<F>(
        &self,
        opts: &SendOptions<'_>,
        track: Track,
        fill: F,
    ) -> Result<Option<Completion>, ProducerError>
    where
        F: FnOnce(&mut LogEncoder<'_>) -> Result<(), RecordError>,
    {
        let inner = &self.inner;
        let (dest, secs, nanos) = self.prepare(opts)?;
        let result = SCRATCH.with(|scratch| {
            // A fill that re-enters the producer finds the scratch buffer busy and gets a
            // buffer of its own.
            let mut own = BatchBuf::new();
            let mut borrowed = scratch.try_borrow_mut();
            let buf = match borrowed.as_deref_mut() {
                Ok(b) => b,
                Err(_) => &mut own,
            };
            buf.clear();
            let mut enc = LogEncoder::begin(buf, secs, nanos, inner.config.key_policy);
            fill(&mut enc)?;
            enc.finish(inner.config.batch_max_bytes)?;
            Ok::<_, RecordError>(self.append(buf, dest, track))
        });
        match result {
            Ok(appended) => appended,
            Err(e) => {
                inner.invalid.fetch_add(1, Ordering::Relaxed);
                Err(e.into())
            }
        }
    }

    /// What every add does first: refuses when closed, resolves the destination, takes the
    /// time.
    #[inline]
    fn prepare(&self, opts: &SendOptions<'_>) -> Result<Prepared, ProducerError> {
        let inner = &self.inner;
        if inner.closed.load(Ordering::Acquire) {
            inner.dropped.fetch_add(1, Ordering::Relaxed);
            return Err(ProducerError::Closed);
        }
        let dest = if opts.is_default() {
            None
        } else {
            match inner.destination(opts) {
                Ok(d) => Some(d),
                Err(e) => {
                    inner.invalid.fetch_add(1, Ordering::Relaxed);
                    return Err(e.into());
                }
            }
        };
        let (secs, nanos) = match opts.time {
            Some(t) => (t, opts.time_ns),
            None => {
                let (s, n) = now_parts();
                (s, Some(opts.time_ns.unwrap_or(n)))
            }
        };
        Ok((dest, secs, nanos))
    }

    /// Appends an encoded log to its batch: the path of records that could not be written in
    /// place (no room in the batch, or the buffer is full and the policy may block).
    fn append(
        &self,
        log: &[u8],
        dest: Option<Arc<Destination>>,
        track: Track,
    ) -> Result<Option<Completion>, ProducerError> {
        let inner = &self.inner;
        let n = log.len();
        let shard_index = shard_hint() % inner.shards.len();
        // Reserve the record's bytes: from the shard's credit when it has some, else a new
        // chunk (or exactly n) from the shared budget; only a full buffer takes the slow path,
        // which may block, without holding the shard.
        let mut guard = inner.shards[shard_index].lock();
        let prepaid = inner.reserve_now(&mut guard.credit, n);
        if !prepaid {
            drop(guard);
            if let Err(e) = inner.reserve(n) {
                inner.dropped.fetch_add(1, Ordering::Relaxed);
                return Err(e);
            }
            guard = inner.shards[shard_index].lock();
        }
        let max_bytes = inner.config.batch_max_bytes;
        let mut sealed: Vec<SealedBatch> = Vec::new();
        let mut new_deadline = None;
        let completion = {
            let shard = &mut *guard;
            shard.accepted += 1;
            // Both paths work on an Option slot; a keyed batch is taken out of the map and
            // put back below.
            let mut keyed: Option<OpenBatch> = None;
            let slot: &mut Option<OpenBatch> = match &dest {
                None => &mut shard.default_batch,
                Some(d) => {
                    keyed = shard.batches.remove(d);
                    &mut keyed
                }
            };
            if slot.as_ref().is_some_and(|b| b.buf.len() + n > max_bytes) {
                if let Some(full) = slot.take() {
                    sealed.push(inner.seal(full));
                }
            }
            let batch = slot.get_or_insert_with(|| inner.open_batch(&dest, &mut new_deadline));
            batch.buf.extend_from_slice(log);
            let completion = inner.commit_record(slot, track, &mut sealed, &mut new_deadline);
            if let (Some(d), Some(open)) = (&dest, keyed.take()) {
                shard.batches.insert(d.clone(), open);
            }
            completion
        };
        drop(guard);
        inner.after_append(shard_index, &dest, new_deadline, sealed);
        Ok(completion)
    }

    /// Seals every open batch and waits up to `timeout` for all accepted records to reach a
    /// final outcome; returns how many are still pending.
    pub fn flush(&self, timeout: Duration) -> u64 {
        self.inner.seal_all();
        self.inner.wait_idle(timeout)
    }

    /// Refuses new records, sends what is open, waits up to `timeout`, then abandons what is
    /// left (reported as failed with `ProducerClosed`). Idempotent.
    pub fn close(&self, timeout: Duration) -> CloseReport {
        let inner = &self.inner;
        let started = Instant::now();
        inner.closed.store(true, Ordering::Release);
        {
            let _g = inner.space.0.lock();
            inner.space.1.notify_all();
        }
        inner.seal_all();
        let mut pending = inner.wait_idle(timeout);
        if pending > 0 {
            let _ = inner.abort.send(true);
            pending = inner.wait_idle(Duration::from_secs(2));
        }
        let _ = inner.abort.send(true);
        inner.return_credits();
        inner.reports.lock().take();
        if let Some(handle) = self.reporter.lock().take() {
            // The reporter ends once it has passed on the last report; bounded by the callback.
            let remaining = timeout
                .saturating_sub(started.elapsed())
                .max(Duration::from_millis(100));
            let deadline = Instant::now() + remaining;
            while !handle.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
            if handle.is_finished() {
                let _ = handle.join();
            }
        }
        let failed: Vec<Arc<DeliveryReport>> =
            inner.failed_reports.lock().iter().cloned().collect();
        CloseReport {
            // From the exact counter: the reports kept are only the most recent 10 000.
            undelivered: pending + inner.failed.load(Ordering::Relaxed),
            failed,
        }
    }

    /// Forgets this producer without closing it: for a producer inherited through `fork`,
    /// whose I/O threads exist only in the parent (closing would wait for them in vain). Its
    /// records stay with the parent.
    pub fn abandon(self) {
        std::mem::forget(self);
    }

    /// The process that built this producer.
    pub fn owner_pid(&self) -> u32 {
        self.inner.owner_pid
    }

    /// Records accepted and not yet at a final outcome (cheaper than `stats`).
    pub fn pending(&self) -> u64 {
        self.inner.pending()
    }

    /// Whether `close` was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let i = &self.inner;
        Stats {
            accepted: i.accepted(),
            delivered: i.delivered.load(Ordering::Relaxed),
            failed: i.failed.load(Ordering::Relaxed),
            retried: i.retried.load(Ordering::Relaxed),
            dropped: i.dropped.load(Ordering::Relaxed),
            invalid: i.invalid.load(Ordering::Relaxed),
            queued_bytes: i
                .used_bytes
                .load(Ordering::Relaxed)
                .saturating_sub(i.credits()) as u64,
            queued_records: i.pending(),
            in_flight_batches: i.in_flight.load(Ordering::Relaxed),
            batches_delivered: i.batches_delivered.load(Ordering::Relaxed),
            failures_by_code: i.failures_by_code.lock().clone(),
            callback_errors: i.callback_errors.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        if engine::process_id() != self.inner.owner_pid {
            // Inherited through fork: the I/O threads are the parent's; nothing to wait for.
            return;
        }
        if !self.inner.closed.load(Ordering::Acquire) || self.inner.pending() > 0 {
            self.close(Duration::from_millis(self.inner.config.drop_timeout_ms));
        } else {
            let _ = self.inner.abort.send(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_pool_grows_only_under_pressure_and_shrinks_at_rest() {
        let config = ProducerConfig {
            access_key_id: "id".into(),
            access_key_secret: "secret".into(),
            buffer_max_bytes: 8 << 20,
            batch_max_bytes: 1 << 20,
            ..ProducerConfig::new("http://127.0.0.1:9", "proj", "store")
        };
        let producer = Producer::new(config).unwrap();
        let inner = &producer.inner;
        let buffer = || BatchBuf::with_capacity((1 << 20) + 1024);
        for _ in 0..6 {
            inner.recycle(buffer());
        }
        assert_eq!(inner.buffers.lock().len(), 2, "two kept normally");
        // Over half the budget in use: as many as the budget holds batches.
        inner.used_bytes.fetch_add(5 << 20, Ordering::Relaxed);
        for _ in 0..12 {
            inner.recycle(buffer());
        }
        assert_eq!(inner.buffers.lock().len(), 8);
        // Oversized buffers (a batch grown by a huge record) are never kept.
        inner.buffers.lock().clear();
        inner.recycle(BatchBuf::with_capacity(8 << 20));
        assert!(inner.buffers.lock().is_empty());
        for _ in 0..8 {
            inner.recycle(buffer());
        }
        inner.used_bytes.fetch_sub(5 << 20, Ordering::Relaxed);
        inner.at_rest();
        assert_eq!(
            inner.buffers.lock().len(),
            2,
            "the extra ones are given back"
        );
        let reused = inner.take_buffer(false);
        assert!(reused.is_empty() && reused.capacity() >= 1 << 20);
    }
}
