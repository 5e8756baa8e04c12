//! loghose: a log producer for Alibaba Cloud Log Service (SLS, "LogHub"), and a local
//! SLS-compatible emulator to develop and test against offline.
//!
//! The crate is organised along the data path:
//!
//! 1. [`wire`] — everything that crosses the network: the protobuf messages, the four body
//!    codecs, request signing (v1, v4, bearer), hash-key routing, the service's limits, and a
//!    borrowing validator that checks a `LogGroup` without allocating. The producer and the
//!    emulator share it, so both ends speak exactly the same protocol.
//! 2. [`emulator`] — a local server that accepts PutLogs as the real service does (verifying
//!    signatures, dates, digests, compression and contents), stores what it accepts, serves it
//!    back through its own JSON API and the SLS read APIs, and injects faults on demand.
//!
//! 3. [`producer`] — the engine: batching per destination, bounded memory, sending on a shared
//!    runtime, retries by error class, delivery reports and per-record completions.
//!
//! Features: `log` and `tracing` (on by default) add the [`logger`] and [`tracing_layer`]
//! integrations; `emulator`, `cli` (the command, hidden from the documentation: the fronts run
//! it) and `prometheus` are named by the tools and fronts that want them.
#![deny(missing_docs)]

#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
mod credentials;
#[cfg(feature = "emulator")]
pub mod emulator;
#[cfg(feature = "emulator")]
mod emulator_bridge;
#[cfg(any(feature = "log", feature = "tracing"))]
mod integration;
#[cfg(feature = "log")]
pub mod logger;
pub mod metrics;
pub mod producer;
mod threads;
#[cfg(feature = "tracing")]
pub mod tracing_layer;
pub mod wire;

/// The README's Rust code blocks, run as doctests: each must work as pasted.
#[cfg(all(doctest, feature = "emulator"))]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// The Rust guide's code blocks (docs/guides/rust.md), run as doctests: each must work as
/// pasted.
#[cfg(all(doctest, feature = "emulator", feature = "log", feature = "tracing"))]
#[doc = include_str!("../../docs/guides/rust.md")]
pub struct RustGuideDoctests;
