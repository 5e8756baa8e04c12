//! The memory budget and the batch buffer pool.
//!
//! # Budget
//!
//! The raw bytes of open and sealed batches plus the compressed bytes of batches in flight or
//! retrying never exceed `buffer_max_bytes`. An add reserves its record's bytes before the
//! record counts as accepted; a batch's reservation shrinks to its compressed size once
//! compressed and is released when the batch reaches its final outcome. To keep the shared
//! atomic off the common path, each accumulator shard reserves ahead in chunks (its `credit`,
//! at most `credit_chunk`), spent by the adds that go through it.
//!
//! When the budget is full an add either fails at once (`max_block_ms = 0`, the default) or
//! waits on a condition variable for a release, up to `max_block_ms`; closing wakes every
//! waiter. Nothing here drops a record: the caller is told, and counts the refusal.
//!
//! # Buffer pool
//!
//! Batch buffers are memory mappings of their own ([`BatchBuf`]). A sent batch's buffer is
//! kept for the next batch so that steady operation maps no memory and faults no pages in:
//! two normally, as many as the budget holds batches while it is over half full; the extras go
//! back when the last batch in flight completes ([`Budget::at_rest`]).
//!
//! Runs on the callers' threads (reserve, take) and the I/O threads (release, recycle); only
//! `reserve` with `max_block_ms > 0` blocks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::buffer::{self, BatchBuf};
use super::config::ProducerConfig;
use super::error::ProducerError;
use super::lifecycle::Lifecycle;

/// Bytes in use against `buffer_max_bytes`, and the buffers kept for reuse.
pub(crate) struct Budget {
    limit: usize,
    max_block_ms: u64,
    batch_max_bytes: usize,
    used: AtomicUsize,
    /// How much a shard reserves ahead at a time.
    pub(crate) credit_chunk: usize,
    blocked_waiters: AtomicUsize,
    space: (Mutex<()>, Condvar),
    pool: Mutex<Vec<BatchBuf>>,
}

impl Budget {
    pub(crate) fn new(config: &ProducerConfig, shard_count: usize) -> Budget {
        Budget {
            limit: config.buffer_max_bytes,
            max_block_ms: config.max_block_ms,
            batch_max_bytes: config.batch_max_bytes,
            used: AtomicUsize::new(0),
            credit_chunk: (config.buffer_max_bytes / (8 * shard_count)).min(64 * 1024),
            blocked_waiters: AtomicUsize::new(0),
            space: (Mutex::new(()), Condvar::new()),
            pool: Mutex::new(Vec::new()),
        }
    }

    /// Bytes reserved now (credits included).
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Reserves `n` bytes without waiting: from `credit` when it has enough, else a chunk from
    /// the shared budget (the rest becomes credit), else exactly `n`.
    // The credit test is inlined into every add; the shared budget is reached out of line.
    #[inline(always)]
    pub(crate) fn reserve_now(&self, credit: &mut usize, n: usize) -> bool {
        if *credit >= n {
            *credit -= n;
            return true;
        }
        self.reserve_now_shared(credit, n)
    }

    #[cold]
    #[inline(never)]
    fn reserve_now_shared(&self, credit: &mut usize, n: usize) -> bool {
        let chunk = n.max(self.credit_chunk);
        if self.try_reserve(chunk) {
            *credit += chunk - n;
            true
        } else {
            self.try_reserve(n)
        }
    }

    fn try_reserve(&self, n: usize) -> bool {
        self.reserve_or_used(n).is_ok()
    }

    /// Reserves `n` bytes if they fit; otherwise the bytes in use that did not leave room
    /// (what a `BufferFull` reports, so `used + needed > limit` always holds in it).
    fn reserve_or_used(&self, n: usize) -> Result<(), usize> {
        let limit = self.limit;
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                (u + n <= limit).then_some(u + n)
            })
            .map(drop)
    }

    /// Reserves `n` bytes, waiting up to `max_block_ms` for room (not past a close).
    pub(crate) fn reserve(&self, n: usize, lifecycle: &Lifecycle) -> Result<(), ProducerError> {
        let Err(used) = self.reserve_or_used(n) else {
            return Ok(());
        };
        let started = Instant::now();
        let full = |used: usize, waited: Duration| ProducerError::BufferFull {
            used,
            limit: self.limit,
            needed: n,
            waited_ms: waited.as_millis() as u64,
        };
        if self.max_block_ms == 0 {
            return Err(full(used, Duration::ZERO));
        }
        let deadline = started + Duration::from_millis(self.max_block_ms);
        self.blocked_waiters.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.space.0.lock();
        let result = loop {
            if self.try_reserve(n) {
                break Ok(());
            }
            if !lifecycle.is_running() {
                break Err(ProducerError::Closed);
            }
            if self.space.1.wait_until(&mut guard, deadline).timed_out() {
                break self
                    .reserve_or_used(n)
                    .map_err(|used| full(used, started.elapsed()));
            }
        };
        drop(guard);
        self.blocked_waiters.fetch_sub(1, Ordering::SeqCst);
        result
    }

    /// Reserves `n` bytes for a batch replayed from the spool, waiting as long as it takes
    /// (until the producer closes): replay feeds the spool's batches in as deliveries make
    /// room. A batch larger than the whole budget waits for an empty one, then takes it.
    pub(crate) fn reserve_replay(
        &self,
        n: usize,
        lifecycle: &Lifecycle,
    ) -> Result<(), ProducerError> {
        let mut guard = self.space.0.lock();
        self.blocked_waiters.fetch_add(1, Ordering::SeqCst);
        let result = loop {
            let fits = if n > self.limit {
                self.used
                    .compare_exchange(0, n, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            } else {
                self.try_reserve(n)
            };
            if fits {
                break Ok(());
            }
            if !lifecycle.is_running() {
                break Err(ProducerError::Closed);
            }
            self.space.1.wait_for(&mut guard, Duration::from_millis(50));
        };
        self.blocked_waiters.fetch_sub(1, Ordering::SeqCst);
        result
    }

    /// Gives `n` bytes back and wakes adds waiting for room.
    pub(crate) fn release(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
        if self.blocked_waiters.load(Ordering::SeqCst) > 0 {
            self.wake_waiters();
        }
    }

    /// Wakes every add waiting for room (on release, and on close so they fail at once).
    pub(crate) fn wake_waiters(&self) {
        let _g = self.space.0.lock();
        self.space.1.notify_all();
    }

    /// A buffer for a new batch: a kept one if there is one. Otherwise the default
    /// destination's batch is mapped at its full limit at once (untouched pages cost no memory
    /// and it never grows); a batch for another destination starts small on the heap and grows,
    /// since there may be 100 000 of them open with a log or two each.
    pub(crate) fn take_buffer(&self, default_destination: bool) -> BatchBuf {
        if let Some(buf) = self.pool.lock().pop() {
            return buf;
        }
        if default_destination {
            BatchBuf::with_capacity(self.batch_max_bytes + 1024)
        } else {
            BatchBuf::new()
        }
    }

    /// Keeps a sent batch's buffer for reuse: two at most normally, so an idle or lightly
    /// loaded producer holds little. While the budget is over half used (sustained overload,
    /// the budget taken by batches waiting to be compressed and sent), up to as many as the
    /// budget holds batches: that memory is the user's budget in use anyway, and a fresh buffer
    /// per batch would fault every page of it in again (a tenth of the cost of a log).
    pub(crate) fn recycle(&self, mut buf: BatchBuf) {
        if buf.is_file() {
            // A batch file's mapping: it goes with its file (dropped here only when the
            // batch had none), never to another batch.
            return;
        }
        // Only full-size buffers are worth keeping (a small keyed batch's is not).
        let full = self.batch_max_bytes.min(buffer::MAP_THRESHOLD);
        if (full..=2 * self.batch_max_bytes + 4096).contains(&buf.capacity()) {
            let pressed = self.used() > self.limit / 2;
            let keep = if pressed {
                (self.limit / self.batch_max_bytes.max(1)).max(2)
            } else {
                2
            };
            let mut pool = self.pool.lock();
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
            let mut pool = self.pool.lock();
            let keep = pool.len().min(2);
            pool.split_off(keep)
        };
        drop(extra);
        release_free_memory(true);
    }

    #[cfg(test)]
    fn pooled(&self) -> usize {
        self.pool.lock().len()
    }
}

/// Hands freed heap memory back to the system. Batch buffers are mappings of their own and go
/// back when dropped ([`BatchBuf`]); what a burst leaves in glibc's heaps besides them
/// (compressed bodies, HTTP buffers, records copied out of full batches) would otherwise keep
/// the process near its peak. Trimming walks the heaps' free lists, so while buffers are being
/// dropped it runs at most every 100 ms, and once more, `at_rest`, when the last batch in
/// flight completes (at most every 10 ms).
fn release_free_memory(at_rest: bool) {
    // Not under Miri, which cannot call into glibc (`scripts/miri.sh`).
    #[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
    {
        use std::sync::atomic::AtomicU64;
        use std::time::SystemTime;

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
    #[cfg(not(all(target_os = "linux", target_env = "gnu", not(miri))))]
    let _ = at_rest;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(buffer: usize, batch: usize, max_block_ms: u64) -> Budget {
        let config = ProducerConfig {
            buffer_max_bytes: buffer,
            batch_max_bytes: batch,
            max_block_ms,
            ..ProducerConfig::default()
        };
        Budget::new(&config, 2)
    }

    #[test]
    fn the_buffer_pool_grows_only_under_pressure_and_shrinks_at_rest() {
        let b = budget(8 << 20, 1 << 20, 0);
        let buffer = || BatchBuf::with_capacity((1 << 20) + 1024);
        for _ in 0..6 {
            b.recycle(buffer());
        }
        assert_eq!(b.pooled(), 2, "two kept normally");
        // Over half the budget in use: as many as the budget holds batches.
        b.used.fetch_add(5 << 20, Ordering::Relaxed);
        for _ in 0..12 {
            b.recycle(buffer());
        }
        assert_eq!(b.pooled(), 8);
        // Oversized buffers (a batch grown by a huge record) are never kept.
        b.pool.lock().clear();
        b.recycle(BatchBuf::with_capacity(8 << 20));
        assert_eq!(b.pooled(), 0);
        for _ in 0..8 {
            b.recycle(buffer());
        }
        b.used.fetch_sub(5 << 20, Ordering::Relaxed);
        b.at_rest();
        assert_eq!(b.pooled(), 2, "the extra ones are given back");
        let reused = b.take_buffer(false);
        assert!(reused.is_empty() && reused.capacity() >= 1 << 20);
    }

    #[test]
    fn credit_is_taken_in_chunks_and_spent_locally() {
        let b = budget(1 << 20, 1 << 16, 0);
        let mut credit = 0;
        assert!(b.reserve_now(&mut credit, 100));
        assert_eq!(b.used(), b.credit_chunk, "a whole chunk is reserved");
        assert_eq!(credit, b.credit_chunk - 100);
        assert!(b.reserve_now(&mut credit, 100));
        assert_eq!(
            b.used(),
            b.credit_chunk,
            "the second add spends credit only"
        );
    }

    #[test]
    fn a_full_budget_fails_at_once_or_after_max_block_ms() {
        let lifecycle = Lifecycle::new();
        let b = budget(1000, 500, 0);
        b.reserve(900, &lifecycle).unwrap();
        match b.reserve(200, &lifecycle) {
            Err(ProducerError::BufferFull {
                used: 900,
                limit: 1000,
                needed: 200,
                waited_ms: 0,
            }) => {}
            other => panic!("{other:?}"),
        }
        let b = budget(1000, 500, 50);
        b.reserve(900, &lifecycle).unwrap();
        let started = Instant::now();
        assert!(matches!(
            b.reserve(200, &lifecycle),
            Err(ProducerError::BufferFull { .. })
        ));
        assert!(started.elapsed() >= Duration::from_millis(50));
    }

    #[test]
    fn a_release_wakes_a_blocked_reserve() {
        let lifecycle = std::sync::Arc::new(Lifecycle::new());
        let b = std::sync::Arc::new(budget(1000, 500, 10_000));
        b.reserve(900, &lifecycle).unwrap();
        let (b2, l2) = (b.clone(), lifecycle.clone());
        let waiter = std::thread::spawn(move || b2.reserve(200, &l2));
        std::thread::sleep(Duration::from_millis(50));
        b.release(500);
        waiter.join().unwrap().unwrap();
        assert_eq!(b.used(), 600);
    }
}
