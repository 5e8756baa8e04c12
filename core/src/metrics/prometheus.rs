//! The snapshot through the `prometheus-client` crate: [`ProducerCollector`] registers a
//! producer with an application's `Registry` (encoded at each scrape, in whichever format the
//! registry's encoder writes), and [`encode_text`] renders a snapshot in the Prometheus text
//! format (0.0.4) for the command's `/metrics` and the fronts' fast exposition
//! ([`encode_text_labelled`], with constant labels).
//!
//! The collector holds the producer weakly: a closed and dropped producer leaves nothing to
//! scrape rather than being kept alive by the registry. Runs on the scraping thread; a scrape
//! copies the counters and never waits on the I/O threads beyond the meters' short lock.

use std::sync::Weak;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType as PromType;
use prometheus_client::registry::{Registry, Unit};

use super::table::{Family, MetricType, Sample};
use crate::producer::Producer;

/// The content type of [`encode_text`]'s output.
pub const TEXT_CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// A producer's metrics, for `Registry::register_collector`.
#[derive(Debug)]
pub struct ProducerCollector {
    producer: Weak<Producer>,
}

impl ProducerCollector {
    /// Collects `producer`'s metrics for as long as it lives.
    pub fn new(producer: &std::sync::Arc<Producer>) -> ProducerCollector {
        ProducerCollector {
            producer: std::sync::Arc::downgrade(producer),
        }
    }
}

impl Collector for ProducerCollector {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        match self.producer.upgrade() {
            Some(producer) => encode_families(&producer.metrics(), encoder),
            None => Ok(()),
        }
    }
}

#[derive(Debug)]
struct Snapshot(Vec<Family>);

impl Collector for Snapshot {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        encode_families(&self.0, encoder)
    }
}

/// `families` in the Prometheus text format.
pub fn encode_text(families: &[Family]) -> String {
    encode_text_in(Registry::default(), families)
}

/// `families` in the Prometheus text format, every sample also carrying `const_labels` (what
/// tells several producers apart in one scrape). A label name that Prometheus would refuse, or
/// that a metric of the table already uses, is an error naming it.
pub fn encode_text_labelled(
    families: &[Family],
    const_labels: &[(String, String)],
) -> Result<String, ConstLabelError> {
    check_const_labels(const_labels)?;
    let labels = const_labels
        .iter()
        .map(|(k, v)| (k.clone().into(), v.clone().into()));
    Ok(encode_text_in(Registry::with_labels(labels), families))
}

fn encode_text_in(mut registry: Registry, families: &[Family]) -> String {
    registry.register_collector(Box::new(Snapshot(families.to_vec())));
    let mut out = String::new();
    // Writing into a String does not fail.
    let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry);
    out
}

/// A constant label that cannot be added to the producer's metrics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConstLabelError {
    /// Not `[a-zA-Z_][a-zA-Z0-9_]*`, or starts with `__` (reserved by Prometheus).
    #[error("constant label name {0:?} is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)")]
    InvalidName(String),
    /// A label the producer's own metrics carry (`project`, `logstore`, `le`...).
    #[error("constant label name {0:?} is one the producer's metrics already carry")]
    Taken(String),
    /// Given twice.
    #[error("constant label name {0:?} is given twice")]
    Repeated(String),
}

/// Checks constant label names: valid for Prometheus, not one of the table's labels (nor
/// `le`, a histogram's), each once.
pub fn check_const_labels(const_labels: &[(String, String)]) -> Result<(), ConstLabelError> {
    for (i, (name, _)) in const_labels.iter().enumerate() {
        let mut chars = name.chars();
        let valid = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with("__");
        if !valid {
            return Err(ConstLabelError::InvalidName(name.clone()));
        }
        let taken = name == "le"
            || super::table::METRICS
                .iter()
                .any(|spec| spec.labels.contains(&name.as_str()));
        if taken {
            return Err(ConstLabelError::Taken(name.clone()));
        }
        if const_labels[..i].iter().any(|(earlier, _)| earlier == name) {
            return Err(ConstLabelError::Repeated(name.clone()));
        }
    }
    Ok(())
}

fn encode_families(
    families: &[Family],
    mut encoder: DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    for family in families {
        let spec = family.spec;
        let unit = match spec.unit {
            "" => None,
            "bytes" => Some(Unit::Bytes),
            "seconds" => Some(Unit::Seconds),
            other => Some(Unit::Other(other.to_owned())),
        };
        let kind = match spec.kind {
            MetricType::Counter => PromType::Counter,
            MetricType::Gauge => PromType::Gauge,
            MetricType::Histogram => PromType::Histogram,
        };
        let mut metric = encoder.encode_descriptor(spec.stem, spec.help, unit.as_ref(), kind)?;
        for sample in &family.samples {
            let labels: Vec<(&str, &str)> = spec
                .labels
                .iter()
                .zip(&sample.labels)
                .map(|(k, v)| (*k, v.as_str()))
                .collect();
            let sample_encoder = metric.encode_family(&labels)?;
            encode_sample(spec.kind, sample, sample_encoder)?;
        }
    }
    Ok(())
}

fn encode_sample(
    kind: MetricType,
    sample: &Sample,
    mut encoder: MetricEncoder,
) -> Result<(), std::fmt::Error> {
    match (&sample.histogram, kind) {
        (Some(h), _) => {
            let buckets: Vec<(f64, u64)> = h
                .bounds
                .iter()
                .zip(&h.cumulative)
                .enumerate()
                .map(|(i, (&bound, &cumulative))| {
                    // The crate takes each bucket's own count and accumulates.
                    let before = if i == 0 { 0 } else { h.cumulative[i - 1] };
                    (bound, cumulative - before)
                })
                .chain(std::iter::once((
                    f64::INFINITY,
                    h.count - h.cumulative.last().copied().unwrap_or(0),
                )))
                .collect();
            encoder.encode_histogram::<NoLabelSet>(h.sum, h.count, &buckets, None)
        }
        (None, MetricType::Counter) => {
            encoder.encode_counter::<NoLabelSet, _, u64>(&sample.value, None)
        }
        (None, _) => encoder.encode_gauge(&(sample.value as i64)),
    }
}
