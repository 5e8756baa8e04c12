//! The add path on the S1 workload as its driver runs it (both records prebuilt, the iteration
//! number formatted per add): encoding one record alone, then adding from 1, 2 and 8 threads. Adds are timed in chunks; between chunks the producer is flushed outside
//! the timed part, so the figure is the cost the caller pays per add, not the network's (the
//! S1 harness measures the whole process).
//! Multi-thread figures are per add and per core: wall time × min(threads, cores) / adds.

#[path = "common.rs"]
mod common;

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use loghose::emulator::{Emulator, EmulatorConfig};
use loghose::producer::bindings::BatchBuf;
use loghose::producer::{LogEncoder, Producer, ProducerConfig};
use loghose::wire::keys::KeyPolicy;
use loghose_lab::S1Workload;

/// Adds per timed chunk: fewer than one batch holds, so no batch seals (and no send competes
/// for the two cores) while the adds are timed.
const CHUNK: u64 = 10_000;

fn producer(emu: &Emulator, spool_dir: Option<String>) -> Producer {
    let c = emu.credentials().unwrap();
    let config = ProducerConfig {
        access_key_id: c.access_key_id,
        access_key_secret: c.access_key_secret,
        source: Some("127.0.0.1".into()),
        topic: "test_topic".into(),
        tags: (1..=5)
            .map(|i| (format!("tag_{i}"), format!("val_{i}")))
            .collect(),
        batch_max_bytes: 4 << 20,
        batch_max_count: 40_960,
        linger_ms: 600_000,
        spool_dir,
        ..ProducerConfig::preset("server").unwrap()
    };
    Producer::new(ProducerConfig {
        endpoint: emu.endpoint(),
        project: "bench".into(),
        logstore: "bench-s1".into(),
        ..config
    })
    .unwrap()
}

fn timed_adds(p: &Producer, work: &S1Workload, iters: u64, threads: usize) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let n = CHUNK.min(iters - done);
        let per_thread = n.div_ceil(threads as u64);
        let started = Instant::now();
        std::thread::scope(|s| {
            for t in 0..threads {
                s.spawn(move || {
                    for i in 0..per_thread {
                        work.add(p, i * threads as u64 + t as u64)
                            .expect("buffer has room between flushes");
                    }
                });
            }
        });
        total += started.elapsed();
        done += n;
        assert_eq!(p.flush(Duration::from_secs(60)), 0);
    }
    let cores = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(threads) as u32;
    total * cores
}

fn add(c: &mut Criterion) {
    let work = S1Workload::default();
    let mut g = c.benchmark_group("s1_add");
    g.throughput(Throughput::Elements(1));
    g.bench_function("encode_only", |b| {
        let mut buf = BatchBuf::with_capacity(1 << 20);
        let mut n = 0u64;
        b.iter(|| {
            if buf.len() > 900_000 {
                buf.clear();
            }
            let mut enc = LogEncoder::begin(&mut buf, 1_700_000_000, Some(1), KeyPolicy::Service);
            work.fill(&mut enc, n).unwrap();
            n += 1;
            enc.finish(usize::MAX).unwrap()
        })
    });
    let emu = Emulator::start(EmulatorConfig {
        retention_bytes: 64 << 20,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let p = producer(&emu, None);
    for threads in [1usize, 2, 8] {
        g.bench_function(format!("send_{threads}_threads"), |b| {
            b.iter_custom(|iters| timed_adds(&p, &work, iters, threads))
        });
    }
    drop(p);
    // The same adds with a spool (spool_sync none): each record also made crash-safe.
    let dir = std::env::temp_dir().join(format!("loghose-bench-spool-{}", std::process::id()));
    let p = producer(&emu, Some(dir.display().to_string()));
    g.bench_function("send_1_thread_spool", |b| {
        b.iter_custom(|iters| timed_adds(&p, &work, iters, 1))
    });
    p.close(Duration::from_secs(30));
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
    g.finish();
}

criterion_group!(benches, add);
criterion_main!(benches);
