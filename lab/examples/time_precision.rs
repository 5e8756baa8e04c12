//! What `time_precision` costs on the wire: batches of two workloads encoded at each precision,
//! with times advancing as they would at a given rate, then compressed with lz4 as the producer
//! sends them. Deterministic (seeded values, synthetic clock), so the bytes repeat exactly;
//! the lz4 and MD5 times are medians of repeated runs over the same batches.
//!
//! Workloads: `s1` (the seed benchmark's two records: 100:1 under lz4, far more repetitive than
//! real logs) and `access` (S1-R's access logs, `loghose_lab::s1r_log`, which compress about
//! as real logs do, 4–8:1).
//!
//! `cargo run --release -p loghose-lab --example time_precision -- [--logs N]`

use std::time::Instant;

use loghose::producer::TimePrecision;
use loghose::wire::compress::{compress, Compression};
use loghose_lab::encoded_batches;
use md5::{Digest, Md5};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let logs: u64 = args
        .iter()
        .position(|a| a == "--logs")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    // The server preset's batches seal at about this size on S1.
    let batch_bytes = 1_870_000;
    println!(
        "| workload | rate logs/s | time_precision | raw B/log | lz4 B/log | ratio | lz4 ns/log | MD5 ns/log |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|");
    for workload in ["s1", "access"] {
        for rate in [200_000u64, 1_000] {
            for (name, precision) in [
                ("s", TimePrecision::Seconds),
                ("ms", TimePrecision::Milliseconds),
                ("ns", TimePrecision::Nanoseconds),
            ] {
                let batches = encoded_batches(
                    workload == "access",
                    precision,
                    logs,
                    1_000_000_000 / rate,
                    batch_bytes,
                );
                let raw: usize = batches.iter().map(|b| b.len()).sum();
                let mut compressed = 0usize;
                let (mut lz4_runs, mut md5_runs) = (Vec::new(), Vec::new());
                for round in 0..5 {
                    let started = Instant::now();
                    let bodies: Vec<Vec<u8>> = batches
                        .iter()
                        .map(|b| compress(Compression::Lz4, b).expect("lz4"))
                        .collect();
                    lz4_runs.push(started.elapsed().as_nanos() as f64 / logs as f64);
                    let started = Instant::now();
                    for body in &bodies {
                        std::hint::black_box(Md5::digest(body));
                    }
                    md5_runs.push(started.elapsed().as_nanos() as f64 / logs as f64);
                    if round == 0 {
                        compressed = bodies.iter().map(Vec::len).sum();
                    }
                }
                println!(
                    "| {workload} | {rate} | {name} | {:.1} | {:.2} | {:.1} | {:.1} | {:.1} |",
                    raw as f64 / logs as f64,
                    compressed as f64 / logs as f64,
                    raw as f64 / compressed as f64,
                    median(lz4_runs),
                    median(md5_runs),
                );
            }
        }
    }
}
