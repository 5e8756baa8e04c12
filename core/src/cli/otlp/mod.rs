//! `loghose otlp`: an OpenTelemetry logs receiver in front of a producer, for any language's
//! OpenTelemetry SDK or Collector: OTLP/HTTP `POST /v1/logs` (protobuf or JSON, gzip or not) on
//! `127.0.0.1:4318` and OTLP/gRPC `LogsService/Export` on `127.0.0.1:4317` by default
//! ([`grpc`], the same path past the framing). Each record becomes one log laid out as the
//! Python and Node OTel processors lay it out ([`map`]); the producer batches, signs, retries
//! and spools as for `pipe`.
//!
//! # What an answer means
//!
//! 200 once every record of the request was accepted by the producer
//! (with a `spool_dir`, written to the spool: it survives the process's death, and a power loss
//! as `spool_sync` says). Records the producer refused (invalid, or the buffer still full after
//! `max_block_ms`, 1 s unless configured) are counted in the answer's `partialSuccess`; a request
//! none of whose records found room is answered 429 with `Retry-After`, so the exporter retries
//! it (nothing accepted, nothing duplicated). Bodies over `--max-body-bytes`, or over
//! `--max-decoded-bytes` once decompressed, or holding more than `--max-elements` elements
//! ([`bound`]), get 413; a body that does not decode 400; another content type or encoding 415.
//! At most four requests (either protocol) are decoded at once, so memory stays bounded by four
//! decoded bodies however many connections wait. gRPC says the same with its codes ([`grpc`]).
//!
//! # Flush, token, threads
//!
//! `POST /flush[?timeout_ms=N]` (for functions before a freeze, and sidecars before a stop):
//! seals what is held and answers once every record accepted before it reached an outcome
//! (200) or the timeout (default 10 s) ended (504), with the counts as JSON.
//!
//! Listening on an address other than loopback needs `--token`; every request must then carry
//! `Authorization: Bearer TOKEN` (401, or gRPC's `UNAUTHENTICATED`, otherwise). `--grpc-addr off`
//! serves OTLP/HTTP alone. Standard output's first line is the OTLP/HTTP endpoint, its second
//! the OTLP/gRPC one.
//!
//! Threads: the server runs on the calling thread's one-thread runtime; decoding and the
//! producer's adds run on blocking threads (an add may wait for room). SIGTERM or SIGINT stops
//! accepting, then the producer closes within `--close-timeout-ms`; the exit status is `pipe`'s:
//! 0 everything accepted was delivered, 75 the rest is kept durably in the spool, 1 something
//! was lost (rejected in a `partialSuccess`, failed, or left undelivered without a spool).

mod bound;
mod grpc;
pub(crate) mod map;

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{header, Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use prost::Message;
use serde_json::Value;

use super::metrics_server::MetricsServer;
use super::options::ProducerArgs;
use crate::producer::{Producer, ProducerError, SendOptions};

/// Receives OpenTelemetry logs over OTLP/HTTP and sends them.
#[derive(clap::Args, Debug)]
pub struct OtlpArgs {
    /// Where and how to send.
    #[command(flatten)]
    pub producer: ProducerArgs,
    /// Where to listen for OTLP/HTTP (`POST /v1/logs`) and `POST /flush`.
    #[arg(long, env = "LOGHOSE_OTLP_HTTP_ADDR", default_value = "127.0.0.1:4318")]
    pub http_addr: String,
    /// Where to listen for OTLP/gRPC (`LogsService/Export`), or `off`.
    #[arg(long, env = "LOGHOSE_OTLP_GRPC_ADDR", default_value = "127.0.0.1:4317")]
    pub grpc_addr: String,
    /// The bearer token every request must carry; required to listen beyond loopback.
    #[arg(long, env = "LOGHOSE_OTLP_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The largest request body taken, as sent (compressed), bytes.
    #[arg(long, default_value_t = 4 << 20)]
    pub max_body_bytes: usize,
    /// The largest request body taken once decompressed, bytes.
    #[arg(long, default_value_t = 16 << 20)]
    pub max_decoded_bytes: usize,
    /// The most elements a request may hold: records, attributes, values (each item of a list
    /// or map), scopes, resources. Counted before decoding: each takes tens to hundreds of
    /// bytes once decoded, however few it took on the wire.
    #[arg(long, default_value_t = 500_000)]
    pub max_elements: usize,
    /// Send each record to the logstore named by this resource attribute (records without it
    /// go to the configured logstore).
    #[arg(long, value_name = "ATTRIBUTE")]
    pub logstore_attribute: Option<String>,
    /// How long a stop may take to deliver what is held, ms.
    #[arg(long, default_value_t = 30_000)]
    pub close_timeout_ms: u64,
    /// Serve the producer's metrics at http://HOST:PORT/metrics (Prometheus text format).
    #[arg(long, env = "LOGHOSE_METRICS_ADDR", value_name = "HOST:PORT")]
    pub metrics_addr: Option<String>,
}

/// How long a record waits for room in the buffer unless configured (`max_block_ms`): long
/// enough to ride out a burst, short enough that the exporter's own timeout (10 s by default)
/// sees a 429 and retries rather than a timeout.
const WAIT_FOR_ROOM_MS: u64 = 1_000;

/// Requests decoded at once (each holds its decoded body).
const DECODING_AT_ONCE: usize = 4;

/// What the exporter is told to wait before retrying a request refused for room, seconds.
const RETRY_AFTER_SECONDS: u32 = 1;

const FLUSH_TIMEOUT_MS: u64 = 10_000;

#[derive(Default)]
struct Counts {
    /// Records received in decoded requests.
    received: AtomicU64,
    accepted: AtomicU64,
    /// Answered as rejected in a `partialSuccess`: lost (the exporter does not resend them).
    rejected: AtomicU64,
    /// In requests answered 429 (the exporter resends them).
    deferred: AtomicU64,
}

struct Receiver {
    producer: Arc<Producer>,
    token: Option<String>,
    max_body_bytes: usize,
    max_decoded_bytes: usize,
    max_elements: usize,
    logstore_attribute: Option<String>,
    decoding: tokio::sync::Semaphore,
    counts: Counts,
}

/// The wire format of a request, which its answer is written in too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Protobuf,
    Json,
}

/// An answer that is not a 200 with a response message.
#[derive(Debug, PartialEq, Eq)]
struct Refusal {
    status: StatusCode,
    message: String,
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            message: message.into(),
        }
    }
}

/// Runs `loghose otlp`.
pub fn run(args: OtlpArgs) -> u8 {
    const NAME: &str = "loghose otlp";
    let token = args.token.filter(|t| !t.is_empty());
    let listener = match listen(NAME, "--http-addr", &args.http_addr, token.is_some()) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let grpc_listener = if args.grpc_addr.eq_ignore_ascii_case("off") {
        None
    } else {
        match listen(NAME, "--grpc-addr", &args.grpc_addr, token.is_some()) {
            Ok(l) => Some(l),
            Err(code) => return code,
        }
    };
    let metrics = match MetricsServer::bind_flag(args.metrics_addr.as_deref(), NAME) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let producer = match args
        .producer
        .producer(NAME, &[("max_block_ms", Value::from(WAIT_FOR_ROOM_MS))])
    {
        Ok(p) => Arc::new(p),
        Err(code) => return code,
    };
    if let Some(Err(code)) = metrics.map(|m| m.serve_announced(&producer, NAME)) {
        return code;
    }
    let receiver = Arc::new(Receiver {
        producer: producer.clone(),
        token,
        max_body_bytes: args.max_body_bytes,
        max_decoded_bytes: args.max_decoded_bytes,
        max_elements: args.max_elements,
        logstore_attribute: args.logstore_attribute,
        decoding: tokio::sync::Semaphore::new(DECODING_AT_ONCE),
        counts: Counts::default(),
    });
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        eprintln!("{NAME}: cannot start the server");
        return super::EXIT_NOT_DELIVERED;
    };
    // Standard output's first lines: where to point the exporters (OTLP/HTTP, then OTLP/gRPC).
    for bound in std::iter::once(&listener)
        .chain(&grpc_listener)
        .filter_map(|l| l.local_addr().ok())
    {
        println!("http://{bound}");
    }
    runtime.block_on(async {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        let grpc_listener = grpc_listener.and_then(|l| tokio::net::TcpListener::from_std(l).ok());
        let grpc = async {
            match grpc_listener {
                Some(l) => grpc::serve(l, receiver.clone()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = serve(listener, receiver.clone()) => {},
            _ = grpc => {},
            _ = super::wait_for_stop() => {},
        }
    });
    drop(runtime);
    let closed = producer.close(Duration::from_millis(args.close_timeout_ms));
    let counts = &receiver.counts;
    let (received, accepted, rejected, deferred) = (
        counts.received.load(Ordering::Relaxed),
        counts.accepted.load(Ordering::Relaxed),
        counts.rejected.load(Ordering::Relaxed),
        counts.deferred.load(Ordering::Relaxed),
    );
    let lost = rejected + closed.undelivered + closed.kept_not_durable;
    let status = if lost > 0 {
        super::EXIT_NOT_DELIVERED
    } else if closed.kept > 0 {
        super::EXIT_KEPT
    } else {
        super::EXIT_DELIVERED
    };
    if status != super::EXIT_DELIVERED {
        eprintln!(
            "{NAME}: {received} records received, {accepted} accepted, {} delivered, {} kept in \
             the spool for the next run ({} of them not durable), {} undelivered, {rejected} \
             rejected, {deferred} refused for room (the exporters resend those)",
            accepted.saturating_sub(closed.undelivered + closed.kept),
            closed.kept,
            closed.kept_not_durable,
            closed.undelivered,
        );
    }
    status
}

/// Binds `value` (the argument `flag`), refusing an address beyond loopback without a token.
fn listen(
    name: &str,
    flag: &str,
    value: &str,
    has_token: bool,
) -> Result<std::net::TcpListener, u8> {
    let addr: SocketAddr = value.parse().map_err(|e| {
        eprintln!("{name}: {flag} {value:?}: not HOST:PORT ({e})");
        super::EXIT_USAGE
    })?;
    if !addr.ip().is_loopback() && !has_token {
        eprintln!(
            "{name}: {flag} {addr} is not a loopback address: set --token (or \
             LOGHOSE_OTLP_TOKEN) so that only clients holding it can send"
        );
        return Err(super::EXIT_USAGE);
    }
    std::net::TcpListener::bind(addr)
        .and_then(|l| {
            l.set_nonblocking(true)?;
            Ok(l)
        })
        .map_err(|e| {
            let off = if flag == "--grpc-addr" {
                " (--grpc-addr off receives OTLP/HTTP only)"
            } else {
                ""
            };
            eprintln!("{name}: {flag} {addr}: cannot listen: {e}{off}");
            super::EXIT_USAGE
        })
}

async fn serve(listener: tokio::net::TcpListener, receiver: Arc<Receiver>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let receiver = receiver.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let receiver = receiver.clone();
                async move { Ok::<_, Infallible>(receiver.answer(req).await) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

fn reply(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(body.into()));
    *resp.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

impl Receiver {
    fn limits(&self) -> Limits {
        Limits {
            decoded: self.max_decoded_bytes,
            elements: self.max_elements,
        }
    }

    async fn answer(self: Arc<Self>, req: Request<Incoming>) -> Response<Full<Bytes>> {
        if let Some(token) = &self.token {
            if !bearer_matches(req.headers().get(header::AUTHORIZATION), token) {
                let mut resp = reply(
                    StatusCode::UNAUTHORIZED,
                    "text/plain",
                    "Authorization: Bearer <token> required\n",
                );
                if let Ok(v) = "Bearer".parse() {
                    resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
                }
                return resp;
            }
        }
        match (req.method(), req.uri().path()) {
            (&Method::POST, "/v1/logs") => self.logs(req).await,
            (&Method::POST, "/flush") => self.flush(req.uri().query()).await,
            (_, "/v1/logs" | "/flush") => {
                reply(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "POST only\n")
            }
            _ => reply(
                StatusCode::NOT_FOUND,
                "text/plain",
                "not found: POST /v1/logs, POST /flush\n",
            ),
        }
    }

    async fn logs(self: Arc<Self>, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let format = match request_format(req.headers()) {
            Ok(f) => f,
            Err(r) => return reply(r.status, "text/plain", r.message + "\n"),
        };
        let answered = match self.clone().receive(req, format).await {
            Ok(response) => encode_response(&response, format),
            Err(r) => return refusal_response(r),
        };
        match answered {
            Some(body) => reply(StatusCode::OK, content_type(format), body),
            None => reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain",
                "cannot write the response\n",
            ),
        }
    }

    async fn receive(
        self: Arc<Self>,
        req: Request<Incoming>,
        format: Format,
    ) -> Result<ExportLogsServiceResponse, Refusal> {
        let gzip = content_encoding_is_gzip(req.headers())?;
        let too_large = |what: &str, limit: usize| {
            Refusal::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is over {limit} bytes {what}"),
            )
        };
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_body_bytes as u64) {
            return Err(too_large("as sent", self.max_body_bytes));
        }
        let Ok(_permit) = self.decoding.acquire().await else {
            return Err(Refusal::new(StatusCode::SERVICE_UNAVAILABLE, "stopping"));
        };
        let body = match Limited::new(req.into_body(), self.max_body_bytes)
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                return Err(too_large("as sent", self.max_body_bytes))
            }
            Err(e) => {
                return Err(Refusal::new(
                    StatusCode::BAD_REQUEST,
                    format!("cannot read the request body: {e}"),
                ))
            }
        };
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let limits = this.limits();
            this.send(decode(&body, gzip, format, limits)?)
        })
        .await
        .unwrap_or_else(|e| {
            Err(Refusal::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                e.to_string(),
            ))
        })
    }

    /// Hands every record of `request` to the producer; the response counts those refused.
    fn send(
        &self,
        request: ExportLogsServiceRequest,
    ) -> Result<ExportLogsServiceResponse, Refusal> {
        let total: usize = request
            .resource_logs
            .iter()
            .flat_map(|r| &r.scope_logs)
            .map(|s| s.log_records.len())
            .sum();
        self.counts
            .received
            .fetch_add(total as u64, Ordering::Relaxed);
        let (mut accepted, mut rejected) = (0u64, 0u64);
        let mut first_error: Option<String> = None;
        for resource_logs in &request.resource_logs {
            let resource = resource_logs.resource.as_ref();
            let resource_fields = map::ResourceFields::of(resource);
            let logstore = self
                .logstore_attribute
                .as_deref()
                .and_then(|key| map::ResourceFields::attribute(resource, key))
                .filter(|s| !s.is_empty());
            for scope_logs in &resource_logs.scope_logs {
                let (name, version) = scope_logs
                    .scope
                    .as_ref()
                    .map(|s| (s.name.as_str(), s.version.as_str()))
                    .unwrap_or(("", ""));
                for record in &scope_logs.log_records {
                    let (fields, at) = map::fields(&resource_fields, name, version, record);
                    let opts = SendOptions {
                        time: at.map(|ns| u32::try_from(ns / 1_000_000_000).unwrap_or(u32::MAX)),
                        time_ns: at.map(|ns| (ns % 1_000_000_000) as u32),
                        logstore: logstore.as_deref(),
                        ..SendOptions::default()
                    };
                    match self.producer.send(&fields, &opts) {
                        Ok(()) => accepted += 1,
                        Err(e) => {
                            // Nothing of the request taken and no room: the exporter may retry
                            // the whole request without duplicating anything.
                            if accepted == 0 && rejected == 0 && is_out_of_room(&e) {
                                self.counts
                                    .deferred
                                    .fetch_add(total as u64, Ordering::Relaxed);
                                return Err(Refusal::new(
                                    StatusCode::TOO_MANY_REQUESTS,
                                    format!("no room for the records: {e}"),
                                ));
                            }
                            rejected += 1;
                            first_error.get_or_insert_with(|| e.to_string());
                        }
                    }
                }
            }
        }
        self.counts.accepted.fetch_add(accepted, Ordering::Relaxed);
        self.counts.rejected.fetch_add(rejected, Ordering::Relaxed);
        Ok(ExportLogsServiceResponse {
            partial_success: first_error.map(|message| ExportLogsPartialSuccess {
                rejected_log_records: rejected as i64,
                error_message: message,
            }),
        })
    }

    async fn flush(self: Arc<Self>, query: Option<&str>) -> Response<Full<Bytes>> {
        let params: HashMap<&str, &str> = query
            .unwrap_or("")
            .split('&')
            .filter_map(|p| p.split_once('='))
            .collect();
        let timeout_ms = match params.get("timeout_ms").map(|v| v.parse::<u64>()) {
            None => FLUSH_TIMEOUT_MS,
            Some(Ok(ms)) => ms,
            Some(Err(_)) => {
                return reply(
                    StatusCode::BAD_REQUEST,
                    "text/plain",
                    "timeout_ms: not a whole number of milliseconds\n",
                )
            }
        };
        let producer = self.producer.clone();
        let pending = tokio::task::spawn_blocking(move || {
            producer.flush_accepted(Duration::from_millis(timeout_ms))
        })
        .await
        .unwrap_or(u64::MAX);
        let stats = self.producer.stats();
        let body = serde_json::json!({
            "pending": pending,
            "accepted": stats.accepted,
            "delivered": stats.delivered,
            "failed": stats.failed,
            "kept": stats.kept,
        });
        let status = if pending == 0 {
            StatusCode::OK
        } else {
            StatusCode::GATEWAY_TIMEOUT
        };
        reply(status, "application/json", body.to_string() + "\n")
    }
}

/// Whether a send failed for want of room (the exporter may retry), not for the record.
fn is_out_of_room(e: &ProducerError) -> bool {
    matches!(e, ProducerError::BufferFull { .. })
}

/// Compares the header's token with ours in time independent of where they differ.
fn bearer_matches(header: Option<&header::HeaderValue>, token: &str) -> bool {
    let Some(given) = header
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

fn request_format(headers: &hyper::HeaderMap) -> Result<Format, Refusal> {
    let media = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "application/x-protobuf" | "application/protobuf" => Ok(Format::Protobuf),
        "application/json" => Ok(Format::Json),
        other => Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("content type {other:?}: application/x-protobuf or application/json"),
        )),
    }
}

fn content_encoding_is_gzip(headers: &hyper::HeaderMap) -> Result<bool, Refusal> {
    match headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("" | "identity") => Ok(false),
        Some("gzip") => Ok(true),
        Some(other) => Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("content encoding {other:?}: gzip or none"),
        )),
    }
}

/// The limits a body is decoded within.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// Bytes once decompressed.
    decoded: usize,
    /// Elements (messages) in the request ([`bound`]).
    elements: usize,
}

/// The request in `body`: gunzipped (at most `limits.decoded` bytes), its elements counted,
/// and decoded.
fn decode(
    body: &[u8],
    gzip: bool,
    format: Format,
    limits: Limits,
) -> Result<ExportLogsServiceRequest, Refusal> {
    let max_decoded = limits.decoded;
    let unzipped;
    let bytes = if gzip {
        let mut out = Vec::new();
        let read = flate2::read::GzDecoder::new(body)
            .take(max_decoded as u64 + 1)
            .read_to_end(&mut out);
        if let Err(e) = read {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                format!("not gzip: {e}"),
            ));
        }
        unzipped = out;
        &unzipped[..]
    } else {
        body
    };
    if bytes.len() > max_decoded {
        return Err(Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is over {max_decoded} bytes once decompressed"),
        ));
    }
    let over = match format {
        Format::Protobuf => bound::protobuf_over(bytes, limits.elements),
        Format::Json => bound::json_over(bytes, limits.elements),
    };
    if over {
        return Err(Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the request holds over {} elements (records, attributes, values): send \
                 smaller batches or raise --max-elements",
                limits.elements
            ),
        ));
    }
    match format {
        Format::Protobuf => ExportLogsServiceRequest::decode(bytes).map_err(|e| {
            Refusal::new(
                StatusCode::BAD_REQUEST,
                format!("not an OTLP ExportLogsServiceRequest: {e}"),
            )
        }),
        Format::Json => {
            let not_otlp = |e: serde_json::Error| {
                Refusal::new(
                    StatusCode::BAD_REQUEST,
                    format!("not an OTLP/JSON ExportLogsServiceRequest: {e}"),
                )
            };
            let mut value: Value = serde_json::from_slice(bytes).map_err(not_otlp)?;
            widen_int_values(&mut value);
            serde_json::from_value(value).map_err(not_otlp)
        }
    }
}

/// What the receiver does with a body, short of sending: gunzipped (`gzip`) within
/// `max_decoded` bytes, its elements counted (at most `max_elements`), decoded (`json`:
/// OTLP/JSON, else protobuf) and every record laid out.
/// Answers how many records it held, or the HTTP status refusing it. For the fuzz target
/// (core/tests/fuzz.rs); not API.
#[doc(hidden)]
pub fn decode_and_lay_out(
    body: &[u8],
    gzip: bool,
    json: bool,
    max_decoded: usize,
    max_elements: usize,
) -> Result<usize, u16> {
    let format = if json { Format::Json } else { Format::Protobuf };
    let limits = Limits {
        decoded: max_decoded,
        elements: max_elements,
    };
    let request = decode(body, gzip, format, limits).map_err(|r| r.status.as_u16())?;
    let mut records = 0;
    for resource_logs in &request.resource_logs {
        let resource = map::ResourceFields::of(resource_logs.resource.as_ref());
        for scope_logs in &resource_logs.scope_logs {
            for record in &scope_logs.log_records {
                std::hint::black_box(map::fields(&resource, "", "", record));
                records += 1;
            }
        }
    }
    Ok(records)
}

/// Rewrites each `intValue` that is a JSON number outside the 64-bit integers (JavaScript
/// exporters write an integral double such as `1e+21` there) as the `doubleValue` it is, which
/// is what the Node and Python processors store for the same value.
fn widen_int_values(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let widened = match map.get("intValue") {
                Some(Value::Number(n)) if n.as_i64().is_none() => n.as_f64(),
                _ => None,
            };
            if let Some(double) = widened {
                map.remove("intValue");
                map.insert("doubleValue".into(), Value::from(double));
            }
            map.values_mut().for_each(widen_int_values);
        }
        Value::Array(items) => items.iter_mut().for_each(widen_int_values),
        _ => {}
    }
}

fn content_type(format: Format) -> &'static str {
    match format {
        Format::Protobuf => "application/x-protobuf",
        Format::Json => "application/json",
    }
}

fn encode_response(response: &ExportLogsServiceResponse, format: Format) -> Option<Vec<u8>> {
    match format {
        Format::Protobuf => Some(response.encode_to_vec()),
        // OTLP/JSON leaves an unset message out (serde would write `null`).
        Format::Json => Some(
            match &response.partial_success {
                None => serde_json::json!({}),
                Some(partial) => serde_json::json!({"partialSuccess": {
                    "rejectedLogRecords": partial.rejected_log_records.to_string(),
                    "errorMessage": partial.error_message,
                }}),
            }
            .to_string()
            .into_bytes(),
        ),
    }
}

fn refusal_response(refusal: Refusal) -> Response<Full<Bytes>> {
    let retry = refusal.status == StatusCode::TOO_MANY_REQUESTS
        || refusal.status == StatusCode::SERVICE_UNAVAILABLE;
    let mut resp = reply(refusal.status, "text/plain", refusal.message + "\n");
    if retry {
        if let Ok(v) = RETRY_AFTER_SECONDS.to_string().parse() {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn limits(decoded: usize) -> Limits {
        Limits {
            decoded,
            elements: 1000,
        }
    }

    #[test]
    fn bodies_are_decoded_within_their_limits() {
        let request = ExportLogsServiceRequest::default().encode_to_vec();
        assert!(decode(&request, false, Format::Protobuf, limits(100)).is_ok());
        let garbage = decode(&[0xff, 0xff, 0xff], false, Format::Protobuf, limits(100));
        assert_eq!(
            garbage.map(drop).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
        // A gzip bomb: 10 MB of zeros in a few KB stops at the limit, never inflated whole.
        let mut zipped = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        zipped.write_all(&vec![0u8; 10 << 20]).unwrap();
        let bomb = zipped.finish().unwrap();
        assert!(bomb.len() < 64 << 10);
        let refused = decode(&bomb, true, Format::Protobuf, limits(1 << 20))
            .map(drop)
            .unwrap_err();
        assert_eq!(refused.status, StatusCode::PAYLOAD_TOO_LARGE);
        let not_gzip = decode(b"plain", true, Format::Protobuf, limits(100))
            .map(drop)
            .unwrap_err();
        assert_eq!(not_gzip.status, StatusCode::BAD_REQUEST);
        let json = decode(br#"{"resourceLogs":[]}"#, false, Format::Json, limits(100)).unwrap();
        assert!(json.resource_logs.is_empty());
        // An integral double where an integer goes (JavaScript's 1e21) is read as the double.
        let body = br#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"intValue":1e+21},
            "attributes":[{"key":"n","value":{"intValue":"12"}}]}]}]}]}"#;
        let json = decode(body, false, Format::Json, limits(1000)).unwrap();
        let record = &json.resource_logs[0].scope_logs[0].log_records[0];
        assert_eq!(map::text(record.body.as_ref()), "1000000000000000000000");
        assert_eq!(map::text(record.attributes[0].value.as_ref()), "12");
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(decode(deep.as_bytes(), false, Format::Json, limits(1 << 20)).is_err());
        // Past the element limit: refused as too large before it is decoded.
        let many = format!(r#"{{"resourceLogs":[{}]}}"#, vec!["{}"; 1001].join(","));
        let refused = decode(many.as_bytes(), false, Format::Json, limits(1 << 20));
        assert_eq!(refused.unwrap_err().status, StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[test]
    fn the_token_must_match_exactly() {
        let h = |s: &str| header::HeaderValue::from_str(s).unwrap();
        assert!(bearer_matches(Some(&h("Bearer s3cret")), "s3cret"));
        assert!(!bearer_matches(Some(&h("Bearer s3cre")), "s3cret"));
        assert!(!bearer_matches(Some(&h("Bearer s3cret ")), "s3cret"));
        assert!(!bearer_matches(Some(&h("Basic s3cret")), "s3cret"));
        assert!(!bearer_matches(None, "s3cret"));
    }

    #[test]
    fn content_types_and_encodings_are_named_or_refused() {
        let mut headers = hyper::HeaderMap::new();
        assert_eq!(
            request_format(&headers).unwrap_err().status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        headers.insert(
            header::CONTENT_TYPE,
            "application/json; charset=utf-8".parse().unwrap(),
        );
        assert_eq!(request_format(&headers).unwrap(), Format::Json);
        headers.insert(
            header::CONTENT_TYPE,
            "application/x-protobuf".parse().unwrap(),
        );
        assert_eq!(request_format(&headers).unwrap(), Format::Protobuf);
        assert!(!content_encoding_is_gzip(&headers).unwrap());
        headers.insert(header::CONTENT_ENCODING, "gzip".parse().unwrap());
        assert!(content_encoding_is_gzip(&headers).unwrap());
        headers.insert(header::CONTENT_ENCODING, "br".parse().unwrap());
        assert!(content_encoding_is_gzip(&headers).is_err());
    }
}
