//! Scenarios S4, S5 and S6 (`docs/scenarios.md`) from Rust, against the emulator in a child
//! process at nice 10 (so the figures are the producer's). Each checks what it measured: every
//! log added is counted at the emulator (0 lost, 0 duplicated), else the exit status is 1.
//! (S1 and S2 are the `s1` example: S2 is `--preset pi --pin-core 0`.)
//!
//! - `s4` timers: one open batch per distinct `source`, one log each; then, for `--seconds`,
//!   every destination refilled each time its linger passes. Reports the add cost, the memory
//!   per open batch, and the process's CPU % while the batches wait (from 5 s after the adds,
//!   once their aftermath has passed) and over the whole window.
//! - `s5` fleet: `--devices` devices (as shard key with `adjust_shard_hash`, or as `source`) at
//!   each rate for `--seconds`: delivered logs/s, backlog each second (and its least-squares
//!   trend, records per second: near 0 when the producer keeps up), add-to-delivery latency
//!   p50/p99 (one log in `--sample-every` tracked to its report), RSS; then `--tenants` idle
//!   producers in one process (memory and threads per producer).
//! - `s6` payload: records whose one value is `--sizes` bytes of access-log text, sent one at a
//!   time with linger 0 and waited for: latency p50/p99 per size; then per codec the ratio and
//!   µs to compress 1 MB of the same text.
//!
//! `cargo run --release -p loghose-lab --example scenarios -- --scenario s4 [--seconds 20]`

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use loghose::producer::{Producer, ProducerConfig, SendOptions};
use loghose::wire::compress::{compress, Compression};
use loghose_lab::s6_payload;
use support::{percentile, proc_cpu_seconds, proc_status_kb, rss_mb, ChildEmulator, Counted};

#[path = "support/mod.rs"]
mod support;

#[derive(Parser, Debug)]
struct Args {
    /// s4, s5 or s6.
    #[arg(long, default_value = "s4")]
    scenario: String,
    /// Seconds per case (s4: of waiting; s5: of sending).
    #[arg(long)]
    seconds: Option<u64>,
    /// s4: open batches (distinct destinations).
    #[arg(long, value_delimiter = ',', default_value = "100000")]
    open_batches: Vec<usize>,
    /// s4: linger of the open batches, ms.
    #[arg(long, value_delimiter = ',', default_value = "1000,60000")]
    lingers_ms: Vec<u64>,
    /// s5: distinct devices.
    #[arg(long, default_value_t = 100_000)]
    devices: usize,
    /// s5: logs per second.
    #[arg(long, value_delimiter = ',', default_value = "10000,20000")]
    rates: Vec<usize>,
    /// s5: the device as `shard_key` or `source`.
    #[arg(long, default_value = "shard_key")]
    key: String,
    /// s5: one log in this many is tracked to its delivery report for the latency.
    #[arg(long, default_value_t = 50)]
    sample_every: usize,
    /// s5: idle producers in one process (0 skips it).
    #[arg(long, default_value_t = 10_000)]
    tenants: usize,
    /// s6: value sizes in bytes.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1024,16384,262144,524288,1048576"
    )]
    sizes: Vec<usize>,
    /// s6: records per size.
    #[arg(long, default_value_t = 50)]
    count: usize,
    /// s6: rounds of compressing 1 MB per codec.
    #[arg(long, default_value_t = 20)]
    codec_rounds: usize,
    /// Internal: run the emulator and print its endpoint.
    #[arg(long, hide = true)]
    emulator_child: bool,
}

fn main() {
    let args = Args::parse();
    if args.emulator_child {
        support::run_emulator_child();
        return;
    }
    let emu = ChildEmulator::start();
    let ok = match args.scenario.as_str() {
        "s4" => timers(&emu, &args),
        "s5" => fleet(&emu, &args),
        "s6" => payload(&emu, &args),
        other => {
            eprintln!("unknown scenario {other:?}: s4, s5 or s6 (S1 and S2 are the s1 example)");
            std::process::exit(2);
        }
    };
    drop(emu);
    if !ok {
        eprintln!("{} FAILED: logs were lost or duplicated", args.scenario);
        std::process::exit(1);
    }
}

fn checked(outcome: &support::Outcome, pending: u64) -> bool {
    outcome.lost == 0 && outcome.duplicates == 0 && pending == 0
}

fn timers(emu: &ChildEmulator, args: &Args) -> bool {
    let seconds = args.seconds.unwrap_or(20);
    println!("S4 timers from Rust: one log per open batch, refilled each linger, {seconds} s of waiting\n");
    println!("| open batches | linger ms | µs per add | bytes per open batch | CPU % waiting | CPU % whole window | refills | received | lost | duplicated |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut ok = true;
    for &n in &args.open_batches {
        let sources: Vec<String> = (0..n).map(|i| format!("device-{i:07}")).collect();
        for &linger in &args.lingers_ms {
            let logstore = format!("s4-{n}-{linger}");
            let check = Counted::open(emu, "bench", &logstore);
            let rss0 = rss_mb();
            let mut config = emu.config("bench", &logstore);
            config.linger_ms = linger;
            config.max_block_ms = 60_000;
            // The budget charges each open batch its reserved size, not its one small log.
            config.buffer_max_bytes = (64 << 20).max(n * 8192);
            let p = Producer::new(config).expect("producer");
            let fields = [("event", "tick"), ("status", "ok")];
            let mut adds = 0u64;
            let fill = |adds: &mut u64| {
                let t = Instant::now();
                for source in &sources {
                    let opts = SendOptions {
                        source: Some(source),
                        ..SendOptions::default()
                    };
                    p.send(&fields, &opts).expect("blocking add");
                }
                *adds += n as u64;
                t.elapsed()
            };
            let first = fill(&mut adds);
            let per_batch = (rss_mb() - rss0) * f64::from(1 << 20) / n as f64;
            let cpu0 = proc_cpu_seconds();
            let t0 = Instant::now();
            let end = t0 + Duration::from_secs(seconds);
            // "While waiting" starts once the adds' aftermath has passed: 5 s in, or a
            // quarter of a shorter window (as in the other harnesses).
            let settle = t0 + Duration::from_secs(5.min(seconds / 4));
            let mut settled: Option<(f64, Instant)> = None;
            let step = Duration::from_millis(linger);
            let mut next = t0 + step;
            let mut refills = 0;
            while next < end || settled.is_none() {
                let wake = if settled.is_none() {
                    settle.min(next)
                } else {
                    next
                };
                std::thread::sleep(wake.saturating_duration_since(Instant::now()));
                if settled.is_none() && Instant::now() >= settle {
                    settled = Some((proc_cpu_seconds(), Instant::now()));
                }
                if next < end && Instant::now() >= next {
                    fill(&mut adds);
                    refills += 1;
                    next += step;
                }
            }
            std::thread::sleep(end.saturating_duration_since(Instant::now()));
            let cpu = proc_cpu_seconds() - cpu0;
            let wall = t0.elapsed().as_secs_f64();
            let (cpu_settled, t_settled) = settled.unwrap_or((cpu0, t0));
            let waiting =
                (proc_cpu_seconds() - cpu_settled) / t_settled.elapsed().as_secs_f64().max(1e-3);
            let pending = p.flush(Duration::from_secs(300));
            drop(p);
            let outcome = check.result(emu, adds);
            ok &= checked(&outcome, pending);
            println!(
                "| {n} | {linger} | {:.3} | {per_batch:.0} | {:.2} | {:.2} | {refills} | {} | {} | {} |",
                first.as_secs_f64() * 1e6 / n as f64,
                waiting * 100.0,
                cpu / wall * 100.0,
                outcome.received,
                outcome.lost,
                outcome.duplicates
            );
        }
    }
    ok
}

fn fleet(emu: &ChildEmulator, args: &Args) -> bool {
    let seconds = args.seconds.unwrap_or(60);
    let by_source = match args.key.as_str() {
        "source" => true,
        "shard_key" => false,
        other => {
            eprintln!("--key must be shard_key or source, not {other:?}");
            std::process::exit(2);
        }
    };
    println!(
        "S5 fleet from Rust: {} devices as {}, {seconds} s per rate\n",
        args.devices, args.key
    );
    println!("| logs/s | delivered logs/s | CPU % | backlog max | backlog trend /s | latency p50 ms | latency p99 ms | RSS MB | received | lost | duplicated |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    // Completions of the sampled logs are awaited here, each stamped when its report arrives.
    let waiter = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let mut order: Vec<usize> = (0..args.devices).collect();
    fastrand::Rng::with_seed(5).shuffle(&mut order);
    let names: Vec<String> = order
        .iter()
        .map(|i| {
            if by_source {
                format!("device-{i:06}")
            } else {
                format!("{i:032x}")
            }
        })
        .collect();
    let mut ok = true;
    let mut backlogs = Vec::new();
    for &rate in &args.rates {
        let logstore = format!("s5-{rate}-{}", args.key);
        let check = Counted::open(emu, "bench", &logstore);
        // The `server` preset, as the other harnesses run S5.
        let mut config = emu.aim(
            ProducerConfig::preset("server").expect("preset"),
            "bench",
            &logstore,
        );
        config.adjust_shard_hash = true;
        let p = Producer::new(config).expect("producer");
        let latencies = Arc::new(Mutex::new(Vec::new()));
        let mut backlog = Vec::new();
        let mut sent = 0usize;
        let cpu0 = proc_cpu_seconds();
        let t0 = Instant::now();
        for second in 0..seconds {
            for _ in 0..rate {
                let device = names[sent % names.len()].as_str();
                let temperature = (20 + sent % 15).to_string();
                let seq = sent.to_string();
                let fields = [
                    ("device", device),
                    ("temperature", &temperature),
                    ("seq", &seq),
                ];
                let opts = if by_source {
                    SendOptions {
                        source: Some(device),
                        ..SendOptions::default()
                    }
                } else {
                    SendOptions {
                        shard_key: Some(device),
                        ..SendOptions::default()
                    }
                };
                if sent.is_multiple_of(args.sample_every.max(1)) {
                    let added = Instant::now();
                    let completion = p.send_with_completion(&fields, &opts).expect("add");
                    let latencies = latencies.clone();
                    waiter.spawn(async move {
                        if completion.await.is_ok_and(|r| r.is_delivered()) {
                            let ms = added.elapsed().as_secs_f64() * 1000.0;
                            latencies.lock().expect("latencies").push(ms);
                        }
                    });
                } else {
                    p.send(&fields, &opts).expect("add");
                }
                sent += 1;
            }
            let stats = p.stats();
            backlog.push(stats.accepted - stats.delivered);
            let next = t0 + Duration::from_secs(second + 1);
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
        let wall = t0.elapsed().as_secs_f64();
        let delivered_in_time = p.stats().delivered;
        let cpu = proc_cpu_seconds() - cpu0;
        let rss = rss_mb();
        let pending = p.flush(Duration::from_secs(300));
        drop(p);
        let outcome = check.result(emu, sent as u64);
        ok &= checked(&outcome, pending);
        let mut lat = std::mem::take(&mut *latencies.lock().expect("latencies"));
        let fmt = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1}"));
        println!(
            "| {rate} | {:.0} | {:.1} | {} | {:.0} | {} | {} | {rss:.1} | {} | {} | {} |",
            delivered_in_time as f64 / wall,
            cpu / wall * 100.0,
            backlog.iter().max().unwrap_or(&0),
            support::slope(&backlog),
            fmt(percentile(&mut lat, 0.5)),
            fmt(percentile(&mut lat, 0.99)),
            outcome.received,
            outcome.lost,
            outcome.duplicates
        );
        backlogs.push((rate, backlog));
    }
    println!("\nBacklog (records accepted, not yet delivered) at the end of each second:\n");
    for (rate, backlog) in &backlogs {
        println!("- {rate} logs/s: {backlog:?}");
    }
    if args.tenants > 0 {
        ok &= tenants(emu, args.tenants);
    }
    ok
}

/// Many producers in one process, one per tenant, idle after one record each.
fn tenants(emu: &ChildEmulator, n: usize) -> bool {
    let check = Counted::open(emu, "bench", "s5-tenants");
    let (rss0, threads0) = (rss_mb(), proc_status_kb("Threads:"));
    let producers: Vec<Producer> = (0..n)
        .map(|i| {
            let mut config = emu.config("bench", "s5-tenants");
            config.topic = format!("tenant-{i}");
            config.linger_ms = 200;
            Producer::new(config).expect("producer")
        })
        .collect();
    let rss_made = rss_mb();
    for (i, p) in producers.iter().enumerate() {
        let tenant = i.to_string();
        p.send(&[("tenant", tenant.as_str())], &SendOptions::default())
            .expect("add");
    }
    let pending: u64 = producers
        .iter()
        .map(|p| p.flush(Duration::from_secs(60)))
        .sum();
    // Idle: past the time after which a producer's report thread ends (5 s without reports).
    std::thread::sleep(Duration::from_secs(6));
    let (rss_idle, threads) = (rss_mb(), proc_status_kb("Threads:"));
    drop(producers);
    let outcome = check.result(emu, n as u64);
    println!("\n| idle producers | KB per new producer | KB per idle producer | threads per producer | received | lost | duplicated |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {n} | {:.1} | {:.1} | {:.3} | {} | {} | {} |",
        (rss_made - rss0) * 1024.0 / n as f64,
        (rss_idle - rss0) * 1024.0 / n as f64,
        (threads - threads0) / n as f64,
        outcome.received,
        outcome.lost,
        outcome.duplicates
    );
    checked(&outcome, pending)
}

fn payload(emu: &ChildEmulator, args: &Args) -> bool {
    println!(
        "S6 payload from Rust: one value per record, sent one at a time with linger 0, {} per size\n",
        args.count
    );
    println!("| value bytes | latency p50 ms | latency p99 ms |");
    println!("|---:|---:|---:|");
    let check = Counted::open(emu, "bench", "s6-payload");
    let mut config = emu.config("bench", "s6-payload");
    config.linger_ms = 0;
    config.buffer_max_bytes = 64 << 20;
    config.max_block_ms = 60_000;
    let p = Producer::new(config).expect("producer");
    let mut sent = 0u64;
    for &size in &args.sizes {
        let value = s6_payload(size);
        let size_text = size.to_string();
        let mut lat = Vec::with_capacity(args.count);
        for i in 0..args.count {
            let index = i.to_string();
            let fields = [
                ("size", size_text.as_str()),
                ("i", &index),
                ("payload", &value),
            ];
            let t = Instant::now();
            let report = p
                .send_with_completion(&fields, &SendOptions::default())
                .expect("add")
                .wait(Duration::from_secs(60))
                .expect("report");
            if report.is_delivered() {
                lat.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            sent += 1;
        }
        println!(
            "| {size} | {:.2} | {:.2} |",
            percentile(&mut lat, 0.5).unwrap_or(f64::NAN),
            percentile(&mut lat, 0.99).unwrap_or(f64::NAN)
        );
    }
    drop(p);
    let outcome = check.result(emu, sent);
    println!(
        "\n{} received, {} lost, {} duplicated\n",
        outcome.received, outcome.lost, outcome.duplicates
    );
    let data = s6_payload(1 << 20);
    println!("| codec | ratio (1 MB of access-log text) | µs to compress 1 MB (median) |");
    println!("|---|---:|---:|");
    for codec in [
        Compression::None,
        Compression::Lz4,
        Compression::Zstd,
        Compression::Deflate,
    ] {
        let mut times = Vec::new();
        let mut size = 0;
        for _ in 0..args.codec_rounds.max(1) {
            let t = Instant::now();
            size = compress(codec, data.as_bytes()).expect("compresses").len();
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        println!(
            "| {} | {:.2} | {:.0} |",
            codec.name(),
            data.len() as f64 / size as f64,
            percentile(&mut times, 0.5).unwrap_or(f64::NAN)
        );
    }
    checked(&outcome, 0)
}
