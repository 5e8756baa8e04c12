//! What every file of the spool is made with, and the spool's error: files private to the
//! user, allocated whole when made (so writing into a mapping never meets a full disk), a full
//! disk recognised, and [`SpoolError`] naming the directory and the step that failed. The
//! lowest room of the spool: it imports none of the others.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

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

pub(crate) fn io<'d>(
    dir: &'d Path,
    what: &'static str,
) -> impl FnOnce(std::io::Error) -> SpoolError + 'd {
    move |source| SpoolError::Io {
        dir: dir.to_owned(),
        what,
        source,
    }
}

/// Whether a file error means the disk (or the user's quota) is full.
pub(crate) fn is_disk_full(error: &std::io::Error) -> bool {
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
