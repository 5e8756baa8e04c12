//! The spool: every accepted record kept in memory-mapped files in `spool_dir`, so that a
//! process killed at any instant loses nothing `send` accepted — the next producer opened on
//! the same directory delivers it.
//!
//! Two kinds of file. A batch of the producer's own destination (the common case) is written
//! straight into a batch file of its own (`bat-*.spb`, see `batch_file`): the batch's buffer
//! is the file's mapping, so a record costs only an index entry and its CRC. Batches of other
//! destinations (possibly 100 000 small ones, one per device) and replayed batches are copied,
//! record by record, into the shards' segments (`seg-*.spl`), described below. Both are
//! recovered together, in the order their batches were opened.
//!
//! Layout. Each accumulator shard appends to a segment file of its own (`seg-*.spl`, a fixed
//! size, allocated whole), through a shared mapping: an entry is a copy into the
//! kernel's page cache, no system call, and it survives the death of the process. Entries are
//! 8-byte aligned: a header (magic, payload length, CRC-32 of everything after it, kind, the
//! run and batch they belong to) and a payload. Kinds: `Open` (a batch's destination and
//! tags, before its first record), `Record` (one encoded log, as the batch holds it),
//! `Sealed` (its `__pack_id__`), `Done` (delivered, or failed for good). Each append zeroes
//! the header after its entry, so a scan ends there. A segment is settled once it is full and
//! every batch with an entry in it is done, in order per shard (so a `Done` entry, always
//! written later, never outlives the records it settles): marked free and kept for reuse, or
//! deleted.
//!
//! Recovery (when a producer opens the directory): every segment is scanned, in the order the
//! segments were begun (the sequence in each header); an entry whose CRC does not match (a
//! write cut by the kill or by a power loss, a flipped byte) is skipped and counted, and the
//! scan resynchronises on the next whole entry of the same use. A reused segment is not
//! cleared: its earlier use's entries carry another sequence and end the scan. Every batch not `Done`
//! is rebuilt — its records in order, its pack id kept when it had been sealed (it may have
//! been sent: the service sees the same pack id twice at most) — written again into the new
//! run's segments, and only then are the old files deleted (oldest segment first, so that a
//! deletion cut by a kill never leaves a batch's records without the later entry that marks it
//! done); a crash during recovery loses nothing either. Each batch written again is named
//! (old run and batch) in the replay ledger (`replayed.log`, CRC-checked entries), which a
//! later recovery skips: a replay cut short by a close or a kill does not make the next
//! producer send those batches a second time. The ledger is deleted after the old files it
//! names.
//!
//! Durability (`spool_sync`): `none` survives the process (the page cache outlives it);
//! `batch` makes a batch's segment durable with `fdatasync` when it seals, before it is sent;
//! `interval:<ms>` does so for every segment and batch file on a timer thread. A batch file such
//! a sync took goes back, once its batch is compressed, only after the segments holding the
//! body are synced too (a group commit on the same thread), so a power loss never finds
//! records of an earlier interval overwritten before they are durable in another form; a file
//! no sync took holds only the current interval's records and goes back at once (under load,
//! nearly all: no sync, no page fault, and the same few hot files as with `none`). The disk
//! is bounded by
//! `spool_max_bytes`: once the segments leave less than one more segment per shard below it,
//! new records wait for room (up to `max_block_ms`) or fail with the buffer-full error, like
//! the memory budget. Segments are allocated whole when made (`posix_fallocate`), so a full
//! disk is an error when a segment is made, never a fault while writing into one. One producer
//! per directory, and many per `spool_dir`: each producer takes a slot directory of its own
//! under it, held by a lock, and sends what unheld slots left (see `lock`). Everything this
//! makes is private to the user (directories 0700, files 0600).
//!
//! Threads: entries are appended by the adding threads (under the shard's lock, through the
//! shard's writer mutex, uncontended) and `Done` by the I/O runtime; the timer thread syncs.
//! Settled segments are kept for reuse, mapped, as many as were ever in use at once (within
//! `spool_max_bytes`): making and deleting files and faulting in a mapping's pages cost the
//! file system far more per byte than the records' copies, and a steady producer reuses the
//! same files with none of it. The price is memory: the spool keeps resident its peak of
//! records not yet delivered (which the memory budget bounds). A preparer thread makes a new
//! segment ahead whenever fewer than one per shard are ready, so the adding threads take them
//! ready, with no allocation or page faults of their own.

use std::collections::{BTreeMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use memmap2::MmapMut;
use parking_lot::{Condvar, Mutex};

use super::buffer::BatchBuf;
use super::config::SpoolSync;
use super::routing::Destination;
use crate::wire::compress::Compression;
use batch_file::{BatchFile, Idle, Shape};

mod batch_file;
mod disk;
mod faults;
mod file_pool;
mod format;
mod lock;
mod prepare;
mod recovery;
mod replay_ledger;
mod segment;

#[cfg(test)]
mod model_disk;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod power_tests;

use disk::DirChanges;
use faults::Faults;
pub(crate) use faults::SpoolHealth;
use file_pool::*;
pub(crate) use format::CopyOrigin;
use format::*;
pub(crate) use lock::ORPHAN_CHECK;
use lock::{DirLock, Held};
use prepare::*;
use recovery::*;
use replay_ledger::LedgerWriter;
use segment::*;

/// Why the spool could not be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    /// Other live producers hold every slot of the directory (`spool_slots`).
    #[error(
        "spool_dir {dir} is in use: all {slots} of its slots are held by other producers \
         (the last by process {pid}); raise `spool_slots` or give this producer another directory"
    )]
    Locked {
        /// The directory.
        dir: PathBuf,
        /// How many slots it has (`spool_slots`).
        slots: u32,
        /// The last slot's holder's pid, as its lock file says.
        pid: String,
    },
    /// A file operation failed.
    #[error("spool_dir {dir}: {what}: {source}")]
    Io {
        /// The directory.
        dir: PathBuf,
        /// What was being done.
        what: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The segment size for a spool of `max_bytes` written by `shards` writers: so that every
/// shard's open segment together take at most a quarter of it; 64 to 256 KiB. Small
/// segments are settled soon after their batches are delivered, usually before the kernel
/// would write them back to disk, and the ones kept mapped for reuse cost little memory (the
/// default destination's records go to batch files; segments hold compressed bodies and the
/// records of other destinations).
fn segment_bytes_for(max_bytes: usize, shards: usize) -> usize {
    (max_bytes / (4 * shards.max(1))).clamp(64 << 10, 256 << 10) & !4095
}

struct State {
    segments: BTreeMap<u64, Segment>,
    /// Per shard, its segments in order.
    chains: Vec<VecDeque<u64>>,
    /// Settled segments kept for reuse (see [`Spool::keeps`]). Not cleared: a scan of the
    /// next use ends at the first entry of an earlier use (its segment sequence differs).
    free: Vec<Free>,
    /// Bytes of `free` files (on disk, not in `used`).
    spare_bytes: usize,
    /// The most segments in use at once so far.
    peak: usize,
    /// The spool closed: spares still being cleared are deleted instead of kept.
    closed: bool,
}

/// A batch's place in the spool: its batch file, or the segments its entries are in and
/// whether its `Open` entry is written.
#[derive(Debug, Default)]
pub(crate) struct SpoolMark {
    opened: bool,
    segments: Vec<u64>,
    file: Option<BatchFile>,
    /// `FilePool::ticks` when the batch file was taken. Still the same at compression: no
    /// sync made the file's records durable, so none is needed before the file is reused.
    file_tick: u64,
    /// The batch's `Open` entry as written (segment batches): what a copy of the batch on a
    /// fresh file begins with when a sync failed.
    open: Option<Vec<u8>>,
    /// Its copy in the spool could not be made durable (the disk failed its syncs).
    pub(crate) not_durable: bool,
}

impl SpoolMark {
    /// Whether the batch is written in a batch file of its own.
    #[inline]
    pub(crate) fn in_file(&self) -> bool {
        self.file.is_some()
    }
}

/// The spool of one producer.
pub(crate) struct Spool {
    dir: PathBuf,
    /// Its slot's lock: let go by a close that left nothing behind, else when the spool goes.
    dir_lock: Mutex<Option<DirLock>>,
    /// This producer's run number: larger than every run found in the directory.
    run: u64,
    sync: SpoolSync,
    segment_bytes: usize,
    max_bytes: usize,
    /// At most this many settled segments are kept for reuse (see [`Spool::open`]).
    keep_segments: usize,
    /// Bytes of mappings kept for reuse at most (segments, batch files' data).
    keep_bytes: usize,
    used: Arc<AtomicUsize>,
    /// What the disk held when it last ran out of space (`usize::MAX`: no shortage seen since
    /// a segment was last settled); admission treats it as a lower `max_bytes`.
    disk_room: Arc<AtomicUsize>,
    next_seq: AtomicU64,
    writers: Vec<Mutex<Option<Writer>>>,
    /// Shared with the preparer thread (which holds nothing else of the spool, so the
    /// directory's lock goes with the producer however it goes).
    state: Arc<Mutex<State>>,
    room: Condvar,
    room_lock: Mutex<()>,
    /// Wakes the preparer thread when a settled segment needs clearing.
    prepare: Arc<PrepSignal>,
    /// The preparer thread, joined by `close`.
    preparer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Entries skipped at recovery because their checksum failed.
    pub(crate) corrupt_entries: AtomicU64,
    /// Batch files, once the producer enabled them.
    files: Arc<std::sync::OnceLock<FilePool>>,
    /// Batch files waiting for their bodies to be synced (`interval`).
    committing: Arc<Committing>,
    /// Files made or removed in `dir` since its entries were last synced.
    dir_changes: Arc<DirChanges>,
    /// Marks of settled batches not yet synced (`batch`, `interval`).
    marks: Mutex<PendingMarks>,
    /// Syncs that failed, the files never trusted again, what is not durable.
    faults: Faults,
}

/// A spool just opened: itself, and what earlier producers left to send again (its own
/// slot's first, then each orphan's).
pub(crate) struct Opened {
    pub(crate) spool: Arc<Spool>,
    pub(crate) leftovers: Vec<Leftover>,
}

impl Opened {
    /// Whether nothing is to be sent again.
    pub(crate) fn nothing_to_replay(&self) -> bool {
        self.leftovers.iter().all(|l| l.recovered.is_empty())
    }
}

/// What one directory (this producer's slot, or an orphan) held: the batches to send again,
/// the files they came from (for [`Spool::remove_old`] once they are spooled again), and
/// its replay ledger.
pub(crate) struct Leftover {
    dir: PathBuf,
    /// An orphan's lock, held until its batches are spooled anew and its files deleted.
    _lock: Option<DirLock>,
    pub(crate) recovered: Vec<Recovered>,
    pub(crate) old_files: Vec<PathBuf>,
    /// Its replay ledger, opened at the first batch sent again.
    ledger: LedgerWriter,
}

impl Leftover {
    /// What the scan of an orphan found, held by its lock until its files are gone.
    fn orphan(dir: PathBuf, lock: DirLock, scan: Scan) -> Leftover {
        Leftover {
            dir,
            _lock: Some(lock),
            recovered: scan.recovered,
            old_files: scan.files,
            ledger: LedgerWriter::default(),
        }
    }
}

/// A batch found in the directory, ready to be sent again.
pub(crate) struct Recovered {
    /// The run and batch it had in the files it came from (the replay ledger names it so).
    pub(crate) origin: (u64, u64),
    /// The directory it came from (its name under `spool_dir`; empty for `spool_dir` itself).
    from_dir: Arc<str>,
    /// Where it came from, when it is itself a replay's copy.
    copy_of: Option<CopyOrigin>,
    pub(crate) dest: Destination,
    pub(crate) tags: Vec<u8>,
    /// Its records (see [`Recovered::decode`]).
    pub(crate) records: Vec<RecordRef>,
    /// Its pack id, when it had been sealed (and so perhaps sent).
    pub(crate) pack_id: Option<String>,
    /// Its compressed body, decoded into `records` only when it is replayed: a large spool
    /// of bodies is never all in memory at once.
    body: Option<RecordRef>,
}

impl Recovered {
    /// What a copy of this batch names as its origin.
    pub(crate) fn copy_origin(&self) -> CopyOrigin {
        CopyOrigin {
            dir: self.from_dir.clone(),
            run: self.origin.0,
            batch: self.origin.1,
        }
    }

    /// Decodes its compressed body, if it has one, into its records (a body that does not
    /// decode is counted as corrupt, and the records a batch file still held, if any, used).
    pub(crate) fn decode(&mut self, spool: &Spool) {
        let Some(body) = self.body.take() else {
            return;
        };
        match decode_body(&body) {
            Some(records) => self.records = records,
            None => {
                spool.corrupt_entries.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Names each recovered batch's directory and drops every replay's copy whose original is
/// recovered too: the replay that wrote the copy was cut (by a kill, or a power loss that
/// kept the copy but not the ledger's entry) before the replay ledger named the original, so
/// the copy may be incomplete and was never sent; the original goes again, once. A copy
/// whose original is gone (named by the ledger, or its files deleted) stands for it; of two
/// copies of one original in a directory, only the later (the scan drops the earlier).
///
/// A dropped copy is named in its own directory's ledger before anything is replayed
/// (`durable`: synced), so that it never stands for its original later: once this replay's
/// new copy is delivered and its segment reused, and the original named by the ledger, the
/// dropped copy would otherwise be the only one a later scan finds, and a delivered batch
/// would be sent again. Not written (the disk failed), at-least-once still holds.
fn drop_copies_of_what_is_still_there(root: &Path, leftovers: &mut [Leftover], durable: bool) {
    let mut originals = std::collections::HashSet::new();
    for leftover in leftovers.iter_mut() {
        let name: Arc<str> = if leftover.dir == root {
            Arc::from("")
        } else {
            Arc::from(
                leftover
                    .dir
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy(),
            )
        };
        for r in &mut leftover.recovered {
            r.from_dir = name.clone();
            originals.insert(r.copy_origin());
        }
    }
    for leftover in leftovers.iter_mut() {
        let mut dropped = Vec::new();
        leftover.recovered.retain(|r| {
            let stands = r.copy_of.as_ref().is_none_or(|o| !originals.contains(o));
            if !stands {
                dropped.push(r.origin);
            }
            stands
        });
        let _ = leftover
            .ledger
            .note_synced(&leftover.dir, &dropped, durable);
    }
}

fn io<'d>(dir: &'d Path, what: &'static str) -> impl FnOnce(std::io::Error) -> SpoolError + 'd {
    move |source| SpoolError::Io {
        dir: dir.to_owned(),
        what,
        source,
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
    ) -> Result<Opened, SpoolError> {
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
            faults: Faults::default(),
        });
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
                        let mut files = committing.files.lock();
                        if files.is_empty() {
                            committing.wake.wait_until(&mut files, next);
                        }
                        // One sync for the files compressed within a short while:
                        // after a timed sync, every file it took comes this way.
                        let gathered = (std::time::Instant::now() + COMMIT_GATHER).min(next);
                        while !files.is_empty()
                            && files.len() < COMMIT_GROUP
                            && !committing.wake.wait_until(&mut files, gathered).timed_out()
                        {
                        }
                        std::mem::take(&mut *files)
                    };
                    let Some(spool) = weak.upgrade() else { return };
                    spool.commit(pending);
                    if std::time::Instant::now() >= next {
                        spool.sync_all();
                        next = std::time::Instant::now() + every;
                    }
                }
            });
        }
        Ok(Opened { spool, leftovers })
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
                self.faults.sync_failed(&self.dir, &from.dir, &e);
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

    /// Retires every shard's current segment (at close): with every batch done, the
    /// directory is left empty.
    pub(crate) fn close(&self) {
        for w in &self.writers {
            if let Some(old) = w.lock().take() {
                self.retire(old);
            }
        }
        let mut state = self.state.lock();
        state.closed = true;
        state.spare_bytes = 0;
        for spare in std::mem::take(&mut state.free) {
            let _ = std::fs::remove_file(&spare.path);
        }
        drop(state);
        let pending = std::mem::take(&mut *self.committing.files.lock());
        self.commit(pending);
        // Every batch is settled: files kept because their bodies' sync failed go too.
        for stranded in std::mem::take(&mut *self.committing.stranded.lock()) {
            self.delete_file(stranded.finish());
        }
        if let Some(pool) = self.files.get() {
            pool.closed.store(true, Ordering::Release);
            for idle in std::mem::take(&mut *pool.idle.lock()) {
                pool.idle_bytes
                    .fetch_sub(pool.shape.file_bytes(), Ordering::AcqRel);
                if idle.is_mapped() {
                    pool.retained.fetch_sub(1, Ordering::Relaxed);
                }
                self.delete_file(idle);
            }
        }
        self.stop_preparer();
        // Every batch is settled and no file is left: the slot is free for the next producer
        // (of this process or another) at once, not when this one is dropped.
        drop(self.dir_lock.lock().take());
    }

    /// Ends the preparer thread and waits for it (at the producer's close, so that the
    /// directory's lock goes with the producer).
    pub(crate) fn stop_preparer(&self) {
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
    fn keeps(&self, state: &State) -> usize {
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
}

impl Drop for Spool {
    fn drop(&mut self) {
        // The preparer thread ends (without being waited for: it holds nothing of the spool
        // but its state).
        self.prepare.stop.store(true, Ordering::Release);
        self.prepare.notify();
    }
}

/// Whether a file error means the disk (or the user's quota) is full.
fn is_disk_full(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::StorageFull
        || error.kind() == std::io::ErrorKind::QuotaExceeded
}

/// Options that create a file readable and writable by the user only (log records are
/// nobody else's business).
pub(crate) fn private_file() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}

/// Gives a new segment file its size with its blocks allocated, so that writing into its
/// mapping can never meet a full disk.
pub(crate) fn allocate(file: &File, size: usize) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        // SAFETY: posix_fallocate on a descriptor the caller owns.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, size as libc::off_t) };
        // POSIX answers the error number; some musl builds answer -1 and set errno instead
        // (seen on x86_64 musl: a full disk then read as "os error -1", not as ENOSPC).
        let rc = if rc == -1 {
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)
        } else {
            rc
        };
        match rc {
            0 => return Ok(()),
            // A filesystem without fallocate: fall back to a sparse file.
            libc::EOPNOTSUPP | libc::EINVAL => {}
            errno => return Err(std::io::Error::from_raw_os_error(errno)),
        }
    }
    file.set_len(size as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest(logstore: &str) -> Destination {
        Destination {
            project: "proj".into(),
            logstore: logstore.into(),
            topic: "t".into(),
            source: "10.0.0.1".into(),
            hash_key: Some("00ff".into()),
        }
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "loghose-spool-{name}-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// Opens a spool under `d` (in its first slot, as the only producer there): the spool,
    /// the batches its slot held, and the rest of what the slot held (its files, its ledger).
    fn open(d: &Path, max: usize) -> (Arc<Spool>, Vec<Recovered>, Leftover) {
        let mut o = Spool::open(d, 64, 2, max, 64 << 20, SpoolSync::None).unwrap();
        assert_eq!(o.leftovers.len(), 1, "no orphans here");
        let mut own = o.leftovers.remove(0);
        (o.spool, std::mem::take(&mut own.recovered), own)
    }

    /// The slot directory a spool opened by `open` writes in.
    fn slot(d: &Path) -> PathBuf {
        d.join("slot-0")
    }

    #[test]
    fn batch_files_are_recovered_from_their_records_or_their_compressed_body() {
        let d = dir("body");
        let framed = |text: &str| [&[0x0a, text.len() as u8][..], text.as_bytes()].concat();
        let fill = |spool: &Spool, batch: u64, texts: &[&str]| {
            let mut mark = SpoolMark::default();
            let mut buf = spool
                .take_batch_file(batch, &mut mark)
                .expect("a batch file");
            for t in texts {
                let from = buf.len();
                buf.extend_from_slice(&framed(t));
                spool.index_record(&mut mark, &buf, from).unwrap();
            }
            (mark, buf)
        };
        {
            let (spool, _, _) = open(&d, 64 << 20);
            spool.enable_batch_files(64 << 10, 100, &dest("own"), b"tags");
            // Batch 1: sealed and compressed, not delivered: its body stands for its file,
            // which goes back and is reused by batch 2.
            let (mut m1, mut buf) = fill(&spool, 1, &["one", "two"]);
            spool.sealed(0, 1, "PACK-1", &mut m1);
            buf.extend_from_slice(b"\x22\x03src");
            let raw_len = buf.len();
            let body = crate::wire::compress::compress(Compression::Lz4, &buf).unwrap();
            assert!(spool.keep_buffer(&mut m1, buf).is_none());
            spool.compressed(0, 1, "PACK-1", Compression::Lz4, raw_len, &body, &mut m1);
            assert!(!m1.in_file(), "the file went back");
            // Batch 2: still filling, in the same file.
            let (_m2, _buf2) = fill(&spool, 2, &["three"]);
            // Batch 3: compressed and delivered: nothing to recover.
            let (mut m3, buf) = fill(&spool, 3, &["gone"]);
            let body = crate::wire::compress::compress(Compression::Lz4, &buf).unwrap();
            let raw_len = buf.len();
            assert!(spool.keep_buffer(&mut m3, buf).is_none());
            spool.compressed(0, 3, "PACK-3", Compression::Lz4, raw_len, &body, &mut m3);
            spool.done(0, 3, &mut m3);
            // Dropped without closing: what a kill leaves.
        }
        let (spool, mut recovered, _) = open(&d, 64 << 20);
        for r in &mut recovered {
            r.decode(&spool);
        }
        type Batch = (String, Vec<Vec<u8>>, Option<String>, Vec<u8>);
        let got: Vec<Batch> = recovered
            .iter()
            .map(|r| {
                (
                    r.dest.logstore.to_string(),
                    r.records.iter().map(|x| x.to_vec()).collect(),
                    r.pack_id.clone(),
                    r.tags.clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "own".into(),
                    vec![framed("one"), framed("two")],
                    Some("PACK-1".into()),
                    b"tags".to_vec()
                ),
                ("own".into(), vec![framed("three")], None, b"tags".to_vec()),
            ]
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn with_interval_syncing_only_a_file_a_timed_sync_took_waits_for_its_body_to_be_synced() {
        let d = dir("commit");
        // An interval no test outlasts: the timed syncs are the test's own calls.
        let o = Spool::open(
            &d,
            64,
            1,
            64 << 20,
            64 << 20,
            SpoolSync::Interval(Duration::from_secs(3600)),
        )
        .unwrap();
        let spool = o.spool;
        spool.enable_batch_files(64 << 10, 100, &dest("own"), b"tags");
        let pool = spool.files.get().unwrap();
        let compress = |batch: u64, tick_between: bool| {
            let mut mark = SpoolMark::default();
            let mut buf = spool.take_batch_file(batch, &mut mark).unwrap();
            let from = buf.len();
            buf.extend_from_slice(b"\x0a\x03one");
            spool.index_record(&mut mark, &buf, from).unwrap();
            if tick_between {
                spool.sync_all();
            }
            let waits = spool.reuse_waits_for_commit(&mark);
            let body = crate::wire::compress::compress(Compression::Lz4, &buf).unwrap();
            let raw_len = buf.len();
            assert!(spool.keep_buffer(&mut mark, buf).is_none());
            spool.compressed(0, batch, "P", Compression::Lz4, raw_len, &body, &mut mark);
            assert!(!mark.in_file());
            waits
        };
        // No timed sync while it filled: the file is idle again as `compressed` returns.
        assert!(!compress(1, false));
        assert_eq!(pool.idle.lock().len(), 1);
        assert!(spool.committing.files.lock().is_empty());
        // A timed sync took it: it goes back only after the commit on the sync thread.
        assert!(compress(2, true));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.idle.lock().len() != 1 {
            assert!(
                std::time::Instant::now() < deadline,
                "the commit gives it back"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // Other modes never wait.
        drop(spool);
        let _ = std::fs::remove_dir_all(&d);
        let d = dir("commit-none");
        let (spool, _, _) = open(&d, 64 << 20);
        spool.enable_batch_files(64 << 10, 100, &dest("own"), b"tags");
        let mut mark = SpoolMark::default();
        let _buf = spool.take_batch_file(1, &mut mark).unwrap();
        spool.sync_all();
        assert!(!spool.reuse_waits_for_commit(&mark));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn sync_modes_parse() {
        assert_eq!(SpoolSync::parse("none"), Some(SpoolSync::None));
        assert_eq!(SpoolSync::parse("batch"), Some(SpoolSync::Batch));
        assert_eq!(
            SpoolSync::parse("interval:250"),
            Some(SpoolSync::Interval(Duration::from_millis(250)))
        );
        for bad in ["", "interval:", "interval:0", "interval:x", "always"] {
            assert_eq!(SpoolSync::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn what_was_not_done_is_recovered_in_order_with_its_pack_id() {
        let d = dir("recover");
        {
            let (spool, recovered, _) = open(&d, 64 << 20);
            assert!(recovered.is_empty());
            let (mut a, mut b, mut c) = Default::default();
            for i in 0..100u32 {
                spool
                    .record(
                        0,
                        1,
                        &dest("aaa"),
                        b"tags",
                        format!("a{i}").as_bytes(),
                        &mut a,
                    )
                    .unwrap();
                spool
                    .record(
                        1,
                        2,
                        &dest("bbb"),
                        b"tags",
                        format!("b{i}").as_bytes(),
                        &mut b,
                    )
                    .unwrap();
            }
            spool
                .record(0, 3, &dest("ccc"), b"tags", b"c0", &mut c)
                .unwrap();
            spool.sealed(0, 1, "PACK-1", &mut a);
            spool.done(0, 3, &mut c);
            // Dropped without closing: what a kill leaves.
        }
        let (spool, recovered, old) = open(&d, 64 << 20);
        assert_eq!(spool.run(), 2);
        assert_eq!(spool.corrupt_entries.load(Ordering::Relaxed), 0);
        assert_eq!(recovered.len(), 2);
        let a = recovered
            .iter()
            .find(|r| &*r.dest.logstore == "aaa")
            .unwrap();
        assert_eq!(a.pack_id.as_deref(), Some("PACK-1"));
        assert_eq!(a.dest, dest("aaa"));
        assert_eq!(a.tags, b"tags");
        let expected: Vec<Vec<u8>> = (0..100).map(|i| format!("a{i}").into_bytes()).collect();
        let got: Vec<Vec<u8>> = a.records.iter().map(|r| r.to_vec()).collect();
        assert_eq!(got, expected);
        let b = recovered
            .iter()
            .find(|r| &*r.dest.logstore == "bbb")
            .unwrap();
        assert_eq!((b.records.len(), b.pack_id.as_deref()), (100, None));
        assert!(!old.old_files.is_empty());
        spool.remove_old(&old);
        drop(spool);
        let (_, again, _) = open(&d, 64 << 20);
        assert!(again.is_empty(), "removed files are not replayed twice");
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Copies the spool directory `from` (its slot directories and their files) to `to`.
    fn copy_spool(from: &Path, to: &Path) {
        for slot in std::fs::read_dir(from).unwrap() {
            let slot = slot.unwrap().path();
            let into = to.join(slot.file_name().unwrap());
            std::fs::create_dir_all(&into).unwrap();
            for file in std::fs::read_dir(&slot).unwrap() {
                let file = file.unwrap().path();
                std::fs::copy(&file, into.join(file.file_name().unwrap())).unwrap();
            }
        }
    }

    #[test]
    fn old_files_deleted_in_part_never_bring_back_a_batch_that_was_done() {
        let d = dir("cut-delete");
        {
            let (spool, _, _) = open(&d, 64 << 20);
            let (mut done, mut open_batch, mut first) = Default::default();
            // Batch 1's records span several segments of shard 0, the first of which also
            // holds a record of batch 3, which is not done: those segments are not settled.
            // Batch 1's Done entry lands in the last one, after batch 2's records (not done).
            let record = vec![b'x'; 1000];
            spool
                .record(0, 3, &dest("aaa"), b"tags", &record, &mut first)
                .unwrap();
            for _ in 0..600 {
                spool
                    .record(0, 1, &dest("aaa"), b"tags", &record, &mut done)
                    .unwrap();
            }
            for _ in 0..100 {
                spool
                    .record(0, 2, &dest("aaa"), b"tags", &record, &mut open_batch)
                    .unwrap();
            }
            spool.done(0, 1, &mut done);
            assert!(done.segments.len() >= 3, "{:?}", done.segments);
        }
        let (spool, recovered, old) = open(&d, 64 << 20);
        assert_eq!(
            recovered.iter().map(|r| r.origin.1).collect::<Vec<_>>(),
            [2, 3]
        );
        drop((spool, recovered));
        // A replay's deletion of the old files cut by a kill after each file in turn: the next
        // producer finds batch 1 done (or gone) every time, never to be sent again.
        let slot_files: Vec<PathBuf> = old
            .old_files
            .iter()
            .filter(|f| f.exists())
            .cloned()
            .collect();
        drop(old);
        for cut in 0..=slot_files.len() {
            let copy = dir("cut-delete-copy");
            copy_spool(&d, &copy);
            for f in &slot_files[..cut] {
                let _ = std::fs::remove_file(slot(&copy).join(f.file_name().unwrap()));
            }
            let (_, again, _) = open(&copy, 64 << 20);
            let origins: Vec<u64> = again.iter().map(|r| r.origin.1).collect();
            assert!(
                !origins.contains(&1),
                "after deleting {cut} of {} old files, the done batch came back: {origins:?}",
                slot_files.len()
            );
            let _ = std::fs::remove_dir_all(&copy);
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn batches_the_replay_ledger_names_are_not_recovered_again() {
        let d = dir("ledger");
        {
            let (spool, _, _) = open(&d, 64 << 20);
            for batch in 1..=3u64 {
                let mut mark = SpoolMark::default();
                spool
                    .record(0, batch, &dest("aaa"), b"tags", b"r", &mut mark)
                    .unwrap();
            }
            // Dropped without closing: what a kill leaves.
        }
        {
            // A replay spooled batch 2 anew, then was cut short; its last entry was torn.
            let (spool, recovered, mut left) = open(&d, 64 << 20);
            assert_eq!(recovered.len(), 3);
            let origin = recovered[1].origin;
            assert_eq!(origin, (1, 2));
            spool.note_replayed(&mut left, &[origin]).unwrap();
            // A run the ledger names later than any file's is never reused.
            spool.note_replayed(&mut left, &[(9, 1)]).unwrap();
        }
        let mut ledger = std::fs::OpenOptions::new()
            .append(true)
            .open(slot(&d).join(replay_ledger::SYNCED))
            .unwrap();
        std::io::Write::write_all(&mut ledger, &[1, 0, 0, 0, 0, 0, 0, 0, 3]).unwrap();
        drop(ledger);
        let (spool, recovered, old) = open(&d, 64 << 20);
        let origins: Vec<(u64, u64)> = recovered.iter().map(|r| r.origin).collect();
        assert_eq!(origins, [(1, 1), (1, 3)]);
        assert_eq!(spool.run(), 10);
        // The ledger goes with the old files, after them.
        assert_eq!(
            old.old_files[old.old_files.len() - 2..],
            replay_ledger::files(&slot(&d))
        );
        spool.remove_old(&old);
        assert!(!slot(&d).join(replay_ledger::SYNCED).exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_replay_cut_before_its_ledger_entry_sends_the_original_once_and_not_its_copy() {
        let d = dir("copies");
        {
            let (spool, _, _) = open(&d, 64 << 20);
            for batch in 1..=3u64 {
                let mut mark = SpoolMark::default();
                for r in [b"r1", b"r2"] {
                    spool
                        .record(0, batch, &dest("aaa"), b"tags", r, &mut mark)
                        .unwrap();
                }
            }
            // Dropped without closing: what a kill leaves.
        }
        {
            // Run 2 replays: batch 1 copied and noted; batch 2 copied whole, the kill before
            // its ledger entry; batch 3 cut in the middle of its copy.
            let (spool, recovered, mut left) = open(&d, 64 << 20);
            assert_eq!(recovered.len(), 3);
            let copy = |r: &Recovered, batch: u64, records: usize| {
                let mut mark = SpoolMark::default();
                spool
                    .open_copy(0, batch, &r.dest, &r.tags, &r.copy_origin(), &mut mark)
                    .unwrap();
                for record in &r.records[..records] {
                    spool
                        .record(0, batch, &r.dest, &r.tags, record, &mut mark)
                        .unwrap();
                }
            };
            copy(&recovered[0], 11, 2);
            spool
                .note_replayed(&mut left, &[recovered[0].origin])
                .unwrap();
            copy(&recovered[1], 12, 2);
            copy(&recovered[2], 13, 1);
        }
        let (_spool, recovered, _) = open(&d, 64 << 20);
        let got: Vec<((u64, u64), Option<u64>, usize)> = recovered
            .iter()
            .map(|r| {
                (
                    r.origin,
                    r.copy_of.as_ref().map(|o| o.batch),
                    r.records.len(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [((1, 2), None, 2), ((1, 3), None, 2), ((2, 11), Some(1), 2)],
            "each batch once: the originals not yet named, and the copy of the one named"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Marks free (as settling does before reuse) every segment `run` wrote in `d`'s slot.
    fn settle_segments_of(d: &Path, run: u64) {
        for entry in std::fs::read_dir(slot(d)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|x| x != "spl") {
                continue;
            }
            let mut bytes = std::fs::read(&path).unwrap();
            if bytes.len() >= 16 && u64::from_le_bytes(bytes[8..16].try_into().unwrap()) == run {
                bytes[..8].copy_from_slice(FREE_MAGIC);
                std::fs::write(&path, &bytes).unwrap();
            }
        }
    }

    #[test]
    fn a_copy_superseded_by_a_later_replays_copy_is_never_sent() {
        let copy = |spool: &Spool, r: &Recovered, batch: u64| {
            let mut mark = SpoolMark::default();
            spool
                .open_copy(0, batch, &r.dest, &r.tags, &r.copy_origin(), &mut mark)
                .unwrap();
            for record in &r.records {
                spool
                    .record(0, batch, &r.dest, &r.tags, record, &mut mark)
                    .unwrap();
            }
            mark
        };
        // Whether the later copy's segment is still there when the next producer opens, or
        // was settled and reused (the copy then leaves no trace at all).
        for reused in [false, true] {
            let d = dir("superseded");
            {
                let (spool, _, _) = open(&d, 64 << 20);
                let mut mark = SpoolMark::default();
                for r in [b"r1", b"r2"] {
                    spool
                        .record(0, 1, &dest("aaa"), b"tags", r, &mut mark)
                        .unwrap();
                }
            }
            {
                // Run 2 copies batch 1 whole; the kill comes before its ledger entry.
                let (spool, recovered, _) = open(&d, 64 << 20);
                assert_eq!(recovered.len(), 1);
                copy(&spool, &recovered[0], 11);
            }
            {
                // Run 3 drops that copy (the original is still there), copies the original
                // again, notes it in the ledger and delivers the new copy; the kill comes
                // before the old files are deleted.
                let (spool, recovered, mut left) = open(&d, 64 << 20);
                let origins: Vec<(u64, u64)> = recovered.iter().map(|r| r.origin).collect();
                assert_eq!(origins, [(1, 1)], "the original, not run 2's copy");
                let mut mark = copy(&spool, &recovered[0], 21);
                spool
                    .note_replayed(&mut left, &[recovered[0].origin])
                    .unwrap();
                spool.done(0, 21, &mut mark);
            }
            if reused {
                settle_segments_of(&d, 3);
            }
            // Run 4: the original is named by the ledger and its latest copy was delivered;
            // run 2's copy, superseded, is not sent either, even with no trace of run 3's.
            let (_spool, recovered, _) = open(&d, 64 << 20);
            let origins: Vec<(u64, u64)> = recovered.iter().map(|r| r.origin).collect();
            assert_eq!(
                origins,
                [],
                "nothing left to send (run 3's segments reused: {reused})"
            );
            let _ = std::fs::remove_dir_all(&d);
        }
    }

    #[test]
    fn an_open_entry_keeps_a_copys_origin_and_reads_without_one() {
        let origin = CopyOrigin {
            dir: "slot-3".into(),
            run: 7,
            batch: u64::MAX,
        };
        let with = encode_open(&dest("aaa"), b"tags", Some(&origin));
        assert_eq!(
            decode_open(&with),
            Some((dest("aaa"), b"tags".to_vec(), Some(origin)))
        );
        let without = encode_open(&dest("aaa"), b"tags", None);
        assert_eq!(
            decode_open(&without),
            Some((dest("aaa"), b"tags".to_vec(), None))
        );
        // Cut inside the origin: not an open entry to trust.
        assert_eq!(decode_open(&with[..with.len() - 1]), None);
    }

    #[test]
    fn a_torn_or_flipped_entry_is_skipped_counted_and_the_rest_recovered() {
        let d = dir("torn");
        {
            let (spool, _, _) = open(&d, 64 << 20);
            let mut m = SpoolMark::default();
            for i in 0..10u32 {
                spool
                    .record(
                        0,
                        7,
                        &dest("aaa"),
                        b"tags",
                        format!("record-{i}").as_bytes(),
                        &mut m,
                    )
                    .unwrap();
            }
        }
        let seg = std::fs::read_dir(slot(&d))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.extension().is_some_and(|x| x == "spl")
                    && std::fs::read(p).unwrap().starts_with(SEGMENT_MAGIC)
            })
            .unwrap();
        let mut bytes = std::fs::read(&seg).unwrap();
        let at = bytes.windows(8).position(|w| w == b"record-4").unwrap();
        bytes[at + 3] ^= 0x20; // a flipped bit in the fifth record
        let last = bytes.windows(8).position(|w| w == b"record-9").unwrap();
        bytes[last - ENTRY_HEADER..last + 8].fill(0); // the last one cut by the kill
        std::fs::write(&seg, &bytes).unwrap();
        let (spool, recovered, _) = open(&d, 64 << 20);
        assert_eq!(spool.corrupt_entries.load(Ordering::Relaxed), 1);
        let got: Vec<String> = recovered[0]
            .records
            .iter()
            .map(|r| String::from_utf8(r.to_vec()).unwrap())
            .collect();
        let want: Vec<String> = [0, 1, 2, 3, 5, 6, 7, 8]
            .iter()
            .map(|i| format!("record-{i}"))
            .collect();
        assert_eq!(got, want);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn producers_share_a_directory_in_slots_and_recover_every_unheld_one() {
        let d = dir("slots");
        let write = |spool: &Spool, logstore: &str| {
            let mut mark = SpoolMark::default();
            spool
                .record(0, 1, &dest(logstore), b"tags", b"r", &mut mark)
                .unwrap();
        };
        let (a, _, _) = open(&d, 1 << 20);
        let b = Spool::open(&d, 64, 2, 1 << 20, 64 << 20, SpoolSync::None)
            .unwrap()
            .spool;
        assert_eq!((a.dir.clone(), b.dir.clone()), (slot(&d), d.join("slot-1")));
        write(&a, "aaa");
        write(&b, "bbb");
        // With one slot allowed, a third producer is refused, naming the directory and a holder.
        match Spool::open(&d, 1, 2, 1 << 20, 64 << 20, SpoolSync::None) {
            Err(SpoolError::Locked { dir, slots, pid }) => {
                assert_eq!((dir, slots), (d.clone(), 1));
                assert_eq!(pid, std::process::id().to_string());
            }
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("a producer took a held slot"),
        }
        // Both die (dropped without closing: what a kill leaves). The next producer takes
        // slot 0 as its own and slot 1 as an orphan, and recovers both.
        drop((a, b));
        let mut o = Spool::open(&d, 64, 2, 1 << 20, 64 << 20, SpoolSync::None).unwrap();
        let found: Vec<(PathBuf, Vec<String>)> = o
            .leftovers
            .iter()
            .map(|l| {
                let stores = l.recovered.iter().map(|r| r.dest.logstore.to_string());
                (l.dir.clone(), stores.collect())
            })
            .collect();
        assert_eq!(
            found,
            [
                (slot(&d), vec!["aaa".to_owned()]),
                (d.join("slot-1"), vec!["bbb".to_owned()])
            ]
        );
        // The orphan stays held until its files are gone and it is let go.
        let busy = Spool::open(&d, 64, 2, 1 << 20, 64 << 20, SpoolSync::None).unwrap();
        assert_eq!(busy.spool.dir, d.join("slot-2"));
        assert!(busy.leftovers.iter().all(|l| l.recovered.is_empty()));
        drop(busy);
        let orphan = o.leftovers.pop().unwrap();
        o.spool.remove_old(&orphan);
        drop(orphan);
        let next = Spool::open(&d, 64, 2, 1 << 20, 64 << 20, SpoolSync::None).unwrap();
        assert_eq!(next.spool.dir, d.join("slot-1"));
        assert!(next.nothing_to_replay(), "the orphan was sent once");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_full_spool_refuses_until_done_batches_free_their_segments() {
        let d = dir("full");
        let spool = Spool::open(&d, 64, 1, 512 << 10, 64 << 20, SpoolSync::Batch)
            .unwrap()
            .spool;
        let record = vec![b'x'; 1000];
        let mut marks = Vec::new();
        let mut batch = 0u64;
        while !spool.over_limit() {
            let mut m = SpoolMark::default();
            for _ in 0..10 {
                spool
                    .record(0, batch, &dest("aaa"), b"tags", &record, &mut m)
                    .unwrap();
            }
            spool.sealed(0, batch, "P", &mut m);
            spool.sync_batch(&m);
            marks.push((batch, m));
            batch += 1;
            assert!(batch < 1000, "never full");
        }
        assert!(spool.used_bytes() <= 512 << 10);
        assert!(!spool.wait_room(Duration::from_millis(20)));
        for (id, m) in &mut marks {
            spool.done(0, *id, m);
        }
        assert!(spool.wait_room(Duration::from_millis(20)));
        // Only the current segment and those kept for reuse are left on disk; after close, none.
        let files = || {
            std::fs::read_dir(slot(&d))
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .path()
                        .extension()
                        .is_some_and(|x| x == "spl")
                })
                .count()
        };
        let spares = files() - 1;
        let keeps = spool.keeps(&spool.state.lock());
        assert!((1..=keeps).contains(&spares), "{spares} of {keeps}");
        spool.close();
        assert_eq!(files(), 0);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_reused_segment_never_brings_back_what_it_held_before() {
        let d = dir("reuse");
        {
            let (spool, _, _) = open(&d, 1 << 20);
            let big = vec![b'o'; 2000];
            // Many settled batches, so segments fill, settle, and are reused.
            for batch in 0..400u64 {
                let mut m = SpoolMark::default();
                spool
                    .record(0, batch, &dest("old"), b"t", &big, &mut m)
                    .unwrap();
                spool.sealed(0, batch, "OLD", &mut m);
                spool.done(0, batch, &mut m);
            }
            let mut m = SpoolMark::default();
            spool
                .record(0, 9999, &dest("new"), b"t", b"fresh", &mut m)
                .unwrap();
            // Killed here.
        }
        let (spool, recovered, _) = open(&d, 1 << 20);
        assert_eq!(spool.corrupt_entries.load(Ordering::Relaxed), 0);
        assert_eq!(recovered.len(), 1);
        assert_eq!(&*recovered[0].dest.logstore, "new");
        assert_eq!(&*recovered[0].records[0], b"fresh");
        let _ = std::fs::remove_dir_all(&d);
    }
}
