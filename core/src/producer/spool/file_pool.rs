//! The spool's side of batch files: the default destination's batches are written straight
//! into files of their own (`batch_file`), indexed here so a kill loses nothing; a compressed
//! batch's body is committed to a segment (in groups, off the I/O threads) before its file is
//! given back for reuse. The pool's data (`FilePool`, `Committing`) lives in `state`. Runs on the adding threads (take, index) and the I/O threads
//! (compressed, give back).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::batch_file::{self, BatchFile, Idle, Shape};
use super::files::{is_disk_full, SpoolError};
use super::format::{encode_open, Compressed};
use super::state::{FilePool, Waiting, COMMIT_GROUP};
use super::store::{Spool, SpoolMark};
use crate::producer::buffer::BatchBuf;
use crate::producer::config::SpoolSync;
use crate::producer::routing::Destination;

/// Idle batch files kept mapped at rest: the next batch takes it with no page faults (a file
/// mapped again takes a fault per page); the preparer thread maps another ahead while batches
/// fill. Under load (batches waiting to be compressed), up to `keep_bytes` of mappings are
/// kept, as the memory budget keeps its buffers.
pub(super) const MAPPED_IDLE_FILES: usize = 1;

/// How a committed file went (see `Spool::give_back_durably`).
enum Freed {
    /// Its free mark, or its removal, is durable.
    Durably,
    /// Deleted, its removal durable once a directory sync covers this change.
    AfterDirSync(u64),
}

impl Spool {
    /// Writes the default destination's batches into batch files of their own from now on
    /// (when its destination and `tags` fit a file's header).
    pub(crate) fn enable_batch_files(
        &self,
        batch_max_bytes: usize,
        batch_max_count: usize,
        dest: &Destination,
        tags: &[u8],
    ) {
        let open = encode_open(dest, tags, None);
        if !Shape::fits(&open) {
            return;
        }
        let shape = Shape::new(batch_max_bytes, batch_max_count);
        let _ = self.files.set(FilePool {
            shape,
            open,
            idle: Mutex::new(Vec::new()),
            live: Mutex::new(BTreeMap::new()),
            made: AtomicU64::new(0),
            peak: AtomicUsize::new(0),
            retained: AtomicUsize::new(0),
            idle_bytes: AtomicUsize::new(0),
            retain_max: (self.keep_bytes / shape.file_bytes()).max(MAPPED_IDLE_FILES),
            ticks: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        });
    }

    /// A batch file for batch `batch` of the default destination, and the buffer the batch is
    /// to be written in: an idle file if there is one, else a new one when the spool has room
    /// for it besides a segment per shard. `None` (the batch then goes to the segments, which
    /// wait for room or report why) when batch files are off, there is no room, or the file
    /// cannot be made.
    pub(crate) fn take_batch_file(&self, batch: u64, mark: &mut SpoolMark) -> Option<BatchBuf> {
        let pool = self.files.get()?;
        let size = pool.shape.file_bytes();
        let idle = {
            let mut idle = pool.idle.lock();
            match idle.iter().rposition(Idle::is_mapped) {
                Some(at) => {
                    pool.retained.fetch_sub(1, Ordering::Relaxed);
                    Some(idle.swap_remove(at))
                }
                None => idle.pop(),
            }
        };
        let idle = match idle {
            Some(idle) if self.faults.is_poisoned(&idle.path) => {
                // Its free mark's sync failed: never reused. The batch goes to the segments.
                // (A mapped one was taken off `retained` as it was taken.)
                pool.idle_bytes.fetch_sub(size, Ordering::AcqRel);
                self.delete_file(idle);
                return None;
            }
            Some(idle) => {
                pool.idle_bytes.fetch_sub(size, Ordering::AcqRel);
                idle
            }
            None => {
                let reserve = self.segment_bytes * self.writers.len();
                let limit = self.max_bytes.min(self.disk_room.load(Ordering::Acquire));
                if self.used.load(Ordering::Acquire) + size + reserve > limit {
                    return None;
                }
                let n = pool.made.fetch_add(1, Ordering::Relaxed);
                let path = batch_file::file_name(&self.dir, self.run, n);
                let used = self.used.fetch_add(size, Ordering::AcqRel) + size;
                match Idle::create(path, pool.shape) {
                    Ok(idle) => {
                        self.dir_changes.note();
                        idle
                    }
                    Err(e) => {
                        self.used.fetch_sub(size, Ordering::AcqRel);
                        if is_disk_full(&e) {
                            self.disk_room.store(used - size, Ordering::Release);
                        }
                        return None;
                    }
                }
            }
        };
        // The preparer maps the next one ahead.
        self.prepare.notify();
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let file = idle.file.clone();
        let path = idle.path.clone();
        match idle.begin(pool.shape, self.run, batch, seq, &pool.open) {
            Ok((begun, buf)) => {
                let mut live = pool.live.lock();
                live.insert(seq, (path, file));
                pool.peak.fetch_max(live.len(), Ordering::Relaxed);
                mark.file_tick = pool.ticks.load(Ordering::Relaxed);
                drop(live);
                mark.file = Some(begun);
                Some(buf)
            }
            Err(_) => {
                self.delete_file(Idle::on_disk(path, file));
                None
            }
        }
    }

    /// Indexes the record at `buf[from..]` in the batch's file; an error when the buffer grew
    /// past the file or its index is full (the caller then seals the batch first).
    #[inline]
    pub(crate) fn index_record(
        &self,
        mark: &mut SpoolMark,
        buf: &BatchBuf,
        from: usize,
    ) -> Result<(), SpoolError> {
        match mark.file.as_mut().map(|file| file.index(buf, from)) {
            Some(true) => Ok(()),
            _ => Err(SpoolError::Io {
                dir: self.dir.clone(),
                what: "a record does not fit its batch file",
                source: std::io::Error::other("the batch is full"),
            }),
        }
    }

    /// Keeps a batch's buffer with its file once the batch was compressed (mapped, for the
    /// file's next batch, while fewer than `keep_bytes` worth are); answers it back when the
    /// batch has no file or it is not kept.
    pub(crate) fn keep_buffer(&self, mark: &mut SpoolMark, buf: BatchBuf) -> Option<BatchBuf> {
        let (Some(pool), Some(file)) = (self.files.get(), &mut mark.file) else {
            return Some(buf);
        };
        let kept = buf.is_file()
            && pool
                .retained
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    (n < pool.retain_max).then_some(n + 1)
                })
                .is_ok();
        if !kept {
            return Some(buf);
        }
        file.data = Some(buf);
        None
    }

    /// A batch in a batch file was compressed: its compressed body is written in `shard`'s
    /// segments in its stead (its `Open` entry first) and the file goes back at once, so that
    /// files are needed only while batches fill (as the memory budget's buffers are), not
    /// while they are sent. From then on the batch is settled like any segment batch. With
    /// `spool_sync = batch` the file is kept until the batch is done (it was synced at seal).
    /// Nothing changes when the body cannot be written (the file stays, a crash loses nothing).
    pub(crate) fn compressed(&self, c: &Compressed<'_>, mark: &mut SpoolMark) {
        if mark.file.is_none() || self.sync == SpoolSync::Batch {
            return;
        }
        let Some(pool) = self.files.get() else {
            return;
        };
        let mut staged = SpoolMark::default();
        let written = self.append_body(c, &pool.open, &mut staged);
        if written.is_err() {
            // An Open entry alone, if it was written, adds nothing to what the file holds.
            let mut state = self.state.lock();
            for seq in &staged.segments {
                if let Some(s) = state.segments.get_mut(seq) {
                    s.live = s.live.saturating_sub(1);
                }
            }
            self.collect(&mut state);
            return;
        }
        staged.opened = true;
        let segments = staged.segments.clone();
        let waits = self.reuse_waits_for_commit(mark);
        staged.waits_commit = waits;
        if let Some(file) = std::mem::replace(mark, staged).file {
            if waits {
                // The segments holding the body stay unsettled while the file waits, whatever
                // becomes of the batch meanwhile: were they settled (and reused) first, a kill
                // would find the file's records with no sign that the batch was done, and
                // send a delivered batch again.
                let mut state = self.state.lock();
                for seq in &segments {
                    if let Some(s) = state.segments.get_mut(seq) {
                        s.live += 1;
                    }
                }
                drop(state);
                let mut queue = self.committing.queue.lock();
                queue.waiting.push(Waiting {
                    file,
                    batch: c.batch,
                    segments,
                    settled: false,
                });
                // Woken to start gathering, and once enough are gathered.
                let waiting = queue.waiting.len();
                if waiting == 1 || waiting >= COMMIT_GROUP {
                    self.committing.wake.notify_one();
                }
            } else {
                self.give_back(file);
            }
        }
    }

    /// A batch whose file waits for a commit settled: its file may go whether or not its
    /// body's sync succeeds (a file stranded by a failed one is committed again, to go).
    pub(super) fn settled_while_committing(&self, batch: u64) {
        let mut queue = self.committing.queue.lock();
        if let Some(w) = queue.waiting.iter_mut().find(|w| w.batch == batch) {
            w.settled = true;
        } else if let Some(c) = queue.in_commit.iter_mut().find(|c| c.0 == batch) {
            c.1 = true;
        } else if let Some(at) = queue.stranded.iter().position(|w| w.batch == batch) {
            let mut w = queue.stranded.swap_remove(at);
            w.settled = true;
            queue.waiting.push(w);
            drop(queue);
            self.committing.wake.notify_one();
        }
    }

    /// Whether a compressed batch's file may be reused only once the segments holding its
    /// body are synced: with `interval` syncing, when a timed sync took the file since the
    /// batch took it (its records may be durable only there). A file no sync took holds only
    /// records of the current interval, which a power loss may lose: it goes back at once,
    /// and under load nearly every file is such a one.
    pub(super) fn reuse_waits_for_commit(&self, mark: &SpoolMark) -> bool {
        let Some(pool) = self.files.get() else {
            return false;
        };
        if !matches!(self.sync, SpoolSync::Interval(_)) || mark.file.is_none() {
            return false;
        }
        let _live = pool.live.lock();
        pool.ticks.load(Ordering::Relaxed) != mark.file_tick
    }

    /// Syncs the segments holding the bodies of `pending` batches, then gives their files
    /// back (each free mark made durable first), and only then lets those segments settle. A
    /// file whose body's sync failed is stranded until its batch settles.
    pub(super) fn commit(&self, pending: Vec<Waiting>) {
        if pending.is_empty() {
            self.settle_after_dir_sync();
            return;
        }
        let mut seqs: Vec<u64> = pending
            .iter()
            .flat_map(|w| w.segments.iter().copied())
            .collect();
        seqs.sort_unstable();
        seqs.dedup();
        let files: Vec<(PathBuf, Arc<File>)> = {
            let state = self.state.lock();
            seqs.iter()
                .filter_map(|s| {
                    state
                        .segments
                        .get(s)
                        .map(|s| (s.path.clone(), s.file.clone()))
                })
                .collect()
        };
        let needed = files.len();
        let synced = self.sync_files(&files, needed);
        let synced = self.settle_sync(synced);
        let mut going = Vec::with_capacity(pending.len());
        {
            let mut queue = self.committing.queue.lock();
            for mut w in pending {
                if let Some(at) = queue.in_commit.iter().position(|c| c.0 == w.batch) {
                    w.settled |= queue.in_commit.swap_remove(at).1;
                }
                if synced || w.settled {
                    going.push(w);
                } else {
                    // The body is not durable and the batch not settled: its records may be
                    // durable only in the file, which is kept, never reused, its segments
                    // held (see `Committing::stranded`).
                    queue.stranded.push(w);
                }
            }
        }
        let mut settle = Vec::new();
        for w in going {
            match self.give_back_durably(w.file) {
                Freed::Durably => settle.extend(w.segments),
                Freed::AfterDirSync(change) => {
                    let mut queue = self.committing.queue.lock();
                    queue
                        .after_dir_sync
                        .extend(w.segments.into_iter().map(|seq| (seq, change)));
                }
            }
        }
        self.settle_held(&settle);
        self.settle_after_dir_sync();
    }

    /// A file whose batch no longer needs it, given back with its free mark made durable at
    /// once; the segments holding its batch's body may settle after this, or, when the
    /// mark's sync failed (the file is then deleted) and the directory's sync too, once a
    /// directory sync covers its removal.
    fn give_back_durably(&self, file: BatchFile) -> Freed {
        let Some(pool) = self.files.get() else {
            return Freed::Durably;
        };
        let in_use = pool.leave_live(file.seq());
        let idle = file.finish();
        if self.faults.sync_file(&self.dir, &idle.path, &idle.file) {
            self.take_back(idle, in_use, false);
            return Freed::Durably;
        }
        pool.unretain(&idle);
        self.delete_file(idle);
        let change = self.dir_changes.latest();
        match self.dir_changes.sync(&self.dir) {
            Ok(()) => Freed::Durably,
            Err(e) => {
                self.faults.entries_sync_failed(&self.dir, &self.dir, &e);
                Freed::AfterDirSync(change)
            }
        }
    }

    /// Lets segments held for a file's commit settle.
    fn settle_held(&self, held: &[u64]) {
        if held.is_empty() {
            return;
        }
        let mut state = self.state.lock();
        for seq in held {
            if let Some(s) = state.segments.get_mut(seq) {
                s.live = s.live.saturating_sub(1);
            }
        }
        self.collect(&mut state);
    }

    /// Lets settle the segments whose file's removal a directory sync has since made durable.
    pub(super) fn settle_after_dir_sync(&self) {
        let ready: Vec<u64> = {
            let mut queue = self.committing.queue.lock();
            if queue.after_dir_sync.is_empty() {
                return;
            }
            let (ready, left) = std::mem::take(&mut queue.after_dir_sync)
                .into_iter()
                .partition(|&(_, change)| self.dir_changes.covers(change));
            queue.after_dir_sync = left;
            ready.into_iter().map(|(seq, _)| seq).collect()
        };
        self.settle_held(&ready);
    }

    /// The last batch in flight is done: with no batch file in use, the idle ones kept mapped
    /// under load are unmapped down to the one kept at rest (a file the preparer mapped
    /// ahead, or the last batches', would otherwise stay resident while nothing is sent).
    pub(crate) fn at_rest(&self) {
        let Some(pool) = self.files.get() else {
            return;
        };
        if !pool.live.lock().is_empty() {
            return;
        }
        let mut mapped = 0;
        for idle in pool.idle.lock().iter_mut().rev() {
            if idle.is_mapped() {
                mapped += 1;
                if mapped > MAPPED_IDLE_FILES {
                    idle.unmap();
                    pool.retained.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// A batch opened and left empty: its batch file, if it has one, goes back.
    pub(crate) fn forget(&self, mark: &mut SpoolMark) {
        if let Some(file) = mark.file.take() {
            self.give_back(file);
        }
    }

    /// A batch given up because the producer closed stays for the next producer: its batch
    /// file, if it has one, is let go of as it is (not marked free; unmapped and closed).
    pub(crate) fn keep(&self, mark: &mut SpoolMark) {
        let Some(file) = mark.file.take() else { return };
        if let Some(pool) = self.files.get() {
            pool.live.lock().remove(&file.seq());
            if file.data.is_some() {
                pool.retained.fetch_sub(1, Ordering::Relaxed);
            }
        }
        drop(file);
    }

    /// A batch file whose batch is done, or was opened and left empty: marked free, then
    /// kept (mapped while few are) or deleted.
    pub(crate) fn give_back(&self, file: BatchFile) {
        let Some(pool) = self.files.get() else {
            return;
        };
        let in_use = pool.leave_live(file.seq());
        self.take_back(file.finish(), in_use, true);
    }

    /// A file marked free back in the pool (kept or deleted), `in_use` files still live;
    /// its free mark made durable with the next sync when `mark_pending`.
    fn take_back(&self, idle: Idle, in_use: usize, mark_pending: bool) {
        let Some(pool) = self.files.get() else {
            return;
        };
        if self.faults.is_poisoned(&idle.path) {
            // Its sync failed: never reused (see `faults`).
            pool.unretain(&idle);
            self.delete_file(idle);
            return;
        }
        // Kept, within spool_max_bytes, as many as were ever in use at once: a steady
        // producer then makes and deletes no files (each costs the file system a fault per
        // page to fill).
        let peak = pool.peak.load(Ordering::Relaxed).max(MAPPED_IDLE_FILES);
        let keep = !pool.closed.load(Ordering::Acquire)
            && self.used.load(Ordering::Acquire) + self.segment_bytes * self.writers.len()
                <= self.max_bytes;
        let mut list = pool.idle.lock();
        if keep && list.len() < peak {
            // At rest, one kept mapped; while batches fill, every one within `keep_bytes`
            // (unmapped, a file costs a fault per page when it is next taken, and unmapping
            // costs every thread a TLB flush); `at_rest` trims them when the load stops.
            let mapped_limit = match in_use {
                0 => MAPPED_IDLE_FILES,
                _ => pool.retain_max,
            };
            let mut mapped = usize::from(idle.is_mapped());
            for other in list.iter_mut().rev() {
                if other.is_mapped() {
                    mapped += 1;
                    if mapped > mapped_limit {
                        other.unmap();
                        pool.retained.fetch_sub(1, Ordering::Relaxed);
                    }
                }
            }
            if mark_pending && self.sync != SpoolSync::None {
                // Its free mark is made durable with the next sync.
                self.marks.lock().add(idle.path.clone(), idle.file.clone());
            }
            list.push(idle);
            drop(list);
            pool.idle_bytes
                .fetch_add(pool.shape.file_bytes(), Ordering::AcqRel);
            let _guard = self.room_lock.lock();
            self.room.notify_all();
            return;
        }
        drop(list);
        pool.unretain(&idle);
        self.delete_file(idle);
    }

    /// Deletes a batch file and gives its room back.
    pub(super) fn delete_file(&self, mut idle: Idle) {
        let size = idle.file.metadata().map_or(0, |m| m.len() as usize);
        // Unmapped and closed first: Windows refuses to delete a mapped file, and lists a
        // deleted one until its last handle closes.
        idle.unmap();
        self.marks.lock().forget(&idle.path);
        let path = idle.path.clone();
        drop(idle);
        let _ = std::fs::remove_file(&path);
        self.dir_changes.note();
        self.faults.forget(&path);
        self.used.fetch_sub(size, Ordering::AcqRel);
        self.disk_room.store(usize::MAX, Ordering::Release);
        let _guard = self.room_lock.lock();
        self.room.notify_all();
    }
}
