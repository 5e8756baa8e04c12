//! The Node.js addon: the thin napi-rs layer between JavaScript and the engine. All producer
//! logic lives in the engine; one file per concept:
//!
//! - `producer`: `NativeProducer` (sends, flush and close on the libuv pool, reports as
//!   JSON through a weak thread-safe function, an environment cleanup hook).
//! - `fields`: the per-record fast path, a raw Node-API function bound to one producer.
//! - `record`: records given as JSON, the general path.
//! - `pino`: pino's JSON lines, parsed into logs here.
//! - `emulator`: `NativeEmulator`, the engine's embedded emulator.
//! - `errors`: errors raised as instances of the facade's classes, with their `code`.
//! - `views`: stats, reports and the emulator's answers as plain objects, with their types.

pub mod bench;
mod emulator;
mod errors;
mod fields;
mod pino;
mod producer;
mod record;
mod views;
mod warnings;

use napi::Result;
use napi_derive::napi;

/// A benchmark's rows (JSON: a list of rows, each a list of `[column, value]` pairs) as
/// markdown tables, one per shape of row: the engine's one table writer for every front.
#[napi]
pub fn bench_markdown(env: napi::Env, rows_json: String) -> Result<String> {
    use errors::RaiseIn as _;
    loghose_lab::markdown_tables_json(&rows_json)
        .map_err(|e| errors::Raised::type_error(format!("benchmark rows: {e}")))
        .raise_in(&env)
}

/// The version of the Rust engine this addon was built from.
/// The `loghose` command on a libuv pool thread, so the event loop stays free for the
/// process's own SIGINT/SIGTERM listeners (which call [`cli_stop`]).
pub struct CliTask(Vec<String>);

impl napi::Task for CliTask {
    type Output = u32;
    type JsValue = u32;

    fn compute(&mut self) -> Result<u32> {
        Ok(u32::from(loghose::cli::main(std::mem::take(&mut self.0))))
    }

    fn resolve(&mut self, _env: napi::Env, output: u32) -> Result<u32> {
        Ok(output)
    }
}

/// Runs the `loghose` command (`send`, `pipe`, `emulator`) with `argv` (the program name
/// first); resolves with its exit status. Node keeps the signals: the command installs no
/// handler and stops when `cliStop` is called.
#[napi(ts_return_type = "Promise<number>")]
pub fn cli_main(argv: Vec<String>) -> napi::bindgen_prelude::AsyncTask<CliTask> {
    loghose::cli::use_host_signals();
    napi::bindgen_prelude::AsyncTask::new(CliTask(argv))
}

/// Stops a running `cliMain` as SIGTERM would: what it holds is delivered, then it ends.
#[napi]
pub fn cli_stop() {
    loghose::cli::request_stop();
}

/// Ends the command (as `cliStop` does) when the process's parent ends (Linux): for a
/// command started by `npx`, whose SIGTERM ends npm and its shell but not the command.
#[napi]
pub fn cli_stop_with_parent() -> bool {
    loghose::cli::stop_with_parent()
}

/// The engine's metric table (`loghose::metrics::METRICS`) as JSON: name, type, unit, help,
/// labels of each metric, in the order a snapshot lists them.
#[napi]
pub fn metric_table_json() -> String {
    serde_json::to_string(loghose::metrics::METRICS).unwrap_or_else(|_| "[]".into())
}

#[napi]
pub fn engine_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The options a preset sets, as JSON with the engine's (snake_case) names: the engine holds
/// the values.
#[napi]
pub fn preset_options_json(env: napi::Env, name: String) -> Result<String> {
    use errors::RaiseIn;
    loghose::producer::ProducerConfig::preset_options_json(&name).raise_in(&env)
}

/// S6's payload: `size` bytes of seeded access-log text, the same in every harness.
#[napi]
pub fn bench_payload(size: u32) -> String {
    loghose_lab::s6_payload(size as usize)
}

/// S1-R's pool of records as the C driver reads it (a record a line, `key=value` fields
/// separated by tabs): the same records in every harness.
#[napi]
pub fn bench_s1r_pool() -> String {
    loghose_lab::S1RWorkload::default().pool_lines()
}

/// `data` compressed with `codec` (`none`, `lz4`, `zstd` or `deflate`) exactly as the producer
/// compresses a batch body: what the S6 benchmark times per codec.
#[napi]
pub fn compress(
    codec: String,
    data: napi::bindgen_prelude::Buffer,
) -> Result<napi::bindgen_prelude::Buffer> {
    let codec = loghose::wire::compress::Compression::from_name(&codec)
        .map_err(|e| napi::Error::new(napi::Status::InvalidArg, e.to_string()))?;
    loghose::wire::compress::compress(codec, &data)
        .map(Into::into)
        .map_err(|e| napi::Error::new(napi::Status::GenericFailure, e.to_string()))
}
