//! Who writes where under `spool_dir`: one slot directory per producer, each held by a lock.
//!
//! # Slots
//!
//! `spool_dir` is shared by every producer given it — the worker processes of a pre-fork
//! server (gunicorn, uvicorn `--workers`, celery), a master and its workers, a process and
//! the one that replaces it. Each producer takes a slot of its own, `slot-<n>`: the first
//! (lowest `n`) that nobody holds, made when every existing one is held, at most `slots` of
//! them. A slot is held by a POSIX record lock on its `lock` file (which names the holder's
//! pid): the kernel releases it when the process ends, however it ends, and a forked child
//! does not inherit it; a list of this process's own slots keeps its other producers out
//! (a record lock cannot tell them apart).
//!
//! # Orphans
//!
//! A process that died leaves its slot unheld, with what it had not delivered: the next
//! producer to take that slot recovers it. Other unheld slots that still hold files (a
//! service restarted with fewer workers than it had), and files left in `spool_dir` itself by
//! a version that wrote there, are taken too, as orphans: their batches are sent again by the
//! producer that took them, and they are let go once their files are gone. Live producers
//! look for orphans again every [`ORPHAN_CHECK`] (see [`orphans`]): a worker killed beside
//! its siblings has its records sent by one of them, whether or not the worker that replaces
//! it ever logs. Slot directories
//! are never removed (one could be taken between the removal of its lock file and its own),
//! and are made private to the user (0700).
//!
//! # Threads
//!
//! Runs on the thread that opens a producer; never blocks (locks are tried, not awaited),
//! except to wait up to a second for a producer of this process that closed on a slot to
//! let go of it.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::files::{io, SpoolError};

/// How often a live producer looks for slots that died (or closed with batches left) under
/// its `spool_dir`: a few system calls per slot, so a sibling's records wait at most this long
/// for someone to send them.
pub(crate) const ORPHAN_CHECK: Duration = Duration::from_secs(1);

/// The name of the slot directory `n`.
fn slot_name(n: u32) -> String {
    format!("slot-{n}")
}

/// A directory this producer holds: its own slot, or an orphan it recovers.
pub(crate) struct Held {
    pub(crate) dir: PathBuf,
    /// Released when dropped.
    pub(crate) lock: DirLock,
}

/// What a producer takes under `spool_dir`.
pub(crate) struct Claim {
    /// Its own slot: where it writes.
    pub(crate) own: Held,
    /// Unheld places that still hold files, to send again and let go.
    pub(crate) orphans: Vec<Held>,
    /// Directories this made whose names could not be made durable: the parent whose sync
    /// failed, and why (the spool counts and says them).
    pub(crate) unsynced_parents: Vec<(PathBuf, std::io::Error)>,
}

/// Takes a slot under `root` (made, private, if missing), and every orphan it can.
pub(crate) fn claim(root: &Path, slots: u32) -> Result<Claim, SpoolError> {
    let mut unsynced_parents = Vec::new();
    make_private_dir(root, &mut unsynced_parents)?;
    let mut own = None;
    let mut holder = String::new();
    for n in 0..slots {
        let dir = root.join(slot_name(n));
        make_private_dir(&dir, &mut unsynced_parents)?;
        match lock_dir(&dir) {
            Ok(lock) => {
                own = Some(Held { dir, lock });
                break;
            }
            Err(SpoolError::Locked { pid, .. }) => holder = pid,
            Err(other) => return Err(other),
        }
    }
    let Some(own) = own else {
        return Err(SpoolError::Locked {
            dir: root.to_owned(),
            slots,
            pid: holder,
        });
    };
    let orphans = orphans(root, &own.dir)?;
    Ok(Claim {
        own,
        orphans,
        unsynced_parents,
    })
}

/// Takes every unheld place under `root` but `own` that still holds files: slots whose
/// producer died (or closed leaving batches it could not deliver), and `root` itself when a
/// version that wrote there left files. Tried, never awaited: a place another producer holds
/// (or takes meanwhile) is skipped.
pub(crate) fn orphans(root: &Path, own: &Path) -> Result<Vec<Held>, SpoolError> {
    let mut orphans = Vec::new();
    // Files of a version that wrote into spool_dir itself.
    if holds_files(root) {
        if let Ok(lock) = lock_dir(root) {
            orphans.push(Held {
                dir: root.to_owned(),
                lock,
            });
        }
    }
    let entries = std::fs::read_dir(root).map_err(io(root, "cannot list it"))?;
    let mut others: Vec<(u32, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let n = name.to_str()?.strip_prefix("slot-")?.parse::<u32>().ok()?;
            Some((n, e.path()))
        })
        .filter(|(_, dir)| dir != own && holds_files(dir))
        .collect();
    others.sort();
    for (_, dir) in others {
        if let Ok(lock) = lock_dir(&dir) {
            // Looked at again under the lock: its holder may have cleared it meanwhile.
            if holds_files(&dir) {
                orphans.push(Held { dir, lock });
            }
        }
    }
    Ok(orphans)
}

/// Whether `dir` holds spool files (segments, batch files, a replay ledger).
fn holds_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.filter_map(|e| e.ok()).any(|e| {
            let path = e.path();
            path.extension()
                .is_some_and(|x| x == "spl" || x == super::batch_file::EXTENSION)
                || super::replay_ledger::is_ledger(&e.file_name())
        })
    })
}

/// Makes `dir` (and its parents) if missing; a directory this makes is private to the user.
/// Each one's name is then made durable in its parent, outermost first: files synced in it are
/// otherwise not found after a power loss. A parent that cannot be synced (it failed, or this
/// user may enter it but not read it) is no reason to refuse the spool: it goes into
/// `unsynced`, to be counted and said.
fn make_private_dir(
    dir: &Path,
    unsynced: &mut Vec<(PathBuf, std::io::Error)>,
) -> Result<(), SpoolError> {
    if dir.is_dir() {
        return Ok(());
    }
    let made: Vec<&Path> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .collect();
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(io(dir, "cannot create it"))?;
    for new in made.iter().rev() {
        // A relative name's parent is the working directory.
        let parent = match new.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if let Err(e) = super::disk::sync_dir(parent) {
            unsynced.push((parent.to_owned(), e));
        }
    }
    Ok(())
}

/// Directories held by producers of this process, with the process's id (a process-wide lock
/// cannot tell two of its own producers apart; a forked child inherits the parent's entries,
/// which the record lock, not this list, answers for).
static HELD: Mutex<Vec<HeldHere>> = Mutex::new(Vec::new());

/// One directory held by this process, and whether its producer has closed (its last I/O
/// tasks may still hold the spool for a moment; an opener then waits for them).
struct HeldHere {
    dir: PathBuf,
    pid: u32,
    closed: Arc<AtomicBool>,
}

/// How long an opener waits for a closed producer of this process to let go of the directory.
const CLOSED_HOLDER_WAIT: Duration = Duration::from_secs(1);

/// The directory's lock: a POSIX record lock on its `lock` file (held by this process, not
/// inherited by a forked child, released by the kernel when the process ends, however it
/// ends) plus this process's own list. Released when dropped. POSIX semantics also release it
/// when this process closes *any* descriptor of that file, so nothing else here opens it.
pub(crate) struct DirLock {
    /// Closing it (after `drop` below) releases the record lock.
    _file: File,
    dir: PathBuf,
    closed: Arc<AtomicBool>,
}

impl DirLock {
    /// Its producer has closed: another producer of this process may wait for the lock.
    pub(crate) fn mark_closed(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let pid = std::process::id();
        HELD.lock().retain(|h| !(h.dir == self.dir && h.pid == pid));
    }
}

/// Takes the directory's lock, or says who holds it.
pub(crate) fn lock_dir(dir: &Path) -> Result<DirLock, SpoolError> {
    let canonical = dir.canonicalize().map_err(io(dir, "cannot resolve it"))?;
    let locked = |pid: String| SpoolError::Locked {
        dir: dir.to_owned(),
        slots: 1,
        pid,
    };
    let pid = std::process::id();
    let waited = std::time::Instant::now();
    let mut held = loop {
        let held = HELD.lock();
        let Some(holder) = held.iter().find(|h| h.dir == canonical && h.pid == pid) else {
            break held;
        };
        // A producer of this process closed on the directory lets go of it once its last I/O
        // tasks end (at once, unless the machine is busy): reopening right after a close
        // waits for that rather than failing.
        if !holder.closed.load(Ordering::Acquire) || waited.elapsed() >= CLOSED_HOLDER_WAIT {
            return Err(locked(pid.to_string()));
        }
        drop(held);
        std::thread::sleep(Duration::from_millis(5));
    };
    let path = dir.join("lock");
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(&path)
        .map_err(io(dir, "cannot open its lock file"))?;
    #[cfg(unix)]
    {
        use std::io::Read as _;
        use std::os::fd::AsRawFd as _;
        // SAFETY: a zeroed flock struct is valid; fcntl reads the one it is given.
        let mut lock: libc::flock = unsafe { std::mem::zeroed() };
        lock.l_type = libc::F_WRLCK as _;
        lock.l_whence = libc::SEEK_SET as _;
        // SAFETY: fcntl on a descriptor this function owns.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &lock) } != 0 {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            return Err(locked(pid.trim().to_owned()));
        }
    }
    #[cfg(windows)]
    {
        use std::io::Read as _;
        use std::os::windows::io::AsRawHandle as _;
        use windows_sys::Win32::Storage::FileSystem::{
            LockFileEx, LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY,
        };
        use windows_sys::Win32::System::IO::OVERLAPPED;
        // SAFETY: a zeroed OVERLAPPED is valid: offset 0, no event.
        let mut at: OVERLAPPED = unsafe { std::mem::zeroed() };
        // One byte at 4 GiB, far past the holder's pid at the start: a Windows lock bars
        // reads of the bytes it covers, and a refused opener reads the pid to name it.
        at.Anonymous.Anonymous.OffsetHigh = 1;
        // The lock ends with the handle: when the producer lets go of the directory, or its
        // process dies.
        let flags = LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY;
        // SAFETY: LockFileEx on the handle of a file this function owns; `at` outlives the
        // call, which completes at once (FAIL_IMMEDIATELY, a synchronous handle).
        let taken = unsafe { LockFileEx(file.as_raw_handle(), flags, 0, 1, 0, &mut at) };
        if taken == 0 {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            return Err(locked(pid.trim().to_owned()));
        }
    }
    let _ = file.set_len(0);
    let _ = write!(file, "{pid}");
    let closed = Arc::new(AtomicBool::new(false));
    held.push(HeldHere {
        dir: canonical.clone(),
        pid,
        closed: closed.clone(),
    });
    Ok(DirLock {
        _file: file,
        dir: canonical,
        closed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "loghose-slots-{name}-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn each_producer_takes_the_lowest_free_slot_and_a_full_set_is_refused_by_name() {
        let r = root("take");
        let first = claim(&r, 2).unwrap();
        assert_eq!(first.own.dir, r.join("slot-0"));
        let second = claim(&r, 2).unwrap();
        assert_eq!(second.own.dir, r.join("slot-1"));
        match claim(&r, 2) {
            Err(e @ SpoolError::Locked { .. }) => {
                let SpoolError::Locked {
                    ref dir,
                    slots,
                    ref pid,
                } = e
                else {
                    unreachable!()
                };
                assert_eq!((dir, slots), (&r, 2));
                assert_eq!(pid, &std::process::id().to_string());
                let text = e.to_string();
                assert!(
                    text.contains("all 2 of its slots") && text.contains("spool_slots"),
                    "{text}"
                );
            }
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("a third producer took one of two slots"),
        }
        drop(first);
        // The freed slot is the lowest: the next producer takes it.
        assert_eq!(claim(&r, 2).unwrap().own.dir, r.join("slot-0"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&r), 0o700);
            assert_eq!(mode(&r.join("slot-1")), 0o700);
            assert_eq!(mode(&r.join("slot-1").join("lock")), 0o600);
        }
        let _ = std::fs::remove_dir_all(&r);
    }

    #[test]
    fn unheld_slots_with_files_and_files_in_the_root_are_taken_as_orphans() {
        let r = root("orphans");
        for (dir, file) in [
            ("slot-0", "seg-a.spl"),
            ("slot-3", "bat-b.spb"),
            ("slot-5", "replayed.log"),
            ("slot-7", "lock"),
        ] {
            std::fs::create_dir_all(r.join(dir)).unwrap();
            std::fs::write(r.join(dir).join(file), b"x").unwrap();
        }
        std::fs::write(r.join("seg-old.spl"), b"x").unwrap();
        let held_elsewhere = claim(&r, 8).unwrap();
        // The first claim took slot-0 (its own: recovered as such) and every orphan.
        assert_eq!(held_elsewhere.own.dir, r.join("slot-0"));
        let orphans: Vec<PathBuf> = held_elsewhere
            .orphans
            .iter()
            .map(|h| h.dir.clone())
            .collect();
        assert_eq!(orphans, vec![r.clone(), r.join("slot-3"), r.join("slot-5")]);
        // Held orphans are nobody else's: a second claim takes a free slot and no orphan.
        let second = claim(&r, 8).unwrap();
        assert_eq!(second.own.dir, r.join("slot-1"));
        assert!(second.orphans.is_empty());
        let _ = std::fs::remove_dir_all(&r);
    }
}
