//! `KeyedSender`: what `Producer.sender(keys)` returns, a callable taking a record's values in
//! the order of `keys`.
//!
//! The keys are checked once, when it is made (as the service checks keys: a bad one raises
//! `InvalidRecordError` then); each call writes its values straight into the open batch, read
//! from CPython as `send` reads a dict's values (str, int, float, bool, None), with no dict
//! built or walked. A value of another kind (bytes, a container, an object to convert) sends
//! the record through `send`'s own path instead, so what is stored is the same either way. Runs
//! on the caller's thread with the GIL held; runs no Python code while the batch is held.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use loghose::producer::bindings::BindingAdds;
use loghose::producer::{LogEncoder, ProducerError};

use std::sync::Arc;

use loghose::producer::Producer;

use crate::errors::producer_error;
use crate::record::{put_value_direct, send_record, Route};

#[pyclass(frozen, module = "loghose._native", name = "KeyedSender")]
pub(crate) struct KeyedSender {
    producer: Arc<Producer>,
    /// The producer's `convert(key, value)`, for values `send` converts.
    convert: Option<Py<PyAny>>,
    keys: Vec<String>,
}

impl KeyedSender {
    /// A sender of `keys` for `producer`, each key checked as the service checks keys.
    pub(crate) fn new(
        py: Python<'_>,
        producer: Arc<Producer>,
        convert: Option<Py<PyAny>>,
        keys: Vec<String>,
    ) -> PyResult<KeyedSender> {
        if keys.is_empty() {
            return Err(PyTypeError::new_err("sender takes at least one key"));
        }
        if let Err(error) =
            loghose::producer::bindings::check_keys(&keys, producer.config().key_policy)
        {
            return Err(producer_error(py, ProducerError::from(error)));
        }
        Ok(KeyedSender {
            producer,
            convert,
            keys,
        })
    }
}

#[pymethods]
impl KeyedSender {
    /// Queues the record of this sender's keys with `values`, in order.
    #[pyo3(signature = (*values))]
    fn __call__(&self, py: Python<'_>, values: &Bound<'_, PyTuple>) -> PyResult<()> {
        if values.len() != self.keys.len() {
            return Err(PyTypeError::new_err(format!(
                "this sender takes {} values ({}), not {}",
                self.keys.len(),
                self.keys.join(", "),
                values.len()
            )));
        }
        // Refused in a process that inherited the producer through `fork`.
        let producer = &*self.producer;
        producer.ensure_owned().map_err(|e| producer_error(py, e))?;
        let fill = |enc: &mut LogEncoder<'_>| {
            for (at, key) in self.keys.iter().enumerate() {
                // SAFETY: the tuple holds `keys.len()` live values (checked above) for the
                // whole call, the GIL is held, and `put_value_direct` runs no Python code.
                let written = unsafe {
                    put_value_direct(
                        enc,
                        key,
                        pyo3::ffi::PyTuple_GET_ITEM(values.as_ptr(), at as _),
                    )
                }?;
                if !written {
                    return Ok(false);
                }
            }
            Ok(true)
        };
        match producer
            .try_add_in_place(fill)
            .map(|added| added.is_queued())
        {
            Ok(true) => Ok(()),
            Ok(false) => {
                // A value `send` converts: the record goes its way, as a dict.
                let record = PyDict::new(py);
                for (key, value) in self.keys.iter().zip(values.iter()) {
                    record.set_item(key, value)?;
                }
                send_record(
                    py,
                    producer,
                    Route::Plain,
                    record.as_any(),
                    self.convert.as_ref().map(|c| c.bind(py)),
                )
            }
            Err(e) => Err(producer_error(py, e)),
        }
    }

    /// The keys, in order.
    #[getter]
    fn keys(&self) -> Vec<String> {
        self.keys.clone()
    }
}
