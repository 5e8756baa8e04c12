//! What the Rust logging integrations share ([`crate::logger`] for `log`,
//! [`crate::tracing_layer`] for `tracing`): the once-per-kind word on stderr about refused
//! records, and [`LogGuard`], which delivers what is pending at the end of `main`. Any thread.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::producer::{CloseReport, ErrorKind, Producer, ProducerError};

/// Says on stderr, once per kind of error, that a record was refused (the producer counts
/// every one in its stats).
#[derive(Default)]
pub(crate) struct Refusals {
    /// Kinds already said (one bit per [`ErrorKind`] seen).
    said: AtomicU32,
}

impl Refusals {
    pub(crate) fn refused(&self, error: &ProducerError) {
        let bit = 1u32 << (error.kind() as u32 % 32);
        if self.said.fetch_or(bit, Ordering::Relaxed) & bit == 0 {
            let counted = match error.kind() {
                ErrorKind::BufferFull => "dropped",
                _ => "invalid",
            };
            eprintln!(
                "loghose: a log record was not sent: {error} (counted in the producer's stats as \
                 {counted}; said once per kind of error)"
            );
        }
    }
}

/// Delivers what the logger's producer holds when dropped (at the end of `main`), within the
/// close timeout; says on stderr what was not delivered.
#[must_use = "dropped at once, it closes the producer at once"]
pub struct LogGuard {
    producer: Option<Arc<Producer>>,
    close_timeout: Duration,
}

impl LogGuard {
    pub(crate) fn new(producer: Arc<Producer>, close_timeout: Duration) -> LogGuard {
        LogGuard {
            producer: Some(producer),
            close_timeout,
        }
    }

    /// Closes the producer now and answers what was not delivered (records logged after it
    /// are refused, and said once on stderr).
    pub fn close(mut self) -> CloseReport {
        self.producer
            .take()
            .map(|p| p.close(self.close_timeout))
            .unwrap_or_default()
    }
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        let Some(producer) = self.producer.take() else {
            return;
        };
        let report = producer.close(self.close_timeout);
        if report.undelivered > 0 {
            eprintln!(
                "loghose: {} log record(s) not delivered at exit",
                report.undelivered
            );
        }
    }
}
