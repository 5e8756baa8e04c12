//! The warning every front gives when records failed for good and nobody was told (no
//! callback, no future or promise waited on them): one policy for all of them. At most one
//! warning per error code every [`UndeliveredWarnings::EVERY`], the records of the quiet time
//! counted into the next one, or into the one [`flush`](UndeliveredWarnings::flush) gives
//! (at close). A batch is counted once however many times it is noted (its report, then
//! close's list of failed reports). Records a close left in the spool get their own words:
//! kept for the next producer, not failed.
//!
//! The fronts print what it hands them, each in its own way (Python's `loghose` logger, Node's
//! process warnings). Called from the fronts' report handlers and `close`; a short lock.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::config::Front;
use super::report::DeliveryReport;

/// The rate-limited "failed and nobody was told" warnings of one producer.
#[derive(Debug, Default)]
pub struct UndeliveredWarnings {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// When each code was last warned about.
    last: HashMap<String, Instant>,
    /// Per code, what the quiet time held back.
    held: HashMap<String, Warning>,
    /// The batches already counted (the most recent [`SEEN`]).
    seen: HashSet<u64>,
    seen_order: VecDeque<u64>,
}

/// Batches remembered as counted: more than a close lists (10 000 failed reports).
const SEEN: usize = 20_000;

/// A batch that failed for good (or was kept), as [`UndeliveredWarnings::note_failure`] takes it.
#[derive(Clone, Copy, Debug)]
pub struct Failure<'a> {
    /// The batch (counted once).
    pub batch_id: u64,
    /// Where it was going.
    pub project: &'a str,
    /// See `project`.
    pub logstore: &'a str,
    /// Its error code.
    pub code: &'a str,
    /// Its error message.
    pub message: &'a str,
    /// Left in the spool by a close (see [`Warning::kept`]).
    pub kept: bool,
}

/// One warning to give: records of one destination that failed for good with one code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// How many records.
    pub records: u64,
    /// Their project and logstore (of the report that first held them).
    pub project: String,
    /// See `project`.
    pub logstore: String,
    /// The error code (`Failed` when the service gave none).
    pub code: String,
    /// The error message.
    pub message: String,
    /// Left in the spool by a close, for the next producer: not failed.
    pub kept: bool,
}

impl Warning {
    /// The warning's words as `front` says them (its option names, its ways to listen).
    pub fn text(&self, front: Front) -> String {
        let Warning {
            records,
            project,
            logstore,
            code,
            message,
            kept,
        } = self;
        let (spool_dir, listen) = match front {
            Front::Python => (
                "spool_dir",
                "pass on_delivery= or use send_future() to handle failures",
            ),
            Front::Node => (
                "spoolDir",
                "listen to 'delivery' or use sendAsync() to handle failures",
            ),
        };
        if *kept {
            format!(
                "loghose: {records} record(s) for {project}/{logstore} were not delivered before \
                 the producer closed ({message}); they are kept in {spool_dir} and the next \
                 producer on it sends them: nothing is lost, do not send them again"
            )
        } else {
            format!(
                "loghose: {records} record(s) for {project}/{logstore} failed for good: {code}: \
                 {message} (nothing else was told; {listen})"
            )
        }
    }
}

impl UndeliveredWarnings {
    /// The quiet time after a warning about one code.
    pub const EVERY: Duration = Duration::from_secs(10);

    /// A new policy with nothing noted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes `records` of `report`'s batch that failed with nobody told; returns the warning
    /// to give now, if the code's quiet time is over (with what it held back).
    pub fn note(&self, report: &DeliveryReport, records: u64) -> Option<Warning> {
        self.note_at(report, records, Instant::now())
    }

    fn note_at(&self, report: &DeliveryReport, records: u64, now: Instant) -> Option<Warning> {
        if report.is_delivered() {
            return None;
        }
        let failure = Failure {
            batch_id: report.batch_id,
            project: &report.project,
            logstore: &report.logstore,
            code: report.error_code().unwrap_or("Failed"),
            message: report.error_message().unwrap_or_default(),
            kept: report.is_kept(),
        };
        self.note_failure_at(&failure, records, now)
    }

    /// [`note`](Self::note) for a front that holds the report's parts rather than the report
    /// (Node reads reports as JSON).
    pub fn note_failure(&self, failure: &Failure<'_>, records: u64) -> Option<Warning> {
        self.note_failure_at(failure, records, Instant::now())
    }

    fn note_failure_at(
        &self,
        failure: &Failure<'_>,
        records: u64,
        now: Instant,
    ) -> Option<Warning> {
        if records == 0 {
            return None;
        }
        let mut state = self.state.lock();
        if !state.seen.insert(failure.batch_id) {
            return None;
        }
        state.seen_order.push_back(failure.batch_id);
        if state.seen_order.len() > SEEN {
            if let Some(old) = state.seen_order.pop_front() {
                state.seen.remove(&old);
            }
        }
        let code = failure.code.to_owned();
        let mut warning = state.held.remove(&code).unwrap_or_else(|| Warning {
            records: 0,
            project: failure.project.to_owned(),
            logstore: failure.logstore.to_owned(),
            code: code.clone(),
            message: failure.message.to_owned(),
            kept: failure.kept,
        });
        warning.records += records;
        let quiet = state
            .last
            .get(&code)
            .is_some_and(|at| now.duration_since(*at) < Self::EVERY);
        if quiet {
            state.held.insert(code, warning);
            return None;
        }
        state.last.insert(code, now);
        Some(warning)
    }

    /// What the quiet time held back, to give now (at close).
    pub fn flush(&self) -> Vec<Warning> {
        let mut held: Vec<Warning> = self.state.lock().held.drain().map(|(_, w)| w).collect();
        held.sort_by(|a, b| a.code.cmp(&b.code));
        held
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::Outcome;
    use super::*;

    fn report(batch_id: u64, outcome: Outcome) -> DeliveryReport {
        DeliveryReport {
            batch_id,
            project: "proj".into(),
            logstore: "logs".into(),
            outcome,
            attempts: 1,
            request_id: None,
            records: 1,
            raw_bytes: 0,
            compressed_bytes: 0,
            latency: Duration::ZERO,
            send_time: Duration::ZERO,
            pack_id: String::new(),
            tickets: Vec::new(),
            replayed: false,
        }
    }

    fn failed(batch_id: u64, code: &str) -> DeliveryReport {
        report(
            batch_id,
            Outcome::Failed {
                code: code.into(),
                message: "the service said no".into(),
                http_status: None,
            },
        )
    }

    #[test]
    fn one_warning_per_code_per_quiet_time_and_nothing_counted_twice() {
        let w = UndeliveredWarnings::new();
        let t0 = Instant::now();
        let first = w.note_at(&failed(1, "Unauthorized"), 10, t0).unwrap();
        assert_eq!((first.records, first.code.as_str()), (10, "Unauthorized"));
        // Within the quiet time: held, and another code is not held back by it.
        assert_eq!(
            w.note_at(&failed(2, "Unauthorized"), 5, t0 + Duration::from_secs(1)),
            None
        );
        assert!(w
            .note_at(&failed(3, "ServerBusy"), 1, t0 + Duration::from_secs(1))
            .is_some());
        // The same batch again (close lists what its report said): not counted twice.
        assert_eq!(
            w.note_at(&failed(2, "Unauthorized"), 5, t0 + Duration::from_secs(2)),
            None
        );
        // After the quiet time: the held records come with the new ones.
        let later = w
            .note_at(
                &failed(4, "Unauthorized"),
                7,
                t0 + UndeliveredWarnings::EVERY,
            )
            .unwrap();
        assert_eq!(later.records, 12);
        assert_eq!(
            w.note_at(
                &failed(5, "Unauthorized"),
                3,
                t0 + UndeliveredWarnings::EVERY
            ),
            None
        );
        let flushed = w.flush();
        assert_eq!(flushed.len(), 1);
        assert_eq!(flushed[0].records, 3);
        assert!(w.flush().is_empty());
        let text = later.text(Front::Python);
        assert!(
            text.contains("12 record(s) for proj/logs failed for good: Unauthorized"),
            "{text}"
        );
        assert!(text.contains("on_delivery="), "{text}");
        assert!(later.text(Front::Node).contains("sendAsync()"));
    }

    #[test]
    fn records_kept_in_the_spool_are_not_called_failed() {
        let w = UndeliveredWarnings::new();
        let kept = report(
            1,
            Outcome::Kept {
                message: "closed".into(),
            },
        );
        let warning = w.note(&kept, 4).unwrap();
        assert!(warning.kept);
        let text = warning.text(Front::Node);
        assert!(
            text.contains("kept in spoolDir") && !text.contains("failed for good"),
            "{text}"
        );
        let delivered = report(2, Outcome::Delivered);
        assert_eq!(w.note(&delivered, 1), None);
    }
}
