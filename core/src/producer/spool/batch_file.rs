//! Batch files: a batch of the producer's own destination written straight into a file of the
//! spool directory (`bat-*.spb`). The batch's buffer is a shared mapping of the file, so a
//! record is in the kernel's page cache, which outlives a killed process, the moment the batch
//! holds it: no second copy, no entry header, only an 8-byte index entry and a CRC-32 of the
//! record's bytes.
//!
//! # Layout
//!
//! A 4 KiB header (magic, run, batch, the sequence number of this use of the file, the
//! index's capacity, where the data starts and its size, the destination and tags with a CRC-32
//! over all of these, and the pack id with its own once the batch seals); the index, 8 bytes per
//! record (where the record ends, and a CRC-32 of its bytes seeded with the use's sequence); the
//! data region, 64 KiB-aligned, which is the batch's buffer: the records exactly as they are
//! sent. A record's index entry is written after its bytes, and the entry after it is zeroed
//! first, so the index always ends at the last record accepted; entries an earlier use left
//! behind are never reached (and would not match the new seed).
//!
//! # Recovery
//!
//! Recovery walks the index: a record whose CRC does not match (a write cut by a power loss, a
//! flipped byte) is skipped and counted and the walk goes on from its end; an end outside the
//! data stops the walk, counted. A header that does not check is one corrupted entry.
//!
//! # Life of a file
//!
//! Life of a file: taken when a batch of the default destination opens (an idle one if there is
//! one, else made and allocated whole, so a full disk is an error then, never a fault while
//! writing), written by the adding threads under their shard's lock, its data mapping kept with
//! the batch while it is sent, and given back when the batch is done: marked free, then kept
//! mapped for a next batch (two at most: pages still mapped cost no faults, and that is all a
//! steady producer needs), kept unmapped while the spool has room, or deleted. A batch
//! delivered within the kernel's writeback delay (30 s by default) leaves pages the next batch
//! overwrites before they are ever written to disk.

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::{MmapMut, MmapOptions};

use crate::producer::buffer::BatchBuf;

/// The extension of batch files.
pub(crate) const EXTENSION: &str = "spb";
/// First bytes of a batch file in use.
const MAGIC: &[u8; 8] = b"LGHBAT01";
/// First bytes of a batch file whose batch is done: nothing in it is to be recovered.
const FREE: &[u8; 8] = b"LGHBATFR";
/// Bytes of the header; the index follows.
const HEAD: usize = 4096;
/// Where the fixed header fields end and the destination and tags begin.
const OPEN_AT: usize = 64;
/// Where the pack id's length, CRC and bytes are.
const PACK_AT: usize = HEAD - 128;
/// Room for the pack id (they are 33 bytes at most).
const PACK_ROOM: usize = 120;
/// The data region's alignment: a mapping's offset must be a multiple of the page size, which
/// is 64 KiB at most on the systems we run on.
const ALIGN: usize = 64 << 10;

fn round_up(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default())
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default())
}

/// The CRC seed of one use of a file: records of another use never match it.
fn seed(seq: u64) -> u32 {
    (seq as u32) ^ ((seq >> 32) as u32) ^ 0x9E37_79B9
}

fn crc(seed: u32, parts: &[&[u8]]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(seed);
    for p in parts {
        h.update(p);
    }
    h.finalize()
}

/// The size of every batch file of a producer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Index entries: the most records a batch holds.
    index: usize,
    /// Bytes of the data region: the largest batch and its group's tail.
    data: usize,
}

impl Shape {
    /// Files for batches of at most `batch_max_bytes` and `batch_max_count` records.
    pub(crate) fn new(batch_max_bytes: usize, batch_max_count: usize) -> Shape {
        Shape {
            index: batch_max_count,
            data: round_up(batch_max_bytes + 1024, ALIGN),
        }
    }

    fn data_at(&self) -> usize {
        round_up(HEAD + 8 * self.index, ALIGN)
    }

    /// Bytes of one file on disk.
    pub(crate) fn file_bytes(&self) -> usize {
        self.data_at() + self.data
    }

    /// Whether a destination and tags encoded as `open` fit the header.
    pub(crate) fn fits(open: &[u8]) -> bool {
        OPEN_AT + open.len() <= PACK_AT
    }
}

/// A file no batch uses, mapped (header and data) or only on disk.
pub(crate) struct Idle {
    pub(crate) path: PathBuf,
    pub(crate) file: Arc<File>,
    maps: Option<(MmapMut, BatchBuf)>,
    /// Bytes of data and records its last batch held: what is mapped ahead for the next.
    last: (usize, usize),
}

impl Idle {
    /// Makes a new file at `path`, its blocks allocated.
    pub(crate) fn create(path: PathBuf, shape: Shape) -> std::io::Result<Idle> {
        let file = super::files::private_file()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        if let Err(e) = super::files::allocate(&file, shape.file_bytes()) {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        Ok(Idle {
            path,
            file: Arc::new(file),
            maps: None,
            last: (0, 0),
        })
    }

    /// A file known only by its path and descriptor (not mapped).
    pub(crate) fn on_disk(path: PathBuf, file: Arc<File>) -> Idle {
        Idle {
            path,
            file,
            maps: None,
            last: (0, 0),
        }
    }

    /// Whether its pages are still mapped.
    pub(crate) fn is_mapped(&self) -> bool {
        self.maps.is_some()
    }

    /// Maps it, if it is not, with the pages its last batch used made writable (off the
    /// adding threads; the next batch is most likely the same size).
    pub(crate) fn map_ahead(&mut self, shape: Shape) -> std::io::Result<()> {
        if self.maps.is_none() {
            self.maps = Some(map(&self.file, shape, self.last)?);
        }
        Ok(())
    }

    /// Lets its mappings go (the file stays).
    pub(crate) fn unmap(&mut self) {
        self.maps = None;
    }

    /// Begins a use of this file for batch `batch` of run `run` (sequence `seq`), to `open`'s
    /// destination and tags: the header written, the index emptied, and the data region handed
    /// back as the batch's buffer.
    pub(crate) fn begin(
        self,
        shape: Shape,
        run: u64,
        batch: u64,
        seq: u64,
        open: &[u8],
    ) -> std::io::Result<(BatchFile, BatchBuf)> {
        let (mut head, mut data) = match self.maps {
            Some(maps) => maps,
            None => map(&self.file, shape, (0, 0))?,
        };
        data.clear();
        let data_at = shape.data_at();
        head[8..16].copy_from_slice(&run.to_le_bytes());
        head[16..24].copy_from_slice(&batch.to_le_bytes());
        head[24..32].copy_from_slice(&seq.to_le_bytes());
        head[32..36].copy_from_slice(&(shape.index as u32).to_le_bytes());
        head[36..40].copy_from_slice(&(data_at as u32).to_le_bytes());
        head[40..44].copy_from_slice(&(shape.data as u32).to_le_bytes());
        head[44..48].copy_from_slice(&(open.len() as u32).to_le_bytes());
        head[OPEN_AT..OPEN_AT + open.len()].copy_from_slice(open);
        let check = crc(seed(seq), &[&head[8..48], open]);
        head[48..52].copy_from_slice(&check.to_le_bytes());
        head[PACK_AT..PACK_AT + 8].fill(0);
        head[HEAD..HEAD + 8].fill(0);
        // The magic last: a recovery that finds it finds the rest of the header written.
        head[..8].copy_from_slice(MAGIC);
        Ok((
            BatchFile {
                path: self.path,
                file: self.file,
                head,
                seq,
                seed: seed(seq),
                hasher: crc32fast::Hasher::new_with_initial(seed(seq)),
                index_cap: shape.index,
                records: 0,
                data: None,
            },
            data,
        ))
    }
}

/// Maps a file's header and index, and its data region as a batch buffer, the first
/// `populate` (data bytes, records) made writable at once (one call instead of a fault per
/// page).
fn map(
    file: &File,
    shape: Shape,
    populate: (usize, usize),
) -> std::io::Result<(MmapMut, BatchBuf)> {
    // SAFETY: the file belongs to this producer, which holds the directory's lock: nothing
    // else maps, writes or truncates it while these mappings live.
    let head = unsafe { MmapOptions::new().len(shape.data_at()).map_mut(file)? };
    // SAFETY: as above.
    let data = unsafe {
        MmapOptions::new()
            .offset(shape.data_at() as u64)
            .len(shape.data)
            .map_mut(file)?
    };
    #[cfg(target_os = "linux")]
    if populate.0 > 0 {
        let index = (HEAD + 8 * populate.1).min(head.len());
        let bytes = round_up(populate.0, 4096).min(data.len());
        let _ = head.advise_range(memmap2::Advice::PopulateWrite, 0, index);
        let _ = data.advise_range(memmap2::Advice::PopulateWrite, 0, bytes);
    }
    let _ = populate;
    Ok((head, BatchBuf::in_file(data)))
}

/// The file of one batch from its opening until it is done.
pub(crate) struct BatchFile {
    pub(crate) path: PathBuf,
    pub(crate) file: Arc<File>,
    head: MmapMut,
    seq: u64,
    seed: u32,
    /// A hasher holding the seed, cloned for each record: making one looks up the CPU's
    /// features every time (about a tenth of the CRC of an S1 record).
    hasher: crc32fast::Hasher,
    index_cap: usize,
    records: usize,
    /// The batch's buffer once the batch was compressed: kept with the file, mapped, for the
    /// file's next batch.
    pub(crate) data: Option<BatchBuf>,
}

impl std::fmt::Debug for BatchFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchFile")
            .field("path", &self.path)
            .field("records", &self.records)
            .finish()
    }
}

impl BatchFile {
    /// The sequence number of this use of the file.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    /// Indexes the record at `data[from..]`, just written at the end of the batch's buffer;
    /// `false` when the buffer is no longer the file's (it grew past it) or the index is full.
    #[inline]
    pub(crate) fn index(&mut self, data: &BatchBuf, from: usize) -> bool {
        let i = self.records;
        if !data.is_file() || i >= self.index_cap {
            return false;
        }
        let end = data.len();
        let mut hasher = self.hasher.clone();
        hasher.update(&data[from..end]);
        let check = hasher.finalize();
        let at = HEAD + 8 * i;
        if i + 1 < self.index_cap {
            self.head[at + 8..at + 16].fill(0);
        }
        let word = end as u64 | (u64::from(check) << 32);
        self.head[at..at + 8].copy_from_slice(&word.to_le_bytes());
        self.records = i + 1;
        true
    }

    /// Notes the batch's pack id as it seals.
    pub(crate) fn sealed(&mut self, pack_id: &str) {
        let pack = pack_id.as_bytes();
        if pack.len() > PACK_ROOM {
            // Never (pack ids are 33 bytes at most); a replay would send it under a new one.
            return;
        }
        let check = crc(self.seed, &[pack]);
        self.head[PACK_AT + 8..PACK_AT + 8 + pack.len()].copy_from_slice(pack);
        self.head[PACK_AT + 4..PACK_AT + 8].copy_from_slice(&check.to_le_bytes());
        self.head[PACK_AT..PACK_AT + 4].copy_from_slice(&(pack.len() as u32).to_le_bytes());
    }

    /// The batch is done: the file is marked free and handed back, with its mappings when the
    /// batch's buffer came back to it.
    pub(crate) fn finish(mut self) -> Idle {
        self.head[..8].copy_from_slice(FREE);
        let data_len = match self.records {
            0 => 0,
            n => read_u64(&self.head, HEAD + 8 * (n - 1)) as u32 as usize,
        };
        Idle {
            path: self.path,
            file: self.file,
            maps: self.data.map(|data| (self.head, data)),
            last: (data_len, self.records),
        }
    }
}

/// What a batch file holds, read back at recovery.
pub(crate) enum Read<'a> {
    /// Marked free, or made and never begun: nothing to recover.
    Nothing,
    /// The header does not check.
    Damaged,
    /// A batch that was not done.
    Batch {
        run: u64,
        batch: u64,
        seq: u64,
        open: &'a [u8],
        pack_id: Option<&'a str>,
        /// Where each whole record lies in the file.
        records: Vec<Range<usize>>,
        /// Records skipped because their CRC did not match, or the walk stopped.
        corrupt: u64,
    },
}

/// Reads a batch file's bytes.
pub(crate) fn read(bytes: &[u8]) -> Read<'_> {
    if bytes.len() < HEAD || &bytes[..8] == FREE || bytes[..OPEN_AT].iter().all(|b| *b == 0) {
        return Read::Nothing;
    }
    if &bytes[..8] != MAGIC {
        return Read::Damaged;
    }
    let seq = read_u64(bytes, 24);
    let index_cap = read_u32(bytes, 32) as usize;
    let data_at = read_u32(bytes, 36) as usize;
    let data_len = read_u32(bytes, 40) as usize;
    let open_len = read_u32(bytes, 44) as usize;
    let shape_ok = OPEN_AT + open_len <= PACK_AT
        && HEAD + 8 * index_cap <= data_at
        && data_at + data_len <= bytes.len();
    if !shape_ok {
        return Read::Damaged;
    }
    let seed = seed(seq);
    let open = &bytes[OPEN_AT..OPEN_AT + open_len];
    if crc(seed, &[&bytes[8..48], open]) != read_u32(bytes, 48) {
        return Read::Damaged;
    }
    let pack_len = read_u32(bytes, PACK_AT) as usize;
    let pack_id = (pack_len > 0 && pack_len <= PACK_ROOM)
        .then(|| &bytes[PACK_AT + 8..PACK_AT + 8 + pack_len])
        .filter(|p| crc(seed, &[p]) == read_u32(bytes, PACK_AT + 4))
        .and_then(|p| std::str::from_utf8(p).ok());
    let mut records = Vec::new();
    let mut corrupt = 0;
    let mut start = 0;
    for i in 0..index_cap {
        let word = read_u64(bytes, HEAD + 8 * i);
        if word == 0 {
            break;
        }
        let end = word as u32 as usize;
        if end <= start || end > data_len {
            corrupt += 1;
            break;
        }
        let range = data_at + start..data_at + end;
        if crc(seed, &[&bytes[range.clone()]]) == (word >> 32) as u32 {
            records.push(range);
        } else {
            corrupt += 1;
        }
        start = end;
    }
    Read::Batch {
        run: read_u64(bytes, 8),
        batch: read_u64(bytes, 16),
        seq,
        open,
        pack_id,
        records,
        corrupt,
    }
}

/// The name of a new batch file.
pub(crate) fn file_name(dir: &Path, run: u64, n: u64) -> PathBuf {
    dir.join(format!("bat-{run:016x}-{n:016x}.{EXTENSION}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("loghose-batch-file-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Writes `records` into a new use of `idle` the way the accumulator does.
    fn write(
        idle: Idle,
        shape: Shape,
        seq: u64,
        records: &[&[u8]],
        pack: Option<&str>,
    ) -> BatchFile {
        let (mut file, mut buf) = idle.begin(shape, 3, 40 + seq, seq, b"open").unwrap();
        for r in records {
            let from = buf.len();
            buf.extend_from_slice(r);
            assert!(file.index(&buf, from));
        }
        if let Some(p) = pack {
            file.sealed(p);
        }
        file.data = Some(buf);
        file
    }

    fn records_of(bytes: &[u8]) -> (Vec<Vec<u8>>, u64, Option<String>) {
        match read(bytes) {
            Read::Batch {
                records,
                corrupt,
                pack_id,
                run,
                open,
                ..
            } => {
                assert_eq!((run, open), (3, &b"open"[..]));
                (
                    records.into_iter().map(|r| bytes[r].to_vec()).collect(),
                    corrupt,
                    pack_id.map(str::to_owned),
                )
            }
            Read::Nothing => panic!("nothing found"),
            Read::Damaged => panic!("damaged header"),
        }
    }

    #[test]
    fn records_come_back_whole_with_the_pack_id_and_a_flipped_byte_costs_one_record() {
        let d = dir("flip");
        let shape = Shape::new(64 << 10, 100);
        let path = file_name(&d, 3, 0);
        let idle = Idle::create(path.clone(), shape).unwrap();
        let recs: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 10 + i as usize]).collect();
        let refs: Vec<&[u8]> = recs.iter().map(|r| &r[..]).collect();
        let file = write(idle, shape, 7, &refs, Some("ABC-1"));
        let bytes = std::fs::read(&path).unwrap();
        let (found, corrupt, pack) = records_of(&bytes);
        assert_eq!(
            (found, corrupt, pack.as_deref()),
            (recs.clone(), 0, Some("ABC-1"))
        );
        // A flipped byte in record 4: that record is skipped and counted, the rest come back.
        let mut flipped = bytes.clone();
        let at = shape.data_at() + recs[..4].iter().map(Vec::len).sum::<usize>() + 2;
        flipped[at] ^= 0x20;
        let (found, corrupt, _) = records_of(&flipped);
        let mut expected = recs.clone();
        expected.remove(4);
        assert_eq!((found, corrupt), (expected, 1));
        // A torn tail (the last record's bytes never reached the disk): it alone is lost.
        let mut torn = bytes.clone();
        let last = shape.data_at() + recs[..9].iter().map(Vec::len).sum::<usize>();
        torn[last..last + recs[9].len()].fill(0);
        let (found, corrupt, _) = records_of(&torn);
        assert_eq!((found.len(), corrupt), (9, 1));
        // A damaged header is one corrupted entry, and no records.
        let mut header = bytes.clone();
        header[OPEN_AT] ^= 1;
        assert!(matches!(read(&header), Read::Damaged));
        // Marked free once done: nothing to recover.
        drop(file.finish());
        assert!(matches!(
            read(&std::fs::read(&path).unwrap()),
            Read::Nothing
        ));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_reused_file_never_brings_back_what_it_held_before() {
        let d = dir("reuse");
        let shape = Shape::new(64 << 10, 100);
        let path = file_name(&d, 3, 0);
        let idle = Idle::create(path.clone(), shape).unwrap();
        let old: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i; 30]).collect();
        let refs: Vec<&[u8]> = old.iter().map(|r| &r[..]).collect();
        let idle = write(idle, shape, 1, &refs, Some("OLD-1")).finish();
        assert!(
            idle.is_mapped(),
            "the buffer came back: the mappings are kept"
        );
        // The next use writes fewer records and no pack id yet.
        let file = write(idle, shape, 2, &[b"new one", b"new two"], None);
        let bytes = std::fs::read(&path).unwrap();
        let (found, corrupt, pack) = records_of(&bytes);
        assert_eq!(found, vec![b"new one".to_vec(), b"new two".to_vec()]);
        assert_eq!((corrupt, pack), (0, None));
        // Unmapped and used again: the same.
        let mut idle = file.finish();
        idle.unmap();
        let _file = write(idle, shape, 3, &[b"third"], None);
        let (found, corrupt, _) = records_of(&std::fs::read(&path).unwrap());
        assert_eq!((found, corrupt), (vec![b"third".to_vec()], 0));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_full_index_or_a_buffer_grown_past_the_file_is_refused() {
        let d = dir("full");
        let shape = Shape::new(64 << 10, 2);
        let idle = Idle::create(file_name(&d, 3, 0), shape).unwrap();
        let (mut file, mut buf) = idle.begin(shape, 3, 1, 9, b"open").unwrap();
        for _ in 0..2 {
            let from = buf.len();
            buf.extend_from_slice(b"x");
            assert!(file.index(&buf, from));
        }
        let from = buf.len();
        buf.extend_from_slice(b"y");
        assert!(!file.index(&buf, from), "the index holds two");
        let mut grown = buf;
        grown.extend_from_slice(&vec![0; 200 << 10]);
        assert!(!grown.is_file(), "growing past the file moves the buffer");
        let _ = std::fs::remove_dir_all(&d);
    }
}
