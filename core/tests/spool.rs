//! The spool with real processes: a child producer is SIGKILLed at random instants, again and
//! again on the same directory, and the records it acknowledged must all arrive (duplicates
//! only from batches in flight at a kill); a corrupted segment is skipped and counted; a full
//! spool refuses or blocks; a second producer on a held directory is refused with the holder's
//! pid. The emulator runs in this process on 127.0.0.1; every wait is bounded.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use loghose::emulator::{Emulator, Fault, FaultAction};
use loghose::producer::{
    ErrorKind, Producer, ProducerConfig, ProducerError, SendOptions, SpoolSync,
};

mod common;

use common::producer::incompressible;

const CHILD_ENV: &str = "LOGHOSE_SPOOL_CHILD";

/// The files under `dir` (in it and in its producers' slot directories) with one of
/// `extensions` (segments `spl`, batch files `spb`, the replay ledger `log`).
fn spool_files(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let listing = |d: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(d)
            .map(|entries| entries.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    };
    listing(dir)
        .into_iter()
        .flat_map(|p| if p.is_dir() { listing(&p) } else { vec![p] })
        .filter(|p| {
            p.extension()
                .is_some_and(|x| extensions.iter().any(|e| x == *e))
        })
        .collect()
}

/// The files under `dir` this process holds open or mapped (Linux: read from /proc; elsewhere
/// nothing is listed, and a test sees what is held when it cannot delete it).
fn open_or_mapped_under(dir: &Path) -> Vec<String> {
    let mut held = Vec::new();
    if !cfg!(target_os = "linux") {
        return held;
    }
    let dir = dir.canonicalize().unwrap().display().to_string();
    for fd in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        if let Ok(target) = std::fs::read_link(fd.path()) {
            let target = target.display().to_string();
            if target.starts_with(&dir) {
                held.push(format!("open: {target}"));
            }
        }
    }
    for line in std::fs::read_to_string("/proc/self/maps").unwrap().lines() {
        if let Some(at) = line.find(&dir) {
            held.push(format!("mapped: {}", &line[at..]));
        }
    }
    held
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "loghose-spool-it-{name}-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn spool_config(endpoint: &str, dir: &Path) -> ProducerConfig {
    ProducerConfig {
        access_key_id: loghose::emulator::DEFAULT_ACCESS_KEY_ID.into(),
        access_key_secret: loghose::emulator::DEFAULT_ACCESS_KEY_SECRET.into(),
        linger_ms: 50,
        batch_max_count: 500,
        backoff_base_ms: 10,
        backoff_max_ms: 100,
        spool_dir: Some(dir.display().to_string()),
        ..ProducerConfig::new(endpoint, "proj", "spooled")
    }
}

/// The child side: sends `run`'s records 0, 1, 2, … (alternating two destinations), at about
/// `rate` a second (0: as fast as it can), and after each accepted one writes its index to the
/// acknowledgement file (a mapping, so the write costs no system call). Runs until killed, or
/// until `count` records when it is set.
#[test]
#[ignore = "the child process of the spool tests"]
fn spool_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let [endpoint, dir, ack, run, rate, count, sync, linger_ms] = parts.as_slice() else {
        panic!("bad child spec {spec}");
    };
    let rate: u64 = rate.parse().unwrap();
    let count: u64 = count.parse().unwrap();
    let producer = Producer::new(ProducerConfig {
        spool_sync: SpoolSync::parse(sync).expect("a sync mode"),
        linger_ms: linger_ms.parse().unwrap(),
        ..spool_config(endpoint, Path::new(dir))
    })
    .unwrap();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(ack)
        .unwrap();
    // SAFETY: the acknowledgement file is this child's, 8 bytes, never truncated meanwhile.
    let mut mark = unsafe { memmap2::MmapMut::map_mut(&file).unwrap() };
    let started = Instant::now();
    let mut i = 0u64;
    loop {
        if count > 0 && i == count {
            mark.flush().unwrap();
            std::thread::sleep(Duration::from_secs(600));
        }
        // Even records to the producer's own logstore (its batches are written in batch files),
        // odd ones to another (their batches go to the shards' segments).
        let opts = SendOptions {
            logstore: (!i.is_multiple_of(2)).then_some("spooled-b"),
            ..SendOptions::default()
        };
        let index = i.to_string();
        match producer.send(&[("run", *run), ("i", index.as_str())], &opts) {
            Ok(()) => mark[..8].copy_from_slice(&(i + 1).to_le_bytes()),
            Err(e) if e.kind() == ErrorKind::BufferFull => {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            Err(e) => panic!("{e}"),
        }
        i += 1;
        if rate > 0 {
            let due = started + Duration::from_secs_f64(i as f64 / rate as f64);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
    }
}

fn spawn_child_syncing(
    emu: &Emulator,
    dir: &Path,
    ack: &Path,
    run: u32,
    rate: u64,
    count: u64,
    sync: &str,
) -> Child {
    let linger_ms = spool_config("", dir).linger_ms;
    spawn_child_with(emu, dir, ack, (run, rate, count), sync, linger_ms)
}

/// A child sending `run`'s records at `rate` up to `count` (see `spool_child`), syncing as
/// `sync` says, its batches sealed `linger_ms` after their first record.
fn spawn_child_with(
    emu: &Emulator,
    dir: &Path,
    ack: &Path,
    (run, rate, count): (u32, u64, u64),
    sync: &str,
    linger_ms: u64,
) -> Child {
    // Zeroed in place, not truncated: on Windows a killed child's mapping of it may outlive
    // the child for a moment, and a mapped file cannot be truncated there.
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(ack)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &[0u8; 8]))
        .unwrap();
    this_test_binary()
        .args([
            "--exact",
            "spool_child",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            CHILD_ENV,
            format!(
                "{}|{}|{}|{run}|{rate}|{count}|{sync}|{linger_ms}",
                emu.endpoint(),
                dir.display(),
                ack.display()
            ),
        )
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// A command that runs this test binary again: through the target's runner when cargo runs the
/// tests through one (`CARGO_TARGET_<TRIPLE>_RUNNER`, such as qemu-user for another
/// architecture), which the child needs as much as this process did.
fn this_test_binary() -> Command {
    let exe = std::env::current_exe().unwrap();
    let runner = std::env::vars()
        .find(|(k, v)| {
            k.starts_with("CARGO_TARGET_") && k.ends_with("_RUNNER") && !v.trim().is_empty()
        })
        .map(|(_, v)| v);
    match runner {
        Some(runner) => {
            let mut words = runner.split_whitespace();
            let mut command = Command::new(words.next().unwrap_or_default());
            command.args(words).arg(exe);
            command
        }
        None => Command::new(exe),
    }
}

fn acked(ack: &Path) -> u64 {
    let b = std::fs::read(ack).unwrap();
    u64::from_le_bytes(b[..8].try_into().unwrap())
}

/// Ends `child` at once, as a crash would: SIGKILL on Unix, TerminateProcess on Windows
/// (what `Child::kill` sends on each).
fn kill(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Sends `count` records of `run` (with a `pad` field) through a producer made with `config`
/// while the emulator answers nothing, and closes it: every batch is left in the spool
/// (kept, not failed).
fn leave_in_spool(config: ProducerConfig, run: &str, count: u64, pad: &str) {
    let producer = Producer::new(config).unwrap();
    for i in 0..count {
        let i = i.to_string();
        producer
            .send(
                &[("run", run), ("i", i.as_str()), ("pad", pad)],
                &SendOptions::default(),
            )
            .unwrap();
    }
    let closed = producer.close(Duration::from_millis(200));
    assert_eq!((closed.undelivered, closed.kept), (0, count));
}

/// Opens a producer on the directory (which replays it) and closes it.
fn drain(emu: &Emulator, dir: &Path) -> loghose::producer::Stats {
    let p = Producer::new(spool_config(&emu.endpoint(), dir)).unwrap();
    let report = p.close(Duration::from_secs(60));
    assert_eq!(report.undelivered, 0, "{:?}", report.failed.first());
    p.stats()
}

/// (run, index) → how many times the emulator holds it.
fn held(emu: &Emulator) -> HashMap<(u32, u64), u32> {
    let mut seen = HashMap::new();
    for logstore in ["spooled", "spooled-b"] {
        for log in emu.logs("proj", logstore) {
            let run = log.get("run").unwrap().parse().unwrap();
            let i = log.get("i").unwrap().parse().unwrap();
            *seen.entry((run, i)).or_default() += 1;
        }
    }
    seen
}

fn kill_loop(kills: u32, rate: u64, sync: &str) {
    let emu = Emulator::start_default().unwrap();
    let dir = temp_dir("kill");
    let ack = dir.with_extension("ack");
    std::fs::create_dir_all(&dir).unwrap();
    let mut marks = Vec::new();
    for run in 0..kills {
        let child = spawn_child_syncing(&emu, &dir, &ack, run, rate, 0, sync);
        // Up to 1.5 s in, at a random instant (the first runs also replay what the earlier
        // ones left).
        std::thread::sleep(Duration::from_millis(300 + fastrand::u64(0..1200)));
        kill(child);
        marks.push(acked(&ack));
    }
    let stats = drain(&emu, &dir);
    let seen = held(&emu);
    let mut lost = 0u64;
    for (run, &mark) in marks.iter().enumerate() {
        for i in 0..mark {
            if !seen.contains_key(&(run as u32, i)) {
                lost += 1;
            }
        }
    }
    let duplicated: u64 = seen.values().map(|n| u64::from(n - 1)).sum();
    // Duplicated records by the run that sent them first (a batch in flight at two kills, sent
    // three times, counts twice against its run).
    let mut per_run: std::collections::BTreeMap<u32, u64> = Default::default();
    for ((run, _), n) in &seen {
        *per_run.entry(*run).or_default() += u64::from(n - 1);
    }
    let acknowledged: u64 = marks.iter().sum();
    let counters = emu.counters();
    eprintln!(
        "spool kill loop at {rate} logs/s, spool_sync {sync}: {kills} kills, {acknowledged} acknowledged, {lost} lost, \
         {duplicated} duplicated ({} duplicate groups; records by first run {per_run:?}), replayed at the end: {} batches",
        counters.duplicate_groups, stats.replayed_batches
    );
    assert!(acknowledged > 0);
    assert_eq!(lost, 0, "acknowledged records lost across kills");
    // A duplicate comes only from a batch in flight at a kill: at most `send_concurrency`
    // (default 8) batches of at most 500 records each, per kill. A batch keeps its send slot
    // until it is marked done; a replay's copy names its original (a kill between the copy
    // and its ledger entry sends the batch once), such a copy, dropped, is named in the
    // ledger (it never stands for its original later, when the copy that replaced it has
    // left no trace); the old files go oldest first (a kill in the middle of their deletion
    // never leaves a done batch's records without its mark).
    let per_kill: u64 = 8;
    assert!(
        counters.duplicate_groups <= u64::from(kills) * per_kill,
        "{} duplicate groups; duplicated records by first run {per_run:?}",
        counters.duplicate_groups
    );
    assert!(duplicated <= u64::from(kills) * per_kill * 500);
    // The last drain left nothing behind.
    let left = spool_files(&dir, &["spl", "spb"]).len();
    assert_eq!(left, 0, "spool files left after a clean close");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&ack);
}

#[test]
fn sigkill_twenty_times_at_50_000_a_second_loses_nothing_acknowledged() {
    kill_loop(20, 50_000, "none");
}

#[test]
fn sigkill_at_full_speed_loses_nothing_acknowledged() {
    kill_loop(5, 0, "none");
}

/// With a timed sync every 20 ms, batch files go both ways: those a sync took wait for their
/// bodies' group commit, the others go back at once; a kill finds either kind.
#[test]
fn sigkill_at_full_speed_with_interval_syncing_loses_nothing_acknowledged() {
    kill_loop(5, 0, "interval:20");
}

#[test]
fn a_corrupted_record_is_skipped_counted_and_the_rest_delivered() {
    let emu = Emulator::start_default().unwrap();
    let dir = temp_dir("corrupt");
    let ack = dir.with_extension("ack");
    std::fs::create_dir_all(&dir).unwrap();
    // Nothing is delivered while the child runs: every record stays in the spool.
    emu.inject(Fault::during(
        FaultAction::Hang { ms: Some(30_000) },
        Duration::from_secs(60),
    ));
    // Its batches stay open until the kill (a slow machine, or qemu, would otherwise seal and
    // compress them first: their records would then stand in a compressed body, not in the
    // batch file this test corrupts).
    let child = spawn_child_with(&emu, &dir, &ack, (7, 0, 300), "none", 600_000);
    let deadline = Instant::now() + Duration::from_secs(20);
    while acked(&ack) < 300 {
        assert!(
            Instant::now() < deadline,
            "the child never sent its records"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(child);
    // Flip one byte inside the record of index 150 (in a batch file: the producer's own
    // destination's batches are written in files of their own).
    let mut flipped = None;
    for path in spool_files(&dir, &["spl", "spb"]) {
        let mut bytes = std::fs::read(&path).unwrap();
        // The field `i = "150"` as the record holds it: key 1 "i", value 2 "150".
        let needle = b"\x0a\x01i\x12\x03150";
        if let Some(at) = bytes.windows(needle.len()).position(|w| w == needle) {
            bytes[at + 5] ^= 0x01;
            std::fs::write(&path, &bytes).unwrap();
            flipped = path.extension().map(|x| x.to_string_lossy().into_owned());
            break;
        }
    }
    assert_eq!(
        flipped.as_deref(),
        Some("spb"),
        "record 150 not found in a batch file"
    );
    // Delivered to another emulator: this one, its faults cleared, could still read and store
    // a request the child had written before it was killed (its socket outlives it), which
    // would deliver record 150 from memory rather than from the spool.
    let fresh = Emulator::start_default().unwrap();
    let stats = drain(&fresh, &dir);
    assert_eq!(stats.spool_corrupt_entries, 1);
    let seen = held(&fresh);
    let missing: Vec<u64> = (0..300).filter(|i| !seen.contains_key(&(7, *i))).collect();
    assert_eq!(missing, vec![150], "only the corrupted record is missing");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&ack);
}

#[test]
fn a_producer_opened_on_more_than_its_buffer_holds_returns_at_once_and_replays_in_the_background() {
    let emu = Emulator::start_default().unwrap();
    let dir = temp_dir("large-replay");
    // Nothing is delivered until the faults are cleared: room in a buffer smaller than what
    // is left never comes.
    emu.inject(Fault::during(
        FaultAction::Hang { ms: Some(30_000) },
        Duration::from_secs(60),
    ));
    leave_in_spool(
        spool_config(&emu.endpoint(), &dir),
        "3",
        2_000,
        &"p".repeat(200),
    );

    let small = ProducerConfig {
        batch_max_bytes: 16 << 10,
        buffer_max_bytes: 64 << 10,
        ..spool_config(&emu.endpoint(), &dir)
    };
    let opened = Instant::now();
    let second = Producer::new(small.clone()).unwrap();
    assert!(
        opened.elapsed() < Duration::from_secs(5),
        "the constructor waited {:?} for the replay",
        opened.elapsed()
    );
    // A flush cannot deliver while the replay waits for room: it says so.
    assert!(second.flush(Duration::from_millis(100)) > 0);
    // Nor does a flush waiting for it hold up another thread's: `flush(0)` answers at once.
    std::thread::scope(|s| {
        s.spawn(|| second.flush(Duration::from_secs(2)));
        std::thread::sleep(Duration::from_millis(100));
        let asked = Instant::now();
        assert!(second.flush(Duration::ZERO) > 0);
        assert!(
            asked.elapsed() < Duration::from_millis(500),
            "flush(0) waited {:?} behind another flush",
            asked.elapsed()
        );
    });
    // Closing stops the replay; what it did not queue stays in the spool.
    let closing = Instant::now();
    second.close(Duration::from_millis(300));
    assert!(
        closing.elapsed() < Duration::from_secs(10),
        "close took {:?}",
        closing.elapsed()
    );
    drop(second);

    emu.clear_faults();
    drain(&emu, &dir);
    let seen = held(&emu);
    let missing: Vec<u64> = (0..2_000)
        .filter(|i| !seen.contains_key(&(3, *i)))
        .collect();
    assert!(missing.is_empty(), "{} records missing", missing.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_replay_cut_short_is_not_sent_again_by_the_next_producer() {
    let emu = Emulator::start_default().unwrap();
    let dir = temp_dir("cut-replay");
    // Nothing is answered: the first producer leaves everything in the spool, and the second
    // one's replay stops once its buffer is full of batches waiting to be sent.
    emu.inject(Fault::during(
        FaultAction::Hang { ms: Some(30_000) },
        Duration::from_secs(60),
    ));
    // Values lz4 cannot shorten: a queued batch keeps its whole reservation, so the buffer
    // bounds what the replay queues.
    let mut state = 4;
    let pad = incompressible(&mut state, 200);
    // Batches of 20 records (a replay sends each batch as it was).
    let first = ProducerConfig {
        batch_max_count: 20,
        ..spool_config(&emu.endpoint(), &dir)
    };
    leave_in_spool(first, "4", 20_000, &pad);

    let second = Producer::new(ProducerConfig {
        batch_max_bytes: 16 << 10,
        buffer_max_bytes: 64 << 10,
        ..spool_config(&emu.endpoint(), &dir)
    })
    .unwrap();
    let started = Instant::now();
    while second.stats().replayed_batches == 0 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Closing stops the replay midway: some batches spooled anew, the rest never read.
    second.close(Duration::ZERO);
    let queued = second.stats().replayed_batches;
    drop(second);
    assert!(
        (1..1_000).contains(&queued),
        "the second producer queued {queued} of 1 000 batches: not a replay cut short"
    );

    // The rest is delivered to another emulator: a request the second producer had written
    // when it closed may still be read and stored by this one once its faults are cleared
    // (an in-flight batch, which at-least-once sends again), and that is not what is checked
    // here.
    let fresh = Emulator::start_default().unwrap();
    drain(&fresh, &dir);
    let seen = held(&fresh);
    let missing = (0..20_000).filter(|i| !seen.contains_key(&(4, *i))).count();
    assert_eq!(missing, 0, "records missing");
    // The batches the second producer spooled anew are sent from its files only, not again
    // from the first one's.
    let twice = seen.values().filter(|n| **n > 1).count();
    assert_eq!(
        twice, 0,
        "records sent twice ({queued} batches were queued before the cut)"
    );
    assert!(
        spool_files(&dir, &["log"]).is_empty(),
        "the ledger outlived the files it names"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_live_producer_sends_what_a_killed_sibling_left_without_waiting_for_its_replacement() {
    // A pre-fork server's worker SIGKILLed with records in its open batches: the worker that
    // replaces it may not log for a long while (or there is none). A sibling producer on the
    // same spool_dir, idle itself, takes the dead slot within about a second and sends them.
    let emu = Emulator::start_default().unwrap();
    let dir = temp_dir("sibling");
    let sibling = Producer::new(spool_config(&emu.endpoint(), &dir)).unwrap();
    let ack = dir.with_extension("ack");
    // 300 records, under batch_max_count: every one still in an open batch (a 10-minute
    // linger) when the child is killed.
    let child = spawn_child_with(&emu, &dir, &ack, (7, 0, 300), "none", 600_000);
    let started = Instant::now();
    while acked(&ack) < 300 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(acked(&ack), 300, "the child did not send its records");
    assert!(
        held(&emu).is_empty(),
        "the child delivered before its linger"
    );
    kill(child);
    let killed = Instant::now();
    while held(&emu).len() < 300 && killed.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let seen = held(&emu);
    assert_eq!(
        (0..300).filter(|i| seen.get(&(7, *i)) == Some(&1)).count(),
        300,
        "each of the dead child's records once, {:?} after the kill: {} held",
        killed.elapsed(),
        seen.len()
    );
    assert_eq!(sibling.stats().replayed_records, 300);
    // The dead slot is let go once its files are gone (a flush waits for the replay that took
    // it to end): the next producer takes it rather than a third.
    assert_eq!(sibling.flush(Duration::from_secs(10)), 0);
    assert!(spool_files(&dir.join("slot-1"), &["spl", "spb", "log"]).is_empty());
    let next = Producer::new(spool_config(&emu.endpoint(), &dir)).unwrap();
    assert!(
        !dir.join("slot-2").exists(),
        "a third slot was made: the dead one was still held"
    );
    assert_eq!(sibling.close(Duration::from_secs(10)).undelivered, 0);
    assert_eq!(next.close(Duration::from_secs(10)).undelivered, 0);
    assert_eq!(held(&emu).len(), 300, "nothing else was sent");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&ack);
}

#[test]
fn a_directory_whose_every_slot_is_held_is_refused_with_the_holders_pid() {
    let emu = Emulator::start_default().unwrap();
    let dir = temp_dir("held");
    let one_slot = || ProducerConfig {
        spool_slots: 1,
        ..spool_config(&emu.endpoint(), &dir)
    };
    let first = Producer::new(one_slot()).unwrap();
    let asked = Instant::now();
    let refused = Producer::new(one_slot()).err().unwrap();
    assert_eq!(refused.kind(), ErrorKind::SpoolLocked);
    let text = refused.to_string();
    assert!(
        text.contains(&dir.display().to_string()) && text.contains(&std::process::id().to_string()),
        "{text}"
    );
    // Refused at once while the holder is open; once it is closed (its last I/O tasks may
    // hold the directory a moment longer) an opener waits up to a second for it.
    assert!(
        asked.elapsed() < Duration::from_millis(500),
        "{:?}",
        asked.elapsed()
    );
    // A close that left nothing behind lets the slot go at once (the producer itself lives on).
    first.close(Duration::from_secs(10));
    let asked = Instant::now();
    let next = Producer::new(one_slot()).unwrap();
    assert!(
        asked.elapsed() < Duration::from_millis(500),
        "{:?}",
        asked.elapsed()
    );
    drop(first);
    drop(next);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn records_a_close_leaves_in_the_spool_are_kept_not_failed_and_the_next_producer_sends_them_once() {
    let emu = Emulator::start_default().unwrap();
    emu.inject(Fault::during(
        FaultAction::Hang { ms: Some(20_000) },
        Duration::from_secs(3),
    ));
    let dir = temp_dir("kept");
    let reports = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = reports.clone();
    let producer = Producer::build(
        ProducerConfig {
            request_timeout_ms: 20_000,
            ..spool_config(&emu.endpoint(), &dir)
        },
        None,
        Some(Box::new(
            move |batch: &[std::sync::Arc<loghose::producer::DeliveryReport>]| {
                seen.lock().unwrap().extend(batch.iter().cloned());
            },
        )),
    )
    .unwrap();
    let tracked = producer
        .send_with_completion(&[("i", "tracked")], &SendOptions::default())
        .unwrap();
    for i in 0..99 {
        producer
            .send(&[("i", i.to_string().as_str())], &SendOptions::default())
            .unwrap();
    }
    std::thread::sleep(Duration::from_millis(300)); // sealed and in flight, hanging
    let closed = producer.close(Duration::from_millis(500));
    assert_eq!((closed.undelivered, closed.kept), (0, 100));
    assert!(closed.failed.is_empty());
    let stats = producer.stats();
    assert_eq!((stats.failed, stats.kept), (0, 100));
    assert!(
        stats.failures_by_code.is_empty(),
        "{:?}",
        stats.failures_by_code
    );
    let report = tracked.wait(Duration::from_secs(5)).unwrap();
    assert!(report.is_kept() && !report.is_delivered());
    assert_eq!(report.error_code(), Some(loghose::producer::KEPT_IN_SPOOL));
    let told = reports.lock().unwrap().clone();
    assert_eq!(told.iter().map(|r| r.records).sum::<u32>(), 100);
    assert!(told.iter().all(|r| r.is_kept()));
    // What the closed producer left is on disk, and no longer open or mapped by it.
    assert!(!spool_files(&dir, &["spl", "spb"]).is_empty());
    assert_eq!(open_or_mapped_under(&dir), Vec::<String>::new());
    // Every batch settled (as kept): the close let the slot go, and the next producer (one
    // slot only, the closed one still alive) takes it and sends every record, once.
    emu.clear_faults();
    let next = Producer::new(ProducerConfig {
        spool_slots: 1,
        ..spool_config(&emu.endpoint(), &dir)
    })
    .unwrap();
    assert_eq!(next.flush(Duration::from_secs(30)), 0);
    let closed = next.close(Duration::from_secs(10));
    assert_eq!((closed.undelivered, closed.kept), (0, 0));
    // It deleted the files it sent again, the closed producer still alive (Windows refuses to
    // delete a file some handle or mapping still holds).
    assert_eq!(spool_files(&dir, &["spl", "spb"]), Vec::<PathBuf>::new());
    drop(producer);
    let mut got: Vec<String> = emu
        .logs("proj", "spooled")
        .iter()
        .map(|l| l.contents[0].1.clone())
        .collect();
    got.sort();
    got.dedup();
    assert_eq!(got.len(), 100, "every record");
    // In flight at the close: the hung requests may have been stored (not here: they hang
    // before storing), so each arrives once.
    assert_eq!(emu.logs("proj", "spooled").len(), 100, "none twice");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_full_spool_fails_at_once_or_after_blocking() {
    let emu = Emulator::start_default().unwrap();
    emu.inject(Fault::during(
        FaultAction::Hang { ms: Some(20_000) },
        Duration::from_secs(30),
    ));
    let dir = temp_dir("full");
    let config = ProducerConfig {
        spool_max_bytes: 1 << 20,
        request_timeout_ms: 20_000,
        ..spool_config(&emu.endpoint(), &dir)
    };
    let value = "v".repeat(1000);
    let fill = |p: &Producer| {
        for n in 0..10_000 {
            if let Err(e) = p.send(&[("v", value.as_str())], &SendOptions::default()) {
                return (n, e);
            }
        }
        panic!("the spool never filled");
    };
    let p = Producer::new(config.clone()).unwrap();
    let (accepted, error) = fill(&p);
    // max_block_ms 0: refused without waiting for room (what it reports as waited is the time
    // the add itself took, a few ms under qemu).
    assert!(
        matches!(error, ProducerError::SpoolFull { waited_ms, .. } if waited_ms < 500),
        "{error}"
    );
    assert_eq!(error.kind(), ErrorKind::BufferFull);
    assert!(error.to_string().contains("spool_max_bytes"), "{error}");
    assert!(accepted > 100, "{accepted}");
    assert!(p.stats().spool_bytes <= 1 << 20);
    assert!(p.stats().dropped >= 1);
    p.close(Duration::from_millis(100));
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);

    let dir = temp_dir("full-block");
    let p = Producer::new(ProducerConfig {
        max_block_ms: 300,
        ..ProducerConfig {
            spool_dir: Some(dir.display().to_string()),
            ..config
        }
    })
    .unwrap();
    let started = Instant::now();
    let (_, error) = fill(&p);
    assert!(
        matches!(error, ProducerError::SpoolFull { waited_ms, .. } if waited_ms >= 300),
        "{error}"
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
    p.close(Duration::from_millis(100));
    drop(p);
    emu.clear_faults();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Mounts a tmpfs of `bytes` at `dir` (root only); `None` where that is not allowed.
fn small_disk(dir: &Path, bytes: u64) -> Option<()> {
    std::fs::create_dir_all(dir).ok()?;
    let status = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
        .arg(dir)
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    status.success().then_some(())
}

#[test]
fn a_disk_that_runs_out_of_space_is_a_full_spool_and_recovers_when_batches_settle() {
    let disk = temp_dir("small-disk");
    if small_disk(&disk, 24 << 20).is_none() {
        // Without the right to mount, `a_full_spool_fails_at_once_or_after_blocking` covers the
        // same admission through spool_max_bytes.
        eprintln!("skipped: cannot mount a tmpfs here");
        let _ = std::fs::remove_dir_all(&disk);
        return;
    }
    let emu = Emulator::start_default().unwrap();
    emu.inject(Fault::during(
        FaultAction::Hang { ms: Some(60_000) },
        Duration::from_secs(60),
    ));
    let dir = disk.join("spool");
    let p = Producer::new(ProducerConfig {
        request_timeout_ms: 1_000,
        ..spool_config(&emu.endpoint(), &dir)
    })
    .unwrap();
    // Values that do not compress: what the spool keeps of a sent batch (its compressed
    // body) is then as large as its records.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut accepted = 0u64;
    let error = loop {
        let value = incompressible(&mut state, 1000);
        match p.send(&[("v", value.as_str())], &SendOptions::default()) {
            Ok(()) => accepted += 1,
            Err(e) => break e,
        }
        assert!(accepted < 100_000, "the disk never filled");
    };
    assert!(
        matches!(
            error,
            ProducerError::SpoolFull {
                disk_full: true,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(error.kind(), ErrorKind::BufferFull);
    assert!(error.to_string().contains("disk"), "{error}");
    assert!(accepted > 1_000, "{accepted}");
    // Refused again while nothing is delivered (a batch compressed meanwhile may free a file
    // for a few more records); each refusal counted.
    let more = (0..10_000)
        .position(|_| p.send(&[("v", "x")], &SendOptions::default()).is_err())
        .expect("refused again");
    accepted += more as u64;
    assert!(p.stats().dropped >= 2);
    // Delivery resumes: batches settle, segments are freed, sends are accepted again.
    emu.clear_faults();
    assert_eq!(p.flush(Duration::from_secs(60)), 0);
    for _ in 0..100 {
        p.send(&[("v", "after")], &SendOptions::default()).unwrap();
    }
    assert_eq!(p.close(Duration::from_secs(30)).undelivered, 0);
    let held = emu.totals("proj", "spooled").map_or(0, |t| t.logs);
    assert_eq!(held, accepted + 100);
    drop(p);
    let _ = Command::new("umount").arg(&disk).status();
    let _ = std::fs::remove_dir_all(&disk);
}

#[test]
fn with_interval_sync_a_batch_file_no_timed_sync_took_goes_back_as_its_batch_is_compressed() {
    let emu = Emulator::start_default().unwrap();
    let dir = temp_dir("interval");
    let p = Producer::new(ProducerConfig {
        // Ten minutes: no timed sync takes a file during the test.
        spool_sync: SpoolSync::Interval(Duration::from_secs(600)),
        batch_max_count: 100,
        ..spool_config(&emu.endpoint(), &dir)
    })
    .unwrap();
    for i in 0..5_000 {
        p.send(&[("i", i.to_string().as_str())], &SendOptions::default())
            .unwrap();
    }
    assert_eq!(p.flush(Duration::from_secs(30)), 0);
    let batch_files = || spool_files(&dir, &["spb"]).len();
    // 50 batches went through batch files; each file went back for reuse (marked free, or
    // deleted beyond those kept) as its batch was compressed, before it was sent: with no
    // timed sync since it was taken, it held only records a power loss may lose, and no sync
    // of the body was waited for.
    let in_use: Vec<PathBuf> = spool_files(&dir, &["spb"])
        .into_iter()
        .filter(|path| std::fs::read(path).is_ok_and(|head| &head[..8] != b"LGHBATFR"))
        .collect();
    assert!(in_use.is_empty(), "{in_use:?} still in use after the flush");
    let files = batch_files();
    assert!(
        (1..50).contains(&files),
        "{files} batch files for 50 batches"
    );
    assert_eq!(p.close(Duration::from_secs(10)).undelivered, 0);
    assert_eq!(batch_files(), 0, "a clean close leaves no batch file");
    assert_eq!(emu.totals("proj", "spooled").map_or(0, |t| t.logs), 5_000);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Empty segment files of a later run (a producer killed between making a segment and sizing
/// it) are counted by the next producer's recovery: its run is later than every run a file
/// names, so none of its new files collides with one there, and it sends everything left in
/// one go.
#[test]
fn empty_segments_of_a_later_run_never_make_the_next_producer_reuse_their_names() {
    let emu = Emulator::start_default().unwrap();
    emu.inject(Fault::during(
        FaultAction::Hang { ms: Some(20_000) },
        Duration::from_secs(2),
    ));
    let dir = temp_dir("empty-run");
    // Another destination: its batches go through the segments, where the names collide.
    let config = ProducerConfig {
        request_timeout_ms: 20_000,
        ..spool_config(&emu.endpoint(), &dir)
    };
    let producer = Producer::new(config).unwrap();
    let other = SendOptions {
        logstore: Some("spooled-b"),
        ..SendOptions::default()
    };
    for i in 0..1000u64 {
        let i = i.to_string();
        producer
            .send(&[("run", "1"), ("i", i.as_str())], &other)
            .unwrap();
    }
    let closed = producer.close(Duration::from_millis(300));
    assert_eq!((closed.undelivered, closed.kept), (0, 1000));
    drop(producer);
    let slot = dir.join("slot-0");
    // What a producer of the next run killed at once leaves: made, never sized.
    for seq in 0..512u64 {
        std::fs::File::create(slot.join(format!("seg-{:016x}-{seq:016x}.spl", 2))).unwrap();
    }
    std::thread::sleep(Duration::from_secs(2)); // the hang is over
    let stats = drain(&emu, &dir);
    assert_eq!(stats.replayed_records, 1000, "{stats:?}");
    let held = held(&emu);
    assert_eq!(held.len(), 1000);
    assert!(held.values().all(|n| *n == 1), "each once");
    assert!(
        spool_files(&dir, &["spl", "spb"]).is_empty(),
        "nothing left for another producer"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
