//! The emulator's HTTP/1.1 server (hyper, keep-alive) on its own tokio runtime.
//!
//! Each connection is a task; a request body is read whole (capped at
//! [`MAX_SENT_BODY_BYTES`](crate::wire::limits::MAX_SENT_BODY_BYTES), above which the request
//! is refused with 413 and the connection closed), then handed to the synchronous
//! [`Service`]. Injected faults are applied here, before the service sees the request: an error
//! answer, added latency, a dropped connection, or a hang. Requests in absolute form (as sent
//! to an HTTP proxy) are served like any other, so clients can reach the emulator through
//! their proxy setting under any host name.
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

/// Why a connection is dropped without an answer.
#[derive(Debug, thiserror::Error)]
#[error("connection dropped by an injected fault")]
struct InjectedReset;

/// Default length of a hang without an explicit duration.
const DEFAULT_HANG: Duration = Duration::from_secs(600);

async fn serve_request(
    service: Arc<Service>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, InjectedReset> {
    let (parts, body) = req.into_parts();
    let probe = Request::from_parts(parts, ());
    if let Some((project, logstore)) = service.put_logs_target(&probe) {
        let fault = service.faults.take(&project, &logstore);
        if matches!(
            fault,
            Some(FaultAction::Reset | FaultAction::Hang { .. } | FaultAction::Error { .. })
        ) {
            service.count_faulted_put();
        }
        match fault {
            None => {}
            Some(FaultAction::Latency { ms }) => {
                tokio::time::sleep(Duration::from_millis(ms)).await
            }
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
                let status =
                    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                let message = message.unwrap_or_else(|| format!("injected fault: {status} {code}"));
                service.count_rejection(&code);
                let body =
                    serde_json::json!({ "errorCode": code, "errorMessage": message }).to_string();
                let mut resp = Response::new(Bytes::from(body));
                *resp.status_mut() = status;
                resp.headers_mut().insert(
                    "content-type",
                    hyper::http::HeaderValue::from_static("application/json"),
                );
                service.stamp(&mut resp);
                return Ok(resp.map(Full::new));
            }
        }
    }
    let (parts, ()) = probe.into_parts();
    let bytes = match Limited::new(body, MAX_SENT_BODY_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            let too_large = e
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some();
            let error = if too_large {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "PostBodyTooLarge",
                    format!("body exceeds {MAX_SENT_BODY_BYTES} bytes"),
                )
            } else {
                // The client went away mid-body; nobody will read an answer.
                return Err(InjectedReset);
            };
            let mut resp = service.error_response(&error);
            service.stamp(&mut resp);
            resp.headers_mut()
                .insert("connection", hyper::http::HeaderValue::from_static("close"));
            return Ok(resp.map(Full::new));
        }
    };
    let resp = service.handle(Request::from_parts(parts, bytes));
    Ok(resp.map(Full::new))
}

/// Serves HTTP/1.1 with keep-alive on one connection until it closes.
async fn serve_io<I>(io: I, service: Arc<Service>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = service_fn(move |req| {
        let service = service.clone();
        async move { serve_request(service, req).await }
    });
    let _ = http1::Builder::new()
        .keep_alive(true)
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
) {
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
        let service = service.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => serve_io(stream, service).await,
                Some(acceptor) => {
                    // A failed handshake (an untrusting client, garbage) just ends the connection.
                    if let Ok(Ok(stream)) =
                        tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await
                    {
                        serve_io(stream, service).await;
                    }
                }
            }
        });
    }
}
