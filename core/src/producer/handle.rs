//! The handle applications hold: [`Producer`] (open, send, flush, close, stats, metrics) and
//! what its calls answer ([`FlushReport`], [`CloseReport`]). It wires the parts the module's
//! face lists (routing, accumulator, budget, deadlines, delivery, spool, reporter) and holds
//! them in `Inner`, shared with the deadlines task.
//!
//! Runs on the caller's thread (send, flush, close) and, through `Inner`, on the deadlines
//! task; it blocks only where the options say (`max_block_ms`, flush and close timeouts).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::accumulator::{Accumulator, AfterAdd, SealedBatch};
use super::budget::Budget;
use super::config::ProducerConfig;
use super::deadlines::{Deadline, Deadlines, DeadlinesOwner};
use super::deliver::Delivery;
use super::error::ProducerError;
use super::lifecycle::Lifecycle;
use super::lifecycle::State;
use super::report::{DeliveryReport, Stats};
use super::reporter::ReportCallback;
use super::reporter::Reporter;
use super::routing::{Destination, Router};
use super::spool::Spooling;
use super::tally::Tally;
use super::transport::{CredentialSource, CredentialsProvider, Transport};

/// What a flush left: see [`Producer::flush_report`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlushReport {
    /// Records accepted and not yet at a final outcome when the flush returned.
    pub pending: u64,
    /// Records that failed for good since the previous `flush_report` (or since the start).
    pub failed: u64,
}

impl FlushReport {
    /// Records not delivered: still pending, or failed since the previous flush. 0 means
    /// everything accepted before the flush (and after the previous one) was delivered.
    pub fn undelivered(&self) -> u64 {
        self.pending + self.failed
    }
}

/// What `close` could not deliver.
#[derive(Clone, Debug, Default)]
pub struct CloseReport {
    /// Records accepted and neither delivered nor kept: failed for good, or (without a spool)
    /// abandoned at the timeout. 0 means nothing was lost.
    pub undelivered: u64,
    /// Records not delivered before the timeout and left in the spool: the next producer on
    /// `spool_dir` sends them (see [`Outcome::Kept`](crate::producer::Outcome::Kept)).
    /// Whatever `spool_sync` says, the close syncs what it leaves there; `kept_not_durable`
    /// counts those of them that sync could not make durable.
    pub kept: u64,
    /// Of the `kept` records, those not known to be durable: the disk failed a sync of the
    /// files that hold them, so they survive the process but a power loss could lose them.
    /// 0 means every kept record is safely on disk.
    pub kept_not_durable: u64,
    /// The reports of the batches that failed (the most recent 10 000).
    pub failed: Vec<Arc<DeliveryReport>>,
    /// Records this producer sent while no copy of them in the spool was durable (the disk
    /// failed its syncs; `Stats::spool_not_durable`): delivered, but a power loss before
    /// their delivery would have lost them. 0 without a spool or on a healthy disk.
    pub not_durable: u64,
}

/// The parts of a producer, shared with its deadlines task. Delivery holds what it needs of them
/// itself; nothing below calls back up here.
pub(super) struct Inner {
    pub(super) config: ProducerConfig,
    pub(super) router: Router,
    pub(super) accumulator: Accumulator,
    pub(super) deadlines: Deadlines,
    pub(super) delivery: Arc<Delivery>,
    pub(super) runtime: tokio::runtime::Handle,
    pub(super) owner_pid: u32,
    /// The thread sending again what an earlier producer left in the spool, while it runs.
    pub(super) replay: parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Inner {
    pub(super) fn budget(&self) -> &Budget {
        &self.delivery.budget
    }

    pub(super) fn tally(&self) -> &Tally {
        &self.delivery.tally
    }

    /// After the shard is unlocked: arms the new batch's deadline, sends what sealed.
    #[inline]
    pub(super) fn after_add(&self, dest: &Option<Arc<Destination>>, after: AfterAdd) {
        if let Some((at, batch_id)) = after.deadline {
            self.deadlines.arm(after.shard, dest, at, batch_id);
        }
        if !after.sealed.is_empty() {
            self.dispatch(after.sealed);
        }
    }

    pub(super) fn dispatch(&self, sealed: Vec<SealedBatch>) {
        for batch in sealed {
            self.runtime.spawn(self.delivery.clone().deliver(batch));
        }
    }

    fn pending(&self) -> u64 {
        self.tally().pending(|| self.accumulator.accepted())
    }

    fn wait_idle(&self, timeout: Duration) -> u64 {
        self.tally()
            .wait_idle(timeout, || self.accumulator.accepted())
    }
}

impl DeadlinesOwner for Inner {
    fn deadlines(&self) -> &Deadlines {
        &self.deadlines
    }

    fn lifecycle(&self) -> &Lifecycle {
        &self.delivery.lifecycle
    }

    fn expire(&self, due: Deadline) {
        let dest = due.dest.as_ref().map(|d| &d.0);
        if let Some(sealed) = self.accumulator.expire(due.shard, due.batch_id, dest) {
            self.dispatch(vec![sealed]);
        }
    }
}

/// A producer. Cheap to share by reference across threads; dropping it closes it.
pub struct Producer {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("config", &self.inner.config)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

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
        // Settings are resolved once, here: keys from the environment when none were given
        // (and no provider), then validation, then where each request's credentials come from.
        let config = if provider.is_none() {
            config.with_environment_credentials()
        } else {
            config
        };
        config.validate()?;
        let runtime = super::engine::handle()?;
        let credentials = CredentialSource::resolve(&config, provider, &runtime)?;
        let transport = Transport::new(&config, credentials)?;
        let source = config
            .source
            .clone()
            .unwrap_or_else(|| super::transport::local_address(&transport.endpoint_host));
        let router = Router::new(&config, source);
        let shard_count = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, 16)
            .next_power_of_two();
        let pack_seed = format!(
            "{}-{}-{:?}-{}",
            config.logstore,
            super::engine::process_id(),
            SystemTime::now(),
            fastrand::u64(..)
        );
        let (spool, replayed) = match &config.spool_dir {
            None => (Spooling::default(), None),
            Some(dir) => {
                let (spool, replay) = Spooling::open(
                    std::path::Path::new(dir),
                    config.spool_slots,
                    shard_count,
                    usize::try_from(config.spool_max_bytes).unwrap_or(usize::MAX),
                    config.buffer_max_bytes.saturating_mul(2),
                    config.spool_sync,
                )?;
                (spool, Some(replay))
            }
        };
        let accumulator = Accumulator::new(
            &config,
            router.default.clone(),
            shard_count,
            &pack_seed,
            spool.clone(),
        );
        let delivery = Arc::new(Delivery::new(
            &config,
            transport,
            Arc::new(Budget::new(&config, shard_count)),
            Arc::new(Tally::default()),
            Arc::new(Lifecycle::new()),
            Reporter::new(on_reports),
            spool,
        ));
        let inner = Arc::new(Inner {
            config,
            router,
            accumulator,
            deadlines: Deadlines::default(),
            delivery,
            runtime: runtime.clone(),
            owner_pid: super::engine::process_id(),
            replay: parking_lot::Mutex::new(None),
        });
        runtime.spawn(super::deadlines::run(Arc::downgrade(&inner)));
        if inner.accumulator.spooling().is_on() {
            runtime.spawn(Inner::watch_orphans(Arc::downgrade(&inner)));
        }
        let producer = Producer { inner };
        if let Some(left) = replayed {
            if left.is_empty() {
                left.finish_empty();
            } else {
                // Off the constructor: a spool larger than the buffer is fed in as deliveries
                // make room, which takes as long as the endpoint does (all of
                // `delivery_timeout_ms` while it cannot be reached).
                let inner = producer.inner.clone();
                let thread = crate::threads::spawn("loghose-replay", move || inner.replay(left))
                    .map_err(|e| {
                        ProducerError::Engine(format!("cannot start the replay thread: {e}"))
                    })?;
                *producer.inner.replay.lock() = Some(thread);
            }
        }
        Ok(producer)
    }

    /// Waits up to `timeout` for the replay of an earlier producer's spool (if one runs) to
    /// have queued every batch. Returns the time left, and whether the replay is done.
    fn wait_replay(&self, timeout: Duration) -> (Duration, bool) {
        let started = Instant::now();
        loop {
            // The lock is held only to look: other threads' flushes (a `flush(0)` beside a
            // long one) wait for nothing but their own timeouts.
            let done = {
                let mut slot = self.inner.replay.lock();
                match slot.as_ref() {
                    None => true,
                    Some(thread) if thread.is_finished() => {
                        if let Some(thread) = slot.take() {
                            let _ = thread.join();
                        }
                        true
                    }
                    Some(_) => false,
                }
            };
            if done || started.elapsed() >= timeout {
                return (timeout.saturating_sub(started.elapsed()), done);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// [`wait_replay`](Self::wait_replay), then stops a replay not done by then (what it did
    /// not queue stays in the spool for the next producer): the first step of `close`.
    fn finish_replay(&self, timeout: Duration) -> Duration {
        let (left, done) = self.wait_replay(timeout);
        if !done {
            // It waits for room while the producer runs, checking every 50 ms.
            self.inner.delivery.lifecycle.advance(State::Closing);
            if let Some(thread) = self.inner.replay.lock().take() {
                let _ = thread.join();
            }
        }
        left
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &ProducerConfig {
        &self.inner.config
    }

    /// Seals every open batch and waits up to `timeout` for all accepted records to reach a
    /// final outcome; returns how many are still pending. In a process that inherited the
    /// producer through `fork`, returns at once with what it held (it cannot send them).
    pub fn flush(&self, timeout: Duration) -> u64 {
        let inner = &*self.inner;
        if self.is_inherited() {
            return inner.pending();
        }
        let (timeout, replayed) = self.wait_replay(timeout);
        inner.accumulator.seal_all(|sealed| inner.dispatch(sealed));
        let pending = inner.wait_idle(timeout);
        if replayed {
            pending
        } else {
            // Batches of the spool not yet queued are not delivered either.
            pending.max(1)
        }
    }

    /// Seals every open batch and waits up to `timeout` until as many records have reached a
    /// final outcome as had been accepted when it was called; returns how many short of that
    /// it stopped. Unlike [`flush`](Self::flush) it does not wait for records other threads
    /// add meanwhile (what a signal handler needs). Batches complete out of order, so a later
    /// batch finishing first can end the wait before an earlier one: a bound, not a promise.
    pub fn flush_accepted(&self, timeout: Duration) -> u64 {
        let mark = self.seal();
        self.wait_settled(mark, timeout)
    }

    /// Seals every open batch (they are sent now) and returns how many records had been
    /// accepted: the mark [`wait_settled`](Self::wait_settled) waits for. In a process that
    /// inherited the producer, seals nothing.
    pub fn seal(&self) -> u64 {
        let inner = &*self.inner;
        let mark = inner.accumulator.accepted();
        if !self.is_inherited() {
            inner.accumulator.seal_all(|sealed| inner.dispatch(sealed));
        }
        mark
    }

    /// Waits up to `timeout` until `mark` records (a [`seal`](Self::seal)'s answer) have
    /// reached a final outcome; returns how many short of it the count still is.
    pub fn wait_settled(&self, mark: u64, timeout: Duration) -> u64 {
        if self.is_inherited() {
            return self.inner.pending();
        }
        self.inner.tally().wait_completed(timeout, mark)
    }

    /// [`flush`](Self::flush), and what failed for good since the previous `flush_report`: a
    /// caller can tell "all delivered" (`undelivered() == 0`) from "gave up on some".
    pub fn flush_report(&self, timeout: Duration) -> FlushReport {
        let pending = self.flush(timeout);
        let tally = self.inner.tally();
        let failed_now = tally.failed.load(Ordering::Relaxed);
        let failed_before = tally
            .failed_at_last_flush
            .fetch_max(failed_now, Ordering::Relaxed);
        FlushReport {
            pending,
            failed: failed_now.saturating_sub(failed_before),
        }
    }

    /// Refuses new records, sends what is open, waits up to `timeout`, then abandons what is
    /// left (reported as failed with `ProducerClosed`). Idempotent. In a process that
    /// inherited the producer through `fork`, only refuses new records: its records stay with
    /// the parent, which delivers them.
    pub fn close(&self, timeout: Duration) -> CloseReport {
        let inner = &*self.inner;
        if self.is_inherited() {
            inner.delivery.lifecycle.advance(State::Closing);
            return CloseReport::default();
        }
        let delivery = &inner.delivery;
        let timeout = self.finish_replay(timeout);
        let started = Instant::now();
        delivery.lifecycle.advance(State::Closing);
        delivery.budget.wake_waiters();
        inner.accumulator.seal_all(|sealed| inner.dispatch(sealed));
        let mut pending = inner.wait_idle(timeout);
        if pending > 0 {
            delivery.lifecycle.advance(State::Aborted);
            pending = inner.wait_idle(Duration::from_secs(2));
        }
        delivery.lifecycle.advance(State::Closed);
        inner.accumulator.return_credits(&delivery.budget);
        let leaves_records = pending > 0 || delivery.tally.kept.load(Ordering::Acquire) > 0;
        let kept_durably = inner
            .accumulator
            .spooling()
            .producer_closed(pending == 0, leaves_records);
        // The reporter passes on the last reports; bounded by what is left of the timeout.
        delivery.reporter.finish(
            timeout
                .saturating_sub(started.elapsed())
                .max(Duration::from_millis(100)),
        );
        // Each record counted once, from the final counters (the reports kept are only the
        // most recent 10 000): a record settles into exactly one of them, each is read once,
        // and what had not settled when its counter was read is left over as unsettled (batches
        // that outlived the abort's grace still settle afterwards, on a slow machine).
        let tally = &delivery.tally;
        let failed = tally.failed.load(Ordering::Acquire);
        let kept = tally.kept.load(Ordering::Acquire);
        let delivered = tally.delivered.load(Ordering::Acquire);
        let unsettled = inner
            .accumulator
            .accepted()
            .saturating_sub(failed + kept + delivered);
        // Unsettled records are still in the spool, when there is one; without, they are lost.
        let spooled = inner.accumulator.spooling().is_on();
        let kept = kept + if spooled { unsettled } else { 0 };
        CloseReport {
            undelivered: failed + if spooled { 0 } else { unsettled },
            kept,
            kept_not_durable: if kept_durably { 0 } else { kept },
            failed: tally.failed_reports(),
            not_durable: inner.accumulator.spooling().health().not_durable,
        }
    }

    /// Forgets this producer without closing it or freeing it (what dropping an inherited
    /// producer does anyway).
    pub fn abandon(self) {
        std::mem::forget(self);
    }

    /// Refuses a producer inherited through `fork` (its I/O threads live in the parent) with
    /// [`ProducerError::Inherited`]. Every add checks it; bindings check it before flushes.
    #[inline]
    pub fn ensure_owned(&self) -> Result<(), ProducerError> {
        if self.is_inherited() {
            Err(ProducerError::Inherited)
        } else {
            Ok(())
        }
    }

    /// The process that built this producer.
    pub fn owner_pid(&self) -> u32 {
        self.inner.owner_pid
    }

    /// Whether this producer was built in another process (inherited through `fork`): its
    /// I/O threads live in the parent, so it can neither send nor close here.
    #[inline]
    pub fn is_inherited(&self) -> bool {
        super::engine::process_id() != self.inner.owner_pid
    }

    /// Records accepted and not yet at a final outcome (cheaper than `stats`).
    pub fn pending(&self) -> u64 {
        self.inner.pending()
    }

    /// Records accepted so far (cheaper than `stats`): with [`pending`](Self::pending), a
    /// sign of life a front's exit timer watches.
    pub fn accepted(&self) -> u64 {
        self.inner.accumulator.accepted()
    }

    /// Where the producer is in its life.
    pub fn state(&self) -> State {
        self.inner.delivery.lifecycle.state()
    }

    /// Whether `close` was called.
    pub fn is_closed(&self) -> bool {
        !self.inner.delivery.lifecycle.is_running()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let inner = &*self.inner;
        let tally = inner.tally();
        let health = inner.accumulator.spooling().health();
        Stats {
            accepted: inner.accumulator.accepted(),
            delivered: tally.delivered.load(Ordering::Relaxed),
            failed: tally.failed.load(Ordering::Relaxed),
            kept: tally.kept.load(Ordering::Relaxed),
            retried: tally.retried.load(Ordering::Relaxed),
            dropped: tally.dropped.load(Ordering::Relaxed),
            invalid: tally.invalid.load(Ordering::Relaxed),
            queued_bytes: inner
                .budget()
                .used()
                .saturating_sub(inner.accumulator.credits()) as u64,
            queued_records: inner.pending(),
            in_flight_batches: tally.in_flight.load(Ordering::Relaxed),
            in_flight_records: tally.in_flight_records.load(Ordering::Relaxed),
            batches_delivered: tally.batches_delivered.load(Ordering::Relaxed),
            failures_by_code: tally.failures_by_code.lock().clone(),
            callback_errors: inner
                .delivery
                .reporter
                .callback_errors
                .load(Ordering::Relaxed),
            replayed_batches: tally.replayed_batches.load(Ordering::Relaxed),
            replayed_records: tally.replayed_records.load(Ordering::Relaxed),
            spool_corrupt_entries: inner.accumulator.spooling().corrupt_entries(),
            spool_bytes: inner.accumulator.spooling().used_bytes(),
            spool_sync_failures: health.sync_failures,
            spool_not_durable: health.not_durable,
            spool_degraded: health.degraded,
            send_limits: inner.delivery.gates.views(),
        }
    }

    /// The per-destination meters, by name (what [`metrics`](crate::metrics) reads for its
    /// snapshot).
    pub(crate) fn destination_meters(
        &self,
    ) -> Vec<(
        super::meters::DestinationName,
        super::meters::DestinationMeters,
    )> {
        self.inner.tally().meters.snapshot()
    }

    /// How many data files the spool holds (0 without one).
    pub(crate) fn spool_files(&self) -> u64 {
        self.inner.accumulator.spooling().data_files()
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        if self.is_inherited() {
            // Inherited through fork: the I/O threads are the parent's, and the locks its
            // parts hold may have been held by them at the fork. Nothing is closed or freed:
            // the extra reference keeps every part alive for the rest of the process.
            std::mem::forget(self.inner.clone());
            return;
        }
        if !self.is_closed() || self.pending() > 0 {
            self.close(Duration::from_millis(self.inner.config.drop_timeout_ms));
        } else {
            self.inner.delivery.lifecycle.advance(State::Closed);
        }
    }
}
