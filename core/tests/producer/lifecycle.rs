//! Flush, close and the lifecycle: completions and report callbacks, bounded and idempotent
//! flush and close, close while requests are in flight, dropping a producer, the shared engine
//! threads, flush reports.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loghose::emulator::{Emulator, Fault, FaultAction};
use loghose::producer::{
    DeliveryReport, Producer, ProducerConfig, ProducerError, SendOptions, State,
};

use super::common::producer::{config, wait_until, WAIT};

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

/// The process's threads named `name`, as Linux lists them.
#[cfg(target_os = "linux")]
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
#[cfg(target_os = "linux")]
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
