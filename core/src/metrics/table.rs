//! The table of the producer's metrics ([`METRICS`]: name, type, unit, help, labels) and the
//! shapes a snapshot takes ([`Family`], [`Sample`]), with the JSON and markdown they are shown
//! as. Plain data, read by the snapshot (`snapshot.rs`), the Prometheus encoders and the fronts;
//! imports nothing of them.

use serde::Serialize;

use crate::producer::meters::Histogram;

/// What kind of number a metric is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricType {
    /// Only grows (from the producer's start).
    Counter,
    /// Goes up and down.
    Gauge,
    /// Observations in fixed buckets.
    Histogram,
}

/// One metric of the table.
#[derive(Debug, Serialize)]
pub struct MetricSpec {
    /// The name without its unit or `_total`.
    pub stem: &'static str,
    /// The family name: the stem and the unit.
    pub name: &'static str,
    /// Counter, gauge or histogram.
    #[serde(rename = "type")]
    pub kind: MetricType,
    /// `bytes`, `seconds`, or empty.
    pub unit: &'static str,
    /// What it counts.
    pub help: &'static str,
    /// Its labels, in the order a sample's values follow.
    pub labels: &'static [&'static str],
}

impl MetricSpec {
    /// The name its samples carry: the family name, plus `_total` for a counter.
    pub fn sample_name(&self) -> String {
        match self.kind {
            MetricType::Counter => format!("{}_total", self.name),
            MetricType::Gauge | MetricType::Histogram => self.name.to_owned(),
        }
    }
}

macro_rules! metrics {
    ($( $id:ident: $kind:ident $stem:literal $unit:literal [$($label:literal),*] $help:literal; )*) => {
        $(
            #[doc = $help]
            pub static $id: MetricSpec = MetricSpec {
                stem: $stem,
                name: if $unit.is_empty() { $stem } else { concat!($stem, "_", $unit) },
                kind: MetricType::$kind,
                unit: $unit,
                help: $help,
                labels: &[$($label),*],
            };
        )*
        /// Every metric, in the order a snapshot lists them.
        pub static METRICS: &[&MetricSpec] = &[$(&$id),*];
    };
}

metrics! {
    RECORDS_ACCEPTED: Counter "loghose_records_accepted" "" []
        "Records accepted by send; each ends delivered, failed or kept.";
    RECORDS_REFUSED: Counter "loghose_records_refused" "" ["reason"]
        "Records refused by send (the caller was told): reason is buffer_full or invalid.";
    RECORDS_DELIVERED: Counter "loghose_records_delivered" "" ["project", "logstore"]
        "Records the service accepted.";
    RECORDS_FAILED: Counter "loghose_records_failed" "" ["project", "logstore", "error_code"]
        "Records in batches that failed for good, by the last error code.";
    RECORDS_KEPT: Counter "loghose_records_kept" "" []
        "Records left in the spool at close, for the next producer on the directory (not lost).";
    RECORDS_REPLAYED: Counter "loghose_records_replayed" "" []
        "Records an earlier producer left in the spool, sent again by this one.";
    BATCHES_DELIVERED: Counter "loghose_batches_delivered" "" ["project", "logstore"]
        "Batches the service accepted.";
    BATCHES_REPLAYED: Counter "loghose_batches_replayed" "" []
        "Batches an earlier producer left in the spool, sent again by this one.";
    REQUEST_RETRIES: Counter "loghose_request_retries" "" ["project", "logstore"]
        "Requests sent again after a retryable answer or none.";
    SENT_RAW: Counter "loghose_sent_raw" "bytes" ["project", "logstore"]
        "Uncompressed bytes of the requests sent, retries included.";
    SENT_COMPRESSED: Counter "loghose_sent_compressed" "bytes" ["project", "logstore"]
        "Bytes on the wire of the requests sent, retries included.";
    CALLBACK_ERRORS: Counter "loghose_report_callback_errors" "" []
        "Report callbacks that raised or panicked (the producer lives on).";
    RECORDS_PENDING: Gauge "loghose_records_pending" "" []
        "Records accepted and not yet delivered, failed or kept.";
    BUFFER_USED: Gauge "loghose_buffer_used" "bytes" []
        "Bytes of records held now (open, sealed, in flight, retrying).";
    BUFFER_CAPACITY: Gauge "loghose_buffer_capacity" "bytes" []
        "The buffer's bound (buffer_max_bytes): send waits or refuses beyond it.";
    BATCHES_IN_FLIGHT: Gauge "loghose_batches_in_flight" "" []
        "Batches being sent or waiting to retry.";
    SEND_LIMIT: Gauge "loghose_send_limit" "" ["project", "logstore"]
        "Batches a destination may have in flight now (adaptive send concurrency; send_concurrency when fixed).";
    SEND_PACE: Gauge "loghose_send_pace" "bytes" ["project", "logstore"]
        "Raw bytes per second a destination's requests are paced to after the service pushed back; 0 when not paced.";
    REQUESTS_PUSHED_BACK: Counter "loghose_requests_pushed_back" "" ["project", "logstore"]
        "Answers that pushed back: a quota or throttling answer (403, 429), 503, or none within the request timeout.";
    SPOOL_USED: Gauge "loghose_spool" "bytes" []
        "Bytes of spool files on disk.";
    SPOOL_FILES: Gauge "loghose_spool_files" "" []
        "Segments and batch files in the producer's spool directory (kept for reuse included), counted at each scrape.";
    SPOOL_DEGRADED: Gauge "loghose_spool_degraded" "" []
        "1 while the spool's last needed sync failed (records not durable until one succeeds).";
    SPOOL_SYNC_FAILURES: Counter "loghose_spool_sync_failures" "" []
        "Syncs of spool files or directories the disk failed.";
    SPOOL_NOT_DURABLE: Counter "loghose_spool_records_not_durable" "" []
        "Records sent while their spool copy could not be made durable.";
    SPOOL_CORRUPT: Counter "loghose_spool_corrupt_entries" "" []
        "Spool entries found torn or corrupt when the spool was opened, and skipped.";
    REQUEST_DURATION: Histogram "loghose_request_duration" "seconds" ["project", "logstore", "status"]
        "PutLogs requests by HTTP status (none: no answer came), from send to answer.";
    DELIVERY_LATENCY: Histogram "loghose_delivery_latency" "seconds" ["project", "logstore"]
        "From a batch's first record to its delivery.";
}

/// One labelled value of a metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// The label values, in the order of the metric's `labels`.
    pub labels: Vec<String>,
    /// The count or gauge value (a histogram's count).
    pub value: u64,
    /// A histogram's buckets and sum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Histogram>,
}

impl Sample {
    /// A counter or gauge value.
    pub fn value(labels: Vec<String>, value: u64) -> Sample {
        Sample {
            labels,
            value,
            histogram: None,
        }
    }
}

/// One metric's samples in a snapshot.
#[derive(Clone, Debug, Serialize)]
pub struct Family {
    /// Which metric.
    #[serde(flatten)]
    pub spec: &'static MetricSpec,
    /// Its samples (none for a labelled metric nothing has touched yet).
    pub samples: Vec<Sample>,
}

impl Family {
    /// The sum of its samples' values (a histogram's: of their counts).
    pub fn total(&self) -> u64 {
        self.samples.iter().map(|s| s.value).sum()
    }
}

impl Serialize for Histogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Histogram", 4)?;
        st.serialize_field("bounds", self.bounds)?;
        st.serialize_field("cumulative", &self.cumulative)?;
        st.serialize_field("count", &self.count)?;
        st.serialize_field("sum", &self.sum)?;
        st.end()
    }
}

/// The snapshot as JSON (what the fronts read).
pub fn to_json(families: &[Family]) -> String {
    // Plain numbers, strings and finite floats: serialization cannot fail.
    serde_json::to_string(families).unwrap_or_else(|_| "[]".to_owned())
}

/// Adds `more` to the first sample of `spec`'s family in `families` (a count a front keeps
/// itself, such as the report-callback errors its own dispatcher caught).
pub fn add_to_sample(families: &mut [Family], spec: &'static MetricSpec, more: u64) {
    let sample = families
        .iter_mut()
        .find(|family| std::ptr::eq(family.spec, spec))
        .and_then(|family| family.samples.first_mut());
    if let Some(sample) = sample {
        sample.value += more;
    }
}

/// The metric table as a Markdown table (docs/guides/monitoring.md's, generated).
pub fn markdown_table() -> String {
    let mut out = String::from("| Metric | Type | Labels | What it counts |\n|---|---|---|---|\n");
    for spec in METRICS {
        let kind = match spec.kind {
            MetricType::Counter => "counter",
            MetricType::Gauge => "gauge",
            MetricType::Histogram => "histogram",
        };
        let labels = if spec.labels.is_empty() {
            "—".to_owned()
        } else {
            spec.labels.join(", ")
        };
        out.push_str(&format!(
            "| `{}` | {kind} | {labels} | {} |\n",
            spec.sample_name(),
            spec.help
        ));
    }
    out
}
