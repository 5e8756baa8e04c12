//! `tracing` events through `LoghoseLayer` into the emulator, read back field by field: the
//! span stack's names and fields, the event's fields, level, target and place; a per-layer
//! filter; refusals counted and the caller not disturbed; a `Debug` that logs does not
//! deadlock.
#![cfg(all(feature = "tracing", feature = "emulator"))]

use std::sync::Arc;
use std::time::Duration;

use loghose::emulator::{Emulator, StoredLog};
use loghose::producer::Producer;
use loghose::tracing_layer::LoghoseLayer;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::Layer as _;

fn field(log: &StoredLog, key: &str) -> Option<String> {
    log.contents
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

#[test]
fn events_arrive_with_their_spans_fields_level_target_and_place() {
    let emu = Emulator::start_default().unwrap();
    let producer = Arc::new(Producer::new(emu.producer_config("proj", "app")).unwrap());
    let layer = LoghoseLayer::new(producer.clone());
    let guard = layer.guard(Duration::from_secs(10));
    let subscriber = tracing_subscriber::registry().with(layer.with_filter(LevelFilter::DEBUG));
    let line = tracing::subscriber::with_default(subscriber, || {
        let request = tracing::info_span!(
            "request",
            method = "GET",
            id = 7,
            user = tracing::field::Empty
        );
        let _entered = request.enter();
        request.record("user", "bob");
        tracing::debug_span!("db", table = "items").in_scope(|| {
            tracing::info!(rows = 3, cached = false, "query done");
        });
        tracing::warn!(target: "auth", attempt = 2, "login refused");
        // A value whose `Debug` logs: it runs before the add takes the batch (no deadlock);
        // its own event, dispatched from inside this one, `tracing` itself discards.
        tracing::info!(who = ?Chatty, "outer");
        tracing::trace!("below the filter: not sent");
        // A key the service reserves: refused, counted, the rest goes on.
        tracing::error!(__topic__ = "x", "reserved key");
        line!()
    });
    let stats = producer.stats();
    assert_eq!((stats.accepted, stats.invalid), (3, 1));
    assert_eq!(guard.close().undelivered, 0);

    let logs = emu.logs("proj", "app");
    let messages: Vec<String> = logs.iter().filter_map(|l| field(l, "message")).collect();
    assert_eq!(messages, ["query done", "login refused", "outer"]);
    let query = &logs[0];
    let keys: Vec<&str> = query.contents.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "level", "target", "message", "span", "module", "file", "line", "method", "id", "user",
            "table", "rows", "cached"
        ]
    );
    let value = |key| field(query, key);
    assert_eq!(value("level").as_deref(), Some("INFO"));
    assert_eq!(value("target").as_deref(), Some("tracing_layer"));
    assert_eq!(value("span").as_deref(), Some("request:db"));
    assert_eq!(
        value("file").as_deref(),
        Some("core/tests/tracing_layer.rs")
    );
    assert!(value("line")
        .and_then(|l| l.parse::<u32>().ok())
        .is_some_and(|l| l > 0 && l < line));
    // Text without quotes, anything else as its `Debug`.
    assert_eq!(value("method").as_deref(), Some("GET"));
    assert_eq!(value("user").as_deref(), Some("bob"));
    assert_eq!(value("id").as_deref(), Some("7"));
    assert_eq!(value("cached").as_deref(), Some("false"));
    let login = &logs[1];
    assert_eq!(field(login, "level").as_deref(), Some("WARN"));
    assert_eq!(field(login, "target").as_deref(), Some("auth"));
    assert_eq!(field(login, "span").as_deref(), Some("request"));
    assert_eq!(field(login, "attempt").as_deref(), Some("2"));
    assert_eq!(field(login, "table"), None, "the db span had ended");
    assert_eq!(field(&logs[2], "who").as_deref(), Some("Chatty"));
}

struct Chatty;

impl std::fmt::Debug for Chatty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        tracing::info!("from a Debug");
        f.write_str("Chatty")
    }
}
