//! Instruction counts of the add path, for `valgrind --tool=callgrind` (repeatable on a noisy
//! machine, unlike time): `encode` writes S1 logs with the encoder alone; `add` adds them to a
//! producer whose batches never seal while it runs; `add-spool` does the same with a spool
//! (`spool_dir` in a fresh temporary directory); `add-seconds` with `time_precision = s`;
//! `deliver` (`deliver-seconds`: with `time_precision = s`) adds them unthrottled to a producer aimed at an emulator in a child process (which
//! callgrind does not follow) and closes it, so the difference between two counts is what one
//! log costs delivered: the add, compression, MD5, signing and sending, on every thread.
use std::time::Duration;

use loghose::producer::bindings::BatchBuf;
use loghose::producer::{LogEncoder, Producer, ProducerConfig};
use loghose::wire::keys::KeyPolicy;
use loghose_lab::S1Workload;

mod support;

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "encode".into());
    let n: u64 = std::env::args()
        .nth(2)
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let work = S1Workload::default();
    match mode.as_str() {
        "--emulator-child" => support::run_emulator_child(),
        "deliver" | "deliver-seconds" => {
            let emu = support::ChildEmulator::start();
            let config = ProducerConfig {
                topic: loghose_lab::S1_TOPIC.into(),
                tags: loghose_lab::S1_TAGS
                    .iter()
                    .map(|(k, v)| ((*k).into(), (*v).into()))
                    .collect(),
                max_block_ms: 600_000,
                time_precision: if mode == "deliver-seconds" {
                    loghose::producer::TimePrecision::Seconds
                } else {
                    loghose::producer::TimePrecision::Nanoseconds
                },
                ..emu.aim(
                    ProducerConfig::preset("server").expect("preset"),
                    "proj",
                    "logs",
                )
            };
            let p = Producer::new(config).expect("producer");
            for i in 0..n {
                work.add(&p, i).expect("room");
            }
            let report = p.close(Duration::from_secs(600));
            assert_eq!(report.undelivered, 0, "every log delivered");
            assert_eq!(emu.logs("proj", "logs"), n, "every log stored");
            println!("{n}");
        }
        "encode" => {
            let mut buf = BatchBuf::with_capacity(1 << 20);
            for i in 0..n {
                if buf.len() > 900_000 {
                    buf.clear();
                }
                let mut enc =
                    LogEncoder::begin(&mut buf, 1_700_000_000, Some(1), KeyPolicy::Service);
                work.fill(&mut enc, i).expect("valid S1 log");
                enc.finish(usize::MAX).expect("fits");
            }
            println!("{}", buf.len());
        }
        _ => {
            let config = ProducerConfig {
                spool_dir: (mode == "add-spool").then(|| {
                    let dir = std::env::temp_dir()
                        .join(format!("loghose-encode-cost-{}", std::process::id()));
                    dir.to_string_lossy().into_owned()
                }),
                time_precision: if mode == "add-seconds" {
                    loghose::producer::TimePrecision::Seconds
                } else {
                    loghose::producer::TimePrecision::Nanoseconds
                },
                ..support::unsealed_config()
            };
            let spool_dir = config.spool_dir.clone();
            let p = Producer::new(config).expect("producer");
            // Fewer adds than one batch holds (40 960 logs, 4 MiB), so nothing seals.
            for i in 0..n.min(8_000) {
                work.add(&p, i).expect("room");
            }
            println!("{}", p.pending());
            if let Some(dir) = spool_dir {
                let _ = std::fs::remove_dir_all(dir);
            }
            std::process::exit(0);
        }
    }
}
