//! The Node.js addon: the thin napi-rs layer between JavaScript and the engine.
//!
//! Contracts:
//!
//! - Nothing here blocks the JavaScript thread: `send` only encodes and queues; `flush` and
//!   `close` run on the libuv pool (`AsyncTask`) and resolve promises.
//! - Reports reach JavaScript through one weak ThreadsafeFunction call per batch of reports
//!   (a JSON array), so an idle producer never keeps the process alive; the JavaScript facade
//!   keeps the loop alive only while records are pending.
//! - When the environment (the main thread or a worker) exits, a cleanup hook closes the
//!   producer with a short bound and stops its threads; JavaScript is not called then.
//! - The per-record path (`fieldsSender`) is a raw Node-API function bound to its producer: the
//!   record's keys and values arrive as one string, their lengths in a `Uint32Array` shared
//!   with the facade, and are written straight into the batch; no lock, no allocation.
//! - Errors carry their class as a `Code|message` prefix that the facade turns into `Error`
//!   subclasses with `code`.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loghose::emulator::{Emulator, EmulatorConfig};
use loghose::producer::{
    DeliveryReport, Producer, ProducerConfig, ProducerError, RecordError, ReportCallback,
    SendOptions, Track,
};
use napi::bindgen_prelude::{AsyncTask, External, Function, Unknown};
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi::{Env, Error, Result, Status, Task};
use napi_derive::napi;

fn fail(code: &str, message: impl std::fmt::Display) -> Error {
    Error::new(Status::GenericFailure, format!("{code}|{message}"))
}

fn producer_error(e: ProducerError) -> Error {
    fail(e.class_name(), e)
}

#[derive(serde::Serialize)]
struct ReportJson<'a> {
    #[serde(rename = "batchId")]
    batch_id: u64,
    project: &'a str,
    logstore: &'a str,
    delivered: bool,
    code: Option<&'a str>,
    message: Option<&'a str>,
    #[serde(rename = "httpStatus")]
    http_status: Option<u16>,
    attempts: u32,
    #[serde(rename = "requestId")]
    request_id: Option<&'a str>,
    records: u32,
    #[serde(rename = "rawBytes")]
    raw_bytes: usize,
    #[serde(rename = "compressedBytes")]
    compressed_bytes: usize,
    #[serde(rename = "latencyMs")]
    latency_ms: f64,
    #[serde(rename = "packId")]
    pack_id: &'a str,
    tickets: &'a [u64],
}

fn report_json(r: &DeliveryReport) -> ReportJson<'_> {
    let (delivered, code, message, http_status) = r.outcome_parts();
    ReportJson {
        batch_id: r.batch_id,
        project: &r.project,
        logstore: &r.logstore,
        delivered,
        code,
        message,
        http_status,
        attempts: r.attempts,
        request_id: r.request_id.as_deref(),
        records: r.records,
        raw_bytes: r.raw_bytes,
        compressed_bytes: r.compressed_bytes,
        latency_ms: r.latency.as_secs_f64() * 1000.0,
        pack_id: &r.pack_id,
        tickets: &r.tickets,
    }
}

/// A JSON string, borrowed when it has no escapes.
struct Text<'de>(std::borrow::Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A field value as JavaScript may give it: text, number or boolean (converted as `String()`
/// would); anything else is refused.
enum Scalar<'de> {
    Text(std::borrow::Cow<'de, str>),
    Converted(String),
    Refused(&'static str),
}

impl<'de> serde::Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Scalar<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Text(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Converted(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Converted(v))
            }
            fn visit_bool<E>(self, v: bool) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Converted(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Converted(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Converted(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Converted(v.to_string()))
            }
            fn visit_unit<E>(self) -> std::result::Result<Scalar<'de>, E> {
                Ok(Scalar::Refused("null"))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Scalar<'de>, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Scalar::Refused("object"))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Scalar<'de>, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Scalar::Refused("array"))
            }
        }
        d.deserialize_any(V)
    }
}

/// Why a JSON record could not be encoded.
enum JsonRecordError {
    Type(String),
    Record(RecordError),
}

/// Encodes a record given as JSON — an object, or an array of `[key, value]` pairs — straight
/// into the engine's encoder, in order.
fn encode_json(
    enc: &mut loghose::producer::LogEncoder<'_>,
    json: &str,
) -> std::result::Result<(), JsonRecordError> {
    use serde::de::{Deserializer as _, MapAccess, SeqAccess, Visitor};
    struct Record<'e, 'b> {
        enc: &'e mut loghose::producer::LogEncoder<'b>,
        failure: Option<JsonRecordError>,
    }
    impl Record<'_, '_> {
        fn field(&mut self, key: &str, value: Scalar<'_>) -> bool {
            let result = match value {
                Scalar::Text(v) => self.enc.field_str(key, &v),
                Scalar::Converted(v) => self.enc.field_str(key, &v),
                Scalar::Refused(kind) => {
                    self.failure = Some(JsonRecordError::Type(format!(
                        "value of field {key:?} must be a string, Buffer, number or boolean, not {kind}"
                    )));
                    return false;
                }
            };
            match result {
                Ok(()) => true,
                Err(e) => {
                    self.failure = Some(JsonRecordError::Record(e));
                    false
                }
            }
        }
    }
    impl<'de> Visitor<'de> for &mut Record<'_, '_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object or an array of [key, value] pairs")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
            while let Some(key) = map.next_key::<Text<'de>>()? {
                let value = map.next_value::<Scalar<'de>>()?;
                if !self.field(&key.0, value) {
                    return Err(serde::de::Error::custom("stop"));
                }
            }
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
            while let Some((key, value)) = seq.next_element::<(Text<'de>, Scalar<'de>)>()? {
                if !self.field(&key.0, value) {
                    return Err(serde::de::Error::custom("stop"));
                }
            }
            Ok(())
        }
    }
    let mut record = Record { enc, failure: None };
    let mut de = serde_json::Deserializer::from_str(json);
    let parsed = de.deserialize_any(&mut record);
    if let Some(failure) = record.failure {
        return Err(failure);
    }
    parsed.map_err(|e| {
        JsonRecordError::Type(format!(
            "contents must be an object or an array of [key, value] pairs: {e}"
        ))
    })
}

type Shared = Arc<Mutex<Option<Arc<Producer>>>>;

/// Queues one record given as JSON.
fn send_json(producer: &Producer, json: &str, opts: &SendOptions<'_>, track: Track) -> Result<()> {
    let mut failure = None;
    let result = producer.send_with(opts, track, |enc| match encode_json(enc, json) {
        Ok(()) => Ok(()),
        Err(JsonRecordError::Record(e)) => Err(e),
        Err(JsonRecordError::Type(message)) => {
            failure = Some(message);
            Err(RecordError::Empty)
        }
    });
    match (result, failure) {
        (_, Some(message)) => Err(fail("TypeError", message)),
        (Ok(_), None) => Ok(()),
        (Err(e), None) => Err(producer_error(e)),
    }
}

/// The producer behind `require('loghose').Producer`.
#[napi]
pub struct NativeProducer {
    producer: Shared,
}

impl NativeProducer {
    fn send_record(&self, json: &str, opts: &SendOptions<'_>, track: Track) -> Result<()> {
        let producer = self.get()?;
        send_json(&producer, json, opts, track)
    }

    fn get(&self) -> Result<Arc<Producer>> {
        self.producer
            .lock()
            .ok()
            .and_then(|p| p.clone())
            .ok_or_else(|| fail("ProducerClosedError", "the producer is closed"))
    }
}

#[napi]
impl NativeProducer {
    /// `configJson`: the engine's ProducerConfig as JSON; `onReports` receives JSON arrays of
    /// delivery reports.
    #[napi(constructor)]
    pub fn new(env: Env, config_json: String, on_reports: Function<String, ()>) -> Result<Self> {
        let config: ProducerConfig =
            serde_json::from_str(&config_json).map_err(|e| fail("ConfigError", e))?;
        let tsfn = on_reports
            .build_threadsafe_function::<String>()
            .weak::<true>()
            .callee_handled::<false>()
            .build()?;
        let callback: ReportCallback = Box::new(move |reports: &[Arc<DeliveryReport>]| {
            let items: Vec<ReportJson<'_>> = reports.iter().map(|r| report_json(r)).collect();
            if let Ok(json) = serde_json::to_string(&items) {
                // After the environment is gone this returns Closing; there is nobody to tell.
                let _ = tsfn.call(json, ThreadsafeFunctionCallMode::NonBlocking);
            }
        });
        let producer =
            Arc::new(Producer::build(config, None, Some(callback)).map_err(producer_error)?);
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
        Ok(NativeProducer { producer: shared })
    }

    /// Queues one record given as JSON (an object or `[key, value]` pairs).
    #[napi]
    pub fn send(&self, record_json: String) -> Result<()> {
        self.send_record(&record_json, &SendOptions::default(), Track::None)
    }

    /// A handle for [`producer_send`]: calling a plain function with an external costs far
    /// less than a class method call, which matters on the per-record path. The handle holds
    /// the engine producer itself, so a send takes no lock; once the producer is closed (by
    /// `close`, or by the environment's cleanup) the engine refuses records with
    /// `ProducerClosedError`.
    #[napi]
    pub fn handle(&self) -> Result<External<SendHandle>> {
        Ok(External::new(SendHandle {
            producer: self.get()?,
        }))
    }

    /// A JavaScript function `(text, count) => boolean` bound to this producer, with the
    /// `Uint32Array` its field lengths go in as its `lengths` property: the per-record fast
    /// path (see [`send_fields_callback`]). Like the handle, it holds the engine producer
    /// itself, so a send takes no lock and is refused once the producer is closed.
    #[napi(
        ts_return_type = "((text: string, count: number) => boolean) & { lengths: Uint32Array }"
    )]
    pub fn fields_sender(&self, env: Env) -> Result<Unknown<'_>> {
        let sender = Rc::new(FieldsSender::new(self.get()?));
        let lengths = sender.lengths;
        let failed = || Error::from_reason("LoghoseError|could not create the send function");
        let env = env.raw();
        let name = "sendFields";
        let mut function = std::ptr::null_mut();
        let mut buffer = std::ptr::null_mut();
        let mut array = std::ptr::null_mut();
        let ok = |status| status == napi::sys::Status::napi_ok;
        // SAFETY: each `Rc::into_raw` share is handed to exactly one finaliser, which releases
        // it; a share whose owner was not made whole is released here (that owner is garbage,
        // never called). The lengths' memory lives in the sender, so it outlives both the
        // function and the array buffer.
        unsafe {
            let share = Rc::into_raw(sender.clone()).cast_mut();
            if !ok(napi::sys::napi_create_function(
                env,
                name.as_ptr().cast(),
                name.len() as isize,
                Some(send_fields_callback),
                share.cast(),
                &mut function,
            )) || !ok(napi::sys::napi_add_finalizer(
                env,
                function,
                std::ptr::null_mut(),
                Some(release_fields_sender),
                share.cast(),
                std::ptr::null_mut(),
            )) {
                drop(Rc::from_raw(share));
                return Err(failed());
            }
            let share = Rc::into_raw(sender).cast_mut();
            if !ok(napi::sys::napi_create_external_arraybuffer(
                env,
                lengths.cast(),
                2 * MAX_FAST_FIELDS * std::mem::size_of::<u32>(),
                Some(release_fields_sender),
                share.cast(),
                &mut buffer,
            )) {
                drop(Rc::from_raw(share));
                return Err(failed());
            }
            if !ok(napi::sys::napi_create_typedarray(
                env,
                napi::sys::TypedarrayType::uint32_array,
                2 * MAX_FAST_FIELDS,
                buffer,
                0,
                &mut array,
            )) || !ok(napi::sys::napi_set_named_property(
                env,
                function,
                c"lengths".as_ptr(),
                array,
            )) {
                return Err(failed());
            }
            Ok(Unknown::from_raw_unchecked(env, function))
        }
    }

    /// Queues one record with per-record options and an optional ticket for its report.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn send_with(
        &self,
        record_json: String,
        topic: Option<String>,
        source: Option<String>,
        time: Option<f64>,
        shard_key: Option<String>,
        project: Option<String>,
        logstore: Option<String>,
        ticket: Option<f64>,
    ) -> Result<()> {
        let (secs, nanos) = match time {
            None => (None, None),
            Some(t) if (0.0..4_294_967_296.0).contains(&t) => {
                (Some(t.floor() as u32), Some(((t - t.floor()) * 1e9) as u32))
            }
            Some(t) => {
                return Err(fail(
                    "TypeError",
                    format!("time {t} is outside unix seconds 0..2^32"),
                ))
            }
        };
        let opts = SendOptions {
            time: secs,
            time_ns: nanos,
            topic: topic.as_deref(),
            source: source.as_deref(),
            shard_key: shard_key.as_deref(),
            project: project.as_deref(),
            logstore: logstore.as_deref(),
        };
        let track = ticket.map_or(Track::None, |t| Track::Ticket(t as u64));
        self.send_record(&record_json, &opts, track)
    }

    /// Records accepted and not yet at a final outcome.
    #[napi]
    pub fn pending(&self) -> f64 {
        self.get().map_or(0.0, |p| p.pending() as f64)
    }

    /// Seals everything and waits (on the libuv pool) up to `timeoutMs`; resolves with the
    /// records still pending.
    #[napi]
    pub fn flush(&self, timeout_ms: f64) -> Result<AsyncTask<FlushTask>> {
        Ok(AsyncTask::new(FlushTask {
            producer: self.get()?,
            timeout: Duration::from_secs_f64(timeout_ms.max(0.0) / 1000.0),
        }))
    }

    /// Refuses new records, waits up to `timeoutMs`, abandons the rest; resolves with JSON
    /// `{undelivered, failed: [reports]}`.
    #[napi]
    pub fn close(&self, timeout_ms: f64) -> AsyncTask<CloseTask> {
        let producer = self.producer.lock().ok().and_then(|mut p| p.take());
        AsyncTask::new(CloseTask {
            producer,
            timeout: Duration::from_secs_f64(timeout_ms.max(0.0) / 1000.0),
        })
    }

    /// The counters, as JSON.
    #[napi]
    pub fn stats_json(&self) -> String {
        self.get()
            .map(|p| serde_json::to_string(&p.stats()).unwrap_or_default())
            .unwrap_or_else(|_| "null".into())
    }
}

/// What [`NativeProducer::handle`] wraps.
pub struct SendHandle {
    producer: Arc<Producer>,
}

/// The per-record fast path: queues one record given as JSON through a producer handle.
#[napi]
pub fn producer_send(handle: &External<SendHandle>, record_json: String) -> Result<()> {
    send_json(
        &handle.producer,
        &record_json,
        &SendOptions::default(),
        Track::None,
    )
}

/// What a fields sender (see [`NativeProducer::fields_sender`]) is bound to: the engine
/// producer, the buffer the record text is copied into, and the field lengths the facade writes
/// before each call (shared with JavaScript as a `Uint32Array` over the same memory). Used only
/// on the JavaScript thread of the environment that created it (functions and array buffers do
/// not cross isolates); owned jointly by the function and the array buffer, each releasing its
/// share when collected.
struct FieldsSender {
    producer: Arc<Producer>,
    text: RefCell<Vec<u8>>,
    /// `2 * MAX_FAST_FIELDS` lengths in UTF-16 code units: key, value, key, value, …
    lengths: *mut u32,
}

/// Fields per record on the fast path; larger records go as JSON.
const MAX_FAST_FIELDS: usize = 256;

/// The record-text buffer a fields sender starts with (S1's larger record is about 700 bytes).
const TEXT_CAPACITY: usize = 16 << 10;

impl FieldsSender {
    fn new(producer: Arc<Producer>) -> Self {
        let lengths = Box::into_raw(vec![0u32; 2 * MAX_FAST_FIELDS].into_boxed_slice());
        FieldsSender {
            producer,
            text: RefCell::new(Vec::with_capacity(TEXT_CAPACITY)),
            lengths: lengths.cast(),
        }
    }

    /// The first `n` lengths the facade wrote.
    fn lengths(&self, n: usize) -> &[u32] {
        // SAFETY: `lengths` holds `2 * MAX_FAST_FIELDS` initialised u32s (callers keep `n`
        // within that) for as long as `self` lives; JavaScript writes them only between calls,
        // on this thread, so nothing changes them while this slice is read.
        unsafe { std::slice::from_raw_parts(self.lengths, n.min(2 * MAX_FAST_FIELDS)) }
    }
}

impl Drop for FieldsSender {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` as a boxed slice of this length, freed once, here.
        drop(unsafe {
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.lengths,
                2 * MAX_FAST_FIELDS,
            ))
        });
    }
}

/// The per-record fast path for plain records, as a raw Node-API callback bound to one producer
/// through the function's data pointer: `send(text, count) -> boolean`. The facade concatenates
/// the record's keys and values (`key value key value …`, no separators: every extra piece of a
/// V8 cons string costs when V8 flattens it) and writes each one's length into the shared
/// `lengths`; the fields are written straight into the batch. Returns false, queuing nothing,
/// when the text does not split as the lengths say (which only a surrogate pair spanning two
/// pieces can cause): the facade then sends the record as JSON. Errors are thrown as
/// `Class|message`.
///
/// Raw rather than `#[napi]` because this is the per-record path: the generated glue's argument
/// conversion and borrow bookkeeping cost about as much as the engine's add.
unsafe extern "C" fn send_fields_callback(
    env: napi::sys::napi_env,
    info: napi::sys::napi_callback_info,
) -> napi::sys::napi_value {
    let outcome = std::panic::catch_unwind(|| {
        let mut argc = 2usize;
        let mut argv = [std::ptr::null_mut(); 2];
        let mut data = std::ptr::null_mut();
        // SAFETY: `argv` has room for `argc` values; `data` is the `FieldsSender` this function
        // was created with, alive until the function itself is collected.
        let status = unsafe {
            napi::sys::napi_get_cb_info(
                env,
                info,
                &mut argc,
                argv.as_mut_ptr(),
                std::ptr::null_mut(),
                &mut data,
            )
        };
        if status != napi::sys::Status::napi_ok || data.is_null() || argc < 2 {
            return Err(Error::from_reason(
                "TypeError|send(text, count) takes two arguments",
            ));
        }
        // SAFETY: see above; only shared access, on this thread.
        let sender = unsafe { &*data.cast::<FieldsSender>() };
        let mut count = 0u32;
        // SAFETY: a value handed to this callback, read in its scope.
        let status = unsafe { napi::sys::napi_get_value_uint32(env, argv[1], &mut count) };
        if status != napi::sys::Status::napi_ok || count as usize > MAX_FAST_FIELDS {
            return Err(Error::from_reason(format!(
                "TypeError|count must be a number of fields up to {MAX_FAST_FIELDS}"
            )));
        }
        let Ok(mut buf) = sender.text.try_borrow_mut() else {
            return Err(Error::from_reason("LoghoseError|send re-entered"));
        };
        let lengths = sender.lengths(2 * count as usize);
        // SAFETY: as above.
        unsafe {
            with_utf8(env, argv[0], &mut buf, |text| {
                send_framed(&sender.producer, text, lengths)
            })
        }?
    });
    let sent = match outcome {
        Ok(Ok(sent)) => sent,
        Ok(Err(e)) => return throw(env, &e.reason),
        Err(_) => {
            return throw(
                env,
                "LoghoseError|internal error in send (a bug; please report it)",
            )
        }
    };
    let mut value = std::ptr::null_mut();
    // SAFETY: creating a primitive in the callback's scope.
    unsafe { napi::sys::napi_get_boolean(env, sent, &mut value) };
    value
}

/// Throws a JavaScript `Error` with `message` (the facade reads its `Class|` prefix); returns
/// the null value a callback returns after throwing.
fn throw(env: napi::sys::napi_env, message: &str) -> napi::sys::napi_value {
    let message = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
    // SAFETY: a NUL-terminated message, thrown in the callback's scope.
    unsafe { napi::sys::napi_throw_error(env, std::ptr::null(), message.as_ptr()) };
    std::ptr::null_mut()
}

/// Releases one share of a fields sender when its function or its lengths' array buffer is
/// collected (or the environment is torn down).
unsafe extern "C" fn release_fields_sender(
    _env: napi::sys::napi_env,
    _data: *mut std::ffi::c_void,
    hint: *mut std::ffi::c_void,
) {
    // SAFETY: `hint` is one of the two `Rc::into_raw` shares made in `fields_sender`, each
    // released exactly once.
    drop(unsafe { Rc::from_raw(hint.cast::<FieldsSender>().cast_const()) });
}

/// Runs `f` on a JavaScript string's UTF-8 text, copied once into `buf` (asking V8 for the
/// length first would walk the string twice).
///
/// # Safety
/// `value` is a live value of `env`'s current scope.
unsafe fn with_utf8<R>(
    env: napi::sys::napi_env,
    value: napi::sys::napi_value,
    buf: &mut Vec<u8>,
    f: impl FnOnce(&str) -> R,
) -> Result<R> {
    loop {
        let capacity = buf.capacity();
        let mut written = 0usize;
        // SAFETY: V8 writes at most `capacity` bytes (text and a final NUL) into the buffer's
        // allocation and reports how many text bytes it wrote.
        let status = unsafe {
            napi::sys::napi_get_value_string_utf8(
                env,
                value,
                buf.as_mut_ptr().cast(),
                capacity,
                &mut written,
            )
        };
        if status != napi::sys::Status::napi_ok {
            return Err(Error::from_reason(
                "TypeError|the record text must be a string",
            ));
        }
        // Node lets V8 write at most `capacity - 1` bytes and stops before a character that does
        // not fit, so a cut text leaves at most 3 of them unused: more unused means whole.
        if written + 4 < capacity {
            // SAFETY: V8 initialised the first `written` bytes, and the text is whole (see
            // above). Node converts with REPLACE_INVALID_UTF8, so it is valid UTF-8 (a lone
            // surrogate becomes U+FFFD).
            let text = unsafe {
                buf.set_len(written);
                std::str::from_utf8_unchecked(buf)
            };
            let out = f(text);
            if buf.capacity() > 1 << 20 {
                // One huge record does not keep its buffer for the producer's life.
                *buf = Vec::with_capacity(TEXT_CAPACITY);
            }
            return Ok(out);
        }
        // The text may have been cut: ask for its length and make room.
        let mut needed = 0usize;
        // SAFETY: a null buffer asks only for the length.
        unsafe {
            napi::sys::napi_get_value_string_utf8(env, value, std::ptr::null_mut(), 0, &mut needed)
        };
        // Room for the text, its NUL and the slack that shows the next call whole.
        buf.clear();
        buf.reserve(needed + 5);
    }
}

/// Splits `text` (UTF-8) into pieces of `lengths[i]` UTF-16 code units each, as JavaScript
/// measured them; None when the lengths do not add up to the text. ASCII text (the common
/// case: as many bytes as code units) splits by the lengths directly; otherwise each piece is
/// walked character by character.
fn split_by_utf16_lengths<'t>(
    text: &'t str,
    lengths: &[u32],
    mut on_piece: impl FnMut(usize, &'t str) -> std::result::Result<(), RecordError>,
) -> Option<std::result::Result<(), RecordError>> {
    let units: u64 = lengths.iter().map(|&n| u64::from(n)).sum();
    let ascii = units == text.len() as u64;
    let mut rest = text;
    for (i, &len) in lengths.iter().enumerate() {
        let len = len as usize;
        let end = if ascii {
            len
        } else {
            let mut left = len;
            let mut end = 0;
            for c in rest.chars() {
                if left == 0 {
                    break;
                }
                // A surrogate pair counts two; one split between two pieces cannot be.
                left = left.checked_sub(c.len_utf16())?;
                end += c.len_utf8();
            }
            if left != 0 {
                return None;
            }
            end
        };
        let (piece, tail) = rest.split_at_checked(end)?;
        if let Err(e) = on_piece(i, piece) {
            return Some(Err(e));
        }
        rest = tail;
    }
    rest.is_empty().then_some(Ok(()))
}

/// Queues one record framed as [`send_fields_callback`] describes; false when the framing does
/// not hold (nothing queued, nothing counted).
fn send_framed(producer: &Producer, text: &str, lengths: &[u32]) -> Result<bool> {
    let units: u64 = lengths.iter().map(|&n| u64::from(n)).sum();
    if lengths.is_empty()
        || (units != text.len() as u64
            && split_by_utf16_lengths(text, lengths, |_, _| Ok(())).is_none())
    {
        return Ok(false);
    }
    producer
        .send_with(&SendOptions::default(), Track::None, |enc| {
            let mut key = "";
            split_by_utf16_lengths(text, lengths, |i, piece| {
                if i % 2 == 0 {
                    key = piece;
                    Ok(())
                } else {
                    enc.field_str(key, piece)
                }
            })
            // Checked above; unreachable.
            .unwrap_or(Err(RecordError::Empty))
        })
        .map(|_| true)
        .map_err(producer_error)
}

/// `flush` on the libuv pool.
pub struct FlushTask {
    producer: Arc<Producer>,
    timeout: Duration,
}

impl Task for FlushTask {
    type Output = u64;
    type JsValue = f64;

    fn compute(&mut self) -> Result<u64> {
        Ok(self.producer.flush(self.timeout))
    }

    fn resolve(&mut self, _env: Env, output: u64) -> Result<f64> {
        Ok(output as f64)
    }
}

/// `close` on the libuv pool.
pub struct CloseTask {
    producer: Option<Arc<Producer>>,
    timeout: Duration,
}

impl Task for CloseTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> Result<String> {
        let Some(p) = &self.producer else {
            return Ok(r#"{"undelivered":0,"failed":[]}"#.into());
        };
        let report = p.close(self.timeout);
        let failed: Vec<ReportJson<'_>> = report.failed.iter().map(|r| report_json(r)).collect();
        Ok(serde_json::json!({ "undelivered": report.undelivered, "failed": failed, "stats": p.stats() }).to_string())
    }

    fn resolve(&mut self, _env: Env, output: String) -> Result<String> {
        Ok(output)
    }
}

/// The embedded emulator behind `require('loghose').Emulator`.
#[napi]
pub struct NativeEmulator {
    emulator: Mutex<Option<Emulator>>,
    endpoint: String,
    access_key_id: String,
    access_key_secret: String,
}

impl NativeEmulator {
    fn with<T>(&self, f: impl FnOnce(&Emulator) -> T) -> Result<T> {
        let guard = self
            .emulator
            .lock()
            .map_err(|_| fail("LoghoseError", "emulator lock poisoned"))?;
        guard
            .as_ref()
            .map(f)
            .ok_or_else(|| fail("LoghoseError", "the emulator is stopped"))
    }
}

#[napi]
impl NativeEmulator {
    #[napi(constructor)]
    pub fn new(env: Env, config_json: String) -> Result<Self> {
        let config: EmulatorConfig =
            serde_json::from_str(&config_json).map_err(|e| fail("ConfigError", e))?;
        let emulator = Emulator::start(config).map_err(|e| fail("LoghoseError", e))?;
        let creds = emulator.credentials();
        let native = NativeEmulator {
            endpoint: emulator.endpoint(),
            access_key_id: creds
                .as_ref()
                .map(|c| c.access_key_id.clone())
                .unwrap_or_default(),
            access_key_secret: creds.map(|c| c.access_key_secret).unwrap_or_default(),
            emulator: Mutex::new(Some(emulator)),
        };
        let _ = env;
        Ok(native)
    }

    #[napi(getter)]
    pub fn endpoint(&self) -> String {
        self.endpoint.clone()
    }

    #[napi(getter)]
    pub fn access_key_id(&self) -> String {
        self.access_key_id.clone()
    }

    #[napi(getter)]
    pub fn access_key_secret(&self) -> String {
        self.access_key_secret.clone()
    }

    #[napi]
    pub fn logs_json(&self, project: String, logstore: String) -> Result<String> {
        self.with(|e| serde_json::to_string(&e.logs(&project, &logstore)).unwrap_or_default())
    }

    #[napi]
    pub fn totals_json(&self, project: String, logstore: String) -> Result<String> {
        self.with(|e| serde_json::to_string(&e.totals(&project, &logstore)).unwrap_or_default())
    }

    #[napi]
    pub fn counters_json(&self) -> Result<String> {
        self.with(|e| serde_json::to_string(&e.counters()).unwrap_or_default())
    }

    #[napi]
    pub fn inject_json(&self, fault_json: String) -> Result<()> {
        let fault = serde_json::from_str(&fault_json)
            .map_err(|e| fail("ConfigError", format!("bad fault: {e}")))?;
        self.with(|e| e.inject(fault))
    }

    #[napi]
    pub fn clear_faults(&self) -> Result<()> {
        self.with(|e| e.clear_faults())
    }

    #[napi]
    pub fn reset(&self) -> Result<()> {
        self.with(|e| e.reset())
    }

    #[napi]
    pub fn create_logstore(
        &self,
        project: String,
        logstore: String,
        shards: Option<u32>,
    ) -> Result<()> {
        self.with(|e| e.create_logstore(&project, &logstore, shards))
    }

    #[napi]
    pub fn close(&self) {
        let taken = self.emulator.lock().ok().and_then(|mut g| g.take());
        if let Some(e) = taken {
            e.shutdown();
        }
    }
}

/// The version of the Rust engine this addon was built from.
#[napi]
pub fn engine_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
