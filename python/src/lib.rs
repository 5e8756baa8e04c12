//! Native module `loghose._native`: the Python front over the loghose engine.
//!
//! For now it only reports the engine's version; the producer, the emulator and the asyncio
//! bridge are exposed here as the Python package grows. Runs on the calling Python thread.

use pyo3::prelude::*;

/// The version of the Rust engine this module was built from.
#[pyfunction]
fn engine_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The `loghose._native` module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(engine_version, m)?)?;
    Ok(())
}
