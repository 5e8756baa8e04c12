//! The producer engine against the in-process emulator: exactly-once delivery, seal triggers,
//! flush and close, every fault class, bounded memory under both full-buffer policies, and bad
//! input. Every test is bounded in time and count.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loghose::emulator::{Emulator, EmulatorConfig, Fault, FaultAction, StsKey};
use loghose::producer::bindings::{BindingAdds, InPlaceAdd};
use loghose::producer::{
    CredentialsProvider, DeliveryReport, Outcome, Producer, ProducerConfig, ProducerError,
    RecordError, SendOptions, SignatureVersion, State, Track,
};
use loghose::wire::keys::KeyProblem;
use loghose::wire::sign::Credentials;

mod common;

use common::now_secs;
use common::producer::{config, ids, incompressible, wait_until, WAIT};

#[test]
fn four_threads_every_record_arrives_exactly_once_with_its_metadata() {
    let emu = Emulator::start_default().unwrap();
    let producer = Producer::new(ProducerConfig {
        batch_max_count: 500,
        ..config(&emu)
    })
    .unwrap();
    let per_thread = 5_000u64;
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let producer = &producer;
            s.spawn(move || {
                for i in 0..per_thread {
                    let id = (t * per_thread + i).to_string();
                    producer
                        .send(
                            &[
                                ("id", id.as_str()),
                                ("msg", "hello"),
                                ("Search/Analytics", "q"),
                            ],
                            &SendOptions::default(),
                        )
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(producer.flush(WAIT), 0);
    let logs = emu.logs("proj", "store");
    assert_eq!(logs.len(), 20_000);
    let unique: HashSet<u64> = ids(&emu, "store").into_iter().collect();
    assert_eq!(unique.len(), 20_000, "no duplicates, no gaps");
    let mut pack_ids = HashSet::new();
    for log in &logs {
        assert_eq!(log.topic.as_deref(), Some("t1"));
        assert_eq!(log.source.as_deref(), Some("10.0.0.9"));
        assert_eq!(log.tag("tag_1"), Some("val_1"));
        assert_eq!(log.get("msg"), Some("hello"));
        assert!(log.time_ns.is_some() && log.time > 1_700_000_000);
        pack_ids.insert(log.tag("__pack_id__").unwrap().to_owned());
    }
    let counters = emu.counters();
    assert_eq!(
        pack_ids.len() as u64,
        counters.log_groups,
        "one pack id per batch"
    );
    let stats = producer.stats();
    assert_eq!(
        (
            stats.accepted,
            stats.delivered,
            stats.failed,
            stats.queued_records,
            stats.queued_bytes
        ),
        (20_000, 20_000, 0, 0, 0)
    );
}

#[test]
fn a_batch_seals_on_its_count() {
    let emu = Emulator::start_default().unwrap();
    // Count: 25 records with batch_max_count 10 and a long linger → two full batches go at once.
    let p = Producer::new(ProducerConfig {
        batch_max_count: 10,
        linger_ms: 60_000,
        logstore: "count".into(),
        ..config(&emu)
    })
    .unwrap();
    for i in 0..25 {
        p.send(&[("id", i.to_string())], &SendOptions::default())
            .unwrap();
    }
    wait_until("two count-sealed batches", || {
        emu.totals("proj", "count").is_some_and(|t| t.groups == 2)
    });
    assert_eq!(emu.totals("proj", "count").unwrap().logs, 20);
    // The emulator stores a batch just before the producer reads its answer.
    wait_until("the two batches' reports", || p.stats().queued_records == 5);
    assert_eq!(p.flush(WAIT), 0);
    assert_eq!(emu.totals("proj", "count").unwrap().logs, 25);
}

#[test]
fn a_batch_seals_on_its_bytes() {
    let emu = Emulator::start_default().unwrap();
    // Bytes: ~1 KiB records with batch_max_bytes 4 KiB → batches of at most 4 KiB.
    let p = Producer::new(ProducerConfig {
        batch_max_bytes: 4096,
        linger_ms: 60_000,
        logstore: "bytes".into(),
        ..config(&emu)
    })
    .unwrap();
    let value = "x".repeat(1000);
    for i in 0..12 {
        p.send(
            &[("id", i.to_string()), ("v", value.clone())],
            &SendOptions::default(),
        )
        .unwrap();
    }
    wait_until("byte-sealed batches", || {
        emu.totals("proj", "bytes").is_some_and(|t| t.groups >= 2)
    });
    assert_eq!(p.flush(WAIT), 0);
    let totals = emu.totals("proj", "bytes").unwrap();
    assert_eq!(totals.logs, 12);
    assert!(totals.groups >= 3, "{totals:?}");
}

#[test]
fn a_batch_seals_when_its_linger_passes() {
    let emu = Emulator::start_default().unwrap();
    // Linger: one record is sent about linger_ms after it was added, without a flush.
    let p = Producer::new(ProducerConfig {
        linger_ms: 300,
        logstore: "linger".into(),
        ..config(&emu)
    })
    .unwrap();
    let started = Instant::now();
    p.send(&[("id", "1")], &SendOptions::default()).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    // Checked only if the sleep did not overshoot (a loaded machine can oversleep).
    if started.elapsed() < Duration::from_millis(250) {
        assert!(
            emu.totals("proj", "linger").is_none(),
            "sealed before its linger"
        );
    }
    wait_until("linger seal", || {
        emu.totals("proj", "linger").is_some_and(|t| t.logs == 1)
    });
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
}

#[test]
fn with_linger_zero_every_add_is_its_own_batch() {
    let emu = Emulator::start_default().unwrap();
    // Linger 0: every add is its own request.
    let p = Producer::new(ProducerConfig {
        linger_ms: 0,
        logstore: "now".into(),
        ..config(&emu)
    })
    .unwrap();
    for i in 0..3 {
        p.send(&[("id", i.to_string())], &SendOptions::default())
            .unwrap();
    }
    wait_until("three immediate batches", || {
        emu.totals("proj", "now").is_some_and(|t| t.groups == 3)
    });
}

#[test]
fn records_that_overflow_a_batch_move_whole_to_the_next_one() {
    // Records are written straight into their batch; one that would take the batch past
    // batch_max_bytes is moved out whole, the batch seals, and the record opens the next.
    let emu = Emulator::start_default().unwrap();
    let seen: Arc<Mutex<Vec<Arc<DeliveryReport>>>> = Arc::default();
    let sink = seen.clone();
    let limit = 4096usize;
    let p = Producer::build(
        ProducerConfig {
            batch_max_bytes: limit,
            linger_ms: 60_000,
            logstore: "overflow".into(),
            ..config(&emu)
        },
        None,
        Some(Box::new(move |reports: &[Arc<DeliveryReport>]| {
            sink.lock().unwrap().extend(reports.iter().cloned());
        })),
    )
    .unwrap();
    let mut rng = fastrand::Rng::with_seed(7);
    let sizes: Vec<usize> = (0..300).map(|_| rng.usize(1..3000)).collect();
    for (i, size) in sizes.iter().enumerate() {
        let value = "v".repeat(*size);
        p.send(
            &[("id", i.to_string()), ("v", value)],
            &SendOptions::default(),
        )
        .unwrap();
        if i == 10 {
            // A bad record between good ones changes nothing.
            assert!(p
                .send(&[("id", "x"), ("", "empty key")], &SendOptions::default())
                .is_err());
        }
    }
    assert_eq!(p.flush(WAIT), 0);
    p.close(WAIT);
    let logs = emu.logs("proj", "overflow");
    let mut got: Vec<(u64, usize)> = logs
        .iter()
        .map(|l| {
            (
                l.get("id").unwrap().parse().unwrap(),
                l.get("v").unwrap().len(),
            )
        })
        .collect();
    let expected: Vec<(u64, usize)> = sizes
        .iter()
        .enumerate()
        .map(|(i, s)| (i as u64, *s))
        .collect();
    // Batches are sent concurrently, so they may arrive in any order.
    got.sort_unstable();
    assert_eq!(got, expected, "every record once, whole");
    let reports = seen.lock().unwrap();
    assert_eq!(
        reports.iter().map(|r| r.records as usize).sum::<usize>(),
        300
    );
    // The batch's logs stay within the limit; topic, source and tags are added at seal.
    let overhead = 200;
    for r in reports.iter() {
        assert!(
            r.raw_bytes <= limit + overhead,
            "batch of {} bytes",
            r.raw_bytes
        );
    }
    assert!(
        reports.len() >= 300 * 1500 / limit,
        "{} batches",
        reports.len()
    );
    assert_eq!(p.stats().invalid, 1);
}

#[test]
fn the_scratch_path_delivers_and_survives_a_fill_that_reenters_the_producer() {
    let emu = Emulator::start_default().unwrap();
    let p = Producer::new(ProducerConfig {
        logstore: "scratch".into(),
        ..config(&emu)
    })
    .unwrap();
    for i in 0..100u64 {
        p.send_with_scratch(&SendOptions::default(), Track::None, |enc| {
            enc.field_str("id", &i.to_string())?;
            if i % 10 == 0 {
                // Foreign code run by a binding's conversion may itself log.
                p.send(&[("id", (1000 + i).to_string())], &SendOptions::default())
                    .unwrap();
            }
            enc.field_str("kind", "outer")
        })
        .unwrap();
    }
    // A failing fill through either path stores nothing and counts one invalid record.
    let bad = |enc: &mut loghose::producer::LogEncoder<'_>| {
        enc.field_str("id", "bad")?;
        enc.field_bytes(b"k", b"\xff\xfe")
    };
    assert!(p
        .send_with_scratch(&SendOptions::default(), Track::None, bad)
        .is_err());
    assert!(p
        .send_with(&SendOptions::default(), Track::None, bad)
        .is_err());
    assert_eq!(p.flush(WAIT), 0);
    let mut got = ids(&emu, "scratch");
    got.sort_unstable();
    let mut expected: Vec<u64> = (0..100)
        .chain((0..100).step_by(10).map(|i| 1000 + i))
        .collect();
    expected.sort_unstable();
    assert_eq!(got, expected);
    assert_eq!(p.stats().invalid, 2);
}

#[test]
fn a_declined_in_place_add_leaves_no_trace() {
    // A binding's fill may decline half-way (it met a value it must convert with foreign
    // code): the batch is rolled back, nothing is counted, and the caller retries elsewhere.
    let emu = Emulator::start_default().unwrap();
    let p = Producer::new(ProducerConfig {
        logstore: "declined".into(),
        ..config(&emu)
    })
    .unwrap();
    let decline = |enc: &mut loghose::producer::LogEncoder<'_>| {
        enc.field_str("id", "half")?;
        Ok(false)
    };
    // On a fresh batch, then on a batch that already holds a record.
    assert!(matches!(
        p.try_send_in_place(&SendOptions::default(), Track::None, decline),
        Ok(InPlaceAdd::Declined)
    ));
    p.send(&[("id", "1")], &SendOptions::default()).unwrap();
    assert!(matches!(
        p.try_send_in_place(&SendOptions::default(), Track::None, decline),
        Ok(InPlaceAdd::Declined)
    ));
    let kept = p
        .try_send_in_place(&SendOptions::default(), Track::None, |enc| {
            enc.field_str("id", "2")?;
            Ok(true)
        })
        .unwrap();
    assert!(matches!(kept, InPlaceAdd::Queued(None)), "{kept:?}");
    assert_eq!(p.flush(WAIT), 0);
    let stats = p.stats();
    assert_eq!((stats.invalid, stats.dropped, stats.delivered), (0, 0, 2));
    assert_eq!(ids(&emu, "declined"), vec![1, 2]);
}

#[test]
fn the_plain_add_stores_what_send_stores_and_refuses_as_send_does() {
    // `add_with` and `try_add_in_place` read no options: the producer's own destination, the
    // time now, no completion. They must store exactly what `send` with default options does,
    // and refuse and count exactly as it does.
    let emu = Emulator::start_default().unwrap();
    let p = Producer::new(ProducerConfig {
        logstore: "plain".into(),
        topic: "t-plain".into(),
        tags: vec![("env".into(), "test".into())],
        ..config(&emu)
    })
    .unwrap();
    let before = now_secs();
    let long = "v".repeat(200);
    for i in 0..3u64 {
        p.add_with(|enc| {
            enc.field_str("id", &i.to_string())?;
            enc.field_str("message", &long)
        })
        .unwrap();
    }
    p.send(&[("id", "3"), ("message", &long)], &SendOptions::default())
        .unwrap();
    // A bad record is refused by name and leaves the batch as it was.
    let refused = p.add_with(|enc| {
        enc.field_str("id", "bad")?;
        enc.field_str("__time__", "1")
    });
    assert!(
        matches!(&refused, Err(ProducerError::Record(RecordError::InvalidKey { key, problem: KeyProblem::Reserved })) if key == "__time__"),
        "{refused:?}"
    );
    // A declining fill writes and counts nothing; one that keeps its record is stored.
    let declined = p.try_add_in_place(|enc| {
        enc.field_str("id", "half")?;
        Ok(false)
    });
    assert!(matches!(declined, Ok(InPlaceAdd::Declined)), "{declined:?}");
    let kept = p.try_add_in_place(|enc| {
        enc.field_str("id", "4")?;
        enc.field_str("message", &long)?;
        Ok(true)
    });
    assert!(matches!(kept, Ok(InPlaceAdd::Queued(None))), "{kept:?}");
    assert_eq!(p.flush(WAIT), 0);
    let after = now_secs();
    let logs = emu.logs("proj", "plain");
    assert_eq!(ids(&emu, "plain"), vec![0, 1, 2, 3, 4]);
    for log in &logs {
        assert_eq!(log.get("message"), Some(long.as_str()));
        assert_eq!(log.topic.as_deref(), Some("t-plain"));
        assert_eq!(log.tag("env"), Some("test"));
        assert!((before..=after).contains(&log.time), "{}", log.time);
        assert!(log.time_ns.is_some());
    }
    let stats = p.stats();
    assert_eq!((stats.invalid, stats.dropped, stats.delivered), (1, 0, 5));
    // Closed: refused and counted as dropped, as `send` is.
    p.close(WAIT);
    assert!(matches!(
        p.add_with(|enc| enc.field_str("id", "5")),
        Err(ProducerError::Closed)
    ));
    assert!(matches!(
        p.try_add_in_place(|enc| enc.field_str("id", "6").map(|()| true)),
        Err(ProducerError::Closed)
    ));
    assert_eq!(p.stats().dropped, 2);
}

#[test]
fn a_failed_first_record_leaves_no_empty_batch_behind() {
    // The record that would have opened a batch fails: nothing is sent, nothing is pending,
    // and a flush has nothing to wait for.
    let emu = Emulator::start_default().unwrap();
    let p = Producer::new(ProducerConfig {
        linger_ms: 100,
        logstore: "empty".into(),
        ..config(&emu)
    })
    .unwrap();
    let dest = SendOptions {
        topic: Some("other"),
        ..SendOptions::default()
    };
    for opts in [SendOptions::default(), dest] {
        assert!(p.send(&[("__time__", "1")], &opts).is_err());
    }
    assert_eq!(p.flush(WAIT), 0);
    std::thread::sleep(Duration::from_millis(300));
    assert!(emu.totals("proj", "empty").is_none());
    assert_eq!(p.stats().queued_bytes, 0);
    p.send(&[("id", "1")], &SendOptions::default()).unwrap();
    assert_eq!(p.flush(WAIT), 0);
    assert_eq!(ids(&emu, "empty"), vec![1]);
}

/// One record per source `device-{i}`, so each opens a batch of its own.
fn send_one_per_device(p: &Producer, devices: u32) {
    for i in 0..devices {
        let source = format!("device-{i}");
        p.send(
            &[("id", i.to_string())],
            &SendOptions {
                source: Some(&source),
                ..Default::default()
            },
        )
        .unwrap();
    }
}

#[test]
fn many_open_batches_share_one_timer() {
    let emu = Emulator::start_default().unwrap();
    let p = Producer::new(ProducerConfig {
        linger_ms: 200,
        ..config(&emu)
    })
    .unwrap();
    send_one_per_device(&p, 2_000);
    wait_until("2000 linger-sealed batches", || {
        emu.totals("proj", "store").is_some_and(|t| t.logs == 2_000)
    });
    let logs = emu.logs("proj", "store");
    assert!(logs
        .iter()
        .all(|l| l.source.as_deref() == Some(&*format!("device-{}", l.get("id").unwrap()))));
    assert_eq!(emu.counters().log_groups, 2_000);
}

#[test]
fn seventy_thousand_open_batches_fit_in_the_process() {
    // More open batches than the kernel allows mappings per process (65 530 by default): small
    // batches must not take a mapping each. Nothing listens, and close abandons them all.
    let p = Producer::new(ProducerConfig {
        access_key_id: "id".into(),
        access_key_secret: "secret".into(),
        linger_ms: 60_000,
        max_attempts: 1,
        ..ProducerConfig::new("http://127.0.0.1:9", "proj", "store")
    })
    .unwrap();
    let started = Instant::now();
    send_one_per_device(&p, 70_000);
    let stats = p.stats();
    assert_eq!((stats.accepted, stats.queued_records), (70_000, 70_000));
    assert!(
        stats.queued_bytes < 16 << 20,
        "{} bytes queued",
        stats.queued_bytes
    );
    let report = p.close(Duration::from_millis(10));
    assert_eq!(
        report.undelivered, 70_000,
        "exact, past the 10 000 reports kept"
    );
    // The reports kept are capped at 10 000 (fewer when the abort's grace saw fewer batches
    // settle: a slow machine, qemu under load); those it did not see settle afterwards.
    assert!(report.failed.len() <= 10_000, "{}", report.failed.len());
    while p.pending() > 0 && started.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(p.stats().failed, 70_000);
    assert!(started.elapsed() < WAIT);
}

#[test]
fn destinations_topics_sources_and_shard_keys_are_kept_apart() {
    let emu = Emulator::start(EmulatorConfig {
        shard_count: 4,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let p = Producer::new(config(&emu)).unwrap();
    let opts = [
        SendOptions {
            logstore: Some("other"),
            ..Default::default()
        },
        SendOptions {
            project: Some("proj2"),
            topic: Some("t2"),
            ..Default::default()
        },
        SendOptions {
            shard_key: Some("ff"),
            ..Default::default()
        },
        SendOptions {
            shard_key: Some("00"),
            source: Some("s9"),
            ..Default::default()
        },
    ];
    for (i, o) in opts.iter().enumerate() {
        p.send(&[("id", i.to_string())], o).unwrap();
    }
    assert_eq!(p.flush(WAIT), 0);
    assert_eq!(emu.logs("proj", "other")[0].get("id"), Some("0"));
    let l = &emu.logs("proj2", "store")[0];
    assert_eq!((l.get("id"), l.topic.as_deref()), (Some("1"), Some("t2")));
    let store = emu.logs("proj", "store");
    let by_id = |id: &str| {
        store
            .iter()
            .find(|l| l.get("id") == Some(id))
            .unwrap()
            .clone()
    };
    assert_eq!(by_id("2").shard, 3);
    assert_eq!(
        (by_id("3").shard, by_id("3").source.as_deref()),
        (0, Some("s9"))
    );

    let adjusted = Producer::new(ProducerConfig {
        adjust_shard_hash: true,
        shard_buckets: 4,
        logstore: "adj".into(),
        ..config(&emu)
    })
    .unwrap();
    for user in ["alice", "bob", "carol", "dave", "erin", "frank"] {
        adjusted
            .send(
                &[("user", user)],
                &SendOptions {
                    shard_key: Some(user),
                    ..Default::default()
                },
            )
            .unwrap();
    }
    assert_eq!(adjusted.flush(WAIT), 0);
    let first: Vec<u32> = emu.logs("proj", "adj").iter().map(|l| l.shard).collect();
    assert_eq!(first.len(), 6);
    adjusted
        .send(
            &[("user", "alice")],
            &SendOptions {
                shard_key: Some("alice"),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(adjusted.flush(WAIT), 0);
    let alice: HashSet<u32> = emu
        .logs("proj", "adj")
        .iter()
        .filter(|l| l.get("user") == Some("alice"))
        .map(|l| l.shard)
        .collect();
    assert_eq!(alice.len(), 1, "one key always lands on one shard");
}

#[test]
fn completions_and_report_callbacks_carry_the_report() {
    let emu = Emulator::start_default().unwrap();
    let seen: Arc<Mutex<Vec<Arc<DeliveryReport>>>> = Arc::default();
    let sink = seen.clone();
    let calls = Arc::new(AtomicU32::new(0));
    let calls2 = calls.clone();
    let callback = Box::new(move |reports: &[Arc<DeliveryReport>]| {
        if calls2.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("a user callback that throws must not take the producer down");
        }
        sink.lock().unwrap().extend(reports.iter().cloned());
    });
    let p = Producer::build(
        ProducerConfig {
            linger_ms: 0,
            ..config(&emu)
        },
        None,
        Some(callback),
    )
    .unwrap();
    let completion = p
        .send_with_completion(&[("id", "1")], &SendOptions::default())
        .unwrap();
    let report = completion.wait(WAIT).unwrap();
    assert!(report.is_delivered());
    assert_eq!((report.attempts, report.records), (1, 1));
    assert_eq!(report.request_id.as_ref().map(String::len), Some(24));
    assert!(report.compressed_bytes > 0 && report.raw_bytes > 0);
    // The reporter hands over every report queued when it runs: wait for the first call (the
    // one that panics), so the next batch's report comes in a call of its own.
    let waited = Instant::now();
    while calls.load(Ordering::SeqCst) == 0 && waited.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(2));
    }
    for i in 0..5 {
        p.send(&[("id", i.to_string())], &SendOptions::default())
            .unwrap();
    }
    assert_eq!(p.flush(WAIT), 0);
    p.close(WAIT);
    let calls = calls.load(Ordering::SeqCst);
    assert!(calls >= 2);
    assert_eq!(p.stats().callback_errors, 1);
    assert!(!seen.lock().unwrap().is_empty());
}

#[test]
fn flush_and_close_are_bounded_idempotent_and_refuse_new_records() {
    let emu = Emulator::start_default().unwrap();
    let p = Producer::new(ProducerConfig {
        linger_ms: 60_000,
        ..config(&emu)
    })
    .unwrap();
    for i in 0..10 {
        p.send(&[("id", i.to_string())], &SendOptions::default())
            .unwrap();
    }
    assert_eq!(p.flush(WAIT), 0);
    assert_eq!(p.flush(WAIT), 0);
    p.send(&[("id", "10")], &SendOptions::default()).unwrap();
    let report = p.close(WAIT);
    assert_eq!(report.undelivered, 0);
    assert_eq!(p.close(WAIT).undelivered, 0);
    assert!(matches!(
        p.send(&[("id", "11")], &SendOptions::default()),
        Err(ProducerError::Closed)
    ));
    assert_eq!(emu.totals("proj", "store").unwrap().logs, 11);
}

#[test]
fn the_lifecycle_moves_forward_only() {
    let emu = Emulator::start_default().unwrap();
    let p = Producer::new(config(&emu)).unwrap();
    assert_eq!(p.state(), State::Running);
    p.send(&[("id", "1")], &SendOptions::default()).unwrap();
    assert_eq!(p.close(WAIT).undelivered, 0);
    assert_eq!(p.state(), State::Closed);
    assert!(p.is_closed());
    assert_eq!(p.flush(WAIT), 0);
    assert_eq!(
        p.state(),
        State::Closed,
        "nothing moves a closed producer back"
    );
    // A close that times out with records still retrying aborts them first.
    emu.inject(Fault::error(503, "ServerBusy", 1000));
    let q = Producer::new(ProducerConfig {
        backoff_base_ms: 1000,
        backoff_max_ms: 1000,
        ..config(&emu)
    })
    .unwrap();
    q.send(&[("id", "2")], &SendOptions::default()).unwrap();
    assert_eq!(q.flush(Duration::from_millis(300)), 1);
    let report = q.close(Duration::from_millis(100));
    assert_eq!(report.undelivered, 1);
    assert_eq!(q.state(), State::Closed);
    match report.failed.first() {
        Some(failed) => assert_eq!(failed.error_code(), Some("ProducerClosed")),
        None => {
            // The abort's grace passed before the batch settled: the engine's threads are
            // shared, and another test of this process may keep them busy (seventy thousand
            // batches aborting). Counted as undelivered all the same; it settles afterwards.
            let started = Instant::now();
            while q.pending() > 0 && started.elapsed() < WAIT {
                std::thread::sleep(Duration::from_millis(20));
            }
            assert_eq!(q.stats().failures_by_code.get("ProducerClosed"), Some(&1));
        }
    }
}

#[test]
fn close_waits_for_in_flight_requests() {
    let emu = Emulator::start_default().unwrap();
    emu.inject(Fault::times(FaultAction::Latency { ms: 400 }, 1));
    let p = Producer::new(ProducerConfig {
        linger_ms: 0,
        ..config(&emu)
    })
    .unwrap();
    p.send(&[("id", "1")], &SendOptions::default()).unwrap();
    wait_until("the request to be in flight", || {
        p.stats().in_flight_batches == 1
    });
    // The request is held 400 ms by the emulator; close returns only once it has landed.
    assert_eq!(p.close(WAIT).undelivered, 0);
    assert_eq!(emu.totals("proj", "store").unwrap().logs, 1);
}

#[test]
fn close_with_a_timeout_returns_what_was_left_while_retrying() {
    let emu = Emulator::start_default().unwrap();
    emu.inject(Fault::during(
        FaultAction::Error {
            status: 503,
            code: "ServerBusy".into(),
            message: None,
        },
        Duration::from_secs(30),
    ));
    let p = Producer::new(ProducerConfig {
        linger_ms: 0,
        max_attempts: 1000,
        ..config(&emu)
    })
    .unwrap();
    for i in 0..7 {
        p.send(&[("id", i.to_string())], &SendOptions::default())
            .unwrap();
    }
    let started = Instant::now();
    let report = p.close(Duration::from_millis(300));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "close is bounded"
    );
    assert_eq!(report.undelivered, 7);
    assert_eq!(report.failed.iter().map(|r| r.records).sum::<u32>(), 7);
    assert!(report
        .failed
        .iter()
        .all(|r| r.error_code() == Some("ProducerClosed")));
    let stats = p.stats();
    assert_eq!(
        (stats.failed, stats.queued_records, stats.queued_bytes),
        (7, 0, 0)
    );
    assert!(stats.retried > 0);
}

fn deliver_one(emu: &Emulator, cfg: ProducerConfig) -> Arc<DeliveryReport> {
    let p = Producer::new(ProducerConfig {
        linger_ms: 0,
        ..cfg
    })
    .unwrap();
    p.send_with_completion(&[("id", "x")], &SendOptions::default())
        .unwrap()
        .wait(WAIT)
        .unwrap_or_else(|e| panic!("{e}; stats {:?} counters {:?}", p.stats(), emu.counters()))
}

#[test]
fn server_errors_and_quota_are_retried_until_delivered() {
    let emu = Emulator::start_default().unwrap();
    emu.inject(Fault::error(503, "ServerBusy", 2));
    emu.inject(Fault::error(500, "InternalServerError", 1));
    emu.inject(Fault::error(403, "WriteQuotaExceed", 2));
    let report = deliver_one(&emu, config(&emu));
    assert!(report.is_delivered(), "{report:?}");
    assert_eq!(report.attempts, 6);
    assert_eq!(emu.totals("proj", "store").unwrap().logs, 1);
}

#[test]
fn resets_and_hangs_past_the_request_timeout_are_retried() {
    let emu = Emulator::start_default().unwrap();
    emu.inject(Fault::times(FaultAction::Reset, 2));
    emu.inject(Fault::times(FaultAction::Hang { ms: Some(10_000) }, 1));
    let started = Instant::now();
    let report = deliver_one(
        &emu,
        ProducerConfig {
            request_timeout_ms: 1000,
            ..config(&emu)
        },
    );
    assert!(report.is_delivered(), "{report:?}");
    assert_eq!(report.attempts, 4);
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[test]
fn final_errors_are_reported_once_and_not_retried() {
    let emu = Emulator::start(EmulatorConfig {
        auto_create: false,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let report = deliver_one(&emu, config(&emu));
    assert_eq!(
        (report.error_code(), report.attempts),
        (Some("ProjectNotExist"), 1)
    );
    assert!(matches!(
        report.outcome,
        Outcome::Failed {
            http_status: Some(404),
            ..
        }
    ));
    emu.create_logstore("proj", "store", None).unwrap();
    emu.inject(Fault::error(400, "ParameterInvalid", 1));
    let p = Producer::new(ProducerConfig {
        linger_ms: 0,
        ..config(&emu)
    })
    .unwrap();
    let report = p
        .send_with_completion(&[("id", "x")], &SendOptions::default())
        .unwrap()
        .wait(WAIT)
        .unwrap();
    assert_eq!(
        (report.error_code(), report.attempts),
        (Some("ParameterInvalid"), 1)
    );
    let stats = p.stats();
    assert_eq!((stats.failed, stats.retried), (1, 0));
    assert_eq!(stats.failures_by_code.get("ParameterInvalid"), Some(&1));
    assert_eq!(
        emu.counters().put_requests,
        2,
        "each final error was one request"
    );
}

#[test]
fn attempts_and_the_delivery_deadline_bound_retries() {
    let emu = Emulator::start_default().unwrap();
    emu.inject(Fault::during(
        FaultAction::Error {
            status: 503,
            code: "ServerBusy".into(),
            message: None,
        },
        Duration::from_secs(30),
    ));
    let report = deliver_one(
        &emu,
        ProducerConfig {
            max_attempts: 3,
            ..config(&emu)
        },
    );
    assert_eq!(
        (report.error_code(), report.attempts),
        (Some("ServerBusy"), 3)
    );
    let started = Instant::now();
    let report = deliver_one(
        &emu,
        ProducerConfig {
            delivery_timeout_ms: 300,
            max_attempts: 1000,
            ..config(&emu)
        },
    );
    assert_eq!(report.error_code(), Some("DeliveryTimeout"));
    assert!(started.elapsed() < Duration::from_secs(3));
}

struct Rotating {
    calls: AtomicU32,
    good_after: u32,
    good: Credentials,
}

impl CredentialsProvider for Rotating {
    fn credentials(&self) -> Result<Credentials, String> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n < self.good_after {
            Ok(Credentials::sts("STS.old", "expired-secret", "old-token"))
        } else {
            Ok(self.good.clone())
        }
    }
}

#[test]
fn unauthorized_is_retried_briefly_with_rotated_credentials() {
    let emu = Emulator::start(EmulatorConfig {
        sts_keys: vec![StsKey {
            id: "STS.new".into(),
            secret: "new-secret".into(),
            token: "new-token".into(),
        }],
        ..EmulatorConfig::default()
    })
    .unwrap();
    let provider = Arc::new(Rotating {
        calls: AtomicU32::new(0),
        good_after: 2,
        good: Credentials::sts("STS.new", "new-secret", "new-token"),
    });
    let cfg = ProducerConfig {
        access_key_id: String::new(),
        access_key_secret: String::new(),
        linger_ms: 0,
        ..config(&emu)
    };
    let p = Producer::with_credentials_provider(cfg.clone(), provider.clone()).unwrap();
    // The configuration is kept as given: no keys stand in for the provider's.
    assert_eq!(
        (
            p.config().access_key_id.as_str(),
            p.config().access_key_secret.as_str()
        ),
        ("", "")
    );
    let report = p
        .send_with_completion(&[("id", "1")], &SendOptions::default())
        .unwrap()
        .wait(WAIT)
        .unwrap();
    assert!(report.is_delivered(), "{report:?}");
    assert_eq!(report.attempts, 3);
    assert_eq!(
        provider.calls.load(Ordering::SeqCst),
        3,
        "credentials are read before every attempt"
    );

    // Never rotating: gives up after unauthorized_attempts extra tries.
    let stuck = Arc::new(Rotating {
        calls: AtomicU32::new(0),
        good_after: u32::MAX,
        good: Credentials::new("x", "y"),
    });
    let p = Producer::with_credentials_provider(
        ProducerConfig {
            unauthorized_attempts: 2,
            ..cfg
        },
        stuck,
    )
    .unwrap();
    let report = p
        .send_with_completion(&[("id", "2")], &SendOptions::default())
        .unwrap()
        .wait(WAIT)
        .unwrap();
    assert_eq!(
        (report.error_code(), report.attempts),
        (Some("Unauthorized"), 3)
    );
}

#[test]
fn request_time_expired_is_resigned_with_the_servers_clock() {
    // The server's clock runs an hour ahead of ours.
    let emu = Emulator::start(EmulatorConfig {
        clock_offset_secs: 3600,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let p = Producer::new(ProducerConfig {
        linger_ms: 0,
        ..config(&emu)
    })
    .unwrap();
    let report = p
        .send_with_completion(&[("id", "1")], &SendOptions::default())
        .unwrap()
        .wait(WAIT)
        .unwrap();
    assert!(report.is_delivered(), "{report:?}");
    assert_eq!(report.attempts, 2);
    let report = p
        .send_with_completion(&[("id", "2")], &SendOptions::default())
        .unwrap()
        .wait(WAIT)
        .unwrap();
    assert_eq!(report.attempts, 1, "the corrected offset is kept");
    assert_eq!(emu.counters().rejected.get("RequestTimeExpired"), Some(&1));
}

#[test]
fn the_server_gone_for_seconds_and_back_loses_nothing() {
    let first = Emulator::start_default().unwrap();
    let port = first.addr().port();
    let cfg = ProducerConfig {
        linger_ms: 20,
        backoff_max_ms: 500,
        connect_timeout_ms: 500,
        max_attempts: 1000,
        ..config(&first)
    };
    first.shutdown();
    let p = Producer::new(cfg).unwrap();
    for i in 0..500 {
        p.send(&[("id", i.to_string())], &SendOptions::default())
            .unwrap();
    }
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(p.stats().delivered, 0);
    assert!(p.stats().retried > 0);
    let back = Emulator::start(EmulatorConfig {
        port,
        ..EmulatorConfig::default()
    })
    .unwrap();
    assert_eq!(p.flush(WAIT), 0);
    assert_eq!(p.stats().failed, 0);
    let mut got = ids(&back, "store");
    got.sort_unstable();
    assert_eq!(got, (0..500).collect::<Vec<u64>>());
}

#[test]
fn a_full_buffer_fails_at_once_or_blocks_up_to_the_timeout() {
    let emu = Emulator::start_default().unwrap();
    // Long enough that nothing is delivered (and no room freed) between the checks below on a
    // loaded machine.
    emu.inject(Fault::times(FaultAction::Hang { ms: Some(5_000) }, 100));
    let small = ProducerConfig {
        batch_max_bytes: 1024,
        buffer_max_bytes: 4096,
        linger_ms: 0,
        request_timeout_ms: 6_000,
        ..config(&emu)
    };
    // A compressed batch gives back the part of its reservation its body does not use: values
    // that do not compress keep the budget full until a batch settles, which the hang delays.
    let value = incompressible(&mut 0x9e37_79b9_7f4a_7c15, 900);
    let p = Producer::new(small.clone()).unwrap();
    let mut accepted = 0;
    let err = loop {
        match p.send(&[("v", value.as_str())], &SendOptions::default()) {
            Ok(()) => accepted += 1,
            Err(e) => break e,
        }
        assert!(accepted < 100, "the buffer never filled");
    };
    match err {
        ProducerError::BufferFull {
            used,
            limit,
            needed,
            waited_ms,
        } => {
            assert_eq!(limit, 4096);
            assert!(used + needed > limit);
            assert_eq!(waited_ms, 0);
        }
        other => panic!("{other}"),
    }
    assert!(err_text_names_limits(&p, &value));
    assert_eq!(p.stats().dropped, 2);
    assert!(p.stats().queued_bytes <= 4096);

    let blocking = Producer::new(ProducerConfig {
        max_block_ms: 200,
        ..small.clone()
    })
    .unwrap();
    while blocking
        .send(&[("v", value.as_str())], &SendOptions::default())
        .is_ok()
    {}
    let started = Instant::now();
    assert!(
        matches!(blocking.send(&[("v", value.as_str())], &SendOptions::default()), Err(ProducerError::BufferFull { waited_ms, .. }) if waited_ms >= 190)
    );
    assert!(started.elapsed() >= Duration::from_millis(190));

    // With a long enough block, the add waits for room and then succeeds.
    emu.clear_faults();
    let patient = Producer::new(ProducerConfig {
        max_block_ms: 10_000,
        ..small
    })
    .unwrap();
    for _ in 0..20 {
        patient
            .send(&[("v", value.as_str())], &SendOptions::default())
            .unwrap();
    }
    assert_eq!(patient.flush(WAIT), 0);
    assert_eq!(patient.stats().dropped, 0);
}

fn err_text_names_limits(p: &Producer, value: &str) -> bool {
    let text = p
        .send(&[("v", value)], &SendOptions::default())
        .unwrap_err()
        .to_string();
    text.contains("4096") && text.contains("buffer full")
}

#[test]
fn bad_input_gets_a_typed_error_and_nothing_else_is_lost() {
    let emu = Emulator::start_default().unwrap();
    let p = Producer::new(config(&emu)).unwrap();
    let big = "v".repeat(1024 * 1024 + 1);
    let o = SendOptions::default();
    p.send(&[("id", "0")], &o).unwrap();
    let cases: Vec<(Result<(), ProducerError>, &str)> = vec![
        (p.send(&[("", "v")], &o), "empty key"),
        (p.send(&[("__time__", "v")], &o), "reserved key"),
        (p.send(&[("a\tb", "v")], &o), "control character"),
        (p.send(&[("k", big.as_str())], &o), "oversized value"),
        (p.send::<&str, &str>(&[], &o), "no fields"),
        (
            p.send(
                &[("k", "v")],
                &SendOptions {
                    shard_key: Some("zz"),
                    ..Default::default()
                },
            ),
            "bad shard key",
        ),
        (
            p.send(
                &[("k", "v")],
                &SendOptions {
                    logstore: Some("bad name"),
                    ..Default::default()
                },
            ),
            "bad logstore",
        ),
        (
            p.send_with(&o, loghose::producer::Track::None, |enc| {
                enc.field_bytes(b"k", b"\xc3\x28")
            })
            .map(drop),
            "invalid utf-8",
        ),
    ];
    for (result, what) in &cases {
        assert!(
            matches!(result, Err(ProducerError::Record(_))),
            "{what}: {result:?}"
        );
    }
    assert!(
        matches!(&cases[1].0, Err(ProducerError::Record(RecordError::InvalidKey { problem: KeyProblem::Reserved, key })) if key == "__time__")
    );
    let tiny = Producer::new(ProducerConfig {
        batch_max_bytes: 100,
        buffer_max_bytes: 1000,
        logstore: "tiny".into(),
        ..config(&emu)
    })
    .unwrap();
    assert!(matches!(
        tiny.send(&[("k", "v".repeat(200))], &o),
        Err(ProducerError::Record(RecordError::RecordTooLarge {
            limit: 100,
            ..
        }))
    ));
    p.send(&[("id", "1")], &o).unwrap();
    assert_eq!(p.flush(WAIT), 0);
    let mut got = ids(&emu, "store");
    got.sort_unstable();
    assert_eq!(got, vec![0, 1]);
    let stats = p.stats();
    assert_eq!(
        (stats.invalid, stats.accepted, stats.delivered),
        (cases.len() as u64, 2, 2)
    );
}

#[test]
fn v4_and_bearer_producers_deliver() {
    let emu = Emulator::start(EmulatorConfig {
        api_keys: vec!["key-1".into()],
        ..EmulatorConfig::default()
    })
    .unwrap();
    let v4 = deliver_one(
        &emu,
        ProducerConfig {
            signature_version: SignatureVersion::V4,
            region: Some("cn-hangzhou".into()),
            ..config(&emu)
        },
    );
    assert!(v4.is_delivered(), "{v4:?}");
    let bearer = deliver_one(
        &emu,
        ProducerConfig {
            api_key: Some("key-1".into()),
            access_key_id: String::new(),
            access_key_secret: String::new(),
            ..config(&emu)
        },
    );
    assert!(bearer.is_delivered(), "{bearer:?}");
    for codec in ["zstd", "deflate", "none"] {
        let c = loghose::wire::compress::Compression::from_name(codec).unwrap();
        assert!(
            deliver_one(
                &emu,
                ProducerConfig {
                    compression: c,
                    ..config(&emu)
                }
            )
            .is_delivered(),
            "{codec}"
        );
    }
    assert_eq!(emu.totals("proj", "store").unwrap().logs, 5);
}

#[test]
fn dropping_a_producer_delivers_what_it_holds() {
    let emu = Emulator::start_default().unwrap();
    {
        let p = Producer::new(ProducerConfig {
            linger_ms: 60_000,
            ..config(&emu)
        })
        .unwrap();
        for i in 0..100 {
            p.send(&[("id", i.to_string())], &SendOptions::default())
                .unwrap();
        }
    }
    assert_eq!(emu.totals("proj", "store").unwrap().logs, 100);
}

#[test]
fn https_works_with_the_extra_ca_and_is_refused_without_it() {
    use loghose::emulator::EmulatorTls;
    // A CA and a server certificate for 127.0.0.1, made for this test.
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "loghose test CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let server_params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .unwrap();
    let server_key = rcgen::KeyPair::generate().unwrap();
    let server = server_params.signed_by(&server_key, &ca, &ca_key).unwrap();
    let tls = EmulatorTls {
        cert_pem: server.pem(),
        key_pem: server_key.serialize_pem(),
    };
    let emu = Emulator::start(EmulatorConfig {
        tls: Some(tls),
        ..EmulatorConfig::default()
    })
    .unwrap();
    assert!(emu.endpoint().starts_with("https://127.0.0.1:"));
    let dir = std::env::temp_dir().join(format!("loghose-ca-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();

    let trusted = deliver_one(
        &emu,
        ProducerConfig {
            ca_file: Some(ca_file.to_string_lossy().into()),
            ..config(&emu)
        },
    );
    assert!(trusted.is_delivered(), "{trusted:?}");
    assert_eq!(emu.totals("proj", "store").unwrap().logs, 1);

    let untrusted = deliver_one(
        &emu,
        ProducerConfig {
            max_attempts: 2,
            ..config(&emu)
        },
    );
    assert_eq!(
        untrusted.error_code(),
        Some("RequestError"),
        "{untrusted:?}"
    );
    assert_eq!(
        emu.totals("proj", "store").unwrap().logs,
        1,
        "nothing went through without the CA"
    );
    assert!(matches!(
        Producer::new(ProducerConfig {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..config(&emu)
        }),
        Err(ProducerError::CaFile { .. })
    ));
    // A file with no certificate, or a certificate that is not one, is the constructor's
    // error even though the client is otherwise built at the first send.
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let garbage = dir.join("garbage.pem");
    std::fs::write(
        &garbage,
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    for bad in [&empty, &garbage] {
        let err = Producer::new(ProducerConfig {
            ca_file: Some(bad.to_string_lossy().into()),
            ..config(&emu)
        })
        .err()
        .unwrap_or_else(|| panic!("{} was accepted", bad.display()));
        assert!(matches!(err, ProducerError::Tls(_)), "{err:?}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn remote_address_connects_to_a_fixed_ip_under_the_real_host_name() {
    let emu = Emulator::start_default().unwrap();
    let port = emu.addr().port();
    let cfg = ProducerConfig {
        endpoint: format!("http://cn-nowhere.log.example.invalid:{port}"),
        remote_address: Some(emu.addr()),
        ..config(&emu)
    };
    let report = deliver_one(&emu, cfg);
    assert!(report.is_delivered(), "{report:?}");
    assert_eq!(
        emu.totals("proj", "store").unwrap().logs,
        1,
        "the project came from the Host name"
    );
}

fn threads_named(name: &str) -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim() == name)
        .count()
}

#[test]
fn many_producers_share_the_engines_threads() {
    // Thread names, not counts: other tests start threads of their own meanwhile.
    let emu = Emulator::start_default().unwrap();
    let warm = Producer::new(config(&emu)).unwrap();
    let producers: Vec<Producer> = (0..300)
        .map(|i| {
            Producer::new(ProducerConfig {
                logstore: format!("tenant-{i}"),
                linger_ms: 100,
                ..config(&emu)
            })
            .unwrap()
        })
        .collect();
    assert_eq!(
        threads_named("loghose-io"),
        2,
        "one engine for every producer"
    );
    for (i, p) in producers.iter().enumerate() {
        p.send(&[("tenant", i.to_string())], &SendOptions::default())
            .unwrap();
    }
    for p in &producers {
        assert_eq!(p.flush(WAIT), 0);
    }
    assert_eq!(emu.counters().logs, 300);
    drop(producers);
    drop(warm);
}

#[test]
fn a_record_set_is_queued_whole_or_not_at_all() {
    let emu = Emulator::start_default().unwrap();
    let p = Producer::new(ProducerConfig {
        logstore: "sets".into(),
        batch_max_bytes: 4096,
        ..config(&emu)
    })
    .unwrap();
    // A set spanning several batches arrives whole (batches may arrive in any order).
    let mut set = p.record_set();
    let value = "v".repeat(500);
    for i in 0..20u64 {
        set.push(&SendOptions::default(), |enc| {
            enc.field_str("id", &i.to_string())?;
            enc.field_str("v", &value)
        })
        .map_err(|e: RecordError| e)
        .unwrap();
    }
    // A record whose fill fails leaves the set as it was.
    let bad = set.push(&SendOptions::default(), |enc| {
        enc.field_str("id", "bad")?;
        enc.field_bytes(b"k", b"\xff")
    });
    assert!(matches!(bad, Err(RecordError::ValueNotUtf8 { .. })));
    assert_eq!(set.len(), 20);
    assert_eq!(p.send_all(&set, &SendOptions::default()).unwrap(), 20);
    assert_eq!(p.flush(WAIT), 0);
    let mut got = ids(&emu, "sets");
    got.sort_unstable();
    assert_eq!(got, (0..20).collect::<Vec<u64>>());
    assert!(emu.totals("proj", "sets").unwrap().groups >= 3);
    assert_eq!(p.stats().invalid, 1);

    // No room for the whole set: none of it is queued, all of it counted as dropped.
    let small = Producer::new(ProducerConfig {
        logstore: "small".into(),
        buffer_max_bytes: 4096,
        batch_max_bytes: 4096,
        ..config(&emu)
    })
    .unwrap();
    let mut big = small.record_set();
    for i in 0..10u64 {
        big.push(&SendOptions::default(), |enc| {
            enc.field_str("id", &i.to_string())?;
            enc.field_str("v", &value)
        })
        .map_err(|e: RecordError| e)
        .unwrap();
    }
    assert!(matches!(
        small.send_all(&big, &SendOptions::default()),
        Err(ProducerError::BufferFull { .. })
    ));
    assert_eq!(small.stats().dropped, 10);
    assert_eq!(small.stats().accepted, 0);
    // A closed producer refuses the whole set the same way.
    small.close(WAIT);
    assert!(matches!(
        small.send_all(&big, &SendOptions::default()),
        Err(ProducerError::Closed)
    ));
    assert_eq!(small.stats().dropped, 20);
    assert!(emu.totals("proj", "small").is_none());
}

#[test]
fn flush_report_tells_gave_up_from_all_delivered() {
    let refused = Producer::new(ProducerConfig {
        access_key_id: "id".into(),
        access_key_secret: "secret".into(),
        linger_ms: 10,
        max_attempts: 1,
        ..ProducerConfig::new("http://127.0.0.1:9", "proj", "store")
    })
    .unwrap();
    for i in 0..10 {
        refused
            .send(&[("i", i.to_string())], &SendOptions::default())
            .unwrap();
    }
    let report = refused.flush_report(WAIT);
    assert_eq!((report.pending, report.failed), (0, 10));
    assert_eq!(report.undelivered(), 10);
    // Only what failed since the previous report.
    assert_eq!(refused.flush_report(WAIT).undelivered(), 0);
    assert_eq!(refused.close(WAIT).undelivered, 10);

    let emu = Emulator::start_default().unwrap();
    let p = Producer::new(ProducerConfig {
        linger_ms: 60_000,
        logstore: "flushed".into(),
        ..config(&emu)
    })
    .unwrap();
    for i in 0..100 {
        p.send(&[("i", i.to_string())], &SendOptions::default())
            .unwrap();
    }
    // flush_accepted seals the open batch at once (no 60 s linger) and waits for it.
    let started = Instant::now();
    assert_eq!(p.flush_accepted(WAIT), 0);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(emu.totals("proj", "flushed").map(|t| t.logs), Some(100));
    assert_eq!(
        p.flush_report(WAIT),
        loghose::producer::FlushReport::default()
    );
    p.close(WAIT);
}

#[test]
fn time_precision_decides_the_sub_second_part_written() {
    use loghose::producer::TimePrecision;
    let emu = Emulator::start_default().unwrap();
    let cases = [
        ("p-ns", TimePrecision::Nanoseconds, Some(123_456_789)),
        ("p-ms", TimePrecision::Milliseconds, Some(123_000_000)),
        ("p-s", TimePrecision::Seconds, None),
    ];
    for (logstore, precision, expected) in cases {
        let producer = Producer::new(ProducerConfig {
            logstore: logstore.into(),
            time_precision: precision,
            ..config(&emu)
        })
        .unwrap();
        let before = now_secs();
        // A given time and the clock's time, through the in-place add and a record set.
        let given = SendOptions {
            time: Some(1_800_000_000),
            time_ns: Some(123_456_789),
            ..SendOptions::default()
        };
        producer.send(&[("k", "given")], &given).unwrap();
        producer
            .send(&[("k", "clock")], &SendOptions::default())
            .unwrap();
        producer
            .add_with(|enc| enc.field_str("k", "clock"))
            .unwrap();
        let mut set = producer.record_set();
        set.push(&given, |enc| enc.field_str("k", "set")).unwrap();
        producer.send_all(&set, &SendOptions::default()).unwrap();
        assert_eq!(producer.flush(WAIT), 0);
        let logs = emu.logs("proj", logstore);
        assert_eq!(logs.len(), 4, "{logstore}");
        for log in &logs {
            match log.get("k") {
                Some("clock") => match precision {
                    TimePrecision::Seconds => {
                        assert_eq!(log.time_ns, None);
                        // Read from the coarse clock: at most a tick behind the precise one.
                        assert!(
                            (before.saturating_sub(1)..=before + 5).contains(&log.time),
                            "{} against {before}",
                            log.time
                        );
                    }
                    TimePrecision::Milliseconds => {
                        assert_eq!(log.time_ns.map(|n| n % 1_000_000), Some(0))
                    }
                    TimePrecision::Nanoseconds => assert!(log.time_ns.is_some()),
                },
                _ => {
                    assert_eq!(
                        (log.time, log.time_ns),
                        (1_800_000_000, expected),
                        "{logstore}"
                    )
                }
            }
        }
    }
    let parsed = ProducerConfig::from_json(r#"{"time_precision": "ms"}"#).unwrap();
    assert_eq!(parsed.time_precision, TimePrecision::Milliseconds);
    let refused = ProducerConfig::from_json(r#"{"time_precision": "us"}"#).unwrap_err();
    assert!(refused.to_string().contains("time_precision"), "{refused}");
}
