//! The reporter: the thread that hands a producer's delivery reports to the caller's callback,
//! in batches (up to 4096 reports per call), never on the I/O runtime.
//!
//! Reports are queued without bound (one per batch, so a few per second at most rates). The
//! thread starts with the first report and ends after [`IDLE`] with nothing to pass on; the next
//! report starts another. So an idle producer holds no thread (a process with ten thousand
//! producers, one per tenant, has threads only for those delivering), and reports still reach
//! the callback in order: one thread at a time drains the queue, and a thread ends only once the
//! queue is empty, under the lock every report takes. A callback that panics is counted and the
//! thread goes on. [`Reporter::finish`] closes the queue and waits for the last reports with a
//! timeout: a callback that hangs delays `close` by at most that timeout, then the thread is
//! left to end on its own.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::report::DeliveryReport;

/// A report callback: receives reports in batches on the producer's reporter thread.
pub type ReportCallback = Box<dyn FnMut(&[Arc<DeliveryReport>]) + Send>;

/// Most reports handed to one callback call.
const MAX_REPORTS_PER_CALL: usize = 4096;

/// How long the thread waits for another report before it ends.
const IDLE: Duration = Duration::from_secs(5);

/// Passes reports to the callback, or nothing when there is none.
#[derive(Default)]
pub(crate) struct Reporter {
    shared: Option<Arc<Shared>>,
    /// Callback calls that panicked.
    pub(crate) callback_errors: Arc<AtomicU64>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    queue: VecDeque<Arc<DeliveryReport>>,
    /// The callback while no thread holds it.
    callback: Option<ReportCallback>,
    /// A thread is draining the queue (it holds the callback).
    running: bool,
    closed: bool,
    /// Disconnects when the running thread ends: `finish` waits on it with a timeout.
    ended: Option<mpsc::Receiver<()>>,
}

impl Reporter {
    /// A reporter for `callback`; with `None`, reports go nowhere. No thread starts yet.
    pub(crate) fn new(callback: Option<ReportCallback>) -> Reporter {
        Reporter {
            shared: callback.map(|callback| {
                Arc::new(Shared {
                    state: Mutex::new(State {
                        queue: VecDeque::new(),
                        callback: Some(callback),
                        running: false,
                        closed: false,
                        ended: None,
                    }),
                    wake: Condvar::new(),
                })
            }),
            callback_errors: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Queues a report for the callback, starting the thread if none runs (nothing happens
    /// without a callback, or after `finish`).
    pub(crate) fn report(&self, report: Arc<DeliveryReport>) {
        let Some(shared) = &self.shared else { return };
        let mut state = shared.state.lock();
        if state.closed {
            return;
        }
        state.queue.push_back(report);
        if state.running {
            shared.wake.notify_one();
            return;
        }
        self.spawn(shared, &mut state);
    }

    /// Starts a thread draining the queue. Without one (the system refused a thread), the
    /// reports stay queued and the next report, or `finish`, tries again.
    fn spawn(&self, shared: &Arc<Shared>, state: &mut State) {
        let Some(callback) = state.callback.take() else {
            return;
        };
        let (ended_tx, ended) = mpsc::channel::<()>();
        let thread_shared = shared.clone();
        let errors = self.callback_errors.clone();
        // The callback comes back through this slot if the thread cannot start.
        let slot = Arc::new(Mutex::new(Some(callback)));
        let thread_slot = slot.clone();
        let started = crate::threads::spawn("loghose-reports", move || {
            let _ended = ended_tx;
            if let Some(callback) = thread_slot.lock().take() {
                drain(&thread_shared, callback, &errors);
            }
        });
        match started {
            Ok(_) => {
                state.running = true;
                state.ended = Some(ended);
            }
            Err(_) => state.callback = slot.lock().take(),
        }
    }

    /// Closes the queue and waits up to `timeout` for the thread to pass on the last reports
    /// and end. Idempotent.
    pub(crate) fn finish(&self, timeout: Duration) {
        let Some(shared) = &self.shared else { return };
        let ended = {
            let mut state = shared.state.lock();
            state.closed = true;
            if !state.running && !state.queue.is_empty() {
                self.spawn(shared, &mut state);
            }
            shared.wake.notify_one();
            state.ended.take()
        };
        if let Some(ended) = ended {
            // The thread drops its end of `ended` on exit, which wakes this wait at once.
            let _ = ended.recv_timeout(timeout);
        }
    }
}

/// The thread's loop: pass on what is queued; end once idle for [`IDLE`] (handing the callback
/// back for the next thread) or once closed and drained.
fn drain(shared: &Shared, mut callback: ReportCallback, errors: &AtomicU64) {
    let mut state = shared.state.lock();
    loop {
        if state.queue.is_empty() {
            if state.closed {
                break;
            }
            let timed_out = shared.wake.wait_for(&mut state, IDLE).timed_out();
            if timed_out && state.queue.is_empty() && !state.closed {
                break;
            }
            continue;
        }
        let take = state.queue.len().min(MAX_REPORTS_PER_CALL);
        let batch: Vec<Arc<DeliveryReport>> = state.queue.drain(..take).collect();
        drop(state);
        let call = std::panic::AssertUnwindSafe(|| callback(&batch));
        if std::panic::catch_unwind(call).is_err() {
            errors.fetch_add(1, Ordering::Relaxed);
        }
        drop(batch);
        state = shared.state.lock();
    }
    state.callback = Some(callback);
    state.running = false;
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
            send_time: Duration::ZERO,
            pack_id: String::new(),
            tickets: Vec::new(),
            replayed: false,
        })
    }

    #[test]
    fn reports_reach_the_callback_and_panics_are_counted() {
        let seen = Arc::new(AtomicU64::new(0));
        let counted = seen.clone();
        let reporter = Reporter::new(Some(Box::new(move |reports| {
            counted.fetch_add(reports.len() as u64, Ordering::SeqCst);
            if reports.iter().any(|r| r.batch_id == 2) {
                panic!("a callback that throws");
            }
        })));
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
        let reporter = Reporter::new(Some(Box::new(|_| {
            std::thread::sleep(Duration::from_secs(3));
        })));
        reporter.report(report(1));
        std::thread::sleep(Duration::from_millis(20));
        let started = std::time::Instant::now();
        reporter.finish(Duration::from_millis(100));
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    fn reporter_threads() -> usize {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return 0;
        };
        tasks
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|name| name.trim() == "loghose-reports")
            .count()
    }

    #[test]
    fn the_thread_starts_with_a_report_ends_when_idle_and_order_holds_across_threads() {
        // (Other tests of this binary may run reporters at the same time: counts are relative.)
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        let reporter = Reporter::new(Some(Box::new(move |reports| {
            into.lock().extend(reports.iter().map(|r| r.batch_id));
        })));
        let before = reporter_threads();
        assert!(reporter
            .shared
            .as_ref()
            .is_some_and(|s| !s.state.lock().running));
        for id in 0..100 {
            reporter.report(report(id));
        }
        assert!(reporter
            .shared
            .as_ref()
            .is_some_and(|s| s.state.lock().running));
        // Idle past IDLE: the thread ends and hands the callback back.
        let deadline = std::time::Instant::now() + IDLE + Duration::from_secs(5);
        while reporter
            .shared
            .as_ref()
            .is_some_and(|s| s.state.lock().running)
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the thread never ended"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        if cfg!(target_os = "linux") {
            assert!(reporter_threads() <= before);
        }
        // The next report starts another thread; everything arrives once, in order.
        for id in 100..200 {
            reporter.report(report(id));
        }
        reporter.finish(Duration::from_secs(5));
        assert_eq!(*seen.lock(), (0..200).collect::<Vec<u64>>());
    }

    #[test]
    fn without_a_callback_nothing_starts() {
        let reporter = Reporter::new(None);
        reporter.report(report(1));
        reporter.finish(Duration::from_millis(10));
        assert_eq!(reporter.callback_errors.load(Ordering::Relaxed), 0);
    }
}
