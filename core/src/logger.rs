//! The `log` crate's records into a producer (feature `log`): [`LoghoseLogger`] implements
//! [`log::Log`], so `log::info!` and every library that logs through `log` send to Log Service.
//!
//! Each record becomes one log, written straight into the open batch (the producer's plain add,
//! no copy of its fields): `level`, `target`, `message`, then `module`, `file` and `line` when
//! known, then the record's key-values (`log::info!(user = "bob"; "login")`), each as its
//! `Display` text. The caller's thread only encodes and queues; it waits only where the
//! producer is configured to (`max_block_ms` with a full buffer). A record the producer refuses
//! (a full buffer, a reserved or invalid key) is counted in the producer's stats (`dropped`,
//! `invalid`) and said once on stderr per kind of refusal: never silent, never a panic in the
//! caller. Records logged on the engine's I/O threads (its HTTP client's) or an embedded
//! emulator's are not sent: each would cost a request that logs again.
//! [`LoghoseLogger::install`] sets it as the process's logger and answers a [`LogGuard`] that
//! delivers what is pending when dropped (at the end of `main`).

use std::cell::RefCell;
use std::fmt::Write as _;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

pub use crate::integration::LogGuard;
use crate::integration::Refusals;
use crate::producer::Producer;

/// A `log::Log` that sends every enabled record through a producer.
pub struct LoghoseLogger {
    producer: Arc<Producer>,
    level: log::LevelFilter,
    refusals: Refusals,
}

impl LoghoseLogger {
    /// Sends records at `Info` and above through `producer`.
    pub fn new(producer: Arc<Producer>) -> LoghoseLogger {
        LoghoseLogger {
            producer,
            level: log::LevelFilter::Info,
            refusals: Refusals::default(),
        }
    }

    /// Sends records at `level` and above.
    pub fn with_level(mut self, level: log::LevelFilter) -> LoghoseLogger {
        self.level = level;
        self
    }

    /// The producer it sends through.
    pub fn producer(&self) -> &Arc<Producer> {
        &self.producer
    }

    /// Makes this the process's logger (and its level `log`'s maximum); the guard delivers
    /// what is pending when dropped, within `close_timeout`. Fails when a logger is set.
    pub fn install(self, close_timeout: Duration) -> Result<LogGuard, log::SetLoggerError> {
        let producer = self.producer.clone();
        let level = self.level;
        log::set_boxed_logger(Box::new(self))?;
        log::set_max_level(level);
        Ok(LogGuard::new(producer, close_timeout))
    }
}

thread_local! {
    /// Per thread text of the record being written (its message, a key-value's text).
    static TEXT: RefCell<(String, String)> = const { RefCell::new((String::new(), String::new())) };
}

impl log::Log for LoghoseLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        // What the engine's own threads log (the HTTP client sending a batch, the emulator
        // serving one) would come back as another request each: left to other loggers.
        metadata.level() <= self.level && !crate::threads::is_engine_thread()
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let sent = TEXT.with(|text| {
            // A logger called while this thread's text is in use (a `Display` that logs) uses
            // fresh strings rather than panicking.
            let mut fresh = (String::new(), String::new());
            let mut borrowed = text.try_borrow_mut();
            let (message, value) = match &mut borrowed {
                Ok(t) => {
                    let t: &mut (String, String) = t;
                    (&mut t.0, &mut t.1)
                }
                Err(_) => (&mut fresh.0, &mut fresh.1),
            };
            // Everything that runs the application's code (the message's and the key-values'
            // `Display`) is rendered first: a `Display` that logs, or takes its time, must not
            // run while the add holds the batch.
            message.clear();
            let _ = write!(message, "{}", record.args());
            value.clear();
            let line = record.line().map(|line| {
                let _ = write!(value, "{line}");
                0..value.len()
            });
            let mut pairs = Vec::new();
            let _ = record.key_values().visit(&mut Render {
                text: value,
                pairs: &mut pairs,
            });
            let value = &*value;
            self.producer.add_with(|log| {
                log.field_str("level", record.level().as_str())?;
                log.field_str("target", record.target())?;
                log.field_str("message", message)?;
                if let Some(module) = record.module_path() {
                    log.field_str("module", module)?;
                }
                if let Some(file) = record.file() {
                    log.field_str("file", file)?;
                }
                if let Some(line) = line {
                    log.field_str("line", &value[line])?;
                }
                for (key, text) in &pairs {
                    log.field_str(&value[key.clone()], &value[text.clone()])?;
                }
                Ok(())
            })
        });
        if let Err(e) = sent {
            self.refusals.refused(&e);
        }
    }

    fn flush(&self) {
        self.producer.flush(Duration::from_secs(30));
    }
}

/// Renders a record's key-values into one text, each key and value's place in `pairs`.
struct Render<'a> {
    text: &'a mut String,
    pairs: &'a mut Vec<(Range<usize>, Range<usize>)>,
}

impl<'kvs> log::kv::VisitSource<'kvs> for Render<'_> {
    fn visit_pair(
        &mut self,
        key: log::kv::Key<'kvs>,
        value: log::kv::Value<'kvs>,
    ) -> Result<(), log::kv::Error> {
        let key_at = self.text.len();
        self.text.push_str(key.as_str());
        let value_at = self.text.len();
        let _ = write!(self.text, "{value}");
        self.pairs
            .push((key_at..value_at, value_at..self.text.len()));
        Ok(())
    }
}
