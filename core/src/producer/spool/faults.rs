//! What the spool does with a disk that fails: every failed sync is counted and its file
//! poisoned — never reused, deleted once nothing needs it — because after a failed
//! `fdatasync` Linux may have dropped the file's dirty pages and marked them clean, so a later
//! sync of the same file answers success without them. A batch whose copy cannot be made
//! durable on a fresh file either is sent from memory and counted as not durable, and the spool
//! is *degraded* (seen in `stats()`) until a sync succeeds again. Each kind of fault is said
//! once on stderr, with what it means.
//!
//! # One syncer per file
//!
//! Linux reports a failed writeback once per open file description: of two threads syncing
//! the same file at once, only one is told, and the other answers success for pages that
//! never reached the disk. Every sync of a spool file therefore goes through
//! [`Faults::sync_file`], which holds the file's lock (one of a few striped by path) across
//! the check for poison, the sync and the poisoning: a sync that starts after another failed
//! sees the poison, whatever thread it runs on.
//!
//! # Threads
//!
//! Runs on whichever thread syncs (the I/O runtime's blocking pool, the sync thread, the
//! closing thread); the poisoned set is behind a lock taken only where files are settled or
//! taken for reuse, and only once a sync has failed. A sync blocks another of the same file
//! (or one that shares its stripe) for as long as the disk takes.

use std::collections::HashSet;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

use parking_lot::Mutex;

use super::disk;

/// The spool's health, as `stats()` shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SpoolHealth {
    /// Syncs (`fdatasync`, a directory's `fsync`) the disk failed.
    pub(crate) sync_failures: u64,
    /// Records sent while their spool copy was not durable: a power loss before their
    /// delivery would have lost them.
    pub(crate) not_durable: u64,
    /// The last batch that needed a sync could not be made durable.
    pub(crate) degraded: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Faults {
    sync_failures: AtomicU64,
    not_durable: AtomicU64,
    degraded: AtomicBool,
    /// Kinds of fault already said on stderr (bits).
    said: AtomicU8,
    any_poisoned: AtomicBool,
    poisoned: Mutex<HashSet<PathBuf>>,
    /// Each file's syncs one at a time (see "One syncer per file"), striped by path.
    sync_locks: [Mutex<()>; SYNC_STRIPES],
}

/// Stripes of the sync locks: two files share one only by chance, and then only wait.
const SYNC_STRIPES: usize = 32;

fn stripe(path: &Path) -> usize {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut hasher);
    (hasher.finish() % SYNC_STRIPES as u64) as usize
}

const SAID_FAILED: u8 = 1;
const SAID_DEGRADED: u8 = 2;
const SAID_COPY: u8 = 4;

impl Faults {
    /// Makes `file` (at `path`, in the spool directory `dir`) durable, the only way the spool
    /// syncs its files. False when it is poisoned (an earlier sync of it failed: a sync now
    /// would answer success without the pages it lost) or this sync fails (counted, and the
    /// file poisoned before any other sync of it may start).
    pub(crate) fn sync_file(&self, dir: &Path, path: &Path, file: &File) -> bool {
        let _one_syncer = self.sync_locks[stripe(path)].lock();
        if self.is_poisoned(path) {
            return false;
        }
        match disk::sync_file(file, path) {
            Ok(()) => true,
            Err(e) => {
                self.poisoned.lock().insert(path.to_owned());
                self.any_poisoned.store(true, Ordering::Release);
                self.failed(dir, path, &e);
                false
            }
        }
    }

    /// A sync of the directory `of` (its entries: files made or removed in it; `dir` itself,
    /// or a parent of it, or an orphan's slot) failed: counted and said, like a file's. A
    /// directory is not poisoned: its next sync tries again.
    pub(crate) fn entries_sync_failed(&self, dir: &Path, of: &Path, error: &std::io::Error) {
        self.failed(dir, of, error);
    }

    /// A sync of `what` (a file, or a directory) failed: counted, and said once.
    fn failed(&self, dir: &Path, what: &Path, error: &std::io::Error) {
        self.sync_failures.fetch_add(1, Ordering::Relaxed);
        if self.said.fetch_or(SAID_FAILED, Ordering::Relaxed) & SAID_FAILED == 0 {
            eprintln!(
                "loghose: spool_dir {}: a sync failed ({}: {error}); a file whose sync \
                 failed is not used again, and what it held is written again on a fresh file \
                 before it is sent (spool_sync=batch) or durable only once delivered \
                 (interval) (counted in stats as spool_sync_failures; said once)",
                dir.display(),
                what.display()
            );
        }
    }

    /// Whether a sync of the file at `path` failed (it is then never reused).
    pub(crate) fn is_poisoned(&self, path: &Path) -> bool {
        self.any_poisoned.load(Ordering::Acquire) && self.poisoned.lock().contains(path)
    }

    /// The file at `path` is deleted: no longer remembered.
    pub(crate) fn forget(&self, path: &Path) {
        if self.any_poisoned.load(Ordering::Acquire) {
            self.poisoned.lock().remove(path);
        }
    }

    /// `records` are sent although their copy could not be made durable: the spool is
    /// degraded until a sync succeeds again.
    pub(crate) fn not_durable(&self, dir: &Path, records: u64) {
        self.not_durable.fetch_add(records, Ordering::Relaxed);
        self.degraded.store(true, Ordering::Release);
        if self.said.fetch_or(SAID_DEGRADED, Ordering::Relaxed) & SAID_DEGRADED == 0 {
            eprintln!(
                "loghose: spool_dir {}: the disk keeps failing its syncs; records are sent from \
                 memory and a power loss before their delivery would lose them (counted in \
                 stats as spool_not_durable, spool_degraded is true until a sync succeeds; \
                 said once)",
                dir.display()
            );
        }
    }

    /// A timed sync (`interval`) failed: the records written since the last good one are
    /// durable only once delivered, and the spool is degraded until a sync succeeds.
    pub(crate) fn degrade(&self) {
        self.degraded.store(true, Ordering::Release);
    }

    /// A batch an earlier producer left could not be spooled again (the disk failed): it
    /// stays in the old files, kept for the next producer.
    pub(crate) fn copy_failed(&self, dir: &Path) {
        if self.said.fetch_or(SAID_COPY, Ordering::Relaxed) & SAID_COPY == 0 {
            eprintln!(
                "loghose: spool_dir {}: a batch left by an earlier producer could not be \
                 written again here; it stays in the old files, which are kept, and the next \
                 producer on the directory sends it (said once)",
                dir.display()
            );
        }
    }

    /// A sync succeeded: the spool is healthy again.
    pub(crate) fn synced(&self) {
        if self.degraded.load(Ordering::Relaxed) {
            self.degraded.store(false, Ordering::Release);
        }
    }

    /// Whether the spool is degraded (its last needed sync failed).
    pub(crate) fn degraded(&self) -> bool {
        self.degraded.load(Ordering::Acquire)
    }

    pub(crate) fn health(&self) -> SpoolHealth {
        SpoolHealth {
            sync_failures: self.sync_failures.load(Ordering::Relaxed),
            not_durable: self.not_durable.load(Ordering::Relaxed),
            degraded: self.degraded(),
        }
    }
}
