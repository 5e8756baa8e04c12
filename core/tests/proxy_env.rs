//! A producer follows the proxy variables (`HTTP_PROXY`, `NO_PROXY`, …) as they are when it is
//! made, even though producers with the same transport settings share one HTTP client.
//!
//! The variables are the process's, so this file holds one test.

use std::time::Duration;

use loghose::emulator::{Emulator, DEFAULT_ACCESS_KEY_ID, DEFAULT_ACCESS_KEY_SECRET};
use loghose::producer::{Producer, ProducerConfig, SendOptions};

fn send_one(emu: &Emulator, text: &str) -> u64 {
    let producer = Producer::new(ProducerConfig {
        access_key_id: DEFAULT_ACCESS_KEY_ID.into(),
        access_key_secret: DEFAULT_ACCESS_KEY_SECRET.into(),
        linger_ms: 10,
        backoff_base_ms: 10,
        backoff_max_ms: 50,
        ..ProducerConfig::new(emu.endpoint(), "proj", "proxied")
    })
    .unwrap();
    producer
        .send(&[("text", text)], &SendOptions::default())
        .unwrap();
    producer.close(Duration::from_millis(1500)).undelivered
}

#[test]
fn a_producer_follows_the_proxy_variables_as_they_are_when_it_is_made() {
    let emu = Emulator::start_default().unwrap();
    for name in ["NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"] {
        std::env::remove_var(name);
    }
    // A proxy that refuses every connection: nothing arrives.
    std::env::set_var("HTTP_PROXY", "http://127.0.0.1:1");
    std::env::set_var("http_proxy", "http://127.0.0.1:1");
    assert_eq!(send_one(&emu, "through a dead proxy"), 1);
    // The variables gone, the next producer (same settings) connects directly.
    std::env::remove_var("HTTP_PROXY");
    std::env::remove_var("http_proxy");
    assert_eq!(send_one(&emu, "direct"), 0);
    // And through the emulator as the proxy (it serves proxy-form requests).
    std::env::set_var("HTTP_PROXY", emu.endpoint());
    assert_eq!(send_one(&emu, "through the emulator"), 0);
    let mut texts: Vec<String> = emu
        .logs("proj", "proxied")
        .iter()
        .filter_map(|l| l.get("text").map(str::to_owned))
        .collect();
    texts.sort();
    assert_eq!(texts, ["direct", "through the emulator"]);
}
