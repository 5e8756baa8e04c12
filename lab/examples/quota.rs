//! The producer under the service's write quotas, against the emulator's (in a child process,
//! at nice 10): what gets through, what is refused, and whether anything is lost.
//!
//! - `--shard`: one producer adds S1-R access logs as fast as it can (adds block when the
//!   buffer is full) into a logstore of `--shards` shards of `--shard-bytes-per-sec` raw bytes
//!   each, for `--seconds`. Each second it reads the emulator's counters: raw bytes accepted
//!   (goodput) and requests refused. After `--converge-seconds`, goodput as a share of the
//!   quota and the share of requests refused; then every record read back counted.
//! - `--fleet N`: N producer processes (this program again) share one project's quota of
//!   `--project-bytes-per-sec` raw bytes (written as the per-minute figure the service uses),
//!   each into a logstore of its own: every record delivered, requests refused in all, and each
//!   process's delivered bytes against the fair share.
//!
//! Prints one markdown table row per mode (BENCHMARKS.md keeps them).
//!
//! `cargo run --release -p loghose-lab --example quota -- --shard` or `-- --fleet 20`

use std::io::BufRead as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use loghose::producer::{ConcurrencyMode, Producer, ProducerConfig};
use loghose_lab::harness::AdminClient;
use loghose_lab::S1RWorkload;
use serde_json::json;

#[path = "support/mod.rs"]
mod support;

#[derive(Parser, Debug)]
struct Args {
    /// One producer against shard quotas.
    #[arg(long)]
    shard: bool,
    /// This many producer processes against one project quota.
    #[arg(long)]
    fleet: Option<usize>,
    /// Shards of the logstore (`--shard`).
    #[arg(long, default_value_t = 2)]
    shards: u32,
    /// Raw bytes per second a shard takes (`--shard`).
    #[arg(long, default_value_t = 1_000_000)]
    shard_bytes_per_sec: u64,
    /// Raw bytes per second the project takes (`--fleet`).
    #[arg(long, default_value_t = 4_000_000)]
    project_bytes_per_sec: u64,
    /// Seconds of adding.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// Seconds left out of the measure while the producer finds the quota.
    #[arg(long, default_value_t = 10)]
    converge_seconds: u64,
    /// Round trip the emulator plays, milliseconds.
    #[arg(long, default_value_t = 10)]
    latency_ms: u64,
    /// `send_concurrency_mode`: adaptive or fixed.
    #[arg(long, default_value = "adaptive")]
    concurrency_mode: String,
    /// Internal: run the emulator and print its endpoint.
    #[arg(long, hide = true)]
    emulator_child: bool,
    /// Internal: one producer of a fleet: ENDPOINT LOGSTORE.
    #[arg(long, hide = true, num_args = 2)]
    fleet_child: Vec<String>,
}

fn producer(args: &Args, endpoint: &str, logstore: &str) -> Producer {
    let mut config = ProducerConfig::preset("server").expect("preset");
    config.endpoint = endpoint.into();
    config.project = "bench-quota".into();
    config.logstore = logstore.into();
    config.access_key_id = loghose::emulator::DEFAULT_ACCESS_KEY_ID.into();
    config.access_key_secret = loghose::emulator::DEFAULT_ACCESS_KEY_SECRET.into();
    // Batches of 512 KiB: a quota of a few MB a second takes several a second.
    config.batch_max_bytes = 512 * 1024;
    config.linger_ms = 200;
    config.max_block_ms = 600_000;
    config.buffer_max_bytes = 8 * 1024 * 1024;
    config.delivery_timeout_ms = 3_600_000;
    config.max_attempts = 1_000_000;
    config.send_concurrency_mode = match args.concurrency_mode.as_str() {
        "fixed" => ConcurrencyMode::Fixed,
        _ => ConcurrencyMode::Adaptive,
    };
    Producer::new(config).expect("producer")
}

/// Adds S1-R logs as fast as the producer takes them for `seconds`; returns how many.
fn add_for(p: &Producer, seconds: u64, first: u64) -> u64 {
    let workload = S1RWorkload::default();
    let stop = Instant::now() + Duration::from_secs(seconds);
    let mut n = 0;
    while Instant::now() < stop {
        for _ in 0..100 {
            workload.add(p, first + n).expect("a blocking add");
            n += 1;
        }
    }
    n
}

fn counter(counters: &serde_json::Value, path: &[&str]) -> u64 {
    path.iter()
        .fold(counters, |v, k| &v[*k])
        .as_u64()
        .unwrap_or(0)
}

fn throttled(counters: &serde_json::Value) -> u64 {
    counters["throttled"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(|v| v.as_u64()).sum())
}

fn shard_mode(args: &Args, emulator: &support::ChildEmulator, admin: &AdminClient) {
    let quota = args.shard_bytes_per_sec * u64::from(args.shards);
    create_logstore(&emulator.endpoint, "shard", args.shards);
    admin
        .put(
            "quotas",
            &json!({"shard_write_bytes_per_sec": args.shard_bytes_per_sec}),
        )
        .expect("quotas set");
    let p = producer(args, &emulator.endpoint, "shard");
    let sampling = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let admin = AdminClient::new(&emulator.endpoint).expect("admin");
            let mut samples = Vec::new();
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(args.seconds) {
                std::thread::sleep(Duration::from_secs(1));
                let c = admin.counters().expect("counters");
                samples.push((
                    t0.elapsed().as_secs_f64(),
                    counter(&c, &["raw_bytes"]),
                    counter(&c, &["put_requests"]),
                    throttled(&c),
                ));
            }
            samples
        });
        let sent = add_for(&p, args.seconds, 0);
        (sent, sampler.join().expect("sampler"))
    });
    let (sent, samples) = sampling;
    let pending = p.flush(Duration::from_secs(600));
    let stats = p.stats();
    drop(p);
    let from = samples
        .iter()
        .position(|s| s.0 >= args.converge_seconds as f64)
        .unwrap_or(0);
    let (a, b) = (samples[from], samples[samples.len() - 1]);
    let goodput = (b.1 - a.1) as f64 / (b.0 - a.0);
    let refused = (b.3 - a.3) as f64 / (b.2 - a.2).max(1) as f64;
    let received = emulator.logs("bench-quota", "shard");
    let limit = stats.send_limits.first().cloned().unwrap_or_default();
    println!("| mode | quota B/s | goodput B/s | goodput / quota | refused share after {} s | refused in all | sent | received | pending | limit | pace B/s |", args.converge_seconds);
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| shard {} | {quota} | {goodput:.0} | {:.3} | {:.3} | {} | {sent} | {received} | {pending} | {} | {} |",
        args.concurrency_mode,
        goodput / quota as f64,
        refused,
        b.3,
        limit.limit,
        limit.pace
    );
    if received != sent || pending != 0 {
        eprintln!("FAILED: {sent} sent, {received} received, {pending} pending");
        std::process::exit(1);
    }
}

/// Creates a logstore of `shards` shards through the emulator's admin API.
fn create_logstore(endpoint: &str, logstore: &str, shards: u32) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        reqwest::Client::new()
            .post(format!("{endpoint}/_emulator/logstores"))
            .json(&json!({"project": "bench-quota", "logstore": logstore, "shards": shards}))
            .send()
            .await
            .expect("logstore made");
    });
}

fn fleet_mode(args: &Args, count: usize, emulator: &support::ChildEmulator, admin: &AdminClient) {
    admin
        .put(
            "quotas",
            &json!({"project_write_bytes_per_min": args.project_bytes_per_sec * 60}),
        )
        .expect("quotas set");
    let exe = std::env::current_exe().expect("own path");
    let children: Vec<_> = (0..count)
        .map(|i| {
            let logstore = format!("fleet-{i}");
            create_logstore(&emulator.endpoint, &logstore, 2);
            let mut command = Command::new(&exe);
            command
                .args(["--fleet-child", &emulator.endpoint, &logstore])
                .args(["--seconds", &args.seconds.to_string()])
                .args(["--concurrency-mode", &args.concurrency_mode])
                .stdout(Stdio::piped());
            (logstore, command.spawn().expect("a fleet producer"))
        })
        .collect();
    let mut rows = Vec::new();
    for (logstore, mut child) in children {
        let stdout = child.stdout.take().expect("stdout");
        let line = std::io::BufReader::new(stdout)
            .lines()
            .next()
            .and_then(Result::ok)
            .unwrap_or_default();
        child.wait().expect("a fleet producer ended");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        let received = emulator.logs("bench-quota", &logstore);
        rows.push((
            counter(&v, &["sent"]),
            received,
            counter(&v, &["delivered"]),
            counter(&v, &["pushed_back"]),
        ));
    }
    let counters = admin.counters().expect("counters");
    let sent: u64 = rows.iter().map(|r| r.0).sum();
    let received: u64 = rows.iter().map(|r| r.1).sum();
    // S1-R's records are alike in size on average: records delivered stand for bytes.
    let fair = rows.iter().map(|r| r.2).sum::<u64>() as f64 / count as f64;
    let shares: Vec<f64> = rows.iter().map(|r| r.2 as f64 / fair).collect();
    let (low, high) = shares
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), s| (l.min(*s), h.max(*s)));
    let refused = throttled(&counters);
    let requests = counter(&counters, &["put_requests"]);
    println!("| mode | producers | quota B/s | sent | received | refused / requests | least / most of a fair share |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    println!(
        "| fleet {} | {count} | {} | {sent} | {received} | {refused} / {requests} | {low:.2} / {high:.2} |",
        args.concurrency_mode, args.project_bytes_per_sec
    );
    if received != sent || low < 0.5 || high > 2.0 {
        eprintln!("FAILED: {sent} sent, {received} received, shares {low:.2} to {high:.2}");
        std::process::exit(1);
    }
}

fn main() {
    let args = Args::parse();
    if args.emulator_child {
        support::run_emulator_child();
        return;
    }
    if let [endpoint, logstore] = args.fleet_child.as_slice() {
        let p = producer(&args, endpoint, logstore);
        let sent = add_for(&p, args.seconds, 0);
        let pending = p.flush(Duration::from_secs(600));
        let stats = p.stats();
        let limit = stats.send_limits.first().cloned().unwrap_or_default();
        println!(
            "{}",
            json!({"sent": sent, "pending": pending, "delivered": stats.delivered, "pushed_back": limit.pushed_back})
        );
        return;
    }
    let emulator = support::ChildEmulator::start();
    let admin = AdminClient::new(&emulator.endpoint).expect("admin");
    admin
        .set_network(args.latency_ms, args.latency_ms / 10)
        .expect("network set");
    if args.shard {
        shard_mode(&args, &emulator, &admin);
    }
    if let Some(count) = args.fleet {
        fleet_mode(&args, count, &emulator, &admin);
    }
}
