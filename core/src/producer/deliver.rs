//! Delivery: one sealed batch, from compression to its final outcome and report.
//!
//! The body is compressed once (the raw buffer goes back to the pool at once, and the batch's
//! reservation shrinks to the compressed size). Then, once its destination's [`Gates`] give
//! it a place (and its turn, when paced) and at most `send_concurrency` batches at a
//! time, each attempt is sent by the [`Transport`], its answer told to the destination's
//! controller and decided by [`retry::decide`]; a delivered batch keeps its slot and place
//! until it is settled (so a kill leaves at
//! most `send_concurrency` batches sent and not yet marked done in the spool); retries wait
//! without holding a send slot, and stop at `max_attempts`, at
//! the delivery deadline (`delivery_timeout_ms` after the batch's first record), or when the
//! producer is aborted (its close timeout passed). Whatever ends it, the batch settles exactly
//! once: counted in the [`Tally`], its reservation released, its completions resolved and its
//! report queued for the [`Reporter`].
//!
//! Runs on the shared I/O runtime; depends on the transport, the budget, the tally and the
//! reporter, never on the producer itself.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::accumulator::SealedBatch;
use super::budget::Budget;
use super::concurrency::{Gates, Place};
use super::config::{ConcurrencyMode, ProducerConfig};
use super::lifecycle::{Lifecycle, State};
use super::report::{DeliveryReport, Outcome};
use super::reporter::Reporter;
use super::retry::{self, Action};
use super::spool::{Compressed, Spooling};
use super::tally::Tally;
use super::transport::Transport;
use crate::wire::compress::{self, Compression};

thread_local! {
    /// Per I/O thread compression working area (grows to the largest batch's bound, then stays;
    /// resident only where bodies were written).
    static COMPRESS_AREA: std::cell::RefCell<compress::CompressArea> = const { std::cell::RefCell::new(compress::CompressArea::new()) };
}

/// The limits of one batch's delivery, from the configuration.
struct RetryPolicy {
    compression: Compression,
    max_attempts: u32,
    unauthorized_attempts: u32,
    backoff_base_ms: u64,
    backoff_max_ms: u64,
    delivery_timeout: Duration,
}

/// Everything a batch needs on its way out.
pub(crate) struct Delivery {
    policy: RetryPolicy,
    pub(crate) transport: Transport,
    send_slots: tokio::sync::Semaphore,
    /// Each destination's places and pace.
    pub(crate) gates: Gates,
    pub(crate) budget: Arc<Budget>,
    pub(crate) tally: Arc<Tally>,
    pub(crate) lifecycle: Arc<Lifecycle>,
    pub(crate) reporter: Reporter,
    /// Where settled batches are marked done, when there is a spool.
    pub(crate) spool: Spooling,
}

/// The failures the producer decides itself (no answer of the service says them), by the
/// code their reports carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LocalFailure {
    /// The producer closed before the batch was delivered.
    Closed,
    /// The batch could not be compressed.
    CompressionFailed,
    /// `delivery_timeout_ms` passed while retrying.
    DeliveryTimeout,
}

impl LocalFailure {
    /// The error code a report of it carries.
    const fn as_str(self) -> &'static str {
        match self {
            LocalFailure::Closed => "ProducerClosed",
            LocalFailure::CompressionFailed => "CompressionFailed",
            LocalFailure::DeliveryTimeout => "DeliveryTimeout",
        }
    }
}

/// Why a batch failed, as its report will say.
struct BatchFailure {
    code: String,
    message: String,
    http_status: Option<u16>,
    /// Set when the producer decided it.
    local: Option<LocalFailure>,
}

impl BatchFailure {
    /// A failure the producer decides, with its code.
    fn local(kind: LocalFailure, message: String, http_status: Option<u16>) -> BatchFailure {
        BatchFailure {
            code: kind.as_str().into(),
            message,
            http_status,
            local: Some(kind),
        }
    }

    fn closed(message: String, http_status: Option<u16>) -> BatchFailure {
        BatchFailure::local(LocalFailure::Closed, message, http_status)
    }
}

impl Delivery {
    pub(crate) fn new(
        config: &ProducerConfig,
        transport: Transport,
        budget: Arc<Budget>,
        tally: Arc<Tally>,
        lifecycle: Arc<Lifecycle>,
        reporter: Reporter,
        spool: Spooling,
    ) -> Delivery {
        Delivery {
            policy: RetryPolicy {
                compression: config.compression,
                max_attempts: config.max_attempts,
                unauthorized_attempts: config.unauthorized_attempts,
                backoff_base_ms: config.backoff_base_ms,
                backoff_max_ms: config.backoff_max_ms,
                delivery_timeout: Duration::from_millis(config.delivery_timeout_ms),
            },
            transport,
            send_slots: tokio::sync::Semaphore::new(config.send_concurrency),
            gates: Gates::new(
                config.send_concurrency_mode == ConcurrencyMode::Adaptive,
                config.send_concurrency_min,
                config.send_concurrency,
            ),
            budget,
            tally,
            lifecycle,
            reporter,
            spool,
        }
    }

    /// Delivers `batch` to a final outcome and settles it.
    pub(crate) async fn deliver(self: Arc<Self>, mut batch: SealedBatch) {
        self.tally.in_flight.fetch_add(1, Ordering::Relaxed);
        self.tally
            .in_flight_records
            .fetch_add(u64::from(batch.records), Ordering::Relaxed);
        if self.lifecycle.state() >= State::Aborted {
            // Sealed by a close whose timeout has passed: nothing to compress or send.
            self.release_raw(&mut batch);
            let failure =
                BatchFailure::closed("closed before the batch could be sent".into(), None);
            self.settle(batch, Err(failure), Sending::default());
            return;
        }
        // `spool_sync = batch`: durable before it is sent.
        let durable = self.spool.before_send(&mut batch.spooled).await;
        let codec = self.policy.compression;
        let compressed = COMPRESS_AREA
            .with(|area| compress::compress_with_area(codec, &batch.raw, &mut area.borrow_mut()));
        self.release_raw(&mut batch);
        let body = match compressed {
            // Shared from here on: every attempt sends these bytes without a copy.
            Ok(b) => Bytes::from(b),
            Err(e) => {
                let failure =
                    BatchFailure::local(LocalFailure::CompressionFailed, e.to_string(), None);
                self.settle(batch, Err(failure), Sending::default());
                return;
            }
        };
        let compressed = Compressed {
            shard: batch.shard,
            batch: batch.id,
            pack_id: &batch.pack_id,
            codec,
            raw_len: batch.raw_len,
            body: &body,
        };
        if !durable {
            // Its files failed their sync: a copy on a fresh file, or counted as not durable.
            let records = batch.records;
            self.spool
                .respool(compressed, records, &mut batch.spooled)
                .await;
        }
        // A batch file's records are now kept as this body: the file goes back.
        self.spool.compressed(&compressed, &mut batch.spooled);
        // From here on the batch holds only its compressed body: give the rest of its
        // reservation back, so the budget bounds the memory actually held.
        if body.len() < batch.reserved {
            self.budget.release(batch.reserved - body.len());
            batch.reserved = body.len();
        }
        let mut sending = Sending {
            compressed_bytes: body.len(),
            ..Sending::default()
        };
        let sent = self.attempts(&batch, &body, &mut sending).await;
        let (result, slot) = match sent {
            Ok(slot) => (Ok(()), Some(slot)),
            Err(failure) => (Err(failure), None),
        };
        self.settle(batch, result, sending);
        drop(slot);
    }

    /// Sends until delivered or given up; counts the attempts and keeps the last request id
    /// and when the first request started. Delivered, it hands back the send slot and the
    /// destination's place the batch holds until it is settled.
    async fn attempts(
        &self,
        batch: &SealedBatch,
        body: &Bytes,
        sending: &mut Sending,
    ) -> Result<(tokio::sync::SemaphorePermit<'_>, Place), BatchFailure> {
        let policy = &self.policy;
        let deadline = batch.opened + policy.delivery_timeout;
        let aborted = || self.lifecycle.reached(State::Aborted);
        let mut unauthorized = 0u32;
        let mut last_failure: Option<BatchFailure> = None;
        let gate = self.gates.of(&batch.dest.project, &batch.dest.logstore);
        let raw_bytes = batch.raw_len as u64;
        loop {
            // The destination's place (and turn, when paced), then one of the producer's slots;
            // a paced wait may outlast the delivery deadline, which ends it.
            let permit = tokio::select! {
                p = async {
                    let place = gate.acquire(raw_bytes).await;
                    self.send_slots.acquire().await.ok().map(|slot| (slot, place))
                } => p,
                _ = aborted() => None,
                _ = tokio::time::sleep_until(deadline.into()) => {
                    let last = last_failure.as_ref().map_or_else(
                        || "waited for its turn to send".to_owned(),
                        |f: &BatchFailure| format!("last error {}: {}", f.code, f.message),
                    );
                    return Err(BatchFailure::local(
                        LocalFailure::DeliveryTimeout,
                        format!("not delivered within delivery_timeout_ms; {last}"),
                        last_failure.and_then(|f| f.http_status),
                    ));
                }
            };
            let Some((permit, place)) = permit else {
                return Err(BatchFailure::closed(
                    "closed before the batch could be sent".into(),
                    None,
                ));
            };
            sending.attempts += 1;
            let started = Instant::now();
            sending.first_request.get_or_insert(started);
            let answer = tokio::select! {
                a = self.transport.put(&batch.dest, body, batch.raw_len) => a,
                _ = aborted() => {
                    return Err(BatchFailure::closed("closed while the batch was being sent".into(), None));
                }
            };
            let dest = &batch.dest;
            let rtt = started.elapsed();
            place.observe(&answer, rtt, raw_bytes);
            self.tally.meters.request(
                &dest.project,
                &dest.logstore,
                &answer,
                rtt,
                batch.raw_len,
                body.len(),
            );
            if answer.request_id.is_some() {
                sending.request_id.clone_from(&answer.request_id);
            }
            let attempts = sending.attempts;
            let backoff = |floor| {
                retry::backoff(
                    policy.backoff_base_ms,
                    policy.backoff_max_ms,
                    attempts,
                    floor,
                    |bound| fastrand::u64(0..=bound),
                )
            };
            let wait = match retry::decide(&answer) {
                // The slot goes with the batch until it is settled (marked done in the spool):
                // a kill then leaves at most `send_concurrency` batches delivered and unmarked,
                // the only ones a restart sends again.
                Action::Deliver => return Ok((permit, place)),
                Action::Fail => None,
                Action::Retry { floor } => Some(backoff(floor)),
                Action::Reauthorize => {
                    unauthorized += 1;
                    (unauthorized <= policy.unauthorized_attempts)
                        .then(|| backoff(Duration::from_millis(policy.backoff_base_ms)))
                }
                Action::Resign { server_time } => {
                    if let Some(t) = server_time {
                        self.transport.correct_clock(t);
                    }
                    Some(Duration::ZERO)
                }
            };
            drop(permit);
            drop(place);
            let failure = BatchFailure {
                code: answer.code,
                message: answer.message,
                http_status: answer.status,
                local: None,
            };
            let Some(wait) = wait else {
                return Err(failure);
            };
            if attempts >= policy.max_attempts {
                return Err(failure);
            }
            if Instant::now() + wait >= deadline {
                return Err(BatchFailure::local(
                    LocalFailure::DeliveryTimeout,
                    format!(
                        "not delivered within delivery_timeout_ms; last error {}: {}",
                        failure.code, failure.message
                    ),
                    failure.http_status,
                ));
            }
            self.tally.retried.fetch_add(1, Ordering::Relaxed);
            self.tally
                .meters
                .retry(&batch.dest.project, &batch.dest.logstore);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = aborted() => {
                    return Err(BatchFailure::closed(
                        format!("closed while retrying after {}: {}", failure.code, failure.message),
                        failure.http_status,
                    ));
                }
            }
            last_failure = Some(failure);
        }
    }

    /// The batch's raw bytes are no longer needed (compressed, or never to be sent): its
    /// buffer goes back to the pool, or stays with its batch file until the batch is done.
    fn release_raw(&self, batch: &mut SealedBatch) {
        let raw = std::mem::take(&mut batch.raw);
        if let Some(raw) = self.spool.raw_released(&mut batch.spooled, raw) {
            self.budget.recycle(raw);
        }
    }

    /// Ends a batch: its report, its counters, its memory, its waiters.
    fn settle(&self, mut batch: SealedBatch, result: Result<(), BatchFailure>, sending: Sending) {
        // A batch stays in the spool only when this producer gave up on it because it closed:
        // the next producer on the directory sends it, so it is kept, not failed. Delivered
        // or failed for good, it is done.
        let closed = matches!(&result, Err(f) if f.local == Some(LocalFailure::Closed));
        let kept = self
            .spool
            .settled(batch.shard, batch.id, closed, &mut batch.spooled);
        let outcome = match result {
            Ok(()) => Outcome::Delivered,
            Err(f) if kept => Outcome::Kept { message: f.message },
            Err(f) => Outcome::Failed {
                code: f.code,
                message: f.message,
                http_status: f.http_status,
            },
        };
        let report = Arc::new(DeliveryReport {
            batch_id: batch.id,
            project: batch.dest.project.clone(),
            logstore: batch.dest.logstore.clone(),
            outcome,
            attempts: sending.attempts,
            request_id: sending.request_id,
            records: batch.records,
            raw_bytes: batch.raw_len,
            compressed_bytes: sending.compressed_bytes,
            latency: batch.opened.elapsed(),
            send_time: sending
                .first_request
                .map_or(Duration::ZERO, |at| at.elapsed()),
            pack_id: batch.pack_id,
            tickets: batch.tickets,
            replayed: batch.replayed,
        });
        self.tally
            .in_flight_records
            .fetch_sub(u64::from(report.records), Ordering::Relaxed);
        if self.tally.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            // The last batch in flight is done: a burst is over, hand its memory back.
            self.budget.at_rest();
            self.spool.at_rest();
        }
        // Counted before anyone is told, so a waiter woken by its completion sees the counts.
        self.tally.count_outcome(&report);
        for c in batch.completions {
            let _ = c.send(report.clone());
        }
        let records = report.records;
        self.reporter.report(report);
        self.budget.release(batch.reserved);
        self.tally.finish_records(records);
    }
}

/// What a batch's requests left for its report.
#[derive(Default)]
struct Sending {
    /// Requests made.
    attempts: u32,
    /// `x-log-requestid` of the last answer.
    request_id: Option<String>,
    /// Size of the body as sent.
    compressed_bytes: usize,
    /// When the first request started.
    first_request: Option<Instant>,
}
