//! The producer: applications hand it records; it batches them per destination, compresses,
//! signs and sends them, retries what fails, and reports every batch's final outcome.
//!
//! # Data path, in order
//!
//! 1. **add** ([`Producer::send`] and friends, on the caller's thread): the record's
//!    destination is resolved (`routing`) and its time taken.
//! 2. **batch** (`accumulator`): the record is encoded straight at the end of its
//!    destination's open batch (`encode`) and its bytes reserved from the memory budget
//!    (`budget`); a full budget fails the add at once or blocks it up to `max_block_ms`.
//! 3. **seal**: on `batch_max_bytes`, `batch_max_count`, the linger deadline (`deadlines`),
//!    `flush` or `close`; the group's tail and `__pack_id__` are appended.
//! 4. **compress, sign, send** (`deliver`, on the shared I/O runtime, `engine`): at most
//!    `send_concurrency` batches at a time, through the `transport`.
//! 5. **retry** by the answer's class (`retry`), with backoff, until delivered or given up.
//! 6. **report**: every batch settles once — counted (`tally`), its memory released, its
//!    completions resolved, its [`DeliveryReport`] handed to the callback on the producer's
//!    own thread (`reporter`; it runs only while there are reports to pass on).
//!
//! With a spool (`spool`), what an earlier producer left there is queued again by a
//! `loghose-replay` thread as room in the budget allows, so the constructor never waits for
//! deliveries; `flush` and `close` wait for that thread within their timeouts. While it runs,
//! the producer looks every second for slots of the same `spool_dir` whose producer died
//! (`watch_orphans`) and replays them the same way.
//!
//! # Guarantees
//!
//! - Memory is bounded by `buffer_max_bytes` (`budget`).
//! - Nothing is lost silently: a record is either refused by `send` (with a typed error, and
//!   counted as dropped or invalid) or accepted, and every accepted record ends in exactly one
//!   delivery report, delivered or failed (counted by code).
//! - `__pack_id__` (`PREFIX-SEQ`, SEQ the batch's number) stays the same across retries.
//! - `flush` and `close` are bounded by their timeout, idempotent, and safe from any thread;
//!   dropping a producer closes it within `drop_timeout_ms`. The lifecycle is one [`State`].

mod accumulator;
mod add;
mod binding;
mod budget;
mod buffer;
mod clock;
mod concurrency;
mod config;
mod deadlines;
mod deliver;
mod encode;
mod engine;
mod error;
mod handle;
mod lifecycle;
pub(crate) mod meters;
mod record_set;
mod replay;
mod report;
mod reporter;
mod retry;
mod routing;
mod spool;
mod tally;

mod text;
mod transport;
mod undelivered;

pub use concurrency::SendLimit;
pub use config::{
    ConcurrencyMode, ConfigError, ProducerConfig, SignatureVersion, SpoolSync, TimePrecision,
};
pub use encode::{LogEncoder, RecordError};
pub use error::{ErrorKind, ProducerError};
pub use handle::{CloseReport, FlushReport, Producer};
pub use lifecycle::State;
pub use record_set::RecordSet;
pub use report::{
    Completion, CompletionError, DeliveryReport, Outcome, Stats, Track, KEPT_IN_SPOOL,
};
pub use reporter::ReportCallback;
pub use routing::SendOptions;
pub use spool::SpoolError;
pub use transport::CredentialsProvider;

/// What only the Python and Node bindings (and the repository's own tools) use: the scratch
/// adds for values that may run foreign code, the table of options as each front spells it,
/// the views and warnings they hand to their languages, the number formats they share.
/// Hidden from the documentation, so that it shows an application's API alone; not part of
/// the API and free to change with the bindings.
#[doc(hidden)]
pub mod bindings {
    pub use super::binding::{BindingAdds, InPlaceAdd, ScratchError};
    pub use super::buffer::BatchBuf;
    pub use super::config::{
        Front, FrontOption, OptionKind, OptionSpec, Unit, FRONT_OPTIONS, OPTIONS,
    };
    pub use super::encode::check_keys;
    pub use super::engine::process_id;
    pub use super::report::ReportView;
    pub use super::routing::split_unix_seconds;
    pub use super::text::float_text;
    pub use super::undelivered::{Failure, UndeliveredWarnings, Warning};
}
