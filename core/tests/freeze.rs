//! A function's freeze survived by the engine alone: a child process (this test binary run
//! again as `handler_child`) plays a serverless handler: it sends, returns, and the platform
//! freezes the instance (SIGSTOP) for longer than the request timeout (1 s) and than the clock
//! skew the emulator allows (2 s), then thaws it (SIGCONT) for its next invocation. Nothing may
//! be lost, no request may be refused for its date (requests are signed as they are sent, not
//! when their batch was made), none sent twice, and none retried in a burst after the thaw.
//! With the end-of-invocation flush, everything went before each freeze and not one request is
//! refused; without it, what was held goes after the thaw, and a freeze falling between a
//! request's signature and its first byte may make the service refuse that one request for its
//! date (signed again and delivered at once: at most one such refusal per freeze).
#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use loghose::emulator::{Emulator, EmulatorConfig};
use loghose::producer::{Producer, ProducerConfig, SendOptions};

const CHILD: &str = "LOGHOSE_FREEZE_CHILD";
const INVOCATIONS: usize = 2;
const RECORDS: usize = 100;

/// The handler's process: `LOGHOSE_FREEZE_CHILD` holds `endpoint key secret ending`; each line
/// on stdin is an invocation, answered `handler: done`; end of input closes the producer.
#[test]
fn handler_child() {
    let Ok(args) = std::env::var(CHILD) else {
        return; // run as a test of its own: nothing to do
    };
    let args: Vec<&str> = args.split(' ').collect();
    let [endpoint, key_id, secret, ending] = args[..] else {
        panic!("{CHILD}: {args:?}");
    };
    let producer = Producer::new(ProducerConfig {
        access_key_id: key_id.into(),
        access_key_secret: secret.into(),
        linger_ms: 500,
        request_timeout_ms: 1000,
        ..ProducerConfig::new(endpoint, "proj", "frozen")
    })
    .unwrap();
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    for invocation in 0..INVOCATIONS {
        lines.next().unwrap().unwrap();
        for i in 0..RECORDS {
            let fields = [("invocation", invocation.to_string()), ("i", i.to_string())];
            producer.send(&fields, &SendOptions::default()).unwrap();
        }
        if ending == "flush" {
            // Before the platform freezes the instance.
            assert_eq!(producer.flush(Duration::from_secs(10)), 0);
        }
        answer("done");
    }
    assert!(lines.next().is_none());
    let closed = producer.close(Duration::from_secs(10));
    assert_eq!(closed.undelivered, 0);
    answer("closed");
}

/// Writes `handler: {what}` to standard output itself: the test harness may hold what `println!`
/// writes.
fn answer(what: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "handler: {what}").unwrap();
    out.flush().unwrap();
}

fn frozen_handler(ending: &str) {
    let emu = Emulator::start(EmulatorConfig {
        max_clock_skew_secs: 2,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let creds = emu.credentials().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "handler_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(
            CHILD,
            format!(
                "{} {} {} {ending}",
                emu.endpoint(),
                creds.access_key_id,
                creds.access_key_secret
            ),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut stdin = child.stdin.take().unwrap();
    let mut answers = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(Result::unwrap)
        // The harness's "test handler_child ... " may begin the line.
        .filter_map(|line| line.split_once("handler: ").map(|(_, a)| a.to_owned()));
    let mut stored_while_frozen = Vec::new();
    for _ in 0..INVOCATIONS {
        writeln!(stdin, "invoke").unwrap();
        assert_eq!(answers.next().as_deref(), Some("done"));
        // SAFETY: signals to our own child, which is alive (it has just answered).
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
        std::thread::sleep(Duration::from_secs(4));
        stored_while_frozen.push(emu.logs("proj", "frozen").len());
        // SAFETY: as above; the child stays ours until it is waited for.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    }
    drop(stdin);
    assert_eq!(answers.next().as_deref(), Some("closed"));
    assert!(child.wait().unwrap().success());

    let mut got: Vec<(usize, usize)> = emu
        .logs("proj", "frozen")
        .iter()
        .map(|log| {
            let field = |k: &str| {
                let (_, v) = log.contents.iter().find(|(key, _)| key == k).unwrap();
                v.parse::<usize>().unwrap()
            };
            (field("invocation"), field("i"))
        })
        .collect();
    got.sort_unstable();
    let want: Vec<(usize, usize)> = (0..INVOCATIONS)
        .flat_map(|n| (0..RECORDS).map(move |i| (n, i)))
        .collect();
    assert_eq!(got, want);
    let counters = emu.counters();
    assert_eq!(counters.duplicate_groups, 0, "{counters:?}");
    if ending == "flush" {
        assert!(counters.rejected.is_empty(), "{counters:?}");
        assert_eq!(counters.put_requests, counters.accepted_requests);
        assert_eq!(stored_while_frozen, [RECORDS, 2 * RECORDS]);
    } else {
        let refused = counters
            .rejected
            .get("RequestTimeExpired")
            .copied()
            .unwrap_or(0);
        assert!(
            counters.rejected.len() <= usize::from(refused > 0) && refused <= INVOCATIONS as u64,
            "{counters:?}"
        );
        assert_eq!(
            counters.put_requests,
            counters.accepted_requests + refused,
            "{counters:?}"
        );
    }
}

#[test]
fn a_frozen_handler_that_flushed_loses_nothing_and_sends_nothing_twice() {
    frozen_handler("flush");
}

#[test]
fn a_frozen_handler_that_did_not_flush_loses_nothing_and_sends_nothing_twice() {
    frozen_handler("no-flush");
}
