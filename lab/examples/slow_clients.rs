//! The emulator under a slow-connection attack, as a benchmark: the `loghose-emulator` binary
//! (a child process, default limits) holds `--connections` hostile connections open while one
//! client sends valid signed PutLogs for `--seconds`, one after another.
//!
//! The hostile connections: most send half a request head and then one byte every two
//! seconds (reconnecting when the server closes them at its header timeout); `--big-stalled`
//! of them declare a 10 MiB body, send all but its last byte and stall (reconnecting when the
//! server drops them at its body idle timeout). Prints the valid requests' latency (p50, p99,
//! max), how many were not served, and the emulator's RSS before, at its peak and after the
//! attack (the store reset on both sides, so only what the attack held is compared).
//!
//! `cargo build --release -p loghose --features cli --bin loghose-emulator && cargo build --release -p loghose-lab --example slow_clients &&
//!  target/release/examples/slow_clients [--connections 1000] [--seconds 20]`
//!
//! Goal: every valid request served, p99 under 100 ms, RSS under 64 MB plus the retention
//! limit, RSS after within 10 MB of before. A benchmark: it reports, it does not assert.

use std::io::BufRead as _;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use clap::Parser;
use loghose::emulator::{DEFAULT_ACCESS_KEY_ID, DEFAULT_ACCESS_KEY_SECRET};
use loghose::wire::compress::Compression;
use loghose::wire::proto::{Log, LogGroup};
use loghose::wire::request::{self, Auth, PutLogsTarget};
use loghose::wire::sign::Credentials;
use prost::Message;
use tokio::io::AsyncWriteExt as _;

#[derive(Parser, Debug)]
struct Args {
    /// Hostile connections held open.
    #[arg(long, default_value_t = 1000)]
    connections: usize,
    /// Of them, connections that send 10 MiB of a 10 MiB body and stall.
    #[arg(long, default_value_t = 40)]
    big_stalled: usize,
    /// Seconds of valid traffic under attack.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// The emulator binary (default: `loghose-emulator` beside this example's directory).
    #[arg(long)]
    emulator: Option<std::path::PathBuf>,
}

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Half a head, then a byte every two seconds, reconnecting whenever the server closes it.
async fn slow_head(addr: std::net::SocketAddr, stop: Arc<AtomicBool>, open: Arc<AtomicUsize>) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        open.fetch_add(1, Ordering::Relaxed);
        let _ = s
            .write_all(
                b"POST /logstores/app-logs/shards/lb HTTP/1.1\r\nHost: proj.127.0.0.1\r\nX-Slow: ",
            )
            .await;
        while !stop.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_secs(2)).await;
            if s.write_all(b"x").await.is_err() {
                break;
            }
        }
        open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// 10 MiB of a declared 10 MiB body, then nothing, reconnecting whenever it is dropped.
async fn big_stall(addr: std::net::SocketAddr, stop: Arc<AtomicBool>, open: Arc<AtomicUsize>) {
    const BODY: usize = 10 * 1024 * 1024;
    let chunk = vec![b'z'; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        open.fetch_add(1, Ordering::Relaxed);
        let head = format!(
            "POST /logstores/app-logs/shards/lb HTTP/1.1\r\nHost: proj.127.0.0.1\r\nContent-Type: application/x-protobuf\r\nContent-Length: {BODY}\r\n\r\n"
        );
        let mut ok = s.write_all(head.as_bytes()).await.is_ok();
        let mut sent = 0;
        while ok && sent + chunk.len() < BODY {
            ok = s.write_all(&chunk).await.is_ok();
            sent += chunk.len();
        }
        // Stalled: wait until the server drops it (a write then fails) or the run ends.
        while ok && !stop.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(500)).await;
            ok = s.write_all(b"").await.is_ok() && s.peer_addr().is_ok();
            let mut probe = [0u8; 1];
            if let Ok(Ok(0)) =
                tokio::time::timeout(Duration::from_millis(1), s.peek(&mut probe)).await
            {
                ok = false;
            }
        }
        open.fetch_sub(1, Ordering::Relaxed);
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let args = Args::parse();
    loghose::emulator::raise_open_file_limit();
    let exe = args.emulator.clone().unwrap_or_else(|| {
        let me = std::env::current_exe().expect("own path");
        me.parent()
            .and_then(|examples| examples.parent())
            .map(|dir| dir.join("loghose-emulator"))
            .expect("a directory above the example")
    });
    let mut child = Command::new(&exe)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e} (build it first)", exe.display()));
    let pid = child.id();
    let mut endpoint = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut endpoint)
        .expect("endpoint line");
    let endpoint = endpoint.trim().to_owned();
    let addr: std::net::SocketAddr = endpoint
        .trim_start_matches("http://")
        .parse()
        .expect("an address");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client");
        let auth = Auth::V1(Credentials::new(DEFAULT_ACCESS_KEY_ID, DEFAULT_ACCESS_KEY_SECRET));
        let put = |client: reqwest::Client| {
            let endpoint = endpoint.clone();
            let auth = auth.clone();
            async move {
                let now = SystemTime::now();
                let t = now
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as u32);
                let logs = (0..10)
                    .map(|i| Log::of_fields(t, None, &[("i", &i.to_string()), ("msg", "valid")]))
                    .collect();
                let raw = LogGroup::of_logs(logs, "", "", &[]).encode_to_vec();
                let target = PutLogsTarget {
                    host: "proj.127.0.0.1",
                    logstore: "app-logs",
                    hash_key: None,
                };
                let req = request::put_logs(target, &raw, Compression::Lz4, &auth, now)
                    .expect("request");
                let mut builder =
                    client.post(format!("{endpoint}{}", req.path_and_query()));
                for (k, v) in &req.headers {
                    builder = builder.header(k.as_str(), v.as_str());
                }
                let started = Instant::now();
                let ok = builder
                    .body(req.body)
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success());
                (ok, started.elapsed().as_secs_f64() * 1000.0)
            }
        };
        let reset = |client: reqwest::Client| {
            let url = format!("{endpoint}/_emulator/reset");
            async move {
                let _ = client.post(url).send().await;
            }
        };
        for _ in 0..200 {
            put(client.clone()).await;
        }
        reset(client.clone()).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before = rss_mib(pid);

        let stop = Arc::new(AtomicBool::new(false));
        let open = Arc::new(AtomicUsize::new(0));
        let mut attackers = Vec::new();
        for i in 0..args.connections {
            let (stop, open) = (stop.clone(), open.clone());
            attackers.push(if i < args.big_stalled {
                tokio::spawn(big_stall(addr, stop, open))
            } else {
                tokio::spawn(slow_head(addr, stop, open))
            });
        }
        // Let the attack build up before measuring.
        let ramp = Instant::now() + Duration::from_secs(20);
        while open.load(Ordering::Relaxed) < args.connections && Instant::now() < ramp {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let held_at_start = open.load(Ordering::Relaxed);

        let mut latencies = Vec::new();
        let mut failed = 0usize;
        let mut peak = before;
        let mut min_open = held_at_start;
        let end = Instant::now() + Duration::from_secs(args.seconds);
        let mut next_sample = Instant::now();
        while Instant::now() < end {
            let (ok, ms) = put(client.clone()).await;
            if ok {
                latencies.push(ms);
            } else {
                failed += 1;
            }
            if Instant::now() >= next_sample {
                peak = peak.max(rss_mib(pid));
                min_open = min_open.min(open.load(Ordering::Relaxed));
                next_sample = Instant::now() + Duration::from_millis(200);
            }
        }
        stop.store(true, Ordering::Relaxed);
        for a in attackers {
            a.abort();
        }
        // Connections end, bodies are freed; then compare with the store emptied again.
        tokio::time::sleep(Duration::from_secs(3)).await;
        reset(client.clone()).await;
        // The emulator hands freed memory back to the system every ten seconds.
        tokio::time::sleep(Duration::from_secs(11)).await;
        let after = rss_mib(pid);

        latencies.sort_by(f64::total_cmp);
        println!("| hostile connections (held, min held) | valid requests | not served | p50 ms | p99 ms | max ms | RSS before MiB | RSS peak MiB | RSS after MiB |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        println!(
            "| {} ({held_at_start}, {min_open}) | {} | {failed} | {:.2} | {:.2} | {:.2} | {before:.1} | {peak:.1} | {after:.1} |",
            args.connections,
            latencies.len() + failed,
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99),
            latencies.last().copied().unwrap_or(f64::NAN),
        );
    });
    // SAFETY: kill sends a signal to the child this process started.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    let _ = child.wait();
}
