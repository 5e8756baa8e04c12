//! What a search of the emulator costs: `--logs` S1 logs (default 1 M) sent by a producer to an
//! embedded emulator, a full-text and key index made, then `--rounds` searches of each kind timed
//! through `/_emulator/query` (the same search as GetLogs): a term found in one log, a key
//! comparison, and everything of the last minute. Prints each kind's median and range, the
//! stored logs' compressed and raw bytes, and the process's peak RSS.
//!
//! `cargo run --release -p loghose --example query_cost -- --logs 1000000 --rounds 9`

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use loghose::bench::s1_log;
use loghose::emulator::{Emulator, EmulatorConfig};
use loghose::producer::{Producer, SendOptions};

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

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
    let emu = Emulator::start(EmulatorConfig {
        retention_bytes: 4 << 30,
        ..EmulatorConfig::default()
    })?;
    let producer = Producer::new(emu.producer_config("loghose", "queried"))?;
    let started = Instant::now();
    for n in 0..logs {
        let fields = s1_log(n);
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
    let index = r#"{"line":{"token":[" ",",","/"]},"keys":{"index":{"type":"long"},"LogHub":{"type":"text","token":[" "]}}}"#;
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
    let t = Instant::now();
    get(format!(
        "{base}/_emulator/query?project=loghose&logstore=queried&{window}&line=1&query=nothing"
    ))?;
    println!(
        "the first search builds the term index: {:.1} s; RSS {before:.0} -> {:.0} MB",
        t.elapsed().as_secs_f64(),
        rss_mb()
    );
    for (name, query) in [
        ("one term, one log", format!("index: {target}")),
        ("key comparison", format!("index > {}", logs / 2 - 50)),
        ("full-text word", "Grafana".to_owned()),
        ("everything", String::new()),
    ] {
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
            "{name:<18} {query:<24} matched {matched:>8}: median {:.0} ms ({:.0}–{:.0}, {rounds} runs)",
            times[times.len() / 2],
            times[0],
            times[times.len() - 1]
        );
    }
    let totals = get(format!("{base}/_emulator/counters"))?;
    println!(
        "stored: {} logs, {:.0} MB compressed, {:.0} MB raw; peak RSS {:.0} MB",
        totals["logs"],
        totals["compressed_bytes"].as_f64().unwrap_or(0.0) / 1e6,
        totals["raw_bytes"].as_f64().unwrap_or(0.0) / 1e6,
        peak_rss_mb()
    );
    Ok(())
}
