//! The emulator's HTTP/1.1 server (hyper, keep-alive) on its own tokio runtime.
//!
//! # Connections
//!
//! Each connection is a task; a request body is read whole (capped at
//! [`MAX_SENT_BODY_BYTES`](crate::wire::limits::MAX_SENT_BODY_BYTES), above which the request
//! is refused with 413 and the connection closed; a declared `Content-Length` over twice the
//! cap is refused before a byte of the body is read), then handed to the synchronous
//! [`Service`].
//!
//! # Hostile clients
//!
//! Hostile or broken clients are bounded: a request head must arrive within
//! `header_read_timeout_ms`, a body must keep sending (`body_idle_timeout_ms` between chunks),
//! at most `max_connections` are served at once — one more is answered 503 and closed, so
//! stalled connections cannot starve valid requests — and the request bodies buffered at once
//! are bounded by `max_body_buffer_bytes` (a body that does not fit is answered 503
//! `ServerBusy`; bodies over 64 KiB leave 8 MiB of it to small requests). What a dropped connection held is freed
//! with it. Injected faults are applied here, before the service sees the request (an error
//! answer, added latency, a dropped connection, a hang) or after it stored it (an error
//! answer or a dropped connection in place of its success). Requests in absolute form (as sent
//! to an HTTP proxy) are served like any other, so clients can reach the emulator through
//! their proxy setting under any host name.
//!
//! # Shutdown
//!
//! Shutdown: the accept loop stops and drops the listener when told; open connections and
//! hanging requests end when the runtime is dropped.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::http::{Request, Response, StatusCode};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::error::ApiError;
use super::faults::FaultAction;
use super::service::Service;
use crate::wire::limits::MAX_SENT_BODY_BYTES;

/// Why a connection is dropped without an answer: an injected fault, or a client that went
/// away or stalled mid-body.
#[derive(Debug, thiserror::Error)]
#[error("connection dropped")]
struct InjectedReset;

/// The connection limits, from the emulator's configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) header_read_timeout: Duration,
    pub(crate) body_idle_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) max_body_buffer_bytes: usize,
}

/// The connection cap actually used: `wanted`, lowered so the open connections plus 64
/// descriptors for everything else fit the process's open-file limit (past which `accept`
/// fails and every client, valid or not, waits in the backlog).
pub(crate) fn connection_cap(wanted: usize) -> usize {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given and nothing else.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            let room = usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX);
            return wanted.min(room.saturating_sub(64)).max(1);
        }
    }
    wanted.max(1)
}

/// Raises this process's soft open-file limit to its hard one (at most 2^20): a server's usual
/// first step, since the soft default of 1 024 would cap the connections served. For
/// processes that are servers (the command-line emulator, load tests), not for a library's
/// host process.
pub fn raise_open_file_limit() {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit read and write only the struct they are given.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0
                && limit.rlim_cur < limit.rlim_max
            {
                limit.rlim_cur = limit.rlim_max.min(1 << 20);
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
        }
    }
}

/// A refusal sent as is, on a connection over the limit.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: 80\r\n\r\n{\"errorCode\":\"ServerBusy\",\"errorMessage\":\"too many connections to the emulator\"}";

/// Largest declared body that is read (and discarded) before its 413.
const DRAIN_LIMIT: u64 = 2 * MAX_SENT_BODY_BYTES as u64;

/// Bodies up to this size may use the whole body budget; larger ones leave
/// [`SMALL_BODY_RESERVE`] of it free, so small requests go on being served while large ones
/// (or stalled ones) hold the rest.
const SMALL_BODY: usize = 64 * 1024;
/// The part of the body budget only small bodies may use.
const SMALL_BODY_RESERVE: usize = 8 * 1024 * 1024;

/// The bytes of request bodies buffered at once over every connection
/// (`max_body_buffer_bytes`): a reservation is taken before a body is read and released when
/// its request is done.
pub(crate) struct BodyBudget {
    permits: Arc<tokio::sync::Semaphore>,
}

impl BodyBudget {
    pub(crate) fn new(bytes: usize) -> Self {
        BodyBudget {
            permits: Arc::new(tokio::sync::Semaphore::new(
                bytes.min(tokio::sync::Semaphore::MAX_PERMITS),
            )),
        }
    }

    /// Reserves `bytes`, or `None` when the budget cannot spare them now.
    fn reserve(&self, bytes: usize) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let n = u32::try_from(bytes.max(1)).ok()?;
        if bytes > SMALL_BODY && self.permits.available_permits() < bytes + SMALL_BODY_RESERVE {
            return None;
        }
        self.permits.clone().try_acquire_many_owned(n).ok()
    }
}

/// A 503 that closes the connection: the body budget is spent.
fn busy_buffering(service: &Service) -> Response<Full<Bytes>> {
    closing_error(
        service,
        &ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServerBusy",
            "the emulator is buffering as many request bodies as it allows \
             (max_body_buffer_bytes); retry",
        ),
    )
}

/// An error answer, counted, that closes the connection (its body is left unread).
fn closing_error(service: &Service, error: &ApiError) -> Response<Full<Bytes>> {
    let mut resp = service.error_response(error);
    service.stamp(&mut resp);
    resp.headers_mut()
        .insert("connection", hyper::http::HeaderValue::from_static("close"));
    resp.map(Full::new)
}

/// Reads a whole body of at most `limit` bytes (kept only when `keep`), giving up when no
/// chunk arrives for `idle`. A declared length sizes the buffer once, so a large body is one
/// allocation (returned whole when it is freed) rather than a series of doublings. A body
/// of undeclared length reserves from `budget` as its chunks arrive (the held reservations
/// are pushed to `held`).
async fn read_body(
    mut body: Incoming,
    limit: usize,
    idle: Duration,
    keep: bool,
    declared: Option<u64>,
    budget: Option<(&BodyBudget, &mut Vec<tokio::sync::OwnedSemaphorePermit>)>,
) -> Result<Bytes, BodyError> {
    use hyper::body::Body as _;
    let capacity = if keep {
        declared.map_or(0, |n| usize::try_from(n).unwrap_or(limit).min(limit))
    } else {
        0
    };
    let mut budget = budget;
    let mut collected = bytes::BytesMut::with_capacity(capacity);
    let mut seen = 0usize;
    loop {
        let frame = tokio::time::timeout(
            idle,
            std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)),
        )
        .await
        .map_err(|_| BodyError::Stalled)?;
        let Some(frame) = frame else {
            return Ok(collected.freeze());
        };
        let frame = frame.map_err(|_| BodyError::Gone)?;
        if let Ok(data) = frame.into_data() {
            seen += data.len();
            if seen > limit {
                return Err(BodyError::TooLarge);
            }
            if keep {
                if let Some((budget, held)) = budget.as_mut() {
                    held.push(budget.reserve(data.len()).ok_or(BodyError::Busy)?);
                }
                collected.extend_from_slice(&data);
            }
        }
    }
}

/// Why a body was not read whole.
enum BodyError {
    TooLarge,
    Busy,
    Stalled,
    Gone,
}

/// Default length of a hang without an explicit duration.
const DEFAULT_HANG: Duration = Duration::from_secs(600);

/// A 413 that closes the connection.
fn too_large(service: &Service, what: String) -> Response<Full<Bytes>> {
    closing_error(
        service,
        &ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "PostBodyTooLarge", what),
    )
}

async fn serve_request(
    service: Arc<Service>,
    limits: Limits,
    bodies: Arc<BodyBudget>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, InjectedReset> {
    let declared = req
        .headers()
        .get(hyper::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let (parts, body) = req.into_parts();
    if let Some(declared) = declared.filter(|n| *n > MAX_SENT_BODY_BYTES as u64) {
        // A body a little over the limit is read and discarded first, so a client that writes
        // its whole body before reading sees the 413 rather than a broken pipe; an absurd one
        // is answered at once.
        if declared <= DRAIN_LIMIT {
            let _ = read_body(
                body,
                DRAIN_LIMIT as usize,
                limits.body_idle_timeout,
                false,
                None,
                None,
            )
            .await;
        }
        return Ok(too_large(
            &service,
            format!("declared body of {declared} bytes exceeds {MAX_SENT_BODY_BYTES} bytes"),
        ));
    }
    let probe = Request::from_parts(parts, ());
    let target = service.put_logs_target(&probe);
    let fault = if let Some((project, logstore)) = &target {
        service.faults.take(project, logstore)
    } else if Service::is_identity(probe.uri().path(), probe.uri().query()) {
        // Nothing is stored there: `store_then_*` act as their error or reset.
        service.faults.take_credentials().map(|f| match f {
            FaultAction::StoreThenError { status, code } => FaultAction::Error {
                status,
                code,
                message: None,
            },
            FaultAction::StoreThenReset => FaultAction::Reset,
            other => other,
        })
    } else {
        None
    };
    if target.is_some()
        && matches!(
            fault,
            Some(FaultAction::Reset | FaultAction::Hang { .. } | FaultAction::Error { .. })
        )
    {
        service.count_faulted_put();
    }
    match fault.clone() {
        None => {}
        Some(FaultAction::Latency { ms }) => tokio::time::sleep(Duration::from_millis(ms)).await,
        Some(FaultAction::Reset) => return Err(InjectedReset),
        Some(FaultAction::Hang { ms }) => {
            tokio::time::sleep(ms.map_or(DEFAULT_HANG, Duration::from_millis)).await;
            return Err(InjectedReset);
        }
        Some(FaultAction::Error {
            status,
            code,
            message,
        }) => {
            // Drain the body so the connection stays usable, as the real service does.
            let _ = Limited::new(body, MAX_SENT_BODY_BYTES).collect().await;
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let message = message.unwrap_or_else(|| format!("injected fault: {status} {code}"));
            return Ok(fault_answer(&service, status, &code, message));
        }
        Some(FaultAction::StoreThenError { .. } | FaultAction::StoreThenReset) => {}
    }
    let after_store = fault.filter(|f| {
        matches!(
            f,
            FaultAction::StoreThenError { .. } | FaultAction::StoreThenReset
        )
    });
    let (parts, ()) = probe.into_parts();
    // The body's bytes are reserved before it is read (as it arrives, without a declared
    // length) and released once the request is answered.
    let mut held = Vec::new();
    let budget_for_chunks = match declared {
        Some(n) if n > 0 => {
            match bodies.reserve(usize::try_from(n).unwrap_or(usize::MAX)) {
                Some(permit) => held.push(permit),
                None => return Ok(busy_buffering(&service)),
            }
            None
        }
        Some(_) => None,
        None => Some((&*bodies, &mut held)),
    };
    let bytes = match read_body(
        body,
        MAX_SENT_BODY_BYTES,
        limits.body_idle_timeout,
        true,
        declared,
        budget_for_chunks,
    )
    .await
    {
        Ok(bytes) => bytes,
        Err(BodyError::Busy) => return Ok(busy_buffering(&service)),
        Err(BodyError::TooLarge) => {
            return Ok(too_large(
                &service,
                format!("body exceeds {MAX_SENT_BODY_BYTES} bytes"),
            ))
        }
        // The client went away or stalled mid-body: drop the connection and what it sent.
        Err(BodyError::Stalled | BodyError::Gone) => return Err(InjectedReset),
    };
    if !parts.uri.path().starts_with("/_emulator/") {
        // The round trip and the link (network.rs); the emulator's own API is never delayed.
        let delay = service.network.delay(bytes.len());
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }
    let resp = service.handle(Request::from_parts(parts, bytes));
    drop(held);
    match after_store {
        // Stored: now the client is told it failed (or told nothing), so it retries a batch the
        // emulator already holds.
        Some(FaultAction::StoreThenReset) if resp.status().is_success() => Err(InjectedReset),
        Some(FaultAction::StoreThenError { status, code }) if resp.status().is_success() => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let message = format!("injected fault after storing the request: {status} {code}");
            Ok(fault_answer(&service, status, &code, message))
        }
        _ => Ok(resp.map(Full::new)),
    }
}

/// An injected error answer, counted as a rejection under its code.
fn fault_answer(
    service: &Service,
    status: StatusCode,
    code: &str,
    message: String,
) -> Response<Full<Bytes>> {
    service.count_rejection(code);
    let body = serde_json::json!({ "errorCode": code, "errorMessage": message }).to_string();
    let mut resp = Response::new(Bytes::from(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        "content-type",
        hyper::http::HeaderValue::from_static("application/json"),
    );
    service.stamp(&mut resp);
    resp.map(Full::new)
}

/// Serves HTTP/1.1 with keep-alive on one connection until it closes.
async fn serve_io<I>(io: I, service: Arc<Service>, limits: Limits, bodies: Arc<BodyBudget>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = service_fn(move |req| {
        let service = service.clone();
        let bodies = bodies.clone();
        async move { serve_request(service, limits, bodies, req).await }
    });
    let _ = http1::Builder::new()
        .keep_alive(true)
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .serve_connection(TokioIo::new(io), svc)
        .await;
}

/// Accepts connections (TLS first when an acceptor is given) until `stop` turns true, then
/// returns, dropping the listener.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    service: Arc<Service>,
    mut stop: watch::Receiver<bool>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    limits: Limits,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let bodies = Arc::new(BodyBudget::new(limits.max_body_buffer_bytes));
    loop {
        let accepted = tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _peer)) = accepted else {
            // Out of file descriptors or a reset during accept: back off briefly, keep serving.
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // Over the limit: refuse this one at once rather than let it wait on the others.
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt as _;
                let mut stream = stream;
                let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(BUSY)).await;
                let _ = stream.shutdown().await;
            });
            continue;
        };
        let service = service.clone();
        let tls = tls.clone();
        let bodies = bodies.clone();
        tokio::spawn(async move {
            let _slot = slot;
            match tls {
                None => serve_io(stream, service, limits, bodies).await,
                Some(acceptor) => {
                    // A failed handshake (an untrusting client, garbage) just ends the connection.
                    if let Ok(Ok(stream)) =
                        tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await
                    {
                        serve_io(stream, service, limits, bodies).await;
                    }
                }
            }
        });
    }
}
