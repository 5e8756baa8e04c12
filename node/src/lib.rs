//! The Node.js addon: the thin napi-rs layer between JavaScript and the engine. All producer
//! logic lives in the engine; one file per concept:
//!
//! - [`producer`]: `NativeProducer` (sends, flush and close on the libuv pool, reports as
//!   JSON through a weak thread-safe function, an environment cleanup hook).
//! - [`fields`]: the per-record fast path, a raw Node-API function bound to one producer.
//! - [`record`]: records given as JSON, the general path.
//! - [`pino`]: pino's JSON lines, parsed into logs here.
//! - [`emulator`]: `NativeEmulator`, the engine's embedded emulator.
//! - [`errors`]: engine error kinds as `Class|message` errors the facade turns into classes.

mod emulator;
mod errors;
mod fields;
mod pino;
mod producer;
mod record;

use napi::Result;
use napi_derive::napi;

/// The version of the Rust engine this addon was built from.
#[napi]
pub fn engine_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The options a preset sets, as JSON with the engine's (snake_case) names: the engine holds
/// the values.
#[napi]
pub fn preset_options_json(name: String) -> Result<String> {
    loghose::producer::ProducerConfig::preset_options_json(&name)
        .map_err(|e| errors::producer_error(e.into()))
}
