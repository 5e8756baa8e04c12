//! What a `tracing::info!` with five fields costs the calling thread through
//! [`LoghoseLayer`](loghose::tracing_layer::LoghoseLayer), against the same event through
//! `tracing-appender`'s non-blocking writer to a file (the usual way to keep logging off the
//! caller's thread): rounds alternated, the median per event of each, and what each lost
//! (loghose: logs the emulator received; the appender: lines in the file, which drops lines
//! when its queue is full).
//!
//! `cargo run --release -p loghose-lab --example tracing_cost -- --events 100000 --rounds 5`

mod support;

use std::io::BufRead as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loghose::producer::Producer;
use loghose::tracing_layer::LoghoseLayer;
use tracing_subscriber::layer::SubscriberExt as _;

fn emit(events: u64) -> Duration {
    let started = Instant::now();
    for i in 0..events {
        tracing::info!(
            request_id = i,
            method = "GET",
            path = "/api/v1/orders",
            status = 200u16,
            latency_ms = 3.7,
            "request done"
        );
    }
    started.elapsed()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--emulator-child") {
        support::run_emulator_child();
        return;
    }
    let value = |name: &str, default: u64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map_or(default, |v| v.parse().expect("a number"))
    };
    let events = value("--events", 100_000);
    let rounds = value("--rounds", 5);
    let emulator = support::ChildEmulator::start();
    let counted = support::Counted::open(&emulator, "proj", "tracing");
    let producer = Arc::new(Producer::new(emulator.config("proj", "tracing")).expect("producer"));
    let loghose = tracing::Dispatch::new(
        tracing_subscriber::registry().with(LoghoseLayer::new(producer.clone())),
    );

    let dir = std::env::temp_dir().join(format!("loghose-tracing-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (mut loghose_ns, mut appender_ns) = (Vec::new(), Vec::new());
    let mut appender_lost = 0u64;
    for round in 0..rounds {
        let order: [bool; 2] = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for use_loghose in order {
            if use_loghose {
                let took = tracing::dispatcher::with_default(&loghose, || emit(events));
                loghose_ns.push(took.as_nanos() as f64 / events as f64);
                producer.flush(Duration::from_secs(60));
            } else {
                let path = dir.join(format!("round-{round}.log"));
                let file = std::fs::File::create(&path).expect("log file");
                let (writer, guard) = tracing_appender::non_blocking(file);
                let subscriber = tracing_subscriber::registry().with(
                    tracing_subscriber::fmt::layer()
                        .with_ansi(false)
                        .with_writer(writer),
                );
                let took = tracing::subscriber::with_default(subscriber, || emit(events));
                appender_ns.push(took.as_nanos() as f64 / events as f64);
                drop(guard); // writes out what its queue holds
                let lines = std::io::BufReader::new(std::fs::File::open(&path).expect("read"))
                    .lines()
                    .count() as u64;
                appender_lost += events - lines;
                std::fs::remove_file(&path).expect("remove");
            }
        }
    }
    let _ = std::fs::remove_dir(&dir);
    let closed = Arc::try_unwrap(producer)
        .ok()
        .map(|p| p.close(Duration::from_secs(60)));
    drop(loghose);
    let outcome = counted.result(&emulator, events * rounds);
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (l, a) = (median(&mut loghose_ns), median(&mut appender_ns));
    let range = |v: &Vec<f64>| format!("{:.0}–{:.0}", v[0], v[v.len() - 1]);
    println!(
        "tracing::info! with 5 fields, {rounds} alternated rounds of {events} events\n\
         loghose layer        {l:.0} ns per event ({}), lost {}, duplicated {}\n\
         tracing-appender     {a:.0} ns per event ({}), lost {appender_lost} (lines dropped)\n\
         loghose / appender   {:.2}",
        range(&loghose_ns),
        outcome.lost,
        outcome.duplicates,
        range(&appender_ns),
        l / a
    );
    if let Some(report) = closed {
        assert_eq!(report.undelivered, 0, "undelivered at close");
    }
}
