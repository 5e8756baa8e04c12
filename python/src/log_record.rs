//! A `logging.LogRecord` written natively: the fields `LoghoseHandler.fields` builds in Python
//! (`level`, `logger`, `message`, `module`, `function`, `line`, `thread`, `thread_name`,
//! `process`, then every `extra` attribute in order), read straight from the record's
//! `__dict__` and written in place into the open batch, with no dict built in between and the
//! record's time as its log time.
//!
//! It declines (`Ok(false)`, nothing queued; the handler then builds the fields in Python, so
//! what is stored is the same either way) at whatever it does not read directly: an exception
//! or a stack to render, a value that is not str, int, float, bool or None (containers and
//! objects go through the front's conversion), a lone surrogate, a record without the standard
//! attributes, or before the handler told it the layout ([`set_log_record_layout`]). No Python
//! code runs while the batch is held (dict lookups by `str` keys and set membership of `str`
//! run none). Runs on the logging thread, with the GIL held.

use loghose::producer::bindings::BindingAdds;
use loghose::producer::{LogEncoder, Producer, RecordError, SendOptions, Track};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyFrozenSet, PyString, PyType};

use crate::errors::producer_error;
use crate::record::{
    dict_items, put_item_direct, put_value_direct, split_time, str_utf8, DictItems,
};

/// The attributes every `LogRecord` has (`extra` cannot use them), how many
/// `LogRecord.__init__` sets (the extras come after them in the record's `__dict__`), and the
/// `LogRecord` class itself (whose `getMessage` the native path does for its exact instances).
static LAYOUT: PyOnceLock<(Py<PyFrozenSet>, usize, Py<PyType>)> = PyOnceLock::new();

/// Tells the native path what a `LogRecord` looks like on this Python (the logging module's
/// `_STANDARD` names, the count of attributes a record is made with, and `logging.LogRecord`).
#[pyfunction]
pub(crate) fn set_log_record_layout(
    standard: Bound<'_, PyFrozenSet>,
    attributes: usize,
    record_type: Bound<'_, PyType>,
) {
    let py = standard.py();
    let _ = LAYOUT.set(py, (standard.unbind(), attributes, record_type.unbind()));
}

/// The record's `getMessage()`: for a `logging.LogRecord` itself whose `msg` is a `str`, read
/// here as `LogRecord.getMessage` makes it (`msg`, or `msg % args` when `args` is true);
/// otherwise by calling it (a subclass may make its messages its own way). Runs Python code
/// (`%` formatting calls the arguments' `__str__`), so it is called before the batch is held.
fn record_message<'py>(
    record: &Bound<'py, PyAny>,
    dict: &Bound<'py, PyDict>,
    record_type: &Bound<'py, PyType>,
) -> PyResult<Bound<'py, PyString>> {
    let py = record.py();
    if record.get_type().is(record_type) {
        if let Some(msg) = dict.get_item(pyo3::intern!(py, "msg"))? {
            if msg.is_exact_instance_of::<PyString>() {
                let args = dict.get_item(pyo3::intern!(py, "args"))?;
                let formatted = match args {
                    Some(args) if args.is_truthy()? => msg.rem(args)?,
                    _ => msg,
                };
                return Ok(formatted.cast_into::<PyString>()?);
            }
        }
    }
    Ok(record
        .call_method0(pyo3::intern!(py, "getMessage"))?
        .cast_into::<PyString>()?)
}

/// The fields written before the extras (the loguru sink writes the same, [`events`](crate::events)).
pub(crate) const NAMED: [&str; 9] = [
    "level",
    "logger",
    "message",
    "module",
    "function",
    "line",
    "thread",
    "thread_name",
    "process",
];

/// The record's attributes the fields come from, and those that must be `None` for the native
/// path (what the Python path renders: an exception, a stack): slots of `names` in
/// [`send_log_record`].
const LEVEL: usize = 0;
const LOGGER: usize = 1;
const MODULE: usize = 2;
const FUNCTION: usize = 3;
const LINE: usize = 4;
const THREAD: usize = 5;
const THREAD_NAME: usize = 6;
const PROCESS: usize = 7;
const MUST_BE_NONE: std::ops::Range<usize> = 8..11;

/// Queues `record` with `message` (its `getMessage()`; made here when not given), or declines
/// (see the module text).
pub(crate) fn send_log_record<'py>(
    py: Python<'py>,
    producer: &Producer,
    record: &Bound<'py, PyAny>,
    message: Option<&Bound<'py, PyString>>,
) -> PyResult<bool> {
    let Some((standard_names, attributes, record_type)) = LAYOUT.get(py) else {
        return Ok(false);
    };
    let Ok(dict) = record.getattr(pyo3::intern!(py, "__dict__")) else {
        return Ok(false);
    };
    let Ok(dict) = dict.cast_into::<PyDict>() else {
        return Ok(false);
    };
    let made;
    let message = match message {
        Some(message) => message,
        None => {
            made = record_message(record, &dict, record_type.bind(py))?;
            &made
        }
    };
    let created = dict.get_item(pyo3::intern!(py, "created")).ok().flatten();
    let (time, time_ns) = split_time(py, created.as_ref())?;
    let opts = SendOptions {
        time,
        time_ns,
        ..SendOptions::default()
    };
    // Interned once per process: the record's own attribute names are interned too (they are
    // identifiers), so each is found by comparing pointers while the dict is walked once.
    let names = [
        pyo3::intern!(py, "levelname"),
        pyo3::intern!(py, "name"),
        pyo3::intern!(py, "module"),
        pyo3::intern!(py, "funcName"),
        pyo3::intern!(py, "lineno"),
        pyo3::intern!(py, "thread"),
        pyo3::intern!(py, "threadName"),
        pyo3::intern!(py, "process"),
        pyo3::intern!(py, "exc_info"),
        pyo3::intern!(py, "exc_text"),
        pyo3::intern!(py, "stack_info"),
    ]
    .map(|n| n.as_ptr());
    let standard_names = standard_names.bind(py);
    let fill = |enc: &mut LogEncoder<'_>| {
        // SAFETY: `dict`, `message` and the names are live, the GIL is held, and nothing here
        // runs Python code, so the dict and the objects it holds do not change.
        unsafe { fill_record(enc, &names, message, &dict, standard_names, *attributes) }
    };
    producer
        .try_send_in_place(&opts, Track::None, fill)
        .map(|added| added.is_queued())
        .map_err(|e| producer_error(py, e))
}

/// One walk of the record's `__dict__`: its first `attributes` entries (what every record
/// has) give the standard fields, written in `LoghoseHandler.fields`' order before the first
/// extra; the extras follow in order.
///
/// # Safety
/// As in [`send_log_record`]'s call: live objects, the GIL held, no Python code run.
unsafe fn fill_record(
    enc: &mut LogEncoder<'_>,
    names: &[*mut pyo3::ffi::PyObject; 11],
    message: &Bound<'_, PyString>,
    dict: &Bound<'_, PyDict>,
    standard_names: &Bound<'_, PyFrozenSet>,
    attributes: usize,
) -> Result<bool, RecordError> {
    // SAFETY: as the caller promises.
    unsafe {
        match dict_items(dict.as_ptr()) {
            DictItems::Table(items) => {
                walk_record(enc, items, names, message, standard_names, attributes)
            }
            DictItems::Api(items) => {
                walk_record(enc, items, names, message, standard_names, attributes)
            }
        }
    }
}

/// See [`fill_record`].
///
/// # Safety
/// As [`fill_record`]; `items` walks the record's `__dict__`.
#[inline(always)]
unsafe fn walk_record(
    enc: &mut LogEncoder<'_>,
    items: impl Iterator<Item = (*mut pyo3::ffi::PyObject, *mut pyo3::ffi::PyObject)>,
    names: &[*mut pyo3::ffi::PyObject; 11],
    message: &Bound<'_, PyString>,
    standard_names: &Bound<'_, PyFrozenSet>,
    attributes: usize,
) -> Result<bool, RecordError> {
    let mut found = [std::ptr::null_mut::<pyo3::ffi::PyObject>(); 11];
    let mut standard_written = false;
    // SAFETY: as the caller promises; PySet_Contains of a str runs no Python code.
    unsafe {
        for (index, (key, value)) in items.enumerate() {
            if index < attributes {
                if let Some(slot) = names.iter().position(|&n| n == key) {
                    found[slot] = value;
                }
                continue;
            }
            let Some(Ok(k)) = str_utf8(key) else {
                pyo3::ffi::PyErr_Clear();
                return Ok(false);
            };
            if k.starts_with('_') {
                continue;
            }
            // A standard name past the first attributes (`message` and `asctime`, set when
            // another handler formatted the record first) is not an extra.
            match pyo3::ffi::PySet_Contains(standard_names.as_ptr(), key) {
                1 => continue,
                0 => {}
                _ => {
                    pyo3::ffi::PyErr_Clear();
                    return Ok(false);
                }
            }
            // An extra named as a field replaces it in the Python path's dict.
            if NAMED.contains(&k) {
                return Ok(false);
            }
            if !standard_written {
                if !put_standard(enc, &found, message)? {
                    return Ok(false);
                }
                standard_written = true;
            }
            if !put_item_direct(enc, key, value)? {
                return Ok(false);
            }
        }
        if !standard_written && !put_standard(enc, &found, message)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `level` … `process` from the attributes found; `Ok(false)` when one is missing or an
/// exception or stack is to be rendered.
///
/// # Safety
/// Every non-null pointer of `found` is a live object; the GIL is held.
unsafe fn put_standard(
    enc: &mut LogEncoder<'_>,
    found: &[*mut pyo3::ffi::PyObject; 11],
    message: &Bound<'_, PyString>,
) -> Result<bool, RecordError> {
    if found.iter().any(|v| v.is_null()) {
        return Ok(false);
    }
    // SAFETY: as the caller promises.
    unsafe {
        let none = pyo3::ffi::Py_None();
        if found[MUST_BE_NONE].iter().any(|&v| v != none) {
            return Ok(false);
        }
        let named = [
            ("level", found[LEVEL]),
            ("logger", found[LOGGER]),
            ("message", message.as_ptr()),
            ("module", found[MODULE]),
            ("function", found[FUNCTION]),
            ("line", found[LINE]),
        ];
        for (key, value) in named {
            if !put_value_direct(enc, key, value)? {
                return Ok(false);
            }
        }
        if found[THREAD] != none
            && !(put_value_direct(enc, "thread", found[THREAD])?
                && put_value_direct(enc, "thread_name", found[THREAD_NAME])?)
        {
            return Ok(false);
        }
        if found[PROCESS] != none && !put_value_direct(enc, "process", found[PROCESS])? {
            return Ok(false);
        }
    }
    Ok(true)
}
