//! The replay ledger: which batches of earlier runs a replay has already spooled anew, so that
//! a replay cut short (by a close, a kill or a power loss) does not make the next producer send
//! them a second time; and which copies an earlier replay left unfinished were dropped for
//! their originals (written before the replay begins), so that such a copy never comes back
//! once its original is named and the copy that replaced it is gone.
//!
//! # Files
//!
//! Two files, in the directory the batches came from, of the same entries: run and batch
//! (little-endian u64s), the CRC-32 of those 16 bytes, 4 bytes of padding; an entry cut short
//! or damaged names nothing.
//!
//! - `replayed.log` holds what a power loss may rely on. With `spool_sync = batch` or
//!   `interval`, an entry is written only once the copy it names is synced, in groups (each
//!   group costs a sync of the new files); with `none` (nothing is synced at all), each at once.
//! - `replayed.boot` (with `batch` or `interval`, on Linux) holds every entry at once, unsynced,
//!   after a header naming the boot it was written in (the kernel's boot id). A kill loses
//!   nothing the process wrote into the page cache, so a producer opened in the same boot
//!   trusts these as much as the copies they name; after a reboot (a power loss, a crash of the
//!   machine) an entry may have reached the disk while its copy did not, so the file is
//!   ignored and only the synced one counts.
//!
//! # What it promises
//!
//! So after a kill no replayed batch is sent twice; after a power loss, at most one group.
//! Both files go last, after the old files they name. Runs on the replay thread (writes) and
//! the opening thread (reads).

use std::collections::HashSet;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Entries written once their copies are durable.
pub(crate) const SYNCED: &str = "replayed.log";
/// Entries written at once, trusted within the boot that wrote them.
pub(crate) const THIS_BOOT: &str = "replayed.boot";
const ENTRY: usize = 24;
const BOOT_MAGIC: &[u8; 8] = b"LGHBOOT1";
/// The boot file's header: the magic, the boot id (36 characters), padding to 8 bytes.
const BOOT_HEADER: usize = 48;

/// Whether `name` is one of the ledger's files.
pub(crate) fn is_ledger(name: &std::ffi::OsStr) -> bool {
    name == SYNCED || name == THIS_BOOT
}

/// The ledger's files in `dir`, in the order they are deleted (after the files they name).
pub(crate) fn files(dir: &Path) -> [PathBuf; 2] {
    [dir.join(SYNCED), dir.join(THIS_BOOT)]
}

/// This boot's id, when the system says it (Linux).
fn boot_id() -> Option<&'static [u8; 36]> {
    static ID: OnceLock<Option<[u8; 36]>> = OnceLock::new();
    ID.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        text.trim().as_bytes().try_into().ok()
    })
    .as_ref()
}

/// The batches the ledger in `dir` names: every synced entry, and this boot's.
pub(crate) fn read(dir: &Path) -> HashSet<(u64, u64)> {
    let mut named = entries(&std::fs::read(dir.join(SYNCED)).unwrap_or_default());
    let boot = std::fs::read(dir.join(THIS_BOOT)).unwrap_or_default();
    let written_this_boot = boot.len() >= BOOT_HEADER
        && &boot[..8] == BOOT_MAGIC
        && boot_id().is_some_and(|id| &boot[8..44] == id);
    if written_this_boot {
        named.extend(entries(&boot[BOOT_HEADER..]));
    }
    named
}

fn entries(bytes: &[u8]) -> HashSet<(u64, u64)> {
    bytes
        .chunks_exact(ENTRY)
        .filter_map(|e| {
            let word = |at: usize| -> Option<u64> {
                Some(u64::from_le_bytes(e.get(at..at + 8)?.try_into().ok()?))
            };
            let crc = u32::from_le_bytes(e.get(16..20)?.try_into().ok()?);
            (crc32fast::hash(&e[..16]) == crc).then_some(())?;
            Some((word(0)?, word(8)?))
        })
        .collect()
}

fn encode(origins: &[(u64, u64)]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(origins.len() * ENTRY);
    for (run, batch) in origins {
        let start = bytes.len();
        bytes.extend_from_slice(&run.to_le_bytes());
        bytes.extend_from_slice(&batch.to_le_bytes());
        let crc = crc32fast::hash(&bytes[start..]);
        bytes.extend_from_slice(&crc.to_le_bytes());
        bytes.extend_from_slice(&[0; 4]);
    }
    bytes
}

/// The ledger of one directory, opened for writing at the first entry.
#[derive(Default)]
pub(crate) struct LedgerWriter {
    synced: Option<File>,
    this_boot: Option<File>,
}

impl LedgerWriter {
    /// Writes `origins` in the synced file (their copies are durable, or nothing is synced);
    /// `durable`: synced before this returns.
    pub(crate) fn note_synced(
        &mut self,
        dir: &Path,
        origins: &[(u64, u64)],
        durable: bool,
    ) -> std::io::Result<()> {
        if origins.is_empty() {
            return Ok(());
        }
        let path = dir.join(SYNCED);
        let file = match &mut self.synced {
            Some(file) => file,
            empty => {
                let existed = path.exists();
                let file = super::files::private_file().append(true).open(&path)?;
                if durable && !existed {
                    // Its name made durable before anything relies on its entries.
                    super::disk::sync_dir(dir)?;
                }
                // Whole entries only: one cut short (a power loss) is dropped, so that what
                // is appended after it stays aligned and readable.
                let len = file.metadata()?.len();
                let whole = len / ENTRY as u64 * ENTRY as u64;
                if whole != len {
                    file.set_len(whole)?;
                }
                empty.insert(file)
            }
        };
        file.write_all(&encode(origins))?;
        if durable {
            super::disk::sync_file(file, &path)?;
        }
        Ok(())
    }

    /// Writes `origin` at once, unsynced, in this boot's file; false where there is no boot id
    /// (the synced file alone then answers).
    pub(crate) fn note_this_boot(
        &mut self,
        dir: &Path,
        origin: (u64, u64),
    ) -> std::io::Result<bool> {
        let Some(id) = boot_id() else {
            return Ok(false);
        };
        let file = match &mut self.this_boot {
            Some(file) => file,
            empty => {
                let path = dir.join(THIS_BOOT);
                let mut header = [0u8; BOOT_HEADER];
                header[..8].copy_from_slice(BOOT_MAGIC);
                header[8..44].copy_from_slice(id);
                // An earlier producer's entries of this boot still count: appended to. A file
                // of an earlier boot names nothing now: begun again.
                let this_boot = std::fs::read(&path)
                    .is_ok_and(|b| b.len() >= BOOT_HEADER && b[..BOOT_HEADER] == header);
                let file = if this_boot {
                    super::files::private_file().append(true).open(&path)?
                } else {
                    let mut file = super::files::private_file()
                        .write(true)
                        .truncate(true)
                        .open(&path)?;
                    file.write_all(&header)?;
                    file
                };
                // Whole entries only: one cut short by a kill is dropped, not written after.
                let len = file.metadata()?.len();
                let whole =
                    BOOT_HEADER as u64 + (len - BOOT_HEADER as u64) / ENTRY as u64 * ENTRY as u64;
                if whole != len {
                    file.set_len(whole)?;
                }
                empty.insert(file)
            }
        };
        file.write_all(&encode(&[origin]))?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "loghose-ledger-{name}-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn this_boots_entries_count_until_a_reboot_and_damaged_entries_never() {
        let d = dir("boot");
        let mut ledger = LedgerWriter::default();
        ledger.note_synced(&d, &[(1, 1)], true).unwrap();
        let has_boot_id = ledger.note_this_boot(&d, (1, 2)).unwrap();
        ledger.note_this_boot(&d, (1, 3)).unwrap();
        let want: HashSet<(u64, u64)> = if has_boot_id {
            [(1, 1), (1, 2), (1, 3)].into()
        } else {
            [(1, 1)].into()
        };
        assert_eq!(read(&d), want);
        // A torn last entry names nothing; the others still count.
        let mut bytes = std::fs::read(d.join(SYNCED)).unwrap();
        bytes.extend_from_slice(&encode(&[(1, 9)])[..20]);
        std::fs::write(d.join(SYNCED), &bytes).unwrap();
        assert_eq!(read(&d), want);
        // A later producer's entries after the torn one still count.
        LedgerWriter::default()
            .note_synced(&d, &[(1, 5)], false)
            .unwrap();
        let mut want = want;
        want.insert((1, 5));
        assert_eq!(read(&d), want);
        if has_boot_id {
            // A later producer of the same boot adds to them (a torn entry dropped first).
            let mut boot = std::fs::read(d.join(THIS_BOOT)).unwrap();
            boot.extend_from_slice(&encode(&[(1, 8)])[..10]);
            std::fs::write(d.join(THIS_BOOT), &boot).unwrap();
            LedgerWriter::default().note_this_boot(&d, (1, 4)).unwrap();
            assert_eq!(read(&d), [(1, 1), (1, 2), (1, 3), (1, 4), (1, 5)].into());
            // Written in another boot (its id differs): only the synced entries count.
            let mut boot = std::fs::read(d.join(THIS_BOOT)).unwrap();
            boot[8] ^= 1;
            std::fs::write(d.join(THIS_BOOT), &boot).unwrap();
            assert_eq!(read(&d), [(1, 1), (1, 5)].into());
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
