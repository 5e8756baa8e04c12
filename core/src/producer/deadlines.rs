//! Batch deadlines: when each open batch's `linger_ms` ends. One timer heap per producer
//! ([`Deadlines`]) serves every open batch.
//!
//! A batch's deadline is armed when its first record opens it (after the shard lock is
//! released) and never moved; when it passes, the batch is sealed if it is still open (a batch
//! sealed earlier, by size or count, leaves a stale entry that finds nothing). One task on the
//! I/O runtime sleeps until the earliest deadline, woken early only when an earlier one is
//! armed, so 100 000 open batches cost one heap, not 100 000 timers. The task holds the
//! producer weakly and ends when it is dropped or aborted.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::lifecycle::{Lifecycle, State};
use super::routing::Destination;

/// A batch's linger deadline.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Deadline {
    pub(crate) at: Instant,
    pub(crate) batch_id: u64,
    pub(crate) shard: usize,
    /// `None`: the producer's own destination.
    pub(crate) dest: Option<DestinationKey>,
}

/// A destination with an arbitrary total order, for the heap.
#[derive(PartialEq, Eq)]
pub(crate) struct DestinationKey(pub(crate) Arc<Destination>);

impl PartialOrd for DestinationKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DestinationKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        Arc::as_ptr(&self.0).cmp(&Arc::as_ptr(&other.0))
    }
}

/// The deadlines of a producer's open batches.
#[derive(Default)]
pub(crate) struct Deadlines {
    heap: Mutex<BinaryHeap<Reverse<Deadline>>>,
    earlier: tokio::sync::Notify,
}

/// What the deadlines task needs of its owner.
pub(crate) trait DeadlinesOwner: Send + Sync + 'static {
    /// The deadlines.
    fn deadlines(&self) -> &Deadlines;
    /// The owner's lifecycle (the task ends once it is aborted or closed).
    fn lifecycle(&self) -> &Lifecycle;
    /// Seals the batch of a passed deadline, if it is still open.
    fn expire(&self, due: Deadline);
}

impl Deadlines {
    /// Arms a deadline; wakes the task if it is now the earliest.
    pub(crate) fn arm(
        &self,
        shard: usize,
        dest: &Option<Arc<Destination>>,
        at: Instant,
        batch_id: u64,
    ) {
        let entry = Deadline {
            at,
            batch_id,
            shard,
            dest: dest.clone().map(DestinationKey),
        };
        let mut heap = self.heap.lock();
        let earliest = heap.peek().is_none_or(|Reverse(top)| at < top.at);
        heap.push(Reverse(entry));
        drop(heap);
        if earliest {
            self.earlier.notify_one();
        }
    }

    /// The deadlines that passed by `now`, and the next one.
    fn due(&self, now: Instant) -> (Vec<Deadline>, Option<Instant>) {
        let mut heap = self.heap.lock();
        let mut due = Vec::new();
        while heap.peek().is_some_and(|Reverse(d)| d.at <= now) {
            if let Some(Reverse(d)) = heap.pop() {
                due.push(d);
            }
        }
        (due, heap.peek().map(|Reverse(d)| d.at))
    }
}

/// The deadlines task: seals batches as their deadlines pass, until the owner is gone or aborted.
pub(crate) async fn run<T: DeadlinesOwner>(owner: Weak<T>) {
    loop {
        let Some(owner) = owner.upgrade() else { return };
        let now = Instant::now();
        let (due, next) = owner.deadlines().due(now);
        for d in due {
            owner.expire(d);
        }
        let sleep = tokio::time::sleep_until(tokio::time::Instant::from_std(
            next.unwrap_or(now + Duration::from_secs(3600)),
        ));
        tokio::select! {
            _ = sleep => {}
            _ = owner.deadlines().earlier.notified() => {}
            _ = owner.lifecycle().reached(State::Aborted) => return,
        }
    }
}
