//! The store's own tests: segments, batch files, recovery and slots, on real files.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::format::*;
use super::recovery::*;
use super::store::*;
use super::*;
use crate::producer::config::SpoolSync;
use crate::producer::routing::Destination;
use crate::wire::compress::Compression;

fn dest(logstore: &str) -> Destination {
    Destination {
        project: "proj".into(),
        logstore: logstore.into(),
        topic: "t".into(),
        source: "10.0.0.1".into(),
        hash_key: Some("00ff".into()),
    }
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "loghose-spool-{name}-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Opens a spool under `d` (in its first slot, as the only producer there): the spool,
/// the batches its slot held, and the rest of what the slot held (its files, its ledger).
fn open(d: &Path, max: usize) -> (Arc<Spool>, Vec<Recovered>, Leftover) {
    let mut o = Spool::open(d, 64, 2, max, 64 << 20, SpoolSync::None).unwrap();
    assert_eq!(o.leftovers.len(), 1, "no orphans here");
    let mut own = o.leftovers.remove(0);
    (o.spool, std::mem::take(&mut own.recovered), own)
}

/// The slot directory a spool opened by `open` writes in.
fn slot(d: &Path) -> PathBuf {
    d.join("slot-0")
}

#[test]
fn batch_files_are_recovered_from_their_records_or_their_compressed_body() {
    let d = dir("body");
    let framed = |text: &str| [&[0x0a, text.len() as u8][..], text.as_bytes()].concat();
    let fill = |spool: &Spool, batch: u64, texts: &[&str]| {
        let mut mark = SpoolMark::default();
        let mut buf = spool
            .take_batch_file(batch, &mut mark)
            .expect("a batch file");
        for t in texts {
            let from = buf.len();
            buf.extend_from_slice(&framed(t));
            spool.index_record(&mut mark, &buf, from).unwrap();
        }
        (mark, buf)
    };
    {
        let (spool, _, _) = open(&d, 64 << 20);
        spool.enable_batch_files(64 << 10, 100, &dest("own"), b"tags");
        // Batch 1: sealed and compressed, not delivered: its body stands for its file,
        // which goes back and is reused by batch 2.
        let (mut m1, mut buf) = fill(&spool, 1, &["one", "two"]);
        spool.sealed(0, 1, "PACK-1", &mut m1);
        buf.extend_from_slice(b"\x22\x03src");
        let raw_len = buf.len();
        let body = crate::wire::compress::compress(Compression::Lz4, &buf).unwrap();
        assert!(spool.keep_buffer(&mut m1, buf).is_none());
        spool.compressed(
            &Compressed {
                shard: 0,
                batch: 1,
                pack_id: "PACK-1",
                codec: Compression::Lz4,
                raw_len,
                body: &body,
            },
            &mut m1,
        );
        assert!(!m1.in_file(), "the file went back");
        // Batch 2: still filling, in the same file.
        let (_m2, _buf2) = fill(&spool, 2, &["three"]);
        // Batch 3: compressed and delivered: nothing to recover.
        let (mut m3, buf) = fill(&spool, 3, &["gone"]);
        let body = crate::wire::compress::compress(Compression::Lz4, &buf).unwrap();
        let raw_len = buf.len();
        assert!(spool.keep_buffer(&mut m3, buf).is_none());
        spool.compressed(
            &Compressed {
                shard: 0,
                batch: 3,
                pack_id: "PACK-3",
                codec: Compression::Lz4,
                raw_len,
                body: &body,
            },
            &mut m3,
        );
        spool.done(0, 3, &mut m3);
        // Dropped without closing: what a kill leaves.
    }
    let (spool, mut recovered, _) = open(&d, 64 << 20);
    for r in &mut recovered {
        r.decode(&spool.corrupt_entries);
    }
    type Batch = (String, Vec<Vec<u8>>, Option<String>, Vec<u8>);
    let got: Vec<Batch> = recovered
        .iter()
        .map(|r| {
            (
                r.dest.logstore.to_string(),
                r.records.iter().map(|x| x.to_vec()).collect(),
                r.pack_id.clone(),
                r.tags.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "own".into(),
                vec![framed("one"), framed("two")],
                Some("PACK-1".into()),
                b"tags".to_vec()
            ),
            ("own".into(), vec![framed("three")], None, b"tags".to_vec()),
        ]
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn with_interval_syncing_only_a_file_a_timed_sync_took_waits_for_its_body_to_be_synced() {
    let d = dir("commit");
    // An interval no test outlasts: the timed syncs are the test's own calls.
    let o = Spool::open(
        &d,
        64,
        1,
        64 << 20,
        64 << 20,
        SpoolSync::Interval(Duration::from_secs(3600)),
    )
    .unwrap();
    let spool = o.spool;
    spool.enable_batch_files(64 << 10, 100, &dest("own"), b"tags");
    let pool = spool.files.get().unwrap();
    let compress = |batch: u64, tick_between: bool| {
        let mut mark = SpoolMark::default();
        let mut buf = spool.take_batch_file(batch, &mut mark).unwrap();
        let from = buf.len();
        buf.extend_from_slice(b"\x0a\x03one");
        spool.index_record(&mut mark, &buf, from).unwrap();
        if tick_between {
            spool.sync_all();
        }
        let waits = spool.reuse_waits_for_commit(&mark);
        let body = crate::wire::compress::compress(Compression::Lz4, &buf).unwrap();
        let raw_len = buf.len();
        assert!(spool.keep_buffer(&mut mark, buf).is_none());
        spool.compressed(
            &Compressed {
                shard: 0,
                batch,
                pack_id: "P",
                codec: Compression::Lz4,
                raw_len,
                body: &body,
            },
            &mut mark,
        );
        assert!(!mark.in_file());
        waits
    };
    // No timed sync while it filled: the file is idle again as `compressed` returns.
    assert!(!compress(1, false));
    assert_eq!(pool.idle.lock().len(), 1);
    assert!(spool.committing.queue.lock().waiting.is_empty());
    // A timed sync took it: it goes back only after the commit on the sync thread.
    assert!(compress(2, true));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while pool.idle.lock().len() != 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the commit gives it back"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Other modes never wait.
    drop(spool);
    let _ = std::fs::remove_dir_all(&d);
    let d = dir("commit-none");
    let (spool, _, _) = open(&d, 64 << 20);
    spool.enable_batch_files(64 << 10, 100, &dest("own"), b"tags");
    let mut mark = SpoolMark::default();
    let _buf = spool.take_batch_file(1, &mut mark).unwrap();
    spool.sync_all();
    assert!(!spool.reuse_waits_for_commit(&mark));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sync_modes_parse() {
    assert_eq!(SpoolSync::parse("none"), Some(SpoolSync::None));
    assert_eq!(SpoolSync::parse("batch"), Some(SpoolSync::Batch));
    assert_eq!(
        SpoolSync::parse("interval:250"),
        Some(SpoolSync::Interval(Duration::from_millis(250)))
    );
    for bad in ["", "interval:", "interval:0", "interval:x", "always"] {
        assert_eq!(SpoolSync::parse(bad), None, "{bad}");
    }
}

#[test]
fn what_was_not_done_is_recovered_in_order_with_its_pack_id() {
    let d = dir("recover");
    {
        let (spool, recovered, _) = open(&d, 64 << 20);
        assert!(recovered.is_empty());
        let (mut a, mut b, mut c) = Default::default();
        for i in 0..100u32 {
            spool
                .record(
                    BatchPlace {
                        shard: 0,
                        batch: 1,
                        dest: &dest("aaa"),
                        tags: b"tags",
                    },
                    format!("a{i}").as_bytes(),
                    &mut a,
                )
                .unwrap();
            spool
                .record(
                    BatchPlace {
                        shard: 1,
                        batch: 2,
                        dest: &dest("bbb"),
                        tags: b"tags",
                    },
                    format!("b{i}").as_bytes(),
                    &mut b,
                )
                .unwrap();
        }
        spool
            .record(
                BatchPlace {
                    shard: 0,
                    batch: 3,
                    dest: &dest("ccc"),
                    tags: b"tags",
                },
                b"c0",
                &mut c,
            )
            .unwrap();
        spool.sealed(0, 1, "PACK-1", &mut a);
        spool.done(0, 3, &mut c);
        // Dropped without closing: what a kill leaves.
    }
    let (spool, recovered, old) = open(&d, 64 << 20);
    assert_eq!(spool.run(), 2);
    assert_eq!(spool.corrupt_entries.load(Ordering::Relaxed), 0);
    assert_eq!(recovered.len(), 2);
    let a = recovered
        .iter()
        .find(|r| &*r.dest.logstore == "aaa")
        .unwrap();
    assert_eq!(a.pack_id.as_deref(), Some("PACK-1"));
    assert_eq!(a.dest, dest("aaa"));
    assert_eq!(a.tags, b"tags");
    let expected: Vec<Vec<u8>> = (0..100).map(|i| format!("a{i}").into_bytes()).collect();
    let got: Vec<Vec<u8>> = a.records.iter().map(|r| r.to_vec()).collect();
    assert_eq!(got, expected);
    let b = recovered
        .iter()
        .find(|r| &*r.dest.logstore == "bbb")
        .unwrap();
    assert_eq!((b.records.len(), b.pack_id.as_deref()), (100, None));
    assert!(!old.old_files.is_empty());
    // What was recovered is let go first, as a replay does once it has spooled them anew:
    // Windows refuses to delete a file still mapped.
    drop(recovered);
    spool.remove_old(&old);
    drop(spool);
    let (_, again, _) = open(&d, 64 << 20);
    assert!(again.is_empty(), "removed files are not replayed twice");
    let _ = std::fs::remove_dir_all(&d);
}

/// Copies the spool directory `from` (its slot directories and their files) to `to`.
fn copy_spool(from: &Path, to: &Path) {
    for slot in std::fs::read_dir(from).unwrap() {
        let slot = slot.unwrap().path();
        let into = to.join(slot.file_name().unwrap());
        std::fs::create_dir_all(&into).unwrap();
        for file in std::fs::read_dir(&slot).unwrap() {
            let file = file.unwrap().path();
            std::fs::copy(&file, into.join(file.file_name().unwrap())).unwrap();
        }
    }
}

#[test]
fn old_files_deleted_in_part_never_bring_back_a_batch_that_was_done() {
    let d = dir("cut-delete");
    {
        let (spool, _, _) = open(&d, 64 << 20);
        let (mut done, mut open_batch, mut first) = Default::default();
        // Batch 1's records span several segments of shard 0, the first of which also
        // holds a record of batch 3, which is not done: those segments are not settled.
        // Batch 1's Done entry lands in the last one, after batch 2's records (not done).
        let record = vec![b'x'; 1000];
        spool
            .record(
                BatchPlace {
                    shard: 0,
                    batch: 3,
                    dest: &dest("aaa"),
                    tags: b"tags",
                },
                &record,
                &mut first,
            )
            .unwrap();
        for _ in 0..600 {
            spool
                .record(
                    BatchPlace {
                        shard: 0,
                        batch: 1,
                        dest: &dest("aaa"),
                        tags: b"tags",
                    },
                    &record,
                    &mut done,
                )
                .unwrap();
        }
        for _ in 0..100 {
            spool
                .record(
                    BatchPlace {
                        shard: 0,
                        batch: 2,
                        dest: &dest("aaa"),
                        tags: b"tags",
                    },
                    &record,
                    &mut open_batch,
                )
                .unwrap();
        }
        spool.done(0, 1, &mut done);
        assert!(done.segments.len() >= 3, "{:?}", done.segments);
    }
    let (spool, recovered, old) = open(&d, 64 << 20);
    assert_eq!(
        recovered.iter().map(|r| r.origin.1).collect::<Vec<_>>(),
        [2, 3]
    );
    drop((spool, recovered));
    // A replay's deletion of the old files cut by a kill after each file in turn: the next
    // producer finds batch 1 done (or gone) every time, never to be sent again.
    let slot_files: Vec<PathBuf> = old
        .old_files
        .iter()
        .filter(|f| f.exists())
        .cloned()
        .collect();
    drop(old);
    for cut in 0..=slot_files.len() {
        let copy = dir("cut-delete-copy");
        copy_spool(&d, &copy);
        for f in &slot_files[..cut] {
            let _ = std::fs::remove_file(slot(&copy).join(f.file_name().unwrap()));
        }
        let (_, again, _) = open(&copy, 64 << 20);
        let origins: Vec<u64> = again.iter().map(|r| r.origin.1).collect();
        assert!(
            !origins.contains(&1),
            "after deleting {cut} of {} old files, the done batch came back: {origins:?}",
            slot_files.len()
        );
        let _ = std::fs::remove_dir_all(&copy);
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn batches_the_replay_ledger_names_are_not_recovered_again() {
    let d = dir("ledger");
    {
        let (spool, _, _) = open(&d, 64 << 20);
        for batch in 1..=3u64 {
            let mut mark = SpoolMark::default();
            spool
                .record(
                    BatchPlace {
                        shard: 0,
                        batch,
                        dest: &dest("aaa"),
                        tags: b"tags",
                    },
                    b"r",
                    &mut mark,
                )
                .unwrap();
        }
        // Dropped without closing: what a kill leaves.
    }
    {
        // A replay spooled batch 2 anew, then was cut short; its last entry was torn.
        let (spool, recovered, mut left) = open(&d, 64 << 20);
        assert_eq!(recovered.len(), 3);
        let origin = recovered[1].origin;
        assert_eq!(origin, (1, 2));
        spool.note_replayed(&mut left, &[origin]).unwrap();
        // A run the ledger names later than any file's is never reused.
        spool.note_replayed(&mut left, &[(9, 1)]).unwrap();
    }
    let mut ledger = std::fs::OpenOptions::new()
        .append(true)
        .open(slot(&d).join(replay_ledger::SYNCED))
        .unwrap();
    std::io::Write::write_all(&mut ledger, &[1, 0, 0, 0, 0, 0, 0, 0, 3]).unwrap();
    drop(ledger);
    let (spool, recovered, old) = open(&d, 64 << 20);
    let origins: Vec<(u64, u64)> = recovered.iter().map(|r| r.origin).collect();
    assert_eq!(origins, [(1, 1), (1, 3)]);
    assert_eq!(spool.run(), 10);
    // The ledger goes with the old files, after them.
    assert_eq!(
        old.old_files[old.old_files.len() - 2..],
        replay_ledger::files(&slot(&d))
    );
    spool.remove_old(&old);
    assert!(!slot(&d).join(replay_ledger::SYNCED).exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_replay_cut_before_its_ledger_entry_sends_the_original_once_and_not_its_copy() {
    let d = dir("copies");
    {
        let (spool, _, _) = open(&d, 64 << 20);
        for batch in 1..=3u64 {
            let mut mark = SpoolMark::default();
            for r in [b"r1", b"r2"] {
                spool
                    .record(
                        BatchPlace {
                            shard: 0,
                            batch,
                            dest: &dest("aaa"),
                            tags: b"tags",
                        },
                        r,
                        &mut mark,
                    )
                    .unwrap();
            }
        }
        // Dropped without closing: what a kill leaves.
    }
    {
        // Run 2 replays: batch 1 copied and noted; batch 2 copied whole, the kill before
        // its ledger entry; batch 3 cut in the middle of its copy.
        let (spool, recovered, mut left) = open(&d, 64 << 20);
        assert_eq!(recovered.len(), 3);
        let copy = |r: &Recovered, batch: u64, records: usize| {
            let mut mark = SpoolMark::default();
            spool
                .open_copy(
                    BatchPlace {
                        shard: 0,
                        batch,
                        dest: &r.dest,
                        tags: &r.tags,
                    },
                    &r.copy_origin(),
                    &mut mark,
                )
                .unwrap();
            for record in &r.records[..records] {
                spool
                    .record(
                        BatchPlace {
                            shard: 0,
                            batch,
                            dest: &r.dest,
                            tags: &r.tags,
                        },
                        record,
                        &mut mark,
                    )
                    .unwrap();
            }
        };
        copy(&recovered[0], 11, 2);
        spool
            .note_replayed(&mut left, &[recovered[0].origin])
            .unwrap();
        copy(&recovered[1], 12, 2);
        copy(&recovered[2], 13, 1);
    }
    let (_spool, recovered, _) = open(&d, 64 << 20);
    let got: Vec<((u64, u64), Option<u64>, usize)> = recovered
        .iter()
        .map(|r| {
            (
                r.origin,
                r.copy_of.as_ref().map(|o| o.batch),
                r.records.len(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [((1, 2), None, 2), ((1, 3), None, 2), ((2, 11), Some(1), 2)],
        "each batch once: the originals not yet named, and the copy of the one named"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Marks free (as settling does before reuse) every segment `run` wrote in `d`'s slot.
fn settle_segments_of(d: &Path, run: u64) {
    for entry in std::fs::read_dir(slot(d)).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "spl") {
            continue;
        }
        let mut bytes = std::fs::read(&path).unwrap();
        if bytes.len() >= 16 && u64::from_le_bytes(bytes[8..16].try_into().unwrap()) == run {
            bytes[..8].copy_from_slice(FREE_MAGIC);
            std::fs::write(&path, &bytes).unwrap();
        }
    }
}

#[test]
fn a_copy_superseded_by_a_later_replays_copy_is_never_sent() {
    let copy = |spool: &Spool, r: &Recovered, batch: u64| {
        let mut mark = SpoolMark::default();
        spool
            .open_copy(
                BatchPlace {
                    shard: 0,
                    batch,
                    dest: &r.dest,
                    tags: &r.tags,
                },
                &r.copy_origin(),
                &mut mark,
            )
            .unwrap();
        for record in &r.records {
            spool
                .record(
                    BatchPlace {
                        shard: 0,
                        batch,
                        dest: &r.dest,
                        tags: &r.tags,
                    },
                    record,
                    &mut mark,
                )
                .unwrap();
        }
        mark
    };
    // Whether the later copy's segment is still there when the next producer opens, or
    // was settled and reused (the copy then leaves no trace at all).
    for reused in [false, true] {
        let d = dir("superseded");
        {
            let (spool, _, _) = open(&d, 64 << 20);
            let mut mark = SpoolMark::default();
            for r in [b"r1", b"r2"] {
                spool
                    .record(
                        BatchPlace {
                            shard: 0,
                            batch: 1,
                            dest: &dest("aaa"),
                            tags: b"tags",
                        },
                        r,
                        &mut mark,
                    )
                    .unwrap();
            }
        }
        {
            // Run 2 copies batch 1 whole; the kill comes before its ledger entry.
            let (spool, recovered, _) = open(&d, 64 << 20);
            assert_eq!(recovered.len(), 1);
            copy(&spool, &recovered[0], 11);
        }
        {
            // Run 3 drops that copy (the original is still there), copies the original
            // again, notes it in the ledger and delivers the new copy; the kill comes
            // before the old files are deleted.
            let (spool, recovered, mut left) = open(&d, 64 << 20);
            let origins: Vec<(u64, u64)> = recovered.iter().map(|r| r.origin).collect();
            assert_eq!(origins, [(1, 1)], "the original, not run 2's copy");
            let mut mark = copy(&spool, &recovered[0], 21);
            spool
                .note_replayed(&mut left, &[recovered[0].origin])
                .unwrap();
            spool.done(0, 21, &mut mark);
        }
        if reused {
            settle_segments_of(&d, 3);
        }
        // Run 4: the original is named by the ledger and its latest copy was delivered;
        // run 2's copy, superseded, is not sent either, even with no trace of run 3's.
        let (_spool, recovered, _) = open(&d, 64 << 20);
        let origins: Vec<(u64, u64)> = recovered.iter().map(|r| r.origin).collect();
        assert_eq!(
            origins,
            [],
            "nothing left to send (run 3's segments reused: {reused})"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[test]
fn an_open_entry_keeps_a_copys_origin_and_reads_without_one() {
    let origin = CopyOrigin {
        dir: "slot-3".into(),
        run: 7,
        batch: u64::MAX,
    };
    let with = encode_open(&dest("aaa"), b"tags", Some(&origin));
    assert_eq!(
        decode_open(&with),
        Some((dest("aaa"), b"tags".to_vec(), Some(origin)))
    );
    let without = encode_open(&dest("aaa"), b"tags", None);
    assert_eq!(
        decode_open(&without),
        Some((dest("aaa"), b"tags".to_vec(), None))
    );
    // Cut inside the origin: not an open entry to trust.
    assert_eq!(decode_open(&with[..with.len() - 1]), None);
}

#[test]
fn a_torn_or_flipped_entry_is_skipped_counted_and_the_rest_recovered() {
    let d = dir("torn");
    {
        let (spool, _, _) = open(&d, 64 << 20);
        let mut m = SpoolMark::default();
        for i in 0..10u32 {
            spool
                .record(
                    BatchPlace {
                        shard: 0,
                        batch: 7,
                        dest: &dest("aaa"),
                        tags: b"tags",
                    },
                    format!("record-{i}").as_bytes(),
                    &mut m,
                )
                .unwrap();
        }
    }
    let seg = std::fs::read_dir(slot(&d))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.extension().is_some_and(|x| x == "spl")
                && std::fs::read(p).unwrap().starts_with(SEGMENT_MAGIC)
        })
        .unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let at = bytes.windows(8).position(|w| w == b"record-4").unwrap();
    bytes[at + 3] ^= 0x20; // a flipped bit in the fifth record
    let last = bytes.windows(8).position(|w| w == b"record-9").unwrap();
    bytes[last - ENTRY_HEADER..last + 8].fill(0); // the last one cut by the kill
    std::fs::write(&seg, &bytes).unwrap();
    let (spool, recovered, _) = open(&d, 64 << 20);
    assert_eq!(spool.corrupt_entries.load(Ordering::Relaxed), 1);
    let got: Vec<String> = recovered[0]
        .records
        .iter()
        .map(|r| String::from_utf8(r.to_vec()).unwrap())
        .collect();
    let want: Vec<String> = [0, 1, 2, 3, 5, 6, 7, 8]
        .iter()
        .map(|i| format!("record-{i}"))
        .collect();
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn producers_share_a_directory_in_slots_and_recover_every_unheld_one() {
    let d = dir("slots");
    let write = |spool: &Spool, logstore: &str| {
        let mut mark = SpoolMark::default();
        spool
            .record(
                BatchPlace {
                    shard: 0,
                    batch: 1,
                    dest: &dest(logstore),
                    tags: b"tags",
                },
                b"r",
                &mut mark,
            )
            .unwrap();
    };
    let (a, _, _) = open(&d, 1 << 20);
    let b = Spool::open(&d, 64, 2, 1 << 20, 64 << 20, SpoolSync::None)
        .unwrap()
        .spool;
    assert_eq!((a.dir.clone(), b.dir.clone()), (slot(&d), d.join("slot-1")));
    write(&a, "aaa");
    write(&b, "bbb");
    // With one slot allowed, a third producer is refused, naming the directory and a holder.
    match Spool::open(&d, 1, 2, 1 << 20, 64 << 20, SpoolSync::None) {
        Err(SpoolError::Locked { dir, slots, pid }) => {
            assert_eq!((dir, slots), (d.clone(), 1));
            assert_eq!(pid, std::process::id().to_string());
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a producer took a held slot"),
    }
    // Both die (dropped without closing: what a kill leaves). The next producer takes
    // slot 0 as its own and slot 1 as an orphan, and recovers both.
    drop((a, b));
    let mut o = Spool::open(&d, 64, 2, 1 << 20, 64 << 20, SpoolSync::None).unwrap();
    let found: Vec<(PathBuf, Vec<String>)> = o
        .leftovers
        .iter()
        .map(|l| {
            let stores = l.recovered.iter().map(|r| r.dest.logstore.to_string());
            (l.dir.clone(), stores.collect())
        })
        .collect();
    assert_eq!(
        found,
        [
            (slot(&d), vec!["aaa".to_owned()]),
            (d.join("slot-1"), vec!["bbb".to_owned()])
        ]
    );
    // The orphan stays held until its files are gone and it is let go.
    let busy = Spool::open(&d, 64, 2, 1 << 20, 64 << 20, SpoolSync::None).unwrap();
    assert_eq!(busy.spool.dir, d.join("slot-2"));
    assert!(busy.leftovers.iter().all(|l| l.recovered.is_empty()));
    drop(busy);
    let orphan = o.leftovers.pop().unwrap();
    o.spool.remove_old(&orphan);
    drop(orphan);
    let next = Spool::open(&d, 64, 2, 1 << 20, 64 << 20, SpoolSync::None).unwrap();
    assert_eq!(next.spool.dir, d.join("slot-1"));
    assert!(next.is_empty(), "the orphan was sent once");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_full_spool_refuses_until_done_batches_free_their_segments() {
    let d = dir("full");
    let spool = Spool::open(&d, 64, 1, 512 << 10, 64 << 20, SpoolSync::Batch)
        .unwrap()
        .spool;
    let record = vec![b'x'; 1000];
    let mut marks = Vec::new();
    let mut batch = 0u64;
    while !spool.over_limit() {
        let mut m = SpoolMark::default();
        for _ in 0..10 {
            spool
                .record(
                    BatchPlace {
                        shard: 0,
                        batch,
                        dest: &dest("aaa"),
                        tags: b"tags",
                    },
                    &record,
                    &mut m,
                )
                .unwrap();
        }
        spool.sealed(0, batch, "P", &mut m);
        spool.sync_batch(&m);
        marks.push((batch, m));
        batch += 1;
        assert!(batch < 1000, "never full");
    }
    assert!(spool.used_bytes() <= 512 << 10);
    assert!(!spool.wait_room(Duration::from_millis(20)));
    for (id, m) in &mut marks {
        spool.done(0, *id, m);
    }
    assert!(spool.wait_room(Duration::from_millis(20)));
    // Only the current segment and those kept for reuse are left on disk; after close, none.
    let files = || {
        std::fs::read_dir(slot(&d))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "spl")
            })
            .count()
    };
    let spares = files() - 1;
    let keeps = spool.keeps(&spool.state.lock());
    assert!((1..=keeps).contains(&spares), "{spares} of {keeps}");
    spool.close(true);
    assert_eq!(files(), 0);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_reused_segment_never_brings_back_what_it_held_before() {
    let d = dir("reuse");
    {
        let (spool, _, _) = open(&d, 1 << 20);
        let big = vec![b'o'; 2000];
        // Many settled batches, so segments fill, settle, and are reused.
        for batch in 0..400u64 {
            let mut m = SpoolMark::default();
            spool
                .record(
                    BatchPlace {
                        shard: 0,
                        batch,
                        dest: &dest("old"),
                        tags: b"t",
                    },
                    &big,
                    &mut m,
                )
                .unwrap();
            spool.sealed(0, batch, "OLD", &mut m);
            spool.done(0, batch, &mut m);
        }
        let mut m = SpoolMark::default();
        spool
            .record(
                BatchPlace {
                    shard: 0,
                    batch: 9999,
                    dest: &dest("new"),
                    tags: b"t",
                },
                b"fresh",
                &mut m,
            )
            .unwrap();
        // Killed here.
    }
    let (spool, recovered, _) = open(&d, 1 << 20);
    assert_eq!(spool.corrupt_entries.load(Ordering::Relaxed), 0);
    assert_eq!(recovered.len(), 1);
    assert_eq!(&*recovered[0].dest.logstore, "new");
    assert_eq!(&*recovered[0].records[0], b"fresh");
    let _ = std::fs::remove_dir_all(&d);
}

/// The files under `d` this process holds open or mapped (read from /proc; elsewhere none
/// are listed: the test then sees what is held when it cannot delete it).
fn held_under(d: &Path) -> Vec<PathBuf> {
    if !cfg!(target_os = "linux") {
        return Vec::new();
    }
    let d = d.canonicalize().unwrap();
    let mut held: Vec<PathBuf> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .chain(
            std::fs::read_to_string("/proc/self/maps")
                .unwrap()
                .lines()
                .filter_map(|l| l.find('/').map(|at| PathBuf::from(&l[at..]))),
        )
        .filter(|p| p.starts_with(&d))
        .collect();
    held.sort();
    held.dedup();
    held
}

#[test]
fn a_close_with_batches_in_flight_leaves_their_files_unheld_and_writes_nothing_after() {
    let d = dir("unclean");
    let framed = |text: &str| [&[0x0a, text.len() as u8][..], text.as_bytes()].concat();
    let segments = || -> Vec<PathBuf> {
        std::fs::read_dir(slot(&d))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "spl"))
            .collect()
    };
    let linux = cfg!(target_os = "linux");
    {
        let (spool, _, _) = open(&d, 64 << 20);
        spool.enable_batch_files(64 << 10, 100, &dest("own"), b"tags");
        // Batch 1 in shard 0's segment, batch 2 in a batch file: both in flight.
        let mut in_segment = SpoolMark::default();
        let place = BatchPlace {
            shard: 0,
            batch: 1,
            dest: &dest("other"),
            tags: b"t",
        };
        spool
            .record(place, &framed("segment"), &mut in_segment)
            .unwrap();
        spool.sealed(0, 1, "P1", &mut in_segment);
        let mut in_file = SpoolMark::default();
        let mut buf = spool.take_batch_file(2, &mut in_file).unwrap();
        buf.extend_from_slice(&framed("file"));
        spool.index_record(&mut in_file, &buf, 0).unwrap();
        let file = in_file.file.as_ref().unwrap().path.clone();
        let lock = slot(&d).join("lock").canonicalize().unwrap();
        spool.close(false);
        let left = segments();
        assert!(!left.is_empty(), "batch 1's segment stays");
        // Held now: the slot's lock (not every batch settled) and the file of the batch still
        // in flight (its batch holds it); no segment.
        if linux {
            assert_eq!(
                held_under(&d),
                vec![file.canonicalize().unwrap(), lock.clone()]
            );
        }
        // Batch 1 delivered after the close: no entry, no new segment.
        spool.done(0, 1, &mut in_segment);
        assert_eq!(segments(), left);
        // Batch 2 delivered too: its file goes.
        drop(buf);
        spool.done(0, 2, &mut in_file);
        assert!(!file.exists());
        if linux {
            assert_eq!(held_under(&d), vec![lock]);
        }
        // Every segment can be deleted with the spool still alive (Windows refuses to delete
        // a file that is open or mapped): each is moved aside by a copy and a removal.
        for segment in &left {
            let aside = segment.with_extension("aside");
            std::fs::copy(segment, &aside).unwrap();
            std::fs::remove_file(segment).unwrap();
            std::fs::rename(&aside, segment).unwrap();
        }
    }
    // Batch 1 has no `Done`: the next producer sends it again (at least once); batch 2 is
    // gone with its file.
    let (_spool, recovered, _) = open(&d, 64 << 20);
    assert_eq!(recovered.len(), 1);
    assert_eq!(&*recovered[0].dest.logstore, "other");
    let _ = std::fs::remove_dir_all(&d);
}
