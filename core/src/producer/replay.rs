//! The replay: what earlier producers left in the spool, sent again by this one, on a
//! `loghose-replay` thread of its own (this producer's slot first, then each orphan's), and
//! the watch for orphans while the producer runs.
//!
//! Each batch is spooled anew under this producer and queued for delivery as room in the
//! buffer allows (a spool larger than memory replays); a directory's old files are deleted
//! once every batch of it is in the new ones (and an orphan then let go). A batch that cannot
//! be spooled anew (the disk failed) is left in the old files, which are then kept: the next
//! producer on the directory sends it. Stops when the producer closes; what was not queued
//! stays in the old files, and each directory's replay ledger names what was, so that the next
//! producer sends those from this one's files only. Blocks only its own thread (on the
//! buffer's room).

use std::sync::atomic::Ordering;

use super::handle::Inner;
use super::spool::{Replay, Requeue, Spooling};

impl Inner {
    /// Sends again what `left` holds; ends when it is all queued or the producer stops.
    pub(super) fn replay(&self, left: Replay) {
        let inner = self;
        let tally = inner.tally();
        let lifecycle = &inner.delivery.lifecycle;
        left.run(
            || lifecycle.is_running(),
            |recovered| {
                let bytes: usize = recovered.records.iter().map(|r| r.len()).sum();
                if inner.budget().reserve_replay(bytes, lifecycle).is_err() {
                    return Requeue::Stopped;
                }
                match inner.accumulator.replay(recovered) {
                    Ok(batch) => {
                        tally.replayed_batches.fetch_add(1, Ordering::Relaxed);
                        tally
                            .replayed_records
                            .fetch_add(u64::from(batch.records), Ordering::Relaxed);
                        Requeue::Queued(batch)
                    }
                    Err(_) => {
                        // Still in the old files, which are kept.
                        inner.budget().release(bytes);
                        Requeue::Failed
                    }
                }
            },
            |batch| inner.dispatch(vec![batch]),
        );
    }

    /// Every `Spooling::ORPHAN_CHECK` while the producer runs: takes what producers that died
    /// under the same `spool_dir` left (a pre-fork server's worker killed beside this one) and
    /// replays it on a `loghose-replay` thread, as at open. One replay at a time: while one runs,
    /// the next check waits. The directories are scanned on the runtime's blocking pool. Holds
    /// the producer weakly; ends once it closes or is dropped.
    pub(super) async fn watch_orphans(weak: std::sync::Weak<Inner>) {
        loop {
            tokio::time::sleep(Spooling::ORPHAN_CHECK).await;
            {
                let Some(inner) = weak.upgrade() else { return };
                if !inner.delivery.lifecycle.is_running() {
                    return;
                }
                let mut slot = inner.replay.lock();
                match slot.as_ref() {
                    Some(thread) if !thread.is_finished() => continue,
                    Some(_) => {
                        if let Some(thread) = slot.take() {
                            let _ = thread.join();
                        }
                    }
                    None => {}
                }
            }
            let scanning = weak.clone();
            let adopted = tokio::task::spawn_blocking(move || {
                scanning
                    .upgrade()
                    .and_then(|inner| inner.accumulator.spooling().adopt_orphans())
            })
            .await;
            let Ok(Some(left)) = adopted else { continue };
            // Dropped unreplayed (the producer closed meanwhile), the directories are let go for
            // the next producer.
            let Some(inner) = weak.upgrade() else { return };
            let mut slot = inner.replay.lock();
            if !inner.delivery.lifecycle.is_running() {
                return;
            }
            if slot.is_some() {
                continue;
            }
            let replaying = inner.clone();
            *slot = crate::threads::spawn("loghose-replay", move || replaying.replay(left)).ok();
        }
    }
}
