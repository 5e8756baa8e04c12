//! The engine shared by every producer of the process: one tokio runtime ("loghose-io", two
//! worker threads) that runs all sends, retries and batch deadlines, and HTTP clients shared
//! between producers with the same transport settings, so a process with ten thousand
//! producers still has two I/O threads and one connection pool per setting.
//!
//! The runtime starts on first use and lives for the process; a forked child that builds a
//! producer gets a fresh engine (the parent's threads do not survive `fork`). Its threads never
//! run user code (report callbacks run on each producer's reporter thread).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::error::ProducerError;

struct Engine {
    runtime: tokio::runtime::Runtime,
    clients: Mutex<HashMap<ClientKey, reqwest::Client>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ClientKey {
    pub connect_timeout_ms: u64,
    pub request_timeout_ms: u64,
    pub ca_pem: Option<Vec<u8>>,
    pub remote_address: Option<SocketAddr>,
    pub pool_size: usize,
    /// The proxy variables as the producer found them (reqwest reads them when a client is
    /// built): a producer made after they change gets a client that follows them.
    pub proxy_env: Vec<(&'static str, String)>,
}

/// The environment variables a client's proxy follows, as set now.
pub(crate) fn proxy_env() -> Vec<(&'static str, String)> {
    [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ]
    .into_iter()
    .filter_map(|name| Some((name, std::env::var(name).ok()?)))
    .collect()
}

/// The engine of this process, tagged with the pid that built it.
static ENGINE: Mutex<Option<(u32, &'static Engine)>> = Mutex::new(None);

/// This process's id once [`process_id`] has read it; 0 before, and in a forked child until
/// it reads it again.
static CACHED_PID: AtomicU32 = AtomicU32::new(0);

/// This process's id, cached: the engine checks it on every add (to refuse a producer
/// inherited through `fork`), and `getpid` is a system call. A fork handler clears the cache
/// in the child. Inlined: on the add path it is one load and a compare.
#[inline]
pub fn process_id() -> u32 {
    let cached = CACHED_PID.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    read_process_id()
}

#[cold]
#[inline(never)]
fn read_process_id() -> u32 {
    #[cfg(unix)]
    static REGISTER: std::sync::Once = std::sync::Once::new();
    #[cfg(unix)]
    extern "C" fn forget_pid_in_child() {
        CACHED_PID.store(0, Ordering::Relaxed);
    }
    // Only Unix has fork; elsewhere the cached id never goes stale.
    #[cfg(unix)]
    REGISTER.call_once(|| {
        // SAFETY: registers a handler that only stores to an atomic, which is
        // async-signal-safe and valid in a freshly forked child.
        unsafe {
            libc::pthread_atfork(None, None, Some(forget_pid_in_child));
        }
    });
    let pid = std::process::id();
    CACHED_PID.store(pid, Ordering::Relaxed);
    pid
}

fn engine() -> Result<&'static Engine, ProducerError> {
    let pid = process_id();
    let mut slot = ENGINE.lock();
    if let Some((owner, engine)) = *slot {
        if owner == pid {
            return Ok(engine);
        }
    }
    // First use, or a forked child: the parent's runtime threads do not exist here, so the
    // child gets an engine of its own. The parent's is leaked, not dropped: dropping it would
    // wait for threads that were never forked.
    // Its threads (and the blocking pool's, started from them) keep signals off (`threads`).
    let runtime = crate::threads::with_signals_blocked(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("loghose-io")
            .on_thread_start(crate::threads::mark_engine_thread)
            .enable_all()
            .build()
    })
    .map_err(|e| ProducerError::Engine(e.to_string()))?;
    let engine: &'static Engine = Box::leak(Box::new(Engine {
        runtime,
        clients: Mutex::new(HashMap::new()),
    }));
    *slot = Some((pid, engine));
    Ok(engine)
}

/// The shared runtime's handle.
pub(crate) fn handle() -> Result<tokio::runtime::Handle, ProducerError> {
    engine().map(|e| e.runtime.handle().clone())
}

/// Resolves every name to one fixed address (the `remote_address` option), so TLS and `Host`
/// still use the real name.
struct FixedResolver(SocketAddr);

impl reqwest::dns::Resolve for FixedResolver {
    fn resolve(&self, _name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let addr = self.0;
        Box::pin(async move { Ok(Box::new(std::iter::once(addr)) as reqwest::dns::Addrs) })
    }
}

/// A client for these transport settings, shared with every producer that has the same.
pub(crate) fn client(key: &ClientKey) -> Result<reqwest::Client, ProducerError> {
    let engine = engine()?;
    if let Some(c) = engine.clients.lock().get(key) {
        return Ok(c.clone());
    }
    let mut builder = reqwest::Client::builder()
        .connect_timeout(Duration::from_millis(key.connect_timeout_ms))
        .pool_max_idle_per_host(key.pool_size)
        .pool_idle_timeout(Duration::from_secs(50))
        .tcp_nodelay(true)
        .user_agent(concat!("loghose/", env!("CARGO_PKG_VERSION")));
    if let Some(pem) = &key.ca_pem {
        let certs = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| ProducerError::Tls(e.to_string()))?;
        if certs.is_empty() {
            return Err(ProducerError::Tls(
                "ca_file holds no PEM certificate".into(),
            ));
        }
        for cert in certs {
            builder = builder.add_root_certificate(cert);
        }
    }
    if let Some(addr) = key.remote_address {
        builder = builder.dns_resolver(Arc::new(FixedResolver(addr)));
    }
    let client = builder
        .build()
        .map_err(|e| ProducerError::Tls(e.to_string()))?;
    engine.clients.lock().insert(key.clone(), client.clone());
    Ok(client)
}
