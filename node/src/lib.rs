//! The Node.js addon: the JavaScript front over the loghose engine.
//!
//! For now it only reports the engine's version; the producer, the emulator and the
//! ThreadsafeFunction report bridge are exposed here as the Node package grows. Runs on the
//! JavaScript thread.

use napi_derive::napi;

/// The version of the Rust engine this addon was built from.
#[napi]
pub fn engine_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
