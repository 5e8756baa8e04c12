//! A model file system for the spool's durability seam (`disk`), for tests: what a power cut
//! would leave of a directory tree, given the syncs the spool made.
//!
//! Every file's bytes are its real bytes (the spool writes them through its mappings as
//! usual); the model keeps, beside them, what is *durable*:
//! - a file's durable bytes are what they were at its last successful `sync_file`; pages
//!   written since survive a cut only by chance (each one independently: the kernel writes
//!   dirty pages back in no promised order), so a cut tears files;
//! - a directory's durable entries are its listing at its last successful `sync_dir`: a file
//!   made since is lost with its contents, a file removed since comes back with its durable
//!   bytes (a file never synced comes back empty);
//! - a sync can be made to fail ([`ModelDisk::fail_next`]); the file is then *poisoned* as
//!   Linux leaves it: its failed pages are never written, and its later syncs answer success
//!   without making anything durable — including one that runs while the failing one is still
//!   under way, as Linux tells a failed writeback to only one of two syncs of a file description
//!   ([`ModelDisk::hold_failing_syncs`] holds a failing sync until another of the same file
//!   begins, to interleave them).
//!
//! [`ModelDisk::crash`] writes what a cut at that instant leaves into a new directory, where
//! a producer recovers as it would after a reboot.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::disk::model::{self, Served};

const PAGE: usize = 4096;

/// The model, serving every path under its root while it lives.
pub(crate) struct ModelDisk {
    root: PathBuf,
    state: Mutex<State>,
    /// Signalled when a file's sync begins.
    sync_begun: Condvar,
}

#[derive(Default)]
struct State {
    durable: HashMap<PathBuf, Vec<u8>>,
    entries: HashMap<PathBuf, BTreeSet<OsString>>,
    poisoned: HashSet<PathBuf>,
    /// Syncs still to fail, counted down; failed so far.
    fail: usize,
    failed: u64,
    /// Successful syncs so far.
    synced: u64,
    /// Syncs begun, per file.
    begun: HashMap<PathBuf, u64>,
    /// How long a failing sync waits for another sync of its file to begin.
    hold_failing: Option<Duration>,
}

impl ModelDisk {
    /// Serves `root` (made here, durable, empty).
    pub(crate) fn serve(root: &Path) -> Arc<ModelDisk> {
        std::fs::create_dir_all(root).expect("a test directory");
        let disk = Arc::new(ModelDisk {
            root: root.to_owned(),
            state: Mutex::new(State::default()),
            sync_begun: Condvar::new(),
        });
        disk.state
            .lock()
            .entries
            .insert(root.to_owned(), BTreeSet::new());
        let served: Arc<dyn Served> = disk.clone();
        model::register(root, &served);
        disk
    }

    /// The next `n` syncs (of files or directories) fail with EIO.
    pub(crate) fn fail_next(&self, n: usize) {
        self.state.lock().fail = n;
    }

    /// From now on a failing sync of a file answers only once another sync of the same file
    /// has begun, or `wait` has passed.
    pub(crate) fn hold_failing_syncs(&self, wait: Duration) {
        self.state.lock().hold_failing = Some(wait);
    }

    /// Syncs of `path` begun so far.
    pub(crate) fn syncs_begun(&self, path: &Path) -> u64 {
        self.state.lock().begun.get(path).copied().unwrap_or(0)
    }

    /// Syncs failed so far.
    pub(crate) fn failed(&self) -> u64 {
        self.state.lock().failed
    }

    /// Successful syncs so far.
    pub(crate) fn synced(&self) -> u64 {
        self.state.lock().synced
    }

    /// Writes what a power cut now would leave of the root into `into` (made here); `keep`
    /// decides, for each page written since its file's last sync, whether it reached the disk.
    pub(crate) fn crash(&self, into: &Path, keep: &mut dyn FnMut() -> bool) {
        let state = self.state.lock();
        std::fs::create_dir_all(into).expect("a test directory");
        image(&state, &self.root, into, keep);
    }
}

fn image(state: &State, dir: &Path, into: &Path, keep: &mut dyn FnMut() -> bool) {
    let Some(names) = state.entries.get(dir) else {
        return;
    };
    for name in names {
        let path = dir.join(name);
        let target = into.join(name);
        if state.entries.contains_key(&path) || path.is_dir() {
            std::fs::create_dir_all(&target).expect("a test directory");
            image(state, &path, &target, keep);
            continue;
        }
        let mut bytes = state.durable.get(&path).cloned().unwrap_or_default();
        if !state.poisoned.contains(&path) {
            if let Ok(now) = std::fs::read(&path) {
                for (i, page) in now.chunks(PAGE).enumerate() {
                    let at = i * PAGE;
                    let old = bytes.get(at..(at + page.len()).min(bytes.len()));
                    if old != Some(page) && keep() {
                        if bytes.len() < at + page.len() {
                            bytes.resize(at + page.len(), 0);
                        }
                        bytes[at..at + page.len()].copy_from_slice(page);
                    }
                }
            }
        }
        std::fs::write(&target, &bytes).expect("a test file");
    }
}

impl State {
    fn fails(&mut self) -> bool {
        if self.fail == 0 {
            return false;
        }
        self.fail -= 1;
        self.failed += 1;
        true
    }
}

fn eio() -> io::Error {
    io::Error::from_raw_os_error(5)
}

impl Served for ModelDisk {
    fn sync_file(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        let begun = {
            let n = state.begun.entry(path.to_owned()).or_default();
            *n += 1;
            *n
        };
        self.sync_begun.notify_all();
        if state.fails() {
            state.poisoned.insert(path.to_owned());
            if let Some(wait) = state.hold_failing {
                let deadline = Instant::now() + wait;
                while state.begun.get(path) == Some(&begun)
                    && !self.sync_begun.wait_until(&mut state, deadline).timed_out()
                {
                }
            }
            return Err(eio());
        }
        state.synced += 1;
        if !state.poisoned.contains(path) {
            let bytes = std::fs::read(path)?;
            state.durable.insert(path.to_owned(), bytes);
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        if state.fails() {
            return Err(eio());
        }
        state.synced += 1;
        let names = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        state.entries.insert(dir.to_owned(), names);
        Ok(())
    }
}

impl Drop for ModelDisk {
    fn drop(&mut self) {
        model::unregister(&self.root);
    }
}
