//! The snapshot of a producer's metrics: one [`Family`] per entry of [`METRICS`](super::METRICS),
//! in its order, read from the producer's counters and per-destination meters. Runs on the
//! caller's thread (a scrape, `metrics()` from a front), never on the add path; it reads
//! atomics and copies one small map. The producer knows nothing of it: this module reads the
//! producer, not the other way round.

use super::table::{self as m, Family, Sample};
use crate::producer::meters;
use crate::producer::{Producer, SendLimit};

impl Producer {
    /// A snapshot of the producer's metrics: one family per entry of
    /// [`METRICS`](crate::metrics::METRICS), in its order (see [`crate::metrics`]).
    pub fn metrics(&self) -> Vec<Family> {
        let stats = self.stats();
        let destinations = self.destination_meters();
        let one = |spec: &'static m::MetricSpec, value: u64| Family {
            spec,
            samples: vec![Sample::value(Vec::new(), value)],
        };
        let per_destination =
            |spec: &'static m::MetricSpec, value: &dyn Fn(&meters::DestinationMeters) -> u64| {
                Family {
                    spec,
                    samples: destinations
                        .iter()
                        .map(|((project, logstore), d)| {
                            Sample::value(vec![project.to_string(), logstore.to_string()], value(d))
                        })
                        .collect(),
                }
            };
        // The first destinations by name, as many as the meters keep by name.
        let gates: Vec<_> = stats
            .send_limits
            .iter()
            .take(meters::MAX_DESTINATIONS)
            .collect();
        let per_gate = |spec: &'static m::MetricSpec, value: &dyn Fn(&SendLimit) -> u64| Family {
            spec,
            samples: gates
                .iter()
                .map(|l| Sample::value(vec![l.project.clone(), l.logstore.clone()], value(l)))
                .collect(),
        };
        let mut failed = Vec::new();
        let mut requests = Vec::new();
        let mut delivery = Vec::new();
        for ((project, logstore), d) in &destinations {
            let names = || vec![project.to_string(), logstore.to_string()];
            for (code, records) in &d.failed_records {
                let mut labels = names();
                labels.push(code.clone());
                failed.push(Sample::value(labels, *records));
            }
            for (status, h) in &d.requests {
                let mut labels = names();
                labels.push(status.clone());
                requests.push(Sample {
                    labels,
                    value: h.count,
                    histogram: Some(h.clone()),
                });
            }
            delivery.push(Sample {
                labels: names(),
                value: d.delivery.count,
                histogram: Some(d.delivery.clone()),
            });
        }
        vec![
            one(&m::RECORDS_ACCEPTED, stats.accepted),
            Family {
                spec: &m::RECORDS_REFUSED,
                samples: vec![
                    Sample::value(vec!["buffer_full".into()], stats.dropped),
                    Sample::value(vec!["invalid".into()], stats.invalid),
                ],
            },
            per_destination(&m::RECORDS_DELIVERED, &|d| d.delivered_records),
            Family {
                spec: &m::RECORDS_FAILED,
                samples: failed,
            },
            one(&m::RECORDS_KEPT, stats.kept),
            one(&m::RECORDS_REPLAYED, stats.replayed_records),
            per_destination(&m::BATCHES_DELIVERED, &|d| d.delivered_batches),
            one(&m::BATCHES_REPLAYED, stats.replayed_batches),
            per_destination(&m::REQUEST_RETRIES, &|d| d.retries),
            per_destination(&m::SENT_RAW, &|d| d.sent_raw_bytes),
            per_destination(&m::SENT_COMPRESSED, &|d| d.sent_compressed_bytes),
            one(&m::CALLBACK_ERRORS, stats.callback_errors),
            one(&m::RECORDS_PENDING, stats.queued_records),
            one(&m::BUFFER_USED, stats.queued_bytes),
            one(&m::BUFFER_CAPACITY, self.config().buffer_max_bytes as u64),
            one(&m::BATCHES_IN_FLIGHT, stats.in_flight_batches),
            per_gate(&m::SEND_LIMIT, &|l| u64::from(l.limit)),
            per_gate(&m::SEND_PACE, &|l| l.pace),
            per_gate(&m::REQUESTS_PUSHED_BACK, &|l| l.pushed_back),
            one(&m::SPOOL_USED, stats.spool_bytes),
            one(&m::SPOOL_FILES, self.spool_files()),
            one(&m::SPOOL_DEGRADED, u64::from(stats.spool_degraded)),
            one(&m::SPOOL_SYNC_FAILURES, stats.spool_sync_failures),
            one(&m::SPOOL_NOT_DURABLE, stats.spool_not_durable),
            one(&m::SPOOL_CORRUPT, stats.spool_corrupt_entries),
            Family {
                spec: &m::REQUEST_DURATION,
                samples: requests,
            },
            Family {
                spec: &m::DELIVERY_LATENCY,
                samples: delivery,
            },
        ]
    }
}
