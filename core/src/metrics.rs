//! The producer's own metrics, defined once: [`METRICS`] names every metric with its type,
//! unit, help text and labels; the Python and Node fronts, the command's `/metrics` endpoint
//! and the monitoring guide's table all come from it.
//! [`Producer::metrics`](crate::producer::Producer::metrics) takes a snapshot: one [`Family`]
//! per entry of the table, in its order.
//!
//! # Names
//! A metric's stem (`loghose_sent_raw`) plus its unit (`bytes`) is its family name
//! (`loghose_sent_raw_bytes`); a counter's samples add `_total`, as Prometheus and OpenMetrics
//! name them. Labels per destination are `project` and `logstore`, bounded by
//! [`MAX_DESTINATIONS`] (the rest counted under `_other`).
//!
//! # Cost
//! Nothing here runs on the add path: producer-wide counts are the counters `stats()` reads,
//! per-destination ones are counted once per request and per settled batch on the I/O threads
//! (`producer/meters.rs`). A snapshot reads atomics and copies one small map; with the
//! `prometheus` feature, [`ProducerCollector`] encodes it on each scrape through the
//! `prometheus-client` crate, and [`encode_text`] renders it in the Prometheus text format.

pub use crate::producer::meters::{
    Histogram, DELIVERY_SECONDS_BUCKETS, MAX_DESTINATIONS, NO_ANSWER_STATUS, OTHER_DESTINATION,
    REQUEST_SECONDS_BUCKETS,
};

mod snapshot;
mod table;
pub use table::{
    add_to_sample, markdown_table, to_json, Family, MetricSpec, MetricType, Sample,
    BATCHES_DELIVERED, BATCHES_IN_FLIGHT, BATCHES_REPLAYED, BUFFER_CAPACITY, BUFFER_USED,
    CALLBACK_ERRORS, DELIVERY_LATENCY, METRICS, RECORDS_ACCEPTED, RECORDS_DELIVERED,
    RECORDS_FAILED, RECORDS_KEPT, RECORDS_PENDING, RECORDS_REFUSED, RECORDS_REPLAYED,
    REQUESTS_PUSHED_BACK, REQUEST_DURATION, REQUEST_RETRIES, SEND_LIMIT, SEND_PACE,
    SENT_COMPRESSED, SENT_RAW, SPOOL_CORRUPT, SPOOL_DEGRADED, SPOOL_FILES, SPOOL_NOT_DURABLE,
    SPOOL_SYNC_FAILURES, SPOOL_USED,
};

#[cfg(feature = "prometheus")]
mod prometheus;
#[cfg(feature = "prometheus")]
pub use prometheus::{
    check_const_labels, encode_text, encode_text_labelled, ConstLabelError, ProducerCollector,
    TEXT_CONTENT_TYPE,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_follow_prometheus_conventions() {
        let mut seen = std::collections::BTreeSet::new();
        for spec in METRICS {
            assert!(seen.insert(spec.name), "{} twice", spec.name);
            assert!(spec.name.starts_with("loghose_"));
            assert!(spec
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_'));
            assert!(!spec.name.ends_with("_total"), "{}", spec.name);
            if !spec.unit.is_empty() {
                assert!(spec.name.ends_with(spec.unit));
            }
            assert!(spec.help.ends_with('.'), "{}", spec.name);
        }
    }
}
