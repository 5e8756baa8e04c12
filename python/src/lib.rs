//! Native module `loghose._native`: the thin pyo3 layer between Python and the engine.
//!
//! It converts Python values to engine calls and engine results to Python objects; all
//! producer logic lives in the engine. One file per concept:
//!
//! - [`producer`]: `NativeProducer` and its per-record fastcall entry; every wait releases the
//!   GIL and checks for signals.
//! - [`record`]: reading dicts and pairs of Python values into the engine's encoder.
//! - [`report`]: `DeliveryReport`, a read-only view of the engine's report.
//! - [`emulator`]: `NativeEmulator`, the engine's embedded emulator.
//! - [`errors`]: the engine's error kinds raised as `loghose.errors` classes.
//!
//! Report callbacks run on the producer's reporter thread, which attaches to Python once per
//! batch of reports; an exception raised by the callback is caught and logged there, never
//! crosses into Rust, and the producer lives on. A producer used in a forked child raises
//! `LoghoseError` (its I/O threads live in the parent); a new producer made in the child works.

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
use pyo3::types::PyBytes;

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

/// `data` compressed with `codec` (`none`, `lz4`, `zstd` or `deflate`) exactly as the producer
/// compresses a batch body, the GIL released: what the S6 benchmark times per codec.
#[pyfunction]
fn compress<'py>(py: Python<'py>, codec: &str, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let codec = loghose::wire::compress::Compression::from_name(codec)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    let out = py
        .detach(|| loghose::wire::compress::compress(codec, data))
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    Ok(PyBytes::new(py, &out))
}

/// S6's payload: `size` bytes of seeded access-log text, the same in every harness.
#[pyfunction]
fn bench_payload(size: usize) -> String {
    loghose::bench::s6_payload(size)
}

/// S1-R's pool of records as the C driver reads it (a record a line, `key=value` fields
/// separated by tabs): the same records in every harness.
#[pyfunction]
fn bench_s1r_pool() -> String {
    loghose::bench::S1RWorkload::default().pool_lines()
}

/// A benchmark's rows (JSON: a list of rows, each a list of `[column, value]` pairs) as
/// markdown tables, one per shape of row: the engine's one table writer for every front.
#[pyfunction]
fn bench_markdown(rows_json: &str) -> PyResult<String> {
    loghose::bench::markdown_tables_json(rows_json)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("benchmark rows: {e}")))
}

/// The process's CPU time and memory now (JSON: `cpu_seconds`, `rss_mb`, `anon_mb`,
/// `peak_rss_mb`, `threads`), as every front's benchmark harness reads them.
#[pyfunction]
fn bench_process_sample() -> String {
    loghose::bench::harness::process_sample_json()
}

/// The `q` quantile of `values` (nearest rank), None when empty.
#[pyfunction]
fn bench_percentile(values: Vec<f64>, q: f64) -> Option<f64> {
    loghose::bench::harness::percentile(&values, q)
}

/// The least-squares slope of `values` against their index.
#[pyfunction]
fn bench_slope(values: Vec<f64>) -> f64 {
    loghose::bench::harness::slope(&values)
}

/// The benchmark emulator child's side: the emulator at nice 10, its endpoint and keys printed
/// as a JSON line, served until stdin closes (the GIL released).
#[pyfunction]
fn bench_serve_emulator(py: Python<'_>, retention_bytes: usize) -> PyResult<()> {
    py.detach(|| loghose::bench::harness::serve_emulator_child(retention_bytes))
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
}

/// One benchmark run's measure (`loghose::bench::harness::Meter`): the exactly-once check of
/// its logstore at the emulator and the process's CPU time and memory; its rows as JSON.
#[pyclass(module = "loghose._native")]
struct BenchMeter(loghose::bench::harness::Meter);

#[pymethods]
impl BenchMeter {
    #[new]
    fn new(py: Python<'_>, endpoint: &str, project: &str, logstore: &str) -> PyResult<Self> {
        py.detach(|| loghose::bench::harness::Meter::start(endpoint, project, logstore))
            .map(BenchMeter)
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
    }

    /// The run's work begins now.
    fn begin(&mut self) {
        self.0.begin();
    }

    /// The run's work is over.
    fn stop(&mut self) {
        self.0.stop();
    }

    /// The check of `sent` logs (JSON).
    fn counted(&self, py: Python<'_>, sent: u64) -> PyResult<String> {
        py.detach(|| self.0.counted_json(sent))
            .map_err(pyo3::exceptions::PyOSError::new_err)
    }

    /// The row of a rate run (JSON in, JSON pairs out).
    fn rate_row(&mut self, py: Python<'_>, run_json: &str) -> PyResult<String> {
        let meter = &mut self.0;
        py.detach(|| meter.rate_row_json(run_json))
            .map_err(pyo3::exceptions::PyValueError::new_err)
    }

    /// The row of an unthrottled run (JSON in, JSON pairs out).
    fn unthrottled_row(&mut self, py: Python<'_>, run_json: &str) -> PyResult<String> {
        let meter = &mut self.0;
        py.detach(|| meter.unthrottled_row_json(run_json))
            .map_err(pyo3::exceptions::PyValueError::new_err)
    }
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
    m.add_function(wrap_pyfunction!(bench_markdown, m)?)?;
    m.add_function(wrap_pyfunction!(compress, m)?)?;
    m.add_function(wrap_pyfunction!(bench_payload, m)?)?;
    m.add_function(wrap_pyfunction!(bench_s1r_pool, m)?)?;
    m.add_function(wrap_pyfunction!(bench_process_sample, m)?)?;
    m.add_function(wrap_pyfunction!(bench_percentile, m)?)?;
    m.add_function(wrap_pyfunction!(bench_slope, m)?)?;
    m.add_function(wrap_pyfunction!(bench_serve_emulator, m)?)?;
    m.add_class::<BenchMeter>()?;
    m.add_function(wrap_pyfunction!(arm_signal, m)?)?;
    m.add_function(wrap_pyfunction!(signal_handler_started, m)?)?;
    m.add_class::<producer::NativeProducer>()?;
    m.add_class::<keyed::KeyedSender>()?;
    m.add_class::<emulator::NativeEmulator>()?;
    m.add_class::<report::PyDeliveryReport>()?;
    m.add_class::<report::PyUndeliveredWarnings>()?;
    Ok(())
}
