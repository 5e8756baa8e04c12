//! Replay speed: how fast a producer opened on a spool that an earlier one left behind
//! delivers it.
//!
//! A child process (this program with `--fill`) adds S1 logs to a producer whose endpoint
//! refuses every connection (so nothing is delivered and nothing fails: it retries), until
//! the spool holds `--megabytes`, then ends without closing, as a killed process would. The
//! parent then opens a producer on the directory against the emulator (in a child process at
//! nice 10, on 127.0.0.1, so that memory and CPU measured here are the producer's) and times
//! it: opening (the scan and the rebuilding of every batch) and delivering everything. Prints
//! records, seconds, logs and megabytes of spool per second, the replaying process's CPU
//! seconds and peak RSS, and checks the emulator received every record.
//!
//! `cargo run --release -p loghose-lab --example spool_replay -- [--megabytes 1024] [--dir /tmp/replay]`
//!
//! A benchmark: it reports, it does not assert (it exits non-zero only if records are missing).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Parser;
use loghose::emulator::{DEFAULT_ACCESS_KEY_ID, DEFAULT_ACCESS_KEY_SECRET};
use loghose::producer::{Producer, ProducerConfig};
use loghose_lab::S1Workload;
use support::{proc_cpu_seconds, proc_status_kb, ChildEmulator};

#[path = "support/mod.rs"]
mod support;

#[derive(Parser)]
struct Args {
    /// Megabytes of spool files to replay.
    #[arg(long, default_value_t = 1024)]
    megabytes: u64,
    /// The spool directory (emptied first).
    #[arg(long, default_value = "/tmp/loghose-replay")]
    dir: PathBuf,
    /// Child mode: fill the spool in `dir` and exit without closing.
    #[arg(long, hide = true)]
    fill: bool,
    /// Child mode: serve as the emulator until stdin closes.
    #[arg(long, hide = true)]
    emulator_child: bool,
}

/// The filling child holds everything it adds in memory too (nothing is delivered), so its
/// buffer is as large as the spool; the replaying producer has the default buffer, which
/// bounds what of the spool it holds in memory at once.
fn config(endpoint: &str, dir: &Path, megabytes: u64, filling: bool) -> ProducerConfig {
    let room = (megabytes + 512) << 20;
    let defaults = ProducerConfig::new(endpoint, "bench-replay", "replayed");
    ProducerConfig {
        access_key_id: DEFAULT_ACCESS_KEY_ID.into(),
        access_key_secret: DEFAULT_ACCESS_KEY_SECRET.into(),
        spool_dir: Some(dir.display().to_string()),
        spool_max_bytes: room,
        buffer_max_bytes: if filling {
            room as usize
        } else {
            defaults.buffer_max_bytes
        },
        max_attempts: 1_000_000,
        backoff_max_ms: 60_000,
        ..defaults
    }
}

fn fill(args: &Args) -> ! {
    let p = Producer::new(config(
        "http://127.0.0.1:9",
        &args.dir,
        args.megabytes,
        true,
    ))
    .expect("a producer on the spool");
    let workload = S1Workload::default();
    let target = args.megabytes << 20;
    let mut n = 0u64;
    while p.stats().spool_bytes < target {
        for _ in 0..10_000 {
            workload.add(&p, n).expect("add");
            n += 1;
        }
    }
    p.flush(Duration::ZERO);
    println!("{n}");
    // As a killed process: no close, no destructors; the spool stays as it is.
    std::process::exit(0)
}

fn main() {
    let args = Args::parse();
    if args.emulator_child {
        support::run_emulator_child();
        return;
    }
    if args.fill {
        fill(&args);
    }
    let _ = std::fs::remove_dir_all(&args.dir);
    let started = Instant::now();
    let out = Command::new(std::env::current_exe().expect("this program"))
        .args([
            "--fill",
            "--megabytes",
            &args.megabytes.to_string(),
            "--dir",
        ])
        .arg(&args.dir)
        .output()
        .expect("the filling child");
    let added: u64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("the child's count");
    let on_disk: u64 = std::fs::read_dir(&args.dir)
        .expect("the spool")
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!(
        "filled: {added} records, {:.0} MB of spool files, in {:.1} s",
        on_disk as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );

    let emu = ChildEmulator::start();
    // The peak of the anonymous part of the RSS (the producer's own memory; the rest is the
    // spool's files mapped, which the kernel can drop), sampled every 50 ms.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = 0f64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(proc_status_kb("RssAnon:"));
                std::thread::sleep(Duration::from_millis(50));
            }
            peak
        })
    };
    let cpu0 = proc_cpu_seconds();
    let t0 = Instant::now();
    let p = Producer::new(config(&emu.endpoint, &args.dir, args.megabytes, false))
        .expect("a producer on the spool");
    let opened = t0.elapsed().as_secs_f64();
    let left = p.flush(Duration::from_secs(600));
    let total = t0.elapsed().as_secs_f64();
    let stats = p.stats();
    p.close(Duration::from_secs(10));
    let cpu = proc_cpu_seconds() - cpu0;
    let peak_mb = proc_status_kb("VmHWM") / 1024.0;
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let peak_anon_mb = sampler.join().unwrap_or(0.0) / 1024.0;
    let received = emu.logs("bench-replay", "replayed");
    println!(
        "| records replayed | batches | open s | total s | logs/s | spool MB/s | CPU s | peak RSS MB | peak anon MB | received | left |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {} | {opened:.2} | {total:.2} | {:.0} | {:.0} | {cpu:.2} | {peak_mb:.1} | {peak_anon_mb:.1} | {received} | {left} |",
        stats.replayed_records,
        stats.replayed_batches,
        stats.replayed_records as f64 / total,
        on_disk as f64 / 1e6 / total,
    );
    let _ = std::fs::remove_dir_all(&args.dir);
    if received < added || left > 0 {
        eprintln!("missing records: added {added}, received {received}, left {left}");
        std::process::exit(1);
    }
}
