//! The producer's metrics against the emulator under faults: every family of the table in its
//! order, per-destination counts that add up to `stats()` and to what the emulator received,
//! failures and retries visible by code and status, and the Prometheus text of a snapshot.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use loghose::emulator::{Emulator, Fault, FaultAction};
use loghose::metrics::{self, Family, METRICS};
use loghose::producer::{Producer, ProducerConfig, SendOptions};

mod common;

use common::producer::{config, WAIT};

fn family<'a>(families: &'a [Family], name: &str) -> &'a Family {
    families
        .iter()
        .find(|f| f.spec.name == name)
        .unwrap_or_else(|| panic!("no family {name}"))
}

/// The samples of a family by their label values joined with `/`.
fn by_labels(f: &Family) -> BTreeMap<String, u64> {
    f.samples
        .iter()
        .map(|s| (s.labels.join("/"), s.value))
        .collect()
}

/// `name{labels} value` lines of a Prometheus text exposition.
fn parse_text(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').expect("a sample line");
            (series.to_owned(), value.parse().expect("a number"))
        })
        .collect()
}

#[test]
fn metrics_agree_with_stats_and_the_emulator_under_faults() {
    let emu = Emulator::start_default().unwrap();
    let p = Producer::new(ProducerConfig {
        request_timeout_ms: 500,
        batch_max_count: 10,
        ..config(&emu)
    })
    .unwrap();
    // Retried: two 503s, a reset, a hang past the request timeout. Final: one 400.
    emu.inject(Fault::error(503, "ServerBusy", 2));
    emu.inject(Fault::times(FaultAction::Reset, 1));
    emu.inject(Fault::times(FaultAction::Hang { ms: Some(3_000) }, 1));
    emu.inject(Fault::error(400, "ParameterInvalid", 1));
    let mut completions = Vec::new();
    for i in 0..60 {
        let logstore = if i % 3 == 0 { "other" } else { "store" };
        let opts = SendOptions {
            logstore: Some(logstore),
            ..SendOptions::default()
        };
        let id = i.to_string();
        completions.push(
            p.send_with_completion(&[("id", id.as_str())], &opts)
                .unwrap(),
        );
    }
    assert!(p.send(&[("", "no key")], &SendOptions::default()).is_err());
    p.flush(WAIT);
    let mut batches = BTreeMap::new();
    for c in completions {
        let report = c.wait(WAIT).unwrap();
        batches.insert(report.batch_id, report);
    }
    let stats = p.stats();
    let families = p.metrics();

    let names: Vec<&str> = families.iter().map(|f| f.spec.name).collect();
    let table: Vec<&str> = METRICS.iter().map(|s| s.name).collect();
    assert_eq!(names, table, "a snapshot lists the table, in order");

    let delivered = family(&families, "loghose_records_delivered");
    let failed = family(&families, "loghose_records_failed");
    assert_eq!(delivered.total(), stats.delivered);
    assert_eq!(failed.total(), stats.failed);
    assert_eq!(stats.delivered + stats.failed, 60);
    assert_eq!(stats.failed, 10, "one batch of ten failed: {stats:?}");
    let received = emu.totals("proj", "store").map_or(0, |t| t.logs)
        + emu.totals("proj", "other").map_or(0, |t| t.logs);
    assert_eq!(delivered.total(), received);
    let per_logstore = by_labels(delivered);
    assert_eq!(
        per_logstore.get("proj/store").copied().unwrap_or(0),
        emu.totals("proj", "store").map_or(0, |t| t.logs)
    );
    assert_eq!(
        by_labels(failed).values().sum::<u64>(),
        10,
        "{:?}",
        by_labels(failed)
    );
    assert!(by_labels(failed)
        .keys()
        .all(|k| k.ends_with("/ParameterInvalid")));

    let retries = family(&families, "loghose_request_retries");
    assert_eq!(retries.total(), stats.retried);
    assert_eq!(stats.retried, 4, "two 503s, a reset, a hang: {stats:?}");
    let requests = family(&families, "loghose_request_duration_seconds");
    let attempts: u64 = batches.values().map(|r| u64::from(r.attempts)).sum();
    assert_eq!(requests.total(), attempts);
    let by_status: BTreeMap<String, u64> =
        requests.samples.iter().fold(BTreeMap::new(), |mut m, s| {
            *m.entry(s.labels[2].clone()).or_default() += s.value;
            m
        });
    assert_eq!(by_status.get("503"), Some(&2), "{by_status:?}");
    assert_eq!(by_status.get("400"), Some(&1), "{by_status:?}");
    assert_eq!(
        by_status.get(metrics::NO_ANSWER_STATUS),
        Some(&2),
        "{by_status:?}"
    );
    // The hang was cut at the request timeout: its duration is in the 0.5 s bucket or above.
    let no_answer = requests
        .samples
        .iter()
        .filter(|s| s.labels[2] == metrics::NO_ANSWER_STATUS)
        .map(|s| s.histogram.as_ref().unwrap().sum)
        .sum::<f64>();
    assert!(no_answer >= 0.45, "{no_answer}");

    let raw = family(&families, "loghose_sent_raw_bytes").total();
    let compressed = family(&families, "loghose_sent_compressed_bytes").total();
    let counters = emu.counters();
    assert!(raw >= counters.raw_bytes && compressed >= counters.compressed_bytes);
    let refused = by_labels(family(&families, "loghose_records_refused"));
    assert_eq!(refused.get("invalid"), Some(&1));
    assert_eq!(refused.get("buffer_full"), Some(&0));
    assert_eq!(family(&families, "loghose_records_pending").total(), 0);
    assert_eq!(
        family(&families, "loghose_buffer_capacity_bytes").total(),
        p.config().buffer_max_bytes as u64
    );
    let latency = family(&families, "loghose_delivery_latency_seconds");
    assert_eq!(latency.total(), stats.batches_delivered);

    // The text exposition carries the same numbers.
    let text = metrics::encode_text(&families);
    let series = parse_text(&text);
    assert_eq!(
        series[r#"loghose_records_delivered_total{project="proj",logstore="store"}"#] as u64,
        per_logstore["proj/store"]
    );
    assert_eq!(series["loghose_records_accepted_total"] as u64, 60);
    let inf = series
        .iter()
        .filter(|(k, _)| {
            k.starts_with("loghose_request_duration_seconds_bucket") && k.contains(r#"le="+Inf""#)
        })
        .map(|(_, v)| *v as u64)
        .sum::<u64>();
    assert_eq!(inf, attempts);
    assert!(text.contains("# TYPE loghose_delivery_latency_seconds histogram"));
    p.close(Duration::from_secs(5));
}

#[test]
fn destinations_past_the_bound_are_one_series_and_the_totals_stay_exact() {
    let emu = Emulator::start_default().unwrap();
    let p = Producer::new(ProducerConfig {
        linger_ms: 20,
        ..config(&emu)
    })
    .unwrap();
    let stores = metrics::MAX_DESTINATIONS + 4;
    for i in 0..stores {
        let logstore = format!("store{i}");
        let opts = SendOptions {
            logstore: Some(&logstore),
            ..SendOptions::default()
        };
        p.send(&[("id", "x")], &opts).unwrap();
    }
    p.flush(WAIT);
    let families = p.metrics();
    let delivered = family(&families, "loghose_records_delivered");
    assert_eq!(delivered.samples.len(), metrics::MAX_DESTINATIONS + 1);
    assert_eq!(delivered.total(), stores as u64);
    let other = format!("{0}/{0}", metrics::OTHER_DESTINATION);
    assert_eq!(by_labels(delivered)[&other], 4);
    p.close(Duration::from_secs(5));
}

#[test]
fn a_dropped_producer_leaves_nothing_to_collect() {
    use prometheus_client::registry::Registry;
    let emu = Emulator::start_default().unwrap();
    let p = std::sync::Arc::new(Producer::new(config(&emu)).unwrap());
    let mut registry = Registry::default();
    registry.register_collector(Box::new(metrics::ProducerCollector::new(&p)));
    p.send(&[("id", "1")], &SendOptions::default()).unwrap();
    p.flush(WAIT);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.contains("loghose_records_delivered_total{project=\"proj\",logstore=\"store\"} 1"));
    drop(p);
    let mut after = String::new();
    prometheus_client::encoding::text::encode(&mut after, &registry).unwrap();
    assert!(!after.contains("loghose_"), "{after}");
}

/// The monitoring guide's metric table (docs/guides/monitoring.md) is rendered from [`METRICS`]; `LOGHOSE_REGENERATE=1` rewrites it.
#[test]
fn the_monitoring_guides_metric_table_is_the_engine_table() {
    const BEGIN: &str = "<!-- BEGIN metrics generated from the engine's metric table -->\n";
    const END: &str = "<!-- END metrics generated from the engine's metric table -->\n";
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/guides/monitoring.md");
    let guide = std::fs::read_to_string(&path).unwrap();
    let start = guide.find(BEGIN).expect("the BEGIN marker") + BEGIN.len();
    let end = guide.find(END).expect("the END marker");
    let rendered = metrics::markdown_table();
    if std::env::var_os("LOGHOSE_REGENERATE").is_some() {
        let updated = format!("{}{rendered}{}", &guide[..start], &guide[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert_eq!(
        &guide[start..end],
        rendered,
        "docs/guides/monitoring.md's metric table differs from loghose::metrics::METRICS; run \
         `LOGHOSE_REGENERATE=1 cargo test -p loghose --test metrics` and commit the result"
    );
}

#[test]
fn constant_labels_reach_every_sample_and_bad_names_are_refused_by_name() {
    let emu = Emulator::start_default().unwrap();
    let p = Producer::new(config(&emu)).unwrap();
    p.send(&[("id", "x")], &SendOptions::default()).unwrap();
    p.flush(WAIT);
    let mut families = p.metrics();
    metrics::add_to_sample(&mut families, &metrics::CALLBACK_ERRORS, 3);
    let labels = vec![
        ("producer".to_owned(), "audit".to_owned()),
        ("note".to_owned(), "a \"quoted\"\nvalue".to_owned()),
    ];
    let text = metrics::encode_text_labelled(&families, &labels).unwrap();
    let series = parse_text(&text);
    let samples = series.len();
    assert!(samples > 20, "{text}");
    // Every sample carries both labels, the value escaped as the text format requires.
    let labelled = series
        .keys()
        .filter(|k| {
            k.contains(r#"producer="audit""#) && k.contains(r#"note="a \"quoted\"\nvalue""#)
        })
        .count();
    assert_eq!(labelled, samples, "{text}");
    let delivered = series
        .iter()
        .find(|(k, _)| {
            k.starts_with("loghose_records_delivered_total{") && k.contains("logstore=\"store\"")
        })
        .map(|(_, v)| *v);
    assert_eq!(delivered, Some(1.0), "{text}");
    let callback_errors = series
        .iter()
        .find(|(k, _)| k.starts_with("loghose_report_callback_errors_total"))
        .map(|(_, v)| *v);
    assert_eq!(callback_errors, Some(3.0), "{text}");

    for (name, wanted) in [
        (
            "9lives",
            metrics::ConstLabelError::InvalidName("9lives".into()),
        ),
        ("a-b", metrics::ConstLabelError::InvalidName("a-b".into())),
        (
            "__name",
            metrics::ConstLabelError::InvalidName("__name".into()),
        ),
        ("", metrics::ConstLabelError::InvalidName(String::new())),
        (
            "logstore",
            metrics::ConstLabelError::Taken("logstore".into()),
        ),
        ("le", metrics::ConstLabelError::Taken("le".into())),
    ] {
        let refused =
            metrics::encode_text_labelled(&families, &[(name.to_owned(), "v".to_owned())]);
        assert_eq!(refused, Err(wanted.clone()), "{name}");
        assert!(wanted.to_string().contains(&format!("{name:?}")));
    }
    let twice = [
        ("a".to_owned(), "1".to_owned()),
        ("a".to_owned(), "2".to_owned()),
    ];
    assert_eq!(
        metrics::encode_text_labelled(&families, &twice),
        Err(metrics::ConstLabelError::Repeated("a".into()))
    );
    p.close(Duration::from_secs(5));
}

/// Spool data files under `dir`, every slot included.
fn spool_files_on_disk(dir: &std::path::Path) -> u64 {
    let mut n = 0;
    for slot in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
        if !slot.path().is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(slot.path())
            .unwrap()
            .filter_map(Result::ok)
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            n += u64::from(name.ends_with(".spl") || name.ends_with(".spb"));
        }
    }
    n
}

#[test]
fn the_spool_file_gauge_counts_what_the_directory_holds() {
    let emu = Emulator::start_default().unwrap();
    let dir = std::env::temp_dir().join(format!(
        "loghose-metrics-spool-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    let p = Producer::new(ProducerConfig {
        spool_dir: Some(dir.display().to_string()),
        linger_ms: 20,
        ..config(&emu)
    })
    .unwrap();
    let files = |p: &Producer| family(&p.metrics(), "loghose_spool_files").total();
    // Held by a hang: the records are in spool files until delivered.
    emu.inject(Fault::times(FaultAction::Hang { ms: Some(1_500) }, 2));
    for i in 0..40 {
        let logstore = if i % 2 == 0 { "store" } else { "elsewhere" };
        let opts = SendOptions {
            logstore: Some(logstore),
            ..SendOptions::default()
        };
        p.send(&[("id", &i.to_string())], &opts).unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let while_held = files(&p);
    assert!(while_held >= 1, "{while_held}");
    assert_eq!(while_held, spool_files_on_disk(&dir));
    assert_eq!(p.flush(WAIT), 0);
    assert_eq!(files(&p), spool_files_on_disk(&dir));
    // Without a spool there is nothing to count.
    let plain = Producer::new(config(&emu)).unwrap();
    assert_eq!(files(&plain), 0);
    plain.close(Duration::from_secs(5));
    p.close(Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(&dir);
}
