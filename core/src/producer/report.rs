//! What the producer tells its caller: one [`DeliveryReport`] per batch at its final outcome,
//! per-record [`Completion`]s built on them, and running [`Stats`].
//!
//! Reports are created on the I/O runtime when a batch is delivered or finally fails, handed
//! to the optional report callback (on the producer's reporter thread, in batches) and to the
//! completions of the records that asked for one. Nothing here blocks the I/O runtime.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::concurrency::SendLimit;

/// The code a kept batch's report carries (its records are in the spool, for the next
/// producer on `spool_dir`; a future or promise waiting on one fails with it).
pub const KEPT_IN_SPOOL: &str = "KeptInSpool";

/// How a batch ended.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The service accepted it.
    Delivered,
    /// It was not delivered before the producer closed, and stays in the spool: the next
    /// producer on `spool_dir` sends it. Not a failure: nothing is lost, and sending its
    /// records again would send them twice.
    Kept {
        /// What was happening when the producer closed.
        message: String,
    },
    /// It will not be delivered.
    Failed {
        /// errorCode from the service, or a client code (`RequestError`, `RequestTimeout`,
        /// `DeliveryTimeout`, `ProducerClosed`, …).
        code: String,
        /// errorMessage, or what the client saw.
        message: String,
        /// HTTP status of the last answer, if there was one.
        http_status: Option<u16>,
    },
}

/// The final report of one batch.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeliveryReport {
    /// Producer-local batch number.
    pub batch_id: u64,
    /// Project it went to.
    pub project: Arc<str>,
    /// Logstore it went to.
    pub logstore: Arc<str>,
    /// Delivered or failed, with the error.
    pub outcome: Outcome,
    /// Requests made (1 when delivered at the first try).
    pub attempts: u32,
    /// `x-log-requestid` of the last answer.
    pub request_id: Option<String>,
    /// Records in the batch.
    pub records: u32,
    /// Uncompressed size of the request body.
    pub raw_bytes: usize,
    /// Size as sent.
    pub compressed_bytes: usize,
    /// From the batch's first record to the final outcome.
    pub latency: Duration,
    /// From the batch's first request to the final outcome, retries and their waits
    /// included (what an exporter's "operation duration" measures); zero when never sent.
    pub send_time: Duration,
    /// The `__pack_id__` tag it carried.
    pub pack_id: String,
    /// Caller tickets of the records in it that asked for one (`Track::Ticket`).
    pub tickets: Vec<u64>,
    /// Rebuilt from a spool an earlier producer left (a replay).
    pub replayed: bool,
}

impl DeliveryReport {
    /// Whether the service accepted the batch.
    pub fn is_delivered(&self) -> bool {
        self.outcome == Outcome::Delivered
    }

    /// Whether the batch was left in the spool for the next producer (see [`Outcome::Kept`]).
    pub fn is_kept(&self) -> bool {
        matches!(self.outcome, Outcome::Kept { .. })
    }

    /// The error code when it failed, [`KEPT_IN_SPOOL`] when it was kept.
    pub fn error_code(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Delivered => None,
            Outcome::Kept { .. } => Some(KEPT_IN_SPOOL),
            Outcome::Failed { code, .. } => Some(code),
        }
    }

    /// The error message when it failed or was kept.
    pub fn error_message(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Delivered => None,
            Outcome::Kept { message } | Outcome::Failed { message, .. } => Some(message),
        }
    }

    /// The HTTP status of the last answer when it failed (none when no answer came).
    pub fn http_status(&self) -> Option<u16> {
        match &self.outcome {
            Outcome::Delivered | Outcome::Kept { .. } => None,
            Outcome::Failed { http_status, .. } => *http_status,
        }
    }

    /// [`latency`](DeliveryReport::latency) in milliseconds.
    pub fn latency_ms(&self) -> f64 {
        self.latency.as_secs_f64() * 1000.0
    }

    /// [`send_time`](DeliveryReport::send_time) in milliseconds.
    pub fn send_ms(&self) -> f64 {
        self.send_time.as_secs_f64() * 1000.0
    }

    /// The report as one flat record, the form both fronts expose (Node receives it as JSON
    /// with these camelCase names; Python reads the same accessors).
    pub fn view(&self) -> ReportView<'_> {
        ReportView {
            batch_id: self.batch_id,
            project: &self.project,
            logstore: &self.logstore,
            delivered: self.is_delivered(),
            kept: self.is_kept(),
            code: self.error_code(),
            message: self.error_message(),
            http_status: self.http_status(),
            attempts: self.attempts,
            request_id: self.request_id.as_deref(),
            records: self.records,
            raw_bytes: self.raw_bytes,
            compressed_bytes: self.compressed_bytes,
            latency_ms: self.latency_ms(),
            send_ms: self.send_ms(),
            pack_id: &self.pack_id,
            tickets: &self.tickets,
            replayed: self.replayed,
        }
    }
}

/// A [`DeliveryReport`] flattened: the outcome as `delivered` and `kept` plus the error's
/// code, message and status.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct ReportView<'a> {
    pub batch_id: u64,
    pub project: &'a str,
    pub logstore: &'a str,
    pub delivered: bool,
    pub kept: bool,
    pub code: Option<&'a str>,
    pub message: Option<&'a str>,
    pub http_status: Option<u16>,
    pub attempts: u32,
    pub request_id: Option<&'a str>,
    pub records: u32,
    pub raw_bytes: usize,
    pub compressed_bytes: usize,
    pub latency_ms: f64,
    pub send_ms: f64,
    pub pack_id: &'a str,
    pub tickets: &'a [u64],
    pub replayed: bool,
}

/// Resolves with the report of the batch a record went in.
#[derive(Debug)]
pub struct Completion {
    pub(crate) rx: tokio::sync::oneshot::Receiver<Arc<DeliveryReport>>,
}

/// A completion that did not resolve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompletionError {
    /// The wait timed out; the record may still be delivered.
    #[error("timed out waiting for the delivery report")]
    Timeout,
    /// The producer was torn down without a report (should not happen; reported for safety).
    #[error("the producer dropped the record's report")]
    Lost,
}

impl Completion {
    /// Waits up to `timeout` for the report (blocking; do not call on an async runtime).
    pub fn wait(self, timeout: Duration) -> Result<Arc<DeliveryReport>, CompletionError> {
        let Ok(handle) = super::engine::handle() else {
            return Err(CompletionError::Lost);
        };
        handle.block_on(async {
            match tokio::time::timeout(timeout, self.rx).await {
                Err(_) => Err(CompletionError::Timeout),
                Ok(Err(_)) => Err(CompletionError::Lost),
                Ok(Ok(report)) => Ok(report),
            }
        })
    }
}

impl std::future::Future for Completion {
    type Output = Result<Arc<DeliveryReport>, CompletionError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.rx)
            .poll(cx)
            .map(|r| r.map_err(|_| CompletionError::Lost))
    }
}

/// A snapshot of a producer's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Records accepted by `send`.
    pub accepted: u64,
    /// Records delivered.
    pub delivered: u64,
    /// Records in batches that finally failed.
    pub failed: u64,
    /// Records left in the spool when the producer closed (its timeout passed while they were
    /// in flight or queued): the next producer on `spool_dir` sends them. Not failed.
    pub kept: u64,
    /// Retry attempts made (attempts beyond each batch's first).
    pub retried: u64,
    /// Records refused because the buffer was full (never accepted; the caller was told).
    pub dropped: u64,
    /// Records refused as invalid (never accepted; the caller was told).
    pub invalid: u64,
    /// Raw bytes held now (open, sealed, in flight, retrying).
    pub queued_bytes: u64,
    /// Records accepted and not yet at a final outcome.
    pub queued_records: u64,
    /// Batches being sent or waiting to retry now.
    pub in_flight_batches: u64,
    /// Records in those batches.
    pub in_flight_records: u64,
    /// Batches delivered.
    pub batches_delivered: u64,
    /// Records failed, by error code.
    pub failures_by_code: BTreeMap<String, u64>,
    /// Report callbacks that panicked (the producer lives on).
    pub callback_errors: u64,
    /// Batches an earlier producer left in the spool, sent again by this one.
    pub replayed_batches: u64,
    /// Records in those batches.
    pub replayed_records: u64,
    /// Spool entries found torn or corrupted when the spool was opened, and skipped.
    pub spool_corrupt_entries: u64,
    /// Bytes of spool files on disk now.
    pub spool_bytes: u64,
    /// Syncs of spool files or directories the disk failed (each file is then written again
    /// elsewhere and never reused).
    pub spool_sync_failures: u64,
    /// Records sent while their spool copy could not be made durable (the disk kept failing
    /// its syncs): a power loss before their delivery would have lost them.
    pub spool_not_durable: u64,
    /// The spool's last needed sync failed: records are not durable until one succeeds.
    pub spool_degraded: bool,
    /// Per destination sent to: batches it may have in flight (adaptive concurrency), in
    /// flight now, its pace after a push back, push backs and cuts so far, its round trip.
    pub send_limits: Vec<SendLimit>,
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
