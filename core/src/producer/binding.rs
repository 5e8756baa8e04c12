//! The adds the Python and Node bindings use besides the public ones, hidden from the crate's
//! documentation: a Rust application has [`Producer::send`], [`Producer::send_with`] and
//! [`Producer::add_with`]. Bring them in with `use loghose::producer::BindingAdds`.
//!
//! - [`BindingAdds::try_send_in_place`] / [`BindingAdds::try_add_in_place`]: an in-place add
//!   whose fill may decline when it meets a value it cannot read without running foreign code
//!   (a Python `__str__`, a JavaScript getter): nothing written, nothing counted, and the
//!   binding sends the record through the scratch path instead.
//! - [`BindingAdds::send_with_scratch`]: the record is encoded into a thread-local buffer with
//!   no lock held (so the fill may run foreign code, even code that sends through this
//!   producer), then copied into its batch.
//!
//! All run on the caller's thread, under the same rules as the public adds (refused when
//! closed or inherited, counted, never blocking unless `max_block_ms` allows it).

use std::cell::RefCell;
use std::sync::atomic::Ordering;

use super::accumulator::Filled;
use super::add::{Added, Prepared};
use super::buffer::BatchBuf;
use super::encode::{LogEncoder, RecordError};
use super::error::ProducerError;
use super::handle::Producer;
use super::report::{Completion, Track};
use super::routing::SendOptions;

thread_local! {
    static SCRATCH: RefCell<BatchBuf> = RefCell::new(BatchBuf::with_capacity(4096));
}

/// Why [`BindingAdds::send_with_scratch`] did not queue a record.
#[derive(Debug)]
pub enum ScratchError<E> {
    /// The producer refused it (closed, buffer full, invalid options).
    Producer(ProducerError),
    /// The fill failed: an invalid field, or the caller's own error.
    Fill(E),
}

impl<E: std::fmt::Display> std::fmt::Display for ScratchError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScratchError::Producer(e) => e.fmt(f),
            ScratchError::Fill(e) => e.fmt(f),
        }
    }
}

impl<E: std::fmt::Debug + std::fmt::Display> std::error::Error for ScratchError<E> {}

/// What an in-place add of a binding came to.
#[derive(Debug)]
pub enum InPlaceAdd {
    /// The record was queued; its completion when one was asked for.
    Queued(Option<Completion>),
    /// The fill declined: nothing was written or counted, and the binding sends the record
    /// through [`send_with_scratch`](BindingAdds::send_with_scratch) instead.
    Declined,
}

impl InPlaceAdd {
    /// Whether the record was queued (not declined).
    pub fn is_queued(&self) -> bool {
        matches!(self, InPlaceAdd::Queued(_))
    }

    fn from_added(added: Added<()>) -> InPlaceAdd {
        match added {
            Added::Queued(completion) => InPlaceAdd::Queued(completion),
            Added::Declined(()) => InPlaceAdd::Declined,
        }
    }
}

/// A binding's fill: `Ok(true)` wrote the record, `Ok(false)` declined it.
fn filled(written: bool) -> Filled<()> {
    if written {
        Filled::Written
    } else {
        Filled::Declined(())
    }
}

/// The bindings' adds (see the module text).
pub trait BindingAdds {
    /// [`Producer::send_with`] whose `fill` may decline with `Ok(false)`: what it wrote is
    /// rolled back, nothing is counted, and [`InPlaceAdd::Declined`] tells the caller to send
    /// the record through [`send_with_scratch`](BindingAdds::send_with_scratch) instead.
    fn try_send_in_place<F>(
        &self,
        opts: &SendOptions<'_>,
        track: Track,
        fill: F,
    ) -> Result<InPlaceAdd, ProducerError>
    where
        F: FnOnce(&mut LogEncoder<'_>) -> Result<bool, RecordError>;

    /// [`Producer::add_with`] whose `fill` may decline, as with
    /// [`try_send_in_place`](BindingAdds::try_send_in_place) (a plain add has no completion).
    fn try_add_in_place<F>(&self, fill: F) -> Result<InPlaceAdd, ProducerError>
    where
        F: FnOnce(&mut LogEncoder<'_>) -> Result<bool, RecordError>;

    /// [`Producer::send_with`] for a `fill` that may run foreign code or stop with an error of
    /// the caller's own (`E`, which the encoder's [`RecordError`]s convert into). Any error
    /// from `fill` counts the record as invalid and comes back as [`ScratchError::Fill`].
    fn send_with_scratch<E, F>(
        &self,
        opts: &SendOptions<'_>,
        track: Track,
        fill: F,
    ) -> Result<Option<Completion>, ScratchError<E>>
    where
        E: From<RecordError>,
        F: FnOnce(&mut LogEncoder<'_>) -> Result<(), E>;
}

impl BindingAdds for Producer {
    #[inline]
    fn try_send_in_place<F>(
        &self,
        opts: &SendOptions<'_>,
        track: Track,
        fill: F,
    ) -> Result<InPlaceAdd, ProducerError>
    where
        F: FnOnce(&mut LogEncoder<'_>) -> Result<bool, RecordError>,
    {
        let prepared = self.prepare(opts)?;
        let added = self.add_in_place(prepared, track, |enc| fill(enc).map(filled))?;
        Ok(InPlaceAdd::from_added(added))
    }

    #[inline]
    fn try_add_in_place<F>(&self, fill: F) -> Result<InPlaceAdd, ProducerError>
    where
        F: FnOnce(&mut LogEncoder<'_>) -> Result<bool, RecordError>,
    {
        let prepared = self.prepare_plain()?;
        let added = self.add_in_place(prepared, Track::None, |enc| fill(enc).map(filled))?;
        Ok(InPlaceAdd::from_added(added))
    }

    fn send_with_scratch<E, F>(
        &self,
        opts: &SendOptions<'_>,
        track: Track,
        fill: F,
    ) -> Result<Option<Completion>, ScratchError<E>>
    where
        E: From<RecordError>,
        F: FnOnce(&mut LogEncoder<'_>) -> Result<(), E>,
    {
        let inner = &*self.inner;
        let Prepared {
            dest,
            seconds: secs,
            nanos,
        } = self.prepare(opts).map_err(ScratchError::Producer)?;
        let result = SCRATCH.with(|scratch| {
            // A fill that re-enters the producer finds the scratch buffer busy and gets a
            // buffer of its own.
            let mut own = BatchBuf::new();
            let mut borrowed = scratch.try_borrow_mut();
            let buf = match borrowed.as_deref_mut() {
                Ok(b) => b,
                Err(_) => &mut own,
            };
            buf.clear();
            let mut enc = LogEncoder::begin(buf, secs, nanos, inner.config.key_policy);
            fill(&mut enc)?;
            enc.finish(inner.config.batch_max_bytes)?;
            Ok::<_, E>(self.append(buf, dest, track))
        });
        match result {
            Ok(appended) => appended.map_err(ScratchError::Producer),
            Err(e) => {
                inner.tally().invalid.fetch_add(1, Ordering::Relaxed);
                Err(ScratchError::Fill(e))
            }
        }
    }
}
