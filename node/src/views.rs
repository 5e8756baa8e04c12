//! What the addon hands JavaScript as plain objects: a producer's stats, delivery reports and
//! close result, and what the emulator answers. Declared once here with `#[napi(object)]`, so
//! napi-rs writes their camelCase keys and their TypeScript interfaces (`native.d.ts`, which
//! `index.d.ts` re-exports); nothing converts case by hand.
//!
//! Counts cross as JavaScript numbers (exact up to 2^53). Built on the thread that calls (a
//! report batch on an I/O thread, converted on the JavaScript thread when the call lands).

use std::collections::HashMap;

use loghose::emulator::{Counters, LogstoreTotals as EngineTotals};
use loghose::producer::bindings::ReportView;
use napi_derive::napi;

/// The outcome of one batch.
#[napi(object)]
pub struct DeliveryReport {
    /// The batch's number in this producer.
    pub batch_id: f64,
    /// The project the batch was sent to.
    pub project: String,
    /// The logstore the batch was sent to.
    pub logstore: String,
    /// Whether the service stored the batch.
    pub delivered: bool,
    /// Not delivered before the producer closed, and kept in the spool: the next producer on
    /// `spoolDir` sends it (`code` is `'KeptInSpool'`). Not a failure.
    pub kept: bool,
    /// Why it failed: the service's error code (`Unauthorized`, `WriteQuotaExceed`...) or the
    /// producer's own (`RequestTimeout`, `ProducerClosed`, `KeptInSpool`...); null when delivered.
    pub code: Option<String>,
    /// The failure's message, as the service or the producer gave it.
    pub message: Option<String>,
    /// The last answer's HTTP status, when there was one.
    pub http_status: Option<u32>,
    /// Requests made for the batch.
    pub attempts: u32,
    /// The last answer's `x-log-requestid` (what Alibaba Cloud support asks for).
    pub request_id: Option<String>,
    /// Records in the batch.
    pub records: u32,
    /// The batch's size before compression, bytes.
    pub raw_bytes: f64,
    /// The batch's size as sent, bytes.
    pub compressed_bytes: f64,
    /// From the batch's first record to its outcome, milliseconds.
    pub latency_ms: f64,
    /// From the batch's first request to its outcome, retries and their waits included.
    pub send_ms: f64,
    /// The batch's `__pack_id__`, the same across retries and replays (the service's duplicate check).
    pub pack_id: String,
    /// The tickets of the records sent with `sendAsync` in this batch.
    pub tickets: Vec<f64>,
    /// Sent again from a spool an earlier producer left.
    pub replayed: bool,
}

impl From<ReportView<'_>> for DeliveryReport {
    fn from(r: ReportView<'_>) -> DeliveryReport {
        DeliveryReport {
            batch_id: r.batch_id as f64,
            project: r.project.to_owned(),
            logstore: r.logstore.to_owned(),
            delivered: r.delivered,
            kept: r.kept,
            code: r.code.map(str::to_owned),
            message: r.message.map(str::to_owned),
            http_status: r.http_status.map(u32::from),
            attempts: r.attempts,
            request_id: r.request_id.map(str::to_owned),
            records: r.records,
            raw_bytes: r.raw_bytes as f64,
            compressed_bytes: r.compressed_bytes as f64,
            latency_ms: r.latency_ms,
            send_ms: r.send_ms,
            pack_id: r.pack_id.to_owned(),
            tickets: r.tickets.iter().map(|t| *t as f64).collect(),
            replayed: r.replayed,
        }
    }
}

/// What closing a producer answers.
#[napi(object)]
pub struct NativeCloseResult {
    /// Records neither delivered nor kept: failed for good, or given up without a spool (0:
    /// nothing lost).
    pub undelivered: f64,
    /// Records not delivered before the timeout and left in the spool for the next producer
    /// on `spoolDir`.
    pub kept: f64,
    /// Of the kept records, those not known to be durable (the disk failed a sync of their
    /// files): a power loss could lose them.
    pub kept_not_durable: f64,
    /// The reports of the batches that failed.
    pub failed: Vec<DeliveryReport>,
    /// The counters once closed, as the engine's JSON (none when the producer was closed
    /// already).
    pub stats_json: Option<String>,
}

/// A logstore's exact totals in the emulator.
#[napi(object)]
pub struct LogstoreTotals {
    /// Logs accepted since creation.
    pub logs: f64,
    /// Groups accepted since creation.
    pub groups: f64,
    /// Groups still held (the rest were dropped by retention).
    pub retained_groups: f64,
}

impl From<EngineTotals> for LogstoreTotals {
    fn from(t: EngineTotals) -> LogstoreTotals {
        LogstoreTotals {
            logs: t.logs as f64,
            groups: t.groups as f64,
            retained_groups: t.retained_groups as f64,
        }
    }
}

/// The emulator's counters.
#[napi(object)]
pub struct EmulatorCounters {
    /// Every request to the service's APIs (the emulator's own API is not counted).
    pub requests: f64,
    /// PutLogs requests, accepted or not.
    pub put_requests: f64,
    /// PutLogs requests accepted.
    pub accepted_requests: f64,
    /// Logs accepted.
    pub logs: f64,
    /// Log groups accepted.
    pub log_groups: f64,
    /// Uncompressed bytes accepted.
    pub raw_bytes: f64,
    /// Bytes accepted as sent (compressed).
    pub compressed_bytes: f64,
    /// Refused requests by error code (injected errors included).
    pub rejected: HashMap<String, f64>,
    /// Requests that met an injected fault.
    pub faults_injected: f64,
    /// Accepted groups whose pack id had been accepted before in the same logstore:
    /// batches delivered more than once.
    pub duplicate_groups: f64,
    /// Temporary keys handed out by the emulated STS and ECS metadata service.
    pub credentials_issued: f64,
}

impl From<Counters> for EmulatorCounters {
    fn from(c: Counters) -> EmulatorCounters {
        let n = |v: u64| v as f64;
        EmulatorCounters {
            requests: n(c.requests),
            put_requests: n(c.put_requests),
            accepted_requests: n(c.accepted_requests),
            logs: n(c.logs),
            log_groups: n(c.log_groups),
            raw_bytes: n(c.raw_bytes),
            compressed_bytes: n(c.compressed_bytes),
            rejected: c.rejected.into_iter().map(|(k, v)| (k, n(v))).collect(),
            faults_injected: n(c.faults_injected),
            duplicate_groups: n(c.duplicate_groups),
            credentials_issued: n(c.credentials_issued),
        }
    }
}

/// The endpoint's host and port (what monitoring calls the server's address).
#[napi(object)]
pub struct ServerAddress {
    pub address: String,
    pub port: u32,
}
