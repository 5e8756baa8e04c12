//! Engine errors as `loghose.errors` classes: each engine `ErrorKind` has one class (named by
//! the engine, the same in every front).

use loghose::emulator::EmbeddedError;
use loghose::producer::{ProducerError, RecordError};
use pyo3::prelude::*;

/// Raises the exception class `name` of `loghose.errors` with `message`.
pub(crate) fn raise(py: Python<'_>, name: &str, message: String) -> PyErr {
    let made = py
        .import("loghose.errors")
        .and_then(|m| m.getattr(name))
        .and_then(|cls| cls.call1((message.clone(),)));
    match made {
        Ok(instance) => PyErr::from_value(instance),
        Err(e) => e,
    }
}

pub(crate) fn producer_error(py: Python<'_>, e: ProducerError) -> PyErr {
    raise(py, e.kind().class_name(), e.to_string())
}

pub(crate) fn emulator_error(py: Python<'_>, e: EmbeddedError) -> PyErr {
    raise(py, e.kind().class_name(), e.to_string())
}

/// Why a record could not be read: a field the engine refuses, or a Python error (a value of
/// the wrong type, an exception raised by a conversion).
pub(crate) enum FillError {
    Record(RecordError),
    Python(PyErr),
}

impl From<RecordError> for FillError {
    fn from(e: RecordError) -> Self {
        FillError::Record(e)
    }
}

impl From<PyErr> for FillError {
    fn from(e: PyErr) -> Self {
        FillError::Python(e)
    }
}

impl FillError {
    pub(crate) fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            FillError::Record(e) => producer_error(py, ProducerError::Record(e)),
            FillError::Python(e) => e,
        }
    }
}
