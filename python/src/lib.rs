//! Native module `loghose._native`: the thin pyo3 layer between Python and the engine.
//!
//! It converts Python values to engine calls and engine results to Python objects; all
//! producer logic lives in the engine. One file per concept:
//!
//! - `producer`: `NativeProducer` and its per-record fastcall entry; every wait releases the
//!   GIL and checks for signals.
//! - `record`: reading dicts and pairs of Python values into the engine's encoder.
//! - `report`: `DeliveryReport`, a read-only view of the engine's report.
//! - `emulator`: `NativeEmulator`, the engine's embedded emulator.
//! - `errors`: the engine's error kinds raised as `loghose.errors` classes.
//! - `bench`: the engine's benchmark workloads and measures for `loghose.bench`.
//!
//! Report callbacks run on the producer's reporter thread, which attaches to Python once per
//! batch of reports; an exception raised by the callback is caught and logged there, never
//! crosses into Rust, and the producer lives on. A producer used in a forked child raises
//! `LoghoseError` (its I/O threads live in the parent); a new producer made in the child works.

mod bench;
mod emulator;
mod errors;
mod events;
mod keyed;
mod log_record;
mod producer;
mod record;
mod report;
mod signals;

use pyo3::prelude::*;

/// The version of the Rust engine this module was built from.
#[pyfunction]
fn engine_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The engine's metric table (`loghose::metrics::METRICS`) as JSON: name, type, unit, help,
/// labels of each metric, in the order a snapshot lists them.
#[pyfunction]
fn metric_table_json() -> String {
    serde_json::to_string(loghose::metrics::METRICS).unwrap_or_else(|_| "[]".into())
}

/// The options a preset sets, as JSON (the engine holds the values).
#[pyfunction]
fn preset_options_json(py: Python<'_>, name: &str) -> PyResult<String> {
    loghose::producer::ProducerConfig::preset_options_json(name)
        .map_err(|e| errors::raise(py, "ConfigError", e.to_string()))
}

/// Every option's name (the engine's `ProducerConfig`), for checks of the Python spelling.
#[pyfunction]
fn option_names() -> Vec<String> {
    loghose::producer::ProducerConfig::option_names()
}

/// Runs the `loghose` command (`send`, `pipe`, `emulator`) with `argv` (the program name
/// first), the GIL released for all of it; answers its exit status.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| loghose::cli::main(argv))
}

/// Lets the watchdog hear of `signum` (whose previous disposition was the default) and act if
/// the Python handler does not start in time (`signals`); false where it cannot.
#[pyfunction]
fn arm_signal(signum: i32) -> bool {
    #[cfg(unix)]
    return signals::arm(signum);
    #[cfg(not(unix))]
    {
        let _ = signum;
        false
    }
}

/// The Python handler of `signum` has started: the watchdog stands aside, and a further armed
/// signal ends the process at once. True when the watchdog was already delivering (it ends the
/// process; the handler has nothing to do).
#[pyfunction]
fn signal_handler_started(signum: i32) -> bool {
    #[cfg(unix)]
    return signals::python_handler_started(signum);
    #[cfg(not(unix))]
    {
        let _ = signum;
        false
    }
}

/// The `loghose._native` module.
///
/// `gil_used = true`: on a free-threaded CPython (3.14t, 3.15t) importing the module turns the
/// GIL back on, with CPython's warning. The per-record paths read dicts and strings in place,
/// trusting the GIL that no other thread changes them meanwhile (`record.rs`); without it they
/// would need each dict's critical section, and no free-threaded interpreter could be had to
/// test that (see docs/packaging.md). pyo3 assumes `false` unless told.
#[pymodule(gil_used = true)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(engine_version, m)?)?;
    m.add_function(wrap_pyfunction!(log_record::set_log_record_layout, m)?)?;
    m.add_function(wrap_pyfunction!(preset_options_json, m)?)?;
    m.add_function(wrap_pyfunction!(metric_table_json, m)?)?;
    m.add_function(wrap_pyfunction!(option_names, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    bench::add_to(m)?;
    m.add_function(wrap_pyfunction!(arm_signal, m)?)?;
    m.add_function(wrap_pyfunction!(signal_handler_started, m)?)?;
    m.add_class::<producer::NativeProducer>()?;
    m.add_class::<keyed::KeyedSender>()?;
    m.add_class::<emulator::NativeEmulator>()?;
    m.add_class::<report::PyDeliveryReport>()?;
    m.add_class::<report::PyUndeliveredWarnings>()?;
    Ok(())
}
