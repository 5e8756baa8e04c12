//! The wire layer on one S1 batch (4096 logs): each codec's compress and decompress, the
//! zero-copy validator against a full prost decode, and v1 signing of the request.

#[path = "common.rs"]
mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use loghose::wire::compress::{self, Compression};
use loghose::wire::keys::KeyPolicy;
use loghose::wire::proto::LogGroup;
use loghose::wire::scan;
use loghose::wire::sign::Credentials;
use prost::Message;

fn wire(c: &mut Criterion) {
    let raw = common::s1_group(0, common::S1_BATCH_LOGS);
    let mut group = c.benchmark_group("wire_s1_batch");
    group.throughput(Throughput::Bytes(raw.len() as u64));
    for codec in [Compression::Lz4, Compression::Zstd, Compression::Deflate] {
        group.bench_function(format!("compress_{}", codec.name()), |b| {
            b.iter(|| compress::compress(codec, &raw).unwrap())
        });
        let body = compress::compress(codec, &raw).unwrap();
        group.bench_function(format!("decompress_{}", codec.name()), |b| {
            b.iter(|| compress::decompress(codec, &body, raw.len()).unwrap())
        });
    }
    group.bench_function("scan_validate", |b| {
        b.iter(|| scan::scan_log_group(&raw, KeyPolicy::Service).unwrap())
    });
    group.bench_function("prost_decode", |b| {
        b.iter(|| LogGroup::decode(raw.as_slice()).unwrap())
    });
    group.bench_function("sign_v1_request", |b| {
        b.iter(|| {
            common::s1_request(
                &raw[..0],
                Compression::None,
                Credentials::new("id", "secret"),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, wire);
criterion_main!(benches);
