//! `NativeProducer`: the engine's producer, held for `loghose.Producer`.
//!
//! - `send` runs on the caller's thread holding the GIL only while it reads the record (see
//!   [`crate::record`]); the usual call, `send(contents)` with no keywords, enters
//!   through a raw fastcall function bound to the producer ([`NativeProducer::bound_send`]).
//! - Every wait (`flush`, `close`) releases the GIL and waits in 100 ms slices, checking for
//!   signals between them, so Ctrl-C interrupts it.
//! - A producer inherited through `fork` refuses adds and flushes (the engine's `Inherited`
//!   error); `close` in the child returns at once, and dropping it frees nothing (the engine
//!   leaves the parent's parts alone).

use std::sync::Arc;
use std::time::{Duration, Instant};

use loghose::producer::{
    CredentialsProvider, DeliveryReport, FlushReport, Producer, ProducerConfig, ReportCallback,
    SendOptions, Track,
};
use loghose::wire::sign::Credentials;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyList;

use crate::errors::producer_error;
use crate::record::{self, send_record, split_time, Route};
use crate::report::PyDeliveryReport;

fn deadline_of(timeout: Option<f64>) -> Option<Instant> {
    timeout.map(|t| Instant::now() + Duration::from_secs_f64(t.max(0.0)))
}

/// Flushes until nothing is pending or `deadline` passes, in 100 ms slices with the GIL
/// released, checking for signals between slices (so Ctrl-C interrupts); returns what is left
/// and what failed for good since the previous flush.
fn flush_until(
    py: Python<'_>,
    producer: &Producer,
    deadline: Option<Instant>,
) -> PyResult<FlushReport> {
    let mut failed = 0;
    loop {
        let slice = deadline.map_or(Duration::from_millis(100), |d| {
            d.saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100))
        });
        let report = py.detach(|| producer.flush_report(slice));
        failed += report.failed;
        if report.pending == 0 || deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(FlushReport {
                pending: report.pending,
                failed,
            });
        }
        py.check_signals()?;
    }
}

/// Credentials from a Python function returning `(access_key_id, access_key_secret,
/// security_token or None)`, called on an I/O thread (taking the GIL) before every attempt.
/// `loghose.Producer` wraps whatever provider the caller gives into such a function.
struct PythonCredentials {
    function: Py<PyAny>,
}

impl CredentialsProvider for PythonCredentials {
    fn credentials(&self) -> Result<Credentials, String> {
        Python::attach(|py| {
            let answer = self
                .function
                .call0(py)
                .map_err(|e| format!("the credentials provider raised {}", e.value(py)))?;
            let (id, secret, token): (String, String, Option<String>) =
                answer.extract(py).map_err(|_| {
                    "the credentials provider gave no (id, secret, token) triple".to_owned()
                })?;
            Ok(Credentials {
                access_key_id: id,
                access_key_secret: secret,
                security_token: token.filter(|t| !t.is_empty()),
            })
        })
    }
}

/// Hands each batch of reports to the Python callback, on the producer's reporter thread.
fn report_callback(callback: Py<PyAny>) -> ReportCallback {
    Box::new(move |reports: &[Arc<DeliveryReport>]| {
        Python::attach(|py| {
            let items = reports
                .iter()
                .map(|r| Py::new(py, PyDeliveryReport(r.clone())))
                .collect::<PyResult<Vec<_>>>();
            let result = items
                .and_then(|items| PyList::new(py, items))
                .and_then(|list| callback.call1(py, (list,)));
            if let Err(e) = result {
                // The Python side catches user errors; this is a last line of defence.
                e.print(py);
            }
        });
    })
}

impl Drop for NativeProducer {
    /// Python drops the producer (its last reference gone) with the GIL held, and closing waits
    /// for the reporter thread, which needs the GIL to pass reports on: the close runs with
    /// the GIL released, or every collected producer would wait out `drop_timeout_ms`.
    fn drop(&mut self) {
        let producer = &self.producer;
        if producer.is_inherited() || (producer.is_closed() && producer.pending() == 0) {
            return; // the engine's own drop has nothing to wait for
        }
        let timeout = Duration::from_millis(producer.config().drop_timeout_ms);
        Python::attach(|py| {
            py.detach(|| {
                producer.close(timeout);
            })
        });
    }
}

/// What `NativeProducer.close` answers: undelivered, kept, kept not durable, sent not durable
/// (the engine's `CloseReport`), and the failed reports; `loghose.CloseResult` names them.
type NativeClosed = (u64, u64, u64, u64, Vec<PyDeliveryReport>);

/// The producer behind `loghose.Producer`.
#[pyclass(frozen, module = "loghose._native", name = "NativeProducer")]
pub(crate) struct NativeProducer {
    producer: Arc<Producer>,
    /// `convert(key, value) -> str` for values that are not str/bytes/bool/int/float.
    convert: Option<Py<PyAny>>,
}

impl NativeProducer {
    /// The producer, refused in a process that inherited it through `fork`.
    #[inline]
    pub(crate) fn owned(&self, py: Python<'_>) -> PyResult<&Producer> {
        self.producer
            .ensure_owned()
            .map_err(|e| producer_error(py, e))?;
        Ok(&self.producer)
    }
}

/// `send`, the only one: a raw fastcall function bound to its producer (see
/// [`NativeProducer::bound_send`]). `send(contents)` and `send(contents, time=t)`, the
/// per-record calls, go straight to the engine; any other keyword is read by name
/// ([`send_with_keywords`]). It only skips pyo3's generic argument extraction, which on this path
/// costs about a tenth of the binding's time; the GIL bookkeeping and panic handling are
/// pyo3's own entry trampoline, an internal module of pyo3 (which is why pyo3 is pinned to an
/// exact version in `Cargo.toml`).
struct MethodDef(pyo3::ffi::PyMethodDef);
// SAFETY: a constant definition CPython only reads.
unsafe impl Sync for MethodDef {}

static SEND_ONE: MethodDef = MethodDef(pyo3::ffi::PyMethodDef {
    ml_name: c"send".as_ptr(),
    ml_meth: pyo3::ffi::PyMethodDefPointer {
        PyCFunctionFastWithKeywords:
            pyo3::impl_::trampoline::fastcall_cfunction_with_keywords::<SendOneBody>,
    },
    ml_flags: pyo3::ffi::METH_FASTCALL | pyo3::ffi::METH_KEYWORDS,
    ml_doc: c"send(contents, *, topic=None, source=None, time=None, shard_key=None, project=None, logstore=None)\n--\n\nQueues one record (fire and forget).".as_ptr(),
});

/// The body pyo3's trampoline (attach bookkeeping, panics turned into exceptions) calls.
struct SendOneBody;
impl
    pyo3::impl_::trampoline::MethodDef<
        pyo3::impl_::trampoline::fastcall_cfunction_with_keywords::Func,
    > for SendOneBody
{
    const METH: pyo3::impl_::trampoline::fastcall_cfunction_with_keywords::Func = send_one_body;
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
        // `send(contents, time=t)` (what the logging integrations call) also stays on this
        // path; any other keyword goes on to the full method.
        let time_only = !kwnames.is_null()
            && pyo3::ffi::PyTuple_GET_SIZE(kwnames) == 1
            && pyo3::Borrowed::from_ptr(py, pyo3::ffi::PyTuple_GET_ITEM(kwnames, 0))
                .cast_unchecked::<pyo3::types::PyString>()
                .to_str()
                .is_ok_and(|name| name == "time");
        let native = native.cast_unchecked::<NativeProducer>();
        if nargs != 1 || !(kwnames.is_null() || time_only) {
            send_with_keywords(py, native.get(), args, nargs, kwnames)?;
            return Ok(pyo3::ffi::Py_NewRef(pyo3::ffi::Py_None()));
        }
        let native = native.get();
        let contents = pyo3::Borrowed::from_ptr(py, *args);
        let convert = native.convert.as_ref().map(|c| c.bind(py));
        let time = time_only
            .then(|| pyo3::Borrowed::from_ptr(py, *args.add(1)))
            .filter(|time| !time.is_none());
        let opts;
        let route = match time {
            None => Route::Plain,
            Some(time) => {
                let (time, time_ns) = split_time(py, Some(&time))?;
                opts = SendOptions {
                    time,
                    time_ns,
                    ..SendOptions::default()
                };
                Route::With(&opts, Track::None)
            }
        };
        send_record(py, &native.producer, route, &contents, convert)?;
        Ok(pyo3::ffi::Py_NewRef(pyo3::ffi::Py_None()))
    }
}

/// `send`'s keywords, read by name (`topic`, `source`, `time`, `shard_key`, `project`,
/// `logstore`, and `ticket`, which asks for the batch report to list the record).
#[derive(Default)]
struct SendKeywords<'py> {
    /// The record, when given by name.
    contents: Option<Bound<'py, PyAny>>,
    topic: Option<PyBackedStr>,
    source: Option<PyBackedStr>,
    time: Option<Bound<'py, PyAny>>,
    shard_key: Option<PyBackedStr>,
    project: Option<PyBackedStr>,
    logstore: Option<PyBackedStr>,
    ticket: Option<u64>,
}

impl<'py> SendKeywords<'py> {
    /// Sets the keyword `name`; an unknown name or a value of the wrong type is a TypeError
    /// naming it, as Python's own argument parsing words it.
    fn set(&mut self, name: &str, value: Bound<'py, PyAny>) -> PyResult<()> {
        let text = |value: &Bound<'py, PyAny>| -> PyResult<Option<PyBackedStr>> {
            if value.is_none() {
                return Ok(None);
            }
            value.extract().map(Some).map_err(|_| {
                PyTypeError::new_err(format!(
                    "send() argument '{name}' must be str or None, not {}",
                    crate::record::type_name(value)
                ))
            })
        };
        match name {
            "contents" => self.contents = Some(value),
            "topic" => self.topic = text(&value)?,
            "source" => self.source = text(&value)?,
            "shard_key" => self.shard_key = text(&value)?,
            "project" => self.project = text(&value)?,
            "logstore" => self.logstore = text(&value)?,
            "time" => self.time = Some(value).filter(|t| !t.is_none()),
            "ticket" => {
                self.ticket = value
                    .extract()
                    .map_err(|_| PyTypeError::new_err("send() argument 'ticket' must be an int"))?
            }
            other => {
                return Err(PyTypeError::new_err(format!(
                    "send() got an unexpected keyword argument '{other}'"
                )))
            }
        }
        Ok(())
    }
}

/// `send(contents, **keywords)` beyond the per-record path: the keywords read by name, then the
/// record queued with them.
///
/// # Safety
/// `args` holds `nargs` positional then `len(kwnames)` keyword arguments, live for the call,
/// and `kwnames` is null or a tuple of str (CPython's vectorcall convention).
unsafe fn send_with_keywords(
    py: Python<'_>,
    native: &NativeProducer,
    args: *const *mut pyo3::ffi::PyObject,
    nargs: pyo3::ffi::Py_ssize_t,
    kwnames: *mut pyo3::ffi::PyObject,
) -> PyResult<()> {
    if nargs > 1 {
        return Err(PyTypeError::new_err(format!(
            "send() takes 1 positional argument (contents) but {nargs} were given"
        )));
    }
    let mut keywords = SendKeywords::default();
    // SAFETY: per this function's contract.
    unsafe {
        let named = if kwnames.is_null() {
            0
        } else {
            pyo3::ffi::PyTuple_GET_SIZE(kwnames)
        };
        for i in 0..named {
            let name = pyo3::Borrowed::from_ptr(py, pyo3::ffi::PyTuple_GET_ITEM(kwnames, i))
                .cast_unchecked::<pyo3::types::PyString>();
            let value = pyo3::Borrowed::from_ptr(py, *args.add((nargs + i) as usize));
            keywords.set(name.to_str()?, value.to_owned())?;
        }
        let contents = match (nargs, keywords.contents.take()) {
            (1, None) => pyo3::Borrowed::from_ptr(py, *args).to_owned(),
            (0, Some(contents)) => contents,
            (0, None) => {
                return Err(PyTypeError::new_err(
                    "send() missing 1 required argument: 'contents'",
                ))
            }
            _ => {
                return Err(PyTypeError::new_err(
                    "send() got multiple values for argument 'contents'",
                ))
            }
        };
        native.send_with(py, &contents, &keywords)
    }
}

impl NativeProducer {
    /// Encodes and queues one record with `keywords`.
    fn send_with(
        &self,
        py: Python<'_>,
        contents: &Bound<'_, PyAny>,
        keywords: &SendKeywords<'_>,
    ) -> PyResult<()> {
        let (secs, nanos) = split_time(py, keywords.time.as_ref())?;
        let opts = SendOptions {
            time: secs,
            time_ns: nanos,
            topic: keywords.topic.as_deref(),
            source: keywords.source.as_deref(),
            shard_key: keywords.shard_key.as_deref(),
            project: keywords.project.as_deref(),
            logstore: keywords.logstore.as_deref(),
        };
        let track = keywords.ticket.map_or(Track::None, Track::Ticket);
        let route = if track == Track::None && opts.is_empty() {
            Route::Plain
        } else {
            Route::With(&opts, track)
        };
        send_record(
            py,
            &self.producer,
            route,
            contents,
            self.convert.as_ref().map(|c| c.bind(py)),
        )
    }
}

#[pymethods]
impl NativeProducer {
    #[new]
    #[pyo3(signature = (config_json, on_reports=None, credentials=None, convert=None))]
    fn new(
        py: Python<'_>,
        config_json: &str,
        on_reports: Option<Py<PyAny>>,
        credentials: Option<Py<PyAny>>,
        convert: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let config =
            ProducerConfig::from_json(config_json).map_err(|e| producer_error(py, e.into()))?;
        let callback = on_reports.map(report_callback);
        let provider = credentials.map(|function| {
            Arc::new(PythonCredentials { function }) as Arc<dyn CredentialsProvider>
        });
        let producer = py
            .detach(|| Producer::build(config, provider, callback))
            .map_err(|e| producer_error(py, e))?;
        let producer = Arc::new(producer);
        crate::signals::register(&producer);
        Ok(NativeProducer { producer, convert })
    }

    /// Queues a `logging.LogRecord` with its message (its `getMessage()`, made natively when
    /// not given), written natively; `False` when it declines (see `log_record`), and nothing
    /// was queued.
    #[pyo3(signature = (record, message = None))]
    fn send_log_record(
        &self,
        py: Python<'_>,
        record: &Bound<'_, PyAny>,
        message: Option<&Bound<'_, pyo3::types::PyString>>,
    ) -> PyResult<bool> {
        crate::log_record::send_log_record(py, &self.producer, record, message)
    }

    /// Queues a structlog event dict as `LoghoseProcessor` sends it, written natively;
    /// `False` when it declines (see `events`), and nothing was queued.
    fn send_event_dict(
        &self,
        py: Python<'_>,
        event: &Bound<'_, pyo3::types::PyDict>,
        method_name: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        crate::events::send_event_dict(py, &self.producer, event, method_name)
    }

    /// Queues a loguru record (its `record` dict) as `LoghoseSink` sends it, written
    /// natively; `False` when it declines (see `events`), and nothing was queued.
    fn send_loguru_record(
        &self,
        py: Python<'_>,
        record: &Bound<'_, pyo3::types::PyDict>,
    ) -> PyResult<bool> {
        crate::events::send_loguru_record(py, &self.producer, record)
    }

    /// `send` bound to this producer as a plain function: the per-record path (see
    /// [`SEND_ONE`] and [`send_one_body`]); it takes the same arguments as `send`.
    fn bound_send(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        // SAFETY: a static method definition; the new function holds a reference to `slf`.
        unsafe {
            let function = pyo3::ffi::PyCFunction_NewEx(
                std::ptr::addr_of!(SEND_ONE.0).cast_mut(),
                slf.as_ptr(),
                std::ptr::null_mut(),
            );
            Bound::from_owned_ptr_or_err(slf.py(), function).map(Bound::unbind)
        }
    }

    /// A callable taking the values of a record of `keys`, in order (see
    /// [`keyed`](crate::keyed)); a key the service would refuse raises here.
    fn keyed_sender(
        &self,
        py: Python<'_>,
        keys: Vec<String>,
    ) -> PyResult<crate::keyed::KeyedSender> {
        let convert = self.convert.as_ref().map(|c| c.clone_ref(py));
        crate::keyed::KeyedSender::new(py, self.producer.clone(), convert, keys)
    }

    /// Queues every record of `records` or none of them; returns how many were queued. A
    /// record that cannot be sent raises (naming its index) before anything is queued.
    fn send_many(&self, py: Python<'_>, records: &Bound<'_, PyAny>) -> PyResult<usize> {
        record::send_many(
            py,
            &self.producer,
            records,
            self.convert.as_ref().map(|c| c.bind(py)),
        )
    }

    /// Seals everything and waits up to `timeout` seconds (None: until done); returns the
    /// records still pending and those that failed for good since the previous flush.
    /// Releases the GIL; Ctrl-C interrupts it.
    #[pyo3(signature = (timeout=None))]
    fn flush(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<(u64, u64)> {
        let producer = self.owned(py)?;
        let report = flush_until(py, producer, deadline_of(timeout))?;
        Ok((report.pending, report.failed))
    }

    /// Seals everything and waits up to `timeout` seconds until as many records are settled as
    /// had been accepted when called (not for those other threads add meanwhile); returns how
    /// many short. Releases the GIL and checks for signals every 100 ms, so a second signal
    /// interrupts it.
    fn flush_accepted(&self, py: Python<'_>, timeout: f64) -> PyResult<u64> {
        let producer = self.owned(py)?;
        let deadline = Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
        let mark = producer.seal();
        loop {
            let slice = deadline
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100));
            let left = py.detach(|| producer.wait_settled(mark, slice));
            if left == 0 || Instant::now() >= deadline {
                return Ok(left);
            }
            py.check_signals()?;
        }
    }

    /// Refuses new records, waits up to `timeout` seconds for delivery, abandons the rest;
    /// returns (records neither delivered nor kept, records kept in the spool for the next
    /// producer, failed reports). Ctrl-C interrupts the wait.
    #[pyo3(signature = (timeout=None))]
    fn close(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<NativeClosed> {
        let producer = &self.producer;
        if producer.is_inherited() {
            return Ok((0, 0, 0, 0, Vec::new()));
        }
        let deadline = deadline_of(timeout);
        flush_until(py, producer, deadline)?;
        // What is left of the timeout (a few seconds without one) lets the reporter thread
        // pass on the last reports before close returns; pending records are already settled
        // unless the deadline passed.
        let remaining = deadline.map_or(Duration::from_secs(5), |d| {
            d.saturating_duration_since(Instant::now())
        });
        let report = py.detach(|| producer.close(remaining));
        Ok((
            report.undelivered,
            report.kept,
            report.kept_not_durable,
            report.not_durable,
            report.failed.into_iter().map(PyDeliveryReport).collect(),
        ))
    }

    /// The counters, as JSON.
    fn stats_json(&self) -> String {
        serde_json::to_string(&self.producer.stats()).unwrap_or_else(|_| "null".into())
    }

    /// A snapshot of the metrics (`loghose::metrics`), as JSON.
    fn metrics_json(&self) -> String {
        loghose::metrics::to_json(&self.producer.metrics())
    }

    /// The metrics in the Prometheus text format (`loghose::metrics::encode_text_labelled`),
    /// each sample also carrying `const_labels`, with `callback_errors` more report-callback
    /// errors than the engine counted (those the Python side caught). The GIL is released
    /// while the engine renders.
    fn metrics_text(
        &self,
        py: Python<'_>,
        const_labels: Vec<(String, String)>,
        callback_errors: u64,
    ) -> PyResult<String> {
        let producer = &self.producer;
        py.detach(|| {
            let mut families = producer.metrics();
            loghose::metrics::add_to_sample(
                &mut families,
                &loghose::metrics::CALLBACK_ERRORS,
                callback_errors,
            );
            loghose::metrics::encode_text_labelled(&families, &const_labels)
        })
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    }

    /// The `close_on_signal_ms` option: how long the front may deliver on SIGTERM/SIGINT.
    #[getter]
    fn close_on_signal_ms(&self) -> u64 {
        self.producer.config().close_on_signal_ms
    }

    /// The endpoint's host and port (`ProducerConfig::server_address`), for monitoring.
    #[getter]
    fn server_address(&self) -> (String, u16) {
        // Validated when the producer was built: the error cannot happen here.
        self.producer
            .config()
            .server_address()
            .unwrap_or_else(|_| (self.producer.config().endpoint.clone(), 0))
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.producer.is_closed()
    }
}
