//! A refresh of the default chain's keys delays no send: keys from an OIDC role live 10 s (so
//! they are fetched again every ~5 s) while STS takes 1.5 s to answer each call; records sent
//! every 10 ms for 24 s all arrive, and after the first batch (which waits for the first
//! fetch) no batch takes as long as one STS call from its first record to its delivery.
//!
//! The chain reads the process environment, so this file holds one test: it sets the
//! variables before any other thread of its own exists.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loghose::emulator::{Emulator, EmulatorConfig, Fault, FaultAction};
use loghose::producer::{DeliveryReport, Producer, ProducerConfig, SendOptions};
use parking_lot::Mutex;

const STS_DELAY: Duration = Duration::from_millis(1500);

#[test]
fn a_refresh_delays_no_send_by_as_long_as_the_sts_call() {
    let emu = Emulator::start(EmulatorConfig {
        credentials_lifetime_secs: 10,
        ..EmulatorConfig::default()
    })
    .unwrap();
    emu.inject(Fault {
        credentials: true,
        ..Fault::during(
            FaultAction::Latency {
                ms: STS_DELAY.as_millis() as u64,
            },
            Duration::from_secs(600),
        )
    });
    let dir = std::env::temp_dir().join(format!("loghose-refresh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token = dir.join("token");
    std::fs::write(&token, "oidc-token").unwrap();
    for (name, value) in [
        ("ALIBABA_CLOUD_ROLE_ARN", "acs:ram::1234:role/logger"),
        (
            "ALIBABA_CLOUD_OIDC_PROVIDER_ARN",
            "acs:ram::1234:oidc-provider/ack",
        ),
        ("ALIBABA_CLOUD_OIDC_TOKEN_FILE", token.to_str().unwrap()),
        ("LOGHOSE_STS_ENDPOINT", &emu.endpoint()),
    ] {
        std::env::set_var(name, value);
    }
    std::env::remove_var("ALIBABA_CLOUD_ACCESS_KEY_ID");

    /// (when the batch began, its latency, delivered, records)
    type Seen = Vec<(Instant, Duration, bool, u32)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let sink = seen.clone();
    let config = ProducerConfig {
        linger_ms: 20,
        ..ProducerConfig::new(emu.endpoint(), "proj", "refresh")
    };
    let producer = Producer::build(
        config,
        None,
        Some(Box::new(move |reports: &[Arc<DeliveryReport>]| {
            let mut seen = sink.lock();
            for r in reports {
                seen.push((
                    Instant::now() - r.latency,
                    r.latency,
                    r.is_delivered(),
                    r.records,
                ));
            }
        })),
    )
    .unwrap();
    let started = Instant::now();
    let mut sent = 0u64;
    while started.elapsed() < Duration::from_secs(24) {
        let n = sent.to_string();
        producer
            .send(&[("n", n.as_str())], &SendOptions::default())
            .unwrap();
        sent += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    let closed = producer.close(Duration::from_secs(30));
    assert_eq!(closed.undelivered, 0, "{:?}", closed.failed);
    std::fs::remove_dir_all(&dir).unwrap();

    let mut seen = seen.lock().clone();
    seen.sort_by_key(|s| s.0);
    let delivered: u64 = seen.iter().filter(|s| s.2).map(|s| u64::from(s.3)).sum();
    assert_eq!(delivered, sent, "every record delivered");
    assert_eq!(emu.counters().logs, sent);
    let issued = emu.counters().credentials_issued;
    assert!(issued >= 4, "{issued} keys issued in 24 s of 10 s keys");
    assert!(
        !emu.counters().rejected.contains_key("Unauthorized"),
        "{:?}",
        emu.counters().rejected
    );
    let (first_began, first, ..) = seen[0];
    assert!(
        first >= STS_DELAY,
        "the first batch waits for the first fetch"
    );
    // Batches begun once the first keys were in hand: none may wait for a refresh.
    let keys_in_hand = first_began + first;
    let mut later: Vec<Duration> = seen
        .iter()
        .filter(|s| s.0 >= keys_in_hand)
        .map(|s| s.1)
        .collect();
    later.sort_unstable();
    assert!(
        later.len() > 100,
        "{} batches after the first fetch",
        later.len()
    );
    let max = *later.last().unwrap();
    let pct = |q: f64| later[((later.len() - 1) as f64 * q) as usize];
    println!(
        "STS call {STS_DELAY:?}; {issued} fetches; first batch {first:?}; the {} batches begun \
         after it: p50 {:?}, p99 {:?}, max {max:?}",
        later.len(),
        pct(0.5),
        pct(0.99)
    );
    assert!(
        max < STS_DELAY,
        "a batch waited {max:?}, as long as an STS call ({STS_DELAY:?})"
    );
}
