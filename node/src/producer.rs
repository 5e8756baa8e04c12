//! `NativeProducer`: the engine's producer, held for the facade's `Producer`.
//!
//! - Nothing here blocks the JavaScript thread: sends only encode and queue; `flush` and
//!   `close` run on the libuv pool (`AsyncTask`) and resolve promises.
//! - Reports reach JavaScript through one weak ThreadsafeFunction call per batch of reports
//!   (an array of plain report objects, see [`views`](crate::views)), so an idle producer never keeps the process
//!   alive; the facade keeps the loop alive only while records are pending.
//! - When the environment (the main thread or a worker) exits, a cleanup hook closes the
//!   producer with a short bound and stops its threads; JavaScript is not called then.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use loghose::metrics::Family;
use loghose::producer::bindings::split_unix_seconds;
use loghose::producer::{
    CredentialsProvider, DeliveryReport as EngineReport, Producer, ProducerConfig, ProducerError,
    ReportCallback, SendOptions, Track,
};
use loghose::wire::sign::Credentials;
use napi::bindgen_prelude::{AsyncTask, Function, Unknown};
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi::{Env, Result, Task};
use napi_derive::napi;

use crate::errors::{RaiseIn, Raised};
use crate::fields;
use crate::record::{send_json, send_many_json};
use crate::views::{DeliveryReport, NativeCloseResult};

/// Credentials from a JavaScript provider, whose `getCredentials()` may be asynchronous: before
/// every attempt, an I/O thread asks JavaScript for a fresh answer (one request at a time,
/// through a weak thread-safe function, never waiting for the event loop) and signs with the
/// latest answer it has; only the very first attempt waits, up to
/// [`FIRST_CREDENTIALS_WAIT`], for the first answer. So a token rotated after a 401 is used
/// from the next retry on.
struct JsCredentials {
    state: Mutex<CredentialsState>,
    answered: Condvar,
    ask: Box<dyn Fn() + Send + Sync>,
}

#[derive(Default)]
struct CredentialsState {
    latest: Option<Credentials>,
    error: Option<String>,
    asked_at: Option<Instant>,
}

/// How long the first attempt waits for the provider's first answer.
const FIRST_CREDENTIALS_WAIT: Duration = Duration::from_secs(10);

impl JsCredentials {
    fn answer(&self, answer: std::result::Result<Credentials, String>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.asked_at = None;
        match answer {
            Ok(c) => {
                state.latest = Some(c);
                state.error = None;
            }
            Err(e) => state.error = Some(e),
        }
        self.answered.notify_all();
    }
}

impl CredentialsProvider for JsCredentials {
    fn credentials(&self) -> std::result::Result<Credentials, String> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // A request unanswered for long (the loop blocked, the provider hung) is asked again.
        if state
            .asked_at
            .is_none_or(|at| at.elapsed() > FIRST_CREDENTIALS_WAIT)
        {
            state.asked_at = Some(Instant::now());
            (self.ask)();
        }
        if state.latest.is_none() && state.error.is_none() {
            state = self
                .answered
                .wait_timeout_while(state, FIRST_CREDENTIALS_WAIT, |s| {
                    s.latest.is_none() && s.error.is_none()
                })
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        match (&state.latest, &state.error) {
            (Some(c), _) => Ok(c.clone()),
            (None, Some(e)) => Err(format!("the credentials provider failed: {e}")),
            (None, None) => Err("the credentials provider gave no answer within 10 s".into()),
        }
    }
}

/// The producer, shared with the environment's cleanup hook (which takes it at exit).
type Shared = Arc<Mutex<Option<Arc<Producer>>>>;

/// A record's options as `send` takes them (`{ topic, source, time, shardKey, project,
/// logstore }`, each optional; other properties are not read).
#[napi(object)]
#[derive(Default)]
pub struct NativeSendOptions {
    pub topic: Option<String>,
    pub source: Option<String>,
    /// Unix seconds, with a fraction.
    pub time: Option<f64>,
    pub shard_key: Option<String>,
    pub project: Option<String>,
    pub logstore: Option<String>,
}

/// The producer behind `require('loghose').Producer`.
#[napi]
pub struct NativeProducer {
    producer: Shared,
    credentials: Option<Arc<JsCredentials>>,
    /// The metrics as the close left them (what a scrape after the close reads).
    final_metrics: FinalMetrics,
}

type FinalMetrics = Arc<Mutex<Option<Vec<Family>>>>;

impl NativeProducer {
    fn flush_task(
        &self,
        env: &Env,
        timeout_ms: f64,
        until: FlushUntil,
    ) -> Result<AsyncTask<FlushTask>> {
        Ok(AsyncTask::new(FlushTask {
            producer: self.get().raise_in(env)?,
            timeout: Duration::from_secs_f64(timeout_ms.max(0.0) / 1000.0),
            until,
        }))
    }

    fn get(&self) -> std::result::Result<Arc<Producer>, Raised> {
        self.producer
            .lock()
            .ok()
            .and_then(|p| p.clone())
            .ok_or_else(|| Raised::new("ProducerClosedError", "the producer is closed"))
    }
}

#[napi]
impl NativeProducer {
    /// `configJson`: the engine's ProducerConfig as JSON; `onReports` receives arrays of
    /// delivery reports.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        config_json: String,
        on_reports: Function<Vec<DeliveryReport>, ()>,
        ask_credentials: Option<Function<bool, ()>>,
    ) -> Result<Self> {
        let config = ProducerConfig::from_json(&config_json).raise_in(&env)?;
        let tsfn = on_reports
            .build_threadsafe_function::<Vec<DeliveryReport>>()
            .weak::<true>()
            .callee_handled::<false>()
            .build()?;
        let callback: ReportCallback = Box::new(move |reports: &[Arc<EngineReport>]| {
            let items = reports.iter().map(|r| r.view().into()).collect();
            // After the environment is gone this returns Closing; there is nobody to tell.
            let _ = tsfn.call(items, ThreadsafeFunctionCallMode::NonBlocking);
        });
        let credentials = match ask_credentials {
            None => None,
            Some(ask) => {
                let ask = ask
                    .build_threadsafe_function::<bool>()
                    .weak::<true>()
                    .callee_handled::<false>()
                    .build()?;
                Some(Arc::new(JsCredentials {
                    state: Mutex::default(),
                    answered: Condvar::new(),
                    ask: Box::new(move || {
                        let _ = ask.call(true, ThreadsafeFunctionCallMode::NonBlocking);
                    }),
                }))
            }
        };
        let provider = credentials
            .clone()
            .map(|c| c as Arc<dyn CredentialsProvider>);
        let producer = Arc::new(Producer::build(config, provider, Some(callback)).raise_in(&env)?);
        let shared: Shared = Arc::new(Mutex::new(Some(producer)));
        let for_cleanup = shared.clone();
        env.add_env_cleanup_hook(for_cleanup, |shared| {
            // The environment is exiting (process end or worker termination): stop threads
            // within a short bound; JavaScript cannot run now.
            let taken = shared.lock().ok().and_then(|mut p| p.take());
            if let Some(p) = taken {
                p.close(Duration::from_millis(p.config().drop_timeout_ms));
            }
        })?;
        Ok(NativeProducer {
            producer: shared,
            credentials,
            final_metrics: FinalMetrics::default(),
        })
    }

    /// A JavaScript function `(text, count) => boolean` bound to this producer, with the
    /// `Uint32Array` its field lengths go in as its `lengths` property: the per-record fast
    /// path (see [`crate::fields`]). With `keys`, records of those keys: the text is
    /// their values alone (`Producer.sender`). Without, `register(keys)` names a key list that
    /// a send's `shape` then stands for (the facade's records of a known shape).
    #[napi(
        ts_return_type = "((text: string, count: number, time?: number | null, shape?: number, ticket?: number) => boolean) & { lengths: Uint32Array, register?: (keys: string[]) => number | null }"
    )]
    pub fn fields_sender(&self, env: Env, keys: Option<Vec<String>>) -> Result<Unknown<'_>> {
        fields::fields_sender(env, self.get().raise_in(&env)?, keys.unwrap_or_default())
    }

    /// Queues one record given as JSON (an object or `[key, value]` pairs), with its options
    /// (checked by the facade) and a ticket for its report: the general path behind `send`
    /// (see [`record`](crate::record)).
    #[napi]
    pub fn send_with(
        &self,
        env: Env,
        record_json: String,
        options: Option<NativeSendOptions>,
        ticket: Option<f64>,
    ) -> Result<()> {
        let options = options.unwrap_or_default();
        let (secs, nanos) = match options.time {
            None => (None, None),
            Some(t) => {
                let (s, n) = split_unix_seconds(t)
                    .map_err(|e| Raised::from(ProducerError::from(e)))
                    .raise_in(&env)?;
                (Some(s), Some(n))
            }
        };
        let opts = SendOptions {
            time: secs,
            time_ns: nanos,
            topic: options.topic.as_deref(),
            source: options.source.as_deref(),
            shard_key: options.shard_key.as_deref(),
            project: options.project.as_deref(),
            logstore: options.logstore.as_deref(),
        };
        let track = ticket.map_or(Track::None, |t| Track::Ticket(t as u64));
        self.get()
            .and_then(|p| send_json(&p, &record_json, &opts, track))
            .raise_in(&env)
    }

    /// The credentials provider's answer (JavaScript resolved `getCredentials()`).
    #[napi]
    pub fn set_credentials(
        &self,
        access_key_id: String,
        access_key_secret: String,
        security_token: Option<String>,
    ) {
        if let Some(c) = &self.credentials {
            c.answer(Ok(Credentials {
                access_key_id,
                access_key_secret,
                security_token: security_token.filter(|t| !t.is_empty()),
            }));
        }
    }

    /// The credentials provider failed (JavaScript's `getCredentials()` threw or rejected).
    #[napi]
    pub fn credentials_failed(&self, message: String) {
        if let Some(c) = &self.credentials {
            c.answer(Err(message));
        }
    }

    /// Queues the log of one pino JSON line (see [`pino`](crate::pino)).
    #[napi]
    pub fn send_pino_line(&self, env: Env, line: String) -> Result<()> {
        self.get()
            .and_then(|p| crate::pino::send_pino_line(&p, &line))
            .raise_in(&env)
    }

    /// Queues every record of a JSON array, or none; resolves how many were queued.
    #[napi]
    pub fn send_many_json(&self, env: Env, records_json: String) -> Result<u32> {
        self.get()
            .and_then(|p| send_many_json(&p, &records_json))
            .map(|n| n as u32)
            .raise_in(&env)
    }

    /// Records accepted and not yet at a final outcome.
    #[napi]
    pub fn pending(&self) -> f64 {
        self.get().map_or(0.0, |p| p.pending() as f64)
    }

    /// Records accepted so far.
    #[napi]
    pub fn accepted(&self) -> f64 {
        self.get().map_or(0.0, |p| p.accepted() as f64)
    }

    /// Seals everything and waits (on the libuv pool) up to `timeoutMs`; resolves with the
    /// records still pending.
    #[napi]
    pub fn flush(&self, env: Env, timeout_ms: f64) -> Result<AsyncTask<FlushTask>> {
        self.flush_task(&env, timeout_ms, FlushUntil::AllDelivered)
    }

    /// Seals everything and waits up to `timeoutMs` until as many records are settled as had
    /// been accepted when called (not for those added meanwhile); resolves how many short.
    #[napi]
    pub fn flush_accepted(&self, env: Env, timeout_ms: f64) -> Result<AsyncTask<FlushTask>> {
        self.flush_task(&env, timeout_ms, FlushUntil::AcceptedSettled)
    }

    /// `close`, blocking the JavaScript thread up to `timeoutMs`: for the moments nothing else
    /// may run (a signal that will end the process, the `exit` event). Returns the same answer.
    #[napi]
    pub fn close_sync(&self, timeout_ms: f64) -> NativeCloseResult {
        let producer = self.producer.lock().ok().and_then(|mut p| p.take());
        CloseTask {
            producer,
            final_metrics: self.final_metrics.clone(),
            timeout: Duration::from_secs_f64(timeout_ms.max(0.0) / 1000.0),
        }
        .run()
    }

    /// The `close_on_signal_ms` option (0 if the producer is closed).
    #[napi(getter)]
    pub fn close_on_signal_ms(&self) -> f64 {
        self.get()
            .map_or(0.0, |p| p.config().close_on_signal_ms as f64)
    }

    /// The endpoint's host and port, for monitoring (null once closed).
    #[napi(getter)]
    pub fn server_address(&self) -> Option<crate::views::ServerAddress> {
        let producer = self.get().ok()?;
        let (address, port) = producer.config().server_address().ok()?;
        Some(crate::views::ServerAddress {
            address,
            port: u32::from(port),
        })
    }

    /// Refuses new records, waits up to `timeoutMs`, abandons the rest; resolves with what
    /// was not delivered, the failed reports and the final counters.
    #[napi(ts_return_type = "Promise<NativeCloseResult>")]
    pub fn close(&self, timeout_ms: f64) -> AsyncTask<CloseTask> {
        let producer = self.producer.lock().ok().and_then(|mut p| p.take());
        AsyncTask::new(CloseTask {
            producer,
            final_metrics: self.final_metrics.clone(),
            timeout: Duration::from_secs_f64(timeout_ms.max(0.0) / 1000.0),
        })
    }

    /// The counters as the engine's JSON (`loghose::producer::Stats`, the form Python reads
    /// too; null once closed).
    #[napi]
    pub fn stats_json(&self) -> Option<String> {
        self.get().ok().map(|p| stats_json(&p))
    }

    /// A snapshot of the metrics (`loghose::metrics`) as JSON; once closed, the close's.
    #[napi]
    pub fn metrics_json(&self) -> Option<String> {
        self.metrics()
            .map(|families| loghose::metrics::to_json(&families))
    }

    /// The metrics in the Prometheus text format, each sample also carrying the constant labels
    /// `constLabels` (name, value, name, value...); once closed, the close's. A label name
    /// Prometheus refuses or the metrics already carry is a TypeError naming it.
    #[napi]
    pub fn metrics_text(&self, env: Env, const_labels: Vec<String>) -> Result<Option<String>> {
        let pairs: Vec<(String, String)> = const_labels
            .chunks(2)
            .map(|pair| (pair[0].clone(), pair.get(1).cloned().unwrap_or_default()))
            .collect();
        let Some(families) = self.metrics() else {
            return Ok(None);
        };
        loghose::metrics::encode_text_labelled(&families, &pairs)
            .map(Some)
            .map_err(Raised::type_error)
            .raise_in(&env)
    }
}

impl NativeProducer {
    /// A snapshot while open, the close's afterwards (none if the close has not finished).
    fn metrics(&self) -> Option<Vec<Family>> {
        match self.get() {
            Ok(p) => Some(p.metrics()),
            Err(_) => self.final_metrics.lock().ok().and_then(|m| m.clone()),
        }
    }
}

/// What a [`FlushTask`] waits for.
#[derive(Clone, Copy)]
pub(crate) enum FlushUntil {
    /// Nothing pending: resolves the records not delivered (pending, plus failed for good
    /// since the previous flush).
    AllDelivered,
    /// As many records settled as had been accepted when called: resolves how many short.
    AcceptedSettled,
}

/// `flush` and `flushAccepted` on the libuv pool.
pub struct FlushTask {
    producer: Arc<Producer>,
    timeout: Duration,
    until: FlushUntil,
}

impl Task for FlushTask {
    type Output = u64;
    type JsValue = f64;

    fn compute(&mut self) -> Result<u64> {
        Ok(match self.until {
            FlushUntil::AllDelivered => self.producer.flush_report(self.timeout).undelivered(),
            FlushUntil::AcceptedSettled => self.producer.flush_accepted(self.timeout),
        })
    }

    fn resolve(&mut self, _env: Env, output: u64) -> Result<f64> {
        Ok(output as f64)
    }
}

/// `close` on the libuv pool.
pub struct CloseTask {
    producer: Option<Arc<Producer>>,
    final_metrics: FinalMetrics,
    timeout: Duration,
}

impl CloseTask {
    /// Closes (on whichever thread calls it): what was not delivered, the failed reports, the
    /// final counters.
    fn run(&self) -> NativeCloseResult {
        let Some(p) = &self.producer else {
            return NativeCloseResult {
                undelivered: 0.0,
                kept: 0.0,
                kept_not_durable: 0.0,
                failed: Vec::new(),
                stats_json: None,
            };
        };
        let report = p.close(self.timeout);
        if let Ok(mut slot) = self.final_metrics.lock() {
            *slot = Some(p.metrics());
        }
        NativeCloseResult {
            undelivered: report.undelivered as f64,
            kept: report.kept as f64,
            kept_not_durable: report.kept_not_durable as f64,
            failed: report.failed.iter().map(|r| r.view().into()).collect(),
            stats_json: Some(stats_json(p)),
        }
    }
}

impl Task for CloseTask {
    type Output = NativeCloseResult;
    type JsValue = NativeCloseResult;

    fn compute(&mut self) -> Result<NativeCloseResult> {
        Ok(self.run())
    }

    fn resolve(&mut self, _env: Env, output: NativeCloseResult) -> Result<NativeCloseResult> {
        Ok(output)
    }
}

/// The counters as JSON (plain numbers, a bool and a map of them: serialization cannot fail).
fn stats_json(producer: &Producer) -> String {
    serde_json::to_string(&producer.stats()).unwrap_or_else(|_| "null".to_owned())
}
