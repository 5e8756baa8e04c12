//! The producer across a slow network and under the service's write quotas, against the
//! emulator's network model and quotas: everything delivered exactly once, the adaptive
//! concurrency visible in the stats (grown under latency, cut and paced under a quota, fixed
//! when asked), a delivery deadline met while throttled reported as such, and the emulator's
//! quota answers, counters, auto split and admin API.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use loghose::emulator::{Emulator, EmulatorConfig, NetworkConfig, QuotaConfig};
use loghose::producer::{
    ConcurrencyMode, Outcome, Producer, ProducerConfig, SendLimit, SendOptions,
};

mod common;

use common::producer::{config, ids, incompressible, WAIT};

fn start(network: NetworkConfig, quotas: QuotaConfig) -> Emulator {
    Emulator::start(EmulatorConfig {
        network,
        quotas,
        ..EmulatorConfig::default()
    })
    .unwrap()
}

fn limit_of(p: &Producer, logstore: &str) -> SendLimit {
    p.stats()
        .send_limits
        .into_iter()
        .find(|l| l.logstore == logstore)
        .unwrap_or_else(|| panic!("no send limit for {logstore}"))
}

/// Sends `n` records of `len` incompressible letters, `id` numbered from `first`.
fn send_many(p: &Producer, first: u64, n: u64, len: usize) {
    let mut state = 0x9e37_79b9_7f4a_7c15 ^ first;
    for i in first..first + n {
        let id = i.to_string();
        let body = incompressible(&mut state, len);
        p.send(
            &[("id", id.as_str()), ("body", body.as_str())],
            &SendOptions::default(),
        )
        .expect("accepted");
    }
}

/// Every id from 0 to `n` stored exactly once.
fn assert_exactly_once(emu: &Emulator, n: u64) {
    let mut got = ids(emu, "store");
    got.sort_unstable();
    let unique: BTreeSet<u64> = got.iter().copied().collect();
    assert_eq!(got.len(), unique.len(), "duplicates stored");
    assert_eq!(unique, (0..n).collect(), "records missing");
    assert_eq!(emu.counters().duplicate_groups, 0);
}

#[test]
fn across_a_50_ms_round_trip_the_limit_grows_and_everything_arrives_once() {
    let emu = start(
        NetworkConfig {
            latency_ms: 50,
            jitter_ms: 5,
            bandwidth_bytes_per_sec: 0,
        },
        QuotaConfig::default(),
    );
    let p = Producer::new(ProducerConfig {
        batch_max_count: 20,
        send_concurrency: 16,
        ..config(&emu)
    })
    .unwrap();
    send_many(&p, 0, 2_000, 100);
    assert_eq!(p.flush(WAIT), 0);
    let limit = limit_of(&p, "store");
    assert!(limit.limit > 2, "grew from 2 under a backlog: {limit:?}");
    assert!((40..=70).contains(&limit.rtt_ms), "{limit:?}");
    assert_eq!((limit.pushed_back, limit.pace), (0, 0), "{limit:?}");
    assert_exactly_once(&emu, 2_000);
    p.close(WAIT);
}

#[test]
fn fixed_mode_keeps_send_concurrency() {
    let emu = start(
        NetworkConfig {
            latency_ms: 20,
            ..NetworkConfig::default()
        },
        QuotaConfig {
            shard_writes_per_sec: 20,
            ..QuotaConfig::default()
        },
    );
    let p = Producer::new(ProducerConfig {
        batch_max_count: 10,
        send_concurrency: 5,
        send_concurrency_mode: ConcurrencyMode::Fixed,
        ..config(&emu)
    })
    .unwrap();
    send_many(&p, 0, 600, 50);
    assert_eq!(p.flush(WAIT), 0);
    let limit = limit_of(&p, "store");
    assert_eq!(
        (limit.limit, limit.pace, limit.cuts),
        (5, 0, 0),
        "{limit:?}"
    );
    assert!(limit.pushed_back > 0, "the quota pushed back: {limit:?}");
    assert_exactly_once(&emu, 600);
    p.close(WAIT);
}

#[test]
fn under_a_shard_quota_the_producer_paces_itself_and_delivers_everything_once() {
    // Two shards of 200 kB/s: 400 kB/s for a producer offering several times that.
    let emu = start(
        NetworkConfig {
            latency_ms: 10,
            ..NetworkConfig::default()
        },
        QuotaConfig {
            shard_write_bytes_per_sec: 200_000,
            ..QuotaConfig::default()
        },
    );
    let p = Producer::new(ProducerConfig {
        batch_max_bytes: 64 * 1024,
        linger_ms: 20,
        ..config(&emu)
    })
    .unwrap();
    let started = Instant::now();
    // 1 000 records of 1 kB: 1 MB, about 2.5 s at the quota.
    send_many(&p, 0, 1_000, 1_000);
    assert_eq!(p.flush(WAIT), 0);
    let took = started.elapsed();
    let limit = limit_of(&p, "store");
    let counters = emu.counters();
    let throttled = counters.throttled.get("shard_bytes").copied().unwrap_or(0);
    assert!(throttled > 0, "the quota refused some: {counters:?}");
    assert_eq!(
        counters.rejected.get("ShardWriteQuotaExceed").copied(),
        Some(throttled)
    );
    assert_eq!(limit.pushed_back, throttled, "{limit:?}");
    assert!(limit.pace > 0, "paced after a push back: {limit:?}");
    assert!(limit.cuts > 0, "{limit:?}");
    let stats = p.stats();
    assert_eq!(stats.retried, throttled);
    assert_eq!((stats.delivered, stats.failed), (1_000, 0));
    // Not faster than the quota allows (the buckets start full: a second's worth more).
    assert!(took >= Duration::from_millis(1_000), "{took:?}");
    assert_exactly_once(&emu, 1_000);
    p.close(WAIT);
}

#[test]
fn a_deadline_passing_while_throttled_fails_the_batch_naming_the_quota() {
    let emu = start(
        NetworkConfig::default(),
        QuotaConfig {
            // A write every ten seconds per shard: after the first of each, refused.
            shard_writes_per_sec: 1,
            ..QuotaConfig::default()
        },
    );
    emu.create_logstore("proj", "store", Some(1)).unwrap();
    let p = Producer::new(ProducerConfig {
        batch_max_count: 1,
        delivery_timeout_ms: 1_500,
        backoff_base_ms: 100,
        backoff_max_ms: 400,
        ..config(&emu)
    })
    .unwrap();
    let mut completions = Vec::new();
    for i in 0..6 {
        let id = i.to_string();
        completions.push(
            p.send_with_completion(&[("id", id.as_str())], &SendOptions::default())
                .unwrap(),
        );
    }
    let mut delivered = 0;
    let mut timed_out = 0;
    for c in completions {
        let report = c.wait(WAIT).unwrap();
        match &report.outcome {
            Outcome::Delivered => delivered += 1,
            Outcome::Failed { code, message, .. } => {
                assert_eq!(code, "DeliveryTimeout");
                assert!(
                    message.contains("ShardWriteQuotaExceed"),
                    "names the quota: {message}"
                );
                timed_out += 1;
            }
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    assert!(
        delivered >= 1 && timed_out >= 1,
        "{delivered} delivered, {timed_out} timed out"
    );
    let stats = p.stats();
    assert_eq!(
        stats.failures_by_code.get("DeliveryTimeout"),
        Some(&timed_out)
    );
    p.close(WAIT);
}

/// PutLogs through the admin API's settings, as a client of the emulator's HTTP API would.
#[test]
fn admin_api_sets_the_network_and_quotas_and_the_service_answers_as_it_would() {
    let emu = Emulator::start_default().unwrap();
    let base = emu.endpoint();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let http = reqwest::Client::new();
    let admin = |method: reqwest::Method, what: &str, body: Option<serde_json::Value>| {
        runtime.block_on(async {
            let mut request = http.request(method, format!("{base}/_emulator/{what}"));
            if let Some(body) = body {
                request = request.json(&body);
            }
            let answer = request.send().await.unwrap();
            let status = answer.status().as_u16();
            (status, answer.json::<serde_json::Value>().await.unwrap())
        })
    };
    let (status, _) = admin(
        reqwest::Method::PUT,
        "quotas",
        Some(serde_json::json!({"project_writes_per_min": 120, "auto_split": true})),
    );
    assert_eq!(status, 200);
    let (_, got) = admin(reqwest::Method::GET, "quotas", None);
    assert_eq!(got["project_writes_per_min"], 120);
    assert_eq!(got["split_interval_ms"], 1000);
    let (status, error) = admin(
        reqwest::Method::PUT,
        "quotas",
        Some(serde_json::json!({"shard_qps": 1})),
    );
    assert_eq!(status, 400, "{error}");
    assert!(error["errorMessage"]
        .as_str()
        .unwrap()
        .contains("shard_qps"));
    let (status, _) = admin(
        reqwest::Method::PUT,
        "network",
        Some(serde_json::json!({"latency_ms": 30})),
    );
    assert_eq!(status, 200);
    let (_, got) = admin(reqwest::Method::GET, "network", None);
    assert_eq!(
        got,
        serde_json::json!({"latency_ms": 30, "jitter_ms": 0, "bandwidth_bytes_per_sec": 0})
    );

    // 120 writes a minute: a bucket of two. The third request is refused as the service does.
    let p = Producer::new(ProducerConfig {
        linger_ms: 0,
        max_attempts: 1,
        ..config(&emu)
    })
    .unwrap();
    let mut outcomes = Vec::new();
    for i in 0..3 {
        let id = i.to_string();
        let c = p
            .send_with_completion(&[("id", id.as_str())], &SendOptions::default())
            .unwrap();
        outcomes.push(c.wait(WAIT).unwrap());
    }
    match &outcomes[2].outcome {
        Outcome::Failed {
            code,
            message,
            http_status,
        } => {
            assert_eq!(
                (code.as_str(), *http_status),
                ("WriteQuotaExceed", Some(403))
            );
            assert!(
                message.starts_with("Project write quota exceed: qps: 120"),
                "{message}"
            );
        }
        other => panic!("expected a quota refusal, got {other:?}"),
    }
    // The round trip was played: each answer took the latency at least.
    assert!(outcomes[0].send_time >= Duration::from_millis(25));
    assert_eq!(emu.counters().throttled.get("project_qps"), Some(&1));
    p.close(WAIT);

    // Auto split: a logstore whose one shard refuses gains one.
    emu.set_network(NetworkConfig::default());
    emu.set_quotas(QuotaConfig {
        shard_writes_per_sec: 1,
        auto_split: true,
        split_interval_ms: 0,
        ..QuotaConfig::default()
    });
    emu.create_logstore("proj", "hot", Some(1)).unwrap();
    let p = Producer::new(ProducerConfig {
        linger_ms: 0,
        max_attempts: 1,
        ..config(&emu)
    })
    .unwrap();
    let opts = SendOptions {
        logstore: Some("hot"),
        ..SendOptions::default()
    };
    for i in 0..3 {
        let id = i.to_string();
        let c = p
            .send_with_completion(&[("id", id.as_str())], &opts)
            .unwrap();
        c.wait(WAIT).unwrap();
    }
    let counters = emu.counters();
    assert!(counters.shard_splits >= 1, "{counters:?}");
    let shards: BTreeSet<u32> = emu.logs("proj", "hot").iter().map(|l| l.shard).collect();
    assert!(
        shards.len() >= 2,
        "written to the new shard too: {shards:?}"
    );
    p.close(WAIT);
}
