//! The producer's counters: what was refused, what is in flight, and how every accepted record
//! ended. Accepted records are counted by the accumulator's shards (under the lock they already
//! take); everything after that is counted here, with relaxed atomics, on the I/O threads.
//!
//! Every batch that reaches a final outcome passes through [`Tally::count_outcome`] and then
//! [`Tally::finish_records`] exactly once,
//! which is what makes "every accepted record ends in exactly one report" checkable:
//! `accepted = delivered + failed + pending`. `flush` and `close` wait here, on a condition
//! variable signalled by every settle, in slices of at most 50 ms and never past their timeout.
//! The most recent 10 000 failed reports are kept for `close`; the counts are exact.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::meters::Meters;
use super::report::{DeliveryReport, Outcome};

/// How many failed reports `close` can hand back.
const KEPT_FAILED_REPORTS: usize = 10_000;

/// Counters of one producer.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) delivered: AtomicU64,
    pub(crate) failed: AtomicU64,
    /// Records left in the spool at close, for the next producer.
    pub(crate) kept: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) invalid: AtomicU64,
    pub(crate) in_flight: AtomicU64,
    /// Records of the batches in `in_flight`.
    pub(crate) in_flight_records: AtomicU64,
    pub(crate) batches_delivered: AtomicU64,
    /// Batches (and their records) replayed from a spool an earlier producer left.
    pub(crate) replayed_batches: AtomicU64,
    pub(crate) replayed_records: AtomicU64,
    /// `failed` as the previous `flush_report` saw it.
    pub(crate) failed_at_last_flush: AtomicU64,
    /// Records at a final outcome (delivered, kept or failed).
    completed: AtomicU64,
    pub(crate) failures_by_code: Mutex<BTreeMap<String, u64>>,
    /// Per destination: requests, retries, outcomes (for the metrics).
    pub(crate) meters: Meters,
    failed_reports: Mutex<VecDeque<Arc<DeliveryReport>>>,
    idle: (Mutex<()>, Condvar),
}

impl Tally {
    /// Counts a batch's final outcome (before its waiters are told).
    pub(crate) fn count_outcome(&self, report: &Arc<DeliveryReport>) {
        let records = u64::from(report.records);
        self.meters.outcome(report);
        match &report.outcome {
            Outcome::Delivered => {
                self.delivered.fetch_add(records, Ordering::Relaxed);
                self.batches_delivered.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Kept { .. } => {
                self.kept.fetch_add(records, Ordering::Relaxed);
            }
            Outcome::Failed { code, .. } => {
                self.failed.fetch_add(records, Ordering::Relaxed);
                *self
                    .failures_by_code
                    .lock()
                    .entry(code.clone())
                    .or_default() += records;
                let mut failed = self.failed_reports.lock();
                if failed.len() >= KEPT_FAILED_REPORTS {
                    failed.pop_front();
                }
                failed.push_back(report.clone());
            }
        }
    }

    /// The batch's records are done (last, after its report is passed on): wakes whoever waits
    /// for the producer to be idle.
    pub(crate) fn finish_records(&self, records: u32) {
        self.completed
            .fetch_add(u64::from(records), Ordering::AcqRel);
        let _g = self.idle.0.lock();
        self.idle.1.notify_all();
    }

    /// Records accepted and not yet at a final outcome, given how many were accepted.
    pub(crate) fn pending(&self, accepted: impl Fn() -> u64) -> u64 {
        // Completions are read first: every completed record was accepted before, so the
        // difference never goes below zero.
        let completed = self.completed.load(Ordering::Acquire);
        accepted().saturating_sub(completed)
    }

    /// Waits up to `timeout` for nothing to be pending; returns what still is.
    pub(crate) fn wait_idle(&self, timeout: Duration, accepted: impl Fn() -> u64) -> u64 {
        self.wait_for(timeout, || self.pending(&accepted))
    }

    /// Waits up to `timeout` for `target` records to have reached a final outcome; returns how
    /// many short of it the count still is.
    pub(crate) fn wait_completed(&self, timeout: Duration, target: u64) -> u64 {
        self.wait_for(timeout, || {
            target.saturating_sub(self.completed.load(Ordering::Acquire))
        })
    }

    /// Waits up to `timeout` for `left()` to reach 0, woken by every batch that completes.
    fn wait_for(&self, timeout: Duration, left: impl Fn() -> u64) -> u64 {
        let deadline = Instant::now() + timeout;
        let mut guard = self.idle.0.lock();
        loop {
            let left_now = left();
            if left_now == 0 {
                return 0;
            }
            let slice_end = deadline.min(Instant::now() + Duration::from_millis(50));
            if self.idle.1.wait_until(&mut guard, slice_end).timed_out()
                && Instant::now() >= deadline
            {
                return left();
            }
        }
    }

    /// The failed reports kept (the most recent 10 000).
    pub(crate) fn failed_reports(&self) -> Vec<Arc<DeliveryReport>> {
        self.failed_reports.lock().iter().cloned().collect()
    }
}
