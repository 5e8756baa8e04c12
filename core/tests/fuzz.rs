//! Fuzzing, time-bounded, on stable Rust: proptest mutates the seed inputs kept in
//! `core/fuzz/corpus/` (bit flips, byte sets, inserts, deletions, duplications, truncations,
//! splices of "interesting" values) and drives them through
//!
//! - `body`: decompression (every codec, any declared raw size) and the `LogGroup` /
//!   `LogGroupList` scan, under both key policies;
//! - `request`: a raw HTTP request parsed (httparse) into the emulator's request handler,
//!   which runs every PutLogs, read and admin check;
//! - `wire`: the same raw bytes sent to a live emulator over a loopback socket (hyper's
//!   parser, the connection limits, the fault layer);
//! - `otlp`: a body `loghose otlp` receives (protobuf or OTLP/JSON, gzipped or not) decoded
//!   within its limits and every record laid out as the OTel processors lay it out.
//!
//! None may panic, hang, or allocate beyond its limit: a counting allocator measures the
//! peak bytes each `body`/`request` case allocates on its thread. Each target runs for
//! `LOGHOSE_FUZZ_SECS` seconds (default 3; CI sets more), with seeds from
//! `LOGHOSE_FUZZ_SEED` (default: the time) printed so a failure can be replayed; proptest
//! shrinks a failing input before reporting it. `cargo test --test fuzz -- --ignored
//! write_corpus` rewrites the seed files.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use loghose::emulator::{Emulator, EmulatorConfig, Service};
use loghose::wire::compress::{self, Compression};
use loghose::wire::keys::KeyPolicy;
use loghose::wire::limits::MAX_RAW_BODY_BYTES;
use loghose::wire::proto::{Log, LogGroup, LogGroupList};
use loghose::wire::request::{self, Auth, PutLogsTarget};
use loghose::wire::scan;
use loghose::wire::sign::Credentials;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use prost::Message;

// ---- a per-thread counting allocator -------------------------------------------------

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn note(delta: isize) {
    // `try_with`: the allocator also runs while thread-locals are torn down.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; only counts are kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size() as isize);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(-(layout.size() as isize));
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size as isize - layout.size() as isize);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f`, answering the most bytes it held allocated at once on this thread.
fn peak_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let out = f();
    let peak = PEAK.with(Cell::get) - start;
    (out, peak.max(0) as usize)
}

/// What one case may allocate: a decompression area of the raw limit, the copy a
/// `batch_group` body is kept as, and room for the rest.
const ALLOCATION_LIMIT: usize = 2 * MAX_RAW_BODY_BYTES + 8 * 1024 * 1024;

// ---- the corpus and its mutations ----------------------------------------------------

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target)
}

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let mut files: Vec<_> = std::fs::read_dir(corpus_dir(target))
        .unwrap_or_else(|e| panic!("corpus {target}: {e}"))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let seeds: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(!seeds.is_empty(), "corpus {target} is empty");
    seeds
}

#[derive(Clone, Debug)]
enum Mutation {
    FlipBit(prop::sample::Index, u8),
    SetByte(prop::sample::Index, u8),
    Insert(prop::sample::Index, Vec<u8>),
    Delete(prop::sample::Index, usize),
    Duplicate(prop::sample::Index, usize),
    Truncate(prop::sample::Index),
    Interesting(prop::sample::Index, usize),
}

/// Values that tend to sit on boundaries: varint edges, lengths, separators.
const INTERESTING: &[&[u8]] = &[
    &[0x00],
    &[0xff],
    &[0x80],
    &[0xff, 0xff, 0xff, 0xff, 0x0f],
    &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
    &[
        0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
    ],
    b"\r\n",
    b"\r\n\r\n",
    b": ",
    b"99999999999",
    b"-1",
    b"%00",
    b"..",
    b"Content-Length: 0\r\n",
    b"Transfer-Encoding: chunked\r\n",
    b"x-log-compresstype: zstd\r\n",
    b"x-log-mode: batch_group\r\n",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    let index = any::<prop::sample::Index>;
    prop_oneof![
        (index(), 0u8..8).prop_map(|(i, b)| Mutation::FlipBit(i, b)),
        (index(), any::<u8>()).prop_map(|(i, v)| Mutation::SetByte(i, v)),
        (index(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, v)| Mutation::Insert(i, v)),
        (index(), 1usize..64).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (index(), 1usize..256).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
        index().prop_map(Mutation::Truncate),
        (index(), 0..INTERESTING.len()).prop_map(|(i, k)| Mutation::Interesting(i, k)),
    ]
}

fn apply(mut data: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = data.len();
        let at = |i: &prop::sample::Index| if len == 0 { 0 } else { i.index(len) };
        match m {
            Mutation::FlipBit(i, bit) if len > 0 => data[at(i)] ^= 1 << bit,
            Mutation::SetByte(i, v) if len > 0 => data[at(i)] = *v,
            Mutation::Insert(i, bytes) => {
                let p = at(i);
                data.splice(p..p, bytes.iter().copied());
            }
            Mutation::Delete(i, n) if len > 0 => {
                let p = at(i);
                data.drain(p..(p + n).min(len));
            }
            Mutation::Duplicate(i, n) if len > 0 => {
                let p = at(i);
                let piece = data[p..(p + n).min(len)].to_vec();
                data.splice(p..p, piece);
            }
            Mutation::Truncate(i) => data.truncate(at(i)),
            Mutation::Interesting(i, k) => {
                let p = at(i);
                data.splice(p..p, INTERESTING[*k].iter().copied());
            }
            _ => {}
        }
    }
    data
}

/// Runs `check` on mutated seeds of `target` until its time is up.
fn fuzz(name: &str, target: &str, check: impl Fn(&[u8]) -> Result<(), TestCaseError>) {
    let seconds: u64 = std::env::var("LOGHOSE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let seed: u64 = std::env::var("LOGHOSE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_secs())
        });
    let seeds = corpus(target);
    // Every seed as it is, first.
    for s in &seeds {
        check(s).unwrap_or_else(|e| panic!("{name}: a corpus seed fails: {e}"));
    }
    let strategy = (
        prop::sample::select(seeds),
        prop::collection::vec(mutation(), 0..8),
    );
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut round = 0u64;
    let mut cases = 0u64;
    while Instant::now() < deadline {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8..16].copy_from_slice(&round.to_le_bytes());
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &key);
        let config = Config {
            cases: 64,
            failure_persistence: None,
            max_shrink_time: 30_000,
            ..Config::default()
        };
        let mut runner = TestRunner::new_with_rng(config, rng);
        let result = runner.run(&strategy, |(seed_input, mutations)| {
            check(&apply(seed_input, &mutations))
        });
        if let Err(e) = result {
            panic!("{name}: LOGHOSE_FUZZ_SEED={seed}, round {round}: {e}");
        }
        round += 1;
        cases += 64;
    }
    eprintln!("fuzz {name}: {cases} cases in {seconds} s (LOGHOSE_FUZZ_SEED={seed})");
}

// ---- target: body --------------------------------------------------------------------

/// A `body` input: byte 0 picks the codec (low two bits) and the list mode (bit 2), bytes
/// 1..4 the declared raw size (24 bits, little-endian), the rest is the body.
fn check_body(input: &[u8]) -> Result<(), TestCaseError> {
    let Some((head, body)) = input.split_first_chunk::<4>() else {
        return Ok(());
    };
    let codec = [
        Compression::None,
        Compression::Lz4,
        Compression::Zstd,
        Compression::Deflate,
    ][usize::from(head[0] & 3)];
    let list = head[0] & 4 != 0;
    let raw_size = usize::from(head[1]) | usize::from(head[2]) << 8 | usize::from(head[3]) << 16;
    let ((), peak) = peak_allocation(|| {
        let mut scratch = Vec::new();
        if let Ok(raw) = compress::decompress_into(codec, body, raw_size, &mut scratch) {
            assert!(raw.len() <= MAX_RAW_BODY_BYTES);
            for policy in [KeyPolicy::Service, KeyPolicy::Strict] {
                if list {
                    let _ = scan::scan_log_group_list(raw, policy);
                } else if let Ok(summary) = scan::scan_log_group(raw, policy) {
                    // What the scan accepts, prost can decode.
                    let decoded = LogGroup::decode(raw).expect("scanned groups decode");
                    assert_eq!(decoded.logs.len(), summary.logs as usize);
                }
            }
        }
    });
    prop_assert!(peak <= ALLOCATION_LIMIT, "allocated {peak} bytes");
    Ok(())
}

#[test]
fn fuzz_body() {
    fuzz("body", "body", check_body);
}

// ---- target: otlp --------------------------------------------------------------------

/// An `otlp` input: byte 0 bit 0 gzip, bit 1 OTLP/JSON; the rest is the body. Decoded within
/// a 1 MiB limit, it must never panic nor hold more than a bounded multiple of the limit.
fn check_otlp(input: &[u8]) -> Result<(), TestCaseError> {
    let Some((head, body)) = input.split_first() else {
        return Ok(());
    };
    let (gzip, json) = (head & 1 != 0, head & 2 != 0);
    let (answer, peak) = peak_allocation(|| {
        loghose::cli::otlp::decode_and_lay_out(body, gzip, json, 1 << 20, 100_000)
    });
    if let Err(status) = answer {
        prop_assert!([400u16, 413].contains(&status), "status {status}");
    }
    prop_assert!(
        peak < 64 << 20,
        "{peak} bytes held for a {} byte body",
        body.len()
    );
    Ok(())
}

/// A million attributes in 2 MB of protobuf (or 3 MB of JSON) would take hundreds of MB
/// decoded: they are counted on the bytes and refused with nothing allocated.
#[test]
fn otlp_a_million_attributes_are_refused_unallocated() {
    let record = LogRecord {
        attributes: vec![KeyValue::default(); 1_000_000],
        ..Default::default()
    };
    let protobuf = ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            scope_logs: vec![ScopeLogs {
                log_records: vec![record],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec();
    let json = format!(
        r#"{{"resourceLogs":[{{"scopeLogs":[{{"logRecords":[{{"attributes":[{}]}}]}}]}}]}}"#,
        vec!["{}"; 1_000_000].join(",")
    );
    for (body, is_json) in [(protobuf, false), (json.into_bytes(), true)] {
        let (answer, peak) = peak_allocation(|| {
            loghose::cli::otlp::decode_and_lay_out(&body, false, is_json, 16 << 20, 500_000)
        });
        assert_eq!(answer, Err(413), "json {is_json}");
        assert!(peak < 1 << 20, "{peak} bytes held (json {is_json})");
    }
}

#[test]
fn fuzz_otlp() {
    let seeds = corpus("otlp");
    for seed in &seeds {
        let (gzip, json) = (seed[0] & 1 != 0, seed[0] & 2 != 0);
        let records =
            loghose::cli::otlp::decode_and_lay_out(&seed[1..], gzip, json, 1 << 20, 100_000);
        assert!(
            matches!(records, Ok(n) if n > 0),
            "a corpus seed is refused: {records:?}"
        );
    }
    fuzz("otlp", "otlp", check_otlp);
}

// ---- targets: request and wire -------------------------------------------------------

/// An emulator whose date check accepts the corpus's fixed dates, with little retention.
fn fuzz_config() -> EmulatorConfig {
    EmulatorConfig {
        max_clock_skew_secs: 100 * 365 * 24 * 3600,
        retention_bytes: 1 << 20,
        max_logstores: 64,
        header_read_timeout_ms: 500,
        body_idle_timeout_ms: 500,
        ..EmulatorConfig::default()
    }
}

/// Parses raw HTTP/1.1 request bytes into a request (`None` when httparse refuses them).
fn parse_request(input: &[u8]) -> Option<hyper::Request<Bytes>> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let httparse::Status::Complete(at) = req.parse(input).ok()? else {
        return None;
    };
    let mut builder = hyper::Request::builder().method(req.method?).uri(req.path?);
    for h in req.headers.iter() {
        builder = builder.header(h.name, h.value);
    }
    builder.body(Bytes::copy_from_slice(&input[at..])).ok()
}

#[test]
fn fuzz_request() {
    let service = Service::new(fuzz_config());
    // The seeds reach past every check: the fuzzing starts from requests that are served
    // (twice: reads and admin reads of the logstore succeed once a put created it).
    let seeds = corpus("request");
    for seed in &seeds {
        service.handle(parse_request(seed).unwrap());
    }
    for seed in &seeds {
        let resp = service.handle(parse_request(seed).unwrap());
        assert!(
            resp.status().is_success(),
            "{}",
            String::from_utf8_lossy(resp.body())
        );
    }
    fuzz("request", "request", |input| {
        let Some(req) = parse_request(input) else {
            return Ok(());
        };
        let (resp, peak) = peak_allocation(|| service.handle(req));
        prop_assert!(peak <= ALLOCATION_LIMIT, "allocated {peak} bytes");
        prop_assert!(resp.headers().contains_key("x-log-requestid"));
        if !resp.status().is_success() {
            // Every refusal is the service's JSON error shape.
            let body: serde_json::Value = serde_json::from_slice(resp.body())
                .map_err(|e| TestCaseError::fail(format!("error body is not JSON: {e}")))?;
            prop_assert!(body["errorCode"].is_string() && body["errorMessage"].is_string());
        }
        Ok(())
    });
    // Whatever was thrown at it, the logstores it made stay within the bound.
    let _ = service.counters();
}

#[test]
fn fuzz_wire() {
    use std::io::{Read as _, Write as _};
    let emu = Emulator::start(fuzz_config()).unwrap();
    let addr = emu.addr();
    fuzz("wire", "request", |input| {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        // A refusal may close the connection before all was written: that is fine.
        let _ = stream.write_all(input);
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let mut answer = Vec::new();
        let read = stream.read_to_end(&mut answer);
        prop_assert!(
            !matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut),
            "no answer and no close within 5 s"
        );
        Ok(())
    });
    // Still serving: a valid request from the corpus is answered 200.
    let seed = std::fs::read(corpus_dir("request").join("put-lz4.http")).unwrap();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.write_all(&seed).unwrap();
    let mut answer = [0u8; 12];
    stream.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 200");
}

// ---- the corpus ----------------------------------------------------------------------

fn sample_group(n: usize, time: u32) -> LogGroup {
    let logs = (0..n)
        .map(|i| {
            Log::of_fields(
                time,
                Some(5),
                &[
                    ("index", &i.to_string()),
                    ("msg", "hello world"),
                    ("Search/Analytics", "q"),
                ],
            )
        })
        .collect();
    LogGroup::of_logs(
        logs,
        "topic",
        "10.0.0.1",
        &[("__pack_id__", "0123456789ABCDEF-0")],
    )
}

fn raw_http(req: &request::SignedRequest) -> Vec<u8> {
    let mut out = format!("{} {} HTTP/1.1\r\n", req.method, req.path_and_query()).into_bytes();
    for (k, v) in &req.headers {
        out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    if !req
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-length"))
    {
        out.extend_from_slice(format!("Content-Length: {}\r\n", req.body.len()).as_bytes());
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out.extend_from_slice(&req.body);
    out
}

#[test]
#[ignore = "writes the seed files; run by hand when the formats change"]
fn write_corpus() {
    let at = std::time::UNIX_EPOCH + Duration::from_secs(1_764_547_200); // 2025-12-01
    let time = 1_764_547_200u32;
    let body_dir = corpus_dir("body");
    let request_dir = corpus_dir("request");
    std::fs::create_dir_all(&body_dir).unwrap();
    std::fs::create_dir_all(&request_dir).unwrap();
    let raw = sample_group(3, time).encode_to_vec();
    for (flag, name, codec) in [
        (0u8, "none", Compression::None),
        (1, "lz4", Compression::Lz4),
        (2, "zstd", Compression::Zstd),
        (3, "deflate", Compression::Deflate),
    ] {
        let body = compress::compress(codec, &raw).unwrap();
        let size = raw.len() as u32;
        let mut input = vec![flag, size as u8, (size >> 8) as u8, (size >> 16) as u8];
        input.extend_from_slice(&body);
        std::fs::write(body_dir.join(format!("group-{name}.bin")), input).unwrap();
    }
    let list = LogGroupList {
        log_groups: vec![sample_group(2, time), sample_group(1, time)],
    }
    .encode_to_vec();
    let mut input = vec![4u8, list.len() as u8, (list.len() >> 8) as u8, 0];
    input.extend_from_slice(&list);
    std::fs::write(body_dir.join("list-none.bin"), input).unwrap();

    let auth = Auth::V1(Credentials::new(
        loghose::emulator::DEFAULT_ACCESS_KEY_ID,
        loghose::emulator::DEFAULT_ACCESS_KEY_SECRET,
    ));
    let target = PutLogsTarget {
        host: "proj.127.0.0.1",
        logstore: "app-logs",
        hash_key: None,
    };
    for (name, codec) in [
        ("put-lz4", Compression::Lz4),
        ("put-zstd", Compression::Zstd),
    ] {
        let req = request::put_logs(target, &raw, codec, &auth, at).unwrap();
        std::fs::write(request_dir.join(format!("{name}.http")), raw_http(&req)).unwrap();
    }
    let v4 = Auth::V4 {
        credentials: Credentials::new(
            loghose::emulator::DEFAULT_ACCESS_KEY_ID,
            loghose::emulator::DEFAULT_ACCESS_KEY_SECRET,
        ),
        region: "cn-hangzhou".into(),
    };
    let req = request::put_logs(target, &raw, Compression::Lz4, &v4, at).unwrap();
    std::fs::write(request_dir.join("put-v4.http"), raw_http(&req)).unwrap();
    let cursor = request::get(
        "proj.127.0.0.1",
        "/logstores/app-logs/shards/0",
        &[("type", "cursor"), ("from", "begin")],
        &[],
        &auth,
        at,
    );
    std::fs::write(request_dir.join("get-cursor.http"), raw_http(&cursor)).unwrap();
    let pull = request::get(
        "proj.127.0.0.1",
        "/logstores/app-logs/shards/0",
        &[("type", "logs"), ("cursor", "MA=="), ("count", "10")],
        &[("Accept-Encoding", "lz4")],
        &auth,
        at,
    );
    std::fs::write(request_dir.join("pull-logs.http"), raw_http(&pull)).unwrap();
    // The management and query APIs, on the logstore the admin seed makes ("other"): an index
    // made, searched three ways and deleted (so every seed is served again on a second pass).
    let signed = |method: &'static str, path: &str, query: &[(&str, &str)], body: &[u8]| {
        let mut headers = vec![
            (
                "x-log-apiversion".to_owned(),
                loghose::wire::limits::API_VERSION.to_owned(),
            ),
            ("x-log-bodyrawsize".to_owned(), body.len().to_string()),
            ("Host".to_owned(), "proj.127.0.0.1".to_owned()),
        ];
        if !body.is_empty() {
            headers.push(("Content-Type".into(), "application/json".into()));
            headers.push(("Content-Length".into(), body.len().to_string()));
        }
        let mut req = request::SignedRequest {
            method,
            path: path.to_owned(),
            query: query
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            headers,
            body: Bytes::copy_from_slice(body),
        };
        request::authorize(&mut req, &auth, at);
        raw_http(&req)
    };
    let index = br#"{"line":{"token":[","," ",";","="],"caseSensitive":false},"keys":{"level":{"type":"text","token":[" "]},"n":{"type":"long"},"ms":{"type":"double"}}}"#;
    for (name, bytes) in [
        ("index-1-create", signed("POST", "/logstores/other/index", &[], index)),
        (
            "index-2-get-logs",
            signed(
                "GET",
                "/logstores/other",
                &[
                    ("type", "log"),
                    ("from", "0"),
                    ("to", "4000000000"),
                    ("query", "(level: error or \"time out\") and not n > 3 and ms <= 2.5 and tim*"),
                    ("line", "10"),
                    ("offset", "0"),
                    ("reverse", "true"),
                ],
                &[],
            ),
        ),
        (
            "index-3-get-logs-post",
            signed(
                "POST",
                "/logstores/other/logs",
                &[],
                br#"{"from":0,"to":4000000000,"query":"__topic__: t and __tag__:k: v","line":5,"offset":1,"reverse":false,"powerSql":false}"#,
            ),
        ),
        (
            "index-4-histograms",
            signed(
                "GET",
                "/logstores/other",
                &[("type", "histogram"), ("from", "100"), ("to", "4000"), ("query", "level: warn")],
                &[],
            ),
        ),
        ("index-5-delete", signed("DELETE", "/logstores/other/index", &[], &[])),
        ("manage-get-logstore", signed("GET", "/logstores/other", &[], &[])),
        (
            "manage-list-logstores",
            signed("GET", "/logstores", &[("offset", "0"), ("size", "10")], &[]),
        ),
        (
            "manage-update-logstore",
            signed(
                "PUT",
                "/logstores/other",
                &[],
                br#"{"logstoreName":"other","ttl":7,"autoSplit":true,"maxSplitShard":64,"appendMeta":false}"#,
            ),
        ),
        ("manage-get-project", signed("GET", "/", &[], &[])),
    ] {
        std::fs::write(request_dir.join(format!("{name}.http")), bytes).unwrap();
    }
    let admin = b"POST /_emulator/logstores HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 52\r\nConnection: close\r\n\r\n{\"project\":\"proj\",\"logstore\":\"other\",\"shards\":4}   ";
    std::fs::write(request_dir.join("admin-create.http"), admin).unwrap();
    let logs = b"GET /_emulator/logs?project=proj&logstore=app-logs&offset=1&limit=2 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    std::fs::write(request_dir.join("admin-logs.http"), logs).unwrap();
}
