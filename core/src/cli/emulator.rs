//! `loghose emulator` (and the `loghose-emulator` binary): the local SLS emulator as a
//! command-line server.
//!
//! Prints its endpoint URL as the first line on stdout (so scripts can read it), then serves
//! until SIGINT or SIGTERM. It raises its own open-file limit to the hard limit first, so
//! `--max-connections` is not cut down by a low default soft limit. Runs on the calling thread
//! (which waits for the signal) and the emulator's own runtime.

use std::io::Write as _;
use std::net::IpAddr;

use crate::emulator::{
    AccessKey, Emulator, EmulatorConfig, EmulatorTls, NetworkConfig, QuotaConfig, StsKey,
    DEFAULT_ACCESS_KEY_ID, DEFAULT_ACCESS_KEY_SECRET, DEFAULT_PROJECT,
};
use crate::wire::keys::KeyPolicy;

/// A local server that accepts SLS PutLogs as the real service does.
#[derive(clap::Args, Debug)]
pub struct EmulatorArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// AccessKeyId to accept.
    #[arg(long, default_value = DEFAULT_ACCESS_KEY_ID)]
    access_key_id: String,
    /// AccessKeySecret of that key.
    #[arg(long, default_value = DEFAULT_ACCESS_KEY_SECRET)]
    access_key_secret: String,
    /// A temporary key to accept, as ID:SECRET:TOKEN (repeatable).
    #[arg(long = "sts-key", value_name = "ID:SECRET:TOKEN")]
    sts_keys: Vec<String>,
    /// An API key to accept as `Authorization: Bearer` (repeatable).
    #[arg(long = "api-key")]
    api_keys: Vec<String>,
    /// Seconds a key from the emulated STS or ECS metadata service lives (the default
    /// credential chain's sources; point LOGHOSE_STS_ENDPOINT or LOGHOSE_ECS_METADATA_ENDPOINT
    /// here).
    #[arg(long, default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..))]
    credentials_lifetime_secs: u64,
    /// Project for requests whose Host names none (IP addresses, localhost).
    #[arg(long, default_value = DEFAULT_PROJECT)]
    default_project: String,
    /// Refuse unknown projects and logstores (404) instead of creating them.
    #[arg(long)]
    no_auto_create: bool,
    /// Shards of each new logstore.
    #[arg(long, default_value_t = 2)]
    shards: u32,
    /// MiB of accepted logs kept per logstore, as received (compressed bodies stay compressed;
    /// older ones are dropped; counters stay exact).
    #[arg(long, default_value_t = 256)]
    retention_mib: usize,
    /// Milliseconds added to every Log Service request's round trip (the emulator's own API
    /// is never delayed).
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Each round trip is the latency plus or minus up to this many milliseconds.
    #[arg(long, default_value_t = 0)]
    jitter_ms: u64,
    /// Bytes per second of the link request bodies share (0: unlimited).
    #[arg(long, default_value_t = 0)]
    bandwidth_bytes_per_sec: u64,
    /// The service's write quotas: 100 GB and 600 000 writes a minute per project, 5 MB and
    /// 500 writes a second per shard, auto split on (the flags below override each).
    #[arg(long)]
    service_quotas: bool,
    /// Raw bytes a project takes per minute (403 WriteQuotaExceed past it).
    #[arg(long)]
    project_write_bytes_per_min: Option<u64>,
    /// PutLogs requests a project takes per minute (403 WriteQuotaExceed past it).
    #[arg(long)]
    project_writes_per_min: Option<u64>,
    /// Raw bytes a shard takes per second (403 ShardWriteQuotaExceed past it).
    #[arg(long)]
    shard_write_bytes_per_sec: Option<u64>,
    /// PutLogs requests a shard takes per second (403 ShardWriteQuotaExceed past it).
    #[arg(long)]
    shard_writes_per_sec: Option<u64>,
    /// Add a shard to a logstore whose shards refuse a request (at most one a second, up to
    /// the logstore's maxSplitShard).
    #[arg(long)]
    auto_split: bool,
    /// Accept only keys matching [A-Za-z_][A-Za-z0-9_]*.
    #[arg(long)]
    strict_keys: bool,
    /// Threads serving requests.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Serve HTTPS with this certificate chain (PEM file); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// Private key (PEM file) of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// Milliseconds a connection may take to send a whole request head.
    #[arg(long, default_value_t = 20_000)]
    header_read_timeout_ms: u64,
    /// Milliseconds a request body may go without sending anything.
    #[arg(long, default_value_t = 10_000)]
    body_idle_timeout_ms: u64,
    /// Connections served at once; more are answered 503 and closed (lowered to what the
    /// open-file limit leaves room for).
    #[arg(long, default_value_t = 4096)]
    max_connections: usize,
    /// MiB of request bodies buffered at once; a body that does not fit is answered 503.
    #[arg(long, default_value_t = 48)]
    max_body_buffer_mib: usize,
    /// Most logstores held at once; auto-create stops there.
    #[arg(long, default_value_t = 1000)]
    max_logstores: usize,
    /// Require `Authorization: Bearer TOKEN` on every /_emulator/ request. Needed to listen
    /// on an address other than loopback.
    #[arg(long, env = "LOGHOSE_EMULATOR_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
}

/// Makes the C allocator serve every block of 256 KiB or more with its own mapping, returned
/// to the system when freed. glibc otherwise raises that threshold after the first large free,
/// and the bodies of a burst of large or abandoned requests then stay in the process's heap
/// long after the connections are gone.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn return_large_blocks_to_the_system() {
    // SAFETY: mallopt only changes the allocator's tuning; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn return_large_blocks_to_the_system() {}

/// Every ten seconds, hands the C allocator's free memory back to the system: after a burst of
/// connections (each with its buffers) ends, the freed blocks are scattered through the heap
/// and glibc would keep them.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_free_memory_periodically() {
    let _ = std::thread::Builder::new()
        .name("loghose-emulator-trim".into())
        .spawn(|| loop {
            std::thread::sleep(std::time::Duration::from_secs(10));
            // SAFETY: malloc_trim only releases free memory; any thread may call it.
            unsafe {
                libc::malloc_trim(0);
            }
        });
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_free_memory_periodically() {}

/// Runs the emulator until SIGINT or SIGTERM; `name` prefixes its messages.
pub fn run(args: EmulatorArgs, name: &str) -> u8 {
    return_large_blocks_to_the_system();
    let mut sts_keys = Vec::new();
    for spec in &args.sts_keys {
        let mut parts = spec.splitn(3, ':');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(id), Some(secret), Some(token)) if !id.is_empty() && !token.is_empty() => {
                sts_keys.push(StsKey {
                    id: id.into(),
                    secret: secret.into(),
                    token: token.into(),
                })
            }
            _ => {
                eprintln!("{name}: --sts-key wants ID:SECRET:TOKEN, got {spec:?}");
                return super::EXIT_USAGE;
            }
        }
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            match (std::fs::read_to_string(cert), std::fs::read_to_string(key)) {
                (Ok(cert_pem), Ok(key_pem)) => Some(EmulatorTls { cert_pem, key_pem }),
                (Err(e), _) | (_, Err(e)) => {
                    eprintln!("{name}: cannot read the TLS files: {e}");
                    return super::EXIT_USAGE;
                }
            }
        }
        _ => None,
    };
    let mut quotas = if args.service_quotas {
        QuotaConfig::service()
    } else {
        QuotaConfig::default()
    };
    for (flag, field) in [
        (
            args.project_write_bytes_per_min,
            &mut quotas.project_write_bytes_per_min,
        ),
        (
            args.project_writes_per_min,
            &mut quotas.project_writes_per_min,
        ),
        (
            args.shard_write_bytes_per_sec,
            &mut quotas.shard_write_bytes_per_sec,
        ),
        (args.shard_writes_per_sec, &mut quotas.shard_writes_per_sec),
    ] {
        if let Some(value) = flag {
            *field = value;
        }
    }
    quotas.auto_split |= args.auto_split;
    let config = EmulatorConfig {
        tls,
        host: args.host,
        port: args.port,
        access_keys: vec![AccessKey {
            id: args.access_key_id,
            secret: args.access_key_secret,
        }],
        sts_keys,
        credentials_lifetime_secs: args.credentials_lifetime_secs,
        api_keys: args.api_keys,
        default_project: args.default_project,
        auto_create: !args.no_auto_create,
        shard_count: args.shards,
        retention_bytes: args.retention_mib.saturating_mul(1024 * 1024),
        key_policy: if args.strict_keys {
            KeyPolicy::Strict
        } else {
            KeyPolicy::Service
        },
        worker_threads: args.threads.max(1),
        header_read_timeout_ms: args.header_read_timeout_ms,
        body_idle_timeout_ms: args.body_idle_timeout_ms,
        max_connections: args.max_connections,
        max_logstores: args.max_logstores,
        max_body_buffer_bytes: args.max_body_buffer_mib.saturating_mul(1024 * 1024),
        admin_token: args.admin_token,
        network: NetworkConfig {
            latency_ms: args.latency_ms,
            jitter_ms: args.jitter_ms,
            bandwidth_bytes_per_sec: args.bandwidth_bytes_per_sec,
        },
        quotas,
        ..EmulatorConfig::default()
    };
    crate::emulator::raise_open_file_limit();
    trim_free_memory_periodically();
    let emulator = match Emulator::start(config) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("{name}: {e}");
            return super::EXIT_NOT_DELIVERED;
        }
    };
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{}", emulator.endpoint());
    let _ = stdout.flush();
    drop(stdout);

    let signals = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let Ok(signals) = signals else {
        eprintln!("{name}: cannot wait for signals");
        return super::EXIT_NOT_DELIVERED;
    };
    signals.block_on(super::wait_for_stop());
    emulator.shutdown();
    super::EXIT_DELIVERED
}
