//! The reporter: the producer's own thread that hands delivery reports to the caller's
//! callback, in batches (up to 4096 reports per call), never on the I/O runtime.
//!
//! Reports are queued without bound (one per batch, so a few per second at most rates); the
//! thread drains what has arrived and calls the callback once. A callback that panics is
//! counted and the thread goes on. [`Reporter::finish`] closes the queue and joins the thread
//! with a timeout: a callback that hangs delays `close` by at most that timeout, then the
//! thread is left to end on its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::error::ProducerError;
use super::report::DeliveryReport;

/// A report callback: receives reports in batches on the producer's reporter thread.
pub type ReportCallback = Box<dyn FnMut(&[Arc<DeliveryReport>]) + Send>;

/// Most reports handed to one callback call.
const MAX_REPORTS_PER_CALL: usize = 4096;

/// The reporter thread, or nothing when there is no callback.
#[derive(Default)]
pub(crate) struct Reporter {
    queue: Mutex<Option<mpsc::Sender<Arc<DeliveryReport>>>>,
    thread: Mutex<Option<Worker>>,
    /// Callback calls that panicked.
    pub(crate) callback_errors: Arc<AtomicU64>,
}

struct Worker {
    handle: std::thread::JoinHandle<()>,
    /// Disconnects when the thread ends: `finish` waits on it with a timeout.
    ended: mpsc::Receiver<()>,
}

impl Reporter {
    /// Starts the thread for `callback`; with `None`, reports go nowhere.
    pub(crate) fn start(callback: Option<ReportCallback>) -> Result<Reporter, ProducerError> {
        let Some(mut callback) = callback else {
            return Ok(Reporter::default());
        };
        let (tx, rx) = mpsc::channel::<Arc<DeliveryReport>>();
        let (ended_tx, ended) = mpsc::channel::<()>();
        let errors = Arc::new(AtomicU64::new(0));
        let thread_errors = errors.clone();
        let handle = std::thread::Builder::new()
            .name("loghose-reports".into())
            .spawn(move || {
                let _ended = ended_tx;
                while let Ok(first) = rx.recv() {
                    let mut batch = vec![first];
                    while batch.len() < MAX_REPORTS_PER_CALL {
                        match rx.try_recv() {
                            Ok(r) => batch.push(r),
                            Err(_) => break,
                        }
                    }
                    let call = std::panic::AssertUnwindSafe(|| callback(&batch));
                    if std::panic::catch_unwind(call).is_err() {
                        thread_errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
            .map_err(|e| ProducerError::Engine(e.to_string()))?;
        Ok(Reporter {
            queue: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(Worker { handle, ended })),
            callback_errors: errors,
        })
    }

    /// Queues a report for the callback (nothing happens without one, or after `finish`).
    pub(crate) fn report(&self, report: Arc<DeliveryReport>) {
        if let Some(tx) = self.queue.lock().as_ref() {
            let _ = tx.send(report);
        }
    }

    /// Closes the queue and waits up to `timeout` for the thread to pass on the last reports
    /// and end. Idempotent.
    pub(crate) fn finish(&self, timeout: Duration) {
        self.queue.lock().take();
        let Some(worker) = self.thread.lock().take() else {
            return;
        };
        // The thread drops its end of `ended` on exit, which wakes this wait at once.
        if let Err(mpsc::RecvTimeoutError::Disconnected) = worker.ended.recv_timeout(timeout) {
            let _ = worker.handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::producer::report::Outcome;

    fn report(batch_id: u64) -> Arc<DeliveryReport> {
        Arc::new(DeliveryReport {
            batch_id,
            project: "p".into(),
            logstore: "l".into(),
            outcome: Outcome::Delivered,
            attempts: 1,
            request_id: None,
            records: 1,
            raw_bytes: 1,
            compressed_bytes: 1,
            latency: Duration::ZERO,
            pack_id: String::new(),
            tickets: Vec::new(),
            replayed: false,
        })
    }

    #[test]
    fn reports_reach_the_callback_and_panics_are_counted() {
        let seen = Arc::new(AtomicU64::new(0));
        let counted = seen.clone();
        let reporter = Reporter::start(Some(Box::new(move |reports| {
            counted.fetch_add(reports.len() as u64, Ordering::SeqCst);
            if reports.iter().any(|r| r.batch_id == 2) {
                panic!("a callback that throws");
            }
        })))
        .unwrap();
        for id in 0..5 {
            reporter.report(report(id));
        }
        reporter.finish(Duration::from_secs(5));
        assert_eq!(seen.load(Ordering::SeqCst), 5);
        assert_eq!(reporter.callback_errors.load(Ordering::Relaxed), 1);
        // After finish, reports go nowhere; finish again does nothing.
        reporter.report(report(9));
        reporter.finish(Duration::from_secs(1));
    }

    #[test]
    fn a_hanging_callback_delays_finish_only_by_its_timeout() {
        let reporter = Reporter::start(Some(Box::new(|_| {
            std::thread::sleep(Duration::from_secs(3));
        })))
        .unwrap();
        reporter.report(report(1));
        std::thread::sleep(Duration::from_millis(20));
        let started = std::time::Instant::now();
        reporter.finish(Duration::from_millis(100));
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
