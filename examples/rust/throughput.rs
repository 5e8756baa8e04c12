//! A throughput experiment: how many records a second one thread sends from Rust, and what the
//! producer does meanwhile. Each record's fields are written straight into the open batch
//! (`add_with`), with no copies. Runs for SECONDS (default 3), then prints the rate of adds,
//! the rate of delivery and the producer's counters.
//!
//! With `LOGHOSE_ENDPOINT` (and `LOGHOSE_PROJECT`, `LOGHOSE_LOGSTORE`, keys from the default
//! credential chain) it sends to your project; without it, to an embedded emulator.
//!
//! `cargo run --release -p loghose --example throughput [SECONDS]`

use std::time::{Duration, Instant};

use loghose::emulator::Emulator;
use loghose::producer::{Producer, ProducerConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: f64 = match std::env::args().nth(1) {
        Some(s) => s.parse()?,
        None => 3.0,
    };
    let (config, emu) = match std::env::var("LOGHOSE_ENDPOINT") {
        Ok(endpoint) => {
            let project = std::env::var("LOGHOSE_PROJECT").unwrap_or_else(|_| "my-project".into());
            let logstore =
                std::env::var("LOGHOSE_LOGSTORE").unwrap_or_else(|_| "throughput".into());
            (ProducerConfig::new(&endpoint, &project, &logstore), None)
        }
        Err(_) => {
            let emu = Emulator::start_default()?;
            (emu.producer_config("examples", "throughput"), Some(emu))
        }
    };
    let producer = Producer::new(config)?;
    let started = Instant::now();
    let mut added = 0u64;
    let mut path = String::new();
    while started.elapsed().as_secs_f64() < seconds {
        for i in 0..1000 {
            path.clear();
            path.push_str("/items/");
            path.push_str(itoa::Buffer::new().format(i));
            producer.add_with(|log| {
                log.field_str("method", "GET")?;
                log.field_str("path", &path)?;
                log.field_str("status", "200")?;
                log.field_str("agent", "curl/8.5")
            })?;
        }
        added += 1000;
    }
    let adding = started.elapsed().as_secs_f64();
    let closed = producer.close(Duration::from_secs(60));
    let total = started.elapsed().as_secs_f64();
    let stats = producer.stats();
    println!(
        "{added} records in {adding:.1} s: {:.0} adds/s, {:.0} delivered/s, {} undelivered",
        added as f64 / adding,
        stats.delivered as f64 / total,
        closed.undelivered
    );
    if let Some(emu) = &emu {
        println!(
            "the emulator counted {:?}",
            emu.totals("examples", "throughput")
        );
    }
    Ok(())
}
