//! The spool against a model: random sequences of records (into segments, on two shards),
//! seals and settles, then a kill (the spool dropped unclosed), sometimes a torn write (a
//! segment cut short or a byte of it changed), then recovery. What the model says is still
//! owed comes back exactly once, in order, with its pack id when it was sealed. A cut loses
//! what followed it in its file (a power loss without syncing may cut any file, not only the
//! newest); a changed byte loses the entry it is in (the scan goes on past it); either may
//! bring a settled batch back (at least once); nothing else changes, nothing comes back twice
//! or out of order. And recovery of files of random bytes never panics.
//!
//! Across producers: a chain of producers on one directory, each killed at a random point of
//! its life — while it copies the batches the last one left (mid-copy, before the ledger names
//! the original, before the copy is delivered), while it deletes the old files, or while it
//! writes and settles batches of its own (so settled segments are reused). At every open, each
//! batch still owed comes back exactly once, whole, with its pack id, and nothing settled does.

use std::collections::BTreeMap;

use proptest::prelude::*;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::format::*;
use super::recovery::*;
use super::store::*;
use crate::producer::config::SpoolSync;
use crate::producer::routing::Destination;

/// What happens to the open batch of one of eight destinations ("slots", on shard `slot % 2`);
/// a slot whose batch was sealed opens a new one (with the next batch number, as a producer
/// numbers its batches) at its next record.
#[derive(Clone, Debug)]
enum Op {
    /// A record of `len` bytes into the slot's batch.
    Record { slot: u64, len: usize },
    /// Seals the slot's batch (if it has records).
    Seal { slot: u64 },
    /// Settles the slot's oldest sealed batch not yet settled.
    Done { slot: u64 },
}

#[derive(Clone, Debug)]
enum Tear {
    None,
    /// A segment cut at this fraction of its length.
    Cut {
        file: usize,
        at: f64,
    },
    /// A byte of a segment changed at this fraction of its length.
    Flip {
        file: usize,
        at: f64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..8, 1usize..400).prop_map(|(slot, len)| Op::Record { slot, len }),
        // Large ones, so segments fill and roll over to new ones.
        1 => (0u64..8, 8_000usize..40_000).prop_map(|(slot, len)| Op::Record { slot, len }),
        2 => (0u64..8).prop_map(|slot| Op::Seal { slot }),
        2 => (0u64..8).prop_map(|slot| Op::Done { slot }),
    ]
}

fn tear() -> impl Strategy<Value = Tear> {
    prop_oneof![
        2 => Just(Tear::None),
        1 => (0usize..4, 0.0f64..1.0).prop_map(|(file, at)| Tear::Cut { file, at }),
        1 => (0usize..4, 0.0f64..1.0).prop_map(|(file, at)| Tear::Flip { file, at }),
    ]
}

#[derive(Default, Debug)]
struct Batch {
    slot: u64,
    records: Vec<Vec<u8>>,
    pack_id: Option<String>,
    done: bool,
    mark: SpoolMark,
}

fn dest(slot: u64) -> Destination {
    Destination {
        project: "proj".into(),
        logstore: format!("logs-{slot}").into(),
        topic: "t".into(),
        source: "10.0.0.1".into(),
        hash_key: None,
    }
}

/// A record's bytes: its batch, its index and a filler, so any mix-up shows.
fn record_bytes(batch: u64, index: usize, len: usize) -> Vec<u8> {
    let mut bytes = format!("{batch}:{index}:").into_bytes();
    bytes.resize(len.max(bytes.len()), b'a' + (index % 26) as u8);
    bytes
}

fn temp_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "loghose-spool-model-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn open_slot(d: &Path) -> (Arc<Spool>, Vec<Recovered>) {
    let mut opened = Spool::open(d, 64, 2, 64 << 20, 64 << 20, SpoolSync::None).unwrap();
    let recovered = opened
        .leftovers
        .iter_mut()
        .flat_map(|l| std::mem::take(&mut l.recovered))
        .collect();
    (opened.spool, recovered)
}

fn segments(d: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(d.join("slot-0"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "spl"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn run(ops: &[Op], tear: &Tear) -> Result<(), TestCaseError> {
    let d = temp_dir();
    // Every batch by number, and each slot's open one.
    let mut model: BTreeMap<u64, Batch> = BTreeMap::new();
    let mut open: BTreeMap<u64, u64> = BTreeMap::new();
    let mut next_batch = 1u64;
    {
        let (spool, recovered) = open_slot(&d);
        prop_assert!(recovered.is_empty());
        for op in ops {
            match *op {
                Op::Record { slot, len } => {
                    let batch = *open.entry(slot).or_insert_with(|| {
                        next_batch += 1;
                        next_batch - 1
                    });
                    let b = model.entry(batch).or_insert_with(|| Batch {
                        slot,
                        ..Batch::default()
                    });
                    let bytes = record_bytes(batch, b.records.len(), len);
                    spool
                        .record(
                            BatchPlace {
                                shard: (slot % 2) as usize,
                                batch,
                                dest: &dest(slot),
                                tags: b"tags",
                            },
                            &bytes,
                            &mut b.mark,
                        )
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    b.records.push(bytes);
                }
                Op::Seal { slot } => {
                    if let Some(batch) = open.remove(&slot) {
                        let b = model.get_mut(&batch).expect("an open batch");
                        let pack = format!("PACK-{batch}");
                        spool.sealed((slot % 2) as usize, batch, &pack, &mut b.mark);
                        b.pack_id = Some(pack);
                    }
                }
                Op::Done { slot } => {
                    let oldest = model
                        .iter_mut()
                        .find(|(_, b)| b.slot == slot && b.pack_id.is_some() && !b.done);
                    if let Some((&batch, b)) = oldest {
                        spool.done((slot % 2) as usize, batch, &mut b.mark);
                        b.done = true;
                    }
                }
            }
        }
        // Dropped without closing: what a kill leaves. Its preparer thread is waited for,
        // as a killed process's would be gone, before the test tears a file it may be filling.
        let preparer = spool.preparer.lock().take();
        drop(spool);
        if let Some(thread) = preparer {
            let _ = thread.join();
        }
    }
    let files = segments(&d);
    let torn = match *tear {
        Tear::None => false,
        Tear::Cut { file, at } if !files.is_empty() => {
            let path = &files[file % files.len()];
            let len = std::fs::metadata(path).unwrap().len();
            let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            f.set_len((len as f64 * at) as u64).unwrap();
            true
        }
        Tear::Flip { file, at } if !files.is_empty() => {
            let path = &files[file % files.len()];
            let mut bytes = std::fs::read(path).unwrap();
            if !bytes.is_empty() {
                let i = ((bytes.len() as f64 * at) as usize).min(bytes.len() - 1);
                bytes[i] ^= 0x5a;
                std::fs::write(path, &bytes).unwrap();
            }
            true
        }
        _ => false,
    };
    let (spool, mut recovered) = open_slot(&d);
    let mut seen = std::collections::HashSet::new();
    let mut last_per_shard: BTreeMap<usize, u64> = BTreeMap::new();
    for r in &mut recovered {
        r.decode(&spool.corrupt_entries);
        let batch = r.origin.1;
        prop_assert!(seen.insert(batch), "batch {batch} recovered twice");
        let Some(b) = model.get(&batch) else {
            return Err(TestCaseError::fail(format!(
                "batch {batch} was never written"
            )));
        };
        let got: Vec<Vec<u8>> = r.records.iter().map(|x| x.to_vec()).collect();
        prop_assert_eq!(&*r.dest.logstore, &*dest(b.slot).logstore);
        // A tear costs what it hit: a changed byte the entry it is in (the scan goes on past
        // it), a cut the rest of its file. A batch that went on in a later segment still gets
        // its later records: what was written, in order, less what was hit.
        let mut written = b.records.iter();
        prop_assert!(
            got.iter().all(|g| written.any(|w| w == g)),
            "batch {}: recovered records are not what was written, in order",
            batch
        );
        // In the order they were opened (batch numbers grow as batches open), per shard too.
        let shard = (b.slot % 2) as usize;
        if let Some(previous) = last_per_shard.insert(shard, batch) {
            prop_assert!(
                previous < batch,
                "shard {shard}: batch {batch} out of order"
            );
        }
        if !torn {
            prop_assert!(!b.done, "batch {batch} was settled, yet recovered");
            prop_assert_eq!(got.len(), b.records.len(), "batch {} lost records", batch);
            prop_assert_eq!(&r.pack_id, &b.pack_id);
        }
    }
    if !torn {
        for (batch, b) in &model {
            if !b.done && !b.records.is_empty() {
                prop_assert!(
                    seen.contains(batch),
                    "batch {batch} was owed and not recovered"
                );
            }
        }
    }
    drop(spool);
    let _ = std::fs::remove_dir_all(&d);
    Ok(())
}

/// Where a producer of the chain is killed.
#[derive(Clone, Copy, Debug)]
enum Kill {
    /// In the middle of copying the last batch it replays.
    MidCopy,
    /// Once that copy is whole, before the ledger names its original.
    BeforeLedger,
    /// Once the ledger names it, before the copy is delivered.
    BeforeDone,
    /// While it deletes the old files, after this fraction of them.
    Deleting(f64),
    /// At the end (its replay complete and the old files gone).
    AtTheEnd,
}

/// What one producer of the chain does between its open and its kill.
#[derive(Clone, Debug)]
struct Life {
    /// The fraction of the recovered batches it replays before the kill cuts the replay
    /// (all of them for the kills after the replay).
    replays: f64,
    /// Whether each replayed copy is delivered (settled), in turn.
    delivered: Vec<bool>,
    /// Its own batches, after its replay and before it deletes the old files: records, their
    /// length, settled or not.
    own: Vec<(usize, usize, bool)>,
    kill: Kill,
}

fn life() -> impl Strategy<Value = Life> {
    let kill = prop_oneof![
        1 => Just(Kill::MidCopy),
        1 => Just(Kill::BeforeLedger),
        1 => Just(Kill::BeforeDone),
        1 => (0.0f64..1.0).prop_map(Kill::Deleting),
        2 => Just(Kill::AtTheEnd),
    ];
    (
        0.0f64..=1.0,
        proptest::collection::vec(any::<bool>(), 0..16),
        proptest::collection::vec((1usize..20, 100usize..6_000, any::<bool>()), 0..12),
        kill,
    )
        .prop_map(|(replays, delivered, own, kill)| Life {
            replays,
            delivered,
            own,
            kill,
        })
}

/// The logical batch a record belongs to (a copy's records are the original's bytes).
fn logical(record: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(&record[..record.len().min(24)]).into_owned();
    text.split(':')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

fn chain(lives: &[Life]) -> Result<(), TestCaseError> {
    let d = temp_dir();
    // The batches still owed, by logical number: their records.
    let mut owed: BTreeMap<u64, Vec<Vec<u8>>> = BTreeMap::new();
    let mut next_logical = 1u64;
    for (generation, life) in lives
        .iter()
        .chain(std::iter::once(&Life {
            replays: 0.0,
            delivered: Vec::new(),
            own: Vec::new(),
            kill: Kill::AtTheEnd,
        }))
        .enumerate()
    {
        let last = generation == lives.len();
        // Segments of 64 KiB, so a producer's own batches fill and settle some.
        let mut opened = Spool::open(&d, 64, 2, 512 << 10, 64 << 20, SpoolSync::None)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let spool = opened.spool.clone();
        let mut leftover = opened.leftovers.remove(0);
        let mut recovered = std::mem::take(&mut leftover.recovered);
        // What came back is what is owed: each once, whole, with its pack id.
        let mut back = std::collections::HashSet::new();
        for r in &mut recovered {
            r.decode(&spool.corrupt_entries);
            let got: Vec<Vec<u8>> = r.records.iter().map(|x| x.to_vec()).collect();
            let id = got.first().map_or(u64::MAX, |x| logical(x));
            prop_assert!(
                back.insert(id),
                "generation {generation}: batch {id} came back twice"
            );
            let Some(want) = owed.get(&id) else {
                return Err(TestCaseError::fail(format!(
                    "generation {generation}: batch {id} came back, yet it was settled (or never written)"
                )));
            };
            prop_assert_eq!(
                &got,
                want,
                "generation {}: batch {} not whole",
                generation,
                id
            );
            prop_assert_eq!(r.pack_id.clone(), Some(format!("PACK-{id}")));
        }
        for id in owed.keys() {
            prop_assert!(
                back.contains(id),
                "generation {generation}: batch {id} owed, not back"
            );
        }
        if last {
            break;
        }
        // The replay, as the producer does it: copy, seal, ledger, send (settled or not).
        let cut = match life.kill {
            Kill::MidCopy | Kill::BeforeLedger | Kill::BeforeDone if !recovered.is_empty() => {
                Some(((recovered.len() as f64 * life.replays) as usize).min(recovered.len() - 1))
            }
            _ => None,
        };
        let mut marks = Vec::new();
        let mut killed = false;
        for (i, r) in recovered.iter().enumerate() {
            let batch = 1000 + i as u64;
            let shard = (batch % 2) as usize;
            let id = logical(&r.records[0]);
            let mut mark = SpoolMark::default();
            spool
                .open_copy(
                    BatchPlace {
                        shard,
                        batch,
                        dest: &r.dest,
                        tags: &r.tags,
                    },
                    &r.copy_origin(),
                    &mut mark,
                )
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let whole = r.records.len();
            let copied = if cut == Some(i) && matches!(life.kill, Kill::MidCopy) {
                whole / 2
            } else {
                whole
            };
            for record in &r.records[..copied] {
                spool
                    .record(
                        BatchPlace {
                            shard,
                            batch,
                            dest: &r.dest,
                            tags: &r.tags,
                        },
                        record,
                        &mut mark,
                    )
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            if cut == Some(i) && !matches!(life.kill, Kill::BeforeDone) {
                killed = true;
                break;
            }
            let pack = r.pack_id.clone().unwrap_or_default();
            spool.sealed(shard, batch, &pack, &mut mark);
            spool
                .note_replayed(&mut leftover, &[r.origin])
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            if cut == Some(i) {
                killed = true;
                break;
            }
            if life.delivered.get(i).copied().unwrap_or(true) {
                spool.done(shard, batch, &mut mark);
                owed.remove(&id);
            } else {
                // In flight at the kill: still owed, now from the copy.
                marks.push(mark);
            }
        }
        if !killed {
            for (n, &(records, len, settled)) in life.own.iter().enumerate() {
                let batch = 2000 + n as u64;
                let shard = (batch % 2) as usize;
                let id = next_logical;
                next_logical += 1;
                let mut mark = SpoolMark::default();
                let mut written = Vec::new();
                for index in 0..records {
                    let bytes = record_bytes(id, index, len);
                    spool
                        .record(
                            BatchPlace {
                                shard,
                                batch,
                                dest: &dest(id % 8),
                                tags: b"tags",
                            },
                            &bytes,
                            &mut mark,
                        )
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    written.push(bytes);
                }
                spool.sealed(shard, batch, &format!("PACK-{id}"), &mut mark);
                if settled {
                    spool.done(shard, batch, &mut mark);
                } else {
                    owed.insert(id, written);
                    marks.push(mark);
                }
            }
        }
        if !killed {
            match life.kill {
                Kill::Deleting(fraction) => {
                    let files = &leftover.old_files;
                    for f in &files[..(files.len() as f64 * fraction) as usize] {
                        let _ = std::fs::remove_file(f);
                    }
                }
                _ => spool.remove_old(&leftover),
            }
        }
        // The kill: nothing closed, the preparer gone as with the process.
        let preparer = spool.preparer.lock().take();
        drop(opened);
        drop(leftover);
        drop(spool);
        if let Some(thread) = preparer {
            let _ = thread.join();
        }
    }
    let _ = std::fs::remove_dir_all(&d);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn recovery_returns_what_was_owed_exactly_once_in_order(
        ops in proptest::collection::vec(op(), 1..120),
        tear in tear(),
    ) {
        run(&ops, &tear)?;
    }

    #[test]
    fn a_chain_of_killed_producers_sends_each_batch_owed_once(
        lives in proptest::collection::vec(life(), 1..8),
    ) {
        chain(&lives)?;
    }

    #[test]
    fn recovery_of_random_bytes_never_panics(
        files in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..4096), 1..4),
        header in any::<bool>(),
    ) {
        let d = temp_dir();
        let slot = d.join("slot-0");
        std::fs::create_dir_all(&slot).unwrap();
        for (i, mut bytes) in files.into_iter().enumerate() {
            if header && bytes.len() >= 8 {
                // A valid magic, so the scan goes past the first check.
                bytes[..8].copy_from_slice(SEGMENT_MAGIC);
            }
            std::fs::write(slot.join(format!("seg-{i}.spl")), &bytes).unwrap();
            std::fs::write(slot.join(format!("bat-{i}.spb")), &bytes).unwrap();
        }
        let (spool, mut recovered) = open_slot(&d);
        for r in &mut recovered {
            r.decode(&spool.corrupt_entries);
        }
        drop(spool);
        let _ = std::fs::remove_dir_all(&d);
    }
}
