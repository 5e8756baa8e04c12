//! `DeliveryReport`: a read-only view of one engine report, shared, not copied (the reporter
//! thread wraps each report in one object per batch of reports it hands to Python).

use std::sync::Arc;

use loghose::producer::DeliveryReport;
use pyo3::prelude::*;

/// The final report of one batch.
#[pyclass(frozen, module = "loghose._native", name = "DeliveryReport")]
pub(crate) struct PyDeliveryReport(pub(crate) Arc<DeliveryReport>);

#[pymethods]
impl PyDeliveryReport {
    /// The batch's number in this producer.
    #[getter]
    fn batch_id(&self) -> u64 {
        self.0.batch_id
    }
    /// The project the batch was sent to.
    #[getter]
    fn project(&self) -> &str {
        &self.0.project
    }
    /// The logstore the batch was sent to.
    #[getter]
    fn logstore(&self) -> &str {
        &self.0.logstore
    }
    /// Whether the service stored the batch.
    #[getter]
    fn delivered(&self) -> bool {
        self.0.is_delivered()
    }
    /// Not delivered before the producer closed, and kept in the spool: the next producer on
    /// `spool_dir` sends it (`error_code` is `KeptInSpool`).
    #[getter]
    fn kept(&self) -> bool {
        self.0.is_kept()
    }
    /// Why it failed: the service's error code (`Unauthorized`, `WriteQuotaExceed`...) or the
    /// producer's own (`RequestTimeout`, `ProducerClosed`, `KeptInSpool`...); None when delivered.
    #[getter]
    fn error_code(&self) -> Option<&str> {
        self.0.error_code()
    }
    /// The failure's message, as the service or the producer gave it.
    #[getter]
    fn error_message(&self) -> Option<&str> {
        self.0.error_message()
    }
    /// The last answer's HTTP status, when there was one.
    #[getter]
    fn http_status(&self) -> Option<u16> {
        self.0.http_status()
    }
    /// Requests made for the batch.
    #[getter]
    fn attempts(&self) -> u32 {
        self.0.attempts
    }
    /// The last answer's `x-log-requestid` (what Alibaba Cloud support asks for).
    #[getter]
    fn request_id(&self) -> Option<&str> {
        self.0.request_id.as_deref()
    }
    /// Records in the batch.
    #[getter]
    fn records(&self) -> u32 {
        self.0.records
    }
    /// The batch's size before compression, bytes.
    #[getter]
    fn raw_bytes(&self) -> usize {
        self.0.raw_bytes
    }
    /// The batch's size as sent, bytes.
    #[getter]
    fn compressed_bytes(&self) -> usize {
        self.0.compressed_bytes
    }
    /// From the batch's first record to its outcome, milliseconds.
    #[getter]
    fn latency_ms(&self) -> f64 {
        self.0.latency_ms()
    }
    /// From the first request to the outcome, milliseconds.
    #[getter]
    fn send_ms(&self) -> f64 {
        self.0.send_ms()
    }
    /// The batch's `__pack_id__`, the same across retries and replays (the service's duplicate
    /// check).
    #[getter]
    fn pack_id(&self) -> &str {
        &self.0.pack_id
    }
    /// The tickets of the records tracked in this batch (futures), for the package's own use.
    #[getter]
    fn tickets(&self) -> Vec<u64> {
        self.0.tickets.clone()
    }
    /// Sent again from a spool an earlier producer left.
    #[getter]
    fn replayed(&self) -> bool {
        self.0.replayed
    }

    fn __repr__(&self) -> String {
        let r = &self.0;
        match r.error_code() {
            None => format!(
                "DeliveryReport(delivered, records={}, attempts={}, request_id={:?})",
                r.records,
                r.attempts,
                r.request_id.as_deref().unwrap_or("")
            ),
            Some(code) => format!(
                "DeliveryReport(failed {code}, records={}, attempts={}, message={:?})",
                r.records,
                r.attempts,
                r.error_message().unwrap_or("")
            ),
        }
    }

    /// The report as a notebook shows it: a small table.
    fn _repr_html_(&self) -> String {
        let r = &self.0;
        let outcome = match (r.is_delivered(), r.is_kept(), r.error_code()) {
            (true, _, _) => "delivered".to_owned(),
            (_, true, _) => "kept in the spool".to_owned(),
            (_, _, code) => format!("failed: {}", code.unwrap_or("")),
        };
        let mut rows = vec![
            ("outcome", outcome),
            ("destination", format!("{}/{}", r.project, r.logstore)),
            ("records", r.records.to_string()),
            ("attempts", r.attempts.to_string()),
            (
                "raw / compressed bytes",
                format!("{} / {}", r.raw_bytes, r.compressed_bytes),
            ),
            ("latency ms", format!("{:.1}", r.latency_ms())),
            ("request id", r.request_id.clone().unwrap_or_default()),
        ];
        if let Some(message) = r.error_message() {
            rows.push(("message", message.to_owned()));
        }
        let cells: String = rows
            .iter()
            .map(|(k, v)| {
                format!(
                    "<tr><th style='text-align:left'>{k}</th><td>{}</td></tr>",
                    escape(v)
                )
            })
            .collect();
        format!("<table><caption style='text-align:left'>loghose delivery report, batch {}</caption>{cells}</table>", r.batch_id)
    }
}

/// `text` safe inside HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
}

/// The "failed and nobody was told" warnings of one producer: the engine's policy (one per
/// error code every ten seconds, each batch counted once), worded for Python.
#[pyclass(frozen, module = "loghose._native", name = "UndeliveredWarnings")]
#[derive(Default)]
pub(crate) struct PyUndeliveredWarnings(loghose::producer::bindings::UndeliveredWarnings);

#[pymethods]
impl PyUndeliveredWarnings {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Notes `records` of `report`'s batch that failed with nobody told; the warning to give
    /// now, if any.
    fn note(&self, report: &PyDeliveryReport, records: u64) -> Option<String> {
        self.0
            .note(&report.0, records)
            .map(|w| w.text(loghose::producer::bindings::Front::Python))
    }

    /// What the quiet time held back, to give now.
    fn flush(&self) -> Vec<String> {
        self.0
            .flush()
            .iter()
            .map(|w| w.text(loghose::producer::bindings::Front::Python))
            .collect()
    }
}
