//! The spool's durability seam: every call whose outcome decides what survives a power loss
//! goes through here — a file's data made durable (`fdatasync`), a directory's entries made
//! durable (`fsync` of the directory), a directory made. Nothing else in the spool calls them.
//!
//! What it guarantees: an error is answered, never swallowed; the callers decide what a failed
//! sync means (`Spool::sync_batch`: the batch is written again on a fresh file; a file whose
//! sync failed is never trusted again, as Linux may have dropped its dirty pages and a later
//! sync of the same file answers success without them). The spool's data files are synced only
//! through `Faults::sync_file`, one sync of a file at a time, as Linux tells a failed
//! writeback to only one of two syncs of a file description running at once.
//!
//! Runs on whichever thread calls (the I/O runtime's blocking pool, the sync and preparer
//! threads, the opening thread). Blocks for as long as the disk takes.
//!
//! In tests, a directory registered with [`model::register`] is served by a model file system
//! instead (see `model_disk`): it records what each sync made durable, fails the syncs it is
//! told to, and builds what a power cut would leave.

use std::fs::File;
use std::io;
use std::path::Path;

/// Makes `file`'s written bytes (at `path`) durable.
pub(crate) fn sync_file(file: &File, path: &Path) -> io::Result<()> {
    #[cfg(test)]
    if let Some(answer) = model::sync_file(path) {
        return answer;
    }
    let _ = path;
    file.sync_data()
}

/// Makes `dir`'s entries (files made or removed in it) durable. POSIX promises nothing of a
/// new file's name after a power loss until its directory is synced.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(test)]
    if let Some(answer) = model::sync_dir(dir) {
        return answer;
    }
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// A counter of changes to a directory's entries and of those made durable: files are made
/// and removed on several threads, and one directory sync covers every change made before it
/// began, so a sync is needed only when something changed since the last one began. Its syncs
/// go one at a time, so that one that starts after another failed syncs again (the failure
/// left the changes unsynced) rather than relying on it.
#[derive(Debug, Default)]
pub(crate) struct DirChanges {
    changed: std::sync::atomic::AtomicU64,
    synced: std::sync::atomic::AtomicU64,
    syncing: parking_lot::Mutex<()>,
}

impl DirChanges {
    /// An entry was made or removed.
    pub(crate) fn note(&self) {
        self.changed
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// The number of the latest change: a sync covers it once [`DirChanges::covers`] says so.
    pub(crate) fn latest(&self) -> u64 {
        self.changed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether a sync that succeeded covered change number `change`.
    pub(crate) fn covers(&self, change: u64) -> bool {
        self.synced.load(std::sync::atomic::Ordering::Acquire) >= change
    }

    /// Syncs `dir` when an entry changed since the last sync began.
    pub(crate) fn sync(&self, dir: &Path) -> io::Result<()> {
        use std::sync::atomic::Ordering;
        let _one_syncer = self.syncing.lock();
        let changed = self.changed.load(Ordering::Acquire);
        if self.synced.load(Ordering::Acquire) >= changed {
            return Ok(());
        }
        sync_dir(dir)?;
        self.synced.fetch_max(changed, Ordering::AcqRel);
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod model {
    //! The test hook: directories served by a model file system (see `model_disk`).
    use std::io;
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Weak};

    use parking_lot::Mutex;

    /// What a model answers for the paths under its root.
    pub(crate) trait Served: Send + Sync {
        fn sync_file(&self, path: &Path) -> io::Result<()>;
        fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    }

    static MODELS: Mutex<Vec<(PathBuf, Weak<dyn Served>)>> = Mutex::new(Vec::new());

    /// Serves every path under `root` by `model` until [`unregister`] (or the model goes).
    pub(crate) fn register(root: &Path, model: &Arc<dyn Served>) {
        MODELS.lock().push((root.to_owned(), Arc::downgrade(model)));
    }

    pub(crate) fn unregister(root: &Path) {
        MODELS.lock().retain(|(r, _)| r != root);
    }

    fn serving(path: &Path) -> Option<Arc<dyn Served>> {
        let models = MODELS.lock();
        models
            .iter()
            .find(|(root, _)| path.starts_with(root))
            .and_then(|(_, m)| m.upgrade())
    }

    pub(super) fn sync_file(path: &Path) -> Option<io::Result<()>> {
        serving(path).map(|m| m.sync_file(path))
    }

    pub(super) fn sync_dir(dir: &Path) -> Option<io::Result<()>> {
        serving(dir).map(|m| m.sync_dir(dir))
    }
}
