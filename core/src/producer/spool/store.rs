//! The store: one producer's spool — its slot directory, segments, batch files, preparer and
//! sync threads — and what it does at each point of a batch's life (see the module's face,
//! `spool`, for the layout, recovery and durability it keeps). The parts live beside it:
//! `state` (the plain data every part shares), `segment` (entries), `file_pool` (batch
//! files), `prepare` (files made ahead), `recovery` (scans), `faults` (failed syncs), `disk`
//! (the durability seam), `files` (the error and how files are made).
//!
//! Runs on whichever thread calls: adding threads, the I/O runtime, the timer and preparer
//! threads, the opening thread; its state is behind short locks.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::producer::config::SpoolSync;
use crate::producer::routing::Destination;

use super::batch_file::BatchFile;
use super::disk::{self, DirChanges};
use super::faults::Faults;
use super::files::SpoolError;
use super::lock::{self, DirLock, Held};
use super::prepare::{PrepSignal, Preparer};
use super::recovery::{drop_copies_of_what_is_still_there, scan_dir, Leftover, Recovered};
use super::replay_ledger::LedgerWriter;
use super::state::{
    Committing, FilePool, PendingMarks, State, Writer, COMMIT_GATHER, COMMIT_GROUP,
};

/// The segment size for a spool of `max_bytes` written by `shards` writers: so that every
/// shard's open segment together take at most a quarter of it; 64 to 256 KiB. Small
/// segments are settled soon after their batches are delivered, usually before the kernel
/// would write them back to disk, and the ones kept mapped for reuse cost little memory (the
/// default destination's records go to batch files; segments hold compressed bodies and the
/// records of other destinations).
pub(super) fn segment_bytes_for(max_bytes: usize, shards: usize) -> usize {
    (max_bytes / (4 * shards.max(1))).clamp(64 << 10, 256 << 10) & !4095
}

/// A batch's place in the spool: its batch file, or the segments its entries are in and
/// whether its `Open` entry is written.
#[derive(Debug, Default)]
pub(crate) struct SpoolMark {
    pub(super) opened: bool,
    pub(super) segments: Vec<u64>,
    pub(super) file: Option<BatchFile>,
    /// `FilePool::ticks` when the batch file was taken. Still the same at compression: no
    /// sync made the file's records durable, so none is needed before the file is reused.
    pub(super) file_tick: u64,
    /// The batch's `Open` entry as written (segment batches): what a copy of the batch on a
    /// fresh file begins with when a sync failed.
    pub(super) open: Option<Vec<u8>>,
    /// Its copy in the spool could not be made durable (the disk failed its syncs).
    pub(crate) not_durable: bool,
    /// Its batch file waits for its body's commit (see `Committing`): told when it settles.
    pub(super) waits_commit: bool,
}

impl SpoolMark {
    /// Whether the batch is written in a batch file of its own.
    #[inline]
    pub(crate) fn in_file(&self) -> bool {
        self.file.is_some()
    }
}

/// Where a batch's entries go in the spool: its shard's segment, its number, and the
/// destination and group tags its `Open` entry names.
#[derive(Clone, Copy)]
pub(crate) struct BatchPlace<'a> {
    pub(crate) shard: usize,
    pub(crate) batch: u64,
    pub(crate) dest: &'a Destination,
    pub(crate) tags: &'a [u8],
}

/// The spool of one producer.
pub(crate) struct Spool {
    pub(super) dir: PathBuf,
    /// Its slot's lock: let go by a close that left nothing behind, else when the spool goes.
    pub(super) dir_lock: Mutex<Option<DirLock>>,
    /// This producer's run number: larger than every run found in the directory.
    pub(super) run: u64,
    pub(super) sync: SpoolSync,
    pub(super) segment_bytes: usize,
    pub(super) max_bytes: usize,
    /// At most this many settled segments are kept for reuse (see [`Spool::open`]).
    pub(super) keep_segments: usize,
    /// Bytes of mappings kept for reuse at most (segments, batch files' data).
    pub(super) keep_bytes: usize,
    pub(super) used: Arc<AtomicUsize>,
    /// What the disk held when it last ran out of space (`usize::MAX`: no shortage seen since
    /// a segment was last settled); admission treats it as a lower `max_bytes`.
    pub(super) disk_room: Arc<AtomicUsize>,
    pub(super) next_seq: AtomicU64,
    pub(super) writers: Vec<Mutex<Option<Writer>>>,
    /// Shared with the preparer thread (which holds nothing else of the spool, so the
    /// directory's lock goes with the producer however it goes).
    pub(super) state: Arc<Mutex<State>>,
    pub(super) room: Condvar,
    pub(super) room_lock: Mutex<()>,
    /// Wakes the preparer thread when a settled segment needs clearing.
    pub(super) prepare: Arc<PrepSignal>,
    /// The preparer thread, joined by `close`.
    pub(super) preparer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Entries skipped at recovery because their checksum failed.
    pub(crate) corrupt_entries: AtomicU64,
    /// Batch files, once the producer enabled them.
    pub(super) files: Arc<std::sync::OnceLock<FilePool>>,
    /// Batch files waiting for their bodies to be synced (`interval`).
    pub(super) committing: Arc<Committing>,
    /// Files made or removed in `dir` since its entries were last synced.
    pub(super) dir_changes: Arc<DirChanges>,
    /// Marks of settled batches not yet synced (`batch`, `interval`).
    pub(super) marks: Mutex<PendingMarks>,
    /// Syncs that failed, the files never trusted again, what is not durable.
    pub(super) faults: Arc<Faults>,
}

/// What earlier producers left to send again: this producer's slot first, then each
/// orphan's. Handed to the producer's replay thread ([`Replay::run`]).
pub(crate) struct Replay {
    pub(super) spool: Arc<Spool>,
    pub(super) leftovers: Vec<Leftover>,
}

/// What the producer made of one recovered batch.
pub(crate) enum Requeue<T> {
    /// Spooled again under this producer, ready to send: named in the replay ledger first,
    /// then dispatched.
    Queued(T),
    /// It could not be spooled again (the disk failed): it stays in the old files, which are
    /// then kept for the next producer (said once).
    Failed,
    /// The producer stopped (closed, or no room came in its buffer): what is left stays.
    Stopped,
}

impl Replay {
    /// Whether nothing is to be sent again.
    pub(crate) fn is_empty(&self) -> bool {
        self.leftovers.iter().all(|l| l.recovered.is_empty())
    }

    /// Nothing to send: the files left are removed (and the orphans let go).
    pub(crate) fn finish_empty(self) {
        for leftover in &self.leftovers {
            self.spool.remove_old(leftover);
        }
    }

    /// Sends every batch again, directory by directory: each decoded (one at a time, so a
    /// spool larger than memory replays), handed to `requeue`, named in the directory's replay
    /// ledger (at once; for a power loss, in groups once their copies are synced), then to
    /// `dispatch`. A directory whose batches were all spooled again has its old files deleted.
    /// False when the producer stopped (`running`) meanwhile.
    pub(crate) fn run<T>(
        self,
        running: impl Fn() -> bool,
        mut requeue: impl FnMut(Recovered) -> Requeue<T>,
        mut dispatch: impl FnMut(T),
    ) -> bool {
        let Replay { spool, leftovers } = self;
        // Named in the ledger at once without syncing (`none`), else in groups, as each
        // group costs a sync of the new files.
        let group = if spool.syncs() { 64 } else { 1 };
        for mut leftover in leftovers {
            let mut complete = true;
            let mut noted = Vec::new();
            for mut recovered in std::mem::take(&mut leftover.recovered) {
                if !running() {
                    complete = false;
                    break;
                }
                recovered.decode(&spool.corrupt_entries);
                if recovered.records.is_empty() {
                    continue;
                }
                let origin = recovered.origin;
                let batch = match requeue(recovered) {
                    Requeue::Queued(batch) => batch,
                    Requeue::Failed => {
                        spool.faults.copy_failed(&spool.dir);
                        complete = false;
                        continue;
                    }
                    Requeue::Stopped => {
                        complete = false;
                        break;
                    }
                };
                // Named before it is sent: at once, for a kill; for good (synced) in groups,
                // for a power loss. Not written (the disk failed): the next producer may send
                // these again.
                let _ = spool.note_replayed_now(&mut leftover, origin);
                noted.push(origin);
                if noted.len() >= group {
                    let _ = spool.note_replayed(&mut leftover, &noted);
                    noted.clear();
                }
                dispatch(batch);
            }
            let _ = spool.note_replayed(&mut leftover, &noted);
            if complete {
                spool.remove_old(&leftover);
            }
            if !running() {
                return false;
            }
        }
        true
    }
}

impl Spool {
    /// Opens a spool under `root` for one producer with `shards` writers: takes a slot of
    /// its own and the orphans (see `lock`), scans what earlier producers left in them, and
    /// answers the batches to send again. `keep_bytes` bounds the settled segments kept for
    /// reuse (twice the producer's memory budget: the segments in use at a peak hold its
    /// records plus their entry headers, and settle in order, so they exceed the budget
    /// itself).
    pub(crate) fn open(
        root: &Path,
        slots: u32,
        shards: usize,
        max_bytes: usize,
        keep_bytes: usize,
        sync: SpoolSync,
    ) -> Result<Replay, SpoolError> {
        let claim = lock::claim(root, slots)?;
        let own = scan_dir(&claim.own.dir)?;
        let mut corrupt = own.corrupt;
        let dir = claim.own.dir;
        let mut leftovers = vec![Leftover {
            dir: dir.clone(),
            _lock: None,
            recovered: own.recovered,
            old_files: own.files,
            ledger: LedgerWriter::default(),
        }];
        for Held { dir, lock } in claim.orphans {
            let orphan = scan_dir(&dir)?;
            corrupt += orphan.corrupt;
            leftovers.push(Leftover::orphan(dir, lock, orphan));
        }
        drop_copies_of_what_is_still_there(root, &mut leftovers, sync != SpoolSync::None);
        let lock = claim.own.lock;
        let segment_bytes = segment_bytes_for(max_bytes, shards);
        let spool = Arc::new(Spool {
            dir: dir.clone(),
            dir_lock: Mutex::new(Some(lock)),
            run: own.max_run + 1,
            sync,
            segment_bytes,
            max_bytes,
            keep_segments: keep_bytes / segment_bytes,
            keep_bytes,
            used: Arc::new(AtomicUsize::new(0)),
            disk_room: Arc::new(AtomicUsize::new(usize::MAX)),
            next_seq: AtomicU64::new(own.max_seq + 1),
            writers: (0..shards).map(|_| Mutex::new(None)).collect(),
            state: Arc::new(Mutex::new(State {
                segments: BTreeMap::new(),
                chains: vec![VecDeque::new(); shards],
                free: Vec::new(),
                spare_bytes: 0,
                peak: 0,
                closed: false,
            })),
            prepare: Arc::default(),
            preparer: Mutex::new(None),
            room: Condvar::new(),
            room_lock: Mutex::new(()),
            corrupt_entries: AtomicU64::new(corrupt),
            files: Arc::default(),
            committing: Arc::default(),
            dir_changes: Arc::default(),
            marks: Mutex::default(),
            faults: Arc::default(),
        });
        for (parent, error) in &claim.unsynced_parents {
            spool.faults.entries_sync_failed(root, parent, error);
        }
        let preparer = Preparer {
            state: spool.state.clone(),
            signal: spool.prepare.clone(),
            dir,
            run: spool.run,
            segment_bytes,
            max_bytes,
            used: spool.used.clone(),
            disk_room: spool.disk_room.clone(),
            shards,
            files: spool.files.clone(),
            dir_changes: spool.dir_changes.clone(),
            syncs: sync != SpoolSync::None,
            faults: spool.faults.clone(),
        };
        *spool.preparer.lock() =
            crate::threads::spawn("loghose-spool-prep", move || preparer.run()).ok();
        if let SpoolSync::Interval(every) = sync {
            // Every interval, everything is synced; in between, the bodies of compressed
            // batches as they come (a group commit), so their files can go back.
            let weak = Arc::downgrade(&spool);
            let committing = spool.committing.clone();
            let _ = crate::threads::spawn("loghose-spool-sync", move || {
                let mut next = std::time::Instant::now() + every;
                loop {
                    let pending = {
                        let mut queue = committing.queue.lock();
                        if queue.waiting.is_empty() || committing.by_hand() {
                            committing.wake.wait_until(&mut queue, next);
                        }
                        if committing.by_hand() {
                            continue;
                        }
                        // One sync for the files compressed within a short while:
                        // after a timed sync, every file it took comes this way.
                        let gathered = (std::time::Instant::now() + COMMIT_GATHER).min(next);
                        while !queue.waiting.is_empty()
                            && queue.waiting.len() < COMMIT_GROUP
                            && !committing.wake.wait_until(&mut queue, gathered).timed_out()
                        {
                        }
                        Committing::take(&mut queue)
                    };
                    let Some(spool) = weak.upgrade() else { return };
                    spool.commit(pending);
                    if std::time::Instant::now() >= next {
                        if !spool.sync_all() {
                            spool.faults.degrade();
                        }
                        next = std::time::Instant::now() + every;
                    }
                }
            });
        }
        Ok(Replay { spool, leftovers })
    }

    /// Takes, while the producer runs, what other producers under the same `spool_dir` left
    /// without a holder (see `lock::orphans`): each directory scanned, ready to send again as
    /// at open. A directory that cannot be read is let go and looked at again next time.
    pub(crate) fn adopt_orphans(&self) -> Vec<Leftover> {
        let Some(root) = self.dir.parent() else {
            return Vec::new();
        };
        let Ok(held) = lock::orphans(root, &self.dir) else {
            return Vec::new();
        };
        let mut leftovers = Vec::new();
        for Held { dir, lock } in held {
            let Ok(orphan) = scan_dir(&dir) else { continue };
            self.corrupt_entries
                .fetch_add(orphan.corrupt, Ordering::Relaxed);
            leftovers.push(Leftover::orphan(dir, lock, orphan));
        }
        drop_copies_of_what_is_still_there(root, &mut leftovers, self.syncs());
        leftovers
    }

    /// How the disk has served the spool.
    pub(crate) fn faults(&self) -> &Faults {
        &self.faults
    }

    /// `records` are sent although no copy of them could be made durable.
    pub(crate) fn not_durable(&self, records: u64) {
        self.faults.not_durable(&self.dir, records);
    }

    /// This producer's run number.
    #[cfg(test)]
    pub(crate) fn run(&self) -> u64 {
        self.run
    }

    /// Whether records are synced to the disk (`batch`, `interval`).
    pub(crate) fn syncs(&self) -> bool {
        self.sync != SpoolSync::None
    }

    /// Writes in `from`'s replay ledger that this batch of it is now in this run's files, at
    /// once and unsynced (with `batch` or `interval` syncing; see `replay_ledger`: trusted
    /// after a kill, not after a reboot), so that a producer opened after this one is killed
    /// mid-replay does not send it again.
    pub(crate) fn note_replayed_now(
        &self,
        from: &mut Leftover,
        origin: (u64, u64),
    ) -> std::io::Result<()> {
        if self.sync != SpoolSync::None {
            from.ledger.note_this_boot(&from.dir, origin)?;
        }
        Ok(())
    }

    /// Writes in `from`'s replay ledger, for good, that these of its batches are now in this
    /// run's files. With `batch` or `interval` syncing, this run's files are synced first and
    /// the ledger after, so that a power loss never keeps the ledger's word without the copies.
    pub(crate) fn note_replayed(
        &self,
        from: &mut Leftover,
        origins: &[(u64, u64)],
    ) -> std::io::Result<()> {
        if origins.is_empty() {
            return Ok(());
        }
        let syncs = self.sync != SpoolSync::None;
        if syncs && !self.sync_all() {
            // The copies are not durable: the ledger must not say they stand for the
            // originals (the old files are then kept, see `remove_old`).
            return Err(std::io::Error::other("a sync of the spool's files failed"));
        }
        from.ledger.note_synced(&from.dir, origins, syncs)
    }

    /// Deletes the files an earlier producer left in `from`, once their batches are in this
    /// run's (an orphan is let go when `from` is dropped), in the order the scan put them:
    /// cut anywhere by a kill, what is left never holds a done batch's records without its
    /// `Done` entry.
    /// With `batch` or `interval` syncing, the copies are synced first (a failure keeps the
    /// old files: the next producer sends their batches, perhaps again) and the directory
    /// after, so that a power loss does not bring the old files back either.
    pub(crate) fn remove_old(&self, from: &Leftover) {
        let syncs = self.sync != SpoolSync::None;
        if syncs && !self.sync_all() {
            return;
        }
        for f in &from.old_files {
            let _ = std::fs::remove_file(f);
        }
        if syncs && !from.old_files.is_empty() {
            if let Err(e) = disk::sync_dir(&from.dir) {
                self.faults.entries_sync_failed(&self.dir, &from.dir, &e);
            }
        }
    }

    /// Whether new records must wait: the files in use (idle batch files are room, not use)
    /// leave less than one more segment per shard below `spool_max_bytes`.
    pub(crate) fn over_limit(&self) -> bool {
        let reserve = self.segment_bytes * self.writers.len();
        let idle = self
            .files
            .get()
            .map_or(0, |pool| pool.idle_bytes.load(Ordering::Acquire));
        self.used.load(Ordering::Acquire).saturating_sub(idle) + reserve
            > self.max_bytes.min(self.disk_room.load(Ordering::Acquire))
    }

    /// Whether the disk ran out of space (and no segment was settled since).
    pub(crate) fn disk_full(&self) -> bool {
        self.disk_room.load(Ordering::Acquire) != usize::MAX
    }

    /// Waits until [`Spool::over_limit`] is false, or `timeout` passes.
    pub(crate) fn wait_room(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut guard = self.room_lock.lock();
        loop {
            if !self.over_limit() {
                return true;
            }
            if self.room.wait_until(&mut guard, deadline).timed_out() {
                return !self.over_limit();
            }
        }
    }

    /// The producer closed: every shard's current segment is retired, the files that hold
    /// no batch (spares, idle batch files) are deleted, and what is left — the batches kept
    /// for the next producer, and with `everything_settled` false those still in flight — stays
    /// on disk but no longer mapped or open here: Windows refuses to delete or rename a file
    /// that is mapped or open, and the next producer on the slot (in this process too) deletes
    /// these once it has sent their batches again. No entry is written after this (a batch
    /// settling later leaves no `Done`: the next producer may send it again, as at-least-once
    /// allows). With every batch settled the slot is let go at once; otherwise when the spool
    /// goes (it is marked closed, so that a producer of this process may take it).
    pub(crate) fn close(&self, everything_settled: bool) {
        // Closed first: a batch settling meanwhile makes no new segment (see `new_segment`).
        self.state.lock().closed = true;
        for w in &self.writers {
            if let Some(old) = w.lock().take() {
                self.retire(old);
            }
        }
        let mut state = self.state.lock();
        state.spare_bytes = 0;
        for spare in std::mem::take(&mut state.free) {
            // Unmapped and closed first: Windows refuses to delete a mapped file, and lists a
            // deleted one until its last handle closes.
            drop(spare.map);
            self.marks.lock().forget(&spare.path);
            drop(spare.file);
            let _ = std::fs::remove_file(&spare.path);
            self.dir_changes.note();
        }
        drop(state);
        let pending = Committing::take(&mut self.committing.queue.lock());
        self.commit(pending);
        let stranded = std::mem::take(&mut self.committing.queue.lock().stranded);
        for stranded in stranded {
            if everything_settled {
                // Every batch is settled: files kept because their bodies' sync failed go too.
                self.delete_file(stranded.file.finish());
            }
            // Else they stay for the next producer, unmapped and closed as they drop here.
        }
        if let Some(pool) = self.files.get() {
            pool.closed.store(true, Ordering::Release);
            for idle in std::mem::take(&mut *pool.idle.lock()) {
                pool.idle_bytes
                    .fetch_sub(pool.shape.file_bytes(), Ordering::AcqRel);
                pool.unretain(&idle);
                self.delete_file(idle);
            }
        }
        self.stop_preparer();
        self.let_go_of_what_is_left();
        // The removals made durable, whatever `spool_sync` says: a power loss soon after would
        // otherwise bring the delivered batches' files back, and they would be sent again.
        if let Err(e) = self.dir_changes.sync(&self.dir) {
            self.faults.entries_sync_failed(&self.dir, &self.dir, &e);
        }
        if everything_settled {
            // The slot is free for the next producer (of this process or another) at once,
            // not when this one is dropped.
            drop(self.dir_lock.lock().take());
        }
    }

    /// Unmaps and closes the segments still holding batches and forgets the live batch
    /// files (their mappings go with their batches as they settle), leaving the files on
    /// disk. What the producer must have made durable first, it has (`sync_all` at close).
    fn let_go_of_what_is_left(&self) {
        let mut state = self.state.lock();
        let segments = std::mem::take(&mut state.segments);
        for chain in &mut state.chains {
            chain.clear();
        }
        drop(state);
        drop(segments);
        if let Some(pool) = self.files.get() {
            pool.live.lock().clear();
        }
        drop(self.marks.lock().take());
    }

    /// Ends the preparer thread and waits for it (at the producer's close, so that the
    /// directory's lock goes with the producer).
    fn stop_preparer(&self) {
        if let Some(lock) = &*self.dir_lock.lock() {
            lock.mark_closed();
        }
        self.prepare.stop.store(true, Ordering::Release);
        self.prepare.notify();
        let preparer = self.preparer.lock().take();
        if let Some(thread) = preparer {
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }

    /// How many settled segments are kept for reuse: as many as were ever in use at once
    /// (two per shard at least), so that in a steady state no segment file is made or deleted
    /// (both cost the file system more than the records cost us). Each kept is resident, so
    /// no more than `keep_bytes` worth.
    pub(super) fn keeps(&self, state: &State) -> usize {
        (self.writers.len() * 2).max(state.peak.min(self.keep_segments))
    }

    /// `spool_max_bytes`.
    pub(crate) fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Bytes of segment files now.
    pub(crate) fn used_bytes(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Segments (`.spl`) and batch files (`.spb`) in the slot's directory now, kept ones
    /// included: what the disk holds, read from it (0 if the directory cannot be read).
    pub(crate) fn data_files(&self) -> u64 {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        entries
            .filter_map(Result::ok)
            .filter(|entry| {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                name.ends_with(".spl") || name.ends_with(".spb")
            })
            .count() as u64
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        // The preparer thread ends (without being waited for: it holds nothing of the spool
        // but its state).
        self.prepare.stop.store(true, Ordering::Release);
        self.prepare.notify();
    }
}
