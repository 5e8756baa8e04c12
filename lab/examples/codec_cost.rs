//! What compressing and signing a batch costs, by implementation, on S1 and on S1-R (access logs
//! varied as real ones are): the engine's lz4 (lz4_flex's block encoder) beside the C liblz4
//! (through the `lz4` crate), and the engine's MD5 (the `md-5` crate, in Rust, or in assembly
//! on x86 when built with the `md5-asm` feature). Batches as the server preset seals them
//! (about 1.87 MB raw), 200 000 logs a second, nanosecond times. Prints ns per log, medians of
//! `--rounds` passes (default 9), and checks each compressed body decompresses to its batch.
//!
//! `cargo run --release -p loghose-lab --example codec_cost [--features md5-asm] -- [--logs N]`

use std::time::Instant;

use loghose::producer::TimePrecision;
use loghose::wire::compress::{compress, decompress, Compression};
use loghose_lab::encoded_batches;
use md5::{Digest, Md5};

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The median of `rounds` timings of `pass`, in ns per log.
fn timed(rounds: u64, logs: u64, mut pass: impl FnMut()) -> (f64, f64, f64) {
    let mut runs: Vec<f64> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            pass();
            started.elapsed().as_nanos() as f64 / logs as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    (runs[runs.len() / 2], runs[0], runs[runs.len() - 1])
}

fn main() {
    let logs = arg("--logs", 200_000);
    let rounds = arg("--rounds", 9);
    let md5_build = if cfg!(feature = "md5-asm") {
        "md-5 (asm)"
    } else {
        "md-5 (Rust)"
    };
    println!("| workload | raw B/log | lz4 B/log | implementation | ns/log median (range) |");
    println!("|---|---:|---:|---|---:|");
    for (workload, real) in [("S1", false), ("S1-R", true)] {
        let batches = encoded_batches(real, TimePrecision::Nanoseconds, logs, 5_000, 1_870_000);
        let raw: usize = batches.iter().map(|b| b.len()).sum();
        let flex: Vec<Vec<u8>> = batches
            .iter()
            .map(|b| compress(Compression::Lz4, b).expect("lz4"))
            .collect();
        let c: Vec<Vec<u8>> = batches
            .iter()
            .map(|b| lz4::block::compress(b, None, false).expect("liblz4"))
            .collect();
        for (body, batch) in flex.iter().chain(&c).zip(batches.iter().chain(&batches)) {
            let back = decompress(Compression::Lz4, body, batch.len()).expect("decompresses");
            assert_eq!(&back[..], &batch[..], "round trip");
        }
        let row = |name: &str, bodies: &[Vec<u8>], t: (f64, f64, f64)| {
            let bytes: usize = bodies.iter().map(Vec::len).sum();
            println!(
                "| {workload} | {:.1} | {:.2} | {name} | {:.1} ({:.1}–{:.1}) |",
                raw as f64 / logs as f64,
                bytes as f64 / logs as f64,
                t.0,
                t.1,
                t.2
            );
        };
        row(
            "lz4_flex",
            &flex,
            timed(rounds, logs, || {
                for b in &batches {
                    std::hint::black_box(compress(Compression::Lz4, b).ok());
                }
            }),
        );
        row(
            "liblz4 (C)",
            &c,
            timed(rounds, logs, || {
                for b in &batches {
                    std::hint::black_box(lz4::block::compress(b, None, false).ok());
                }
            }),
        );
        row(
            md5_build,
            &flex,
            timed(rounds, logs, || {
                for body in &flex {
                    std::hint::black_box(Md5::digest(body));
                }
            }),
        );
    }
}
