//! The spool: every record `send` accepts is kept in memory-mapped files under `spool_dir`
//! until its batch is delivered, so a process killed at any instant loses nothing it
//! accepted, and with syncing a power loss loses nothing durable; the next producer opened on
//! the directory delivers what is left. This module is its one door: the rest of the producer
//! sees [`Spooling`] (a call at each point a batch passes), [`SpoolMark`] (a batch's place in
//! the spool), [`SpoolError`], and, for the replay, [`Replay`] and the [`Recovered`] batches
//! it hands over.
//!
//! # Files
//!
//! ```text
//! spool_dir/
//!   slot-N/               one per live producer, held by a lock (`lock`)
//!     lock                the slot's record lock
//!     bat-<run>-<n>.spb   batch files: a default-destination batch written in place
//!     seg-<run>-<seq>.spl segments: entries (open, record, sealed, body, done) per shard
//!     replayed.log        the replay ledger (`replay_ledger`); replayed.boot, this boot's
//! ```
//!
//! - **Batch files** (`batch_file`, `file_pool`): the batch's buffer *is* the file's mapping, so
//!   a record costs an index entry and its CRC. Once compressed, the body goes to a segment
//!   and the file back to the pool.
//! - **Segments** (`segment`, `format`): other destinations' records (possibly 100 000 small
//!   batches, one per device) and replayed batches, copied entry by entry; 8-byte aligned
//!   entries with a CRC-32, each append zeroing the next header so a scan ends there. A segment
//!   is settled once full and every batch in it is done, in order per shard, then kept for
//!   reuse (marked free) or deleted.
//! - Everything is private to the user (directories 0700, files 0600) and bounded by
//!   `spool_max_bytes`: beyond it records wait up to `max_block_ms` or are refused as a full
//!   buffer. Files are allocated whole when made, so a full disk is an error then, never a
//!   fault while writing.
//!
//! # Recovery
//!
//! At open (`recovery`), every segment and batch file is scanned in the order it was begun; a
//! torn or corrupt entry is skipped and counted. Every batch not done comes back as a
//! [`Recovered`], its pack id kept when it was sealed, and is spooled again under the new run
//! before the old files are deleted (oldest first, so a cut deletion never leaves records
//! without their `Done`). The replay ledger names what was spooled again, so a replay cut
//! short never sends a batch twice. The new run is later than every run any file names.
//!
//! # Durability (`spool_sync`)
//!
//! - `none`: survives the process (the page cache outlives it), not a power loss.
//! - `batch`: a batch's files are synced before its first attempt; when a sync fails the
//!   batch is written again as its body on a fresh segment and synced, else sent from memory
//!   and counted as not durable (`faults`).
//! - `interval:<ms>`: every file on a timer thread; a batch file a timed sync took goes back
//!   only once its body's segment is synced too (a group commit).
//! - At close, whatever the setting: what a close leaves (kept for the next producer) is
//!   synced first, and a clean close syncs the directory after deleting its files (a power
//!   loss would otherwise bring delivered batches back).
//! - Every sync goes through `disk`, the seam a model file system takes in tests
//!   (`model_disk`, `power_tests`). Directories are synced once entries recovery relies on
//!   were made or removed; the marks that settle batches (free marks, `Done` entries) with the
//!   next sync, so a power loss sends again only the batches settled since. A file whose sync
//!   failed is never trusted again.
//!
//! # Threads
//!
//! Records are written by the adding threads (under their shard's lock), seals, bodies and
//! dones by the I/O runtime, syncs off it (its blocking pool, the timer thread); a preparer
//! thread makes files ahead so the adding threads take them ready. Without a spool
//! (`spool_dir` unset) every [`Spooling`] call does nothing, and the plain add's only cost is
//! one inlined check in [`Spooling::record_written`]. What blocks: `admit` waits up to
//! `max_block_ms` for room; `before_send` and `respool` sync on the blocking pool.

mod batch_file;
mod disk;
mod faults;
mod file_pool;
pub(in crate::producer) mod files;
mod format;
mod lock;
mod prepare;
mod recovery;
mod replay_ledger;
mod segment;
mod state;
mod store;

#[cfg(test)]
mod model_disk;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod power_tests;
#[cfg(test)]
mod store_tests;

pub use files::SpoolError;
pub(crate) use format::Compressed;
pub(crate) use recovery::Recovered;
pub(crate) use store::{BatchPlace, Replay, Requeue, SpoolMark};

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::producer::buffer::BatchBuf;
use crate::producer::config::SpoolSync;
use crate::producer::error::ProducerError;
use crate::producer::routing::Destination;
use faults::SpoolHealth;
use format::CopyOrigin;
use store::Spool;

/// The producer's spool, if it has one.
#[derive(Clone, Default)]
pub(crate) struct Spooling(Option<Arc<Spool>>);

impl Spooling {
    /// How often a running producer looks for slots whose producer died.
    pub(crate) const ORPHAN_CHECK: std::time::Duration = lock::ORPHAN_CHECK;

    /// Opens the spool under `root` (see `Spool::open`): the producer's spool, and what
    /// earlier producers left there to send again.
    pub(crate) fn open(
        root: &std::path::Path,
        slots: u32,
        shards: usize,
        max_bytes: usize,
        keep_bytes: usize,
        sync: SpoolSync,
    ) -> Result<(Spooling, Replay), SpoolError> {
        let replay = Spool::open(root, slots, shards, max_bytes, keep_bytes, sync)?;
        Ok((Spooling(Some(replay.spool.clone())), replay))
    }

    /// Whether records are spooled (then what a close leaves is kept, not lost).
    pub(crate) fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// What other producers under the same `spool_dir` left without a holder, taken to send
    /// again (see `Spool::adopt_orphans`); None without a spool or when there is nothing.
    pub(crate) fn adopt_orphans(&self) -> Option<Replay> {
        let spool = self.0.as_ref()?;
        let leftovers = spool.adopt_orphans();
        (!leftovers.is_empty()).then(|| Replay {
            spool: spool.clone(),
            leftovers,
        })
    }

    /// Whether new records find room (always, without a spool).
    #[inline]
    pub(crate) fn has_room(&self) -> bool {
        self.0.as_ref().is_none_or(|s| !s.over_limit())
    }

    /// Batches of the default destination go in batch files of their own, with this shape.
    pub(crate) fn enable_batch_files(
        &self,
        batch_max_bytes: usize,
        batch_max_count: usize,
        default_dest: &Destination,
        tags: &[u8],
    ) {
        if let Some(spool) = &self.0 {
            spool.enable_batch_files(batch_max_bytes, batch_max_count, default_dest, tags);
        }
    }

    /// Before records are accepted: a spool over `spool_max_bytes` waits up to `max_block`
    /// for room, then refuses them.
    pub(crate) fn admit(&self, max_block: Duration) -> Result<(), ProducerError> {
        let Some(spool) = &self.0 else { return Ok(()) };
        let started = Instant::now();
        if spool.over_limit() && !spool.wait_room(max_block) {
            return Err(ProducerError::SpoolFull {
                used: spool.used_bytes(),
                limit: spool.max_bytes(),
                waited_ms: started.elapsed().as_millis() as u64,
                disk_full: spool.disk_full(),
            });
        }
        Ok(())
    }

    /// A batch opens: a batch file to write it in (its buffer is the file's mapping), when
    /// it is the default destination's, its first record fits one, and one can be had.
    pub(crate) fn batch_opened(
        &self,
        batch: u64,
        default_dest: bool,
        fits_a_file: bool,
        mark: &mut SpoolMark,
    ) -> Option<BatchBuf> {
        match &self.0 {
            Some(spool) if default_dest && fits_a_file => spool.take_batch_file(batch, mark),
            _ => None,
        }
    }

    /// The record at `buf[from..]` was written into its batch: indexed in its batch file, or
    /// appended to the shard's segment.
    #[inline(always)]
    pub(crate) fn record_written(
        &self,
        place: BatchPlace<'_>,
        buf: &BatchBuf,
        from: usize,
        mark: &mut SpoolMark,
    ) -> Result<(), ProducerError> {
        match &self.0 {
            None => Ok(()),
            Some(spool) => record_in(spool, place, buf, from, mark),
        }
    }

    /// A replay's copy of an earlier producer's batch opens, naming its original.
    pub(crate) fn copy_opened(
        &self,
        place: BatchPlace<'_>,
        original: &CopyOrigin,
        mark: &mut SpoolMark,
    ) -> Result<(), ProducerError> {
        let Some(spool) = &self.0 else { return Ok(()) };
        Ok(spool.open_copy(place, original, mark)?)
    }

    /// One record of a replay's copy.
    pub(crate) fn copy_record(
        &self,
        place: BatchPlace<'_>,
        record: &[u8],
        mark: &mut SpoolMark,
    ) -> Result<(), ProducerError> {
        let Some(spool) = &self.0 else { return Ok(()) };
        Ok(spool.record(place, record, mark)?)
    }

    /// A batch sealed under `pack_id` (it may be sent from now on).
    pub(crate) fn sealed(&self, shard: usize, batch: u64, pack_id: &str, mark: &mut SpoolMark) {
        if let Some(spool) = &self.0 {
            spool.sealed(shard, batch, pack_id, mark);
        }
    }

    /// What a spool that failed to take a record makes of the failure: a full disk is a
    /// full spool (the buffer-full kind, with what it held).
    pub(crate) fn refusal(&self, error: ProducerError) -> ProducerError {
        match &self.0 {
            Some(spool) if spool.disk_full() => ProducerError::SpoolFull {
                used: spool.used_bytes(),
                limit: spool.max_bytes(),
                waited_ms: 0,
                disk_full: true,
            },
            _ => error,
        }
    }

    /// An opened batch that took no record is forgotten: its buffer comes back unless it was
    /// a batch file's mapping (which goes back to the spool).
    pub(crate) fn discarded(&self, mark: &mut SpoolMark, buf: BatchBuf) -> Option<BatchBuf> {
        let Some(spool) = &self.0 else {
            return Some(buf);
        };
        let buf = spool.keep_buffer(mark, buf);
        spool.forget(mark);
        buf
    }

    /// Before its first attempt (`spool_sync = batch`): the batch's records made durable, off
    /// the I/O threads. False when a sync failed: the batch is then written again on a fresh
    /// file once compressed ([`Spooling::respool`]), before it is sent.
    pub(crate) async fn before_send(&self, mark: &mut SpoolMark) -> bool {
        let Some(spool) = &self.0 else { return true };
        if !spool.syncs_batches() {
            return true;
        }
        let spool = spool.clone();
        let taken = std::mem::take(mark);
        let synced = tokio::task::spawn_blocking(move || {
            let durable = spool.sync_batch(&taken);
            (taken, durable)
        })
        .await;
        match synced {
            Ok((taken, durable)) => {
                *mark = taken;
                durable
            }
            Err(_) => false,
        }
    }

    /// A batch whose sync failed, compressed: written again as its body on a fresh segment and
    /// synced (off the I/O threads). When that fails too, it is sent from memory, counted as
    /// not durable, and the spool is degraded (said once).
    pub(crate) async fn respool(&self, c: Compressed<'_>, records: u32, mark: &mut SpoolMark) {
        let Some(spool) = &self.0 else { return };
        let writing = spool.clone();
        let taken = std::mem::take(mark);
        // Owned for the blocking pool (a rare path: the disk failed a sync).
        let (pack_id, body) = (c.pack_id.to_owned(), c.body.to_vec());
        let (shard, batch, codec, raw_len) = (c.shard, c.batch, c.codec, c.raw_len);
        let written = tokio::task::spawn_blocking(move || {
            let mut taken = taken;
            let c = Compressed {
                shard,
                batch,
                pack_id: &pack_id,
                codec,
                raw_len,
                body: &body,
            };
            let durable = writing.respool(&c, &mut taken);
            (taken, durable)
        })
        .await;
        let durable = match written {
            Ok((taken, durable)) => {
                *mark = taken;
                durable
            }
            Err(_) => false,
        };
        if !durable {
            mark.not_durable = true;
            spool.not_durable(u64::from(records));
        }
    }

    /// The batch's raw bytes are no longer needed: its buffer, unless the batch file it is
    /// the mapping of keeps it until the batch is done.
    pub(crate) fn raw_released(&self, mark: &mut SpoolMark, raw: BatchBuf) -> Option<BatchBuf> {
        match &self.0 {
            Some(spool) => spool.keep_buffer(mark, raw),
            None => Some(raw),
        }
    }

    /// The batch is compressed: its body now stands for its records (a batch file goes back).
    pub(crate) fn compressed(&self, c: &Compressed<'_>, mark: &mut SpoolMark) {
        if let Some(spool) = &self.0 {
            spool.compressed(c, mark);
        }
    }

    /// The batch reached its outcome. Delivered or failed for good, it is done and marked so
    /// (before its report goes out); given up because the producer closed, it stays for the
    /// next producer on the directory. Answers whether it is kept there.
    pub(crate) fn settled(
        &self,
        shard: usize,
        batch: u64,
        closed: bool,
        mark: &mut SpoolMark,
    ) -> bool {
        let Some(spool) = &self.0 else { return false };
        if closed {
            spool.keep(mark);
        } else {
            spool.done(shard, batch, mark);
        }
        closed
    }

    /// Nothing is in flight: the spool hands back what it kept for the burst.
    pub(crate) fn at_rest(&self) {
        if let Some(spool) = &self.0 {
            spool.at_rest();
        }
    }

    /// The producer closed: the spool is closed (the files of finished batches deleted; what
    /// is left stays on disk, no longer open here; the slot let go at once when
    /// `everything_settled`). When the producer `leaves_records` (kept, or unsettled at the
    /// timeout), every file and the directory are synced first, whatever `spool_sync` says:
    /// answers whether what is left is durable (true without a spool, where nothing is kept).
    pub(crate) fn producer_closed(&self, everything_settled: bool, leaves_records: bool) -> bool {
        let Some(spool) = &self.0 else { return true };
        let durable = !leaves_records || spool.sync_all();
        spool.close(everything_settled);
        durable
    }

    /// Entries found torn or corrupt when the spool was opened.
    pub(crate) fn corrupt_entries(&self) -> u64 {
        self.0.as_ref().map_or(0, |s| {
            s.corrupt_entries.load(std::sync::atomic::Ordering::Relaxed)
        })
    }

    /// Failed syncs, records sent not durable, and whether the spool is degraded.
    pub(crate) fn health(&self) -> SpoolHealth {
        self.0
            .as_ref()
            .map_or_else(Default::default, |s| s.faults().health())
    }

    /// Bytes of spool files on disk.
    pub(crate) fn used_bytes(&self) -> u64 {
        self.0.as_ref().map_or(0, |s| s.used_bytes() as u64)
    }

    /// Segments and batch files in this producer's directory, listed now (for metrics: a
    /// directory read, never on the add path).
    pub(crate) fn data_files(&self) -> u64 {
        self.0.as_ref().map_or(0, |s| s.data_files())
    }
}

#[inline(never)]
fn record_in(
    spool: &Spool,
    place: BatchPlace<'_>,
    buf: &BatchBuf,
    from: usize,
    mark: &mut SpoolMark,
) -> Result<(), ProducerError> {
    if mark.in_file() {
        return Ok(spool.index_record(mark, buf, from)?);
    }
    Ok(spool.record(place, &buf[from..], mark)?)
}
