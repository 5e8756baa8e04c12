//! The spool's on-disk format: segment and entry headers, entry kinds, the payloads of open
//! and body entries, and the checks a scan applies to each entry (magic, CRC, length, the
//! segment's sequence). Pure functions over bytes; any thread.

use std::sync::Arc;

use crate::producer::routing::Destination;
use crate::wire::compress::Compression;

/// First bytes of every segment file.
pub(super) const SEGMENT_MAGIC: &[u8; 8] = b"LGHSPL01";
/// First bytes of a segment kept for reuse: nothing in it is to be recovered.
pub(super) const FREE_MAGIC: &[u8; 8] = b"LGHSPLFR";
/// Bytes before the first entry: magic, run, shard, sequence.
pub(super) const SEGMENT_HEADER: usize = 32;
/// First word of every entry.
pub(super) const ENTRY_MAGIC: u32 = 0x4C48_5345;
/// Bytes of an entry's header: magic, CRC, length, kind (+3 padding), run, batch, and the
/// sequence number of the segment it was written in (a reused segment's older entries carry
/// another and end the scan). The CRC covers everything after it.
pub(super) const ENTRY_HEADER: usize = 40;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Kind {
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

pub(super) fn align8(n: usize) -> usize {
    (n + 7) & !7
}

pub(super) fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s);
}

pub(super) fn take_str<'a>(input: &mut &'a [u8]) -> Option<&'a [u8]> {
    let (len, rest) = input.split_first_chunk::<4>()?;
    let len = u32::from_le_bytes(*len) as usize;
    let (s, rest) = (rest.get(..len)?, rest.get(len..)?);
    *input = rest;
    Some(s)
}

/// Where a replay's copy of a batch came from: the directory (its name under `spool_dir`,
/// empty for `spool_dir` itself) and the batch's run and number there. Written in the copy's
/// open entry, so that recovery can drop a copy whose original is still there to replay (a
/// replay cut between writing the copy and noting it in the replay ledger).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CopyOrigin {
    pub(crate) dir: Arc<str>,
    pub(crate) run: u64,
    pub(crate) batch: u64,
}

/// An open entry's payload: the destination, the group's tags and, for a replay's copy, its
/// origin (after the rest, so that a reader that does not know it reads the rest unchanged).
pub(super) fn encode_open(
    dest: &Destination,
    tags: &[u8],
    copy_of: Option<&CopyOrigin>,
) -> Vec<u8> {
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
    if let Some(origin) = copy_of {
        out.push(1);
        put_str(&mut out, origin.dir.as_bytes());
        out.extend_from_slice(&origin.run.to_le_bytes());
        out.extend_from_slice(&origin.batch.to_le_bytes());
    }
    out
}

/// What an open entry says: destination, tags, and the origin of a replay's copy.
pub(super) type Opening = (Destination, Vec<u8>, Option<CopyOrigin>);

pub(super) fn decode_open(mut input: &[u8]) -> Option<Opening> {
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
    let copy_of = match input.split_first() {
        Some((1, rest)) => {
            input = rest;
            let dir = text(&mut input)?;
            let (run, rest) = input.split_first_chunk::<8>()?;
            let (batch, _) = rest.split_first_chunk::<8>()?;
            Some(CopyOrigin {
                dir,
                run: u64::from_le_bytes(*run),
                batch: u64::from_le_bytes(*batch),
            })
        }
        _ => None,
    };
    Some((
        Destination {
            project,
            logstore,
            topic,
            source,
            hash_key,
        },
        tags,
        copy_of,
    ))
}

/// Encodes a body entry's payload head: codec, raw size, pack id.
pub(super) fn body_head(codec: Compression, raw_len: usize, pack_id: &str) -> Vec<u8> {
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

/// A batch once compressed, as the spool keeps it in its records' stead: which batch, on which
/// shard, and its body.
#[derive(Clone, Copy)]
pub(crate) struct Compressed<'a> {
    pub(crate) shard: usize,
    pub(crate) batch: u64,
    pub(crate) pack_id: &'a str,
    pub(crate) codec: Compression,
    pub(crate) raw_len: usize,
    pub(crate) body: &'a [u8],
}

/// The pack id a body entry names.
pub(super) fn body_pack_id(payload: &[u8]) -> Option<String> {
    let mut rest = payload.get(5..)?;
    std::str::from_utf8(take_str(&mut rest)?)
        .ok()
        .map(str::to_owned)
}

/// Decompresses a body entry and splits the group into its records (field 1, each with its
/// tag and length, as a batch holds them); the group's tail (topic, source, tags) is dropped,
/// the replay writes its own.
pub(super) fn decode_body(payload: &[u8]) -> Option<Vec<RecordRef>> {
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
    pub(super) map: Arc<dyn AsRef<[u8]> + Send + Sync>,
    pub(super) range: std::ops::Range<usize>,
}

impl std::ops::Deref for RecordRef {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &(*self.map).as_ref()[self.range.clone()]
    }
}

/// An entry's header, checked.
pub(super) struct EntryHead {
    pub(super) kind: Kind,
    pub(super) len: usize,
    pub(super) run: u64,
    pub(super) batch: u64,
}

/// What stands at an offset of a segment.
pub(super) enum EntryAt {
    /// An entry of this use, whole (its checksum matches).
    Valid(EntryHead),
    /// No more entries of this use: a zeroed header, or a whole entry of an earlier use.
    End,
    /// Something else: a torn or corrupted entry.
    Damaged,
}

pub(super) fn check_entry(bytes: &[u8], pos: usize, seq: u64) -> EntryAt {
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
pub(super) fn next_entry(bytes: &[u8], from: usize, seq: u64) -> Option<usize> {
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
