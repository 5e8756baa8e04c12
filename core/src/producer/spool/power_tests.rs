//! The spool against power cuts, on the model file system (`model_disk`): random sequences of
//! records on eight destinations (two shards; the first is the default destination, whose
//! batches go in batch files), batches sent, settled, syncs that fail; then a cut at a random
//! instant that keeps a random subset of the pages not synced, and a recovery from what the
//! cut left. Two ways of syncing:
//! - `batch`: a batch is sealed and synced as delivery does before its first attempt, and
//!   written again on a fresh segment when that sync fails;
//! - `interval`: a batch is sealed and compressed as delivery does (a batch file's body goes
//!   to a segment, the file back or to the sync thread's commit), the test's ticks are the
//!   timed syncs and its commits the sync thread's group commits (the thread leaves them to
//!   the test, so every order of the two is explored, not the one its timing gives).
//!
//! In both, the preparer thread's sync of the directory comes at any instant too.
//!
//! What must hold: every batch synced before its send and not settled comes back exactly
//! once, whole, in order, with its pack id; what a timed sync took comes back, in order; a
//! batch the spool counted as not durable may be lost (it was said); a settled batch comes
//! back only if no sync succeeded after it was settled (the duplicate bound); nothing comes
//! back twice or that was never written; the recovering producer's run is later than every
//! run named in the directory, so its files never collide with what is there.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;

use super::format::Compressed;
use super::model_disk::ModelDisk;
use super::recovery::run_in_name;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::disk;
use super::recovery::*;
use super::store::*;
use crate::producer::buffer::BatchBuf;
use crate::producer::config::SpoolSync;
use crate::producer::routing::Destination;
use crate::wire::compress::Compression;

/// The shape of the batch files: records and bytes of a batch at most.
const FILE_RECORDS: usize = 64;
const FILE_BYTES: usize = 16 << 10;

#[derive(Clone, Debug)]
enum Op {
    /// A record of `len` bytes into the slot's open batch (a new batch if it has none).
    Record { slot: u64, len: usize },
    /// The slot's open batch sealed and made durable before it is sent.
    Send { slot: u64 },
    /// The slot's oldest sent batch settled (delivered).
    Done { slot: u64 },
    /// The next `n` syncs fail.
    Fail { n: usize },
    /// The timer's sync (`interval`): every file.
    Tick,
    /// The sync thread's group commit (`interval`): the bodies of the compressed batches
    /// whose files a timed sync took are synced, and the files given back.
    Commit,
    /// The preparer thread's sync of the directory's entries (it runs at any instant).
    DirSync,
}

fn op(interval: bool) -> impl Strategy<Value = Op> {
    let ticks = if interval { 2 } else { 0 };
    prop_oneof![
        ticks => Just(Op::Tick),
        ticks => Just(Op::Commit),
        1 => Just(Op::DirSync),
        8 => (0u64..8, 1usize..300).prop_map(|(slot, len)| Op::Record { slot, len }),
        // The default destination (batch files) more often than the others.
        4 => (1usize..300).prop_map(|len| Op::Record { slot: 0, len }),
        1 => (0u64..8, 8_000usize..40_000).prop_map(|(slot, len)| Op::Record { slot, len }),
        3 => (0u64..8).prop_map(|slot| Op::Send { slot }),
        3 => (0u64..8).prop_map(|slot| Op::Done { slot }),
        1 => (1usize..4).prop_map(|n| Op::Fail { n }),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Records written, not sealed: owed to nobody after a cut.
    Open,
    /// Synced before its send: owed after any cut.
    Durable,
    /// Sealed and compressed (`interval`): owed what a timed sync took.
    Sent,
    /// Its copies failed their syncs: counted as not durable.
    NotDurable,
    /// Settled; `marks_synced` once a later sync succeeded with no failure.
    Done { marks_synced: bool },
    /// Settled, and a sync failed before its mark was synced (the mark may be in the file
    /// that failed, which is never synced again): it may come back (a duplicate, not a loss).
    DoneMarkFailed,
}

struct Batch {
    slot: u64,
    /// Its buffer, when it is written in a batch file (slot 0, the default destination).
    buf: Option<BatchBuf>,
    records: Vec<Vec<u8>>,
    /// Its first records a timed sync made durable (`interval`): owed after any cut.
    durable: usize,
    pack_id: Option<String>,
    fate: Fate,
    mark: SpoolMark,
}

/// A record as a batch holds it: field 1 of a log group (so a body decodes back into it).
fn encoded(batch: u64, index: usize, len: usize) -> Vec<u8> {
    let mut payload = format!("{batch}:{index}:").into_bytes();
    payload.resize(len.max(payload.len()), b'a' + (index % 26) as u8);
    let mut out = vec![0x0a];
    let mut n = payload.len();
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out.extend_from_slice(&payload);
    out
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

fn temp_dir(what: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "loghose-power-{what}-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ))
}

fn open(root: &Path, sync: SpoolSync) -> (Arc<Spool>, Vec<Recovered>) {
    // Small segments (64 KiB), so that they fill, settle and are reused or deleted often.
    let mut opened = Spool::open(root, 4, 2, 512 << 10, 64 << 20, sync).expect("a spool");
    let recovered = opened
        .leftovers
        .iter_mut()
        .flat_map(|l| std::mem::take(&mut l.recovered))
        .collect();
    (opened.spool, recovered)
}

/// The runs every spool file under `root` names.
fn runs_named(root: &Path) -> Vec<u64> {
    let mut runs = Vec::new();
    for slot in std::fs::read_dir(root).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(slot.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            runs.extend(run_in_name(&file.path()));
        }
    }
    runs
}

fn power_cut(ops: &[Op], seed: u64, sync: SpoolSync) -> Result<(), TestCaseError> {
    let root = temp_dir("live");
    let disk = ModelDisk::serve(&root);
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut batches: BTreeMap<u64, Batch> = BTreeMap::new();
    let mut open_batch: BTreeMap<u64, u64> = BTreeMap::new();
    let mut next = 1u64;
    let (spool, recovered) = open(&root, sync);
    prop_assert!(recovered.is_empty());
    // The test commits, at the instants its ops choose.
    spool
        .committing
        .by_hand
        .store(true, std::sync::atomic::Ordering::Release);
    spool.enable_batch_files(FILE_BYTES, FILE_RECORDS, &dest(0), b"tags");
    for op in ops {
        match *op {
            Op::Record { slot, len } => {
                let id = *open_batch.entry(slot).or_insert_with(|| {
                    next += 1;
                    next - 1
                });
                let b = batches.entry(id).or_insert_with(|| {
                    let mut mark = SpoolMark::default();
                    // The default destination's batches go in batch files, as the
                    // accumulator asks for them (one may not be had: then segments).
                    let buf = (slot == 0)
                        .then(|| spool.take_batch_file(id, &mut mark))
                        .flatten();
                    Batch {
                        slot,
                        buf,
                        records: Vec::new(),
                        durable: 0,
                        pack_id: None,
                        fate: Fate::Open,
                        mark,
                    }
                });
                if let Some(buf) = &mut b.buf {
                    // A batch file holds FILE_RECORDS records of FILE_BYTES at most (the
                    // accumulator seals a batch before it would hold more).
                    let bytes = encoded(id, b.records.len(), len % 300);
                    if b.records.len() >= FILE_RECORDS || buf.len() + bytes.len() > FILE_BYTES {
                        continue;
                    }
                    let from = buf.len();
                    buf.extend_from_slice(&bytes);
                    spool
                        .index_record(&mut b.mark, buf, from)
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    b.records.push(bytes);
                    continue;
                }
                let bytes = encoded(id, b.records.len(), len);
                // A segment that cannot be made (its directory's sync failed is no reason)
                // would be an error the caller sees: none is expected here.
                spool
                    .record(
                        BatchPlace {
                            shard: (slot % 2) as usize,
                            batch: id,
                            dest: &dest(slot),
                            tags: b"tags",
                        },
                        &bytes,
                        &mut b.mark,
                    )
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                b.records.push(bytes);
            }
            Op::Send { slot } => {
                let Some(id) = open_batch.remove(&slot) else {
                    continue;
                };
                let failed_before = disk.failed();
                let b = batches.get_mut(&id).expect("an open batch");
                let shard = (slot % 2) as usize;
                let pack = format!("PACK-{id}");
                spool.sealed(shard, id, &pack, &mut b.mark);
                b.pack_id = Some(pack.clone());
                // As delivery does: the raw buffer released, the batch compressed.
                if let Some(buf) = b.buf.take() {
                    drop(spool.keep_buffer(&mut b.mark, buf));
                }
                let raw: Vec<u8> = b.records.concat();
                let body = crate::wire::compress::compress(Compression::Lz4, &raw)
                    .expect("lz4 compresses");
                let compressed = Compressed {
                    shard,
                    batch: id,
                    pack_id: &pack,
                    codec: Compression::Lz4,
                    raw_len: raw.len(),
                    body: &body,
                };
                if sync != SpoolSync::Batch {
                    // A batch file's body goes to a segment, the file back or to a commit.
                    spool.compressed(&compressed, &mut b.mark);
                    b.fate = Fate::Sent;
                    continue;
                }
                // Synced before it is sent; written again on a fresh segment when that fails.
                let durable = spool.sync_batch(&b.mark) || spool.respool(&compressed, &mut b.mark);
                b.fate = if durable {
                    Fate::Durable
                } else {
                    // As delivery does: counted, then sent from memory.
                    spool.not_durable(b.records.len() as u64);
                    Fate::NotDurable
                };
                let fate = if disk.failed() != failed_before {
                    Fate::DoneMarkFailed
                } else {
                    // Every mark written before this sync is durable now.
                    Fate::Done { marks_synced: true }
                };
                for other in batches.values_mut() {
                    if other.fate
                        == (Fate::Done {
                            marks_synced: false,
                        })
                    {
                        other.fate = fate;
                    }
                }
            }
            Op::Done { slot } => {
                let oldest = batches.iter_mut().find(|(_, b)| {
                    b.slot == slot
                        && matches!(b.fate, Fate::Durable | Fate::NotDurable | Fate::Sent)
                });
                if let Some((&id, b)) = oldest {
                    if let Some(buf) = b.buf.take() {
                        // Its buffer goes back with the file (as delivery hands it back).
                        drop(spool.keep_buffer(&mut b.mark, buf));
                    }
                    spool.done((slot % 2) as usize, id, &mut b.mark);
                    b.fate = Fate::Done {
                        marks_synced: false,
                    };
                }
            }
            Op::Fail { n } => disk.fail_next(n),
            Op::Commit => {
                let pending = super::state::Committing::take(&mut spool.committing.queue.lock());
                spool.commit(pending);
            }
            Op::DirSync => {
                if let Err(e) = spool.dir_changes.sync(&spool.dir) {
                    spool
                        .faults()
                        .entries_sync_failed(&spool.dir, &spool.dir, &e);
                }
            }
            Op::Tick => {
                let failed_before = disk.failed();
                let synced = spool.sync_all() && disk.failed() == failed_before;
                for b in batches.values_mut() {
                    match b.fate {
                        Fate::Done {
                            marks_synced: false,
                        } => {
                            b.fate = if synced {
                                Fate::Done { marks_synced: true }
                            } else {
                                Fate::DoneMarkFailed
                            };
                        }
                        Fate::Open | Fate::Sent if synced => b.durable = b.records.len(),
                        _ => {}
                    }
                }
            }
        }
    }
    let not_durable: u64 = batches
        .values()
        .filter(|b| b.fate == Fate::NotDurable)
        .map(|b| b.records.len() as u64)
        .sum();
    prop_assert!(spool.faults().health().not_durable >= not_durable);
    // The cut: what is durable, and each page written since by chance.
    let image = temp_dir("cut");
    disk.crash(&image, &mut || rng.bool());
    let preparer = spool.preparer.lock().take();
    drop(spool);
    if let Some(thread) = preparer {
        let _ = thread.join();
    }
    let runs_before = runs_named(&image);
    let (spool, mut recovered) = open(&image, SpoolSync::None);
    for run in runs_before {
        prop_assert!(
            spool.run() > run,
            "run {} reused (a file names {run})",
            spool.run()
        );
    }
    let mut seen = std::collections::HashSet::new();
    for r in &mut recovered {
        r.decode(&spool.corrupt_entries);
        let id = r.origin.1;
        prop_assert!(seen.insert(id), "batch {id} recovered twice");
        let Some(b) = batches.get(&id) else {
            return Err(TestCaseError::fail(format!("batch {id} was never written")));
        };
        let got: Vec<Vec<u8>> = r.records.iter().map(|x| x.to_vec()).collect();
        let mut written = b.records.iter();
        prop_assert!(
            got.iter().all(|g| written.any(|w| w == g)),
            "batch {id}: recovered records are not what was written, in order"
        );
        // What a timed sync took is there, in order, whatever came after.
        let mut found = got.iter();
        prop_assert!(
            b.records[..b.durable].iter().all(|w| found.any(|g| g == w)),
            "batch {id}: {} records were made durable, {} came back",
            b.durable,
            got.len()
        );
        match b.fate {
            Fate::Durable => {
                prop_assert_eq!(got.len(), b.records.len(), "batch {} lost records", id);
                prop_assert_eq!(&r.pack_id, &b.pack_id);
            }
            Fate::Done { marks_synced: true } => {
                return Err(TestCaseError::fail(format!(
                    "batch {id} was settled and a sync made its mark durable, yet it came back"
                )));
            }
            _ => {}
        }
    }
    for (id, b) in &batches {
        let owed =
            b.fate == Fate::Durable || (b.durable > 0 && matches!(b.fate, Fate::Open | Fate::Sent));
        if owed {
            prop_assert!(seen.contains(id), "batch {id} was durable and is lost");
        }
    }
    drop(spool);
    drop(disk);
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(&image);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_power_cut_loses_no_durable_batch_and_brings_back_none_settled_before_a_sync(
        ops in proptest::collection::vec(op(false), 1..120),
        seed in any::<u64>(),
    ) {
        power_cut(&ops, seed, SpoolSync::Batch)?;
    }

    #[test]
    fn with_interval_syncing_a_power_cut_loses_nothing_a_timed_sync_took(
        ops in proptest::collection::vec(op(true), 1..120),
        seed in any::<u64>(),
    ) {
        // The timer itself never fires here: the test's ticks are the timed syncs.
        power_cut(&ops, seed, SpoolSync::Interval(Duration::from_secs(3600)))?;
    }
}

/// `interval`: a batch-file batch delivered after a timed sync took its file, its `Done`
/// made durable by the next; then its segment fills, and the commit gives the file back and
/// lets the segment be marked free for reuse. A cut that keeps the segment's free mark but
/// not the file's (pages reach the disk in any order) must not bring the batch back: the
/// file's free mark is made durable before the segment may settle.
#[test]
fn a_committed_file_is_freed_durably_before_its_batchs_segments_settle() {
    let ops = [
        Op::Record { slot: 0, len: 100 },
        Op::Tick,
        Op::Send { slot: 0 },
        Op::Done { slot: 0 },
        Op::Tick,
        // Slot 2 shares shard 0: its records fill the segment holding batch 1's body and
        // `Done`, and its batch settles, so that only the commit holds the segment.
        Op::Record {
            slot: 2,
            len: 39_000,
        },
        Op::Record {
            slot: 2,
            len: 39_000,
        },
        Op::Send { slot: 2 },
        Op::Done { slot: 2 },
        Op::Commit,
    ];
    cut_with_interval_syncing(&ops, 48);
}

/// `interval`: the commit's sync of a batch's body fails after the batch was delivered and a
/// timed sync made its `Done` durable. The file, its records durable, is kept until its free
/// mark is; the segments holding the `Done` are not deleted before, as their writer (on the
/// failed file) retires.
#[test]
fn a_failed_commit_of_a_settled_batch_never_brings_it_back() {
    let ops = [
        Op::Record { slot: 0, len: 1 },
        Op::Tick,
        Op::Send { slot: 0 },
        Op::Done { slot: 0 },
        Op::Tick,
        Op::DirSync,
        Op::Fail { n: 1 },
        Op::Commit,
        Op::Tick,
    ];
    cut_with_interval_syncing(&ops, 16);
}

/// `ops` with `interval` syncing, cut after them by each of `seeds` seeds: each keeps a
/// different subset of the pages written since the last sync.
fn cut_with_interval_syncing(ops: &[Op], seeds: u64) {
    for seed in 0..seeds {
        if let Err(e) = power_cut(ops, seed, SpoolSync::Interval(Duration::from_secs(3600))) {
            panic!("seed {seed}: {e}");
        }
    }
}

/// The model itself: a file never synced is lost with its name, a synced one keeps what was
/// synced, a removal not synced is undone, and a failed sync poisons its file.
#[test]
fn the_model_disk_keeps_only_what_was_synced() {
    let root = temp_dir("model");
    let disk = ModelDisk::serve(&root);
    let synced = root.join("synced");
    let unsynced_name = root.join("unsynced-name");
    let poisoned = root.join("poisoned");
    std::fs::write(&synced, b"one").unwrap();
    std::fs::write(&poisoned, b"old").unwrap();
    let f = File::open(&synced).unwrap();
    disk::sync_file(&f, &synced).unwrap();
    disk::sync_file(&f, &poisoned).unwrap();
    disk::sync_dir(&root).unwrap();
    std::fs::write(&synced, b"two").unwrap();
    std::fs::write(&unsynced_name, b"x").unwrap();
    std::fs::write(&poisoned, b"new").unwrap();
    disk.fail_next(1);
    assert!(disk::sync_file(&f, &poisoned).is_err());
    // Linux answers success after a failure, without the lost pages.
    disk::sync_file(&f, &poisoned).unwrap();
    std::fs::remove_file(&synced).unwrap();
    let image = temp_dir("model-cut");
    disk.crash(&image, &mut || false);
    assert_eq!(std::fs::read(image.join("synced")).unwrap(), b"one");
    assert!(!image.join("unsynced-name").exists());
    assert_eq!(std::fs::read(image.join("poisoned")).unwrap(), b"old");
    // Pages written since the last sync may reach the disk too.
    let all = temp_dir("model-all");
    disk.crash(&all, &mut || true);
    assert_eq!(std::fs::read(all.join("poisoned")).unwrap(), b"old");
    assert_eq!(disk.failed(), 1);
    assert!(disk.synced() >= 4);
    for d in [&root, &image, &all] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Two threads sync one file at once and the disk fails the first sync: Linux tells only
/// that one, and the other answers success for pages that never reached the disk. The spool's
/// syncs of a file go one at a time, so the second sees the first's failure and fails too.
#[test]
fn two_syncs_of_one_file_at_once_both_see_its_failure() {
    let root = temp_dir("interleaved");
    let disk = ModelDisk::serve(&root);
    let path = root.join("seg-1.spl");
    std::fs::write(&path, b"records").unwrap();
    let file = Arc::new(File::open(&path).unwrap());
    let faults = Arc::new(super::faults::Faults::default());
    disk.fail_next(1);
    disk.hold_failing_syncs(Duration::from_millis(500));
    let sync = |faults: Arc<super::faults::Faults>| {
        let (root, path, file) = (root.clone(), path.clone(), file.clone());
        std::thread::spawn(move || faults.sync_file(&root, &path, &file))
    };
    let first = sync(faults.clone());
    // The second starts while the first is inside its (failing) sync.
    let started = std::time::Instant::now();
    while disk.syncs_begun(&path) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the first sync began"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let second = sync(faults.clone());
    assert!(
        !first.join().unwrap(),
        "the failing sync answers its failure"
    );
    assert!(
        !second.join().unwrap(),
        "a sync running beside a failed one must not answer success"
    );
    assert_eq!(disk.failed(), 1);
    assert_eq!(faults.health().sync_failures, 1);
    // And every later sync of the file fails too: it is poisoned.
    assert!(!faults.sync_file(&root, &path, &file));
    let _ = std::fs::remove_dir_all(&root);
}

/// A spool directory made under a parent whose sync fails: the spool opens (the directory's
/// name may not survive a power loss, which is no reason to refuse records), and the failed
/// sync is counted.
#[test]
fn a_failed_sync_of_a_new_spool_directorys_parent_is_counted() {
    let root = temp_dir("parent");
    let disk = ModelDisk::serve(&root);
    disk.fail_next(1);
    let (spool, _) = open(&root.join("new").join("spool"), SpoolSync::Batch);
    assert_eq!(disk.failed(), 1);
    assert_eq!(spool.faults().health().sync_failures, 1);
    drop(spool);
    let _ = std::fs::remove_dir_all(&root);
}

/// A clean close deletes its files and makes their removal durable: a power cut just after
/// brings back no delivered batch.
#[test]
fn a_clean_close_makes_its_removals_durable() {
    let root = temp_dir("clean-close");
    let disk = ModelDisk::serve(&root);
    let (spool, _) = open(&root, SpoolSync::Batch);
    let mut mark = SpoolMark::default();
    let place = BatchPlace {
        shard: 0,
        batch: 1,
        dest: &dest(1),
        tags: &[],
    };
    for i in 0..10 {
        spool.record(place, &encoded(1, i, 100), &mut mark).unwrap();
    }
    spool.sealed(0, 1, "pack-1", &mut mark);
    assert!(spool.sync_batch(&mark));
    spool.done(0, 1, &mut mark);
    spool.close(true);
    let image = temp_dir("clean-close-cut");
    disk.crash(&image, &mut || true);
    let left: Vec<_> = walk(&image)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "spl" || x == "spb"))
        .collect();
    assert!(
        left.is_empty(),
        "a power cut after a clean close brings back {left:?}"
    );
    drop(spool);
    for d in [&root, &image] {
        let _ = std::fs::remove_dir_all(d);
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// A producer (`spool_sync = batch`) against the emulator on a disk that fails its syncs:
/// first a few (each batch whose sync failed is written again on a fresh file and sent, the
/// spool stays healthy), then every one (batches are sent from memory, counted as not durable,
/// the spool is degraded), then none again (healthy). Every record is delivered throughout,
/// and the stats say what happened.
#[cfg(feature = "emulator")]
#[test]
fn a_producer_on_a_failing_disk_delivers_everything_and_says_what_was_not_durable() {
    use crate::producer::{Producer, ProducerConfig, SendOptions};
    let emulator = crate::emulator::Emulator::start_default().expect("the emulator");
    let root = temp_dir("producer");
    let disk = ModelDisk::serve(&root);
    let config = ProducerConfig {
        spool_dir: Some(root.display().to_string()),
        spool_sync: SpoolSync::Batch,
        linger_ms: 5,
        batch_max_count: 50,
        ..emulator.producer_config("proj", "failing-disk")
    };
    let producer = Producer::new(config).expect("a producer");
    let mut sent = 0u64;
    let mut send = |n: u64| {
        for i in 0..n {
            // Two destinations: batch files (the default one) and segments (the other).
            let other = SendOptions {
                logstore: Some("other"),
                ..SendOptions::default()
            };
            let opts = if i % 3 == 0 {
                other
            } else {
                SendOptions::default()
            };
            producer
                .send(&[("i", sent.to_string())], &opts)
                .expect("accepted");
            sent += 1;
        }
        assert_eq!(producer.flush(Duration::from_secs(20)), 0, "all delivered");
    };
    send(300);
    let healthy = producer.stats();
    assert_eq!(healthy.spool_sync_failures, 0);

    disk.fail_next(2);
    send(300);
    // A failed sync may be a background one (a file or directory made ready for the next
    // batches) that ends just after the flush: it is counted when it fails.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while producer.stats().spool_sync_failures < disk.failed()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let stats = producer.stats();
    assert!(disk.failed() >= 1, "a sync failed");
    assert_eq!(
        stats.spool_sync_failures,
        disk.failed(),
        "every failed sync counted: {stats:?}"
    );
    assert_eq!(
        stats.spool_not_durable, 0,
        "a fresh file took them: {stats:?}"
    );
    assert!(!stats.spool_degraded);

    disk.fail_next(usize::MAX);
    send(300);
    let stats = producer.stats();
    assert!(stats.spool_degraded, "{stats:?}");
    assert!(stats.spool_not_durable > 0, "{stats:?}");

    disk.fail_next(0);
    send(300);
    let stats = producer.stats();
    assert!(!stats.spool_degraded, "healthy again: {stats:?}");
    assert_eq!(stats.delivered, sent);
    assert_eq!(stats.failed + stats.dropped, 0);
    let report = producer.close(Duration::from_secs(10));
    assert_eq!(report.undelivered + report.kept, 0);
    assert_eq!(
        report.not_durable, stats.spool_not_durable,
        "close says it too"
    );
    assert!(report.not_durable > 0);
    drop(disk);
    let _ = std::fs::remove_dir_all(&root);
}
