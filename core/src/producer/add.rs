//! The ways to add a record, on the caller's thread: [`Producer::send`] (text fields),
//! [`Producer::send_with_completion`] (and a completion to wait on), [`Producer::send_with`]
//! (the general add: a fill writes the fields straight into the batch, with per-record options
//! and tracking) and [`Producer::add_with`] (the plain add: the producer's own destination,
//! timed now, nothing tracked). The bindings' variants, which may decline or run foreign code,
//! are in [`binding`](super::binding).
//!
//! Every add resolves its destination and time first (`prepare`), refuses when the producer is
//! closed (counted as dropped) or inherited through `fork`, and never blocks unless the budget
//! is full and `max_block_ms` allows it.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::accumulator::{Filled, InPlace};
use super::clock;
use super::encode::{LogEncoder, RecordError};
use super::error::ProducerError;
use super::handle::Producer;
use super::report::{Completion, Track};
use super::routing::Destination;
use super::routing::SendOptions;

/// What every add resolves first: the record's destination (`None`: the producer's own) and
/// its time (seconds, and the sub-second part at the configured precision).
pub(super) struct Prepared {
    pub(super) dest: Option<Arc<Destination>>,
    pub(super) seconds: u32,
    pub(super) nanos: Option<u32>,
}

/// What an in-place add came to: the record queued (with its completion when one was asked
/// for), or its fill declined it (`D` says why) and nothing was queued or counted.
pub(super) enum Added<D> {
    /// Accepted into its batch.
    Queued(Option<Completion>),
    /// Declined by its fill.
    Declined(D),
}

impl Producer {
    /// Sends one record of text fields (fire and forget; the outcome arrives in reports and
    /// stats).
    pub fn send<K: AsRef<str>, V: AsRef<str>>(
        &self,
        fields: &[(K, V)],
        opts: &SendOptions<'_>,
    ) -> Result<(), ProducerError> {
        self.send_with(opts, Track::None, |enc| {
            for (k, v) in fields {
                enc.field_str(k.as_ref(), v.as_ref())?;
            }
            Ok(())
        })
        .map(drop)
    }

    /// Sends one record and returns a completion resolved with its batch's report.
    pub fn send_with_completion<K: AsRef<str>, V: AsRef<str>>(
        &self,
        fields: &[(K, V)],
        opts: &SendOptions<'_>,
    ) -> Result<Completion, ProducerError> {
        let completion = self.send_with(opts, Track::Completion, |enc| {
            for (k, v) in fields {
                enc.field_str(k.as_ref(), v.as_ref())?;
            }
            Ok(())
        })?;
        completion.ok_or(ProducerError::Closed)
    }

    /// The general add: `fill` writes the record's fields straight into the open batch of
    /// its destination (the bindings iterate their own dicts and objects here, with no
    /// intermediate copy).
    ///
    /// `fill` runs while one of the producer's accumulator shards is locked: it must not call
    /// into this producer, block, or run code that might (a binding whose values could run
    /// foreign code uses [`send_with_scratch`](super::binding::BindingAdds::send_with_scratch)). A failed `fill`
    /// leaves the batch exactly as it was.
    pub fn send_with<F>(
        &self,
        opts: &SendOptions<'_>,
        track: Track,
        fill: F,
    ) -> Result<Option<Completion>, ProducerError>
    where
        F: FnOnce(&mut LogEncoder<'_>) -> Result<(), RecordError>,
    {
        let prepared = self.prepare(opts)?;
        let filled = |enc: &mut LogEncoder<'_>| fill(enc).map(|()| Filled::<Infallible>::Written);
        match self.add_in_place(prepared, track, filled)? {
            Added::Queued(completion) => Ok(completion),
            Added::Declined(never) => match never {},
        }
    }

    /// The plain add: `fill` writes the record's fields straight into the producer's own
    /// destination's open batch, timed now, its outcome counted in stats and reports (no
    /// completion). What [`send_with`](Producer::send_with) does with default options and
    /// [`Track::None`], without reading either: the path of every add that names no option
    /// (Python's `send(d)`, Node's `send` of plain fields). Same rules for `fill`.
    pub fn add_with<F>(&self, fill: F) -> Result<(), ProducerError>
    where
        F: FnOnce(&mut LogEncoder<'_>) -> Result<(), RecordError>,
    {
        let prepared = self.prepare_plain()?;
        let filled = |enc: &mut LogEncoder<'_>| fill(enc).map(|()| Filled::<Infallible>::Written);
        match self.add_in_place(prepared, Track::None, filled)? {
            Added::Queued(_) => Ok(()),
            Added::Declined(never) => match never {},
        }
    }

    /// The in-place add behind `send_with`, `try_send_in_place` and the plain adds.
    #[inline]
    pub(super) fn add_in_place<D, F>(
        &self,
        Prepared {
            dest,
            seconds: secs,
            nanos,
        }: Prepared,
        track: Track,
        fill: F,
    ) -> Result<Added<D>, ProducerError>
    where
        F: FnOnce(&mut LogEncoder<'_>) -> Result<Filled<D>, RecordError>,
    {
        let inner = &*self.inner;
        let added = inner
            .accumulator
            .add_in_place(inner.budget(), &dest, secs, nanos, track, fill);
        match added {
            InPlace::Plain => Ok(Added::Queued(None)),
            InPlace::Added(completion, after) => {
                inner.after_add(&dest, after);
                Ok(Added::Queued(completion))
            }
            InPlace::Moved(log, after) => {
                inner.after_add(&dest, after);
                self.append(&log, dest, track).map(Added::Queued)
            }
            InPlace::Declined(declined) => Ok(Added::Declined(declined)),
            InPlace::Invalid(e) => {
                inner.tally().invalid.fetch_add(1, Ordering::Relaxed);
                Err(e.into())
            }
        }
    }

    /// What every add does first: refuses when closed, resolves the destination, takes the
    /// time.
    #[inline]
    pub(super) fn prepare(&self, opts: &SendOptions<'_>) -> Result<Prepared, ProducerError> {
        let inner = &*self.inner;
        self.check_open()?;
        let dest = if opts.is_default_destination() {
            None
        } else {
            match inner.router.destination(opts) {
                Ok(d) => Some(Arc::new(d)),
                Err(e) => {
                    inner.tally().invalid.fetch_add(1, Ordering::Relaxed);
                    return Err(e.into());
                }
            }
        };
        let (secs, nanos) = match opts.time {
            Some(t) => (t, opts.time_ns),
            None => {
                let (s, n) = clock::now_for(inner.config.time_precision);
                (s, Some(opts.time_ns.unwrap_or(n)))
            }
        };
        let nanos = inner.config.time_precision.apply(nanos);
        Ok(Prepared {
            dest,
            seconds: secs,
            nanos,
        })
    }

    /// Refuses an add when the producer is not running (counted as dropped) or was inherited
    /// through `fork`.
    #[inline]
    pub(super) fn check_open(&self) -> Result<(), ProducerError> {
        if !self.inner.delivery.lifecycle.is_running() {
            self.inner.tally().dropped.fetch_add(1, Ordering::Relaxed);
            return Err(ProducerError::Closed);
        }
        self.ensure_owned()
    }

    /// [`prepare`](Self::prepare) for the plain add: the producer's own destination, the
    /// time now at the configured precision.
    #[inline]
    pub(super) fn prepare_plain(&self) -> Result<Prepared, ProducerError> {
        let inner = &*self.inner;
        self.check_open()?;
        let precision = inner.config.time_precision;
        let (secs, nanos) = clock::now_for(precision);
        Ok(Prepared {
            dest: None,
            seconds: secs,
            nanos: precision.apply(Some(nanos)),
        })
    }

    /// Appends an encoded record to its batch (see [`Accumulator::append`]).
    pub(super) fn append(
        &self,
        log: &[u8],
        dest: Option<Arc<Destination>>,
        track: Track,
    ) -> Result<Option<Completion>, ProducerError> {
        let inner = &*self.inner;
        let appended = inner.accumulator.append(
            inner.budget(),
            &inner.delivery.lifecycle,
            [log],
            log.len(),
            &dest,
            track,
        );
        match appended {
            Ok((completion, after)) => {
                inner.after_add(&dest, after);
                Ok(completion)
            }
            Err(e) => {
                inner.tally().dropped.fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }
}
