//! structlog event dicts and loguru records written natively: the fields `LoghoseProcessor`
//! and `LoghoseSink` build in Python, read straight from the event dict or the loguru record
//! and written in place into the open batch, with no dict built in between.
//!
//! Each declines (`Ok(false)`, nothing queued; the integration then builds the fields in
//! Python, so what is stored is the same either way) at whatever it does not read directly: an
//! exception to render, a key that is not a `str`, a value that is not str, int, float, bool or
//! None (containers and objects go through the producer's conversion), a lone surrogate, a
//! loguru `extra` key named as a standard field. What may run Python code (an attribute read,
//! the time's `timestamp()`) is read before the batch is held; nothing runs while it is held.
//! Runs on the logging thread, with the GIL held.

use loghose::producer::bindings::BindingAdds;
use loghose::producer::{LogEncoder, Producer, RecordError, SendOptions, Track};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt};

use crate::errors::producer_error;
// The fields `LoghoseSink` writes before a loguru record's `extra`, in order: those the
// `logging` handler writes.
use crate::log_record::NAMED as LOGURU_FIELDS;
use crate::record::{dict_items, put_item_direct, put_value_direct, split_time, DictItems};

/// Queues a structlog event dict as `LoghoseProcessor` sends it: every key a field in order,
/// then `level` (`method_name`) unless the dict has one; the time is the `timestamp` key when
/// it is a number. Declines for an `exc_info` key (its traceback is rendered in Python).
pub(crate) fn send_event_dict<'py>(
    py: Python<'py>,
    producer: &Producer,
    event: &Bound<'py, PyDict>,
    method_name: &Bound<'py, PyAny>,
) -> PyResult<bool> {
    if event.contains(pyo3::intern!(py, "exc_info"))? {
        return Ok(false);
    }
    let stamp = event.get_item(pyo3::intern!(py, "timestamp"))?;
    let stamp = stamp.filter(|t| t.is_instance_of::<PyInt>() || t.is_instance_of::<PyFloat>());
    let (time, time_ns) = split_time(py, stamp.as_ref())?;
    let with_level = !event.contains(pyo3::intern!(py, "level"))?;
    let opts = SendOptions {
        time,
        time_ns,
        ..SendOptions::default()
    };
    let fill = |enc: &mut LogEncoder<'_>| -> Result<bool, RecordError> {
        // SAFETY: `event` and `method_name` are live, the GIL is held, and nothing here runs
        // Python code, so the dict and the objects it holds do not change.
        unsafe {
            let all = match dict_items(event.as_ptr()) {
                DictItems::Table(items) => put_items(enc, items)?,
                DictItems::Api(items) => put_items(enc, items)?,
            };
            Ok(all && (!with_level || put_value_direct(enc, "level", method_name.as_ptr())?))
        }
    };
    producer
        .try_send_in_place(&opts, Track::None, fill)
        .map(|added| added.is_queued())
        .map_err(|e| producer_error(py, e))
}

/// Every pair of `items` as a field; false at the first one not read directly.
///
/// # Safety
/// Live pointers, the GIL held, no Python code run while `items` is walked.
#[inline(always)]
unsafe fn put_items(
    enc: &mut LogEncoder<'_>,
    items: impl Iterator<Item = (*mut pyo3::ffi::PyObject, *mut pyo3::ffi::PyObject)>,
) -> Result<bool, RecordError> {
    for (key, value) in items {
        // SAFETY: as the caller promises.
        if !unsafe { put_item_direct(enc, key, value) }? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Queues a loguru record (the `record` dict of the message loguru hands a sink) as
/// `LoghoseSink` sends it: [`LOGURU_FIELDS`], then every `extra` key in order; the time is the
/// record's. Declines for an exception, a record not shaped as loguru makes them, or an `extra`
/// key named as one of those fields (it replaces the field in the Python path's dict).
pub(crate) fn send_loguru_record<'py>(
    py: Python<'py>,
    producer: &Producer,
    record: &Bound<'py, PyDict>,
) -> PyResult<bool> {
    let item = |name: &Bound<'py, pyo3::types::PyString>| record.get_item(name);
    let attr = |value: Option<Bound<'py, PyAny>>, name: &Bound<'py, pyo3::types::PyString>| {
        value.and_then(|v| v.getattr(name).ok())
    };
    if !item(pyo3::intern!(py, "exception"))?.is_some_and(|e| e.is_none()) {
        return Ok(false);
    }
    let id = pyo3::intern!(py, "id");
    let name = pyo3::intern!(py, "name");
    let thread = item(pyo3::intern!(py, "thread"))?;
    let values = [
        attr(item(pyo3::intern!(py, "level"))?, name),
        item(name)?,
        item(pyo3::intern!(py, "message"))?,
        item(pyo3::intern!(py, "module"))?,
        item(pyo3::intern!(py, "function"))?,
        item(pyo3::intern!(py, "line"))?,
        attr(thread.clone(), id),
        attr(thread, name),
        attr(item(pyo3::intern!(py, "process"))?, id),
    ];
    let Some(extra) = item(pyo3::intern!(py, "extra"))? else {
        return Ok(false);
    };
    let Ok(extra) = extra.cast_into::<PyDict>() else {
        return Ok(false);
    };
    if values.iter().any(Option::is_none) {
        return Ok(false);
    }
    let Some(moment) = item(pyo3::intern!(py, "time"))? else {
        return Ok(false);
    };
    let Some(seconds) = unix_seconds(&moment)? else {
        return Ok(false);
    };
    // As `split_time` splits the float the Python path passes.
    let (secs, nanos) = loghose::producer::bindings::split_unix_seconds(seconds)
        .map_err(|e| producer_error(py, e.into()))?;
    let opts = SendOptions {
        time: Some(secs),
        time_ns: Some(nanos),
        ..SendOptions::default()
    };
    let fill = |enc: &mut LogEncoder<'_>| -> Result<bool, RecordError> {
        // SAFETY: the values and `extra` are live, the GIL is held, and nothing here runs
        // Python code, so `extra` and the objects it holds do not change.
        unsafe {
            for (key, value) in LOGURU_FIELDS.iter().zip(&values) {
                let Some(value) = value else { return Ok(false) };
                if !put_value_direct(enc, key, value.as_ptr())? {
                    return Ok(false);
                }
            }
            match dict_items(extra.as_ptr()) {
                DictItems::Table(items) => put_extra(enc, items),
                DictItems::Api(items) => put_extra(enc, items),
            }
        }
    };
    producer
        .try_send_in_place(&opts, Track::None, fill)
        .map(|added| added.is_queued())
        .map_err(|e| producer_error(py, e))
}

/// An aware `datetime`'s `timestamp()`, as CPython computes it (its microseconds since the
/// epoch, divided by a million: both exact in a double, so the quotient is rounded once, as
/// Python's integer division rounds it), without the allocations and lookups of the method
/// itself. None for anything else (a naive datetime is local time: the method's business).
fn unix_seconds(moment: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    use pyo3::types::{
        PyDateAccess, PyDateTime, PyDelta, PyDeltaAccess, PyTimeAccess, PyTzInfoAccess,
    };
    let py = moment.py();
    let Ok(moment) = moment.cast::<PyDateTime>() else {
        return Ok(None);
    };
    let Some(zone) = moment.get_tzinfo() else {
        return Ok(None);
    };
    let offset = zone.call_method1(pyo3::intern!(py, "utcoffset"), (moment,))?;
    let Ok(offset) = offset.cast::<PyDelta>() else {
        return Ok(None);
    };
    let days = days_from_civil(
        i64::from(moment.get_year()),
        i64::from(moment.get_month()),
        i64::from(moment.get_day()),
    );
    let seconds = days * 86_400
        + i64::from(moment.get_hour()) * 3_600
        + i64::from(moment.get_minute()) * 60
        + i64::from(moment.get_second())
        - (i64::from(offset.get_days()) * 86_400 + i64::from(offset.get_seconds()));
    let micros = seconds * 1_000_000 + i64::from(moment.get_microsecond())
        - i64::from(offset.get_microseconds());
    // Exact as a double for every time a log may have (up to 2^32 seconds: under 2^53 µs),
    // so the one rounding is the division's.
    Ok(Some(micros as f64 / 1e6))
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// A loguru record's `extra` after its standard fields; false at a pair not read directly or
/// a key named as a standard field.
///
/// # Safety
/// As [`put_items`].
#[inline(always)]
unsafe fn put_extra(
    enc: &mut LogEncoder<'_>,
    items: impl Iterator<Item = (*mut pyo3::ffi::PyObject, *mut pyo3::ffi::PyObject)>,
) -> Result<bool, RecordError> {
    for (key, value) in items {
        // SAFETY: as the caller promises.
        unsafe {
            let Some(Ok(k)) = crate::record::str_utf8(key) else {
                pyo3::ffi::PyErr_Clear();
                return Ok(false);
            };
            if LOGURU_FIELDS.contains(&k) || !put_value_direct(enc, k, value)? {
                return Ok(false);
            }
        }
    }
    Ok(true)
}
