//! Record sets: records encoded apart and queued all together or not at all (what the fronts'
//! `send_many` does). Encoding holds no lock, so a fill may run foreign code; queuing reserves
//! the bytes of every record at once (failing, or blocking up to `max_block_ms`, when the
//! buffer has no room for all of them) and then appends them in order under one shard lock.
//! Runs on the caller's thread.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::buffer::BatchBuf;
use super::clock;
use super::encode::{LogEncoder, RecordError};
use super::error::{ErrorKind, ProducerError};
use super::handle::Producer;
use super::report::Track;
use super::routing::SendOptions;

/// Records encoded apart, to be queued all together or not at all by
/// [`Producer::send_all`] (what the fronts' `send_many` does). Encoding runs no lock, so a
/// fill may run foreign code. A record whose fill fails leaves the set as it was and counts as
/// invalid.
pub struct RecordSet<'p> {
    producer: &'p Producer,
    buf: BatchBuf,
    /// Where each record ends in `buf`.
    ends: Vec<usize>,
}

impl RecordSet<'_> {
    /// Encodes one more record, stamped with the current time (or `time`, `time_ns` in
    /// `opts`). The record's fields come from `fill`.
    pub fn push<E, F>(&mut self, opts: &SendOptions<'_>, fill: F) -> Result<(), E>
    where
        E: From<RecordError>,
        F: FnOnce(&mut LogEncoder<'_>) -> Result<(), E>,
    {
        let config = &self.producer.inner.config;
        let (secs, nanos) = match opts.time {
            Some(t) => (t, opts.time_ns),
            None => {
                let (s, n) = clock::now_for(config.time_precision);
                (s, Some(opts.time_ns.unwrap_or(n)))
            }
        };
        let nanos = config.time_precision.apply(nanos);
        let mut enc = LogEncoder::begin(&mut self.buf, secs, nanos, config.key_policy);
        let written = fill(&mut enc).and_then(|()| Ok(enc.finish(config.batch_max_bytes)?));
        match written {
            Ok(_) => {
                self.ends.push(self.buf.len());
                Ok(())
            }
            Err(e) => {
                self.producer
                    .inner
                    .tally()
                    .invalid
                    .fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// Records in the set.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the set holds no record.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Each record's bytes, in order.
    fn logs(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let log = &self.buf[start..end];
            start = end;
            log
        })
    }
}

impl Producer {
    /// An empty [`RecordSet`]: records encoded apart with this producer's rules, to be queued
    /// together by [`send_all`](Producer::send_all).
    pub fn record_set(&self) -> RecordSet<'_> {
        RecordSet {
            producer: self,
            buf: BatchBuf::new(),
            ends: Vec::new(),
        }
    }

    /// Queues every record of `records` or none of them: their bytes are reserved together
    /// (failing at once, or blocking up to `max_block_ms`, when the buffer has no room for all
    /// of them), then they are appended in order. Returns how many were queued. A refused set
    /// counts every record in it as dropped.
    pub fn send_all(
        &self,
        records: &RecordSet<'_>,
        opts: &SendOptions<'_>,
    ) -> Result<usize, ProducerError> {
        let inner = &*self.inner;
        let count = records.len();
        if count == 0 {
            return Ok(0);
        }
        let refused = |e: ProducerError| {
            let counter = match e.kind() {
                ErrorKind::InvalidRecord => &inner.tally().invalid,
                _ => &inner.tally().dropped,
            };
            counter.fetch_add(count as u64, Ordering::Relaxed);
            e
        };
        if !inner.delivery.lifecycle.is_running() {
            return Err(refused(ProducerError::Closed));
        }
        self.ensure_owned().map_err(refused)?;
        let dest = if opts.is_default_destination() {
            None
        } else {
            Some(Arc::new(
                inner
                    .router
                    .destination(opts)
                    .map_err(|e| refused(e.into()))?,
            ))
        };
        let (_, after) = inner
            .accumulator
            .append(
                inner.budget(),
                &inner.delivery.lifecycle,
                records.logs(),
                records.buf.len(),
                &dest,
                Track::None,
            )
            .map_err(refused)?;
        inner.after_add(&dest, after);
        Ok(count)
    }
}
