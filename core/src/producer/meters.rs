//! The producer's per-destination meters: what each (project, logstore) was sent, how each of
//! its batches ended, and how long its requests and deliveries took, for the metrics a scrape
//! reads ([`crate::metrics`]).
//!
//! Counted on the I/O threads, once per request and once per settled batch, never on the add
//! path: one short lock of a small map per event. A producer that writes to more than
//! [`MAX_DESTINATIONS`] destinations counts the rest under one `_other` destination, so a scrape
//! stays small whatever the routing; the totals are exact either way. Histograms have fixed
//! buckets (seconds), so a snapshot is a copy of plain numbers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::report::{DeliveryReport, Outcome};
use super::retry::Answer;

/// Destinations counted under their own names; more are counted as [`OTHER_DESTINATION`].
pub const MAX_DESTINATIONS: usize = 256;

/// The project and logstore the destinations beyond [`MAX_DESTINATIONS`] are counted under.
pub const OTHER_DESTINATION: &str = "_other";

/// Upper bounds of the request-duration buckets, seconds.
pub const REQUEST_SECONDS_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Upper bounds of the delivery-latency buckets (first record to delivered), seconds.
pub const DELIVERY_SECONDS_BUCKETS: &[f64] = &[
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// The status label of a request no answer came to (reset, refused, timed out).
pub const NO_ANSWER_STATUS: &str = "none";

/// Observations in fixed buckets.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// The buckets' upper bounds (finite, rising).
    pub bounds: &'static [f64],
    /// Observations at or below each bound, cumulative, as Prometheus counts them.
    pub cumulative: Vec<u64>,
    /// All observations (the `+Inf` bucket).
    pub count: u64,
    /// Their sum.
    pub sum: f64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            cumulative: vec![0; bounds.len()],
            count: 0,
            sum: 0.0,
        }
    }

    fn observe(&mut self, seconds: f64) {
        let first = self.bounds.partition_point(|&b| b < seconds);
        for c in &mut self.cumulative[first..] {
            *c += 1;
        }
        self.count += 1;
        self.sum += seconds;
    }
}

/// What one destination was sent and how its batches ended.
#[derive(Clone, Debug)]
pub(crate) struct DestinationMeters {
    /// Records delivered.
    pub(crate) delivered_records: u64,
    /// Batches delivered.
    pub(crate) delivered_batches: u64,
    /// Records failed for good, by error code.
    pub(crate) failed_records: BTreeMap<String, u64>,
    /// Requests sent again after a retryable answer.
    pub(crate) retries: u64,
    /// Uncompressed bytes of every request sent (retries included).
    pub(crate) sent_raw_bytes: u64,
    /// Bytes on the wire of every request sent.
    pub(crate) sent_compressed_bytes: u64,
    /// Request durations, by HTTP status ([`NO_ANSWER_STATUS`] when none came).
    pub(crate) requests: BTreeMap<String, Histogram>,
    /// From a batch's first record to its delivery.
    pub(crate) delivery: Histogram,
}

impl DestinationMeters {
    fn new() -> DestinationMeters {
        DestinationMeters {
            delivered_records: 0,
            delivered_batches: 0,
            failed_records: BTreeMap::new(),
            retries: 0,
            sent_raw_bytes: 0,
            sent_compressed_bytes: 0,
            requests: BTreeMap::new(),
            delivery: Histogram::new(DELIVERY_SECONDS_BUCKETS),
        }
    }
}

/// (project, logstore).
pub(crate) type DestinationName = (Arc<str>, Arc<str>);

/// The meters of one producer.
#[derive(Default)]
pub(crate) struct Meters {
    by_destination: Mutex<BTreeMap<DestinationName, DestinationMeters>>,
}

impl Meters {
    fn with<R>(
        &self,
        project: &Arc<str>,
        logstore: &Arc<str>,
        f: impl FnOnce(&mut DestinationMeters) -> R,
    ) -> R {
        let mut map = self.by_destination.lock();
        let key = (project.clone(), logstore.clone());
        if !map.contains_key(&key) && map.len() >= MAX_DESTINATIONS {
            let other: Arc<str> = OTHER_DESTINATION.into();
            return f(map
                .entry((other.clone(), other))
                .or_insert_with(DestinationMeters::new));
        }
        f(map.entry(key).or_insert_with(DestinationMeters::new))
    }

    /// One request was answered (or not) after `took`.
    pub(crate) fn request(
        &self,
        project: &Arc<str>,
        logstore: &Arc<str>,
        answer: &Answer,
        took: Duration,
        raw_len: usize,
        sent_len: usize,
    ) {
        let status = match answer.status {
            Some(s) => itoa::Buffer::new().format(s).to_owned(),
            None => NO_ANSWER_STATUS.to_owned(),
        };
        self.with(project, logstore, |m| {
            m.sent_raw_bytes += raw_len as u64;
            m.sent_compressed_bytes += sent_len as u64;
            m.requests
                .entry(status)
                .or_insert_with(|| Histogram::new(REQUEST_SECONDS_BUCKETS))
                .observe(took.as_secs_f64());
        });
    }

    /// A request is to be sent again.
    pub(crate) fn retry(&self, project: &Arc<str>, logstore: &Arc<str>) {
        self.with(project, logstore, |m| m.retries += 1);
    }

    /// A batch reached its final outcome (kept batches are counted producer-wide only).
    pub(crate) fn outcome(&self, report: &DeliveryReport) {
        let records = u64::from(report.records);
        match &report.outcome {
            Outcome::Delivered => self.with(&report.project, &report.logstore, |m| {
                m.delivered_records += records;
                m.delivered_batches += 1;
                m.delivery.observe(report.latency.as_secs_f64());
            }),
            Outcome::Failed { code, .. } => self.with(&report.project, &report.logstore, |m| {
                *m.failed_records.entry(code.clone()).or_default() += records;
            }),
            Outcome::Kept { .. } => {}
        }
    }

    /// A copy of every destination's meters.
    pub(crate) fn snapshot(&self) -> Vec<(DestinationName, DestinationMeters)> {
        self.by_destination
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_and_bounds_inclusive() {
        let mut h = Histogram::new(&[0.1, 1.0]);
        h.observe(0.1);
        h.observe(0.5);
        h.observe(7.0);
        assert_eq!(h.cumulative, vec![1, 2]);
        assert_eq!(h.count, 3);
        assert!((h.sum - 7.6).abs() < 1e-9);
    }

    #[test]
    fn destinations_beyond_the_bound_are_counted_as_one() {
        let meters = Meters::default();
        let logstore: Arc<str> = "ls".into();
        for i in 0..MAX_DESTINATIONS + 10 {
            let project: Arc<str> = format!("p{i}").into();
            meters.retry(&project, &logstore);
        }
        let snap = meters.snapshot();
        assert_eq!(snap.len(), MAX_DESTINATIONS + 1);
        let other = snap
            .iter()
            .find(|((p, _), _)| &**p == OTHER_DESTINATION)
            .expect("the _other destination");
        assert_eq!(other.1.retries, 10);
        let total: u64 = snap.iter().map(|(_, m)| m.retries).sum();
        assert_eq!(total, (MAX_DESTINATIONS + 10) as u64);
    }
}
