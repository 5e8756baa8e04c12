//! Recovery: what earlier producers left in a slot directory, read back when a producer opens
//! it. Segments and batch files are scanned entry by entry (a torn or corrupt entry ends its
//! file's scan and is counted, never trusted); batches not marked done are handed to the new
//! producer, in the order they were opened, their records still in the mapped files (no copy).
//! Runs on the thread that opens the producer, before it accepts records.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::batch_file;
use super::files::{io, SpoolError};
use super::format::{
    align8, body_pack_id, check_entry, decode_body, decode_open, next_entry, CopyOrigin, EntryAt,
    Kind, Opening, RecordRef, ENTRY_HEADER, FREE_MAGIC, SEGMENT_HEADER, SEGMENT_MAGIC,
};
use super::lock::DirLock;
use super::replay_ledger;
use super::replay_ledger::LedgerWriter;
use crate::producer::routing::Destination;

/// What a scan of the directory found.
#[derive(Default)]
pub(super) struct Found {
    pub(super) batches: BTreeMap<(u64, u64), FoundBatch>,
    pub(super) corrupt: u64,
    pub(super) max_run: u64,
    pub(super) max_seq: u64,
}

#[derive(Default)]
pub(super) struct FoundBatch {
    pub(super) open: Option<Opening>,
    pub(super) records: Vec<RecordRef>,
    pub(super) pack_id: Option<String>,
    pub(super) done: bool,
    /// Its compressed body, when it was compressed: stands for its records (which a batch
    /// file may also still hold, if the process died before giving the file back).
    pub(super) body: Option<RecordRef>,
}

/// Scans one segment's bytes into `found`.
pub(super) fn scan_segment(map: &Arc<memmap2::Mmap>, found: &mut Found) {
    let bytes: &[u8] = map;
    if bytes.len() >= SEGMENT_HEADER
        && (&bytes[..8] == FREE_MAGIC || bytes[..SEGMENT_HEADER].iter().all(|b| *b == 0))
    {
        // Kept for reuse, or made and not yet begun (its header is written before any
        // entry): nothing in it was accepted.
        return;
    }
    if bytes.len() < SEGMENT_HEADER || &bytes[..8] != SEGMENT_MAGIC {
        found.corrupt += 1;
        return;
    }
    let run = u64::from_le_bytes(bytes[8..16].try_into().unwrap_or_default());
    let seq = u64::from_le_bytes(bytes[20..28].try_into().unwrap_or_default());
    found.max_run = found.max_run.max(run);
    found.max_seq = found.max_seq.max(seq);
    let mut pos = SEGMENT_HEADER;
    while pos + ENTRY_HEADER <= bytes.len() {
        let entry = match check_entry(bytes, pos, seq) {
            EntryAt::Valid(entry) => entry,
            // The end of this use's entries: the zeroed header every append leaves after its
            // entry, or an entry of the file's earlier use.
            EntryAt::End => break,
            EntryAt::Damaged => {
                // A write cut by a kill or a power loss, or a flipped byte: counted, and the
                // scan goes on at the next entry of this use, if there is one.
                found.corrupt += 1;
                match next_entry(bytes, pos + 8, seq) {
                    Some(next) => {
                        pos = next;
                        continue;
                    }
                    None => break,
                }
            }
        };
        let payload = &bytes[pos + ENTRY_HEADER..pos + ENTRY_HEADER + entry.len];
        let b = found.batches.entry((entry.run, entry.batch)).or_default();
        match entry.kind {
            Kind::Open => b.open = decode_open(payload),
            Kind::Record => b.records.push(RecordRef {
                map: map.clone(),
                range: pos + ENTRY_HEADER..pos + ENTRY_HEADER + entry.len,
            }),
            Kind::Sealed => b.pack_id = std::str::from_utf8(payload).ok().map(str::to_owned),
            Kind::Done => b.done = true,
            Kind::Body => {
                b.pack_id = body_pack_id(payload);
                b.body = Some(RecordRef {
                    map: map.clone(),
                    range: pos + ENTRY_HEADER..pos + ENTRY_HEADER + entry.len,
                });
            }
        }
        pos += ENTRY_HEADER + align8(entry.len);
    }
}

/// Drops this process's page table entries of an old file just scanned: what a replay reads
/// of it later comes back from the page cache, so a spool of gigabytes is not all resident
/// in the replaying process from its open on (only the batches being decoded are).
pub(super) fn forget_pages(map: &memmap2::Mmap) {
    #[cfg(unix)]
    // SAFETY: a read-only shared mapping of a file: after MADV_DONTNEED its pages read the
    // file's contents again, unchanged (no private copy to lose).
    unsafe {
        let _ = map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed);
    }
    #[cfg(not(unix))]
    let _ = map;
}

/// Reads one batch file into `found`.
pub(super) fn scan_batch_file(
    dir: &Path,
    path: &Path,
    found: &mut Found,
) -> Result<(), SpoolError> {
    let file = File::open(path).map_err(io(dir, "cannot read a batch file"))?;
    if file.metadata().map_or(0, |m| m.len()) == 0 {
        // Made and not yet allocated: nothing was accepted into it.
        return Ok(());
    }
    // SAFETY: old files are only read; the directory's lock keeps other producers from
    // writing or truncating them meanwhile.
    let map =
        Arc::new(unsafe { memmap2::Mmap::map(&file) }.map_err(io(dir, "cannot map a batch file"))?);
    let read = batch_file::read(&map);
    forget_pages(&map);
    match read {
        batch_file::Read::Nothing => {}
        batch_file::Read::Damaged => found.corrupt += 1,
        batch_file::Read::Batch {
            run,
            batch,
            seq,
            open,
            pack_id,
            records,
            corrupt,
        } => {
            found.corrupt += corrupt;
            found.max_run = found.max_run.max(run);
            found.max_seq = found.max_seq.max(seq);
            let b = found.batches.entry((run, batch)).or_default();
            b.open = decode_open(open);
            b.pack_id = pack_id.map(str::to_owned);
            b.records = records
                .into_iter()
                .map(|range| RecordRef {
                    map: map.clone(),
                    range,
                })
                .collect();
        }
    }
    Ok(())
}

/// The run a spool file's name carries (`seg-<run>-…`, `bat-<run>-…`, 16 hex digits): the
/// run of the producer that made it, which may be later than any run in its entries (a
/// file made and never written, or marked free).
pub(super) fn run_in_name(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let hex = name
        .strip_prefix("seg-")
        .or_else(|| name.strip_prefix("bat-"))?
        .get(..16)?;
    u64::from_str_radix(hex, 16).ok()
}

/// What one directory held: its batches not done (in the order they were opened), its
/// spool files and ledger, the highest run and segment sequence found, and the entries
/// skipped as corrupt.
pub(super) struct Scan {
    pub(super) recovered: Vec<Recovered>,
    pub(super) files: Vec<PathBuf>,
    pub(super) max_run: u64,
    pub(super) max_seq: u64,
    pub(super) corrupt: u64,
}

/// Reads what earlier producers left in `dir` (which this producer holds).
pub(super) fn scan_dir(dir: &Path) -> Result<Scan, SpoolError> {
    let mut found = Found::default();
    let entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir, "cannot list it"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x == "spl" || x == batch_file::EXTENSION)
        })
        .collect();
    // Scanned in the order the segments were begun (the sequence in each header; file
    // names say nothing, as a segment file is reused under its name), so that a batch's
    // records, which may span segments, come back in order.
    let mut maps = Vec::with_capacity(entries.len());
    // The order the old files are deleted in once their batches are spooled anew: a kill
    // may cut the deletion anywhere, and what is left must never hold a batch's records
    // without the entry that marks it done (the batch would be sent again). Batch files and
    // empty segments first, then the segments from the oldest: a `Done` entry is always in
    // the same or a later segment of its shard than the records and body it settles.
    let mut batch_files = Vec::new();
    let mut segments = Vec::with_capacity(entries.len());
    for path in entries {
        // Every file's run counts, an empty or free one's too: the next run's names must
        // never be taken already (see `run_in_name`).
        if let Some(run) = run_in_name(&path) {
            found.max_run = found.max_run.max(run);
        }
        if path.extension().is_some_and(|x| x == batch_file::EXTENSION) {
            scan_batch_file(dir, &path, &mut found)?;
            batch_files.push(path);
            continue;
        }
        let file = File::open(&path).map_err(io(dir, "cannot read a segment"))?;
        if file.metadata().map_or(0, |m| m.len()) == 0 {
            // Made and not yet allocated (a spare the preparer was making at a kill):
            // nothing was ever written in it.
            batch_files.push(path);
            continue;
        }
        // SAFETY: old segments are only read; the directory's lock keeps other producers
        // from writing or truncating them meanwhile.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io(dir, "cannot map a segment"))?;
        let seq = map
            .get(20..28)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        maps.push((seq, Arc::new(map)));
        segments.push((seq, path));
    }
    maps.sort_by_key(|(seq, _)| *seq);
    for (_, map) in &maps {
        scan_segment(map, &mut found);
        forget_pages(map);
    }
    segments.sort_by_key(|(seq, _)| *seq);
    let entries: Vec<PathBuf> = batch_files
        .into_iter()
        .chain(segments.into_iter().map(|(_, path)| path))
        .collect();
    // Batches an interrupted replay had already spooled anew (their copies are in a later
    // run's files, or were delivered from there) are not sent again. The ledger goes last,
    // after the files it names; with no old files left it names nothing.
    let replayed = replay_ledger::read(dir);
    // A run the ledger names is never reused, even when its files are gone (a crash while
    // the old files were being deleted): the ledger would skip the new run's batches.
    let max_run = replayed
        .iter()
        .map(|(run, _)| *run)
        .fold(found.max_run, u64::max);
    let mut files = entries;
    if files.is_empty() {
        for ledger in replay_ledger::files(dir) {
            let _ = std::fs::remove_file(ledger);
        }
    } else {
        files.extend(replay_ledger::files(dir));
    }
    // A batch copied by two replays (the first cut before the ledger named the original, so
    // the next dropped that copy, sent the original and copied it again): only the latest
    // copy stands for the original, delivered or not; an earlier one is superseded, never to
    // be sent (once the ledger names the original, it would otherwise stand for it too).
    let mut latest_copy: std::collections::HashMap<&CopyOrigin, (u64, u64)> =
        std::collections::HashMap::new();
    for (id, b) in &found.batches {
        if let Some((_, _, Some(origin))) = &b.open {
            let latest = latest_copy.entry(origin).or_insert(*id);
            *latest = (*latest).max(*id);
        }
    }
    let superseded: std::collections::HashSet<(u64, u64)> = found
        .batches
        .iter()
        .filter_map(|(id, b)| match &b.open {
            Some((_, _, Some(origin))) if latest_copy.get(origin) != Some(id) => Some(*id),
            _ => None,
        })
        .collect();
    let recovered = found
        .batches
        .into_iter()
        .filter(|(id, b)| {
            !b.done
                && (b.body.is_some() || !b.records.is_empty())
                && !replayed.contains(id)
                && !superseded.contains(id)
        })
        .filter_map(|(origin, b)| {
            let (dest, tags, copy_of) = b.open?;
            Some(Recovered {
                origin,
                from_dir: Arc::from(""),
                copy_of,
                dest,
                tags,
                records: b.records,
                pack_id: b.pack_id,
                body: b.body,
            })
        })
        .collect();
    Ok(Scan {
        recovered,
        files,
        max_run,
        max_seq: found.max_seq,
        corrupt: found.corrupt,
    })
}

/// A batch found in the directory, ready to be sent again.
pub(crate) struct Recovered {
    /// The run and batch it had in the files it came from (the replay ledger names it so).
    pub(crate) origin: (u64, u64),
    /// The directory it came from (its name under `spool_dir`; empty for `spool_dir` itself).
    from_dir: Arc<str>,
    /// Where it came from, when it is itself a replay's copy.
    pub(super) copy_of: Option<CopyOrigin>,
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
    /// decode is counted in `corrupt_entries`, and the records a batch file still held, if any, used).
    pub(crate) fn decode(&mut self, corrupt_entries: &AtomicU64) {
        let Some(body) = self.body.take() else {
            return;
        };
        match decode_body(&body) {
            Some(records) => self.records = records,
            None => {
                corrupt_entries.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// What one directory (this producer's slot, or an orphan) held: the batches to send again,
/// the files they came from (for `Spool::remove_old` once they are spooled again), and
/// its replay ledger.
pub(crate) struct Leftover {
    pub(super) dir: PathBuf,
    /// An orphan's lock, held until its batches are spooled anew and its files deleted.
    pub(super) _lock: Option<DirLock>,
    pub(crate) recovered: Vec<Recovered>,
    pub(crate) old_files: Vec<PathBuf>,
    /// Its replay ledger, opened at the first batch sent again.
    pub(super) ledger: LedgerWriter,
}

impl Leftover {
    /// What the scan of an orphan found, held by its lock until its files are gone.
    pub(super) fn orphan(dir: PathBuf, lock: DirLock, scan: Scan) -> Leftover {
        Leftover {
            dir,
            _lock: Some(lock),
            recovered: scan.recovered,
            old_files: scan.files,
            ledger: LedgerWriter::default(),
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
pub(super) fn drop_copies_of_what_is_still_there(
    root: &Path,
    leftovers: &mut [Leftover],
    durable: bool,
) {
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
