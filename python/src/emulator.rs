//! `NativeEmulator`: the engine's embedded emulator, held for `loghose.Emulator`. Blocking
//! calls (start, close) release the GIL.

use loghose::emulator::EmbeddedEmulator;
use pyo3::prelude::*;

use crate::errors::emulator_error;

/// The embedded emulator behind `loghose.Emulator`.
#[pyclass(frozen, module = "loghose._native", name = "NativeEmulator")]
pub(crate) struct NativeEmulator(EmbeddedEmulator);

#[pymethods]
impl NativeEmulator {
    #[new]
    fn new(py: Python<'_>, config_json: &str) -> PyResult<Self> {
        py.detach(|| EmbeddedEmulator::start_json(config_json))
            .map(NativeEmulator)
            .map_err(|e| emulator_error(py, e))
    }

    #[getter]
    fn endpoint(&self) -> &str {
        self.0.endpoint()
    }

    #[getter]
    fn access_key_id(&self) -> &str {
        self.0.access_key_id()
    }

    #[getter]
    fn access_key_secret(&self) -> &str {
        self.0.access_key_secret()
    }

    /// Stored logs of a logstore, as JSON.
    fn logs_json(&self, py: Python<'_>, project: &str, logstore: &str) -> PyResult<String> {
        self.0
            .logs_json(project, logstore)
            .map_err(|e| emulator_error(py, e))
    }

    /// Exact totals of a logstore, as JSON (null if it does not exist).
    fn totals_json(&self, py: Python<'_>, project: &str, logstore: &str) -> PyResult<String> {
        self.0
            .totals_json(project, logstore)
            .map_err(|e| emulator_error(py, e))
    }

    /// Counters, as JSON.
    fn counters_json(&self, py: Python<'_>) -> PyResult<String> {
        self.0.counters_json().map_err(|e| emulator_error(py, e))
    }

    /// Adds a fault rule given as JSON (see the emulator's /_emulator/faults).
    fn inject_json(&self, py: Python<'_>, fault_json: &str) -> PyResult<()> {
        self.0
            .inject_json(fault_json)
            .map_err(|e| emulator_error(py, e))
    }

    /// Replaces the temporary (STS) keys (JSON list of `{"id", "secret", "token"}`).
    fn replace_sts_keys_json(&self, py: Python<'_>, keys_json: &str) -> PyResult<()> {
        self.0
            .replace_sts_keys_json(keys_json)
            .map_err(|e| emulator_error(py, e))
    }

    fn clear_faults(&self, py: Python<'_>) -> PyResult<()> {
        self.0.clear_faults().map_err(|e| emulator_error(py, e))
    }

    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        self.0.reset().map_err(|e| emulator_error(py, e))
    }

    #[pyo3(signature = (project, logstore, shards=None))]
    fn create_logstore(
        &self,
        py: Python<'_>,
        project: &str,
        logstore: &str,
        shards: Option<u32>,
    ) -> PyResult<()> {
        self.0
            .create_logstore(project, logstore, shards)
            .map_err(|e| emulator_error(py, e))
    }

    /// Stops serving (idempotent).
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.0.close());
    }
}
