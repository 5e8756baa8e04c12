//! The accumulator: open batches, one per destination, in a few shards.
//!
//! # The add
//!
//! An add locks one shard (chosen per thread, so adding threads rarely contend), writes the
//! record straight at the end of its destination's open batch ([`LogEncoder`]), reserves its
//! bytes from the shard's credit, counts it, and seals the batch when it reaches
//! `batch_max_bytes` or `batch_max_count` (or at once with `linger_ms = 0`). A record that would
//! overflow the batch, or whose bytes cannot be reserved without waiting, is copied out and
//! appended by [`Accumulator::append`], which may wait for room with no lock held. A record
//! whose fill fails leaves the batch exactly as it was. The plain add (no tracking, no spool,
//! a batch already open that the record does not fill) returns as soon as it is counted, with
//! nothing to do after; the others go on through the general checks (spool, completions,
//! sealing, a batch opened or left empty), in the same function, after the one call of `fill`.
//!
//! # The default destination
//!
//! The producer's own destination's batch has a field of its own in each shard (no hashing on
//! the common add); other destinations' are in a map (foldhash, seeded per process), looked up
//! once per add, their entry removed as soon as their batch seals, so 100 000 destinations used
//! once each leave nothing behind.
//!
//! # Sealing
//!
//! Sealing appends the group's tail (topic, source, tags, `__pack_id__`) and hands the batch
//! back to the caller, who sends it once the shard is unlocked; a new batch's linger deadline is
//! handed back the same way ([`AfterAdd`]). Runs on the callers' threads (adds) and the I/O
//! runtime (linger expiry); a shard's lock is held only while one record is written.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hashbrown::HashMap;
use md5::Digest as _;
use parking_lot::Mutex;

use super::budget::Budget;
use super::buffer::BatchBuf;
use super::config::ProducerConfig;
use super::encode::{LogEncoder, RecordError};
use super::error::ProducerError;
use super::lifecycle::Lifecycle;
use super::report::Track;
use super::report::{Completion, DeliveryReport};
use super::routing::Destination;
use super::spool::Spooling;
use super::spool::{BatchPlace, SpoolMark};
use crate::wire::keys::KeyPolicy;
use crate::wire::proto::put_len_field;

type CompletionSender = tokio::sync::oneshot::Sender<Arc<DeliveryReport>>;

struct OpenBatch {
    id: u64,
    dest: Arc<Destination>,
    buf: BatchBuf,
    records: u32,
    opened: Instant,
    completions: Vec<CompletionSender>,
    tickets: Vec<u64>,
    /// Its entries in the spool, when there is one.
    spooled: SpoolMark,
}

/// A batch ready to send: its records and the group's tail, with its pack id.
pub(crate) struct SealedBatch {
    pub(crate) id: u64,
    pub(crate) dest: Arc<Destination>,
    pub(crate) raw: BatchBuf,
    pub(crate) raw_len: usize,
    pub(crate) records: u32,
    pub(crate) opened: Instant,
    pub(crate) pack_id: String,
    /// Bytes of the budget this batch holds.
    pub(crate) reserved: usize,
    pub(crate) completions: Vec<CompletionSender>,
    pub(crate) tickets: Vec<u64>,
    /// The accumulator shard it was built in (its spool entries are in that shard's files).
    pub(crate) shard: usize,
    /// Its entries in the spool, when there is one.
    pub(crate) spooled: SpoolMark,
    /// Rebuilt from a spool an earlier producer left.
    pub(crate) replayed: bool,
}

/// The open batches of destinations other than the producer's own. An entry's slot is `None`
/// only while an add that emptied it (sealed or discarded its batch) still holds the shard's
/// lock; the add then removes the entry.
type Batches = HashMap<Arc<Destination>, Option<OpenBatch>>;

#[derive(Default)]
struct Shard {
    default_batch: Option<OpenBatch>,
    batches: Batches,
    /// Records accepted through this shard (summed for stats and flush).
    accepted: u64,
    /// Bytes reserved from the budget ahead of need, so most adds touch no shared atomic.
    credit: usize,
}

/// What an add leaves for after the shard is unlocked: a new batch's linger deadline to arm
/// and the batches it sealed, to send.
pub(crate) struct AfterAdd {
    /// The shard the add went through.
    pub(crate) shard: usize,
    /// (deadline, batch id) of a batch the add opened.
    pub(crate) deadline: Option<(Instant, u64)>,
    /// Batches the add sealed.
    pub(crate) sealed: Vec<SealedBatch>,
}

/// How an in-place add ended.
/// What a fill did with the record it was handed.
pub(crate) enum Filled<D> {
    /// It wrote the record's fields.
    Written,
    /// It declined (`D` says why); what it wrote is rolled back.
    Declined(D),
}

/// A record's bytes as written in place: how many, or why there are none.
enum Encoded<D> {
    /// Written and closed: this many bytes at the end of the batch.
    Bytes(usize),
    /// The fill declined; nothing is left in the batch.
    Declined(D),
    /// The record is invalid; nothing is left in the batch.
    Invalid(RecordError),
}

pub(crate) enum InPlace<D> {
    /// Written, reserved and counted, with no completion and nothing to do after: the
    /// plain add.
    Plain,
    /// Written, reserved and counted.
    Added(Option<Completion>, AfterAdd),
    /// Encoded, but it did not fit the batch or the budget without waiting: the record's
    /// bytes, for [`Accumulator::append`].
    Moved(Vec<u8>, AfterAdd),
    /// The fill declined; nothing was written or counted.
    Declined(D),
    /// The record is invalid; nothing was written or counted.
    Invalid(RecordError),
}

/// The open batches of a producer.
pub(crate) struct Accumulator {
    /// A power of two of them (the producer rounds the count up), so a thread's shard is its
    /// hint masked: a division, on every add, is some 25 cycles of latency.
    shards: Vec<Mutex<Shard>>,
    default_dest: Arc<Destination>,
    next_batch: AtomicU64,
    pack_prefix: String,
    /// The tags, encoded once as the group fields they become.
    tags: Vec<u8>,
    pack_id: bool,
    linger: Option<Duration>,
    batch_max_bytes: usize,
    batch_max_count: u32,
    key_policy: KeyPolicy,
    /// Where accepted records are also kept, when `spool_dir` is set.
    spool: Spooling,
    max_block: Duration,
}

thread_local! {
    static SHARD_HINT: Cell<usize> = const { Cell::new(usize::MAX) };
}

static NEXT_SHARD_HINT: AtomicUsize = AtomicUsize::new(0);

/// This thread's shard number (before the modulo): threads take turns as they first add.
#[inline]
fn shard_hint() -> usize {
    SHARD_HINT.with(|h| {
        if h.get() == usize::MAX {
            h.set(NEXT_SHARD_HINT.fetch_add(1, Ordering::Relaxed));
        }
        h.get()
    })
}

/// The tail of a group: topic (when not empty), source, tags, and the `__pack_id__` tag.
fn group_tail(dest: &Destination, tags: &[u8], pack_id: Option<&str>) -> Vec<u8> {
    let mut tail = Vec::with_capacity(256 + tags.len());
    if !dest.topic.is_empty() {
        put_len_field(&mut tail, 0x1a, dest.topic.as_bytes());
    }
    put_len_field(&mut tail, 0x22, dest.source.as_bytes());
    tail.extend_from_slice(tags);
    if let Some(pack_id) = pack_id {
        let mut tag = Vec::with_capacity(64);
        put_len_field(&mut tag, 0x0a, b"__pack_id__");
        put_len_field(&mut tag, 0x12, pack_id.as_bytes());
        put_len_field(&mut tail, 0x32, &tag);
    }
    tail
}

/// The open batch of `dest` as an `Option` slot: the shard's default one, or a keyed one in
/// the map (an entry with an empty slot is made for a destination with none; the caller drops
/// it with [`forget_emptied`] if it stays empty). Both kinds of batch are then worked on the
/// same way; borrowing the fields apart leaves the shard's counters free.
#[inline(always)]
fn slot_of<'s>(
    default_batch: &'s mut Option<OpenBatch>,
    batches: &'s mut Batches,
    dest: &Option<Arc<Destination>>,
) -> &'s mut Option<OpenBatch> {
    match dest {
        None => default_batch,
        Some(d) => keyed_slot(batches, d),
    }
}

/// A keyed destination's slot: one hash, nothing moved. The destination is hashed as itself,
/// which is what its `Arc` in the map hashes to: through the `Arc` the compiler made the hash
/// a call of its own on every add.
#[inline(never)]
fn keyed_slot<'s>(batches: &'s mut Batches, dest: &Arc<Destination>) -> &'s mut Option<OpenBatch> {
    use std::hash::BuildHasher as _;
    let hash = batches.hasher().hash_one(&**dest);
    batches
        .raw_entry_mut()
        .from_key_hashed_nocheck(hash, dest)
        .or_insert_with(|| (dest.clone(), None))
        .1
}

/// Drops the entry of `dest` (another destination) once an add left its slot empty.
#[inline(always)]
fn forget_emptied(batches: &mut Batches, dest: &Option<Arc<Destination>>, emptied: bool) {
    if let (Some(d), true) = (dest, emptied) {
        batches.remove(d);
    }
}

impl Accumulator {
    pub(crate) fn new(
        config: &ProducerConfig,
        default_dest: Arc<Destination>,
        shard_count: usize,
        pack_seed: &str,
        spool: Spooling,
    ) -> Accumulator {
        let mut tags = Vec::new();
        let mut tag = Vec::with_capacity(64);
        for (k, v) in &config.tags {
            tag.clear();
            put_len_field(&mut tag, 0x0a, k.as_bytes());
            put_len_field(&mut tag, 0x12, v.as_bytes());
            put_len_field(&mut tags, 0x32, &tag);
        }
        spool.enable_batch_files(
            config.batch_max_bytes,
            config.batch_max_count,
            &default_dest,
            &tags,
        );
        debug_assert!(shard_count.is_power_of_two());
        Accumulator {
            shards: (0..shard_count)
                .map(|_| Mutex::new(Shard::default()))
                .collect(),
            default_dest,
            next_batch: AtomicU64::new(0),
            pack_prefix: format!("{:X}", md5::Md5::digest(pack_seed.as_bytes()))[..16].to_owned(),
            tags,
            pack_id: config.pack_id,
            linger: (config.linger_ms > 0).then(|| Duration::from_millis(config.linger_ms)),
            batch_max_bytes: config.batch_max_bytes,
            batch_max_count: config.batch_max_count as u32,
            key_policy: config.key_policy,
            spool,
            max_block: Duration::from_millis(config.max_block_ms),
        }
    }

    /// The spool, as the producer sees it.
    pub(crate) fn spooling(&self) -> &Spooling {
        &self.spool
    }

    /// Writes the record at `batch.buf[from..]` to the spool, if there is one.
    #[inline(always)]
    fn spool_record(
        &self,
        shard: usize,
        batch: &mut OpenBatch,
        from: usize,
    ) -> Result<(), ProducerError> {
        self.spool.record_written(
            BatchPlace {
                shard,
                batch: batch.id,
                dest: &batch.dest,
                tags: &self.tags,
            },
            &batch.buf,
            from,
            &mut batch.spooled,
        )
    }

    /// The shard this thread adds to.
    #[inline(always)]
    fn this_threads_shard(&self) -> usize {
        shard_hint() & (self.shards.len() - 1)
    }

    /// Writes a record in place: `fill` writes its fields straight at the end of the open batch
    /// of `dest` (`None`: the producer's own), under the shard's lock. `fill` may decline with
    /// `Ok(Filled::Declined(d))`; what it wrote is rolled back.
    #[inline]
    pub(crate) fn add_in_place<D, F>(
        &self,
        budget: &Budget,
        dest: &Option<Arc<Destination>>,
        secs: u32,
        nanos: Option<u32>,
        track: Track,
        fill: F,
    ) -> InPlace<D>
    where
        F: FnOnce(&mut LogEncoder<'_>) -> Result<Filled<D>, RecordError>,
    {
        let max_bytes = self.batch_max_bytes;
        let shard_index = self.this_threads_shard();
        let mut guard = self.shards[shard_index].lock();
        let shard = &mut *guard;
        let slot = slot_of(&mut shard.default_batch, &mut shard.batches, dest);
        let mut deadline = None;
        let batch = slot.get_or_insert_with(|| self.open_batch(budget, dest, 0, &mut deadline));
        let before = batch.buf.len();
        let encoded = {
            let mut enc = LogEncoder::begin(&mut batch.buf, secs, nanos, self.key_policy);
            match fill(&mut enc) {
                Ok(Filled::Written) => match enc.end(max_bytes) {
                    Ok(n) => Encoded::Bytes(n),
                    Err(e) => Encoded::Invalid(e),
                },
                // Dropping the encoder rolls the batch back.
                Ok(Filled::Declined(declined)) => Encoded::Declined(declined),
                Err(e) => Encoded::Invalid(e),
            }
        };
        // The plain add ends here: a record with no tracking and no spool, added to a batch
        // that was open already and that it does not fill, its bytes reserved without
        // waiting. Nothing is left to do after it.
        if let Encoded::Bytes(n) = encoded {
            if track == Track::None
                && !self.spool.is_on()
                && self.linger.is_some()
                && batch.records > 0
                && batch.records + 1 < self.batch_max_count
                && before + n < max_bytes
                && budget.reserve_now(&mut shard.credit, n)
            {
                batch.records += 1;
                shard.accepted += 1;
                return InPlace::Plain;
            }
        }
        let mut after = AfterAdd {
            shard: shard_index,
            deadline,
            sealed: Vec::new(),
        };
        // The general add: the record must fit the batch and its bytes be reserved without
        // waiting; otherwise it is copied out and appended without the lock.
        let fast = match &encoded {
            Encoded::Bytes(n) => {
                let n = *n;
                let fits = before + n <= max_bytes || batch.records == 0;
                let spool_room = self.spool.has_room();
                fits && spool_room && budget.reserve_now(&mut shard.credit, n) && {
                    // Kept on disk before it counts as accepted; if the spool cannot take
                    // it, it goes the slow way, which reports why.
                    let spooled = self.spool_record(shard_index, batch, before).is_ok();
                    if !spooled {
                        shard.credit += n;
                    }
                    spooled
                }
            }
            Encoded::Declined(_) | Encoded::Invalid(_) => false,
        };
        let mut moved: Option<Vec<u8>> = None;
        let completion = if fast {
            shard.accepted += 1;
            self.commit_record(shard_index, slot, track, &mut after)
        } else {
            if let Encoded::Bytes(_) = encoded {
                moved = Some(batch.buf[before..].to_vec());
                batch.buf.truncate(before);
            }
            if batch.records == 0 {
                // Opened for this record only: forget it (its timer finds nothing).
                if let Some(empty) = slot.take() {
                    self.discard(budget, empty);
                }
                after.deadline = None;
            }
            None
        };
        let emptied = slot.is_none();
        forget_emptied(&mut shard.batches, dest, emptied);
        drop(guard);
        match encoded {
            Encoded::Invalid(e) => InPlace::Invalid(e),
            Encoded::Declined(declined) => InPlace::Declined(declined),
            Encoded::Bytes(_) => match moved {
                Some(log) => InPlace::Moved(log, after),
                None => InPlace::Added(completion, after),
            },
        }
    }

    /// Appends encoded records (`total` bytes in all) to their batch: the path of records that
    /// could not be written in place (no room in the batch, or no room in the budget without
    /// waiting), and of record sets queued all together. The bytes of all of them are reserved
    /// first, waiting for room up to `max_block_ms` with no lock held; then all are appended,
    /// sealing batches as they fill, so either every record is accepted or none is. Returns
    /// the last record's completion.
    pub(crate) fn append<'l>(
        &self,
        budget: &Budget,
        lifecycle: &Lifecycle,
        logs: impl IntoIterator<Item = &'l [u8]>,
        total: usize,
        dest: &Option<Arc<Destination>>,
        track: Track,
    ) -> Result<(Option<Completion>, AfterAdd), ProducerError> {
        self.spool.admit(self.max_block)?;
        let shard_index = self.this_threads_shard();
        let mut guard = self.shards[shard_index].lock();
        if !budget.reserve_now(&mut guard.credit, total) {
            drop(guard);
            budget.reserve(total, lifecycle)?;
            guard = self.shards[shard_index].lock();
        }
        let max_bytes = self.batch_max_bytes;
        let mut after = AfterAdd {
            shard: shard_index,
            deadline: None,
            sealed: Vec::new(),
        };
        let shard = &mut *guard;
        let slot = slot_of(&mut shard.default_batch, &mut shard.batches, dest);
        let mut completion = None;
        let mut count = 0;
        let mut appended = 0;
        let mut failure = None;
        for log in logs {
            if slot
                .as_ref()
                .is_some_and(|b| b.buf.len() + log.len() > max_bytes)
            {
                if let Some(full) = slot.take() {
                    after.sealed.push(self.seal(shard_index, full));
                }
            }
            let batch = slot.get_or_insert_with(|| {
                self.open_batch(budget, dest, log.len(), &mut after.deadline)
            });
            let before = batch.buf.len();
            batch.buf.extend_from_slice(log);
            if let Err(e) = self.spool_record(shard_index, batch, before) {
                // The spool's disk failed: this record (and those after it) is not accepted.
                batch.buf.truncate(before);
                if batch.records == 0 {
                    if let Some(empty) = slot.take() {
                        self.discard(budget, empty);
                    }
                    after.deadline = None;
                }
                failure = Some(e);
                break;
            }
            count += 1;
            appended += log.len();
            completion = self.commit_record(shard_index, slot, track, &mut after);
        }
        shard.accepted += count;
        let emptied = slot.is_none();
        forget_emptied(&mut shard.batches, dest, emptied);
        match failure {
            None => Ok((completion, after)),
            Some(e) => {
                drop(guard);
                budget.release(total - appended);
                Err(self.spool.refusal(e))
            }
        }
    }

    /// A new open batch for `dest`, for a first record of `need` bytes (0: not known yet);
    /// notes its linger deadline. With a spool, a batch of the default destination is written
    /// in a batch file of its own when one can be had and the record fits it.
    fn open_batch(
        &self,
        budget: &Budget,
        dest: &Option<Arc<Destination>>,
        need: usize,
        deadline: &mut Option<(Instant, u64)>,
    ) -> OpenBatch {
        let id = self.next_batch.fetch_add(1, Ordering::Relaxed);
        let opened = Instant::now();
        if let Some(linger) = self.linger {
            *deadline = Some((opened + linger, id));
        }
        let mut spooled = SpoolMark::default();
        let in_file = self.spool.batch_opened(
            id,
            dest.is_none(),
            need <= self.batch_max_bytes,
            &mut spooled,
        );
        OpenBatch {
            id,
            dest: dest.clone().unwrap_or_else(|| self.default_dest.clone()),
            buf: in_file.unwrap_or_else(|| budget.take_buffer(dest.is_none())),
            records: 0,
            opened,
            completions: Vec::new(),
            tickets: Vec::new(),
            spooled,
        }
    }

    /// Forgets a batch that was opened and holds no record: its buffer back to the pool, its
    /// batch file back to the spool.
    fn discard(&self, budget: &Budget, batch: OpenBatch) {
        let OpenBatch {
            buf, mut spooled, ..
        } = batch;
        if let Some(buf) = self.spool.discarded(&mut spooled, buf) {
            budget.recycle(buf);
        }
    }

    /// Counts the record just written at the end of the batch in `slot`, attaches its
    /// tracking, and seals the batch when it is full (or lingering is off).
    #[inline]
    fn commit_record(
        &self,
        shard: usize,
        slot: &mut Option<OpenBatch>,
        track: Track,
        after: &mut AfterAdd,
    ) -> Option<Completion> {
        let batch = slot.as_mut()?;
        batch.records += 1;
        let completion = match track {
            Track::None => None,
            Track::Ticket(ticket) => {
                batch.tickets.push(ticket);
                None
            }
            Track::Completion => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                batch.completions.push(tx);
                Some(Completion { rx })
            }
        };
        if self.linger.is_none()
            || batch.records >= self.batch_max_count
            || batch.buf.len() >= self.batch_max_bytes
        {
            if let Some(done) = slot.take() {
                after.sealed.push(self.seal(shard, done));
                after.deadline = None;
            }
        }
        completion
    }

    /// Closes a batch: appends the group's tail (topic, source, tags, pack id) and notes the
    /// pack id in the spool.
    fn seal(&self, shard: usize, batch: OpenBatch) -> SealedBatch {
        let OpenBatch {
            id,
            dest,
            mut buf,
            records,
            opened,
            completions,
            tickets,
            mut spooled,
        } = batch;
        let reserved = buf.len();
        let pack_id = format!("{}-{:X}", self.pack_prefix, id);
        self.spool.sealed(shard, id, &pack_id, &mut spooled);
        buf.extend_from_slice(&group_tail(
            &dest,
            &self.tags,
            self.pack_id.then_some(&*pack_id),
        ));
        let raw_len = buf.len();
        SealedBatch {
            id,
            dest,
            raw: buf,
            raw_len,
            records,
            opened,
            pack_id,
            reserved,
            completions,
            tickets,
            shard,
            spooled,
            replayed: false,
        }
    }

    /// A batch an earlier producer left in the spool, rebuilt and spooled again under this
    /// producer's run (so a crash now loses it no more than before). It keeps its pack id when
    /// it had been sealed; it is counted as accepted. The caller reserved its bytes.
    pub(crate) fn replay(
        &self,
        recovered: super::spool::Recovered,
    ) -> Result<SealedBatch, ProducerError> {
        let id = self.next_batch.fetch_add(1, Ordering::Relaxed);
        let shard = (id as usize) % self.shards.len();
        let copy_of = recovered.copy_origin();
        let dest = Arc::new(recovered.dest);
        let total: usize = recovered.records.iter().map(|r| r.len()).sum();
        let mut buf = BatchBuf::with_capacity(total + 1024);
        let mut spooled = SpoolMark::default();
        // The copy names its original, in case the replay is cut before the ledger does.
        self.spool.copy_opened(
            BatchPlace {
                shard,
                batch: id,
                dest: &dest,
                tags: &recovered.tags,
            },
            &copy_of,
            &mut spooled,
        )?;
        for record in &recovered.records {
            self.spool.copy_record(
                BatchPlace {
                    shard,
                    batch: id,
                    dest: &dest,
                    tags: &recovered.tags,
                },
                record,
                &mut spooled,
            )?;
            buf.extend_from_slice(record);
        }
        let pack_id = recovered
            .pack_id
            .unwrap_or_else(|| format!("{}-{:X}", self.pack_prefix, id));
        self.spool.sealed(shard, id, &pack_id, &mut spooled);
        buf.extend_from_slice(&group_tail(&dest, &recovered.tags, Some(&pack_id)));
        let records = recovered.records.len() as u32;
        self.shards[shard].lock().accepted += u64::from(records);
        Ok(SealedBatch {
            id,
            dest,
            raw_len: buf.len(),
            raw: buf,
            records,
            opened: Instant::now(),
            pack_id,
            reserved: total,
            completions: Vec::new(),
            tickets: Vec::new(),
            shard,
            spooled,
            replayed: true,
        })
    }

    /// Seals the batch a linger deadline was set for, if it is still open.
    pub(crate) fn expire(
        &self,
        shard: usize,
        batch_id: u64,
        dest: Option<&Arc<Destination>>,
    ) -> Option<SealedBatch> {
        let index = shard;
        let mut shard = self.shards[index].lock();
        let open = match dest {
            None => shard.default_batch.take_if(|b| b.id == batch_id),
            Some(d) => match shard.batches.get(d) {
                Some(Some(b)) if b.id == batch_id => shard.batches.remove(d).flatten(),
                _ => None,
            },
        };
        open.map(|b| self.seal(index, b))
    }

    /// Seals every open batch, handing each shard's to `send` once its lock is released.
    pub(crate) fn seal_all(&self, mut send: impl FnMut(Vec<SealedBatch>)) {
        for (index, shard) in self.shards.iter().enumerate() {
            let sealed: Vec<SealedBatch> = {
                let mut s = shard.lock();
                let mut out: Vec<SealedBatch> = s
                    .default_batch
                    .take()
                    .into_iter()
                    .map(|b| self.seal(index, b))
                    .collect();
                out.extend(
                    s.batches
                        .drain()
                        .filter_map(|(_, b)| b)
                        .map(|b| self.seal(index, b)),
                );
                out
            };
            send(sealed);
        }
    }

    /// Records accepted so far.
    pub(crate) fn accepted(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().accepted).sum()
    }

    /// Bytes the shards reserved ahead and have not used.
    pub(crate) fn credits(&self) -> usize {
        self.shards.iter().map(|s| s.lock().credit).sum()
    }

    /// Gives the shards' unused reservations back to the budget.
    pub(crate) fn return_credits(&self, budget: &Budget) {
        let total: usize = self
            .shards
            .iter()
            .map(|s| std::mem::take(&mut s.lock().credit))
            .sum();
        if total > 0 {
            budget.release(total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::producer::routing::{Router, SendOptions};

    fn add(
        acc: &Accumulator,
        budget: &Budget,
        router: &Router,
        topic: &str,
        fields: &[(&str, &str)],
    ) -> InPlace<()> {
        let opts = SendOptions {
            topic: Some(topic),
            ..Default::default()
        };
        let dest = Some(Arc::new(router.destination(&opts).unwrap()));
        acc.add_in_place(budget, &dest, 1, None, Track::None, |enc| {
            for (k, v) in fields {
                enc.field_str(k, v)?;
            }
            Ok(Filled::Written)
        })
    }

    /// A one-shard accumulator (and its config, router and budget) whose batches seal at
    /// `batch_max_count` records.
    fn one_shard(batch_max_count: usize) -> (ProducerConfig, Router, Accumulator, Budget) {
        let config = ProducerConfig {
            batch_max_count,
            ..ProducerConfig::new("http://127.0.0.1:1", "proj", "store")
        };
        let router = Router::new(&config, "src".into());
        let acc = Accumulator::new(
            &config,
            router.default.clone(),
            1,
            "seed",
            Spooling::default(),
        );
        let budget = Budget::new(&config, 1);
        (config, router, acc, budget)
    }

    fn add_default(acc: &Accumulator, budget: &Budget, track: Track, value: &str) -> InPlace<()> {
        acc.add_in_place(budget, &None, 1, None, track, |enc| {
            enc.field_str("k", value)?;
            Ok(Filled::Written)
        })
    }

    /// What each add of a run ended as (`plain`, `opened`: a batch and its deadline, `added`,
    /// or the records of the batch it sealed), and the tickets of the batches sealed.
    fn outcomes(acc: &Accumulator, budget: &Budget, tracks: &[Track]) -> (Vec<String>, Vec<u64>) {
        let mut tickets = Vec::new();
        let ends = tracks
            .iter()
            .map(|&track| match add_default(acc, budget, track, "value") {
                InPlace::Plain => "plain".to_owned(),
                InPlace::Added(_, after) => match after.sealed.as_slice() {
                    [batch] => {
                        tickets.extend(&batch.tickets);
                        format!("sealed {}", batch.records)
                    }
                    [] if after.deadline.is_some() => "opened".to_owned(),
                    [] => "added".to_owned(),
                    _ => "sealed several".to_owned(),
                },
                _ => "not in place".to_owned(),
            })
            .collect();
        (ends, tickets)
    }

    #[test]
    fn the_plain_add_leaves_opening_filling_and_tracking_to_the_general_add() {
        let (config, router, acc, budget) = one_shard(3);
        // By count: the batch's last record seals it; the one after opens the next.
        let (ends, _) = outcomes(&acc, &budget, &[Track::None; 7]);
        assert_eq!(
            ends,
            ["opened", "plain", "sealed 3", "opened", "plain", "sealed 3", "opened"]
        );
        // A tracked record is never a plain one, and its ticket is kept.
        let tracks = [Track::Ticket(1), Track::None, Track::Ticket(2)];
        let (ends, tickets) = outcomes(&acc, &budget, &tracks);
        assert_eq!(ends, ["added", "sealed 3", "opened"]);
        assert_eq!(tickets, [1]);
        assert_eq!(acc.shards[0].lock().accepted, 10);
        // By bytes: three records fill the batch exactly; the third seals it.
        let mut one = BatchBuf::new();
        let mut enc = LogEncoder::begin(&mut one, 1, None, KeyPolicy::Service);
        enc.field_str("k", "value").unwrap();
        let size = enc.finish(usize::MAX).unwrap();
        let config = ProducerConfig {
            batch_max_bytes: 3 * size,
            batch_max_count: 100,
            ..config
        };
        let acc = Accumulator::new(
            &config,
            router.default.clone(),
            1,
            "seed",
            Spooling::default(),
        );
        let (ends, _) = outcomes(&acc, &budget, &[Track::None; 4]);
        assert_eq!(ends, ["opened", "plain", "sealed 3", "opened"]);
    }

    #[test]
    fn another_destinations_entry_lasts_only_while_it_has_a_batch_open() {
        let (_, router, acc, budget) = one_shard(2);
        let entries = || acc.shards[0].lock().batches.len();
        let mut sealed = Vec::new();
        // Three topics in turn, two records a batch: t0 seals twice, t1 and t2 once each and
        // have one record open at the end.
        for i in 0..10 {
            match add(
                &acc,
                &budget,
                &router,
                &format!("t{}", i % 3),
                &[("k", "v")],
            ) {
                InPlace::Added(_, after) => sealed.extend(after.sealed),
                _ => panic!("add {i} was not written in place"),
            }
        }
        let topics: Vec<&str> = sealed.iter().map(|b| &*b.dest.topic).collect();
        assert_eq!(topics, ["t0", "t1", "t2", "t0"]);
        assert!(sealed.iter().all(|b| b.records == 2));
        assert_eq!(entries(), 2, "only t1 and t2 have a batch open");
        // A record refused on a destination with nothing open leaves no entry either.
        assert!(matches!(
            add(&acc, &budget, &router, "t9", &[]),
            InPlace::Invalid(RecordError::Empty)
        ));
        assert_eq!(entries(), 2);
        // The open ones are sealed with everything else.
        let mut rest = Vec::new();
        acc.seal_all(|batches| rest.extend(batches));
        let mut topics: Vec<&str> = rest.iter().map(|b| &*b.dest.topic).collect();
        topics.sort_unstable();
        assert_eq!(topics, ["t1", "t2"]);
        assert_eq!(entries(), 0);
    }
}
