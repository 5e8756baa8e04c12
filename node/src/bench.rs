//! The benchmark harness's native side for `node/bench.js` (`loghose_lab::harness`, shared
//! with the Python front and the Rust examples): the emulator child, the exactly-once check,
//! the process figures and the rows. Runs on the JavaScript thread and blocks it (the meter's
//! admin requests, a few per run, after the run's work is over); meant for the benchmark's
//! child process only.

use napi::{Env, Result};
use napi_derive::napi;

use crate::errors::{RaiseIn as _, Raised};

fn failed(what: &str, e: impl std::fmt::Display) -> Raised {
    Raised::new("Error", format!("{what}: {e}"))
}

/// The process's CPU time and memory now (JSON: `cpu_seconds`, `rss_mb`, `anon_mb`,
/// `peak_rss_mb`, `threads`).
#[napi]
pub fn bench_process_sample() -> String {
    loghose_lab::harness::process_sample_json()
}

/// The median of `values` (the mean of the middle two of an even count), null when empty.
#[napi]
pub fn bench_median(values: Vec<f64>) -> Option<f64> {
    loghose_lab::harness::median(&values)
}

/// The `q` quantile of `values` (nearest rank), null when empty.
#[napi]
pub fn bench_percentile(values: Vec<f64>, q: f64) -> Option<f64> {
    loghose_lab::harness::percentile(&values, q)
}

/// The least-squares slope of `values` against their index.
#[napi]
pub fn bench_slope(values: Vec<f64>) -> f64 {
    loghose_lab::harness::slope(&values)
}

/// The emulator child's side: the emulator at nice 10, its endpoint and keys printed as a
/// JSON line, served until stdin closes (blocks this process's thread: the child does nothing
/// else).
#[napi]
pub fn bench_serve_emulator(env: Env, retention_bytes: f64) -> Result<()> {
    loghose_lab::harness::serve_emulator_child(retention_bytes as usize)
        .map_err(|e| failed("the benchmark emulator", e))
        .raise_in(&env)
}

/// One run's measure: the exactly-once check of its logstore and the process's CPU time and
/// memory; its rows as JSON (lists of `[column, value]` pairs).
#[napi]
pub struct BenchMeter(loghose_lab::harness::Meter);

#[napi]
impl BenchMeter {
    #[napi(constructor)]
    pub fn new(env: Env, endpoint: String, project: String, logstore: String) -> Result<Self> {
        loghose_lab::harness::Meter::start(&endpoint, &project, &logstore)
            .map(BenchMeter)
            .map_err(|e| failed("the benchmark emulator", e))
            .raise_in(&env)
    }

    /// The run's work begins now.
    #[napi]
    pub fn begin(&mut self) {
        self.0.begin();
    }

    /// The run's work is over.
    #[napi]
    pub fn stop(&mut self) {
        self.0.stop();
    }

    /// The check of `sent` logs (JSON).
    #[napi]
    pub fn counted(&self, env: Env, sent: f64) -> Result<String> {
        self.0
            .counted_json(sent as u64)
            .map_err(|e| failed("the benchmark check", e))
            .raise_in(&env)
    }

    /// The row of a rate run (JSON, snake_case).
    #[napi]
    pub fn rate_row(&mut self, env: Env, run_json: String) -> Result<String> {
        self.0
            .rate_row_json(&run_json)
            .map_err(Raised::type_error)
            .raise_in(&env)
    }

    /// The row of an unthrottled run (JSON, snake_case).
    #[napi]
    pub fn unthrottled_row(&mut self, env: Env, run_json: String) -> Result<String> {
        self.0
            .unthrottled_row_json(&run_json)
            .map_err(Raised::type_error)
            .raise_in(&env)
    }
}
