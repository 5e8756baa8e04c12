//! The README's main command for now: starts the embedded emulator, pushes S1 batches to it
//! over HTTP exactly as a producer will (lz4, signed v1), reads them back with the SLS read
//! APIs, checks that every log arrived, and prints a table.
//!
//! `cargo run --release -p loghose --example demo -- [SECONDS]` (default 3).

use std::time::{Duration, Instant, SystemTime};

use loghose::emulator::{Emulator, EmulatorConfig};
use loghose::scenarios::{s1_log, S1_TAGS, S1_TOPIC};
use loghose::wire::compress::{self, Compression};
use loghose::wire::proto::{Log, LogContent, LogGroup, LogGroupList, LogTag};
use loghose::wire::request::{self, Auth, PutLogsTarget};
use prost::Message;

const BATCH: usize = 4096;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let emu = Emulator::start(EmulatorConfig {
        retention_bytes: 1 << 30,
        ..EmulatorConfig::default()
    })?;
    let auth = Auth::V1(emu.credentials().ok_or("emulator has no key")?);
    let host = "demo.127.0.0.1";
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let client = reqwest::Client::new();
    println!(
        "loghose demo: S1 batches of {BATCH} logs to the embedded emulator at {}",
        emu.endpoint()
    );

    let started = Instant::now();
    let (mut sent, mut raw_bytes, mut sent_bytes, mut batches) = (0u64, 0u64, 0u64, 0u64);
    let mut pack = 0u64;
    while started.elapsed() < Duration::from_secs(seconds) {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)?
            .as_secs() as u32;
        let mut tags: Vec<LogTag> = S1_TAGS
            .iter()
            .map(|(k, v)| LogTag {
                key: (*k).into(),
                value: (*v).into(),
            })
            .collect();
        tags.push(LogTag {
            key: "__pack_id__".into(),
            value: format!("0123456789ABCDEF-{pack:X}"),
        });
        pack += 1;
        let group = LogGroup {
            logs: (sent..sent + BATCH as u64)
                .map(|n| Log {
                    time: now,
                    contents: s1_log(n)
                        .into_iter()
                        .map(|(key, value)| LogContent { key, value })
                        .collect(),
                    time_ns: None,
                })
                .collect(),
            topic: Some(S1_TOPIC.into()),
            source: Some("127.0.0.1".into()),
            log_tags: tags,
            ..Default::default()
        };
        let raw = group.encode_to_vec();
        let req = request::put_logs(
            PutLogsTarget {
                host,
                logstore: "s1",
                hash_key: None,
            },
            &raw,
            Compression::Lz4,
            &auth,
            SystemTime::now(),
        )?;
        let url = format!("{}{}", emu.endpoint(), req.path_and_query());
        let mut builder = client.post(url);
        for (k, v) in &req.headers {
            if k != "Content-Length" {
                builder = builder.header(k.as_str(), v.as_str());
            }
        }
        let status = runtime
            .block_on(builder.body(req.body.clone()).send())?
            .status();
        if !status.is_success() {
            return Err(format!("emulator refused a batch: {status}").into());
        }
        sent += BATCH as u64;
        raw_bytes += raw.len() as u64;
        sent_bytes += req.body.len() as u64;
        batches += 1;
    }
    let elapsed = started.elapsed().as_secs_f64();

    // Read everything back through the SLS read APIs, as an official client would.
    let mut received = 0u64;
    for shard in 0..2u32 {
        let path = format!("/logstores/s1/shards/{shard}");
        let get = |query: &[(&str, &str)], extra: &[(&str, &str)]| {
            let req = request::get(host, &path, query, extra, &auth, SystemTime::now());
            let url = format!("{}{}", emu.endpoint(), req.path_and_query());
            let mut builder = client.get(url);
            for (k, v) in &req.headers {
                builder = builder.header(k.as_str(), v.as_str());
            }
            runtime.block_on(async { builder.send().await })
        };
        let cursor: serde_json::Value =
            runtime.block_on(get(&[("type", "cursor"), ("from", "begin")], &[])?.json())?;
        let mut cursor = cursor["cursor"].as_str().ok_or("no cursor")?.to_owned();
        loop {
            let resp = get(
                &[("type", "log"), ("cursor", &cursor), ("count", "100")],
                &[("Accept-Encoding", "lz4")],
            )?;
            let header = |n: &str| {
                resp.headers()
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let count: usize = header("x-log-count")
                .and_then(|c| c.parse().ok())
                .ok_or("no x-log-count")?;
            if count == 0 {
                break;
            }
            let raw_size: usize = header("x-log-bodyrawsize")
                .and_then(|c| c.parse().ok())
                .ok_or("no raw size")?;
            cursor = header("x-log-cursor").ok_or("no cursor")?;
            let body = runtime.block_on(resp.bytes())?;
            let list = LogGroupList::decode(
                compress::decompress(Compression::Lz4, &body, raw_size)?.as_slice(),
            )?;
            received += list
                .log_groups
                .iter()
                .map(|g| g.logs.len() as u64)
                .sum::<u64>();
        }
    }
    let counters = emu.counters();
    println!();
    println!("| metric                         | value        |");
    println!("|--------------------------------|--------------|");
    println!("| batches sent                   | {batches:>12} |");
    println!("| logs sent                      | {sent:>12} |");
    println!(
        "| logs/s pushed (one connection) | {:>12.0} |",
        sent as f64 / elapsed
    );
    println!(
        "| raw MB sent                    | {:>12.1} |",
        raw_bytes as f64 / 1e6
    );
    println!(
        "| lz4 ratio (sent / raw)         | {:>12.3} |",
        sent_bytes as f64 / raw_bytes.max(1) as f64
    );
    println!("| logs counted by the emulator   | {:>12} |", counters.logs);
    println!("| logs read back with PullLogs   | {received:>12} |");
    println!(
        "| logs lost                      | {:>12} |",
        sent - received.min(sent)
    );
    if received != sent || counters.logs != sent {
        return Err("logs were lost".into());
    }
    Ok(())
}
