//! A local server that behaves like the SLS PutLogs endpoint, for tests, benchmarks and
//! offline development.
//!
//! [`Emulator::start`] binds `127.0.0.1` (a free port by default) and serves on a runtime of
//! its own, so it can be started from any thread, from a tokio task, or from the Python and
//! Node bindings. It verifies what the service verifies (signatures v1/v4/bearer, STS tokens,
//! date skew, Content-MD5, raw size, compression, log contents; see [`service`]), stores what
//! it accepts per project/logstore/shard within a retention budget, serves it back through
//! [`Emulator::logs`], the `/_emulator/` JSON API and the SLS read APIs, counts everything, and
//! injects faults on demand ([`faults`]).
//!
//! Dropping the emulator stops it: the listener closes before `drop` returns (so the port can
//! be bound again at once), connections end shortly after.

mod catalog;
mod config;
pub mod embedded;
pub mod error;
pub mod faults;
mod instance;
mod network;
mod quotas;
mod search;
mod server;
pub mod service;
pub mod store;
pub(crate) mod stored;
mod term_index;

pub use config::{
    AccessKey, EmulatorConfig, EmulatorTls, StsKey, DEFAULT_ACCESS_KEY_ID,
    DEFAULT_ACCESS_KEY_SECRET, DEFAULT_PROJECT,
};
pub use embedded::{EmbeddedEmulator, EmbeddedError};
pub use error::{ApiError, EmulatorError};
pub use faults::{Fault, FaultAction};
pub use instance::Emulator;
pub use network::NetworkConfig;
pub use quotas::QuotaConfig;
pub use server::raise_open_file_limit;
pub use service::identity::ECS_ROLE_NAME;
pub use service::{Counters, Service};
pub use store::{LogstoreTotals, StoredLog};
