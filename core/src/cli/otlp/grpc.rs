//! OTLP/gRPC for `loghose otlp`: the `opentelemetry.proto.collector.logs.v1.LogsService`
//! `Export` call on `127.0.0.1:4317` by default, over HTTP/2 without TLS, framed and
//! decompressed (gzip) by tonic. A request's message is handed as bytes to the same decoding,
//! limits and sending as OTLP/HTTP's, so both ways in store the same fields and answer the same
//! way: `OK` (with `partial_success` for records refused), `RESOURCE_EXHAUSTED` with a
//! `google.rpc.RetryInfo` delay when no record found room (the exporters retry exactly then),
//! `RESOURCE_EXHAUSTED` without one for a message over the limits (not retried),
//! `INVALID_ARGUMENT` for one that does not decode, `UNAUTHENTICATED` without the token,
//! `UNIMPLEMENTED` for any other method.
//!
//! Runs on the receiver's one-thread runtime, decoding and adds on blocking threads, under the
//! same four-at-once decoding permit as OTLP/HTTP (taken before the message is read). A message
//! whose frame says it is longer than `--max-decoded-bytes`, or that inflates past it, is
//! refused by tonic before it is held whole (`RESOURCE_EXHAUSTED`, as for any message over the
//! limits).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use hyper::body::Incoming;
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper::StatusCode;
use hyper_util::rt::{TokioExecutor, TokioIo};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceResponse;
use prost::Message;
use tonic::codec::{Codec, CompressionEncoding, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{Code, Status};

use super::{decode, Format, Receiver, Refusal, RETRY_AFTER_SECONDS};

/// The one method served.
const EXPORT: &str = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";

/// Serves OTLP/gRPC connections from `listener` until the task is dropped.
pub(super) async fn serve(listener: tokio::net::TcpListener, receiver: Arc<Receiver>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let receiver = receiver.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let receiver = receiver.clone();
                async move { Ok::<_, Infallible>(receiver.grpc(req).await) }
            });
            let _ = http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

impl Receiver {
    async fn grpc(
        self: Arc<Self>,
        req: hyper::Request<Incoming>,
    ) -> http::Response<tonic::body::Body> {
        if let Some(token) = &self.token {
            let header = req.headers().get(hyper::header::AUTHORIZATION);
            if !super::bearer_matches(header, token) {
                return Status::unauthenticated("authorization: Bearer <token> required")
                    .into_http();
            }
        }
        if req.uri().path() != EXPORT {
            return Status::unimplemented(format!("{}: only {EXPORT} is served", req.uri().path()))
                .into_http();
        }
        let Ok(_permit) = self.decoding.acquire().await else {
            return Status::unavailable("stopping").into_http();
        };
        let max_decoded = self.max_decoded_bytes;
        let mut response = tonic::server::Grpc::new(RawRequests)
            .accept_compressed(CompressionEncoding::Gzip)
            .max_decoding_message_size(max_decoded)
            .unary(Export(self.clone()), req)
            .await;
        // tonic refuses a frame longer than the limit with OUT_OF_RANGE, which OTLP exporters
        // retry (until their timeout): it is RESOURCE_EXHAUSTED without a delay, not retried.
        let status = response.headers().get("grpc-status");
        if status.is_some_and(|s| s.as_bytes() == b"11") {
            let exhausted = http::HeaderValue::from_static("8");
            response.headers_mut().insert("grpc-status", exhausted);
        }
        response
    }
}

/// The `Export` call: the message's bytes decoded and sent as OTLP/HTTP's are.
struct Export(Arc<Receiver>);

impl tower_service::Service<tonic::Request<Bytes>> for Export {
    type Response = tonic::Response<ExportLogsServiceResponse>;
    type Error = Status;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Status>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
        let receiver = self.0.clone();
        let body = request.into_inner();
        Box::pin(async move {
            let sent = tokio::task::spawn_blocking(move || {
                let limits = receiver.limits();
                receiver.send(decode(&body, false, Format::Protobuf, limits)?)
            })
            .await
            .unwrap_or_else(|e| {
                Err(Refusal::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    e.to_string(),
                ))
            });
            sent.map(tonic::Response::new).map_err(status_of)
        })
    }
}

/// The gRPC status that says what the HTTP status of `refusal` says.
fn status_of(refusal: Refusal) -> Status {
    let code = match refusal.status {
        StatusCode::TOO_MANY_REQUESTS => {
            return Status::with_details(
                Code::ResourceExhausted,
                refusal.message,
                retry_info(RETRY_AFTER_SECONDS),
            )
        }
        StatusCode::PAYLOAD_TOO_LARGE => Code::ResourceExhausted,
        StatusCode::BAD_REQUEST => Code::InvalidArgument,
        StatusCode::SERVICE_UNAVAILABLE => Code::Unavailable,
        _ => Code::Internal,
    };
    Status::new(code, refusal.message)
}

/// `google.rpc.Status` details holding a `google.rpc.RetryInfo` of `seconds`: what OTLP
/// exporters read to retry a `RESOURCE_EXHAUSTED` (without it, they drop the batch).
fn retry_info(seconds: u32) -> Bytes {
    #[derive(Clone, PartialEq, prost::Message)]
    struct Duration {
        #[prost(int64, tag = "1")]
        seconds: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    struct RetryInfo {
        #[prost(message, optional, tag = "1")]
        retry_delay: Option<Duration>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    struct Any {
        #[prost(string, tag = "1")]
        type_url: String,
        #[prost(bytes = "vec", tag = "2")]
        value: Vec<u8>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    struct RpcStatus {
        #[prost(int32, tag = "1")]
        code: i32,
        #[prost(string, tag = "2")]
        message: String,
        #[prost(message, repeated, tag = "3")]
        details: Vec<Any>,
    }
    let retry = RetryInfo {
        retry_delay: Some(Duration {
            seconds: i64::from(seconds),
        }),
    };
    RpcStatus {
        code: Code::ResourceExhausted as i32,
        message: String::new(),
        details: vec![Any {
            type_url: "type.googleapis.com/google.rpc.RetryInfo".into(),
            value: retry.encode_to_vec(),
        }],
    }
    .encode_to_vec()
    .into()
}

/// Requests kept as their bytes (decoded by the receiver's own path), responses encoded with
/// prost.
struct RawRequests;

impl Codec for RawRequests {
    type Encode = ExportLogsServiceResponse;
    type Decode = Bytes;
    type Encoder = RawRequests;
    type Decoder = RawRequests;

    fn encoder(&mut self) -> RawRequests {
        RawRequests
    }

    fn decoder(&mut self) -> RawRequests {
        RawRequests
    }
}

impl Encoder for RawRequests {
    type Item = ExportLogsServiceResponse;
    type Error = Status;

    fn encode(&mut self, item: Self::Item, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst)
            .map_err(|e| Status::internal(format!("cannot encode the response: {e}")))
    }
}

impl Decoder for RawRequests {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_map_to_the_codes_exporters_retry_or_drop() {
        let status = |code: u16| status_of(Refusal::new(StatusCode::from_u16(code).unwrap(), "m"));
        let room = status(429);
        assert_eq!(room.code(), Code::ResourceExhausted);
        assert!(!room.details().is_empty());
        let large = status(413);
        assert_eq!(large.code(), Code::ResourceExhausted);
        assert!(large.details().is_empty(), "not retried");
        assert_eq!(status(400).code(), Code::InvalidArgument);
        assert_eq!(status(503).code(), Code::Unavailable);
        assert_eq!(status(500).code(), Code::Internal);
    }

    #[test]
    fn the_retry_delay_is_a_google_rpc_retry_info() {
        // google.rpc.Status { code: 8, details: [Any { type_url, value: RetryInfo { 1 s } }] }
        let details = retry_info(1);
        let url = b"type.googleapis.com/google.rpc.RetryInfo";
        let mut want = vec![0x08, 0x08, 0x1a, (2 + url.len() + 2 + 4) as u8];
        want.extend([0x0a, url.len() as u8]);
        want.extend(url);
        want.extend([0x12, 0x04, 0x0a, 0x02, 0x08, 0x01]);
        assert_eq!(&details[..], &want[..]);
    }
}
