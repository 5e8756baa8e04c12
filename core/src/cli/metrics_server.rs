//! `--metrics-addr HOST:PORT`: the producer's metrics at `GET /metrics` in the Prometheus text
//! format, for as long as the command runs (through the close, so a last scrape sees how it
//! ended). Any other path answers 404, any other method 405.
//!
//! Runs on its own thread (`loghose-metrics`) with a one-thread runtime, so a scrape never
//! waits on the reader or on a close in progress. The address is bound before the producer
//! starts reading, so a port in use fails the command at once with exit status 2.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use crate::metrics;
use crate::producer::Producer;

/// A bound `/metrics` endpoint, not yet serving.
pub(crate) struct MetricsServer {
    listener: std::net::TcpListener,
}

impl MetricsServer {
    /// Binds `addr`; the error names the address.
    pub(crate) fn bind(addr: &str) -> Result<MetricsServer, String> {
        let parsed: SocketAddr = addr
            .parse()
            .map_err(|e| format!("--metrics-addr {addr:?}: not HOST:PORT ({e})"))?;
        let listener = std::net::TcpListener::bind(parsed)
            .map_err(|e| format!("--metrics-addr {addr}: cannot listen: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("--metrics-addr {addr}: {e}"))?;
        Ok(MetricsServer { listener })
    }

    /// `--metrics-addr` as a command takes it: bound if given; what is wrong is printed
    /// (prefixed with `command`) and answered as the usage exit status.
    pub(crate) fn bind_flag(
        addr: Option<&str>,
        command: &str,
    ) -> Result<Option<MetricsServer>, u8> {
        addr.map(MetricsServer::bind).transpose().map_err(|e| {
            eprintln!("{command}: {e}");
            super::EXIT_USAGE
        })
    }

    /// Serves `producer`'s metrics (see [`serve`](Self::serve)) and says where on standard
    /// error; a failure is printed and answered as the usage exit status.
    pub(crate) fn serve_announced(self, producer: &Arc<Producer>, command: &str) -> Result<(), u8> {
        let addr = self.local_addr();
        self.serve(producer).map_err(|e| {
            eprintln!("{command}: {e}");
            super::EXIT_USAGE
        })?;
        if let Some(addr) = addr {
            eprintln!("{command}: metrics at http://{addr}/metrics");
        }
        Ok(())
    }

    /// Where it listens (the port chosen when 0 was asked).
    pub(crate) fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Serves `producer`'s metrics on a thread of its own until the process ends.
    pub(crate) fn serve(self, producer: &Arc<Producer>) -> Result<(), String> {
        let producer = Arc::downgrade(producer);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("--metrics-addr: {e}"))?;
        std::thread::Builder::new()
            .name("loghose-metrics".into())
            .spawn(move || runtime.block_on(accept(self.listener, producer)))
            .map(|_| ())
            .map_err(|e| format!("--metrics-addr: {e}"))
    }
}

async fn accept(listener: std::net::TcpListener, producer: Weak<Producer>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let producer = producer.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let producer = producer.clone();
                async move { Ok::<_, Infallible>(answer(&req, &producer)) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

fn answer<B>(req: &Request<B>, producer: &Weak<Producer>) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, content_type: &str, body: String| {
        let mut resp = Response::new(Full::new(Bytes::from(body)));
        *resp.status_mut() = status;
        if let Ok(v) = content_type.parse() {
            resp.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
        }
        resp
    };
    if req.uri().path() != "/metrics" {
        return reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found: GET /metrics\n".into(),
        );
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "GET /metrics\n".into(),
        );
    }
    let text = producer
        .upgrade()
        .map(|p| metrics::encode_text(&p.metrics()))
        .unwrap_or_default();
    reply(StatusCode::OK, metrics::TEXT_CONTENT_TYPE, text)
}
