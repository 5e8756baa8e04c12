//! Encoding one log straight into protobuf bytes, validating as it goes.
//!
//! A log is written exactly as the service stores it — `0A len (08 time) (12 len 0A klen key
//! 12 vlen value)* (25 time_ns)` — so a batch is just these bytes back to back plus the group's
//! topic, source and tags appended at seal time; nothing is decoded or copied into maps. Each
//! field is checked here (key rules, UTF-8, value size), and a failure leaves the buffer as it
//! was, so one bad record never damages the others. Runs on the caller's thread, lock-free.

use super::buffer::BatchBuf;
use crate::wire::keys::{check_key, printable_word, shown_key, KeyPolicy, KeyProblem};
use crate::wire::limits::MAX_VALUE_BYTES;

/// A record the producer refuses, naming what is wrong; nothing else is affected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// A field key the service would refuse.
    #[error("key {key:?} {problem}")]
    InvalidKey {
        /// The key (lossily decoded, cut to 160 characters).
        key: String,
        /// Why.
        problem: KeyProblem,
    },
    /// A value that is not UTF-8.
    #[error("value of key {key:?} is not valid UTF-8")]
    ValueNotUtf8 {
        /// The key.
        key: String,
    },
    /// A value above the service's 1 MiB limit.
    #[error("value of key {key:?} is {len} bytes, above the limit of {limit}")]
    ValueTooLarge {
        /// The key.
        key: String,
        /// The value's size.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The whole record does not fit in one batch.
    #[error("record is {size} bytes encoded, above batch_max_bytes = {limit}")]
    RecordTooLarge {
        /// Encoded size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A record with no fields.
    #[error("record has no fields")]
    Empty,
    /// A per-record topic, source, shard key, project or logstore that cannot be used.
    #[error("{what} {value:?} is invalid: {reason}")]
    InvalidOption {
        /// Which option.
        what: &'static str,
        /// The value.
        value: String,
        /// Why.
        reason: std::borrow::Cow<'static, str>,
    },
}

/// Checks every key of a list as the service checks keys (a front's sender of fixed keys
/// checks them once, when it is made): the first one refused, as [`RecordError::InvalidKey`].
pub fn check_keys<S: AsRef<str>>(keys: &[S], policy: KeyPolicy) -> Result<(), RecordError> {
    for key in keys {
        let key = key.as_ref().as_bytes();
        if let Err(problem) = check_key(key, policy) {
            return Err(invalid_key(key, problem));
        }
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn invalid_key(key: &[u8], problem: KeyProblem) -> RecordError {
    RecordError::InvalidKey {
        key: shown_key(key),
        problem,
    }
}

#[cold]
#[inline(never)]
fn value_too_large(key: &[u8], len: usize) -> RecordError {
    RecordError::ValueTooLarge {
        key: shown_key(key),
        len,
        limit: MAX_VALUE_BYTES,
    }
}

/// Bytes reserved for a log's length prefix: a two-byte varint covers logs below 16 KiB, so
/// the usual log is written once and never moved; a shorter one (below 128 bytes) or a longer
/// one is shifted once in `finish`.
const LEN_RESERVE: usize = 2;
// `finish` writes the usual two-byte length in place of the reserve.
const _: () = assert!(LEN_RESERVE == 2);
// A checked key is copied with `copy_short`, which takes at most 128 bytes.
const _: () = assert!(crate::wire::limits::MAX_KEY_BYTES <= 128);

/// Writes one log into a buffer. Create with [`LogEncoder::begin`], add fields, then
/// [`finish`](LogEncoder::finish); dropping it without finishing rolls the buffer back.
pub struct LogEncoder<'b> {
    buf: &'b mut BatchBuf,
    /// The buffer's storage, the log's end so far and the capacity, kept here while the log
    /// is written and given to `buf` once, when the log is closed: the bytes are stored through raw
    /// pointers, which the compiler must assume may change `buf`'s own fields, so a length
    /// kept there is loaded and stored again for every field.
    data: *mut u8,
    len: usize,
    cap: usize,
    start: usize,
    policy: KeyPolicy,
    /// Where the fields begin (the log is empty while `len` is here).
    fields_from: usize,
    time_ns: Option<u32>,
    finished: bool,
}

impl<'b> LogEncoder<'b> {
    /// Starts a log at `time` (unix seconds) at the end of `buf`.
    #[inline]
    pub fn begin(
        buf: &'b mut BatchBuf,
        time: u32,
        time_ns: Option<u32>,
        policy: KeyPolicy,
    ) -> Self {
        let start = buf.len();
        // Tag, length reserve, time tag, time varint (at most five bytes).
        let most = 1 + LEN_RESERVE + 1 + 5;
        buf.reserve(most);
        let data = buf.as_mut_ptr();
        let cap = buf.capacity();
        prefetch_for_writing(data, start, cap);
        // SAFETY: room for `most` bytes was reserved; at most that many are written, and
        // `finish` exposes exactly the bytes written.
        let len = unsafe {
            let base = data.add(start);
            *base = 0x0a;
            std::ptr::write_bytes(base.add(1), 0, LEN_RESERVE);
            *base.add(1 + LEN_RESERVE) = 0x08;
            let at = base.add(2 + LEN_RESERVE);
            let end = if time >= 1 << 28 {
                // Every time since 1978 is a five-byte varint: written without the loop.
                let t = time as u64;
                let low = (t & 0x7f)
                    | 0x80
                    | ((t >> 7 & 0x7f) | 0x80) << 8
                    | ((t >> 14 & 0x7f) | 0x80) << 16
                    | ((t >> 21 & 0x7f) | 0x80) << 24;
                std::ptr::write_unaligned(at.cast::<u32>(), (low as u32).to_le());
                *at.add(4) = (t >> 28) as u8;
                at.add(5)
            } else {
                write_varint_raw(at, time as usize)
            };
            start + end.offset_from(base) as usize
        };
        LogEncoder {
            buf,
            data,
            len,
            cap,
            start,
            policy,
            fields_from: len,
            time_ns,
            finished: false,
        }
    }

    /// Where the next `n` bytes of the log go, with room for them.
    #[inline(always)]
    fn room(&mut self, n: usize) -> *mut u8 {
        if n > self.cap - self.len {
            (self.data, self.cap) = grow(self.buf, self.len, n);
        }
        // SAFETY: `len` is within the storage `data` points to.
        unsafe { self.data.add(self.len) }
    }

    /// Writes a field whose key was checked (so at most `MAX_KEY_BYTES`, 128).
    #[inline(always)]
    fn put(&mut self, key: &[u8], value: &[u8]) {
        let (klen, vlen) = (key.len(), value.len());
        debug_assert!(klen <= crate::wire::limits::MAX_KEY_BYTES);
        let inner = 2 + varint_len(klen) + klen + varint_len(vlen) + vlen;
        let total = 1 + varint_len(inner) + inner;
        let base = self.room(total);
        // Written through a raw pointer: this is the hottest loop of the producer, and bounds
        // checks and per-piece capacity checks were half its cost.
        // SAFETY: `room` made room for `total` bytes at `base`, and exactly `total` bytes are
        // written below (the lengths are those `total` was computed from) before the log's
        // length takes them in. `key` and `value` are shared borrows, so they cannot point
        // into `self.buf`, which is borrowed mutably.
        unsafe {
            let mut p = base;
            *p = 0x12;
            p = write_varint_raw(p.add(1), inner);
            *p = 0x0a;
            p = write_varint_raw(p.add(1), klen);
            // A checked key is at most 128 bytes: copied inline, like a value that short.
            copy_short(key.as_ptr(), p, klen);
            p = p.add(klen);
            *p = 0x12;
            p = write_varint_raw(p.add(1), vlen);
            if vlen <= 128 {
                copy_short(value.as_ptr(), p, vlen);
            } else {
                std::ptr::copy_nonoverlapping(value.as_ptr(), p, vlen);
            }
            debug_assert_eq!(p.add(vlen).offset_from(base) as usize, total);
        }
        self.len += total;
    }

    /// The usual field, written without a call: a key of 4 to 16 bytes checked while it is
    /// copied (two overlapping words), a value copied with overlapping moves, every length a
    /// single byte; or, for a value of 128 bytes up to a 16 KiB field, every length two bytes
    /// ([`put_medium`](Self::put_medium)). Answers `false`, having exposed nothing, for any
    /// other field, or a key that is not plain printable ASCII or starts with `_` (the general
    /// path then checks it and names what is wrong).
    #[inline(always)]
    fn put_short(&mut self, key: &[u8], value: &[u8]) -> bool {
        let (klen, vlen) = (key.len(), value.len());
        if self.policy != KeyPolicy::Service || !(4..=16).contains(&klen) || key[0] == b'_' {
            return false;
        }
        // Both lengths and the field's own length below 128: one byte each. Longer values
        // take the two-byte shape, in a block of its own so this one is not longer for it.
        if klen + vlen > 123 {
            return self.put_medium(key, value);
        }
        let total = 6 + klen + vlen;
        let base = self.room(total);
        // SAFETY: `room` made room for `total` bytes at `base`; every write below lies in
        // `base..base + total` (the key's words end at `4 + klen`, the value's moves at
        // `total`), and the log's length takes them in only once all are written. `key` and
        // `value` are shared borrows, so they cannot alias `self.buf`, which is borrowed
        // mutably.
        unsafe {
            let printable = copy_short_key(key.as_ptr(), base.add(4), klen);
            if !printable {
                return false;
            }
            *base = 0x12;
            *base.add(1) = (total - 2) as u8;
            *base.add(2) = 0x0a;
            *base.add(3) = klen as u8;
            let v = base.add(4 + klen);
            *v = 0x12;
            *v.add(1) = vlen as u8;
            copy_short(value.as_ptr(), v.add(2), vlen);
        }
        self.len += total;
        true
    }

    /// [`put_short`](Self::put_short)'s second shape: a value of 128 bytes or more whose field
    /// stays below 16 KiB, so both the value's and the field's lengths are two-byte varints
    /// (a log's message, a URL, a stack trace). Same key rules and the same answer: `false`,
    /// having exposed nothing, for anything else.
    #[inline(always)]
    fn put_medium(&mut self, key: &[u8], value: &[u8]) -> bool {
        let (klen, vlen) = (key.len(), value.len());
        // Tag, two length bytes, key tag, key length, key, value tag, two length bytes, value.
        let total = 8 + klen + vlen;
        if vlen < 128 || total - 3 >= 1 << 14 {
            return false;
        }
        let base = self.room(total);
        // SAFETY: `room` made room for `total` bytes at `base`; the key's words end at
        // `5 + klen`, the value at `total`, and the log's length takes them in only once all
        // are written. `key` and `value` are shared borrows, so they cannot alias `self.buf`,
        // which is borrowed mutably.
        unsafe {
            let printable = copy_short_key(key.as_ptr(), base.add(5), klen);
            if !printable {
                return false;
            }
            let inner = total - 3;
            *base = 0x12;
            *base.add(1) = (inner as u8) | 0x80;
            *base.add(2) = (inner >> 7) as u8;
            *base.add(3) = 0x0a;
            *base.add(4) = klen as u8;
            let v = base.add(5 + klen);
            *v = 0x12;
            *v.add(1) = (vlen as u8) | 0x80;
            *v.add(2) = (vlen >> 7) as u8;
            std::ptr::copy_nonoverlapping(value.as_ptr(), v.add(3), vlen);
        }
        self.len += total;
        true
    }

    /// Adds a field given as text (UTF-8 guaranteed by the type).
    #[inline(always)]
    pub fn field_str(&mut self, key: &str, value: &str) -> Result<(), RecordError> {
        self.field_bytes_utf8(key.as_bytes(), value)
    }

    /// Adds a field whose key is bytes (checked) and whose value is text.
    // Inlined into the caller's field loop (a call per field cost a tenth of the encoding);
    // the error paths stay out of line.
    #[inline(always)]
    pub fn field_bytes_utf8(&mut self, key: &[u8], value: &str) -> Result<(), RecordError> {
        if self.put_short(key, value.as_bytes()) {
            return Ok(());
        }
        if let Err(problem) = check_key(key, self.policy) {
            return Err(invalid_key(key, problem));
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(value_too_large(key, value.len()));
        }
        self.put(key, value.as_bytes());
        Ok(())
    }

    /// Adds a field given as bytes; both sides must be UTF-8.
    #[inline]
    pub fn field_bytes(&mut self, key: &[u8], value: &[u8]) -> Result<(), RecordError> {
        match std::str::from_utf8(value) {
            Ok(text) => self.field_bytes_utf8(key, text),
            Err(_) => {
                // Report the key first if it is also bad, as the service would.
                check_key(key, self.policy).map_err(|problem| RecordError::InvalidKey {
                    key: shown_key(key),
                    problem,
                })?;
                Err(RecordError::ValueNotUtf8 {
                    key: shown_key(key),
                })
            }
        }
    }

    /// Closes the log: writes its length; returns its encoded size. Refuses a log without
    /// fields or larger than `max_bytes`, rolling the buffer back.
    #[inline]
    pub fn finish(mut self, max_bytes: usize) -> Result<usize, RecordError> {
        self.end(max_bytes)
    }

    /// [`finish`](Self::finish) without moving the encoder, for the producer's own add paths
    /// (the encoder is dropped right after; a refused log is rolled back then). Moving it into
    /// `finish` copied it in wide pieces right after its length was stored for the last field,
    /// a store the copy's loads cannot take forwarded: a stall on every log.
    #[inline]
    pub(crate) fn end(&mut self, max_bytes: usize) -> Result<usize, RecordError> {
        debug_assert!(!self.finished);
        if self.len == self.fields_from {
            return Err(RecordError::Empty);
        }
        if let Some(ns) = self.time_ns {
            let p = self.room(5);
            // SAFETY: `room` made room for the 5 bytes written at `p`.
            unsafe {
                *p = 0x25;
                std::ptr::write_unaligned(p.add(1).cast::<u32>(), ns.to_le());
            }
            self.len += 5;
        }
        // SAFETY: `begin` and the fields wrote every byte up to `len`, within the capacity.
        unsafe { self.buf.set_len(self.len) };
        let body_len = self.len - (self.start + 1 + LEN_RESERVE);
        if (1 << 7..1 << 14).contains(&body_len) {
            // The usual log: its length takes exactly the two reserved bytes.
            // SAFETY: `begin` wrote the two reserved bytes at `start + 1`, below the length.
            unsafe {
                let p = self.data.add(self.start + 1);
                *p = (body_len as u8) | 0x80;
                *p.add(1) = (body_len >> 7) as u8;
            }
        } else {
            write_other_length(self.buf, self.start, body_len);
        }
        let size = self.buf.len() - self.start;
        if size > max_bytes {
            return Err(RecordError::RecordTooLarge {
                size,
                limit: max_bytes,
            });
        }
        self.finished = true;
        Ok(size)
    }
}

/// A log's length that does not take exactly the two reserved bytes (the log starts at
/// `start` in `buf`, which holds all of it): the body is moved to fit it.
#[cold]
#[inline(never)]
fn write_other_length(buf: &mut BatchBuf, start: usize, body_len: usize) {
    let body_start = start + 1 + LEN_RESERVE;
    let mut prefix_buf = [0u8; 10];
    let n = write_varint(&mut prefix_buf, body_len);
    let prefix = &prefix_buf[..n];
    if n <= LEN_RESERVE {
        // Shift the body left over the unused reserve, then write the prefix.
        let gap = LEN_RESERVE - n;
        if gap > 0 {
            buf.copy_within(body_start.., body_start - gap);
            buf.truncate(buf.len() - gap);
        }
        buf[start + 1..start + 1 + n].copy_from_slice(prefix);
    } else {
        let extra = n - LEN_RESERVE;
        let old_len = buf.len();
        buf.resize(old_len + extra, 0);
        buf.copy_within(body_start..old_len, body_start + extra);
        buf[start + 1..start + 1 + n].copy_from_slice(prefix);
    }
}

/// Makes room for `n` more bytes past `len` in `buf`, which may move its storage: the bytes
/// of the log written so far are handed to `buf` first (its rollback is still the log's start).
/// Answers the new storage and capacity. A function of its own, not a method: a call that took
/// the encoder's address would keep the encoder in memory, reloaded for every field.
#[cold]
#[inline(never)]
fn grow(buf: &mut BatchBuf, len: usize, n: usize) -> (*mut u8, usize) {
    // SAFETY: every byte up to `len` was written, within the capacity.
    unsafe { buf.set_len(len) };
    buf.reserve(n);
    (buf.as_mut_ptr(), buf.capacity())
}

impl Drop for LogEncoder<'_> {
    // Inlined: every add drops its encoder, and the call (for one test, nearly always false)
    // cost ten instructions an add.
    #[inline]
    fn drop(&mut self) {
        if !self.finished {
            self.buf.truncate(self.start);
        }
    }
}

/// Asks the CPU to bring into its cache, for writing, the eight lines from 512 bytes past
/// `start` (where the logs after this one will go). Without it every line a log writes is a
/// miss the CPU resolves only when it must (at the shard lock's release, which waits for every
/// store before it): measured at about 7 % of an S1 add's time. Eight lines cover a little
/// more than an S1 log; near the end of the buffer, nothing is asked.
#[inline(always)]
fn prefetch_for_writing(data: *mut u8, start: usize, cap: usize) {
    #[cfg(target_arch = "x86_64")]
    if start.saturating_add(1024) <= cap {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
        // SAFETY: prefetches of addresses inside the buffer's storage (`start + 1024 <= cap`);
        // a prefetch reads and writes nothing.
        unsafe {
            let p = data.add(start + 512).cast::<i8>();
            _mm_prefetch::<_MM_HINT_ET0>(p);
            _mm_prefetch::<_MM_HINT_ET0>(p.add(64));
            _mm_prefetch::<_MM_HINT_ET0>(p.add(128));
            _mm_prefetch::<_MM_HINT_ET0>(p.add(192));
            _mm_prefetch::<_MM_HINT_ET0>(p.add(256));
            _mm_prefetch::<_MM_HINT_ET0>(p.add(320));
            _mm_prefetch::<_MM_HINT_ET0>(p.add(384));
            _mm_prefetch::<_MM_HINT_ET0>(p.add(448));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, start, cap);
}

/// Copies `len` bytes (at most 128) with overlapping unaligned moves instead of a call.
///
/// # Safety
/// `src` must be valid for reading and `dst` for writing `len` bytes, not overlapping.
#[inline(always)]
unsafe fn copy_short(src: *const u8, dst: *mut u8, len: usize) {
    #[inline(always)]
    unsafe fn mv<const N: usize>(src: *const u8, dst: *mut u8, at: usize) {
        // SAFETY: the caller keeps `at + N` within both ranges.
        unsafe {
            let word = std::ptr::read_unaligned(src.add(at).cast::<[u8; N]>());
            std::ptr::write_unaligned(dst.add(at).cast::<[u8; N]>(), word);
        }
    }
    debug_assert!(len <= 128);
    // SAFETY: each move lies within `0..len` (the second of a pair ends exactly at `len`).
    unsafe {
        if len > 64 {
            mv::<32>(src, dst, 0);
            mv::<32>(src, dst, 32);
            mv::<32>(src, dst, len - 64);
            mv::<32>(src, dst, len - 32);
        } else if len >= 32 {
            mv::<32>(src, dst, 0);
            mv::<32>(src, dst, len - 32);
        } else if len >= 16 {
            mv::<16>(src, dst, 0);
            mv::<16>(src, dst, len - 16);
        } else if len >= 8 {
            mv::<8>(src, dst, 0);
            mv::<8>(src, dst, len - 8);
        } else if len >= 4 {
            mv::<4>(src, dst, 0);
            mv::<4>(src, dst, len - 4);
        } else {
            for i in 0..len {
                *dst.add(i) = *src.add(i);
            }
        }
    }
}

/// Copies a key of 4 to 16 bytes and answers whether every byte is printable ASCII.
///
/// # Safety
/// `4 <= klen <= 16`; `src` must be valid for reading and `dst` for writing `klen` bytes, not
/// overlapping.
#[inline(always)]
unsafe fn copy_short_key(src: *const u8, dst: *mut u8, klen: usize) -> bool {
    debug_assert!((4..=16).contains(&klen));
    // SAFETY: the caller's bounds; each move lies within `0..klen`.
    unsafe {
        if klen >= 8 {
            copy_key_8_to_16(src, dst, klen)
        } else {
            let head = std::ptr::read_unaligned(src.cast::<u32>());
            let tail = std::ptr::read_unaligned(src.add(klen - 4).cast::<u32>());
            std::ptr::write_unaligned(dst.cast::<u32>(), head);
            std::ptr::write_unaligned(dst.add(klen - 4).cast::<u32>(), tail);
            printable_word(u64::from(head) | u64::from(tail) << 32)
        }
    }
}

/// Copies a key of 8 to 16 bytes as two overlapping words and answers whether every byte is
/// printable ASCII (0x20..=0x7e). On x86-64 both words go into one SSE2 register (part of the
/// architecture's baseline): the check is then three vector operations for the whole key, where
/// the word-at-a-time check took fourteen instructions, on every field of every add.
///
/// # Safety
/// `8 <= klen <= 16`; `src` must be valid for reading and `dst` for writing `klen` bytes, not
/// overlapping.
#[inline(always)]
unsafe fn copy_key_8_to_16(src: *const u8, dst: *mut u8, klen: usize) -> bool {
    debug_assert!((8..=16).contains(&klen));
    #[cfg(target_arch = "x86_64")]
    // SAFETY: both loads and both stores are eight bytes at 0 and at `klen - 8`, within the
    // key and the destination; SSE2 is always present on x86-64. A key lies at any address:
    // the key and the destination are touched only by unaligned reads and writes
    // (`_mm_loadl_epi64`, `_mm_storel_epi64`, `read_unaligned`, `write_unaligned`), never through
    // `_mm_loadh_pd`/`_mm_storeh_pd`, which dereference an `f64` pointer that must be aligned
    // (given one into the key, they were undefined behaviour; Miri runs these tests).
    unsafe {
        use std::arch::x86_64::{
            _mm_add_epi8, _mm_castpd_si128, _mm_castsi128_pd, _mm_cmpgt_epi8, _mm_loadh_pd,
            _mm_loadl_epi64, _mm_movemask_epi8, _mm_set1_epi8, _mm_storeh_pd, _mm_storel_epi64,
        };
        let head = _mm_loadl_epi64(src.cast());
        // Read unaligned, then put in the high lane from an aligned local: the compiler folds
        // both into one `movhps` from the key (which takes any address), as it does the store
        // below: the same instructions as before, without the undefined behaviour.
        let tail = std::ptr::read_unaligned(src.add(klen - 8).cast::<f64>());
        let both = _mm_castpd_si128(_mm_loadh_pd(_mm_castsi128_pd(head), &tail));
        _mm_storel_epi64(dst.cast(), both);
        let mut high = 0f64;
        _mm_storeh_pd(&mut high, _mm_castsi128_pd(both));
        std::ptr::write_unaligned(dst.add(klen - 8).cast::<f64>(), high);
        // Shifted by 0x60, the printable bytes 0x20..=0x7e are exactly the signed bytes
        // -128..=-34, so one signed comparison takes both bounds.
        let shifted = _mm_add_epi8(both, _mm_set1_epi8(0x60));
        _mm_movemask_epi8(_mm_cmpgt_epi8(_mm_set1_epi8(-33), shifted)) == 0xffff
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: as above, two eight-byte reads and writes at 0 and `klen - 8`.
    unsafe {
        use crate::wire::keys::unprintable_bits;
        let head = std::ptr::read_unaligned(src.cast::<u64>());
        let tail = std::ptr::read_unaligned(src.add(klen - 8).cast::<u64>());
        std::ptr::write_unaligned(dst.cast::<u64>(), head);
        std::ptr::write_unaligned(dst.add(klen - 8).cast::<u64>(), tail);
        unprintable_bits(head) | unprintable_bits(tail) == 0
    }
}

/// Writes `v` as a varint at the start of `out`; returns the bytes written.
#[inline]
fn write_varint(out: &mut [u8], mut v: usize) -> usize {
    let mut i = 0;
    while v >= 0x80 {
        out[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

/// Writes `v` as a varint at `p`; returns the position after it.
///
/// # Safety
/// `p` must be valid for writing `varint_len(v)` bytes.
#[inline]
unsafe fn write_varint_raw(mut p: *mut u8, mut v: usize) -> *mut u8 {
    while v >= 0x80 {
        // SAFETY: the caller guarantees room for every byte of the varint.
        unsafe {
            *p = (v as u8) | 0x80;
            p = p.add(1);
        }
        v >>= 7;
    }
    // SAFETY: as above, for the last byte.
    unsafe {
        *p = v as u8;
        p.add(1)
    }
}

/// Bytes of a varint for `v`.
#[inline]
pub(crate) fn varint_len(v: usize) -> usize {
    // Short lengths first: almost every key and value is below 16 KiB.
    if v < 1 << 7 {
        1
    } else if v < 1 << 14 {
        2
    } else {
        let bits = usize::BITS - v.leading_zeros();
        bits.div_ceil(7) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::proto::{Log, LogContent, LogGroup};
    use prost::Message;

    #[test]
    fn a_senders_keys_are_checked_once_and_the_first_refused_is_named_shortened() {
        assert!(check_keys(&["msg", "http.method"], KeyPolicy::Service).is_ok());
        let long = format!("bad key {}", "x".repeat(300));
        match check_keys(&["ok", "__topic__", &long], KeyPolicy::Service) {
            Err(RecordError::InvalidKey { key, .. }) => assert_eq!(key, "__topic__"),
            other => panic!("{other:?}"),
        }
        match check_keys(&[long.as_str()], KeyPolicy::Strict) {
            Err(RecordError::InvalidKey { key, .. }) => {
                assert_eq!(key.chars().count(), crate::wire::keys::SHOWN_KEY_CHARS);
                assert!(long.starts_with(&key));
            }
            other => panic!("{other:?}"),
        }
    }

    fn encode(fields: &[(&str, &str)], ns: Option<u32>) -> Vec<u8> {
        let mut buf = BatchBuf::new();
        buf.extend_from_slice(b"prefix");
        let mut enc = LogEncoder::begin(&mut buf, 1_700_000_000, ns, KeyPolicy::Service);
        for (k, v) in fields {
            enc.field_str(k, v).unwrap();
        }
        let n = enc.finish(usize::MAX).unwrap();
        assert_eq!(n, buf.len() - 6);
        buf[6..].to_vec()
    }

    #[test]
    fn logs_encode_exactly_as_prost_does() {
        for (fields, ns) in [
            (vec![("a", "1")], None),
            (vec![("k", "v"), ("Search/Analytics", "x")], Some(5)),
            (vec![("big", &*"x".repeat(300_000))], Some(999_999_999)),
            (
                vec![
                    ("huge", &*"y".repeat(1_048_576)),
                    ("huge2", &*"z".repeat(1_048_576)),
                    ("h3", &*"w".repeat(100)),
                ],
                None,
            ),
        ] {
            let ours = encode(&fields, ns);
            let expected = LogGroup {
                logs: vec![Log {
                    time: 1_700_000_000,
                    contents: fields
                        .iter()
                        .map(|(k, v)| LogContent {
                            key: (*k).into(),
                            value: (*v).into(),
                        })
                        .collect(),
                    time_ns: ns,
                }],
                ..Default::default()
            }
            .encode_to_vec();
            assert_eq!(ours, expected, "{} fields", fields.len());
        }
    }

    fn prost_log(fields: &[(String, String)], ns: Option<u32>) -> Vec<u8> {
        LogGroup {
            logs: vec![Log {
                time: 1_700_000_000,
                contents: fields
                    .iter()
                    .map(|(k, v)| LogContent {
                        key: k.clone(),
                        value: v.clone(),
                    })
                    .collect(),
                time_ns: ns,
            }],
            ..Default::default()
        }
        .encode_to_vec()
    }

    #[test]
    fn times_of_every_varint_length_encode_as_prost_does() {
        for time in [
            0u32,
            5,
            127,
            128,
            (1 << 28) - 1,
            1 << 28,
            1_700_000_000,
            u32::MAX,
        ] {
            let mut buf = BatchBuf::new();
            let mut enc = LogEncoder::begin(&mut buf, time, None, KeyPolicy::Service);
            enc.field_str("k", "v").unwrap();
            enc.finish(usize::MAX).unwrap();
            let expected = LogGroup {
                logs: vec![Log {
                    time,
                    contents: vec![LogContent {
                        key: "k".into(),
                        value: "v".into(),
                    }],
                    time_ns: None,
                }],
                ..Default::default()
            }
            .encode_to_vec();
            assert_eq!(buf.to_vec(), expected, "time {time}");
        }
    }

    #[test]
    fn every_key_and_value_length_around_the_short_path_encodes_as_prost_does() {
        // Keys of 1 to 20 bytes and values of 0 to 130: inside and just outside the short
        // path's bounds (keys 4..=16, key + value <= 123), every overlapping-move split.
        let text: String = (0..200u32)
            .map(|i| char::from(b'!' + (i * 7 % 90) as u8))
            .collect();
        for klen in 1..=20 {
            for vlen in 0..=130 {
                let key = format!("k{}", &text[..klen - 1]).replace('_', "-");
                let fields = vec![
                    (key.clone(), text[3..3 + vlen].to_owned()),
                    ("second".to_owned(), text[..vlen / 2].to_owned()),
                ];
                let refs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (&**k, &**v)).collect();
                assert_eq!(
                    encode(&refs, Some(7)),
                    prost_log(&fields, Some(7)),
                    "key {klen} value {vlen}"
                );
            }
        }
    }

    #[test]
    fn values_around_the_two_byte_shape_encode_as_prost_does() {
        // The two-byte shape takes keys of 4..=16 bytes with values of 128 bytes or more
        // while the field stays below 16 KiB (4 + key + value < 16 384): every bound from
        // both sides, with keys inside and outside its range.
        let text: String = (0..20_000u32)
            .map(|i| char::from(b'!' + (i * 7 % 90) as u8))
            .collect();
        for klen in [1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 20] {
            let key = format!("k{}", &text[..klen - 1]).replace('_', "-");
            let edge = 16_380 - klen; // the first value whose field needs three length bytes
            for vlen in [
                100,
                119,
                123,
                124,
                127,
                128,
                129,
                145,
                255,
                256,
                257,
                4_096,
                edge - 2,
                edge - 1,
                edge,
                edge + 1,
                16_383,
                16_384,
                19_000,
            ] {
                let fields = vec![
                    (key.clone(), text[5..5 + vlen].to_owned()),
                    ("after".to_owned(), "x".to_owned()),
                ];
                let refs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (&**k, &**v)).collect();
                assert_eq!(
                    encode(&refs, Some(7)),
                    prost_log(&fields, Some(7)),
                    "key {klen} value {vlen}"
                );
            }
        }
    }

    #[test]
    fn a_bad_byte_anywhere_in_a_short_key_is_refused_by_name_and_leaves_nothing() {
        // With a short value (one-byte lengths) and a 200-byte one (two-byte lengths).
        let long = "v".repeat(200);
        for value in ["value", &long] {
            for klen in 1..=18 {
                for at in 0..klen {
                    for bad in [0x01u8, 0x7f, 0xff] {
                        let mut key = vec![b'k'; klen];
                        key[at] = bad;
                        let mut buf = BatchBuf::new();
                        let mut enc =
                            LogEncoder::begin(&mut buf, 1_700_000_000, None, KeyPolicy::Service);
                        enc.field_str("good", "v").unwrap();
                        let err = enc.field_bytes_utf8(&key, value).unwrap_err();
                        assert!(
                            matches!(err, RecordError::InvalidKey { .. }),
                            "{klen} {at} {bad} {}: {err}",
                            value.len()
                        );
                        // The refused field left nothing: the log holds only the good one.
                        enc.finish(usize::MAX).unwrap();
                        let fields = vec![("good".to_owned(), "v".to_owned())];
                        assert_eq!(buf.to_vec(), prost_log(&fields, None));
                    }
                }
            }
        }
        // A reserved key on the short path's lengths is still refused by its name.
        let mut buf = BatchBuf::new();
        let mut enc = LogEncoder::begin(&mut buf, 1_700_000_000, None, KeyPolicy::Service);
        let err = enc.field_str("__topic__", "v").unwrap_err();
        assert!(err.to_string().contains("__topic__"), "{err}");
    }

    #[test]
    fn a_key_of_8_to_16_bytes_is_copied_and_judged_as_a_byte_loop_would() {
        // Every byte value at every position of every length the vector check takes: its
        // bounds (0x1f, 0x20, 0x7e, 0x7f, 0x80) are where a signed comparison could be off.
        for klen in 8..=16 {
            for at in 0..klen {
                for byte in 0..=255u8 {
                    let mut key: Vec<u8> = (b'a'..).take(klen).collect();
                    key[at] = byte;
                    let mut out = [0u8; 16];
                    // SAFETY: `key` and `out` both hold at least `klen` bytes.
                    let printable =
                        unsafe { copy_key_8_to_16(key.as_ptr(), out.as_mut_ptr(), klen) };
                    let naive = key.iter().all(|c| (0x20..0x7f).contains(c));
                    assert_eq!(printable, naive, "{klen} bytes, {byte:#x} at {at}");
                    assert_eq!(&out[..klen], &key[..], "{klen} bytes copied");
                }
            }
        }
    }

    #[test]
    fn lengths_at_every_varint_boundary_encode_as_prost_does() {
        // Bodies of 127/128 and 16 383/16 384 bytes switch the length prefix from one to two
        // and from two to three bytes.
        for len in (100..140).chain(16_340..16_400) {
            let value = "v".repeat(len);
            let ours = encode(&[("key", &value)], None);
            let expected = LogGroup {
                logs: vec![Log {
                    time: 1_700_000_000,
                    contents: vec![LogContent {
                        key: "key".into(),
                        value: value.clone(),
                    }],
                    time_ns: None,
                }],
                ..Default::default()
            }
            .encode_to_vec();
            assert!(ours == expected, "value of {len} bytes");
        }
    }

    #[test]
    fn a_bad_field_rolls_the_buffer_back() {
        let mut buf = BatchBuf::new();
        buf.extend_from_slice(b"keep");
        {
            let mut enc = LogEncoder::begin(&mut buf, 1, None, KeyPolicy::Service);
            enc.field_str("ok", "1").unwrap();
            assert!(matches!(
                enc.field_str("", "v"),
                Err(RecordError::InvalidKey {
                    problem: KeyProblem::Empty,
                    ..
                })
            ));
            assert!(matches!(
                enc.field_bytes(b"k", b"\xff"),
                Err(RecordError::ValueNotUtf8 { .. })
            ));
            let big = "v".repeat(MAX_VALUE_BYTES + 1);
            assert!(matches!(
                enc.field_str("k", &big),
                Err(RecordError::ValueTooLarge { .. })
            ));
        }
        assert_eq!(&buf[..], b"keep");
        // A field that moves the buffer's storage, then a bad one.
        {
            let mut enc = LogEncoder::begin(&mut buf, 1, None, KeyPolicy::Service);
            enc.field_str("first", "1").unwrap();
            enc.field_str("large", &"v".repeat(100_000)).unwrap();
            assert!(enc.field_str("", "v").is_err());
        }
        assert_eq!(&buf[..], b"keep");
        let enc = LogEncoder::begin(&mut buf, 1, None, KeyPolicy::Service);
        assert_eq!(enc.finish(100).unwrap_err(), RecordError::Empty);
        assert_eq!(&buf[..], b"keep");
        let mut enc = LogEncoder::begin(&mut buf, 1, None, KeyPolicy::Service);
        enc.field_str("k", &"v".repeat(200)).unwrap();
        assert!(matches!(
            enc.finish(100),
            Err(RecordError::RecordTooLarge { limit: 100, .. })
        ));
        assert_eq!(&buf[..], b"keep");
    }

    #[test]
    fn varint_lengths() {
        for (v, n) in [
            (0, 1),
            (127, 1),
            (128, 2),
            (16_383, 2),
            (16_384, 3),
            (2_097_151, 3),
            (2_097_152, 4),
        ] {
            assert_eq!(varint_len(v), n, "{v}");
        }
    }
}
