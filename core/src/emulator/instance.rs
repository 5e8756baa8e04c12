//! One running emulator ([`Emulator`]): started on a runtime of its own from any thread,
//! listening before `start` returns, read and steered through its methods, stopped when
//! dropped (the listener closed before `drop` returns).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use super::config::{tls_acceptor, EmulatorConfig};
use super::error::{ApiError, EmulatorError};
use super::faults::Fault;
use super::network::NetworkConfig;
use super::quotas::QuotaConfig;
use super::service::{Counters, Service};
use super::store::{LogstoreTotals, StoredLog};
use crate::wire::sign::Credentials;

/// A running emulator. Dropping it stops it.
pub struct Emulator {
    addr: SocketAddr,
    https: bool,
    service: Arc<Service>,
    stop: watch::Sender<bool>,
    stopped: Option<std::sync::mpsc::Receiver<()>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Emulator {
    /// Starts an emulator with `config` on a runtime of its own; returns once it is listening.
    pub fn start(config: EmulatorConfig) -> Result<Emulator, EmulatorError> {
        config.check()?;
        let acceptor = config.tls.as_ref().map(tls_acceptor).transpose()?;
        let https = acceptor.is_some();
        // Signals go to the application's threads, not the emulator's (see `threads`).
        let runtime = crate::threads::with_signals_blocked(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(config.worker_threads.max(1))
                .thread_name("loghose-emulator")
                .on_thread_start(crate::threads::mark_engine_thread)
                .enable_all()
                .build()
        })
        .map_err(EmulatorError::Runtime)?;
        let addr = SocketAddr::new(config.host, config.port);
        let listener = {
            let _guard = runtime.enter();
            let std_listener = std::net::TcpListener::bind(addr)
                .map_err(|source| EmulatorError::Bind { addr, source })?;
            std_listener
                .set_nonblocking(true)
                .map_err(|source| EmulatorError::Bind { addr, source })?;
            TcpListener::from_std(std_listener)
                .map_err(|source| EmulatorError::Bind { addr, source })?
        };
        let addr = listener
            .local_addr()
            .map_err(|source| EmulatorError::Bind { addr, source })?;
        let limits = super::server::Limits {
            header_read_timeout: Duration::from_millis(config.header_read_timeout_ms.max(1)),
            body_idle_timeout: Duration::from_millis(config.body_idle_timeout_ms.max(1)),
            max_connections: super::server::connection_cap(config.max_connections),
            max_body_buffer_bytes: config.max_body_buffer_bytes,
        };
        let service = Arc::new(Service::new(config));
        let (stop, stop_rx) = watch::channel(false);
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let svc = service.clone();
        runtime.spawn(async move {
            super::server::accept_loop(listener, svc, stop_rx, acceptor, limits).await;
            let _ = done_tx.send(());
        });
        Ok(Emulator {
            addr,
            https,
            service,
            stop,
            stopped: Some(done_rx),
            runtime: Some(runtime),
        })
    }

    /// Starts an emulator with the default configuration.
    pub fn start_default() -> Result<Emulator, EmulatorError> {
        Emulator::start(EmulatorConfig::default())
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint to give a client: `http://127.0.0.1:PORT` (`https://` with TLS).
    pub fn endpoint(&self) -> String {
        format!(
            "{}://{}",
            if self.https { "https" } else { "http" },
            self.addr
        )
    }

    /// The first permanent key it accepts (the default one unless configured otherwise).
    pub fn credentials(&self) -> Option<Credentials> {
        self.service
            .config()
            .access_keys
            .first()
            .map(|k| Credentials::new(k.id.clone(), k.secret.clone()))
    }

    /// The request handler, for driving it without the network.
    pub fn service(&self) -> &Arc<Service> {
        &self.service
    }

    /// Every retained log of a logstore, decoded, shard by shard in arrival order.
    pub fn logs(&self, project: &str, logstore: &str) -> Vec<StoredLog> {
        self.service.store.logs(project, logstore)
    }

    /// Exact totals of a logstore, or `None` if it does not exist.
    pub fn totals(&self, project: &str, logstore: &str) -> Option<LogstoreTotals> {
        self.service.store.totals(project, logstore)
    }

    /// A snapshot of the counters.
    pub fn counters(&self) -> Counters {
        self.service.counters()
    }

    /// Adds a fault rule.
    pub fn inject(&self, fault: Fault) {
        self.service.faults.add(fault);
    }

    /// Removes every fault rule.
    pub fn clear_faults(&self) {
        self.service.faults.clear();
    }

    /// Changes the network clients see (latency, jitter, bandwidth) from the next request.
    pub fn set_network(&self, network: NetworkConfig) {
        self.service.network.replace(network);
    }

    /// Changes the write quotas; their buckets start full.
    pub fn set_quotas(&self, quotas: QuotaConfig) {
        self.service.quotas.replace(quotas);
    }

    /// Creates a logstore (needed when auto-create is off); `shards` defaults to the config's
    /// and is 1 to 100, as the service allows (otherwise a `ParameterInvalid` refusal).
    pub fn create_logstore(
        &self,
        project: &str,
        logstore: &str,
        shards: Option<u32>,
    ) -> Result<(), ApiError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as u32);
        self.service.store.create(project, logstore, shards, now)
    }

    /// Forgets every stored log, counter and fault.
    pub fn reset(&self) {
        self.service.reset();
    }

    /// Stops serving; the port is free when this returns.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        let _ = self.stop.send(true);
        if let Some(done) = self.stopped.take() {
            let _ = done.recv_timeout(Duration::from_secs(2));
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.stop_now();
    }
}
