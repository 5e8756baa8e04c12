//! The spool: every accepted record kept in memory-mapped files in `spool_dir`, so that a
//! process killed at any instant loses nothing `send` accepted — the next producer opened on
//! the same directory delivers it.
//!
//! Two kinds of file. A batch of the producer's own destination (the common case) is written
//! straight into a batch file of its own (`bat-*.spb`, see `batch_file`): the batch's buffer
//! is the file's mapping, so a record costs only an index entry and its CRC. Batches of other
//! destinations (possibly 100 000 small ones, one per device) and replayed batches are copied,
//! record by record, into the shards' segments (`seg-*.spl`), described below. Both are
//! recovered together, in the order their batches were opened.
//!
//! Layout. Each accumulator shard appends to a segment file of its own (`seg-*.spl`, a fixed
//! size, allocated whole), through a shared mapping: an entry is a copy into the
//! kernel's page cache, no system call, and it survives the death of the process. Entries are
//! 8-byte aligned: a header (magic, payload length, CRC-32 of everything after it, kind, the
//! run and batch they belong to) and a payload. Kinds: `Open` (a batch's destination and
//! tags, before its first record), `Record` (one encoded log, as the batch holds it),
//! `Sealed` (its `__pack_id__`), `Done` (delivered, or failed for good). Each append zeroes
//! the header after its entry, so a scan ends there. A segment is settled once it is full and
//! every batch with an entry in it is done, in order per shard (so a `Done` entry, always
//! written later, never outlives the records it settles): marked free and kept for reuse, or
//! deleted.
//!
//! Recovery (when a producer opens the directory): every segment is scanned, in the order the
//! segments were begun (the sequence in each header); an entry whose CRC does not match (a
//! write cut by the kill or by a power loss, a flipped byte) is skipped and counted, and the
//! scan resynchronises on the next whole entry of the same use. A reused segment is not
//! cleared: its earlier use's entries carry another sequence and end the scan. Every batch not `Done`
//! is rebuilt — its records in order, its pack id kept when it had been sealed (it may have
//! been sent: the service sees the same pack id twice at most) — written again into the new
//! run's segments, and only then are the old files deleted; a crash during recovery loses
//! nothing either. Each batch written again is named (old run and batch) in the replay ledger
//! (`replayed.log`, CRC-checked entries), which a later recovery skips: a replay cut short by a
//! close or a kill does not make the next producer send those batches a second time. The
//! ledger is deleted after the old files it names.
//!
//! Durability (`spool_sync`): `none` survives the process (the page cache outlives it);
//! `batch` makes a batch's segment durable with `fdatasync` when it seals, before it is sent;
//! `interval:<ms>` does so for every segment and batch file on a timer thread. A batch file such
//! a sync took goes back, once its batch is compressed, only after the segments holding the
//! body are synced too (a group commit on the same thread), so a power loss never finds
//! records of an earlier interval overwritten before they are durable in another form; a file
//! no sync took holds only the current interval's records and goes back at once (under load,
//! nearly all: no sync, no page fault, and the same few hot files as with `none`). The disk
//! is bounded by
//! `spool_max_bytes`: once the segments leave less than one more segment per shard below it,
//! new records wait for room (up to `max_block_ms`) or fail with the buffer-full error, like
//! the memory budget. Segments are allocated whole when made (`posix_fallocate`), so a full
//! disk is an error when a segment is made, never a fault while writing into one. One producer
//! per directory, and many per `spool_dir`: each producer takes a slot directory of its own
//! under it, held by a lock, and sends what unheld slots left (see `lock`). Everything this
//! makes is private to the user (directories 0700, files 0600).
//!
//! Threads: entries are appended by the adding threads (under the shard's lock, through the
//! shard's writer mutex, uncontended) and `Done` by the I/O runtime; the timer thread syncs.
//! Settled segments are kept for reuse, mapped, as many as were ever in use at once (within
//! `spool_max_bytes`): making and deleting files and faulting in a mapping's pages cost the
//! file system far more per byte than the records' copies, and a steady producer reuses the
//! same files with none of it. The price is memory: the spool keeps resident its peak of
//! records not yet delivered (which the memory budget bounds). A preparer thread makes a new
//! segment ahead whenever fewer than one per shard are ready, so the adding threads take them
//! ready, with no allocation or page faults of their own.

use std::collections::{BTreeMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use memmap2::MmapMut;
use parking_lot::{Condvar, Mutex};

use super::batch_file::{self, BatchFile, Idle, Shape};
use super::buffer::BatchBuf;
use super::config::SpoolSync;
use super::routing::Destination;
use crate::wire::compress::Compression;

mod lock;
mod replay_ledger;

use lock::{DirLock, Held};
use replay_ledger::LedgerWriter;

/// First bytes of every segment file.
const SEGMENT_MAGIC: &[u8; 8] = b"LGHSPL01";
/// First bytes of a segment kept for reuse: nothing in it is to be recovered.
const FREE_MAGIC: &[u8; 8] = b"LGHSPLFR";
/// Bytes before the first entry: magic, run, shard, sequence.
const SEGMENT_HEADER: usize = 32;
/// First word of every entry.
const ENTRY_MAGIC: u32 = 0x4C48_5345;
/// Bytes of an entry's header: magic, CRC, length, kind (+3 padding), run, batch, and the
/// sequence number of the segment it was written in (a reused segment's older entries carry
/// another and end the scan). The CRC covers everything after it.
const ENTRY_HEADER: usize = 40;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Open = 1,
    Record = 2,
    Sealed = 3,
    Done = 4,
    /// A sealed batch's compressed body (codec, raw size, pack id, bytes): what stands for a
    /// batch file's records once the batch is compressed.
    Body = 5,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Open,
            2 => Kind::Record,
            3 => Kind::Sealed,
            4 => Kind::Done,
            5 => Kind::Body,
            _ => return None,
        })
    }
}

/// The segment size for a spool of `max_bytes` written by `shards` writers: so that every
/// shard's open segment together take at most a quarter of it; 64 to 256 KiB. Small
/// segments are settled soon after their batches are delivered, usually before the kernel
/// would write them back to disk, and the ones kept mapped for reuse cost little memory (the
/// default destination's records go to batch files; segments hold compressed bodies and the
/// records of other destinations).
fn segment_bytes_for(max_bytes: usize, shards: usize) -> usize {
    (max_bytes / (4 * shards.max(1))).clamp(64 << 10, 256 << 10) & !4095
}

fn align8(n: usize) -> usize {
    (n + 7) & !7
}

/// One open segment of one shard, mapped.
struct Writer {
    seq: u64,
    map: MmapMut,
    pos: usize,
}

impl Writer {
    /// Appends one entry, or answers `false` when it does not fit.
    fn append(&mut self, kind: Kind, run: u64, batch: u64, parts: &[&[u8]]) -> bool {
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
struct Segment {
    path: PathBuf,
    file: Arc<File>,
    /// Batches with an entry in it that are not done.
    live: u32,
    /// Its writer moved on (no more entries will come); its mapping, kept for reuse.
    full: Option<MmapMut>,
}

/// A settled segment kept mapped for the next one a shard needs: its pages are already in
/// memory, so writing into it costs no page faults.
struct Free {
    path: PathBuf,
    file: Arc<File>,
    size: usize,
    /// Kept mapped: a segment mapped again takes a fault per page (the file system's write
    /// notification) that costs more than its records.
    map: MmapMut,
}

/// Maps a whole segment file and makes every page writable in one call: a fault per 4 KiB
/// page taken on the add path (each ~10 records) costs more than the records' own copies.
fn map_segment(file: &File) -> std::io::Result<MmapMut> {
    // SAFETY: the file belongs to this producer, which holds the directory's lock; nothing
    // else maps or truncates it while this mapping lives.
    let map = unsafe { MmapMut::map_mut(file)? };
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::PopulateWrite);
    Ok(map)
}

struct State {
    segments: BTreeMap<u64, Segment>,
    /// Per shard, its segments in order.
    chains: Vec<VecDeque<u64>>,
    /// Settled segments kept for reuse (see [`Spool::keeps`]). Not cleared: a scan of the
    /// next use ends at the first entry of an earlier use (its segment sequence differs).
    free: Vec<Free>,
    /// Bytes of `free` files (on disk, not in `used`).
    spare_bytes: usize,
    /// The most segments in use at once so far.
    peak: usize,
    /// The spool closed: spares still being cleared are deleted instead of kept.
    closed: bool,
}

/// A batch's place in the spool: its batch file, or the segments its entries are in and
/// whether its `Open` entry is written.
#[derive(Debug, Default)]
pub(crate) struct SpoolMark {
    opened: bool,
    segments: Vec<u64>,
    file: Option<BatchFile>,
    /// `FilePool::ticks` when the batch file was taken. Still the same at compression: no
    /// sync made the file's records durable, so none is needed before the file is reused.
    file_tick: u64,
}

impl SpoolMark {
    /// Whether the batch is written in a batch file of its own.
    #[inline]
    pub(crate) fn in_file(&self) -> bool {
        self.file.is_some()
    }
}

/// The batch files of the default destination's batches (see `batch_file`).
struct FilePool {
    shape: Shape,
    /// The default destination and the tags, as every file's header holds them.
    open: Vec<u8>,
    /// Files no batch uses; the mapped ones are taken first.
    idle: Mutex<Vec<Idle>>,
    /// Files of batches not yet done, by sequence: what `interval` syncs.
    live: Mutex<BTreeMap<u64, Arc<File>>>,
    /// Syncs that took the live files (`sync_all`: the timer's, and those before old files
    /// are deleted), counted under `live`'s lock, where a file taken reads the count: whether
    /// a file's records may be durable only in that file.
    ticks: AtomicU64,
    /// Names new files.
    made: AtomicU64,
    /// The most files in use at once so far: how many are kept idle.
    peak: AtomicUsize,
    /// Bytes of idle files: on disk (in `used`) but room for the next batches.
    idle_bytes: AtomicUsize,
    /// Data mappings kept after their batch was compressed (in flight or idle).
    retained: AtomicUsize,
    /// At most this many are.
    retain_max: usize,
    closed: std::sync::atomic::AtomicBool,
}

/// Batch files whose compressed bodies wait for a sync (`spool_sync = interval`, files a timed
/// sync took while their batch filled): given back only once the segments holding the bodies
/// are durable, so that a power loss never finds a file reused (or marked free) before its
/// records are on disk in another form.
#[derive(Default)]
struct Committing {
    files: Mutex<Vec<(BatchFile, Vec<u64>)>>,
    wake: Condvar,
}

/// How long the sync thread gathers files waiting for a commit before it syncs their bodies,
/// and how many it syncs for at once at most: one `fdatasync` per group, not per file.
const COMMIT_GATHER: Duration = Duration::from_millis(10);
const COMMIT_GROUP: usize = 16;

/// Idle batch files kept mapped at rest: the next batch takes it with no page faults (a file
/// mapped again takes a fault per page); the preparer thread maps another ahead while batches
/// fill. Under load (batches waiting to be compressed), up to `keep_bytes` of mappings are
/// kept, as the memory budget keeps its buffers.
const MAPPED_IDLE_FILES: usize = 1;

/// The spool of one producer.
pub(crate) struct Spool {
    dir: PathBuf,
    /// Its slot's lock: let go by a close that left nothing behind, else when the spool goes.
    dir_lock: Mutex<Option<DirLock>>,
    /// This producer's run number: larger than every run found in the directory.
    run: u64,
    sync: SpoolSync,
    segment_bytes: usize,
    max_bytes: usize,
    /// At most this many settled segments are kept for reuse (see [`Spool::open`]).
    keep_segments: usize,
    /// Bytes of mappings kept for reuse at most (segments, batch files' data).
    keep_bytes: usize,
    used: Arc<AtomicUsize>,
    /// What the disk held when it last ran out of space (`usize::MAX`: no shortage seen since
    /// a segment was last settled); admission treats it as a lower `max_bytes`.
    disk_room: Arc<AtomicUsize>,
    next_seq: AtomicU64,
    writers: Vec<Mutex<Option<Writer>>>,
    /// Shared with the preparer thread (which holds nothing else of the spool, so the
    /// directory's lock goes with the producer however it goes).
    state: Arc<Mutex<State>>,
    room: Condvar,
    room_lock: Mutex<()>,
    /// Wakes the preparer thread when a settled segment needs clearing.
    prepare: Arc<PrepSignal>,
    /// The preparer thread, joined by `close`.
    preparer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Entries skipped at recovery because their checksum failed.
    pub(crate) corrupt_entries: AtomicU64,
    /// Batch files, once the producer enabled them.
    files: Arc<std::sync::OnceLock<FilePool>>,
    /// Batch files waiting for their bodies to be synced (`interval`).
    committing: Arc<Committing>,
}

/// A spool just opened: itself, and what earlier producers left to send again (its own
/// slot's first, then each orphan's).
pub(crate) struct Opened {
    pub(crate) spool: Arc<Spool>,
    pub(crate) leftovers: Vec<Leftover>,
}

impl Opened {
    /// Whether nothing is to be sent again.
    pub(crate) fn nothing_to_replay(&self) -> bool {
        self.leftovers.iter().all(|l| l.recovered.is_empty())
    }
}

/// What one directory (this producer's slot, or an orphan) held: the batches to send again,
/// the files they came from (for [`Spool::remove_old`] once they are spooled again), and
/// its replay ledger.
pub(crate) struct Leftover {
    dir: PathBuf,
    /// An orphan's lock, held until its batches are spooled anew and its files deleted.
    _lock: Option<DirLock>,
    pub(crate) recovered: Vec<Recovered>,
    pub(crate) old_files: Vec<PathBuf>,
    /// Its replay ledger, opened at the first batch sent again.
    ledger: LedgerWriter,
}

/// A batch found in the directory, ready to be sent again.
pub(crate) struct Recovered {
    /// The run and batch it had in the files it came from (the replay ledger names it so).
    pub(crate) origin: (u64, u64),
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
    /// Decodes its compressed body, if it has one, into its records (a body that does not
    /// decode is counted as corrupt, and the records a batch file still held, if any, used).
    pub(crate) fn decode(&mut self, spool: &Spool) {
        let Some(body) = self.body.take() else {
            return;
        };
        match decode_body(&body) {
            Some(records) => self.records = records,
            None => {
                spool.corrupt_entries.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn io<'d>(dir: &'d Path, what: &'static str) -> impl FnOnce(std::io::Error) -> SpoolError + 'd {
    move |source| SpoolError::Io {
        dir: dir.to_owned(),
        what,
        source,
    }
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s);
}

fn take_str<'a>(input: &mut &'a [u8]) -> Option<&'a [u8]> {
    let (len, rest) = input.split_first_chunk::<4>()?;
    let len = u32::from_le_bytes(*len) as usize;
    let (s, rest) = (rest.get(..len)?, rest.get(len..)?);
    *input = rest;
    Some(s)
}

fn encode_open(dest: &Destination, tags: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + tags.len());
    for s in [&*dest.project, &*dest.logstore, &*dest.topic, &*dest.source] {
        put_str(&mut out, s.as_bytes());
    }
    match &dest.hash_key {
        Some(k) => {
            out.push(1);
            put_str(&mut out, k.as_bytes());
        }
        None => out.push(0),
    }
    put_str(&mut out, tags);
    out
}

fn decode_open(mut input: &[u8]) -> Option<(Destination, Vec<u8>)> {
    let text = |input: &mut &[u8]| -> Option<Arc<str>> {
        Some(std::str::from_utf8(take_str(input)?).ok()?.into())
    };
    let project = text(&mut input)?;
    let logstore = text(&mut input)?;
    let topic = text(&mut input)?;
    let source = text(&mut input)?;
    let (flag, rest) = input.split_first()?;
    input = rest;
    let hash_key = if *flag == 1 {
        Some(text(&mut input)?)
    } else {
        None
    };
    let tags = take_str(&mut input)?.to_vec();
    Some((
        Destination {
            project,
            logstore,
            topic,
            source,
            hash_key,
        },
        tags,
    ))
}

/// What a scan of the directory found.
#[derive(Default)]
struct Found {
    batches: BTreeMap<(u64, u64), FoundBatch>,
    corrupt: u64,
    max_run: u64,
    max_seq: u64,
}

#[derive(Default)]
struct FoundBatch {
    open: Option<(Destination, Vec<u8>)>,
    records: Vec<RecordRef>,
    pack_id: Option<String>,
    done: bool,
    /// Its compressed body, when it was compressed: stands for its records (which a batch
    /// file may also still hold, if the process died before giving the file back).
    body: Option<RecordRef>,
}

/// Encodes a body entry's payload head: codec, raw size, pack id.
fn body_head(codec: Compression, raw_len: usize, pack_id: &str) -> Vec<u8> {
    let mut head = Vec::with_capacity(16 + pack_id.len());
    head.push(match codec {
        Compression::None => 0,
        Compression::Lz4 => 1,
        Compression::Zstd => 2,
        Compression::Deflate => 3,
    });
    head.extend_from_slice(&(raw_len as u32).to_le_bytes());
    put_str(&mut head, pack_id.as_bytes());
    head
}

/// The pack id a body entry names.
fn body_pack_id(payload: &[u8]) -> Option<String> {
    let mut rest = payload.get(5..)?;
    std::str::from_utf8(take_str(&mut rest)?)
        .ok()
        .map(str::to_owned)
}

/// Decompresses a body entry and splits the group into its records (field 1, each with its
/// tag and length, as a batch holds them); the group's tail (topic, source, tags) is dropped,
/// the replay writes its own.
fn decode_body(payload: &[u8]) -> Option<Vec<RecordRef>> {
    let (&codec, rest) = payload.split_first()?;
    let codec = match codec {
        0 => Compression::None,
        1 => Compression::Lz4,
        2 => Compression::Zstd,
        3 => Compression::Deflate,
        _ => return None,
    };
    let (raw_len, mut rest) = rest.split_first_chunk::<4>()?;
    take_str(&mut rest)?;
    let raw: Arc<dyn AsRef<[u8]> + Send + Sync> = Arc::new(
        crate::wire::compress::decompress(codec, rest, u32::from_le_bytes(*raw_len) as usize)
            .ok()?,
    );
    let bytes = (*raw).as_ref();
    let varint = |at: &mut usize| -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *bytes.get(*at)?;
            *at += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(value);
            }
        }
        None
    };
    let mut records = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let start = at;
        let tag = varint(&mut at)?;
        if tag & 7 != 2 {
            return None;
        }
        let len = usize::try_from(varint(&mut at)?).ok()?;
        let end = at.checked_add(len).filter(|e| *e <= bytes.len())?;
        if tag == 0x0a {
            records.push(RecordRef {
                map: raw.clone(),
                range: start..end,
            });
        }
        at = end;
    }
    Some(records)
}

/// One recovered record: where it lies in an old segment, mapped read-only (page cache, not
/// the process's own memory, so recovering a large spool does not load it all).
#[derive(Clone)]
pub(crate) struct RecordRef {
    map: Arc<dyn AsRef<[u8]> + Send + Sync>,
    range: std::ops::Range<usize>,
}

impl std::ops::Deref for RecordRef {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &(*self.map).as_ref()[self.range.clone()]
    }
}

/// Scans one segment's bytes into `found`.
fn scan_segment(map: &Arc<memmap2::Mmap>, found: &mut Found) {
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
fn forget_pages(map: &memmap2::Mmap) {
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
fn scan_batch_file(dir: &Path, path: &Path, found: &mut Found) -> Result<(), SpoolError> {
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

/// An entry's header, checked.
struct EntryHead {
    kind: Kind,
    len: usize,
    run: u64,
    batch: u64,
}

/// What stands at an offset of a segment.
enum EntryAt {
    /// An entry of this use, whole (its checksum matches).
    Valid(EntryHead),
    /// No more entries of this use: a zeroed header, or a whole entry of an earlier use.
    End,
    /// Something else: a torn or corrupted entry.
    Damaged,
}

fn check_entry(bytes: &[u8], pos: usize, seq: u64) -> EntryAt {
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default());
    let word64 = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
    let header = &bytes[pos..pos + ENTRY_HEADER];
    if header.iter().all(|b| *b == 0) {
        return EntryAt::End;
    }
    let len = word(pos + 8) as usize;
    let end = pos
        .checked_add(ENTRY_HEADER + align8(len))
        .filter(|e| *e <= bytes.len());
    let kind = Kind::from_u8(bytes[pos + 12]);
    let (true, Some(_), Some(kind)) = (word(pos) == ENTRY_MAGIC, end, kind) else {
        return EntryAt::Damaged;
    };
    if crc32fast::hash(&bytes[pos + 8..pos + ENTRY_HEADER + len]) != word(pos + 4) {
        return EntryAt::Damaged;
    }
    if word64(pos + 32) != seq {
        return EntryAt::End;
    }
    EntryAt::Valid(EntryHead {
        kind,
        len,
        run: word64(pos + 16),
        batch: word64(pos + 24),
    })
}

/// The next 8-aligned offset from `from` where a whole entry of this use (segment `seq`)
/// stands.
fn next_entry(bytes: &[u8], from: usize, seq: u64) -> Option<usize> {
    let mut at = align8(from);
    let magic = ENTRY_MAGIC.to_le_bytes();
    while at + ENTRY_HEADER <= bytes.len() {
        if bytes[at..at + 4] == magic && matches!(check_entry(bytes, at, seq), EntryAt::Valid(_)) {
            return Some(at);
        }
        at += 8;
    }
    None
}

/// What one directory held: its batches not done (in the order they were opened), its
/// spool files and ledger, the highest run and segment sequence found, and the entries
/// skipped as corrupt.
struct Scan {
    recovered: Vec<Recovered>,
    files: Vec<PathBuf>,
    max_run: u64,
    max_seq: u64,
    corrupt: u64,
}

/// Reads what earlier producers left in `dir` (which this producer holds).
fn scan_dir(dir: &Path) -> Result<Scan, SpoolError> {
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
    for path in &entries {
        if path.extension().is_some_and(|x| x == batch_file::EXTENSION) {
            scan_batch_file(dir, path, &mut found)?;
            continue;
        }
        let file = File::open(path).map_err(io(dir, "cannot read a segment"))?;
        if file.metadata().map_or(0, |m| m.len()) == 0 {
            // Made and not yet allocated (a spare the preparer was making at a kill):
            // nothing was ever written in it.
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
    }
    maps.sort_by_key(|(seq, _)| *seq);
    for (_, map) in &maps {
        scan_segment(map, &mut found);
        forget_pages(map);
    }
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
    let recovered = found
        .batches
        .into_iter()
        .filter(|(id, b)| {
            !b.done && (b.body.is_some() || !b.records.is_empty()) && !replayed.contains(id)
        })
        .filter_map(|(origin, b)| {
            let (dest, tags) = b.open?;
            Some(Recovered {
                origin,
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

impl Spool {
    /// Opens a spool under `root` for one producer with `shards` writers: takes a slot of
    /// its own and the orphans (see `lock`), scans what earlier producers left in them, and
    /// answers the batches to send again. `keep_bytes` bounds the settled segments kept for
    /// reuse (twice the producer's memory budget: the segments in use at a peak hold its
    /// records plus their entry headers, and settle in order, so they exceed the budget
    /// itself).
    pub(crate) fn open(
        root: &Path,
        slots: u32,
        shards: usize,
        max_bytes: usize,
        keep_bytes: usize,
        sync: SpoolSync,
    ) -> Result<Opened, SpoolError> {
        let claim = lock::claim(root, slots)?;
        let own = scan_dir(&claim.own.dir)?;
        let mut corrupt = own.corrupt;
        let dir = claim.own.dir;
        let mut leftovers = vec![Leftover {
            dir: dir.clone(),
            _lock: None,
            recovered: own.recovered,
            old_files: own.files,
            ledger: LedgerWriter::default(),
        }];
        for Held { dir, lock } in claim.orphans {
            let orphan = scan_dir(&dir)?;
            corrupt += orphan.corrupt;
            leftovers.push(Leftover {
                dir,
                _lock: Some(lock),
                recovered: orphan.recovered,
                old_files: orphan.files,
                ledger: LedgerWriter::default(),
            });
        }
        let lock = claim.own.lock;
        let segment_bytes = segment_bytes_for(max_bytes, shards);
        let spool = Arc::new(Spool {
            dir: dir.clone(),
            dir_lock: Mutex::new(Some(lock)),
            run: own.max_run + 1,
            sync,
            segment_bytes,
            max_bytes,
            keep_segments: keep_bytes / segment_bytes,
            keep_bytes,
            used: Arc::new(AtomicUsize::new(0)),
            disk_room: Arc::new(AtomicUsize::new(usize::MAX)),
            next_seq: AtomicU64::new(own.max_seq + 1),
            writers: (0..shards).map(|_| Mutex::new(None)).collect(),
            state: Arc::new(Mutex::new(State {
                segments: BTreeMap::new(),
                chains: vec![VecDeque::new(); shards],
                free: Vec::new(),
                spare_bytes: 0,
                peak: 0,
                closed: false,
            })),
            prepare: Arc::default(),
            preparer: Mutex::new(None),
            room: Condvar::new(),
            room_lock: Mutex::new(()),
            corrupt_entries: AtomicU64::new(corrupt),
            files: Arc::default(),
            committing: Arc::default(),
        });
        let preparer = Preparer {
            state: spool.state.clone(),
            signal: spool.prepare.clone(),
            dir,
            run: spool.run,
            segment_bytes,
            max_bytes,
            used: spool.used.clone(),
            disk_room: spool.disk_room.clone(),
            shards,
            files: spool.files.clone(),
        };
        *spool.preparer.lock() = std::thread::Builder::new()
            .name("loghose-spool-prep".into())
            .spawn(move || preparer.run())
            .ok();
        if let SpoolSync::Interval(every) = sync {
            // Every interval, everything is synced; in between, the bodies of compressed
            // batches as they come (a group commit), so their files can go back.
            let weak = Arc::downgrade(&spool);
            let committing = spool.committing.clone();
            let _ = std::thread::Builder::new()
                .name("loghose-spool-sync".into())
                .spawn(move || {
                    let mut next = std::time::Instant::now() + every;
                    loop {
                        let pending = {
                            let mut files = committing.files.lock();
                            if files.is_empty() {
                                committing.wake.wait_until(&mut files, next);
                            }
                            // One sync for the files compressed within a short while:
                            // after a timed sync, every file it took comes this way.
                            let gathered = (std::time::Instant::now() + COMMIT_GATHER).min(next);
                            while !files.is_empty()
                                && files.len() < COMMIT_GROUP
                                && !committing.wake.wait_until(&mut files, gathered).timed_out()
                            {
                            }
                            std::mem::take(&mut *files)
                        };
                        let Some(spool) = weak.upgrade() else { return };
                        spool.commit(pending);
                        if std::time::Instant::now() >= next {
                            spool.sync_all();
                            next = std::time::Instant::now() + every;
                        }
                    }
                });
        }
        Ok(Opened { spool, leftovers })
    }

    /// This producer's run number.
    #[cfg(test)]
    pub(crate) fn run(&self) -> u64 {
        self.run
    }

    /// Whether records are synced to the disk (`batch`, `interval`).
    pub(crate) fn syncs(&self) -> bool {
        self.sync != SpoolSync::None
    }

    /// Writes in `from`'s replay ledger that this batch of it is now in this run's files, at
    /// once and unsynced (with `batch` or `interval` syncing; see `replay_ledger`: trusted
    /// after a kill, not after a reboot), so that a producer opened after this one is killed
    /// mid-replay does not send it again.
    pub(crate) fn note_replayed_now(
        &self,
        from: &mut Leftover,
        origin: (u64, u64),
    ) -> std::io::Result<()> {
        if self.sync != SpoolSync::None {
            from.ledger.note_this_boot(&from.dir, origin)?;
        }
        Ok(())
    }

    /// Writes in `from`'s replay ledger, for good, that these of its batches are now in this
    /// run's files. With `batch` or `interval` syncing, this run's files are synced first and
    /// the ledger after, so that a power loss never keeps the ledger's word without the copies.
    pub(crate) fn note_replayed(
        &self,
        from: &mut Leftover,
        origins: &[(u64, u64)],
    ) -> std::io::Result<()> {
        if origins.is_empty() {
            return Ok(());
        }
        let syncs = self.sync != SpoolSync::None;
        if syncs {
            self.sync_all();
        }
        from.ledger.note_synced(&from.dir, origins, syncs)
    }

    /// Deletes the files an earlier producer left in `from`, once their batches are in this
    /// run's (an orphan is let go when `from` is dropped).
    pub(crate) fn remove_old(&self, from: &Leftover) {
        if self.sync != SpoolSync::None {
            self.sync_all();
        }
        for f in &from.old_files {
            let _ = std::fs::remove_file(f);
        }
    }

    /// Appends a batch's entry through `shard`'s writer, opening a new segment when the
    /// current one is full; an error only when a segment file cannot be made.
    fn append(
        &self,
        shard: usize,
        kind: Kind,
        run: u64,
        batch: u64,
        parts: &[&[u8]],
        mark: Option<&mut SpoolMark>,
    ) -> std::io::Result<()> {
        let mut guard = self.writers[shard].lock();
        let fits = guard
            .as_mut()
            .is_some_and(|w| w.append(kind, run, batch, parts));
        if !fits {
            let need: usize = ENTRY_HEADER + parts.iter().map(|p| align8(p.len())).sum::<usize>();
            let mut writer = self.new_segment(shard, need)?;
            let written = writer.append(kind, run, batch, parts);
            debug_assert!(written, "a new segment holds the entry it was sized for");
            if let Some(old) = guard.replace(writer) {
                self.retire(old);
            }
        }
        let seq = guard.as_ref().map_or(0, |w| w.seq);
        drop(guard);
        if let Some(mark) = mark {
            if mark.segments.last() != Some(&seq) {
                mark.segments.push(seq);
                if let Some(s) = self.state.lock().segments.get_mut(&seq) {
                    s.live += 1;
                }
            }
        }
        Ok(())
    }

    /// A fresh segment for `shard` with room for an entry of `need` bytes, its blocks
    /// allocated up front (a full disk is an error here, not a fault on a later write into the
    /// mapping). `None` when the file cannot be made. Admission ([`Spool::over_limit`]) keeps
    /// the total within `spool_max_bytes`: it stops new records a segment per shard early.
    fn new_segment(&self, shard: usize, need: usize) -> std::io::Result<Writer> {
        let size = self.segment_bytes.max(align8(SEGMENT_HEADER + need));
        self.used.fetch_add(size, Ordering::AcqRel);
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let mut path = self
            .dir
            .join(format!("seg-{:016x}-{seq:016x}.spl", self.run));
        let reused = {
            let mut state = self.state.lock();
            let at = state.free.iter().position(|f| f.size >= size);
            let taken = at.map(|i| state.free.swap_remove(i));
            if let Some(t) = &taken {
                state.spare_bytes -= t.size;
            }
            if state.free.len() < self.writers.len() {
                // The preparer makes one ready for the next segment.
                self.prepare.notify();
            }
            taken
        };
        let made = match reused {
            // Reused under its name, not cleared: the new header's sequence ends a scan at the
            // first entry of the earlier use.
            Some(free) => {
                path = free.path;
                Ok((free.file, free.map))
            }
            None => (|| -> std::io::Result<(Arc<File>, MmapMut)> {
                let file = private_file()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&path)?;
                allocate(&file, size)?;
                let map = map_segment(&file)?;
                Ok((Arc::new(file), map))
            })(),
        };
        let (file, mut map) = match made {
            Ok(made) => made,
            Err(e) => {
                let used = self.used.fetch_sub(size, Ordering::AcqRel) - size;
                if is_disk_full(&e) {
                    // What the disk holds is the limit until a segment is settled: admission
                    // waits or refuses (the buffer-full policy) instead of failing each add.
                    self.disk_room.store(used, Ordering::Release);
                }
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        map[8..16].copy_from_slice(&self.run.to_le_bytes());
        map[16..20].copy_from_slice(&(shard as u32).to_le_bytes());
        map[20..28].copy_from_slice(&seq.to_le_bytes());
        map[..8].copy_from_slice(SEGMENT_MAGIC);
        let mut state = self.state.lock();
        state.segments.insert(
            seq,
            Segment {
                path,
                file,
                live: 0,
                full: None,
            },
        );
        state.chains[shard].push_back(seq);
        state.peak = state.peak.max(state.segments.len());
        Ok(Writer {
            seq,
            map,
            pos: SEGMENT_HEADER,
        })
    }

    /// Marks a writer's segment full (keeping its mapping), settling what can be settled.
    fn retire(&self, writer: Writer) {
        let mut state = self.state.lock();
        if let Some(s) = state.segments.get_mut(&writer.seq) {
            s.full = Some(writer.map);
        }
        self.collect(&mut state);
    }

    /// Settles, shard by shard from the oldest, the full segments no live batch needs: some
    /// are kept for reuse ([`Spool::keeps`]; marked free, so a recovery ignores them), the
    /// rest deleted.
    fn collect(&self, state: &mut State) {
        let mut freed = 0;
        let keep = self.keeps(state);
        let State {
            segments,
            chains,
            free,
            spare_bytes,
            closed,
            ..
        } = state;
        for chain in chains.iter_mut() {
            while let Some(&seq) = chain.front() {
                let done = segments
                    .get(&seq)
                    .is_none_or(|s| s.full.is_some() && s.live == 0);
                if !done {
                    break;
                }
                chain.pop_front();
                let Some(s) = segments.remove(&seq) else {
                    continue;
                };
                let size = s.file.metadata().map_or(0, |m| m.len() as usize);
                freed += size;
                // Kept while the files on disk stay within spool_max_bytes.
                let room =
                    self.used.load(Ordering::Acquire).saturating_sub(freed) + *spare_bytes + size
                        <= self.max_bytes;
                match s.full {
                    Some(mut map) if !*closed && free.len() < keep && room => {
                        map[..8].copy_from_slice(FREE_MAGIC);
                        *spare_bytes += size;
                        free.push(Free {
                            path: s.path,
                            file: s.file,
                            size,
                            map,
                        });
                    }
                    _ => {
                        let _ = std::fs::remove_file(&s.path);
                    }
                }
            }
        }
        if freed > 0 {
            self.used.fetch_sub(freed, Ordering::AcqRel);
            self.disk_room.store(usize::MAX, Ordering::Release);
            let _guard = self.room_lock.lock();
            self.room.notify_all();
        }
    }

    /// Writes a record of batch `batch` (its `Open` first, if not yet written, with `tags`:
    /// the group tags the batch will carry). An error only when a segment cannot be made.
    pub(crate) fn record(
        &self,
        shard: usize,
        batch: u64,
        dest: &Destination,
        tags: &[u8],
        log: &[u8],
        mark: &mut SpoolMark,
    ) -> Result<(), SpoolError> {
        if !mark.opened {
            let open = encode_open(dest, tags);
            self.append(shard, Kind::Open, self.run, batch, &[&open], Some(mark))
                .map_err(io(&self.dir, "cannot make a segment"))?;
            mark.opened = true;
        }
        self.append(shard, Kind::Record, self.run, batch, &[log], Some(mark))
            .map_err(io(&self.dir, "cannot make a segment"))
    }

    /// Notes a batch's pack id as it seals (it may be sent from now on).
    pub(crate) fn sealed(&self, shard: usize, batch: u64, pack_id: &str, mark: &mut SpoolMark) {
        if let Some(file) = &mut mark.file {
            file.sealed(pack_id);
        } else if mark.opened {
            // A Sealed entry that finds no room is only a lost pack id: a replay would then
            // send the batch under a new one.
            let _ = self.append(
                shard,
                Kind::Sealed,
                self.run,
                batch,
                &[pack_id.as_bytes()],
                Some(mark),
            );
        }
    }

    /// Whether batches are synced as they seal (`spool_sync = batch`).
    pub(crate) fn syncs_batches(&self) -> bool {
        self.sync == SpoolSync::Batch
    }

    /// Makes the segments a batch is in durable (`spool_sync = batch`).
    pub(crate) fn sync_batch(&self, mark: &SpoolMark) {
        if self.sync != SpoolSync::Batch {
            return;
        }
        if let Some(file) = &mark.file {
            let _ = file.file.sync_data();
            return;
        }
        let files: Vec<Arc<File>> = {
            let state = self.state.lock();
            mark.segments
                .iter()
                .filter_map(|s| state.segments.get(s).map(|s| s.file.clone()))
                .collect()
        };
        for f in files {
            let _ = f.sync_data();
        }
    }

    /// Syncs every segment (the `interval` timer, and before old files are deleted).
    fn sync_all(&self) {
        let mut files: Vec<Arc<File>> = self
            .state
            .lock()
            .segments
            .values()
            .map(|s| s.file.clone())
            .collect();
        if let Some(pool) = self.files.get() {
            let live = pool.live.lock();
            pool.ticks.fetch_add(1, Ordering::Relaxed);
            files.extend(live.values().cloned());
        }
        for f in files {
            let _ = f.sync_data();
        }
    }

    /// A batch reached its final outcome: `Done` is written and its segments may go.
    pub(crate) fn done(&self, shard: usize, batch: u64, mark: &mut SpoolMark) {
        if let Some(file) = mark.file.take() {
            self.give_back(file);
            return;
        }
        if !mark.opened {
            return;
        }
        // No room for the Done entry: the batch would be sent once more after a crash, which
        // at-least-once allows.
        let _ = self.append(shard, Kind::Done, self.run, batch, &[], None);
        let mut state = self.state.lock();
        for seq in &mark.segments {
            if let Some(s) = state.segments.get_mut(seq) {
                s.live = s.live.saturating_sub(1);
            }
        }
        self.collect(&mut state);
    }

    /// Whether new records must wait: the files in use (idle batch files are room, not use)
    /// leave less than one more segment per shard below `spool_max_bytes`.
    pub(crate) fn over_limit(&self) -> bool {
        let reserve = self.segment_bytes * self.writers.len();
        let idle = self
            .files
            .get()
            .map_or(0, |pool| pool.idle_bytes.load(Ordering::Acquire));
        self.used.load(Ordering::Acquire).saturating_sub(idle) + reserve
            > self.max_bytes.min(self.disk_room.load(Ordering::Acquire))
    }

    /// Whether the disk ran out of space (and no segment was settled since).
    pub(crate) fn disk_full(&self) -> bool {
        self.disk_room.load(Ordering::Acquire) != usize::MAX
    }

    /// Waits until [`Spool::over_limit`] is false, or `timeout` passes.
    pub(crate) fn wait_room(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut guard = self.room_lock.lock();
        loop {
            if !self.over_limit() {
                return true;
            }
            if self.room.wait_until(&mut guard, deadline).timed_out() {
                return !self.over_limit();
            }
        }
    }

    /// Retires every shard's current segment (at close): with every batch done, the
    /// directory is left empty.
    pub(crate) fn close(&self) {
        for w in &self.writers {
            if let Some(old) = w.lock().take() {
                self.retire(old);
            }
        }
        let mut state = self.state.lock();
        state.closed = true;
        state.spare_bytes = 0;
        for spare in std::mem::take(&mut state.free) {
            let _ = std::fs::remove_file(&spare.path);
        }
        drop(state);
        let pending = std::mem::take(&mut *self.committing.files.lock());
        self.commit(pending);
        if let Some(pool) = self.files.get() {
            pool.closed.store(true, Ordering::Release);
            for idle in std::mem::take(&mut *pool.idle.lock()) {
                pool.idle_bytes
                    .fetch_sub(pool.shape.file_bytes(), Ordering::AcqRel);
                if idle.is_mapped() {
                    pool.retained.fetch_sub(1, Ordering::Relaxed);
                }
                self.delete_file(idle);
            }
        }
        self.stop_preparer();
        // Every batch is settled and no file is left: the slot is free for the next producer
        // (of this process or another) at once, not when this one is dropped.
        drop(self.dir_lock.lock().take());
    }

    /// Writes the default destination's batches into batch files of their own from now on
    /// (when its destination and `tags` fit a file's header).
    pub(crate) fn enable_batch_files(
        &self,
        batch_max_bytes: usize,
        batch_max_count: usize,
        dest: &Destination,
        tags: &[u8],
    ) {
        let open = encode_open(dest, tags);
        if !Shape::fits(&open) {
            return;
        }
        let shape = Shape::new(batch_max_bytes, batch_max_count);
        let _ = self.files.set(FilePool {
            shape,
            open,
            idle: Mutex::new(Vec::new()),
            live: Mutex::new(BTreeMap::new()),
            made: AtomicU64::new(0),
            peak: AtomicUsize::new(0),
            retained: AtomicUsize::new(0),
            idle_bytes: AtomicUsize::new(0),
            retain_max: (self.keep_bytes / shape.file_bytes()).max(MAPPED_IDLE_FILES),
            ticks: AtomicU64::new(0),
            closed: std::sync::atomic::AtomicBool::new(false),
        });
    }

    /// A batch file for batch `batch` of the default destination, and the buffer the batch is
    /// to be written in: an idle file if there is one, else a new one when the spool has room
    /// for it besides a segment per shard. `None` (the batch then goes to the segments, which
    /// wait for room or report why) when batch files are off, there is no room, or the file
    /// cannot be made.
    pub(crate) fn take_batch_file(&self, batch: u64, mark: &mut SpoolMark) -> Option<BatchBuf> {
        let pool = self.files.get()?;
        let size = pool.shape.file_bytes();
        let idle = {
            let mut idle = pool.idle.lock();
            match idle.iter().rposition(Idle::is_mapped) {
                Some(at) => {
                    pool.retained.fetch_sub(1, Ordering::Relaxed);
                    Some(idle.swap_remove(at))
                }
                None => idle.pop(),
            }
        };
        let idle = match idle {
            Some(idle) => {
                pool.idle_bytes.fetch_sub(size, Ordering::AcqRel);
                idle
            }
            None => {
                let reserve = self.segment_bytes * self.writers.len();
                let limit = self.max_bytes.min(self.disk_room.load(Ordering::Acquire));
                if self.used.load(Ordering::Acquire) + size + reserve > limit {
                    return None;
                }
                let n = pool.made.fetch_add(1, Ordering::Relaxed);
                let path = batch_file::file_name(&self.dir, self.run, n);
                let used = self.used.fetch_add(size, Ordering::AcqRel) + size;
                match Idle::create(path, pool.shape) {
                    Ok(idle) => idle,
                    Err(e) => {
                        self.used.fetch_sub(size, Ordering::AcqRel);
                        if is_disk_full(&e) {
                            self.disk_room.store(used - size, Ordering::Release);
                        }
                        return None;
                    }
                }
            }
        };
        // The preparer maps the next one ahead.
        self.prepare.notify();
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let file = idle.file.clone();
        let path = idle.path.clone();
        match idle.begin(pool.shape, self.run, batch, seq, &pool.open) {
            Ok((begun, buf)) => {
                let mut live = pool.live.lock();
                live.insert(seq, file);
                pool.peak.fetch_max(live.len(), Ordering::Relaxed);
                mark.file_tick = pool.ticks.load(Ordering::Relaxed);
                drop(live);
                mark.file = Some(begun);
                Some(buf)
            }
            Err(_) => {
                self.delete_file(Idle::on_disk(path, file));
                None
            }
        }
    }

    /// Indexes the record at `buf[from..]` in the batch's file; an error when the buffer grew
    /// past the file or its index is full (the caller then seals the batch first).
    #[inline]
    pub(crate) fn index_record(
        &self,
        mark: &mut SpoolMark,
        buf: &BatchBuf,
        from: usize,
    ) -> Result<(), SpoolError> {
        match mark.file.as_mut().map(|file| file.index(buf, from)) {
            Some(true) => Ok(()),
            _ => Err(SpoolError::Io {
                dir: self.dir.clone(),
                what: "a record does not fit its batch file",
                source: std::io::Error::other("the batch is full"),
            }),
        }
    }

    /// Keeps a batch's buffer with its file once the batch was compressed (mapped, for the
    /// file's next batch, while fewer than `keep_bytes` worth are); answers it back when the
    /// batch has no file or it is not kept.
    pub(crate) fn keep_buffer(&self, mark: &mut SpoolMark, buf: BatchBuf) -> Option<BatchBuf> {
        let (Some(pool), Some(file)) = (self.files.get(), &mut mark.file) else {
            return Some(buf);
        };
        let kept = buf.is_file()
            && pool
                .retained
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    (n < pool.retain_max).then_some(n + 1)
                })
                .is_ok();
        if !kept {
            return Some(buf);
        }
        file.data = Some(buf);
        None
    }

    /// A batch in a batch file was compressed: its compressed body is written in `shard`'s
    /// segments in its stead (its `Open` entry first) and the file goes back at once, so that
    /// files are needed only while batches fill (as the memory budget's buffers are), not
    /// while they are sent. From then on the batch is settled like any segment batch. With
    /// `spool_sync = batch` the file is kept until the batch is done (it was synced at seal).
    /// Nothing changes when the body cannot be written (the file stays, a crash loses nothing).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn compressed(
        &self,
        shard: usize,
        batch: u64,
        pack_id: &str,
        codec: Compression,
        raw_len: usize,
        body: &[u8],
        mark: &mut SpoolMark,
    ) {
        if mark.file.is_none() || self.sync == SpoolSync::Batch {
            return;
        }
        let Some(pool) = self.files.get() else {
            return;
        };
        let head = body_head(codec, raw_len, pack_id);
        let mut staged = SpoolMark::default();
        let written = self
            .append(
                shard,
                Kind::Open,
                self.run,
                batch,
                &[&pool.open],
                Some(&mut staged),
            )
            .and_then(|()| {
                self.append(
                    shard,
                    Kind::Body,
                    self.run,
                    batch,
                    &[&head, body],
                    Some(&mut staged),
                )
            });
        if written.is_err() {
            // An Open entry alone, if it was written, adds nothing to what the file holds.
            let mut state = self.state.lock();
            for seq in &staged.segments {
                if let Some(s) = state.segments.get_mut(seq) {
                    s.live = s.live.saturating_sub(1);
                }
            }
            self.collect(&mut state);
            return;
        }
        staged.opened = true;
        let segments = staged.segments.clone();
        let waits = self.reuse_waits_for_commit(mark);
        if let Some(file) = std::mem::replace(mark, staged).file {
            if waits {
                // The segments holding the body stay unsettled while the file waits, whatever
                // becomes of the batch meanwhile: were they settled (and reused) first, a kill
                // would find the file's records with no sign that the batch was done, and
                // send a delivered batch again.
                let mut state = self.state.lock();
                for seq in &segments {
                    if let Some(s) = state.segments.get_mut(seq) {
                        s.live += 1;
                    }
                }
                drop(state);
                let mut files = self.committing.files.lock();
                files.push((file, segments));
                // Woken to start gathering, and once enough are gathered.
                if files.len() == 1 || files.len() >= COMMIT_GROUP {
                    self.committing.wake.notify_one();
                }
            } else {
                self.give_back(file);
            }
        }
    }

    /// Whether a compressed batch's file may be reused only once the segments holding its
    /// body are synced: with `interval` syncing, when a timed sync took the file since the
    /// batch took it (its records may be durable only there). A file no sync took holds only
    /// records of the current interval, which a power loss may lose: it goes back at once,
    /// and under load nearly every file is such a one.
    fn reuse_waits_for_commit(&self, mark: &SpoolMark) -> bool {
        let Some(pool) = self.files.get() else {
            return false;
        };
        if !matches!(self.sync, SpoolSync::Interval(_)) || mark.file.is_none() {
            return false;
        }
        let _live = pool.live.lock();
        pool.ticks.load(Ordering::Relaxed) != mark.file_tick
    }

    /// Syncs the segments holding the bodies of `pending` batches, then gives their files
    /// back.
    fn commit(&self, pending: Vec<(BatchFile, Vec<u64>)>) {
        if pending.is_empty() {
            return;
        }
        let mut seqs: Vec<u64> = pending
            .iter()
            .flat_map(|(_, s)| s.iter().copied())
            .collect();
        seqs.sort_unstable();
        seqs.dedup();
        let files: Vec<Arc<File>> = {
            let state = self.state.lock();
            seqs.iter()
                .filter_map(|s| state.segments.get(s).map(|s| s.file.clone()))
                .collect()
        };
        for f in files {
            let _ = f.sync_data();
        }
        let mut held = Vec::new();
        for (file, segments) in pending {
            self.give_back(file);
            held.extend(segments);
        }
        // Only now may the segments that held the bodies settle (see `compressed`).
        let mut state = self.state.lock();
        for seq in &held {
            if let Some(s) = state.segments.get_mut(seq) {
                s.live = s.live.saturating_sub(1);
            }
        }
        self.collect(&mut state);
    }

    /// The last batch in flight is done: with no batch file in use, the idle ones kept mapped
    /// under load are unmapped down to the one kept at rest (a file the preparer mapped
    /// ahead, or the last batches', would otherwise stay resident while nothing is sent).
    pub(crate) fn at_rest(&self) {
        let Some(pool) = self.files.get() else {
            return;
        };
        if !pool.live.lock().is_empty() {
            return;
        }
        let mut mapped = 0;
        for idle in pool.idle.lock().iter_mut().rev() {
            if idle.is_mapped() {
                mapped += 1;
                if mapped > MAPPED_IDLE_FILES {
                    idle.unmap();
                    pool.retained.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// A batch opened and left empty: its batch file, if it has one, goes back.
    pub(crate) fn forget(&self, mark: &mut SpoolMark) {
        if let Some(file) = mark.file.take() {
            self.give_back(file);
        }
    }

    /// A batch file whose batch is done, or was opened and left empty: marked free, then
    /// kept (mapped while few are) or deleted.
    pub(crate) fn give_back(&self, file: BatchFile) {
        let Some(pool) = self.files.get() else {
            return;
        };
        let in_use = {
            let mut live = pool.live.lock();
            live.remove(&file.seq());
            live.len()
        };
        let idle = file.finish();
        // Kept, within spool_max_bytes, as many as were ever in use at once: a steady
        // producer then makes and deletes no files (each costs the file system a fault per
        // page to fill).
        let peak = pool.peak.load(Ordering::Relaxed).max(MAPPED_IDLE_FILES);
        let keep = !pool.closed.load(Ordering::Acquire)
            && self.used.load(Ordering::Acquire) + self.segment_bytes * self.writers.len()
                <= self.max_bytes;
        let mut list = pool.idle.lock();
        if keep && list.len() < peak {
            // At rest, one kept mapped; while batches fill, every one within `keep_bytes`
            // (unmapped, a file costs a fault per page when it is next taken, and unmapping
            // costs every thread a TLB flush); `at_rest` trims them when the load stops.
            let mapped_limit = match in_use {
                0 => MAPPED_IDLE_FILES,
                _ => pool.retain_max,
            };
            let mut mapped = usize::from(idle.is_mapped());
            for other in list.iter_mut().rev() {
                if other.is_mapped() {
                    mapped += 1;
                    if mapped > mapped_limit {
                        other.unmap();
                        pool.retained.fetch_sub(1, Ordering::Relaxed);
                    }
                }
            }
            list.push(idle);
            drop(list);
            pool.idle_bytes
                .fetch_add(pool.shape.file_bytes(), Ordering::AcqRel);
            let _guard = self.room_lock.lock();
            self.room.notify_all();
            return;
        }
        drop(list);
        if idle.is_mapped() {
            pool.retained.fetch_sub(1, Ordering::Relaxed);
        }
        self.delete_file(idle);
    }

    /// Deletes a batch file and gives its room back.
    fn delete_file(&self, idle: Idle) {
        let size = idle.file.metadata().map_or(0, |m| m.len() as usize);
        let _ = std::fs::remove_file(&idle.path);
        drop(idle);
        self.used.fetch_sub(size, Ordering::AcqRel);
        self.disk_room.store(usize::MAX, Ordering::Release);
        let _guard = self.room_lock.lock();
        self.room.notify_all();
    }

    /// Ends the preparer thread and waits for it (at the producer's close, so that the
    /// directory's lock goes with the producer).
    pub(crate) fn stop_preparer(&self) {
        if let Some(lock) = &*self.dir_lock.lock() {
            lock.mark_closed();
        }
        self.prepare.stop.store(true, Ordering::Release);
        self.prepare.notify();
        let preparer = self.preparer.lock().take();
        if let Some(thread) = preparer {
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }

    /// How many settled segments are kept for reuse: as many as were ever in use at once
    /// (two per shard at least), so that in a steady state no segment file is made or deleted
    /// (both cost the file system more than the records cost us). Each kept is resident, so
    /// no more than `keep_bytes` worth.
    fn keeps(&self, state: &State) -> usize {
        (self.writers.len() * 2).max(state.peak.min(self.keep_segments))
    }

    /// `spool_max_bytes`.
    pub(crate) fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Bytes of segment files now.
    pub(crate) fn used_bytes(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

/// Wakes the preparer thread; shared with it so that it holds no reference to the spool
/// while it waits (the spool, and its directory lock, go when the producer does).
#[derive(Default)]
struct PrepSignal {
    /// Settled segments wait to be cleared, or the spool is gone.
    pending: Mutex<bool>,
    wake: Condvar,
    /// The producer is closing: the thread ends.
    stop: std::sync::atomic::AtomicBool,
}

impl PrepSignal {
    fn notify(&self) {
        *self.pending.lock() = true;
        self.wake.notify_one();
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        // The preparer thread ends (without being waited for: it holds nothing of the spool
        // but its state).
        self.prepare.stop.store(true, Ordering::Release);
        self.prepare.notify();
    }
}

/// The preparer thread: makes new segments ahead (allocated, mapped, their pages writable)
/// whenever fewer than one per shard are ready, off the adding threads. Ends when the spool
/// stops it.
struct Preparer {
    state: Arc<Mutex<State>>,
    signal: Arc<PrepSignal>,
    dir: PathBuf,
    run: u64,
    segment_bytes: usize,
    max_bytes: usize,
    used: Arc<AtomicUsize>,
    disk_room: Arc<AtomicUsize>,
    /// Spares it keeps ready: one per shard.
    shards: usize,
    /// The batch files, once enabled.
    files: Arc<std::sync::OnceLock<FilePool>>,
}

impl Preparer {
    fn run(self) {
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
            self.map_idle_file();
        }
    }

    /// Maps an idle batch file ahead, its pages made writable, when none is: the next batch
    /// then takes it with no page faults on the adding thread (mapping a file costs a fault
    /// per 4 KiB page, more than the records written in it).
    fn map_idle_file(&self) {
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
    fn wants_new(&self) -> bool {
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
    fn make_spare(&self, n: u64) -> bool {
        let path = self.dir.join(format!("seg-{:016x}-s{n}.spl", self.run));
        let made = (|| -> std::io::Result<(Arc<File>, MmapMut)> {
            let file = private_file()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)?;
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
                // reports what it meets.
                let _ = std::fs::remove_file(&path);
                true
            }
        }
    }

    /// Puts a ready spare in the free list (or deletes it if the spool closed meanwhile).
    fn keep(&self, spare: Free) -> bool {
        let mut state = self.state.lock();
        if state.closed {
            drop(state);
            let _ = std::fs::remove_file(&spare.path);
            return false;
        }
        state.free.push(spare);
        true
    }
}

/// Whether a file error means the disk (or the user's quota) is full.
fn is_disk_full(error: &std::io::Error) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn dest(logstore: &str) -> Destination {
        Destination {
            project: "proj".into(),
            logstore: logstore.into(),
            topic: "t".into(),
            source: "10.0.0.1".into(),
            hash_key: Some("00ff".into()),
        }
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "loghose-spool-{name}-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// Opens a spool under `d` (in its first slot, as the only producer there): the spool,
    /// the batches its slot held, and the rest of what the slot held (its files, its ledger).
    fn open(d: &Path, max: usize) -> (Arc<Spool>, Vec<Recovered>, Leftover) {
        let mut o = Spool::open(d, 64, 2, max, 64 << 20, SpoolSync::None).unwrap();
        assert_eq!(o.leftovers.len(), 1, "no orphans here");
        let mut own = o.leftovers.remove(0);
        (o.spool, std::mem::take(&mut own.recovered), own)
    }

    /// The slot directory a spool opened by `open` writes in.
    fn slot(d: &Path) -> PathBuf {
        d.join("slot-0")
    }

    #[test]
    fn batch_files_are_recovered_from_their_records_or_their_compressed_body() {
        let d = dir("body");
        let framed = |text: &str| [&[0x0a, text.len() as u8][..], text.as_bytes()].concat();
        let fill = |spool: &Spool, batch: u64, texts: &[&str]| {
            let mut mark = SpoolMark::default();
            let mut buf = spool
                .take_batch_file(batch, &mut mark)
                .expect("a batch file");
            for t in texts {
                let from = buf.len();
                buf.extend_from_slice(&framed(t));
                spool.index_record(&mut mark, &buf, from).unwrap();
            }
            (mark, buf)
        };
        {
            let (spool, _, _) = open(&d, 64 << 20);
            spool.enable_batch_files(64 << 10, 100, &dest("own"), b"tags");
            // Batch 1: sealed and compressed, not delivered: its body stands for its file,
            // which goes back and is reused by batch 2.
            let (mut m1, mut buf) = fill(&spool, 1, &["one", "two"]);
            spool.sealed(0, 1, "PACK-1", &mut m1);
            buf.extend_from_slice(b"\x22\x03src");
            let raw_len = buf.len();
            let body = crate::wire::compress::compress(Compression::Lz4, &buf).unwrap();
            assert!(spool.keep_buffer(&mut m1, buf).is_none());
            spool.compressed(0, 1, "PACK-1", Compression::Lz4, raw_len, &body, &mut m1);
            assert!(!m1.in_file(), "the file went back");
            // Batch 2: still filling, in the same file.
            let (_m2, _buf2) = fill(&spool, 2, &["three"]);
            // Batch 3: compressed and delivered: nothing to recover.
            let (mut m3, buf) = fill(&spool, 3, &["gone"]);
            let body = crate::wire::compress::compress(Compression::Lz4, &buf).unwrap();
            let raw_len = buf.len();
            assert!(spool.keep_buffer(&mut m3, buf).is_none());
            spool.compressed(0, 3, "PACK-3", Compression::Lz4, raw_len, &body, &mut m3);
            spool.done(0, 3, &mut m3);
            // Dropped without closing: what a kill leaves.
        }
        let (spool, mut recovered, _) = open(&d, 64 << 20);
        for r in &mut recovered {
            r.decode(&spool);
        }
        type Batch = (String, Vec<Vec<u8>>, Option<String>, Vec<u8>);
        let got: Vec<Batch> = recovered
            .iter()
            .map(|r| {
                (
                    r.dest.logstore.to_string(),
                    r.records.iter().map(|x| x.to_vec()).collect(),
                    r.pack_id.clone(),
                    r.tags.clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "own".into(),
                    vec![framed("one"), framed("two")],
                    Some("PACK-1".into()),
                    b"tags".to_vec()
                ),
                ("own".into(), vec![framed("three")], None, b"tags".to_vec()),
            ]
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn with_interval_syncing_only_a_file_a_timed_sync_took_waits_for_its_body_to_be_synced() {
        let d = dir("commit");
        // An interval no test outlasts: the timed syncs are the test's own calls.
        let o = Spool::open(
            &d,
            64,
            1,
            64 << 20,
            64 << 20,
            SpoolSync::Interval(Duration::from_secs(3600)),
        )
        .unwrap();
        let spool = o.spool;
        spool.enable_batch_files(64 << 10, 100, &dest("own"), b"tags");
        let pool = spool.files.get().unwrap();
        let compress = |batch: u64, tick_between: bool| {
            let mut mark = SpoolMark::default();
            let mut buf = spool.take_batch_file(batch, &mut mark).unwrap();
            let from = buf.len();
            buf.extend_from_slice(b"\x0a\x03one");
            spool.index_record(&mut mark, &buf, from).unwrap();
            if tick_between {
                spool.sync_all();
            }
            let waits = spool.reuse_waits_for_commit(&mark);
            let body = crate::wire::compress::compress(Compression::Lz4, &buf).unwrap();
            let raw_len = buf.len();
            assert!(spool.keep_buffer(&mut mark, buf).is_none());
            spool.compressed(0, batch, "P", Compression::Lz4, raw_len, &body, &mut mark);
            assert!(!mark.in_file());
            waits
        };
        // No timed sync while it filled: the file is idle again as `compressed` returns.
        assert!(!compress(1, false));
        assert_eq!(pool.idle.lock().len(), 1);
        assert!(spool.committing.files.lock().is_empty());
        // A timed sync took it: it goes back only after the commit on the sync thread.
        assert!(compress(2, true));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.idle.lock().len() != 1 {
            assert!(
                std::time::Instant::now() < deadline,
                "the commit gives it back"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // Other modes never wait.
        drop(spool);
        let _ = std::fs::remove_dir_all(&d);
        let d = dir("commit-none");
        let (spool, _, _) = open(&d, 64 << 20);
        spool.enable_batch_files(64 << 10, 100, &dest("own"), b"tags");
        let mut mark = SpoolMark::default();
        let _buf = spool.take_batch_file(1, &mut mark).unwrap();
        spool.sync_all();
        assert!(!spool.reuse_waits_for_commit(&mark));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn sync_modes_parse() {
        assert_eq!(SpoolSync::parse("none"), Some(SpoolSync::None));
        assert_eq!(SpoolSync::parse("batch"), Some(SpoolSync::Batch));
        assert_eq!(
            SpoolSync::parse("interval:250"),
            Some(SpoolSync::Interval(Duration::from_millis(250)))
        );
        for bad in ["", "interval:", "interval:0", "interval:x", "always"] {
            assert_eq!(SpoolSync::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn what_was_not_done_is_recovered_in_order_with_its_pack_id() {
        let d = dir("recover");
        {
            let (spool, recovered, _) = open(&d, 64 << 20);
            assert!(recovered.is_empty());
            let (mut a, mut b, mut c) = Default::default();
            for i in 0..100u32 {
                spool
                    .record(
                        0,
                        1,
                        &dest("aaa"),
                        b"tags",
                        format!("a{i}").as_bytes(),
                        &mut a,
                    )
                    .unwrap();
                spool
                    .record(
                        1,
                        2,
                        &dest("bbb"),
                        b"tags",
                        format!("b{i}").as_bytes(),
                        &mut b,
                    )
                    .unwrap();
            }
            spool
                .record(0, 3, &dest("ccc"), b"tags", b"c0", &mut c)
                .unwrap();
            spool.sealed(0, 1, "PACK-1", &mut a);
            spool.done(0, 3, &mut c);
            // Dropped without closing: what a kill leaves.
        }
        let (spool, recovered, old) = open(&d, 64 << 20);
        assert_eq!(spool.run(), 2);
        assert_eq!(spool.corrupt_entries.load(Ordering::Relaxed), 0);
        assert_eq!(recovered.len(), 2);
        let a = recovered
            .iter()
            .find(|r| &*r.dest.logstore == "aaa")
            .unwrap();
        assert_eq!(a.pack_id.as_deref(), Some("PACK-1"));
        assert_eq!(a.dest, dest("aaa"));
        assert_eq!(a.tags, b"tags");
        let expected: Vec<Vec<u8>> = (0..100).map(|i| format!("a{i}").into_bytes()).collect();
        let got: Vec<Vec<u8>> = a.records.iter().map(|r| r.to_vec()).collect();
        assert_eq!(got, expected);
        let b = recovered
            .iter()
            .find(|r| &*r.dest.logstore == "bbb")
            .unwrap();
        assert_eq!((b.records.len(), b.pack_id.as_deref()), (100, None));
        assert!(!old.old_files.is_empty());
        spool.remove_old(&old);
        drop(spool);
        let (_, again, _) = open(&d, 64 << 20);
        assert!(again.is_empty(), "removed files are not replayed twice");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn batches_the_replay_ledger_names_are_not_recovered_again() {
        let d = dir("ledger");
        {
            let (spool, _, _) = open(&d, 64 << 20);
            for batch in 1..=3u64 {
                let mut mark = SpoolMark::default();
                spool
                    .record(0, batch, &dest("aaa"), b"tags", b"r", &mut mark)
                    .unwrap();
            }
            // Dropped without closing: what a kill leaves.
        }
        {
            // A replay spooled batch 2 anew, then was cut short; its last entry was torn.
            let (spool, recovered, mut left) = open(&d, 64 << 20);
            assert_eq!(recovered.len(), 3);
            let origin = recovered[1].origin;
            assert_eq!(origin, (1, 2));
            spool.note_replayed(&mut left, &[origin]).unwrap();
            // A run the ledger names later than any file's is never reused.
            spool.note_replayed(&mut left, &[(9, 1)]).unwrap();
        }
        let mut ledger = std::fs::OpenOptions::new()
            .append(true)
            .open(slot(&d).join(replay_ledger::SYNCED))
            .unwrap();
        std::io::Write::write_all(&mut ledger, &[1, 0, 0, 0, 0, 0, 0, 0, 3]).unwrap();
        drop(ledger);
        let (spool, recovered, old) = open(&d, 64 << 20);
        let origins: Vec<(u64, u64)> = recovered.iter().map(|r| r.origin).collect();
        assert_eq!(origins, [(1, 1), (1, 3)]);
        assert_eq!(spool.run(), 10);
        // The ledger goes with the old files, after them.
        assert_eq!(
            old.old_files[old.old_files.len() - 2..],
            replay_ledger::files(&slot(&d))
        );
        spool.remove_old(&old);
        assert!(!slot(&d).join(replay_ledger::SYNCED).exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_torn_or_flipped_entry_is_skipped_counted_and_the_rest_recovered() {
        let d = dir("torn");
        {
            let (spool, _, _) = open(&d, 64 << 20);
            let mut m = SpoolMark::default();
            for i in 0..10u32 {
                spool
                    .record(
                        0,
                        7,
                        &dest("aaa"),
                        b"tags",
                        format!("record-{i}").as_bytes(),
                        &mut m,
                    )
                    .unwrap();
            }
        }
        let seg = std::fs::read_dir(slot(&d))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.extension().is_some_and(|x| x == "spl")
                    && std::fs::read(p).unwrap().starts_with(SEGMENT_MAGIC)
            })
            .unwrap();
        let mut bytes = std::fs::read(&seg).unwrap();
        let at = bytes.windows(8).position(|w| w == b"record-4").unwrap();
        bytes[at + 3] ^= 0x20; // a flipped bit in the fifth record
        let last = bytes.windows(8).position(|w| w == b"record-9").unwrap();
        bytes[last - ENTRY_HEADER..last + 8].fill(0); // the last one cut by the kill
        std::fs::write(&seg, &bytes).unwrap();
        let (spool, recovered, _) = open(&d, 64 << 20);
        assert_eq!(spool.corrupt_entries.load(Ordering::Relaxed), 1);
        let got: Vec<String> = recovered[0]
            .records
            .iter()
            .map(|r| String::from_utf8(r.to_vec()).unwrap())
            .collect();
        let want: Vec<String> = [0, 1, 2, 3, 5, 6, 7, 8]
            .iter()
            .map(|i| format!("record-{i}"))
            .collect();
        assert_eq!(got, want);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn producers_share_a_directory_in_slots_and_recover_every_unheld_one() {
        let d = dir("slots");
        let write = |spool: &Spool, logstore: &str| {
            let mut mark = SpoolMark::default();
            spool
                .record(0, 1, &dest(logstore), b"tags", b"r", &mut mark)
                .unwrap();
        };
        let (a, _, _) = open(&d, 1 << 20);
        let b = Spool::open(&d, 64, 2, 1 << 20, 64 << 20, SpoolSync::None)
            .unwrap()
            .spool;
        assert_eq!((a.dir.clone(), b.dir.clone()), (slot(&d), d.join("slot-1")));
        write(&a, "aaa");
        write(&b, "bbb");
        // With one slot allowed, a third producer is refused, naming the directory and a holder.
        match Spool::open(&d, 1, 2, 1 << 20, 64 << 20, SpoolSync::None) {
            Err(SpoolError::Locked { dir, slots, pid }) => {
                assert_eq!((dir, slots), (d.clone(), 1));
                assert_eq!(pid, std::process::id().to_string());
            }
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("a producer took a held slot"),
        }
        // Both die (dropped without closing: what a kill leaves). The next producer takes
        // slot 0 as its own and slot 1 as an orphan, and recovers both.
        drop((a, b));
        let mut o = Spool::open(&d, 64, 2, 1 << 20, 64 << 20, SpoolSync::None).unwrap();
        let found: Vec<(PathBuf, Vec<String>)> = o
            .leftovers
            .iter()
            .map(|l| {
                let stores = l.recovered.iter().map(|r| r.dest.logstore.to_string());
                (l.dir.clone(), stores.collect())
            })
            .collect();
        assert_eq!(
            found,
            [
                (slot(&d), vec!["aaa".to_owned()]),
                (d.join("slot-1"), vec!["bbb".to_owned()])
            ]
        );
        // The orphan stays held until its files are gone and it is let go.
        let busy = Spool::open(&d, 64, 2, 1 << 20, 64 << 20, SpoolSync::None).unwrap();
        assert_eq!(busy.spool.dir, d.join("slot-2"));
        assert!(busy.leftovers.iter().all(|l| l.recovered.is_empty()));
        drop(busy);
        let orphan = o.leftovers.pop().unwrap();
        o.spool.remove_old(&orphan);
        drop(orphan);
        let next = Spool::open(&d, 64, 2, 1 << 20, 64 << 20, SpoolSync::None).unwrap();
        assert_eq!(next.spool.dir, d.join("slot-1"));
        assert!(next.nothing_to_replay(), "the orphan was sent once");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_full_spool_refuses_until_done_batches_free_their_segments() {
        let d = dir("full");
        let spool = Spool::open(&d, 64, 1, 512 << 10, 64 << 20, SpoolSync::Batch)
            .unwrap()
            .spool;
        let record = vec![b'x'; 1000];
        let mut marks = Vec::new();
        let mut batch = 0u64;
        while !spool.over_limit() {
            let mut m = SpoolMark::default();
            for _ in 0..10 {
                spool
                    .record(0, batch, &dest("aaa"), b"tags", &record, &mut m)
                    .unwrap();
            }
            spool.sealed(0, batch, "P", &mut m);
            spool.sync_batch(&m);
            marks.push((batch, m));
            batch += 1;
            assert!(batch < 1000, "never full");
        }
        assert!(spool.used_bytes() <= 512 << 10);
        assert!(!spool.wait_room(Duration::from_millis(20)));
        for (id, m) in &mut marks {
            spool.done(0, *id, m);
        }
        assert!(spool.wait_room(Duration::from_millis(20)));
        // Only the current segment and those kept for reuse are left on disk; after close, none.
        let files = || {
            std::fs::read_dir(slot(&d))
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .path()
                        .extension()
                        .is_some_and(|x| x == "spl")
                })
                .count()
        };
        let spares = files() - 1;
        let keeps = spool.keeps(&spool.state.lock());
        assert!((1..=keeps).contains(&spares), "{spares} of {keeps}");
        spool.close();
        assert_eq!(files(), 0);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_reused_segment_never_brings_back_what_it_held_before() {
        let d = dir("reuse");
        {
            let (spool, _, _) = open(&d, 1 << 20);
            let big = vec![b'o'; 2000];
            // Many settled batches, so segments fill, settle, and are reused.
            for batch in 0..400u64 {
                let mut m = SpoolMark::default();
                spool
                    .record(0, batch, &dest("old"), b"t", &big, &mut m)
                    .unwrap();
                spool.sealed(0, batch, "OLD", &mut m);
                spool.done(0, batch, &mut m);
            }
            let mut m = SpoolMark::default();
            spool
                .record(0, 9999, &dest("new"), b"t", b"fresh", &mut m)
                .unwrap();
            // Killed here.
        }
        let (spool, recovered, _) = open(&d, 1 << 20);
        assert_eq!(spool.corrupt_entries.load(Ordering::Relaxed), 0);
        assert_eq!(recovered.len(), 1);
        assert_eq!(&*recovered[0].dest.logstore, "new");
        assert_eq!(&*recovered[0].records[0], b"fresh");
        let _ = std::fs::remove_dir_all(&d);
    }
}
