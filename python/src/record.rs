//! Reading a Python record into the engine's encoder.
//!
//! A dict whose keys are `str` and whose values are `str`, `bool`, `None`, or exactly `int` (within
//! 64 bits) or `float` (the usual record, and what the logging integrations send) is read
//! straight from CPython, with no reference counting and no Python code run, and so is written
//! in place into its batch under the engine's shard lock ([`BindingAdds::try_send_in_place`]).
//! Anything else (bytes, big or subclassed numbers, pairs, values to convert) goes through the
//! engine's scratch path with no lock held, because reading such a value may run Python code
//! (an iterator, an `int` subclass's `__str__`, the conversion hook), which may release the GIL
//! or log through the same producer.

use std::borrow::Cow;

use loghose::producer::bindings::{BindingAdds, ScratchError};
use loghose::producer::{LogEncoder, Producer, RecordSet, SendOptions, Track};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::errors::{producer_error, FillError};

/// How a record is added.
#[derive(Clone, Copy)]
pub(crate) enum Route<'a> {
    /// No option and no tracking (`send(contents)`, `send(contents, time=None)`): the
    /// engine's plain add, which reads no options.
    Plain,
    /// With these options and this tracking.
    With(&'a SendOptions<'a>, Track),
}

/// Queues one record: a dict of `str` is written straight into its batch; anything else (or a
/// dict holding other values) goes through the engine's scratch path.
pub(crate) fn send_record(
    py: Python<'_>,
    producer: &Producer,
    route: Route<'_>,
    contents: &Bound<'_, PyAny>,
    convert: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    if let Ok(dict) = contents.cast::<PyDict>() {
        let fill = |enc: &mut LogEncoder<'_>| put_dict_direct(enc, dict);
        let in_place = match route {
            Route::Plain => producer
                .try_add_in_place(fill)
                .map(|added| added.is_queued()),
            Route::With(opts, track) => producer
                .try_send_in_place(opts, track, fill)
                .map(|added| added.is_queued()),
        };
        match in_place {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => return Err(producer_error(py, e)),
        }
    }
    let plain = SendOptions::default();
    let (opts, track) = match route {
        Route::Plain => (&plain, Track::None),
        Route::With(opts, track) => (opts, track),
    };
    producer
        .send_with_scratch(opts, track, |enc| put_contents(enc, contents, convert))
        .map(drop)
        .map_err(|e| match e {
            ScratchError::Producer(e) => producer_error(py, e),
            ScratchError::Fill(e) => e.into_py(py),
        })
}

/// The text of a `str`: borrowed when it is valid UTF-8; with each lone surrogate (which UTF-8
/// cannot hold) replaced by U+FFFD otherwise, as the Node front stores them.
fn str_text<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, str>> {
    if let Ok(text) = s.to_str() {
        return Ok(Cow::Borrowed(text));
    }
    // SAFETY: `s` is a live str; PyUnicode_AsUCS4Copy returns a NUL-terminated copy of its
    // code points (or null with an exception set), which is freed here.
    unsafe {
        let length = pyo3::ffi::PyUnicode_GetLength(s.as_ptr());
        let points = pyo3::ffi::PyUnicode_AsUCS4Copy(s.as_ptr());
        if points.is_null() {
            return Err(PyErr::fetch(s.py()));
        }
        let text = std::slice::from_raw_parts(points, length.max(0) as usize)
            .iter()
            .map(|&c| char::from_u32(c).unwrap_or('\u{FFFD}'))
            .collect::<String>();
        pyo3::ffi::PyMem_Free(points.cast());
        Ok(Cow::Owned(text))
    }
}

/// Writes one Python value as a field, or explains why it cannot be one. A value that is not
/// str, bytes, bool, int or float goes to `convert(key, value)` (the Python front's
/// conversion: JSON for containers, ISO 8601 for dates, the `default=` hook...), which returns
/// its text or raises naming the key; without `convert` it is a `TypeError`.
fn put_field(
    enc: &mut LogEncoder<'_>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    convert: Option<&Bound<'_, PyAny>>,
) -> Result<(), FillError> {
    let key_text;
    let key_bytes: &[u8] = if let Ok(k) = key.cast::<PyString>() {
        key_text = str_text(k)?;
        key_text.as_bytes()
    } else if let Ok(k) = key.cast::<PyBytes>() {
        k.as_bytes()
    } else {
        let key_text = key.repr().map(|r| r.to_string()).unwrap_or_default();
        return Err(PyTypeError::new_err(format!(
            "field key {key_text} must be str or bytes, not {}",
            type_name(key)
        ))
        .into());
    };
    if let Ok(v) = value.cast::<PyString>() {
        return Ok(enc.field_bytes_utf8(key_bytes, &str_text(v)?)?);
    }
    if let Ok(v) = value.cast::<PyBytes>() {
        return Ok(enc.field_bytes(key_bytes, v.as_bytes())?);
    }
    let converted = if value.is_instance_of::<PyBool>() {
        Some(if value.is_truthy().unwrap_or(false) {
            "true".to_owned()
        } else {
            "false".to_owned()
        })
    } else if value.is_instance_of::<PyInt>() {
        value.str().ok().map(|s| s.to_string())
    } else if value.is_instance_of::<PyFloat>() {
        value.repr().ok().map(|s| s.to_string())
    } else {
        None
    };
    if let (None, Some(convert)) = (&converted, convert) {
        let text = convert.call1((key, value))?;
        if let Ok(v) = text.cast::<PyString>() {
            return Ok(enc.field_bytes_utf8(key_bytes, &str_text(v)?)?);
        }
        if let Ok(v) = text.cast::<PyBytes>() {
            return Ok(enc.field_bytes(key_bytes, v.as_bytes())?);
        }
        return Err(PyTypeError::new_err(format!(
            "the conversion of field {:?} gave {}, not str",
            String::from_utf8_lossy(key_bytes),
            type_name(&text)
        ))
        .into());
    }
    match converted {
        Some(text) => Ok(enc.field_bytes_utf8(key_bytes, &text)?),
        None => Err(PyTypeError::new_err(format!(
            "value of field {:?} must be str, bytes, int, float or bool, not {}",
            String::from_utf8_lossy(key_bytes),
            type_name(value)
        ))
        .into()),
    }
}

pub(crate) fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// The text of a `str` (or subclass) as UTF-8, borrowed from the object (CPython caches it);
/// `None` for anything else. Runs no Python code.
///
/// # Safety
/// `obj` must be a valid object pointer; the returned slice lives as long as the object.
pub(crate) unsafe fn str_utf8<'a>(obj: *mut pyo3::ffi::PyObject) -> Option<Result<&'a str, ()>> {
    // SAFETY: `obj` is valid (caller); both calls only read it.
    unsafe {
        if pyo3::ffi::PyUnicode_Check(obj) == 0 {
            return None;
        }
        if let Some(text) = compact_ascii(obj) {
            return Some(Ok(text));
        }
        let mut size: pyo3::ffi::Py_ssize_t = 0;
        let data = pyo3::ffi::PyUnicode_AsUTF8AndSize(obj, &mut size);
        if data.is_null() {
            // A lone surrogate: not encodable; the Python error is left for the caller.
            return Some(Err(()));
        }
        let bytes = std::slice::from_raw_parts(data.cast::<u8>(), size as usize);
        // CPython's UTF-8 form of a str is valid UTF-8 by construction.
        Some(Ok(std::str::from_utf8_unchecked(bytes)))
    }
}

/// The text of a compact ASCII `str` (nearly every key and most values), read from the object
/// itself: its characters follow the header and are their own UTF-8. `None` where the layout is
/// not read (the stable ABI, other interpreters, the free-threaded build, big-endian machines):
/// every string then goes through `PyUnicode_AsUTF8AndSize`.
///
/// # Safety
/// `obj` must be a valid `str`; the returned slice lives as long as the object.
#[inline(always)]
unsafe fn compact_ascii<'a>(obj: *mut pyo3::ffi::PyObject) -> Option<&'a str> {
    #[cfg(all(
        not(any(Py_LIMITED_API, PyPy, GraalPy, Py_GIL_DISABLED)),
        target_endian = "little"
    ))]
    // SAFETY: as the caller promises.
    return unsafe { str_layout::compact_ascii(obj) };
    #[allow(unreachable_code)]
    {
        let _ = obj;
        None
    }
}

#[cfg(all(
    not(any(Py_LIMITED_API, PyPy, GraalPy, Py_GIL_DISABLED)),
    target_endian = "little"
))]
mod str_layout {
    /// CPython's `PyASCIIObject` in the default (GIL) build, 3.10 to 3.15
    /// (`Include/cpython/unicodeobject.h`): the object header, the length in code points, the
    /// hash, a 32-bit word of bit fields, and until 3.12 the legacy `wstr` pointer. Its size
    /// is where a compact ASCII string's characters start (`tests-py/test_values.py` sends
    /// strings of every kind and length through this path on each version).
    #[repr(C)]
    struct AsciiHead {
        ob_base: pyo3::ffi::PyObject,
        length: pyo3::ffi::Py_ssize_t,
        hash: pyo3::ffi::Py_hash_t,
        /// `interned:2, kind:3, compact:1, ascii:1, …`: the same first seven bits on every
        /// version (C compilers fill a little-endian bit field from its lowest bit).
        state: u32,
        #[cfg(not(Py_3_12))]
        wstr: *mut libc::wchar_t,
    }

    const COMPACT: u32 = 1 << 5;
    const ASCII: u32 = 1 << 6;

    /// See [`super::compact_ascii`].
    ///
    /// # Safety
    /// `obj` must be a valid `str`; the returned slice lives as long as the object.
    #[inline(always)]
    pub(super) unsafe fn compact_ascii<'a>(obj: *mut pyo3::ffi::PyObject) -> Option<&'a str> {
        // SAFETY: `obj` is a str (caller), so it starts with a `PyASCIIObject` header
        // ([`AsciiHead`]); a compact ASCII str stores its `length` one-byte characters right
        // after that header.
        unsafe {
            let head = &*obj.cast::<AsciiHead>();
            if head.state & (COMPACT | ASCII) != COMPACT | ASCII {
                return None;
            }
            let data = obj.cast::<AsciiHead>().add(1).cast::<u8>();
            let bytes = std::slice::from_raw_parts(data, head.length as usize);
            Some(std::str::from_utf8_unchecked(bytes))
        }
    }
}

/// Writes the fields of a dict. Keys and values that are both `str` are read straight from
/// CPython; anything else takes [`put_field`]. A dict resized meanwhile (by a conversion's
/// Python code) is an error, as in Python's own iteration.
fn put_dict(
    enc: &mut LogEncoder<'_>,
    dict: &Bound<'_, PyDict>,
    convert: Option<&Bound<'_, PyAny>>,
) -> Result<(), FillError> {
    let py = dict.py();
    let ptr = dict.as_ptr();
    // SAFETY: `ptr` is a live dict (we hold `dict`); PyDict_Next hands out borrowed pointers,
    // used only until the next step or turned into owned references before any Python code
    // can run.
    unsafe {
        let size = pyo3::ffi::PyDict_Size(ptr);
        let mut pos: pyo3::ffi::Py_ssize_t = 0;
        let mut key: *mut pyo3::ffi::PyObject = std::ptr::null_mut();
        let mut value: *mut pyo3::ffi::PyObject = std::ptr::null_mut();
        while pyo3::ffi::PyDict_Next(ptr, &mut pos, &mut key, &mut value) != 0 {
            if let (Some(Ok(k)), Some(Ok(v))) = (str_utf8(key), str_utf8(value)) {
                enc.field_bytes_utf8(k.as_bytes(), v)?;
                continue;
            }
            if !pyo3::ffi::PyErr_Occurred().is_null() {
                pyo3::ffi::PyErr_Clear();
            }
            let k = Bound::from_borrowed_ptr(py, key);
            let v = Bound::from_borrowed_ptr(py, value);
            put_field(enc, &k, &v, convert)?;
            if pyo3::ffi::PyDict_Size(ptr) != size {
                return Err(PyRuntimeError::new_err("dictionary changed size during send").into());
            }
        }
    }
    Ok(())
}

/// Writes a dict whose keys and values are all `str`, read straight from CPython; declines
/// (`Ok(false)`) at the first other key or value. Runs no Python code, so it may run inside
/// the engine's in-place add.
fn put_dict_direct(
    enc: &mut LogEncoder<'_>,
    dict: &Bound<'_, PyDict>,
) -> Result<bool, loghose::producer::RecordError> {
    let ptr = dict.as_ptr();
    // SAFETY: `ptr` is a live dict (we hold `dict`) and no Python code runs during the walk,
    // so the borrowed pointers it hands out stay valid while they are used.
    unsafe {
        // One loop per way of walking, so the choice is made once, not per field.
        match dict_items(ptr) {
            DictItems::Table(items) => put_items_direct(enc, items),
            DictItems::Api(items) => put_items_direct(enc, items),
        }
    }
}

/// The fields of [`put_dict_direct`], from one walk.
///
/// # Safety
/// As [`put_item_direct`], for every pair `items` yields.
#[inline(always)]
unsafe fn put_items_direct(
    enc: &mut LogEncoder<'_>,
    items: impl Iterator<Item = (*mut pyo3::ffi::PyObject, *mut pyo3::ffi::PyObject)>,
) -> Result<bool, loghose::producer::RecordError> {
    for (key, value) in items {
        // SAFETY: as the caller promises.
        if !unsafe { put_item_direct(enc, key, value) }? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One field of [`put_dict_direct`]; inlined into the dict walk's loop (a call per field was
/// about a tenth of a `send`).
///
/// # Safety
/// `key` and `value` must be valid object pointers and the GIL held.
#[inline(always)]
pub(crate) unsafe fn put_item_direct(
    enc: &mut LogEncoder<'_>,
    key: *mut pyo3::ffi::PyObject,
    value: *mut pyo3::ffi::PyObject,
) -> Result<bool, loghose::producer::RecordError> {
    // SAFETY: as the caller promises.
    unsafe {
        let Some(Ok(k)) = str_utf8(key) else {
            pyo3::ffi::PyErr_Clear();
            return Ok(false);
        };
        put_value_direct(enc, k, value)
    }
}

/// A field named `key` whose value is read directly ([`put_dict_direct`]'s kinds); `Ok(false)`
/// for a value of another kind (nothing written).
///
/// # Safety
/// `value` must be a valid object pointer and the GIL held.
#[inline(always)]
pub(crate) unsafe fn put_value_direct(
    enc: &mut LogEncoder<'_>,
    key: &str,
    value: *mut pyo3::ffi::PyObject,
) -> Result<bool, loghose::producer::RecordError> {
    // SAFETY: as the caller promises.
    unsafe {
        match str_utf8(value) {
            Some(Ok(v)) => enc.field_bytes_utf8(key.as_bytes(), v)?,
            Some(Err(())) => {
                pyo3::ffi::PyErr_Clear();
                return Ok(false);
            }
            None => {
                if !put_number_direct(enc, key, value)? {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

/// The (key, value) pairs of a dict, in the dict's order, as borrowed pointers.
///
/// An exact dict with a combined table (every dict built by a literal, `dict(...)` or `**`) is
/// walked in place: its entries array, skipping deleted slots, is what `PyDict_Next` walks,
/// for about a tenth of the instructions (`PyDict_Next` was a fifth of a whole `send`). The
/// layout is CPython 3.11 to 3.15's (`Include/internal/pycore_dict.h`, unchanged across them
/// for the default build); anything else (a subclass, a split table such as an instance's
/// `__dict__`, another version, the free-threaded build) goes through `PyDict_Next`.
///
/// # Safety
/// `dict` must be a live dict and the GIL held while the pairs are used, and no Python code
/// may run until the walk ends (it could change the dict).
#[inline(always)]
pub(crate) unsafe fn dict_items(dict: *mut pyo3::ffi::PyObject) -> DictItems {
    // SAFETY: as the caller promises; an exact dict is a PyDictObject, and a combined table
    // (no separate values) holds its entries right after its index table.
    #[cfg(all(Py_3_11, not(any(Py_LIMITED_API, PyPy, GraalPy, Py_GIL_DISABLED))))]
    unsafe {
        if pyo3::ffi::PyDict_CheckExact(dict) != 0 {
            let object = &*dict.cast::<pyo3::ffi::PyDictObject>();
            let keys = object.ma_keys.cast::<DictKeysHeader>();
            // DICT_KEYS_GENERAL (0) entries are {hash, key, value}; DICT_KEYS_UNICODE (1)
            // entries are {key, value}. A combined table is never DICT_KEYS_SPLIT (2).
            let layout = match (*keys).dk_kind {
                0 => Some((3, 1)),
                1 => Some((2, 0)),
                _ => None,
            };
            if let (true, Some((stride, key_at))) = (object.ma_values.is_null(), layout) {
                let entries = keys
                    .cast::<u8>()
                    .add(std::mem::size_of::<DictKeysHeader>())
                    .add(1usize << (*keys).dk_log2_index_bytes)
                    .cast::<*mut pyo3::ffi::PyObject>();
                // `end` is the key slot one entry past the last (never read).
                return DictItems::Table(TableItems {
                    next: entries.add(key_at),
                    end: entries.wrapping_add((*keys).dk_nentries as usize * stride + key_at),
                    stride,
                });
            }
        }
    }
    DictItems::Api(ApiItems { dict, pos: 0 })
}

/// See [`dict_items`].
pub(crate) enum DictItems {
    /// Entries read in place.
    #[cfg_attr(
        not(all(Py_3_11, not(any(Py_LIMITED_API, PyPy, GraalPy, Py_GIL_DISABLED)))),
        allow(dead_code)
    )]
    Table(TableItems),
    /// Through `PyDict_Next`.
    Api(ApiItems),
}

/// A combined table's entries: `next` points at the next entry's key, its value follows it.
pub(crate) struct TableItems {
    next: *mut *mut pyo3::ffi::PyObject,
    end: *mut *mut pyo3::ffi::PyObject,
    stride: usize,
}

impl Iterator for TableItems {
    type Item = (*mut pyo3::ffi::PyObject, *mut pyo3::ffi::PyObject);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        while self.next < self.end {
            let entry = self.next;
            self.next = entry.wrapping_add(self.stride);
            // SAFETY: `entry` is an entry of the table ([`dict_items`]'s caller keeps the dict
            // alive and unchanged); a deleted entry keeps its slot with no value.
            let (key, value) = unsafe { (*entry, *entry.add(1)) };
            if !value.is_null() {
                return Some((key, value));
            }
        }
        None
    }
}

/// A dict's pairs through `PyDict_Next`.
pub(crate) struct ApiItems {
    dict: *mut pyo3::ffi::PyObject,
    pos: pyo3::ffi::Py_ssize_t,
}

impl Iterator for ApiItems {
    type Item = (*mut pyo3::ffi::PyObject, *mut pyo3::ffi::PyObject);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let mut key = std::ptr::null_mut();
        let mut value = std::ptr::null_mut();
        // SAFETY: [`dict_items`]'s caller keeps the dict alive and holds the GIL.
        let more =
            unsafe { pyo3::ffi::PyDict_Next(self.dict, &mut self.pos, &mut key, &mut value) };
        (more != 0).then_some((key, value))
    }
}

/// The header of CPython 3.11–3.15's `PyDictKeysObject` (the default build), before its
/// index table and entries.
#[cfg(all(Py_3_11, not(any(Py_LIMITED_API, PyPy, GraalPy, Py_GIL_DISABLED))))]
#[repr(C)]
struct DictKeysHeader {
    dk_refcnt: pyo3::ffi::Py_ssize_t,
    dk_log2_size: u8,
    dk_log2_index_bytes: u8,
    dk_kind: u8,
    dk_version: u32,
    dk_usable: pyo3::ffi::Py_ssize_t,
    dk_nentries: pyo3::ffi::Py_ssize_t,
}

/// Writes a `bool`, `None`, an exact `int` within 64 bits or an exact `float` as the text the
/// other paths give it (`true`/`false`, `null`, `str(int)`, `repr(float)`); declines
/// (`Ok(false)`) anything else. Runs
/// no Python code: `repr(float)` is CPython's own `PyOS_double_to_string`.
///
/// # Safety
/// `value` must be a valid object pointer and the GIL held.
unsafe fn put_number_direct(
    enc: &mut LogEncoder<'_>,
    key: &str,
    value: *mut pyo3::ffi::PyObject,
) -> Result<bool, loghose::producer::RecordError> {
    // SAFETY: `value` is valid (caller); these calls only read it, and the float's text is
    // freed with the allocator that made it.
    unsafe {
        if value == pyo3::ffi::Py_True() {
            enc.field_bytes_utf8(key.as_bytes(), "true")?;
            return Ok(true);
        }
        if value == pyo3::ffi::Py_False() {
            enc.field_bytes_utf8(key.as_bytes(), "false")?;
            return Ok(true);
        }
        if value == pyo3::ffi::Py_None() {
            // As the conversion writes it (`loghose._values`).
            enc.field_bytes_utf8(key.as_bytes(), "null")?;
            return Ok(true);
        }
        if pyo3::ffi::PyLong_CheckExact(value) != 0 {
            let mut overflow = 0;
            let n = pyo3::ffi::PyLong_AsLongLongAndOverflow(value, &mut overflow);
            if overflow != 0 || (n == -1 && !pyo3::ffi::PyErr_Occurred().is_null()) {
                pyo3::ffi::PyErr_Clear();
                return Ok(false);
            }
            let mut digits = itoa::Buffer::new();
            enc.field_bytes_utf8(key.as_bytes(), digits.format(n))?;
            return Ok(true);
        }
        if pyo3::ffi::PyFloat_CheckExact(value) != 0 {
            let x = pyo3::ffi::PyFloat_AS_DOUBLE(value);
            if x == 0.0 || (1e-4..1e16).contains(&x.abs()) {
                // Here `repr` writes the shortest digits that read back as `x`, in plain
                // notation with at least one decimal: what ryu writes for this range, several
                // times faster than CPython's formatter (tests-py/test_values.py compares them).
                let mut digits = ryu::Buffer::new();
                enc.field_bytes_utf8(key.as_bytes(), digits.format_finite(x))?;
                return Ok(true);
            }
            let text = pyo3::ffi::PyOS_double_to_string(
                x,
                b'r' as std::os::raw::c_char,
                0,
                pyo3::ffi::Py_DTSF_ADD_DOT_0,
                std::ptr::null_mut(),
            );
            if text.is_null() {
                pyo3::ffi::PyErr_Clear();
                return Ok(false);
            }
            // ASCII digits, sign, point, exponent, "inf" or "nan".
            let bytes = std::ffi::CStr::from_ptr(text).to_bytes();
            let written =
                enc.field_bytes_utf8(key.as_bytes(), std::str::from_utf8_unchecked(bytes));
            pyo3::ffi::PyMem_Free(text.cast());
            written?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// Writes a dict, or any iterable of `(key, value)` pairs (tuples or two-item lists).
pub(crate) fn put_contents(
    enc: &mut LogEncoder<'_>,
    contents: &Bound<'_, PyAny>,
    convert: Option<&Bound<'_, PyAny>>,
) -> Result<(), FillError> {
    if let Ok(dict) = contents.cast::<PyDict>() {
        return put_dict(enc, dict, convert);
    }
    let Ok(items) = contents.try_iter() else {
        return Err(PyTypeError::new_err(format!(
            "contents must be a dict or a sequence of (key, value) pairs, not {}",
            type_name(contents)
        ))
        .into());
    };
    for item in items {
        let item = item?;
        let (key, value) = if let Some(t) = item.cast::<PyTuple>().ok().filter(|t| t.len() == 2) {
            (t.get_item(0)?, t.get_item(1)?)
        } else if let Some(l) = item.cast::<PyList>().ok().filter(|l| l.len() == 2) {
            (l.get_item(0)?, l.get_item(1)?)
        } else {
            return Err(PyTypeError::new_err(format!(
                "each field must be a (key, value) pair, not {}",
                type_name(&item)
            ))
            .into());
        };
        put_field(enc, &key, &value, convert)?;
    }
    Ok(())
}

/// Queues every record of `records` or none (see [`Producer::send_all`]): all are read and
/// encoded first; the first that cannot be raises, naming its index, and nothing is queued.
pub(crate) fn send_many(
    py: Python<'_>,
    producer: &Producer,
    records: &Bound<'_, PyAny>,
    convert: Option<&Bound<'_, PyAny>>,
) -> PyResult<usize> {
    producer.ensure_owned().map_err(|e| producer_error(py, e))?;
    let mut set: RecordSet<'_> = producer.record_set();
    for (index, record) in records.try_iter()?.enumerate() {
        let record = record?;
        set.push(&SendOptions::default(), |enc| {
            put_contents(enc, &record, convert)
        })
        .map_err(|e| at_index(py, index, e.into_py(py)))?;
    }
    producer
        .send_all(&set, &SendOptions::default())
        .map_err(|e| producer_error(py, e))
}

/// `error` raised again as the same class with "record {index}: " before its message, the
/// original as its cause.
fn at_index(py: Python<'_>, index: usize, error: PyErr) -> PyErr {
    let message = format!("record {index}: {}", error.value(py));
    match error.get_type(py).call1((message,)) {
        Ok(instance) => {
            let again = PyErr::from_value(instance);
            again.set_cause(py, Some(error));
            again
        }
        Err(_) => error,
    }
}

/// Splits a Python time (int or float seconds) into seconds and nanoseconds.
pub(crate) fn split_time(
    py: Python<'_>,
    time: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Option<u32>, Option<u32>)> {
    let Some(t) = time else {
        return Ok((None, None));
    };
    if t.is_instance_of::<PyInt>() {
        let secs: u32 = t
            .extract()
            .map_err(|_| PyTypeError::new_err("time must be unix seconds from 0 to 4294967295"))?;
        return Ok((Some(secs), None));
    }
    let f: f64 = t.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "time must be int or float seconds, not {}",
            type_name(t)
        ))
    })?;
    let (secs, nanos) = loghose::producer::bindings::split_unix_seconds(f)
        .map_err(|e| producer_error(py, e.into()))?;
    Ok((Some(secs), Some(nanos)))
}
