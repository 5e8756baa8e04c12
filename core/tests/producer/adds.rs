//! The adds: the bindings' scratch and in-place paths, the plain add, destinations kept apart,
//! a full buffer (fail at once or block), bad input refused with a typed error, record sets
//! queued whole or not at all.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use loghose::emulator::{Emulator, EmulatorConfig, Fault, FaultAction};
use loghose::producer::bindings::{BindingAdds, InPlaceAdd};
use loghose::producer::{Producer, ProducerConfig, ProducerError, RecordError, SendOptions, Track};
use loghose::wire::keys::KeyProblem;

use super::common::now_secs;
use super::common::producer::{config, ids, incompressible, WAIT};

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
