//! The `log` crate's records through `LoghoseLogger` into the emulator, read back field by
//! field; refusals counted and the process not disturbed. One test: a process has one logger.
#![cfg(all(feature = "log", feature = "emulator"))]

use std::sync::Arc;
use std::time::Duration;

use loghose::emulator::Emulator;
use loghose::logger::LoghoseLogger;
use loghose::producer::Producer;

#[test]
fn log_records_arrive_with_their_level_target_place_and_key_values() {
    let emu = Emulator::start_default().unwrap();
    let producer = Arc::new(Producer::new(emu.producer_config("proj", "app")).unwrap());
    let guard = LoghoseLogger::new(producer.clone())
        .with_level(log::LevelFilter::Debug)
        .install(Duration::from_secs(10))
        .unwrap();
    assert!(
        LoghoseLogger::new(producer.clone())
            .install(Duration::from_secs(1))
            .is_err(),
        "one logger per process"
    );

    log::info!(target: "web", "served {} in {} ms", "/items", 12);
    log::warn!(user = "bob", attempt = 3; "login refused");
    log::debug!("debug is on");
    // A value whose `Display` logs (it runs before the add takes the batch: no deadlock).
    log::info!(who:% = Chatty; "outer");
    log::trace!("below the level: not sent");
    // A key the service reserves: refused, counted, the rest goes on.
    log::error!(__topic__ = "x"; "reserved key");
    let line = line!() - 1;
    log::logger().flush();

    let stats = producer.stats();
    assert_eq!((stats.accepted, stats.invalid), (5, 1));
    let report = guard.close();
    assert_eq!(report.undelivered, 0);

    let logs = emu.logs("proj", "app");
    let field = |log: &loghose::emulator::StoredLog, key: &str| {
        log.contents
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    // Only the test's own records: at debug level the HTTP client logs each connection, on
    // the engine's threads, which would otherwise come back as records (and requests) here.
    let messages: Vec<String> = logs.iter().filter_map(|l| field(l, "message")).collect();
    assert_eq!(
        messages,
        [
            "served /items in 12 ms",
            "login refused",
            "debug is on",
            "from a Display",
            "outer"
        ]
    );
    assert_eq!(field(&logs[4], "who").as_deref(), Some("chatty"));
    let served = &logs[0];
    assert_eq!(field(served, "level").as_deref(), Some("INFO"));
    assert_eq!(field(served, "target").as_deref(), Some("web"));
    assert_eq!(field(served, "module").as_deref(), Some("logger"));
    assert_eq!(
        field(served, "file").as_deref(),
        Some("core/tests/logger.rs")
    );
    let login = &logs[1];
    assert_eq!(field(login, "level").as_deref(), Some("WARN"));
    assert_eq!(field(login, "target").as_deref(), Some("logger"));
    assert_eq!(field(login, "user").as_deref(), Some("bob"));
    assert_eq!(field(login, "attempt").as_deref(), Some("3"));
    let keys: Vec<&str> = login.contents.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        ["level", "target", "message", "module", "file", "line", "user", "attempt"]
    );
    assert!(field(&logs[2], "line")
        .and_then(|l| l.parse::<u32>().ok())
        .is_some_and(|l| l > 0 && l < line));
    // After the close, records are refused (said once on stderr), never a panic.
    log::info!("after the close");
    assert_eq!(emu.logs("proj", "app").len(), 5);
}

struct Chatty;

impl std::fmt::Display for Chatty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        log::info!("from a Display");
        f.write_str("chatty")
    }
}
