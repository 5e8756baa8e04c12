//! Emulator ingest throughput on S1 batches: pre-built, signed, lz4-compressed PutLogs
//! requests of 4096 S1 logs fed straight to the request handler on one thread, so the figure
//! is logs per second per core with full verification (signature, date, MD5, decompression,
//! validation of every key and value) and storage.

#[path = "common.rs"]
mod common;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use loghose::emulator::{Emulator, EmulatorConfig};
use loghose::wire::compress::Compression;

fn ingest(c: &mut Criterion) {
    let emu = Emulator::start(EmulatorConfig {
        retention_bytes: 64 << 20,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let creds = emu.credentials().unwrap();
    let mut group = c.benchmark_group("emulator_ingest_s1");
    group.throughput(Throughput::Elements(common::S1_BATCH_LOGS as u64));
    for codec in [
        Compression::Lz4,
        Compression::None,
        Compression::Zstd,
        Compression::Deflate,
    ] {
        let raw = common::s1_group(0, common::S1_BATCH_LOGS);
        let req = common::s1_request(&raw, codec, creds.clone());
        let service = emu.service().clone();
        group.bench_function(codec.name(), |b| {
            b.iter_batched(
                || common::to_http(&req),
                |http| {
                    let resp = service.handle(http);
                    assert_eq!(resp.status(), 200);
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, ingest);
criterion_main!(benches);
