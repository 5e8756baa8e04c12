//! What the spool does with segments: each shard appends entries (opens, records, seals,
//! bodies, dones) to its own mapped segment file, takes a new one (ready-made by the preparer)
//! when it is full, and retires segments whose batches are all settled (kept mapped for reuse,
//! or deleted). The segments' data (`State`, `Writer`, ...) lives in `state`.
//! Runs on the adding threads (records) and the I/O threads (seals, bodies, dones); each
//! shard's writer is behind the spool's lock.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::files::{allocate, io, is_disk_full, private_file, SpoolError};
use super::format::{
    align8, body_head, encode_open, Compressed, CopyOrigin, Kind, ENTRY_HEADER, FREE_MAGIC,
    SEGMENT_HEADER, SEGMENT_MAGIC,
};
use super::state::{map_segment, Free, Segment, State, Writer};
use super::store::{BatchPlace, Spool, SpoolMark};
use crate::producer::config::SpoolSync;

/// How many times a batch whose sync failed is written again on a fresh segment before it is
/// sent as not durable.
const RESPOOL_ATTEMPTS: usize = 2;

impl Spool {
    /// Appends a batch's entry through `shard`'s writer, opening a new segment when the
    /// current one is full; answers the segment it went in, an error only when a segment file
    /// cannot be made.
    pub(super) fn append(
        &self,
        shard: usize,
        kind: Kind,
        run: u64,
        batch: u64,
        parts: &[&[u8]],
        mark: Option<&mut SpoolMark>,
    ) -> std::io::Result<u64> {
        let mut guard = self.writers[shard].lock();
        let fits = guard
            .as_mut()
            .is_some_and(|w| w.append(kind, run, batch, parts));
        if !fits {
            let need: usize = ENTRY_HEADER + parts.iter().map(|p| align8(p.len())).sum::<usize>();
            let mut writer = self.new_segment(shard, need)?;
            let written = writer.append(kind, run, batch, parts);
            debug_assert!(written, "a new segment holds the entry it was sized for");
            if let Some(old) = guard.replace(writer) {
                self.retire(old);
            }
        }
        let seq = guard.as_ref().map_or(0, |w| w.seq);
        drop(guard);
        if let Some(mark) = mark {
            if mark.segments.last() != Some(&seq) {
                mark.segments.push(seq);
                if let Some(s) = self.state.lock().segments.get_mut(&seq) {
                    s.live += 1;
                }
            }
        }
        Ok(seq)
    }

    /// A fresh segment for `shard` with room for an entry of `need` bytes, its blocks
    /// allocated up front (a full disk is an error here, not a fault on a later write into the
    /// mapping). `None` when the file cannot be made. Admission ([`Spool::over_limit`]) keeps
    /// the total within `spool_max_bytes`: it stops new records a segment per shard early.
    pub(super) fn new_segment(&self, shard: usize, need: usize) -> std::io::Result<Writer> {
        if self.state.lock().closed {
            // Closed (see `Spool::close`): nothing more is written.
            return Err(std::io::Error::other("the spool is closed"));
        }
        let size = self.segment_bytes.max(align8(SEGMENT_HEADER + need));
        self.used.fetch_add(size, Ordering::AcqRel);
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let mut path = self
            .dir
            .join(format!("seg-{:016x}-{seq:016x}.spl", self.run));
        let reused = {
            let mut state = self.state.lock();
            let at = state.free.iter().position(|f| f.size >= size);
            let taken = at.map(|i| state.free.swap_remove(i));
            if let Some(t) = &taken {
                state.spare_bytes -= t.size;
            }
            if state.free.len() < self.writers.len() {
                // The preparer makes one ready for the next segment.
                self.prepare.notify();
            }
            taken
        };
        let made = match reused {
            // Reused under its name, not cleared: the new header's sequence ends a scan at the
            // first entry of the earlier use.
            Some(free) => {
                path = free.path;
                Ok((free.file, free.map))
            }
            None => {
                let created = private_file()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&path);
                match created {
                    // Only a file this made is removed on failure: a name already taken
                    // (EEXIST) is another file's, with records perhaps.
                    Ok(file) => {
                        self.dir_changes.note();
                        allocate(&file, size)
                            .and_then(|()| map_segment(&file))
                            .map(|map| (Arc::new(file), map))
                            .inspect_err(|_| {
                                let _ = std::fs::remove_file(&path);
                            })
                    }
                    Err(e) => Err(e),
                }
            }
        };
        let (file, mut map) = match made {
            Ok(made) => made,
            Err(e) => {
                let used = self.used.fetch_sub(size, Ordering::AcqRel) - size;
                if is_disk_full(&e) {
                    // What the disk holds is the limit until a segment is settled: admission
                    // waits or refuses (the buffer-full policy) instead of failing each add.
                    self.disk_room.store(used, Ordering::Release);
                }
                return Err(e);
            }
        };
        map[8..16].copy_from_slice(&self.run.to_le_bytes());
        map[16..20].copy_from_slice(&(shard as u32).to_le_bytes());
        map[20..28].copy_from_slice(&seq.to_le_bytes());
        map[..8].copy_from_slice(SEGMENT_MAGIC);
        let mut state = self.state.lock();
        state.segments.insert(
            seq,
            Segment {
                path,
                file,
                live: 0,
                full: None,
            },
        );
        state.chains[shard].push_back(seq);
        state.peak = state.peak.max(state.segments.len());
        Ok(Writer {
            seq,
            map,
            pos: SEGMENT_HEADER,
        })
    }

    /// Marks a writer's segment full (keeping its mapping), settling what can be settled.
    pub(super) fn retire(&self, writer: Writer) {
        let mut state = self.state.lock();
        if let Some(s) = state.segments.get_mut(&writer.seq) {
            s.full = Some(writer.map);
        }
        self.collect(&mut state);
    }

    /// Settles, shard by shard from the oldest, the full segments no live batch needs: some
    /// are kept for reuse ([`Spool::keeps`]; marked free, so a recovery ignores them), the
    /// rest deleted.
    pub(super) fn collect(&self, state: &mut State) {
        let mut freed = 0;
        let keep = self.keeps(state);
        let State {
            segments,
            chains,
            free,
            spare_bytes,
            closed,
            ..
        } = state;
        for chain in chains.iter_mut() {
            while let Some(&seq) = chain.front() {
                let done = segments
                    .get(&seq)
                    .is_none_or(|s| s.full.is_some() && s.live == 0);
                if !done {
                    break;
                }
                chain.pop_front();
                let Some(s) = segments.remove(&seq) else {
                    continue;
                };
                let size = s.file.metadata().map_or(0, |m| m.len() as usize);
                freed += size;
                // Kept while the files on disk stay within spool_max_bytes.
                let room =
                    self.used.load(Ordering::Acquire).saturating_sub(freed) + *spare_bytes + size
                        <= self.max_bytes;
                // A file whose sync failed is never reused (see `faults`).
                let trusted = !self.faults.is_poisoned(&s.path);
                match s.full {
                    Some(mut map) if !*closed && free.len() < keep && room && trusted => {
                        map[..8].copy_from_slice(FREE_MAGIC);
                        if self.sync != SpoolSync::None {
                            // Its free mark made durable with the next sync: a power loss
                            // then never brings back the batches it held.
                            self.marks.lock().add(s.path.clone(), s.file.clone());
                        }
                        *spare_bytes += size;
                        free.push(Free {
                            path: s.path,
                            file: s.file,
                            size,
                            map,
                        });
                    }
                    full => {
                        // Unmapped and closed before it is removed: Windows refuses to delete
                        // a mapped file, and lists a deleted one until its last handle closes
                        // (Unix unlinks it either way).
                        drop(full);
                        self.marks.lock().forget(&s.path);
                        drop(s.file);
                        let _ = std::fs::remove_file(&s.path);
                        self.faults.forget(&s.path);
                        self.dir_changes.note();
                    }
                }
            }
        }
        if freed > 0 {
            self.used.fetch_sub(freed, Ordering::AcqRel);
            self.disk_room.store(usize::MAX, Ordering::Release);
            let _guard = self.room_lock.lock();
            self.room.notify_all();
        }
    }

    /// Writes a record of the batch at `place` (its `Open` first, if not yet written, with
    /// the group tags the batch will carry). An error only when a segment cannot be made.
    pub(crate) fn record(
        &self,
        place: BatchPlace<'_>,
        log: &[u8],
        mark: &mut SpoolMark,
    ) -> Result<(), SpoolError> {
        let BatchPlace {
            shard,
            batch,
            dest,
            tags,
        } = place;
        if !mark.opened {
            let open = encode_open(dest, tags, None);
            self.append(shard, Kind::Open, self.run, batch, &[&open], Some(mark))
                .map_err(io(&self.dir, "cannot make a segment"))?;
            mark.opened = true;
            mark.open = Some(open);
        }
        self.append(shard, Kind::Record, self.run, batch, &[log], Some(mark))
            .map_err(io(&self.dir, "cannot make a segment"))?;
        Ok(())
    }

    /// Opens a replay's copy of a batch (before its records), naming where it came from.
    pub(crate) fn open_copy(
        &self,
        place: BatchPlace<'_>,
        copy_of: &CopyOrigin,
        mark: &mut SpoolMark,
    ) -> Result<(), SpoolError> {
        let BatchPlace {
            shard,
            batch,
            dest,
            tags,
        } = place;
        let open = encode_open(dest, tags, Some(copy_of));
        self.append(shard, Kind::Open, self.run, batch, &[&open], Some(mark))
            .map_err(io(&self.dir, "cannot make a segment"))?;
        mark.opened = true;
        mark.open = Some(open);
        Ok(())
    }

    /// Notes a batch's pack id as it seals (it may be sent from now on).
    pub(crate) fn sealed(&self, shard: usize, batch: u64, pack_id: &str, mark: &mut SpoolMark) {
        if let Some(file) = &mut mark.file {
            file.sealed(pack_id);
        } else if mark.opened {
            // A Sealed entry that finds no room is only a lost pack id: a replay would then
            // send the batch under a new one.
            let _ = self.append(
                shard,
                Kind::Sealed,
                self.run,
                batch,
                &[pack_id.as_bytes()],
                Some(mark),
            );
        }
    }

    /// Whether batches are synced as they seal (`spool_sync = batch`).
    pub(crate) fn syncs_batches(&self) -> bool {
        self.sync == SpoolSync::Batch
    }

    /// Makes the files a batch is in durable, and the directory's entries (`spool_sync =
    /// batch`), with the marks of batches settled since the last sync (so that a power loss
    /// sends again only batches settled since). False when a sync the batch needs failed: its
    /// files are then poisoned (never reused) and the shards' writers on them retired.
    pub(crate) fn sync_batch(&self, mark: &SpoolMark) -> bool {
        if self.sync != SpoolSync::Batch {
            return true;
        }
        let mut targets = Vec::with_capacity(mark.segments.len() + 2);
        if let Some(file) = &mark.file {
            targets.push((file.path.clone(), file.file.clone()));
        }
        {
            let state = self.state.lock();
            for seq in &mark.segments {
                if let Some(s) = state.segments.get(seq) {
                    targets.push((s.path.clone(), s.file.clone()));
                }
            }
        }
        let own = targets.len();
        for pending in self.marks.lock().take() {
            if !targets.iter().any(|(path, _)| *path == pending.0) {
                targets.push(pending);
            }
        }
        let synced = self.sync_files(&targets, own);
        self.settle_sync(synced)
    }

    /// Syncs `targets` and the directory's entries; false when one of the first `needed` or
    /// the directory failed (every failure is counted and its file poisoned). A file already
    /// poisoned, or being synced by another thread that fails, counts as failed: its syncs go
    /// one at a time through [`Faults::sync_file`](super::faults::Faults::sync_file).
    pub(super) fn sync_files(&self, targets: &[(PathBuf, Arc<File>)], needed: usize) -> bool {
        let mut ok = true;
        for (i, (path, file)) in targets.iter().enumerate() {
            if !self.faults.sync_file(&self.dir, path, file) {
                ok &= i >= needed;
            }
        }
        if let Err(e) = self.dir_changes.sync(&self.dir) {
            self.faults.entries_sync_failed(&self.dir, &self.dir, &e);
            ok = false;
        }
        ok
    }

    /// After a sync: healthy again, or the writers on poisoned files retired.
    pub(super) fn settle_sync(&self, ok: bool) -> bool {
        if ok {
            self.faults.synced();
        } else {
            self.retire_poisoned_writers();
        }
        ok
    }

    /// Retires every shard's writer whose segment's sync failed: no entry goes into a file
    /// that is not trusted.
    fn retire_poisoned_writers(&self) {
        for writer in &self.writers {
            let mut guard = writer.lock();
            let poisoned = guard.as_ref().is_some_and(|w| {
                let state = self.state.lock();
                state
                    .segments
                    .get(&w.seq)
                    .is_some_and(|s| self.faults.is_poisoned(&s.path))
            });
            if poisoned {
                if let Some(old) = guard.take() {
                    self.retire(old);
                }
            }
        }
    }

    /// Appends a compressed batch's `Open` entry (`open`) and its body to its shard's
    /// segments, noting them in `staged`.
    pub(super) fn append_body(
        &self,
        c: &Compressed<'_>,
        open: &[u8],
        staged: &mut SpoolMark,
    ) -> std::io::Result<()> {
        let head = body_head(c.codec, c.raw_len, c.pack_id);
        self.append(
            c.shard,
            Kind::Open,
            self.run,
            c.batch,
            &[open],
            Some(staged),
        )?;
        self.append(
            c.shard,
            Kind::Body,
            self.run,
            c.batch,
            &[&head, c.body],
            Some(staged),
        )?;
        Ok(())
    }

    /// A batch whose sync failed is written again, as its compressed body, in its shard's
    /// segments (a fresh one: the writers on the files that failed are retired) and synced,
    /// twice at most. The new entries belong to the batch from then on (settled with it; a
    /// recovery takes the body for its records). Answers whether a copy is durable.
    pub(crate) fn respool(&self, c: &Compressed<'_>, mark: &mut SpoolMark) -> bool {
        let open = match (&mark.open, self.files.get()) {
            (Some(open), _) => open.clone(),
            (None, Some(pool)) if mark.file.is_some() => pool.open.clone(),
            _ => return false,
        };
        for _ in 0..RESPOOL_ATTEMPTS {
            let mut staged = SpoolMark::default();
            let written = self.append_body(c, &open, &mut staged);
            mark.segments.extend(staged.segments.iter().copied());
            mark.opened = true;
            if written.is_err() {
                return false;
            }
            let targets: Vec<(PathBuf, Arc<File>)> = {
                let state = self.state.lock();
                staged
                    .segments
                    .iter()
                    .filter_map(|seq| state.segments.get(seq))
                    .map(|s| (s.path.clone(), s.file.clone()))
                    .collect()
            };
            let needed = targets.len();
            if self.settle_sync(self.sync_files(&targets, needed)) {
                return true;
            }
        }
        false
    }

    /// Syncs every segment, the live batch files, the marks of settled batches and the
    /// directory (the `interval` timer, and before old files are deleted or a replay ledger
    /// names their batches). False when a sync failed.
    pub(super) fn sync_all(&self) -> bool {
        let mut targets: Vec<(PathBuf, Arc<File>)> = self
            .state
            .lock()
            .segments
            .values()
            .map(|s| (s.path.clone(), s.file.clone()))
            .collect();
        if let Some(pool) = self.files.get() {
            let live = pool.live.lock();
            pool.ticks.fetch_add(1, Ordering::Relaxed);
            targets.extend(live.values().cloned());
        }
        for pending in self.marks.lock().take() {
            if !targets.iter().any(|(path, _)| *path == pending.0) {
                targets.push(pending);
            }
        }
        let needed = targets.len();
        let synced = self.sync_files(&targets, needed);
        let synced = self.settle_sync(synced);
        // Its directory sync may have made a removal durable that segments wait for.
        self.settle_after_dir_sync();
        synced
    }

    /// A `Done` entry went into segment `seq`: made durable with the next sync.
    fn note_mark_in_segment(&self, seq: u64) {
        let segment = self
            .state
            .lock()
            .segments
            .get(&seq)
            .map(|s| (s.path.clone(), s.file.clone()));
        if let Some((path, file)) = segment {
            self.marks.lock().add(path, file);
        }
    }

    /// A batch reached its final outcome: `Done` is written and its segments may go.
    pub(crate) fn done(&self, shard: usize, batch: u64, mark: &mut SpoolMark) {
        if let Some(file) = mark.file.take() {
            self.give_back(file);
        }
        if mark.waits_commit {
            self.settled_while_committing(batch);
        }
        if !mark.opened {
            return;
        }
        // No room for the Done entry: the batch would be sent once more after a crash, which
        // at-least-once allows. Written, it is made durable with the next batch's sync.
        if let Ok(seq) = self.append(shard, Kind::Done, self.run, batch, &[], None) {
            if self.sync == SpoolSync::Batch {
                self.note_mark_in_segment(seq);
            }
        }
        let mut state = self.state.lock();
        for seq in &mark.segments {
            if let Some(s) = state.segments.get_mut(seq) {
                s.live = s.live.saturating_sub(1);
            }
        }
        self.collect(&mut state);
    }
}
