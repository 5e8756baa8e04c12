//! The preparer thread: makes segment files and batch files ahead (created, sized, mapped),
//! so the adding threads take them ready, with no allocation or page faults of their own.
//! Stops when the spool closes.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use memmap2::MmapMut;
use parking_lot::{Condvar, Mutex};

use super::batch_file::Idle;
use super::disk::DirChanges;
use super::faults::Faults;
use super::files::{allocate, private_file};
use super::format::FREE_MAGIC;
use super::state::{map_segment, FilePool, Free, State};

/// Wakes the preparer thread; shared with it so that it holds no reference to the spool
/// while it waits (the spool, and its directory lock, go when the producer does).
#[derive(Default)]
pub(super) struct PrepSignal {
    /// Settled segments wait to be cleared, or the spool is gone.
    pub(super) pending: Mutex<bool>,
    pub(super) wake: Condvar,
    /// The producer is closing: the thread ends.
    pub(super) stop: AtomicBool,
}

impl PrepSignal {
    pub(super) fn notify(&self) {
        *self.pending.lock() = true;
        self.wake.notify_one();
    }
}

/// The preparer thread: makes new segments ahead (allocated, mapped, their pages writable)
/// whenever fewer than one per shard are ready, off the adding threads. Ends when the spool
/// stops it.
pub(super) struct Preparer {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) signal: Arc<PrepSignal>,
    pub(super) dir: PathBuf,
    pub(super) run: u64,
    pub(super) segment_bytes: usize,
    pub(super) max_bytes: usize,
    pub(super) used: Arc<AtomicUsize>,
    pub(super) disk_room: Arc<AtomicUsize>,
    /// Spares it keeps ready: one per shard.
    pub(super) shards: usize,
    /// The batch files, once enabled.
    pub(super) files: Arc<std::sync::OnceLock<FilePool>>,
    /// Notes the spares it makes; synced here (off the adding threads) when the spool syncs.
    pub(super) dir_changes: Arc<DirChanges>,
    pub(super) syncs: bool,
    /// Where a failed sync of its own is counted.
    pub(super) faults: Arc<Faults>,
}

impl Preparer {
    pub(super) fn run(self) {
        let mut made = 0u64;
        loop {
            {
                let mut pending = self.signal.pending.lock();
                if !*pending && !self.signal.stop.load(Ordering::Acquire) {
                    self.signal
                        .wake
                        .wait_for(&mut pending, Duration::from_secs(1));
                }
                *pending = false;
            }
            if self.signal.stop.load(Ordering::Acquire) || self.state.lock().closed {
                return;
            }
            while self.wants_new() {
                made += 1;
                if !self.make_spare(made) {
                    return;
                }
            }
            if self.syncs {
                // The new names made durable ahead of the batches that take the files. A
                // failure is counted here (the model of a failing disk showed it otherwise
                // went unsaid: the next batch's sync of the directory succeeded); that sync
                // tries again, as the entries stay marked changed.
                if let Err(e) = self.dir_changes.sync(&self.dir) {
                    self.faults.entries_sync_failed(&self.dir, &self.dir, &e);
                }
            }
            self.map_idle_file();
        }
    }

    /// Maps an idle batch file ahead, its pages made writable, when none is: the next batch
    /// then takes it with no page faults on the adding thread (mapping a file costs a fault
    /// per 4 KiB page, more than the records written in it).
    pub(super) fn map_idle_file(&self) {
        let Some(pool) = self.files.get() else {
            return;
        };
        let filling = || !pool.live.lock().is_empty();
        let taken = {
            let mut idle = pool.idle.lock();
            // Only while batches fill: at rest, the one file kept mapped is enough.
            if idle.iter().any(Idle::is_mapped) || !filling() {
                return;
            }
            idle.pop()
        };
        let Some(mut file) = taken else {
            return;
        };
        if file.map_ahead(pool.shape).is_ok() {
            pool.retained.fetch_add(1, Ordering::Relaxed);
        }
        let mut idle = pool.idle.lock();
        if !filling() && idle.iter().any(Idle::is_mapped) {
            // The producer came to rest meanwhile, with a file mapped: this one goes.
            file.unmap();
            pool.retained.fetch_sub(1, Ordering::Relaxed);
        }
        idle.push(file);
    }

    /// Fewer spares ready than shards, and room on the disk and under the limit for
    /// one more: each shard's next segment is then ready before it is needed.
    pub(super) fn wants_new(&self) -> bool {
        let state = self.state.lock();
        !state.closed
            && state.peak > 0
            && state.free.len() < self.shards
            && self.disk_room.load(Ordering::Acquire) == usize::MAX
            && self.used.load(Ordering::Acquire) + state.spare_bytes + self.segment_bytes
                <= self.max_bytes
    }

    /// A new segment file, allocated, mapped and prefaulted, marked free: the next segment a
    /// shard needs is then ready, not an allocation on the adding thread. A recovery ignores
    /// it (free, or its header still zero) and deletes it. False once closed.
    pub(super) fn make_spare(&self, n: u64) -> bool {
        let path = self.dir.join(format!("seg-{:016x}-s{n}.spl", self.run));
        let mut created = false;
        let made = (|| -> std::io::Result<(Arc<File>, MmapMut)> {
            let file = private_file()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)?;
            created = true;
            self.dir_changes.note();
            allocate(&file, self.segment_bytes)?;
            let mut map = map_segment(&file)?;
            map[..8].copy_from_slice(FREE_MAGIC);
            Ok((Arc::new(file), map))
        })();
        match made {
            Ok((file, map)) => {
                let size = map.len();
                self.state.lock().spare_bytes += size;
                self.keep(Free {
                    path,
                    file,
                    size,
                    map,
                })
            }
            Err(_) => {
                // A full disk or any other file error: the adding thread makes its own and
                // reports what it meets. Only a file this made is removed (a name already
                // taken is another file's).
                if created {
                    let _ = std::fs::remove_file(&path);
                }
                true
            }
        }
    }

    /// Puts a ready spare in the free list (or deletes it if the spool closed meanwhile).
    pub(super) fn keep(&self, spare: Free) -> bool {
        let mut state = self.state.lock();
        if state.closed {
            drop(state);
            let _ = std::fs::remove_file(&spare.path);
            self.dir_changes.note();
            return false;
        }
        state.free.push(spare);
        true
    }
}
