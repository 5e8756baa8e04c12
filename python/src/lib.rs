//! Native module `loghose._native`: the thin pyo3 layer between Python and the engine.
//!
//! It converts Python values to engine calls and engine results to Python objects; all
//! producer logic lives in the engine. Contracts:
//!
//! - `send` runs on the caller's thread holding the GIL only while it reads the record (the
//!   record is encoded straight from the dict or pairs; nothing is copied into Rust maps). A
//!   dict of `str` keys and values is written straight into its batch (reading it runs no
//!   Python code); anything else goes through the engine's scratch path, with no engine lock
//!   held, because reading a value may run Python code (an iterator, an `int` subclass's
//!   `__str__`), which may release the GIL or log through the same producer.
//! - Every wait (`flush`, `close`) releases the GIL and waits in 100 ms slices, checking for
//!   signals between them, so Ctrl-C interrupts it.
//! - Report callbacks run on the producer's reporter thread, which attaches to Python once per
//!   batch of reports; an exception raised by the callback is caught and logged there, never
//!   crosses into Rust, and the producer lives on.
//! - A producer used in a forked child raises `LoghoseError` (its I/O threads live in the
//!   parent); a new producer made in the child works.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loghose::emulator::{Emulator, EmulatorConfig};
use loghose::producer::{
    DeliveryReport, LogEncoder, Producer, ProducerConfig, ProducerError, RecordError,
    ReportCallback, SendOptions, Track,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Raises the exception class `name` of `loghose.errors` with `message`.
fn raise(py: Python<'_>, name: &str, message: String) -> PyErr {
    let made = py
        .import("loghose.errors")
        .and_then(|m| m.getattr(name))
        .and_then(|cls| cls.call1((message.clone(),)));
    match made {
        Ok(instance) => PyErr::from_value(instance),
        Err(e) => e,
    }
}

fn producer_error(py: Python<'_>, e: ProducerError) -> PyErr {
    raise(py, e.class_name(), e.to_string())
}

/// The final report of one batch.
#[pyclass(frozen, get_all, module = "loghose._native", name = "DeliveryReport")]
struct PyDeliveryReport {
    batch_id: u64,
    project: String,
    logstore: String,
    delivered: bool,
    error_code: Option<String>,
    error_message: Option<String>,
    http_status: Option<u16>,
    attempts: u32,
    request_id: Option<String>,
    records: u32,
    raw_bytes: usize,
    compressed_bytes: usize,
    latency_ms: f64,
    pack_id: String,
    tickets: Vec<u64>,
}

#[pymethods]
impl PyDeliveryReport {
    fn __repr__(&self) -> String {
        match &self.error_code {
            None => format!(
                "DeliveryReport(delivered, records={}, attempts={}, request_id={:?})",
                self.records, self.attempts, self.request_id
            ),
            Some(code) => format!(
                "DeliveryReport(failed {code}, records={}, attempts={})",
                self.records, self.attempts
            ),
        }
    }
}

impl From<&DeliveryReport> for PyDeliveryReport {
    fn from(r: &DeliveryReport) -> Self {
        let (delivered, error_code, error_message, http_status) = r.outcome_parts();
        let (error_code, error_message) = (
            error_code.map(str::to_owned),
            error_message.map(str::to_owned),
        );
        PyDeliveryReport {
            batch_id: r.batch_id,
            project: r.project.to_string(),
            logstore: r.logstore.to_string(),
            delivered,
            error_code,
            error_message,
            http_status,
            attempts: r.attempts,
            request_id: r.request_id.clone(),
            records: r.records,
            raw_bytes: r.raw_bytes,
            compressed_bytes: r.compressed_bytes,
            latency_ms: r.latency.as_secs_f64() * 1000.0,
            pack_id: r.pack_id.clone(),
            tickets: r.tickets.clone(),
        }
    }
}

/// Writes one Python value as a field, or explains why it cannot be one.
fn put_field(
    enc: &mut LogEncoder<'_>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    type_error: &mut Option<PyErr>,
) -> Result<(), RecordError> {
    let key_text;
    let key_bytes: &[u8] = if let Ok(k) = key.cast::<PyString>() {
        match k.to_str() {
            Ok(s) => s.as_bytes(),
            Err(e) => {
                *type_error = Some(e);
                return Err(RecordError::Empty);
            }
        }
    } else if let Ok(k) = key.cast::<PyBytes>() {
        k.as_bytes()
    } else {
        key_text = key.repr().map(|r| r.to_string()).unwrap_or_default();
        *type_error = Some(PyTypeError::new_err(format!(
            "field key {key_text} must be str or bytes, not {}",
            type_name(key)
        )));
        return Err(RecordError::Empty);
    };
    if let Ok(v) = value.cast::<PyString>() {
        return match v.to_str() {
            Ok(s) => enc.field_bytes_utf8(key_bytes, s),
            Err(e) => {
                *type_error = Some(e);
                Err(RecordError::Empty)
            }
        };
    }
    if let Ok(v) = value.cast::<PyBytes>() {
        return enc.field_bytes(key_bytes, v.as_bytes());
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
    match converted {
        Some(text) => enc.field_bytes_utf8(key_bytes, &text),
        None => {
            *type_error = Some(PyTypeError::new_err(format!(
                "value of field {:?} must be str, bytes, int, float or bool, not {}",
                String::from_utf8_lossy(key_bytes),
                type_name(value)
            )));
            Err(RecordError::Empty)
        }
    }
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
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
unsafe fn str_utf8<'a>(obj: *mut pyo3::ffi::PyObject) -> Option<Result<&'a str, ()>> {
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
/// itself: its characters follow the header and are their own UTF-8.
///
/// # Safety
/// `obj` must be a valid `str`; the returned slice lives as long as the object.
#[cfg(not(any(Py_LIMITED_API, PyPy, GraalPy, Py_3_14)))]
#[inline(always)]
unsafe fn compact_ascii<'a>(obj: *mut pyo3::ffi::PyObject) -> Option<&'a str> {
    // SAFETY: `obj` is a str (caller), so it starts with a PyASCIIObject header; a compact
    // ASCII str stores its `length` one-byte characters right after that header.
    unsafe {
        if pyo3::ffi::PyUnicode_IS_COMPACT_ASCII(obj) == 0 {
            return None;
        }
        let data = obj.cast::<pyo3::ffi::PyASCIIObject>().add(1).cast::<u8>();
        let bytes = std::slice::from_raw_parts(data, pyo3::ffi::PyUnicode_GET_LENGTH(obj) as usize);
        Some(std::str::from_utf8_unchecked(bytes))
    }
}

/// Where CPython's `str` layout is not available, every string goes through
/// `PyUnicode_AsUTF8AndSize`.
#[cfg(any(Py_LIMITED_API, PyPy, GraalPy, Py_3_14))]
#[inline(always)]
unsafe fn compact_ascii<'a>(_obj: *mut pyo3::ffi::PyObject) -> Option<&'a str> {
    None
}

/// Writes the fields of a dict. Keys and values that are both `str` (the usual record) are
/// read straight from CPython, without reference counting or Python code; anything else takes
/// [`put_field`]. A dict resized meanwhile (by a conversion's Python code) is an error, as in
/// Python's own iteration.
fn put_dict(
    enc: &mut LogEncoder<'_>,
    dict: &Bound<'_, PyDict>,
    type_error: &mut Option<PyErr>,
) -> Result<(), RecordError> {
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
            put_field(enc, &k, &v, type_error)?;
            if pyo3::ffi::PyDict_Size(ptr) != size {
                *type_error = Some(pyo3::exceptions::PyRuntimeError::new_err(
                    "dictionary changed size during send",
                ));
                return Err(RecordError::Empty);
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
) -> Result<bool, RecordError> {
    let ptr = dict.as_ptr();
    // SAFETY: `ptr` is a live dict (we hold `dict`) and no Python code runs during the loop,
    // so the borrowed pointers from PyDict_Next stay valid while they are used.
    unsafe {
        let mut pos: pyo3::ffi::Py_ssize_t = 0;
        let mut key: *mut pyo3::ffi::PyObject = std::ptr::null_mut();
        let mut value: *mut pyo3::ffi::PyObject = std::ptr::null_mut();
        while pyo3::ffi::PyDict_Next(ptr, &mut pos, &mut key, &mut value) != 0 {
            let Some(Ok(k)) = str_utf8(key) else {
                pyo3::ffi::PyErr_Clear();
                return Ok(false);
            };
            let Some(Ok(v)) = str_utf8(value) else {
                pyo3::ffi::PyErr_Clear();
                return Ok(false);
            };
            enc.field_bytes_utf8(k.as_bytes(), v)?;
        }
    }
    Ok(true)
}

/// Queues one record: a dict of `str` is written straight into its batch; anything else (or a
/// dict holding other values) goes through the engine's scratch path, where converting a value
/// may run Python code.
fn send_record(
    py: Python<'_>,
    producer: &Producer,
    opts: &SendOptions<'_>,
    track: Track,
    contents: &Bound<'_, PyAny>,
) -> PyResult<()> {
    if let Ok(dict) = contents.cast::<PyDict>() {
        match producer.try_send_in_place(opts, track, |enc| put_dict_direct(enc, dict)) {
            Ok(Some(_)) => return Ok(()),
            Ok(None) => {}
            Err(e) => return Err(producer_error(py, e)),
        }
    }
    let mut type_error = None;
    let result = producer.send_with_scratch(opts, track, |enc| {
        put_contents(enc, contents, &mut type_error)
    });
    match (result, type_error) {
        (_, Some(e)) => Err(e),
        (Ok(_), None) => Ok(()),
        (Err(e), None) => Err(producer_error(py, e)),
    }
}

fn put_contents(
    enc: &mut LogEncoder<'_>,
    contents: &Bound<'_, PyAny>,
    type_error: &mut Option<PyErr>,
) -> Result<(), RecordError> {
    if let Ok(dict) = contents.cast::<PyDict>() {
        return put_dict(enc, dict, type_error);
    }
    let items = match contents.try_iter() {
        Ok(it) => it,
        Err(_) => {
            *type_error = Some(PyTypeError::new_err(format!(
                "contents must be a dict or a sequence of (key, value) pairs, not {}",
                type_name(contents)
            )));
            return Err(RecordError::Empty);
        }
    };
    for item in items {
        let item = match item {
            Ok(i) => i,
            Err(e) => {
                *type_error = Some(e);
                return Err(RecordError::Empty);
            }
        };
        let pair = item
            .cast::<PyTuple>()
            .ok()
            .filter(|t| t.len() == 2)
            .map(|t| (t.get_item(0), t.get_item(1)));
        let pair = match pair {
            Some((Ok(k), Ok(v))) => (k, v),
            _ => match item.cast::<PyList>().ok().filter(|l| l.len() == 2) {
                Some(l) => match (l.get_item(0), l.get_item(1)) {
                    (Ok(k), Ok(v)) => (k, v),
                    _ => unreachable_pair(type_error)?,
                },
                None => {
                    *type_error = Some(PyTypeError::new_err(format!(
                        "each field must be a (key, value) pair, not {}",
                        type_name(&item)
                    )));
                    return Err(RecordError::Empty);
                }
            },
        };
        put_field(enc, &pair.0, &pair.1, type_error)?;
    }
    Ok(())
}

fn unreachable_pair<'py>(
    type_error: &mut Option<PyErr>,
) -> Result<(Bound<'py, PyAny>, Bound<'py, PyAny>), RecordError> {
    *type_error = Some(PyTypeError::new_err(
        "each field must be a (key, value) pair",
    ));
    Err(RecordError::Empty)
}

/// Splits a Python time (int or float seconds) into seconds and nanoseconds.
fn split_time(time: Option<&Bound<'_, PyAny>>) -> PyResult<(Option<u32>, Option<u32>)> {
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
    if !(0.0..4_294_967_296.0).contains(&f) {
        return Err(PyTypeError::new_err(format!(
            "time {f} is outside unix seconds 0..2^32"
        )));
    }
    let secs = f.floor();
    Ok((Some(secs as u32), Some(((f - secs) * 1e9) as u32)))
}

fn deadline_of(timeout: Option<f64>) -> Option<Instant> {
    timeout.map(|t| Instant::now() + Duration::from_secs_f64(t.max(0.0)))
}

/// Flushes until nothing is pending or `deadline` passes, in 100 ms slices with the GIL
/// released, checking for signals between slices (so Ctrl-C interrupts); returns what is left.
fn flush_until(py: Python<'_>, producer: &Producer, deadline: Option<Instant>) -> PyResult<u64> {
    loop {
        let slice = deadline.map_or(Duration::from_millis(100), |d| {
            d.saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100))
        });
        let pending = py.detach(|| producer.flush(slice));
        if pending == 0 || deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(pending);
        }
        py.check_signals()?;
    }
}

/// The producer behind `loghose.Producer`.
#[pyclass(frozen, module = "loghose._native", name = "NativeProducer")]
struct NativeProducer {
    /// `None` only while being dropped in a forked child.
    shared: Option<Arc<Producer>>,
}

impl NativeProducer {
    fn shared(&self, py: Python<'_>) -> PyResult<&Producer> {
        self.shared
            .as_deref()
            .ok_or_else(|| raise(py, "LoghoseError", "the producer is gone".into()))
    }

    fn producer(&self, py: Python<'_>) -> PyResult<&Producer> {
        let shared = self.shared(py)?;
        if loghose::producer::process_id() != shared.owner_pid() {
            return Err(raise(py, "LoghoseError", "this producer was created before fork(); its I/O threads live in the parent. Create a new Producer in the child".into()));
        }
        Ok(shared)
    }
}

/// `send(contents)` without keywords, the per-record call, as a raw fastcall function bound to
/// its producer (see [`NativeProducer::sender`]); any other call goes on to the full
/// `NativeProducer.send`. Runs inside pyo3's own entry trampoline (GIL bookkeeping, panics
/// raised as `PanicException`); it only skips the generic argument extraction, which on this
/// path costs about a tenth of the binding's time.
struct MethodDef(pyo3::ffi::PyMethodDef);
// SAFETY: a constant definition CPython only reads.
unsafe impl Sync for MethodDef {}

static SEND_ONE: MethodDef = MethodDef(pyo3::ffi::PyMethodDef {
    ml_name: c"send".as_ptr(),
    ml_meth: pyo3::ffi::PyMethodDefPointer {
        PyCFunctionFastWithKeywords: send_one,
    },
    ml_flags: pyo3::ffi::METH_FASTCALL | pyo3::ffi::METH_KEYWORDS,
    ml_doc: c"send(contents, *, topic=None, source=None, time=None, shard_key=None, project=None, logstore=None)\n--\n\nQueues one record (fire and forget).".as_ptr(),
});

unsafe extern "C" fn send_one(
    slf: *mut pyo3::ffi::PyObject,
    args: *const *mut pyo3::ffi::PyObject,
    nargs: pyo3::ffi::Py_ssize_t,
    kwnames: *mut pyo3::ffi::PyObject,
) -> *mut pyo3::ffi::PyObject {
    // SAFETY: CPython calls this with the GIL held, `slf` the NativeProducer the function was
    // bound to and `args` holding `nargs` arguments.
    unsafe {
        pyo3::impl_::trampoline::fastcall_with_keywords(slf, args, nargs, kwnames, send_one_body)
    }
}

unsafe fn send_one_body(
    py: Python<'_>,
    slf: *mut pyo3::ffi::PyObject,
    args: *const *mut pyo3::ffi::PyObject,
    nargs: pyo3::ffi::Py_ssize_t,
    kwnames: *mut pyo3::ffi::PyObject,
) -> PyResult<*mut pyo3::ffi::PyObject> {
    // SAFETY: `slf` is the live NativeProducer this function was created for (the function
    // holds a reference to it) and `args` holds `nargs` live arguments (see `send_one`).
    unsafe {
        let native = pyo3::Borrowed::from_ptr(py, slf);
        if nargs != 1 || !kwnames.is_null() {
            let method = native.getattr(pyo3::intern!(py, "send"))?;
            let out =
                pyo3::ffi::PyObject_Vectorcall(method.as_ptr(), args, nargs as usize, kwnames);
            return if out.is_null() {
                Err(PyErr::fetch(py))
            } else {
                Ok(out)
            };
        }
        let native = native.cast_unchecked::<NativeProducer>();
        let producer = native.get().producer(py)?;
        let contents = pyo3::Borrowed::from_ptr(py, *args);
        send_record(
            py,
            producer,
            &SendOptions::default(),
            Track::None,
            &contents,
        )?;
        Ok(pyo3::ffi::Py_NewRef(pyo3::ffi::Py_None()))
    }
}

#[pymethods]
impl NativeProducer {
    #[new]
    #[pyo3(signature = (config_json, on_reports=None))]
    fn new(py: Python<'_>, config_json: &str, on_reports: Option<Py<PyAny>>) -> PyResult<Self> {
        let config: ProducerConfig = serde_json::from_str(config_json)
            .map_err(|e| raise(py, "ConfigError", e.to_string()))?;
        let callback: Option<ReportCallback> = on_reports.map(|cb| {
            let cb: ReportCallback = Box::new(move |reports: &[Arc<DeliveryReport>]| {
                Python::attach(|py| {
                    let items: Vec<PyDeliveryReport> = reports
                        .iter()
                        .map(|r| PyDeliveryReport::from(r.as_ref()))
                        .collect();
                    let result = PyList::new(
                        py,
                        items
                            .into_iter()
                            .map(|r| Py::new(py, r))
                            .collect::<PyResult<Vec<_>>>()
                            .unwrap_or_default(),
                    )
                    .and_then(|list| cb.call1(py, (list,)));
                    if let Err(e) = result {
                        // The Python side catches user errors; this is a last line of defence.
                        e.print(py);
                    }
                });
            });
            cb
        });
        let producer = py
            .detach(|| Producer::build(config, None, callback))
            .map_err(|e| producer_error(py, e))?;
        Ok(NativeProducer {
            shared: Some(Arc::new(producer)),
        })
    }

    /// Encodes and queues one record. `ticket` asks for the batch report to list it.
    #[pyo3(signature = (contents, *, topic=None, source=None, time=None, shard_key=None, project=None, logstore=None, ticket=None))]
    #[allow(clippy::too_many_arguments)]
    fn send(
        &self,
        py: Python<'_>,
        contents: &Bound<'_, PyAny>,
        topic: Option<&str>,
        source: Option<&str>,
        time: Option<&Bound<'_, PyAny>>,
        shard_key: Option<&str>,
        project: Option<&str>,
        logstore: Option<&str>,
        ticket: Option<u64>,
    ) -> PyResult<()> {
        let producer = self.producer(py)?;
        let (secs, nanos) = split_time(time)?;
        let opts = SendOptions {
            time: secs,
            time_ns: nanos,
            topic,
            source,
            shard_key,
            project,
            logstore,
        };
        let track = ticket.map_or(Track::None, Track::Ticket);
        send_record(py, producer, &opts, track, contents)
    }

    /// `send` bound to this producer as a plain function: the per-record path (see
    /// [`send_one`]); it takes the same arguments as `send`.
    fn sender(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        // SAFETY: a static method definition; the new function holds a reference to `slf`.
        unsafe {
            let function = pyo3::ffi::PyCFunction_NewEx(
                std::ptr::addr_of!(SEND_ONE.0).cast_mut(),
                slf.as_ptr(),
                std::ptr::null_mut(),
            );
            Py::from_owned_ptr_or_err(slf.py(), function)
        }
    }

    /// Queues many records; returns how many were accepted before the first error (raised).
    fn send_many(&self, py: Python<'_>, records: &Bound<'_, PyAny>) -> PyResult<usize> {
        let producer = self.producer(py)?;
        let mut count = 0;
        for record in records.try_iter()? {
            let record = record?;
            send_record(py, producer, &SendOptions::default(), Track::None, &record)?;
            count += 1;
        }
        Ok(count)
    }

    /// Seals everything and waits up to `timeout` seconds (None: until done); returns the
    /// records still pending. Releases the GIL; Ctrl-C interrupts it.
    #[pyo3(signature = (timeout=None))]
    fn flush(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<u64> {
        let producer = self.producer(py)?;
        flush_until(py, producer, deadline_of(timeout))
    }

    /// Refuses new records, waits up to `timeout` seconds for delivery, abandons the rest;
    /// returns (undelivered records, failed reports). Ctrl-C interrupts the wait.
    #[pyo3(signature = (timeout=None))]
    fn close(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
    ) -> PyResult<(u64, Vec<PyDeliveryReport>)> {
        let shared = self.shared(py)?;
        if loghose::producer::process_id() != shared.owner_pid() {
            return Ok((0, Vec::new()));
        }
        let deadline = deadline_of(timeout);
        flush_until(py, shared, deadline)?;
        // What is left of the timeout (a few seconds without one) lets the reporter thread
        // pass on the last reports before close returns; pending records are already settled
        // unless the deadline passed.
        let remaining = deadline.map_or(Duration::from_secs(5), |d| {
            d.saturating_duration_since(Instant::now())
        });
        let report = py.detach(|| shared.close(remaining));
        Ok((
            report.undelivered,
            report
                .failed
                .iter()
                .map(|r| PyDeliveryReport::from(r.as_ref()))
                .collect(),
        ))
    }

    /// The counters, as JSON.
    fn stats_json(&self) -> String {
        self.shared
            .as_ref()
            .map(|p| serde_json::to_string(&p.stats()).unwrap_or_default())
            .unwrap_or_else(|| "null".into())
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.shared.as_ref().is_none_or(|p| p.is_closed())
    }
}

impl Drop for NativeProducer {
    fn drop(&mut self) {
        let forked = self
            .shared
            .as_ref()
            .is_some_and(|p| loghose::producer::process_id() != p.owner_pid());
        if forked {
            // Inherited through fork: its I/O threads are the parent's, so closing would wait
            // for them in vain. Forget it; its records stay with the parent.
            if let Some(shared) = self.shared.take() {
                std::mem::forget(shared);
            }
        }
    }
}

/// The embedded emulator behind `loghose.Emulator`.
#[pyclass(frozen, module = "loghose._native", name = "NativeEmulator")]
struct NativeEmulator {
    emulator: std::sync::Mutex<Option<Emulator>>,
    endpoint: String,
    access_key_id: String,
    access_key_secret: String,
}

impl NativeEmulator {
    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&Emulator) -> T) -> PyResult<T> {
        let guard = self
            .emulator
            .lock()
            .map_err(|_| raise(py, "LoghoseError", "emulator lock poisoned".into()))?;
        match guard.as_ref() {
            Some(e) => Ok(f(e)),
            None => Err(raise(py, "LoghoseError", "the emulator is stopped".into())),
        }
    }
}

#[pymethods]
impl NativeEmulator {
    #[new]
    fn new(py: Python<'_>, config_json: &str) -> PyResult<Self> {
        let config: EmulatorConfig = serde_json::from_str(config_json)
            .map_err(|e| raise(py, "ConfigError", e.to_string()))?;
        let emulator = py
            .detach(|| Emulator::start(config))
            .map_err(|e| raise(py, "LoghoseError", e.to_string()))?;
        let creds = emulator.credentials();
        Ok(NativeEmulator {
            endpoint: emulator.endpoint(),
            access_key_id: creds
                .as_ref()
                .map(|c| c.access_key_id.clone())
                .unwrap_or_default(),
            access_key_secret: creds.map(|c| c.access_key_secret).unwrap_or_default(),
            emulator: std::sync::Mutex::new(Some(emulator)),
        })
    }

    #[getter]
    fn endpoint(&self) -> String {
        self.endpoint.clone()
    }

    #[getter]
    fn access_key_id(&self) -> String {
        self.access_key_id.clone()
    }

    #[getter]
    fn access_key_secret(&self) -> String {
        self.access_key_secret.clone()
    }

    /// Stored logs of a logstore, as JSON.
    fn logs_json(&self, py: Python<'_>, project: &str, logstore: &str) -> PyResult<String> {
        let logs = self.with(py, |e| e.logs(project, logstore))?;
        Ok(serde_json::to_string(&logs).unwrap_or_default())
    }

    /// Exact totals of a logstore, as JSON (null if it does not exist).
    fn totals_json(&self, py: Python<'_>, project: &str, logstore: &str) -> PyResult<String> {
        let totals = self.with(py, |e| e.totals(project, logstore))?;
        Ok(serde_json::to_string(&totals).unwrap_or_default())
    }

    /// Counters, as JSON.
    fn counters_json(&self, py: Python<'_>) -> PyResult<String> {
        let counters = self.with(py, |e| e.counters())?;
        Ok(serde_json::to_string(&counters).unwrap_or_default())
    }

    /// Adds a fault rule given as JSON (see the emulator's /_emulator/faults).
    fn inject_json(&self, py: Python<'_>, fault_json: &str) -> PyResult<()> {
        let fault = serde_json::from_str(fault_json)
            .map_err(|e| raise(py, "ConfigError", format!("bad fault: {e}")))?;
        self.with(py, |e| e.inject(fault))
    }

    fn clear_faults(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |e| e.clear_faults())
    }

    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |e| e.reset())
    }

    #[pyo3(signature = (project, logstore, shards=None))]
    fn create_logstore(
        &self,
        py: Python<'_>,
        project: &str,
        logstore: &str,
        shards: Option<u32>,
    ) -> PyResult<()> {
        self.with(py, |e| e.create_logstore(project, logstore, shards))
    }

    /// Stops serving (idempotent).
    fn close(&self, py: Python<'_>) {
        let taken = self.emulator.lock().ok().and_then(|mut g| g.take());
        if let Some(e) = taken {
            py.detach(|| e.shutdown());
        }
    }
}

/// The version of the Rust engine this module was built from.
#[pyfunction]
fn engine_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The `loghose._native` module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(engine_version, m)?)?;
    m.add_class::<NativeProducer>()?;
    m.add_class::<NativeEmulator>()?;
    m.add_class::<PyDeliveryReport>()?;
    Ok(())
}
