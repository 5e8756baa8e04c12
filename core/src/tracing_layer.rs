//! `tracing` events into a producer (feature `tracing`): [`LoghoseLayer`] is a
//! `tracing_subscriber::Layer`, composed with the application's other layers and filters
//! (`tracing_subscriber::registry().with(layer.with_filter(LevelFilter::INFO))`).
//!
//! Each event becomes one log, written straight into the open batch (the producer's plain
//! add): `level`, `target`, `message`, `span` (the names of the spans it is in, outermost
//! first, joined by `:`), `module`, `file` and `line` when known, then the fields of those
//! spans (outermost first, as recorded when each span was made or later), then the event's own
//! fields, each as its `Debug` text (a `&str` or `String` as its text, without quotes).
//! Span fields are rendered once, when recorded, and kept in the span's extensions.
//!
//! The caller's thread only renders and queues; it waits only where the producer is
//! configured to (`max_block_ms` with a full buffer). A refused event (a full buffer, a
//! reserved or invalid key) is counted in the producer's stats (`dropped`, `invalid`) and said
//! once on stderr per kind of refusal: never silent, never a panic in the caller. Events on the
//! engine's I/O threads or an embedded emulator's are not sent (each would cost a request that
//! logs again). [`LoghoseLayer::guard`] answers a [`LogGuard`] that delivers what is pending
//! when dropped (at the end of `main`).

use std::cell::RefCell;
use std::fmt::Write as _;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

pub use crate::integration::LogGuard;
use crate::integration::Refusals;
use crate::producer::Producer;

/// A `tracing_subscriber::Layer` that sends every event it sees through a producer.
pub struct LoghoseLayer {
    producer: Arc<Producer>,
    refusals: Refusals,
}

impl LoghoseLayer {
    /// Sends every event this layer is given (filter it as any layer: `with_filter`).
    pub fn new(producer: Arc<Producer>) -> LoghoseLayer {
        LoghoseLayer {
            producer,
            refusals: Refusals::default(),
        }
    }

    /// The producer it sends through.
    pub fn producer(&self) -> &Arc<Producer> {
        &self.producer
    }

    /// A guard that delivers what the producer holds when dropped, within `close_timeout`.
    pub fn guard(&self, close_timeout: Duration) -> LogGuard {
        LogGuard::new(self.producer.clone(), close_timeout)
    }
}

/// Fields rendered into one text, each name's and value's place in it.
#[derive(Default)]
struct Fields {
    text: String,
    pairs: Vec<(Range<usize>, Range<usize>)>,
    /// Where the `message` field's value is, when there is one.
    message: Option<Range<usize>>,
}

impl Fields {
    fn push(&mut self, field: &Field, value: impl FnOnce(&mut String)) {
        let name_at = self.text.len();
        if field.name() != "message" {
            self.text.push_str(field.name());
        }
        let value_at = self.text.len();
        value(&mut self.text);
        if field.name() == "message" {
            self.message = Some(value_at..self.text.len());
        } else {
            self.pairs
                .push((name_at..value_at, value_at..self.text.len()));
        }
    }

    fn clear(&mut self) {
        self.text.clear();
        self.pairs.clear();
        self.message = None;
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.push(field, |text| text.push_str(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.push(field, |text| {
            let _ = write!(text, "{value:?}");
        });
    }
}

thread_local! {
    /// The event's fields and the spans' path, rendered before the add takes the batch
    /// (reused by each event of the thread).
    static EVENT: RefCell<(Fields, String)> = RefCell::new(Default::default());
}

impl<S> tracing_subscriber::Layer<S> for LoghoseLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        span.extensions_mut().insert(fields);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        match extensions.get_mut::<Fields>() {
            Some(fields) => values.record(fields),
            None => {
                let mut fields = Fields::default();
                values.record(&mut fields);
                extensions.insert(fields);
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        // What the engine's own threads log (the HTTP client sending a batch, the emulator
        // serving one) would come back as another request each: left to other layers.
        if crate::threads::is_engine_thread() {
            return;
        }
        let sent = EVENT.with(|cell| {
            // An event recorded while this thread's text is in use (a `Debug` that logs)
            // renders into fresh text rather than panicking.
            let mut fresh = <(Fields, String)>::default();
            let mut borrowed = cell.try_borrow_mut();
            let (fields, path) = match &mut borrowed {
                Ok(t) => {
                    let t: &mut (Fields, String) = t;
                    (&mut t.0, &mut t.1)
                }
                Err(_) => (&mut fresh.0, &mut fresh.1),
            };
            // The application's code (each value's `Debug`) runs here, before the add takes
            // the batch.
            fields.clear();
            event.record(fields);
            path.clear();
            let scope = ctx.event_scope(event);
            let spans: Vec<_> = scope.map(|s| s.from_root().collect()).unwrap_or_default();
            for span in &spans {
                if !path.is_empty() {
                    path.push(':');
                }
                path.push_str(span.name());
            }
            let meta = event.metadata();
            let line = meta
                .line()
                .map(|line| itoa::Buffer::new().format(line).to_owned());
            let fields = &*fields;
            let path = &*path;
            self.producer.add_with(|log| {
                log.field_str("level", meta.level().as_str())?;
                log.field_str("target", meta.target())?;
                if let Some(message) = &fields.message {
                    log.field_str("message", &fields.text[message.clone()])?;
                }
                if !path.is_empty() {
                    log.field_str("span", path)?;
                }
                if let Some(module) = meta.module_path() {
                    log.field_str("module", module)?;
                }
                if let Some(file) = meta.file() {
                    log.field_str("file", file)?;
                }
                if let Some(line) = &line {
                    log.field_str("line", line)?;
                }
                for span in &spans {
                    let extensions = span.extensions();
                    if let Some(own) = extensions.get::<Fields>() {
                        for (name, value) in &own.pairs {
                            log.field_str(&own.text[name.clone()], &own.text[value.clone()])?;
                        }
                    }
                }
                for (name, value) in &fields.pairs {
                    log.field_str(&fields.text[name.clone()], &fields.text[value.clone()])?;
                }
                Ok(())
            })
        });
        if let Err(e) = sent {
            self.refusals.refused(&e);
        }
    }
}
