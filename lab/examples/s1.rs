//! Scenario S1 (`docs/scenarios.md`): the C producer's published server benchmark, run against the
//! emulator in a child process (at nice 10, as a stand-in for a remote service) so the figures
//! are the producer's alone. `--workload s1r`: S1-R, the same method with access logs varied
//! as real ones are (`loghose_lab::S1RWorkload`); `--s1r-pool-out FILE` writes S1-R's records
//! for the C driver (`benches/vs-c`) and exits.
//!
//! For each rate it adds that many S1 logs per second for `--seconds` (timing only the adds,
//! sleeping out each second), flushes, then reads every log back through PullLogs and checks
//! each arrived exactly once with its exact contents. Then an unthrottled run adds as fast as
//! one thread can for `--unthrottled-seconds` and reports logs delivered per second and per CPU
//! second of the producer process, and what a scrape of its metrics costs (`scrape_ms`).
//! Prints the S1 table (markdown).
//!
//! `--latency-ms 50 --jitter-ms 5` has the emulator play a round trip a region away (its
//! network model), and each row says the 99th percentile of its batches' add-to-delivery
//! times (`delivery_p99_ms`); `--concurrency-mode fixed` compares the fixed send concurrency.
//!
//! `cargo run --release -p loghose-lab --example s1 -- [--rates 1000,200000] [--seconds 10]`

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use clap::Parser;
use loghose::producer::{Producer, ProducerConfig, SpoolSync};
use loghose::wire::compress::{self, Compression};
use loghose::wire::proto::LogGroupList;
use loghose::wire::request::{self, Auth};
use loghose_lab::harness::{self, Meter, ProcessSample, RateRun, UnthrottledRun};
use loghose_lab::{s1r_number, Row, S1RWorkload, S1Workload, S1R_POOL, S1_TAGS, S1_TOPIC};
use prost::Message;
use support::{thread_report, thread_times};

#[path = "support/mod.rs"]
mod support;

#[derive(Parser, Debug)]
struct Args {
    /// Rates in logs per second.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "100,200,1000,2000,10000,20000,100000,200000"
    )]
    rates: Vec<u64>,
    /// Seconds per rate.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Seconds of the unthrottled run (0 skips it).
    #[arg(long, default_value_t = 10)]
    unthrottled_seconds: u64,
    /// Producer preset.
    #[arg(long, default_value = "server")]
    preset: String,
    /// Spool every producer's records under this directory (one subdirectory each).
    #[arg(long)]
    spool_dir: Option<std::path::PathBuf>,
    /// `spool_sync` with --spool-dir: none, batch or interval:<ms>.
    #[arg(long, default_value = "none")]
    spool_sync: String,
    /// How much of each log's time is written: s, ms or ns (the producer's `time_precision`).
    #[arg(long, default_value = "ns")]
    time_precision: String,
    /// Pin the process (all its threads) to this core: scenario S2, the Pi's one core's worth.
    #[arg(long)]
    pin_core: Option<usize>,
    /// The logs: s1 (the C benchmark's two records) or s1r (access logs varied as real ones are).
    #[arg(long, default_value = "s1")]
    workload: String,
    /// Write S1-R's pool of records (a record a line, `key=value` fields separated by tabs) to
    /// this file and exit.
    #[arg(long)]
    s1r_pool_out: Option<std::path::PathBuf>,
    /// Round trip the emulator plays for every request, in milliseconds (a region away).
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Each round trip is the latency plus or minus up to this many milliseconds.
    #[arg(long, default_value_t = 0)]
    jitter_ms: u64,
    /// `send_concurrency_mode`: adaptive or fixed.
    #[arg(long, default_value = "adaptive")]
    concurrency_mode: String,
    /// `send_concurrency` instead of the preset's.
    #[arg(long)]
    send_concurrency: Option<usize>,
    /// Internal: run the emulator and print its endpoint.
    #[arg(long, hide = true)]
    emulator_child: bool,
    /// Internal: read back ENDPOINT LOGSTORE SENT WORKLOAD and print "received duplicates wrong".
    #[arg(long, hide = true, num_args = 4)]
    verify_child: Vec<String>,
}

/// What a scrape of the producer's metrics costs (`/metrics`: a snapshot rendered in the
/// Prometheus text format), median milliseconds of 21.
fn scrape_ms(p: &Producer) -> f64 {
    let spent: Vec<f64> = (0..21)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(loghose::metrics::encode_text(&p.metrics()));
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    (harness::median(&spent).unwrap_or(0.0) * 1000.0).round() / 1000.0
}

/// The logs a run adds.
enum Workload {
    S1(S1Workload),
    S1R(S1RWorkload),
}

impl Workload {
    fn named(name: &str) -> Workload {
        match name {
            "s1" => Workload::S1(S1Workload::default()),
            "s1r" => Workload::S1R(S1RWorkload::default()),
            other => panic!("--workload is s1 or s1r, not {other}"),
        }
    }

    #[inline]
    fn add(&self, producer: &Producer, n: u64) -> Result<(), loghose::producer::ProducerError> {
        match self {
            Workload::S1(w) => w.add(producer, n),
            Workload::S1R(w) => w.add(producer, n),
        }
    }

    fn scenario(&self) -> &'static str {
        match self {
            Workload::S1(_) => "s1",
            Workload::S1R(_) => "s1r",
        }
    }

    /// Raw bytes (keys and values) a log, on average over the run's first `logs` logs (S1-R's).
    fn raw_bytes_per_log(&self) -> Option<f64> {
        match self {
            Workload::S1(_) => None,
            Workload::S1R(w) => {
                let total: usize = (0..S1R_POOL)
                    .flat_map(|n| w.fields(n))
                    .map(|(k, v)| k.len() + v.len())
                    .sum();
                Some(total as f64 / S1R_POOL as f64)
            }
        }
    }
}

/// Runs this process (and every thread it starts from now on) on `core` only.
fn pin_to_core(core: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            eprintln!(
                "could not pin to core {core}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// Bytes this process has caused to be written to disk: `/proc/self/io` write_bytes (counted
/// when pages are dirtied) less cancelled_write_bytes (dirty pages dropped unwritten, as a
/// spool segment deleted before writeback).
fn disk_written() -> i64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let field = |name: &str| -> i64 {
        io.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    field("write_bytes:") - field("cancelled_write_bytes:")
}

fn producer(
    args: &Args,
    endpoint: &str,
    logstore: &str,
    block: bool,
    latencies: &Latencies,
) -> Producer {
    let mut config = ProducerConfig::preset(&args.preset).expect("preset");
    config.endpoint = endpoint.into();
    config.project = "bench-s1".into();
    config.logstore = logstore.into();
    config.access_key_id = loghose::emulator::DEFAULT_ACCESS_KEY_ID.into();
    config.access_key_secret = loghose::emulator::DEFAULT_ACCESS_KEY_SECRET.into();
    config.topic = S1_TOPIC.into();
    config.tags = S1_TAGS
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
    if block {
        config.max_block_ms = 60_000;
    }
    config.time_precision =
        serde_json::from_value(serde_json::Value::String(args.time_precision.clone()))
            .expect("--time-precision is s, ms or ns");
    config.send_concurrency_mode =
        serde_json::from_value(serde_json::Value::String(args.concurrency_mode.clone()))
            .expect("--concurrency-mode is adaptive or fixed");
    if let Some(n) = args.send_concurrency {
        config.send_concurrency = n;
    }
    if let Some(dir) = &args.spool_dir {
        config.spool_dir = Some(dir.join(logstore).display().to_string());
        config.spool_sync = SpoolSync::parse(&args.spool_sync)
            .expect("--spool-sync is none, batch or interval:<ms>");
    }
    let latencies = Arc::clone(latencies);
    let on_reports: loghose::producer::ReportCallback = Box::new(move |reports| {
        let mut l = latencies.lock().expect("latencies");
        l.extend(reports.iter().map(|r| r.latency.as_secs_f64() * 1000.0));
    });
    Producer::build(config, None, Some(on_reports)).expect("producer")
}

/// Each batch's time from its first add to its delivery, in milliseconds, as reported.
type Latencies = Arc<std::sync::Mutex<Vec<f64>>>;

/// The 99th percentile of the batches' add-to-delivery times, emptying `latencies`.
fn delivery_p99_ms(latencies: &Latencies) -> f64 {
    let mut l = std::mem::take(&mut *latencies.lock().expect("latencies"));
    l.sort_by(f64::total_cmp);
    harness::percentile(&l, 0.99).unwrap_or(0.0)
}

struct ReadBack {
    received: u64,
    duplicates: u64,
    wrong: u64,
}

/// Reads every log of a logstore back with PullLogs and checks the S1 contents exactly.
fn read_back(
    rt: &tokio::runtime::Runtime,
    endpoint: &str,
    logstore: &str,
    sent: u64,
    kind: &str,
) -> ReadBack {
    let client = reqwest::Client::new();
    let auth = Auth::V1(loghose::wire::sign::Credentials::new(
        loghose::emulator::DEFAULT_ACCESS_KEY_ID,
        loghose::emulator::DEFAULT_ACCESS_KEY_SECRET,
    ));
    let host = "bench-s1.127.0.0.1";
    let workload = S1Workload::default();
    // S1-R: each log is one of `sent`, named by its request id.
    let real = (kind == "s1r").then(S1RWorkload::default);
    let iterations = if real.is_some() {
        sent as usize
    } else {
        sent.div_ceil(2) as usize
    };
    let mut seen = vec![false; iterations];
    let (mut received, mut duplicates, mut wrong, mut b_logs) = (0u64, 0u64, 0u64, 0u64);
    for shard in 0..2u32 {
        let path = format!("/logstores/{logstore}/shards/{shard}");
        let get = |query: Vec<(&str, String)>| {
            let q: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let req = request::get(
                host,
                &path,
                &q,
                &[("Accept-Encoding", "lz4")],
                &auth,
                SystemTime::now(),
            );
            let mut b = client.get(format!("{endpoint}{}", req.path_and_query()));
            for (k, v) in &req.headers {
                b = b.header(k.as_str(), v.as_str());
            }
            rt.block_on(async { b.send().await.expect("emulator answers") })
        };
        let resp = get(vec![("type", "cursor".into()), ("from", "begin".into())]);
        let v: serde_json::Value = rt.block_on(resp.json()).expect("cursor json");
        let mut cursor = v["cursor"].as_str().expect("cursor").to_owned();
        loop {
            let resp = get(vec![
                ("type", "log".into()),
                ("cursor", cursor.clone()),
                ("count", "100".into()),
            ]);
            let h = |n: &str| {
                resp.headers()
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("0")
                    .to_owned()
            };
            if h("x-log-count") == "0" {
                break;
            }
            let raw_size: usize = h("x-log-bodyrawsize").parse().unwrap_or(0);
            let codec = Compression::from_header(Some(&h("x-log-compresstype")))
                .unwrap_or(Compression::None);
            cursor = h("x-log-cursor");
            let body = rt.block_on(resp.bytes()).expect("body");
            let raw = compress::decompress(codec, &body, raw_size).expect("decodes");
            let list = LogGroupList::decode(raw.as_slice()).expect("LogGroupList");
            for group in list.log_groups {
                let tags_ok = group.topic.as_deref() == Some(S1_TOPIC)
                    && group
                        .log_tags
                        .iter()
                        .take(5)
                        .map(|t| (t.key.as_str(), t.value.as_str()))
                        .eq(S1_TAGS.iter().copied())
                    && group.log_tags.iter().any(|t| t.key == "__pack_id__");
                for log in group.logs {
                    received += 1;
                    let fields: Vec<(&str, &str)> = log
                        .contents
                        .iter()
                        .map(|c| (c.key.as_str(), c.value.as_str()))
                        .collect();
                    if let Some(real) = &real {
                        let n = fields
                            .iter()
                            .find(|(k, _)| *k == "request_id")
                            .and_then(|(_, v)| s1r_number(v))
                            .filter(|n| *n < sent);
                        match n {
                            Some(n)
                                if tags_ok
                                    && fields.iter().copied().eq(real
                                        .fields(n)
                                        .iter()
                                        .map(|(k, v)| (*k, v.as_str()))) =>
                            {
                                if std::mem::replace(&mut seen[n as usize], true) {
                                    duplicates += 1;
                                }
                            }
                            _ => wrong += 1,
                        }
                        continue;
                    }
                    if fields.len() == 4 {
                        b_logs += 1;
                        if !tags_ok
                            || !fields
                                .iter()
                                .copied()
                                .eq(workload.b.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                        {
                            wrong += 1;
                        }
                        continue;
                    }
                    let index = fields.last().and_then(|(k, v)| {
                        (*k == "index").then(|| v.parse::<usize>().ok()).flatten()
                    });
                    let body_ok = fields.len() == 10
                        && fields[..9].iter().copied().eq(workload.a[..9]
                            .iter()
                            .map(|(k, v)| (k.as_str(), v.as_str())));
                    match index {
                        Some(i) if i < iterations && body_ok && tags_ok => {
                            if std::mem::replace(&mut seen[i], true) {
                                duplicates += 1;
                            }
                        }
                        _ => wrong += 1,
                    }
                }
            }
        }
    }
    let expected_b = if real.is_some() { 0 } else { sent / 2 };
    if b_logs > expected_b {
        duplicates += b_logs - expected_b;
    }
    ReadBack {
        received,
        duplicates,
        wrong,
    }
}

fn verify_in_child(endpoint: &str, logstore: &str, sent: u64, kind: &str) -> ReadBack {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .arg("--verify-child")
        .args([endpoint, logstore, &sent.to_string(), kind])
        .output()
        .expect("verifier");
    let text = String::from_utf8_lossy(&out.stdout);
    let n: Vec<u64> = text
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    match n.as_slice() {
        [received, duplicates, wrong] => ReadBack {
            received: *received,
            duplicates: *duplicates,
            wrong: *wrong,
        },
        _ => ReadBack {
            received: 0,
            duplicates: 0,
            wrong: sent,
        },
    }
}

fn main() {
    let args = Args::parse();
    if args.emulator_child {
        support::run_emulator_child();
        return;
    }
    if let Some(path) = &args.s1r_pool_out {
        std::fs::write(path, S1RWorkload::default().pool_lines()).expect("pool written");
        return;
    }
    if let [endpoint, logstore, sent, kind] = args.verify_child.as_slice() {
        // Verification runs in its own process so its memory never counts as the producer's.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let r = read_back(&rt, endpoint, logstore, sent.parse().expect("sent"), kind);
        println!("{} {} {}", r.received, r.duplicates, r.wrong);
        return;
    }
    let emulator = support::ChildEmulator::start();
    if args.latency_ms > 0 || args.jitter_ms > 0 {
        emulator.set_network(args.latency_ms, args.jitter_ms);
    }
    let latencies: Latencies = Arc::default();
    // Pinned after the emulator started: it stands in for a remote service, not for the Pi.
    if let Some(core) = args.pin_core {
        pin_to_core(core);
    }
    let endpoint = emulator.endpoint.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let workload = Workload::named(&args.workload);
    let real = matches!(workload, Workload::S1R(_));
    let idle = ProcessSample::now();
    println!(
        "{} `{}` preset, {} s per rate, emulator in a child process at {endpoint}, round trip {} ± {} ms, {} concurrency",
        if real { "S1-R" } else { "S1" },
        args.preset,
        args.seconds,
        args.latency_ms,
        args.jitter_ms,
        args.concurrency_mode
    );
    println!();
    if let Some(dir) = &args.spool_dir {
        println!(
            "Spooled under {} (spool_sync {})",
            dir.display(),
            args.spool_sync
        );
        println!();
    }
    let mut failed = false;
    let mut rows: Vec<Row> = Vec::new();
    let mut next = 0u64;
    for &rate in &args.rates {
        // Rates are of logs, in S1 pairs (a ten-field log and a four-field one); S1-R's too, so
        // the rows of both read alike.
        let rate = rate.max(2) / 2 * 2;
        let logstore = format!("rate-{rate}");
        let mut meter = Meter::start(&endpoint, "bench-s1", &logstore).expect("emulator admin");
        let p = producer(&args, &endpoint, &logstore, false, &latencies);
        let threads0 = thread_times();
        let disk0 = disk_written();
        meter.begin();
        let t0 = Instant::now();
        let (mut took, mut adds, mut refused) = (Vec::new(), 0u64, 0u64);
        let first = next;
        for second in 0..args.seconds {
            let second_start = t0 + Duration::from_secs(second);
            let started = Instant::now();
            for _ in 0..rate {
                if workload.add(&p, next - first).is_err() {
                    refused += 1;
                }
                next += 1;
            }
            took.push(started.elapsed().as_secs_f64());
            adds += rate;
            let end = second_start + Duration::from_secs(1);
            if let Some(rest) = end.checked_duration_since(Instant::now()) {
                std::thread::sleep(rest);
            }
        }
        let pending = p.flush(Duration::from_secs(120));
        meter.stop();
        if let Some(dir) = &args.spool_dir {
            eprintln!("{}", spool_mappings(dir));
        }
        eprintln!(
            "threads at {rate} logs/s: {}",
            thread_report(&threads0, &thread_times())
        );
        drop(p);
        let disk_per_log = (disk_written() - disk0).max(0) as f64 / adds.max(1) as f64;
        // Every log read back, its contents checked, in a child process (its memory is not
        // the producer's).
        let check = verify_in_child(&endpoint, &logstore, adds, workload.scenario());
        let row = meter
            .rate_row(&RateRun {
                scenario: workload.scenario().into(),
                preset: args.preset.clone(),
                pairs_per_second: rate / 2,
                raw_bytes_per_log: workload.raw_bytes_per_log(),
                took_seconds: took,
                refused,
                pending,
                idle,
                extra: vec![
                    ("disk_b_per_log".into(), disk_per_log.into()),
                    ("read_back_duplicates".into(), check.duplicates.into()),
                    ("read_back_wrong".into(), check.wrong.into()),
                    ("delivery_p99_ms".into(), delivery_p99_ms(&latencies).into()),
                ],
            })
            .expect("emulator admin");
        failed |= harness::failed(&row) || check.duplicates > 0 || check.wrong > 0;
        rows.push(row);
    }
    if args.unthrottled_seconds > 0 {
        let mut meter = Meter::start(&endpoint, "bench-s1", "unthrottled").expect("emulator admin");
        let p = producer(&args, &endpoint, "unthrottled", true, &latencies);
        let threads0 = thread_times();
        let usage0 = support::usage();
        meter.begin();
        let t0 = Instant::now();
        let mut n = 0u64;
        let stop = t0 + Duration::from_secs(args.unthrottled_seconds);
        while Instant::now() < stop {
            for _ in 0..1000 {
                workload.add(&p, n).expect("blocking add");
                n += 1;
            }
        }
        let add_seconds = t0.elapsed().as_secs_f64();
        let pending = p.flush(Duration::from_secs(300));
        meter.stop();
        let switches = support::usage().per_1k_logs_since(&usage0, n);
        eprintln!(
            "threads unthrottled: {}",
            thread_report(&threads0, &thread_times())
        );
        let scrape_ms = scrape_ms(&p);
        drop(p);
        let row = meter
            .unthrottled_row(&UnthrottledRun {
                scenario: Some(workload.scenario().into()),
                preset: args.preset.clone(),
                sent: n,
                add_seconds,
                pending,
                extra: [
                    ("scrape_ms".into(), scrape_ms.into()),
                    ("delivery_p99_ms".into(), delivery_p99_ms(&latencies).into()),
                ]
                .into_iter()
                .chain(switches)
                .collect(),
            })
            .expect("emulator admin");
        failed |= harness::failed(&row);
        rows.push(row);
    }
    println!("{}", loghose_lab::markdown_tables(&rows));
    let counters: serde_json::Value = rt
        .block_on(async {
            reqwest::get(format!("{endpoint}/_emulator/counters"))
                .await?
                .json()
                .await
        })
        .expect("counters");
    let logs = counters["logs"].as_u64().unwrap_or(0).max(1) as f64;
    println!();
    println!(
        "Bytes per log on the wire (time precision {}): {:.2} compressed, {:.1} raw",
        args.time_precision,
        counters["compressed_bytes"].as_u64().unwrap_or(0) as f64 / logs,
        counters["raw_bytes"].as_u64().unwrap_or(0) as f64 / logs,
    );
    println!();
    println!("Idle RSS before the first producer: {:.1} MB", idle.rss_mb);
    drop(emulator);
    if failed {
        eprintln!(
            "{} FAILED: logs were lost, duplicated or altered",
            workload.scenario()
        );
        std::process::exit(1);
    }
}

/// What of this process's RSS is the spool's files (batch files and segments), from
/// `/proc/self/smaps`: the part of an RSS figure a spool adds.
fn spool_mappings(dir: &std::path::Path) -> String {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    let dir = dir.display().to_string();
    let (mut kind, mut totals) = (None, std::collections::BTreeMap::<&str, (f64, u32)>::new());
    for line in smaps.lines() {
        if line
            .split_whitespace()
            .nth(5)
            .is_some_and(|p| p.starts_with(&dir))
        {
            kind = Some(if line.ends_with(".spb") {
                "batch files"
            } else {
                "segments"
            });
        } else if let (Some(k), Some(kb)) = (kind, line.strip_prefix("Rss:")) {
            let kb: f64 = kb
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(0.0);
            let t = totals.entry(k).or_default();
            t.0 += kb / 1024.0;
            t.1 += 1;
            kind = None;
        }
    }
    let parts: Vec<String> = totals
        .iter()
        .map(|(k, (mb, n))| format!("{k} {mb:.1} MB in {n} mappings"))
        .collect();
    format!(
        "spool files resident at the measurement: {}",
        parts.join(", ")
    )
}
