//! The benchmark harness's native half, for `loghose.bench` (not API): the workloads every
//! front shares (S1-R's pool, S6's payload), the codecs as the producer runs them, and the
//! measure of a run (`loghose_lab::harness`: the exactly-once check at the emulator, the
//! process's CPU and memory, the rows and their markdown). Long calls release the GIL.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Adds the harness's functions and `BenchMeter` to the module.
pub(crate) fn add_to(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(bench_markdown, m)?)?;
    m.add_function(wrap_pyfunction!(compress, m)?)?;
    m.add_function(wrap_pyfunction!(bench_payload, m)?)?;
    m.add_function(wrap_pyfunction!(bench_s1r_pool, m)?)?;
    m.add_function(wrap_pyfunction!(bench_process_sample, m)?)?;
    m.add_function(wrap_pyfunction!(bench_percentile, m)?)?;
    m.add_function(wrap_pyfunction!(bench_slope, m)?)?;
    m.add_function(wrap_pyfunction!(bench_serve_emulator, m)?)?;
    m.add_class::<BenchMeter>()?;
    Ok(())
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
    loghose_lab::s6_payload(size)
}

/// S1-R's pool of records as the C driver reads it (a record a line, `key=value` fields
/// separated by tabs): the same records in every harness.
#[pyfunction]
fn bench_s1r_pool() -> String {
    loghose_lab::S1RWorkload::default().pool_lines()
}

/// A benchmark's rows (JSON: a list of rows, each a list of `[column, value]` pairs) as
/// markdown tables, one per shape of row: the engine's one table writer for every front.
#[pyfunction]
fn bench_markdown(rows_json: &str) -> PyResult<String> {
    loghose_lab::markdown_tables_json(rows_json)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("benchmark rows: {e}")))
}

/// The process's CPU time and memory now (JSON: `cpu_seconds`, `rss_mb`, `anon_mb`,
/// `peak_rss_mb`, `threads`), as every front's benchmark harness reads them.
#[pyfunction]
fn bench_process_sample() -> String {
    loghose_lab::harness::process_sample_json()
}

/// The `q` quantile of `values` (nearest rank), None when empty.
#[pyfunction]
fn bench_percentile(values: Vec<f64>, q: f64) -> Option<f64> {
    loghose_lab::harness::percentile(&values, q)
}

/// The least-squares slope of `values` against their index.
#[pyfunction]
fn bench_slope(values: Vec<f64>) -> f64 {
    loghose_lab::harness::slope(&values)
}

/// The benchmark emulator child's side: the emulator at nice 10, its endpoint and keys printed
/// as a JSON line, served until stdin closes (the GIL released).
#[pyfunction]
fn bench_serve_emulator(py: Python<'_>, retention_bytes: usize) -> PyResult<()> {
    py.detach(|| loghose_lab::harness::serve_emulator_child(retention_bytes))
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
}

/// One benchmark run's measure (`loghose_lab::harness::Meter`): the exactly-once check of
/// its logstore at the emulator and the process's CPU time and memory; its rows as JSON.
#[pyclass(module = "loghose._native")]
struct BenchMeter(loghose_lab::harness::Meter);

#[pymethods]
impl BenchMeter {
    #[new]
    fn new(py: Python<'_>, endpoint: &str, project: &str, logstore: &str) -> PyResult<Self> {
        py.detach(|| loghose_lab::harness::Meter::start(endpoint, project, logstore))
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
