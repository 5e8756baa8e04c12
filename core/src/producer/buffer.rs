//! Batch buffers: growable byte buffers, each in an anonymous memory mapping of its own.
//!
//! # Why mappings
//!
//! Why not `Vec<u8>`: a batch buffer is megabytes, filled once and freed after compression.
//! glibc serves the first such allocations with `mmap`, but once one is freed it raises its
//! mmap threshold above them and serves the next ones from its heaps, where freed buffers stay
//! resident until a trim and leave holes; in a burst, RSS climbs by several buffers' worth
//! above what is in use. A mapping of our own is returned to the system the moment it is
//! dropped, and its pages cost memory only once written (a batch mapped at its 4 MiB limit that
//! seals at 1.8 MB never makes the rest resident).
//!
//! # Small buffers
//!
//! Small buffers stay on the heap: a producer may hold 100 000 open batches of a log or two each
//! (one per device, scenario S4), and a mapping each would cost a system call per batch and run
//! into the kernel's limit on mappings per process (65 530 by default). A buffer moves to a
//! mapping of its own when it grows past [`MAP_THRESHOLD`].
//!
//! # Batch files
//!
//! With a spool, the default destination's batch buffer is instead a shared mapping of a batch
//! file ([`BatchBuf::in_file`]): written the same way, it never enters the budget's pool and
//! goes back to its file.
//!
//! # Guarantees
//!
//! Guarantees: the bytes `..len()` are what was written; growth beyond the capacity allocates
//! a larger region and copies (rare for the default destination's batches, which are mapped at
//! their full limit up front). A region that cannot be had is an allocation failure and aborts
//! the process, as `Vec` does. Owned by one thread at a time (whoever holds the batch); no
//! locking.

use std::alloc::Layout;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use memmap2::MmapMut;

/// Capacity from which a buffer lives in a mapping of its own rather than on the heap.
pub(crate) const MAP_THRESHOLD: usize = 256 << 10;

/// Where a buffer's bytes live.
enum Storage {
    Empty,
    Heap(Vec<u8>),
    Map(MmapMut),
    /// A shared mapping of a spool batch file's data region (see `batch_file`): written like
    /// the others, never kept in the budget's pool (it goes back to its file).
    File(MmapMut),
}

/// A growable byte buffer, on the heap while small and in its own anonymous mapping once
/// large; see the module notes.
pub struct BatchBuf {
    /// The storage's start (dangling while empty) and size, kept beside it so the per-field
    /// operations cost what `Vec`'s do.
    ptr: NonNull<u8>,
    cap: usize,
    len: usize,
    /// Owns the memory.
    storage: Storage,
}

// SAFETY: a BatchBuf owns its storage exclusively, as a Vec<u8> owns its allocation; the raw
// pointer only caches the storage's address.
unsafe impl Send for BatchBuf {}
// SAFETY: shared references only read.
unsafe impl Sync for BatchBuf {}

impl Default for BatchBuf {
    fn default() -> Self {
        BatchBuf::new()
    }
}

impl BatchBuf {
    /// An empty buffer that maps nothing yet.
    pub const fn new() -> Self {
        BatchBuf {
            ptr: NonNull::dangling(),
            cap: 0,
            len: 0,
            storage: Storage::Empty,
        }
    }

    /// An empty buffer with room for `capacity` bytes: mapped from `MAP_THRESHOLD` up
    /// (address space only: pages become resident when written), else on the heap.
    pub fn with_capacity(capacity: usize) -> Self {
        let mut buf = BatchBuf::new();
        if capacity > 0 {
            buf.reallocate(capacity);
        }
        buf
    }

    /// Whether the bytes live in a mapping of their own.
    pub fn is_mapped(&self) -> bool {
        matches!(self.storage, Storage::Map(_) | Storage::File(_))
    }

    /// Whether its bytes are a batch file's (see `BatchBuf::in_file`).
    #[inline]
    pub fn is_file(&self) -> bool {
        matches!(self.storage, Storage::File(_))
    }

    /// An empty buffer whose bytes are `map`, a shared mapping of a file: what is written lands
    /// in the file's pages. Growth past the mapping moves the buffer to memory of its own (the
    /// file keeps what it held).
    pub(crate) fn in_file(mut map: MmapMut) -> Self {
        BatchBuf {
            ptr: NonNull::new(map.as_mut_ptr()).unwrap_or(NonNull::dangling()),
            cap: map.len(),
            len: 0,
            storage: Storage::File(map),
        }
    }

    /// Bytes written.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes that fit without growing.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Forgets the contents; the mapping (and its resident pages) stays for reuse.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Keeps the first `len` bytes (no effect if there are fewer).
    #[inline]
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Makes room for `additional` more bytes.
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        if additional > self.cap - self.len {
            let needed = self.len.saturating_add(additional);
            self.grow(needed);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, needed: usize) {
        let doubled = self.capacity().saturating_mul(2);
        self.reallocate(needed.max(doubled).max(256));
    }

    /// Moves the contents to new storage of `capacity` bytes.
    fn reallocate(&mut self, capacity: usize) {
        let mut storage = if capacity >= MAP_THRESHOLD {
            let Ok(map) = MmapMut::map_anon(capacity) else {
                let layout = Layout::from_size_align(capacity, 1).unwrap_or(Layout::new::<u8>());
                std::alloc::handle_alloc_error(layout);
            };
            Storage::Map(map)
        } else {
            Storage::Heap(vec![0; capacity])
        };
        let (ptr, cap) = match &mut storage {
            Storage::Map(map) | Storage::File(map) => (map.as_mut_ptr(), map.len()),
            Storage::Heap(vec) => (vec.as_mut_ptr(), vec.len()),
            Storage::Empty => (NonNull::dangling().as_ptr(), 0),
        };
        // SAFETY: the new storage holds `cap >= len` bytes and is distinct from the old one.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), ptr, self.len) };
        self.ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        self.cap = cap;
        self.storage = storage;
    }

    /// The start of the buffer, for writing up to `capacity()` bytes before [`set_len`].
    ///
    /// [`set_len`]: BatchBuf::set_len
    #[inline]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Sets the number of bytes written.
    ///
    /// # Safety
    /// `len` must be at most `capacity()`, and every byte below it written (mapped memory reads
    /// as zeros, so this is about meaning, not soundness of the bytes themselves).
    #[inline]
    pub(crate) unsafe fn set_len(&mut self, len: usize) {
        debug_assert!(len <= self.cap);
        self.len = len;
    }

    /// Appends `bytes`.
    #[inline]
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        // SAFETY: `reserve` made room for `bytes` past `len`; a caller's slice cannot overlap
        // this buffer's spare capacity (nothing can borrow it).
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.ptr.as_ptr().add(self.len),
                bytes.len(),
            );
        }
        self.len += bytes.len();
    }

    /// Grows to `len` bytes filled with `value`, or truncates to `len`.
    pub fn resize(&mut self, len: usize, value: u8) {
        if len <= self.len {
            self.len = len;
            return;
        }
        self.reserve(len - self.len);
        // SAFETY: `reserve` made room up to `len`.
        unsafe {
            std::ptr::write_bytes(self.ptr.as_ptr().add(self.len), value, len - self.len);
        }
        self.len = len;
    }
}

impl Deref for BatchBuf {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `cap >= len` bytes (or dangling with `len == 0`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for BatchBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes the borrow exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl std::fmt::Debug for BatchBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchBuf")
            .field("len", &self.len)
            .field("capacity", &self.capacity())
            .field("mapped", &self.is_mapped())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_keeps_its_bytes_and_truncates() {
        let mut buf = BatchBuf::new();
        assert!(buf.is_empty() && buf.capacity() == 0 && buf[..] == b""[..]);
        let mut expected = Vec::new();
        for i in 0..20_000u32 {
            let piece = i.to_le_bytes();
            buf.extend_from_slice(&piece);
            expected.extend_from_slice(&piece);
        }
        assert_eq!(&buf[..], &expected[..]);
        assert!(buf.capacity() >= buf.len());
        assert!(!buf.is_mapped(), "80 000 bytes stay on the heap");
        buf.resize(buf.len() + 3, 7);
        expected.resize(expected.len() + 3, 7);
        assert_eq!(&buf[..], &expected[..]);
        buf.truncate(10);
        buf[0] = 9;
        assert_eq!(buf.len(), 10);
        assert_eq!(buf[0], 9);
        let capacity = buf.capacity();
        buf.clear();
        assert!(buf.is_empty() && buf.capacity() == capacity);
    }

    #[test]
    fn small_buffers_stay_on_the_heap_and_move_to_a_mapping_whole() {
        let mut buf = BatchBuf::with_capacity(100);
        assert!(!buf.is_mapped());
        buf.extend_from_slice(b"head");
        buf.resize(MAP_THRESHOLD - 1, 1);
        assert!(!buf.is_mapped());
        buf.extend_from_slice(b"tail");
        assert!(buf.is_mapped());
        assert_eq!(&buf[..4], b"head");
        assert!(buf[4..MAP_THRESHOLD - 1].iter().all(|&b| b == 1));
        assert_eq!(&buf[MAP_THRESHOLD - 1..], b"tail");
        assert!(BatchBuf::with_capacity(MAP_THRESHOLD).is_mapped());
    }

    #[test]
    fn raw_writes_up_to_the_capacity_are_kept() {
        let mut buf = BatchBuf::with_capacity(100);
        buf.extend_from_slice(b"ab");
        buf.reserve(5);
        // SAFETY: five bytes were reserved past the end.
        unsafe {
            let end = buf.as_mut_ptr().add(buf.len());
            std::ptr::copy_nonoverlapping(b"cdefg".as_ptr(), end, 5);
            buf.set_len(buf.len() + 5);
        }
        assert_eq!(&buf[..], b"abcdefg");
    }
}
