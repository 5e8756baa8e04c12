//! What the spool holds in memory, as plain data: the segments' table ([`State`]: every
//! [`Segment`] by sequence, each shard's chain, the [`Free`] ones kept for reuse), each shard's
//! open segment ([`Writer`], which appends one entry), the files whose marks wait for a sync
//! ([`PendingMarks`]), and the batch-file pool ([`FilePool`], [`Committing`]).
//!
//! What the spool does with them lives beside: `segment` (entries), `file_pool` (batch
//! files), `prepare` (segments made ahead), `store` (open, close, admission). This file
//! imports none of them, so the spool's rooms depend on it one way.
//!
//! Plain data: every field is behind the spool's locks or atomics; nothing here blocks or
//! drops anything.

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use memmap2::MmapMut;
use parking_lot::{Condvar, Mutex};

use super::batch_file::{BatchFile, Idle, Shape};
use super::format::{align8, Kind, ENTRY_HEADER, ENTRY_MAGIC};

/// The segments' state, behind the spool's lock: every segment by sequence, each shard's chain,
/// the free ones kept for reuse.
pub(super) struct State {
    pub(super) segments: BTreeMap<u64, Segment>,
    /// Per shard, its segments in order.
    pub(super) chains: Vec<VecDeque<u64>>,
    /// Settled segments kept for reuse (see `Spool::keeps`). Not cleared: a scan of the
    /// next use ends at the first entry of an earlier use (its segment sequence differs).
    pub(super) free: Vec<Free>,
    /// Bytes of `free` files (on disk, not in `used`).
    pub(super) spare_bytes: usize,
    /// The most segments in use at once so far.
    pub(super) peak: usize,
    /// The spool closed: spares still being cleared are deleted instead of kept.
    pub(super) closed: bool,
}

/// Files holding marks of settled batches (a batch file's free mark, a segment's `Done`
/// entries) written since the last sync: made durable with the next one, so that a power loss
/// brings back only the batches settled since, to be sent again.
#[derive(Default)]
pub(super) struct PendingMarks {
    files: Vec<(PathBuf, Arc<File>)>,
}

impl PendingMarks {
    pub(super) fn add(&mut self, path: PathBuf, file: Arc<File>) {
        if !self.files.iter().any(|(p, _)| *p == path) {
            self.files.push((path, file));
        }
    }

    /// A file deleted: its marks need no sync.
    pub(super) fn forget(&mut self, path: &Path) {
        if !self.files.is_empty() {
            self.files.retain(|(p, _)| p != path);
        }
    }

    pub(super) fn take(&mut self) -> Vec<(PathBuf, Arc<File>)> {
        std::mem::take(&mut self.files)
    }
}

/// One open segment of one shard, mapped.
pub(super) struct Writer {
    pub(super) seq: u64,
    pub(super) map: MmapMut,
    pub(super) pos: usize,
}

impl Writer {
    /// Appends one entry, or answers `false` when it does not fit.
    pub(super) fn append(&mut self, kind: Kind, run: u64, batch: u64, parts: &[&[u8]]) -> bool {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let size = ENTRY_HEADER + align8(len);
        if self.pos + size > self.map.len() || len > u32::MAX as usize {
            return false;
        }
        let at = self.pos;
        let entry = &mut self.map[at..at + ENTRY_HEADER + len];
        let mut o = ENTRY_HEADER;
        for p in parts {
            entry[o..o + p.len()].copy_from_slice(p);
            o += p.len();
        }
        entry[8..12].copy_from_slice(&(len as u32).to_le_bytes());
        entry[12..16].copy_from_slice(&[kind as u8, 0, 0, 0]);
        entry[16..24].copy_from_slice(&run.to_le_bytes());
        entry[24..32].copy_from_slice(&batch.to_le_bytes());
        entry[32..40].copy_from_slice(&self.seq.to_le_bytes());
        // One pass over everything after the CRC: length, kind, run, batch, segment, payload.
        let crc = crc32fast::hash(&entry[8..]);
        entry[4..8].copy_from_slice(&crc.to_le_bytes());
        // The next entry's header zeroed (a reused segment holds older bytes there): where a
        // scan finds it, this use's entries end.
        let next = at + size;
        let zeroed = (next + ENTRY_HEADER).min(self.map.len());
        self.map[next.min(zeroed)..zeroed].fill(0);
        // The magic last: a scan that finds it finds the rest written (and checks the CRC).
        self.map[at..at + 4].copy_from_slice(&ENTRY_MAGIC.to_le_bytes());
        self.pos += size;
        true
    }
}

/// What the spool knows of one segment.
pub(super) struct Segment {
    pub(super) path: PathBuf,
    pub(super) file: Arc<File>,
    /// Batches with an entry in it that are not done.
    pub(super) live: u32,
    /// Its writer moved on (no more entries will come); its mapping, kept for reuse.
    pub(super) full: Option<MmapMut>,
}

/// A settled segment kept mapped for the next one a shard needs: its pages are already in
/// memory, so writing into it costs no page faults.
pub(super) struct Free {
    pub(super) path: PathBuf,
    pub(super) file: Arc<File>,
    pub(super) size: usize,
    /// Kept mapped: a segment mapped again takes a fault per page (the file system's write
    /// notification) that costs more than its records.
    pub(super) map: MmapMut,
}

/// Maps a whole segment file and makes every page writable in one call: a fault per 4 KiB
/// page taken on the add path (each ~10 records) costs more than the records' own copies.
pub(super) fn map_segment(file: &File) -> std::io::Result<MmapMut> {
    // SAFETY: the file belongs to this producer, which holds the directory's lock; nothing
    // else maps or truncates it while this mapping lives.
    let map = unsafe { MmapMut::map_mut(file)? };
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::PopulateWrite);
    Ok(map)
}

/// The batch files of the default destination's batches (see `batch_file`).
pub(super) struct FilePool {
    pub(super) shape: Shape,
    /// The default destination and the tags, as every file's header holds them.
    pub(super) open: Vec<u8>,
    /// Files no batch uses; the mapped ones are taken first.
    pub(super) idle: Mutex<Vec<Idle>>,
    /// Files of batches not yet done, by sequence: what `interval` syncs.
    pub(super) live: Mutex<BTreeMap<u64, (PathBuf, Arc<File>)>>,
    /// Syncs that took the live files (`sync_all`: the timer's, and those before old files
    /// are deleted), counted under `live`'s lock, where a file taken reads the count: whether
    /// a file's records may be durable only in that file.
    pub(super) ticks: AtomicU64,
    /// Names new files.
    pub(super) made: AtomicU64,
    /// The most files in use at once so far: how many are kept idle.
    pub(super) peak: AtomicUsize,
    /// Bytes of idle files: on disk (in `used`) but room for the next batches.
    pub(super) idle_bytes: AtomicUsize,
    /// Data mappings kept after their batch was compressed (in flight or idle).
    pub(super) retained: AtomicUsize,
    /// At most this many are.
    pub(super) retain_max: usize,
    pub(super) closed: AtomicBool,
}

impl FilePool {
    /// Takes a file off the live list: how many stay live.
    pub(super) fn leave_live(&self, seq: u64) -> usize {
        let mut live = self.live.lock();
        live.remove(&seq);
        live.len()
    }

    /// An idle file about to be deleted leaves the count of retained mappings if mapped.
    pub(super) fn unretain(&self, idle: &Idle) {
        if idle.is_mapped() {
            self.retained.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Batch files whose compressed bodies wait for a sync (`spool_sync = interval`, files a timed
/// sync took while their batch filled): given back only once the segments holding the bodies
/// are durable, so that a power loss never finds a file reused (or marked free) before its
/// records are on disk in another form. And the segments holding a body settle only once its
/// file's free mark is durable: a power loss must never find the file still naming the batch
/// with the segments that say it was done (its `Done` entry) gone or marked free.
#[derive(Default)]
pub(super) struct Committing {
    pub(super) queue: Mutex<CommitQueue>,
    pub(super) wake: Condvar,
    /// Tests only: the sync thread leaves the files to the test, which commits them itself
    /// at chosen instants (`Spool::commit`), so that every order of commits and timed syncs
    /// is explored rather than the one the thread's timing happens to give.
    #[cfg(test)]
    pub(super) by_hand: AtomicBool,
}

/// A batch file waiting for its body's commit: the batch, the segments holding the body (each
/// held unsettled by it), and whether the batch settled meanwhile.
pub(super) struct Waiting {
    pub(super) file: BatchFile,
    pub(super) batch: u64,
    pub(super) segments: Vec<u64>,
    pub(super) settled: bool,
}

/// Where each waiting file is, behind one lock so that a batch settling finds its file
/// wherever it is.
#[derive(Default)]
pub(super) struct CommitQueue {
    /// Waiting for the next commit.
    pub(super) waiting: Vec<Waiting>,
    /// Taken by a commit under way: each batch, and whether it settled meanwhile.
    pub(super) in_commit: Vec<(u64, bool)>,
    /// Files whose bodies' sync failed: their records may be durable only there, so they are
    /// never reused, and kept (their segments held) until their batch settles; at a close
    /// with everything settled deleted, else left for the next producer (a recovery skips
    /// the batches their `Done` entries settle).
    pub(super) stranded: Vec<Waiting>,
    /// Segments whose file went (its free mark's sync failed, so it was deleted) before that
    /// removal was durable: each settles once a directory sync covers the change numbered
    /// with it (`DirChanges`).
    pub(super) after_dir_sync: Vec<(u64, u64)>,
}

impl Committing {
    /// Takes the files waiting, for a commit.
    pub(super) fn take(queue: &mut CommitQueue) -> Vec<Waiting> {
        let taken = std::mem::take(&mut queue.waiting);
        queue
            .in_commit
            .extend(taken.iter().map(|w| (w.batch, w.settled)));
        taken
    }

    /// Whether the sync thread leaves the files to a test.
    pub(super) fn by_hand(&self) -> bool {
        #[cfg(test)]
        {
            self.by_hand.load(std::sync::atomic::Ordering::Acquire)
        }
        #[cfg(not(test))]
        {
            false
        }
    }
}

/// How long the sync thread gathers files waiting for a commit before it syncs their bodies,
/// and how many it syncs for at once at most: one `fdatasync` per group, not per file.
pub(super) const COMMIT_GATHER: Duration = Duration::from_millis(10);
pub(super) const COMMIT_GROUP: usize = 16;
