//! What a search of the emulator costs: `--logs` logs (default 1 M) of S1, or of S1-R with
//! `--real` (access logs varied as real ones are), sent by a producer to an embedded emulator, a
//! full-text and key index made, then `--rounds` searches of each kind timed through
//! `/_emulator/query` (the same search as GetLogs): a term found in one log, a key comparison, a
//! common word, and everything of the last hour. Prints each kind's median and range, the term
//! index's size (the heap bytes the first search left held, counted by this program's
//! allocator; what `/_emulator/overview` reports; the RSS it added), the stored logs'
//! compressed and raw bytes, and the process's peak RSS.
//!
//! `cargo run --release -p loghose-lab --example query_cost -- --logs 1000000 --rounds 9 [--real]`

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use loghose::emulator::{Emulator, EmulatorConfig};
use loghose::producer::{Producer, SendOptions};
use loghose_lab::{s1_log, s1r_log};

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The heap's live bytes, counted: what the term index holds is the growth of this across the
/// first search (the index is all that search keeps).
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc`, passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator (the system's) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `realloc`, passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn peak_rss_mb() -> f64 {
    status_mb("VmHWM:")
}

fn rss_mb() -> f64 {
    status_mb("VmRSS:")
}

fn status_mb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let logs = arg("--logs", 1_000_000);
    let rounds = arg("--rounds", 9);
    let real = std::env::args().any(|a| a == "--real");
    let emu = Emulator::start(EmulatorConfig {
        retention_bytes: 4 << 30,
        ..EmulatorConfig::default()
    })?;
    let producer = Producer::new(emu.producer_config("loghose", "queried"))?;
    let started = Instant::now();
    for n in 0..logs {
        let fields: Vec<(String, String)> = if real {
            s1r_log(n)
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect()
        } else {
            s1_log(n)
        };
        let pairs: Vec<(&str, &str)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        loop {
            match producer.send(&pairs, &SendOptions::default()) {
                Ok(()) => break,
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }
    let report = producer.close(Duration::from_secs(120));
    assert_eq!(report.undelivered, 0, "every log stored");
    eprintln!(
        "{logs} logs stored in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let http = reqwest::Client::builder().no_proxy().build()?;
    let get = |url: String| {
        let http = http.clone();
        runtime.block_on(async move {
            let resp = http.get(url).send().await?;
            resp.json::<serde_json::Value>().await
        })
    };
    let base = emu.endpoint();
    let index = if real {
        r#"{"line":{"token":[" ",",","/",":"]},"keys":{"status":{"type":"long"},"request_time_ms":{"type":"double"},"request_id":{"type":"text","token":[" "]},"path":{"type":"text","token":["/"]}}}"#
    } else {
        r#"{"line":{"token":[" ",",","/"]},"keys":{"index":{"type":"long"},"LogHub":{"type":"text","token":[" "]}}}"#
    };
    let made = runtime.block_on(
        http.post(format!(
            "{base}/_emulator/index?project=loghose&logstore=queried"
        ))
        .body(index)
        .send(),
    )?;
    assert!(made.status().is_success(), "the index is made");
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let window = format!("from={}&to={}", now - 3600, now + 60);
    let target = logs / 4;
    let before = rss_mb();
    let live_before = LIVE.load(Ordering::Relaxed);
    let t = Instant::now();
    get(format!(
        "{base}/_emulator/query?project=loghose&logstore=queried&{window}&line=1&query=nothing"
    ))?;
    let built = t.elapsed().as_secs_f64();
    let index_bytes = LIVE.load(Ordering::Relaxed).saturating_sub(live_before) as f64;
    let overview = get(format!("{base}/_emulator/overview"))?;
    let reported = overview["projects"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["logstores"].as_array().into_iter().flatten())
        .find(|ls| ls["name"] == "queried")
        .and_then(|ls| ls["term_index_bytes"].as_f64())
        .unwrap_or(0.0);
    println!(
        "the first search builds the term index: {built:.1} s; it holds {:.1} MB (reported {:.1} MB; RSS {before:.0} -> {:.0} MB)",
        index_bytes / 1e6,
        reported / 1e6,
        rss_mb()
    );
    let kinds = if real {
        let target_id = s1r_log(target)
            .into_iter()
            .find(|(k, _)| *k == "request_id")
            .map(|(_, v)| v)
            .unwrap_or_default();
        [
            ("one term, one log", format!("request_id: {target_id}")),
            ("key comparison", "request_time_ms > 249.99".to_owned()),
            ("full-text word", "okhttp".to_owned()),
            ("everything", String::new()),
        ]
    } else {
        [
            ("one term, one log", format!("index: {target}")),
            ("key comparison", format!("index > {}", logs / 2 - 50)),
            ("full-text word", "Grafana".to_owned()),
            ("everything", String::new()),
        ]
    };
    for (name, query) in kinds {
        let mut times = Vec::new();
        let mut matched = 0;
        for _ in 0..rounds {
            let url = format!(
                "{base}/_emulator/query?project=loghose&logstore=queried&{window}&line=100&query={}",
                query.replace(' ', "%20").replace('>', "%3E")
            );
            let t = Instant::now();
            let answer = get(url)?;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            matched = answer["matched"].as_u64().unwrap_or(0);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{name:<18} {query:<24} matched {matched:>8}: median {:.1} ms ({:.1}–{:.1}, {rounds} runs)",
            times[times.len() / 2],
            times[0],
            times[times.len() - 1]
        );
    }
    let totals = get(format!("{base}/_emulator/counters"))?;
    let compressed = totals["compressed_bytes"].as_f64().unwrap_or(0.0);
    let raw = totals["raw_bytes"].as_f64().unwrap_or(0.0);
    println!(
        "stored: {} logs, {:.1} MB compressed, {:.0} MB raw; the index {:.2}× the compressed, {:.3}× the raw; peak RSS {:.0} MB",
        totals["logs"],
        compressed / 1e6,
        raw / 1e6,
        index_bytes / compressed.max(1.0),
        index_bytes / raw.max(1.0),
        peak_rss_mb()
    );
    Ok(())
}
