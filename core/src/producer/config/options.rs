//! The table of options: every option of the engine, once — its doc comment, type, default
//! and kind (unit and range). [`ProducerConfig`], its `Default`, [`OPTIONS`] and the ranges
//! validation checks come from here; so do `docs/configuration.md` and the option types of the
//! Python and Node fronts (generated, and checked by `core/tests/generated_options.rs`).
//! [`FRONT_OPTIONS`] lists what one front takes besides.
//!
//! Doc comments here are read by users of every front: they name options as the engine does
//! (Node spells them in camelCase, and the generated Node docs do too), and leave the default
//! and range to the table.

use std::net::SocketAddr;

use super::spec::{self, Front, FrontOption, OptionKind, OptionSpec, Unit};
use super::values::{ConcurrencyMode, SignatureVersion, SpoolSync, TimePrecision, MAX_BATCH_BYTES};
use crate::wire::compress::Compression;
use crate::wire::keys::KeyPolicy;
use crate::wire::limits::{MAX_LOGS_PER_GROUP, MAX_SOURCE_BYTES, MAX_TOPIC_BYTES};
use crate::wire::names::NameKind;

const HOUR_MS: u64 = 3_600_000;

/// `n`, or the largest `usize` where that is smaller (4 GiB - 1 on 32-bit ARM): a limit a
/// `usize` option can hold on this platform.
const fn at_most_usize(n: u64) -> u64 {
    if n > usize::MAX as u64 {
        usize::MAX as u64
    } else {
        n
    }
}

spec::producer_options! {
    /// Service endpoint, `http://` or `https://` (scheme optional, `http` by default), e.g.
    /// `https://cn-hangzhou.log.aliyuncs.com` or the emulator's `http://127.0.0.1:PORT`.
    /// A host name is addressed as `{project}.{host}`; an IP address is connected to directly
    /// with `Host: {project}.{ip}`.
    endpoint: String = String::new(), OptionKind::Text { required: true, max_bytes: 0 };
    /// Default project of records.
    project: String = String::new(), OptionKind::Name(NameKind::Project);
    /// Default logstore of records.
    logstore: String = String::new(), OptionKind::Name(NameKind::Logstore);
    /// AccessKeyId (with `access_key_secret`), unless `api_key` or a credentials provider is
    /// used. With no credentials given at all, the default credential chain finds them:
    /// `ALIBABA_CLOUD_ACCESS_KEY_ID`, `ALIBABA_CLOUD_ACCESS_KEY_SECRET` and
    /// `ALIBABA_CLOUD_SECURITY_TOKEN`, then an OIDC role, the CLI's and the shared profile
    /// files, the ECS instance role, `ALIBABA_CLOUD_CREDENTIALS_URI` (docs/credentials.md).
    access_key_id: String = String::new(), OptionKind::Secret { optional: false };
    /// AccessKeySecret.
    access_key_secret: String = String::new(), OptionKind::Secret { optional: false };
    /// STS security token, with a temporary key.
    security_token: Option<String> = None, OptionKind::Secret { optional: true };
    /// API key sent as `Authorization: Bearer`; exclusive with access keys.
    api_key: Option<String> = None, OptionKind::Secret { optional: true };
    /// Signature version: `v1` (HMAC-SHA1, every SDK's default) or `v4` (SLS4-HMAC-SHA256,
    /// needs `region`).
    signature_version: SignatureVersion = SignatureVersion::V1, OptionKind::Choice(&["v1", "v4"]);
    /// Region for signature v4, e.g. `cn-hangzhou`.
    region: Option<String> = None, OptionKind::OptionalText { max_bytes: 0 };
    /// Default topic (`__topic__`).
    topic: String = String::new(), OptionKind::Text { required: false, max_bytes: MAX_TOPIC_BYTES };
    /// Default source (`__source__`). When absent: this host's outbound IP address.
    source: Option<String> = None, OptionKind::OptionalText { max_bytes: MAX_SOURCE_BYTES };
    /// Tags added to every group, in order, before `__pack_id__`. Keys are 1 to 128 bytes and
    /// not `__pack_id__`.
    tags: Vec<(String, String)> = Vec::new(), OptionKind::Tags;
    /// A batch seals when its raw (uncompressed) size reaches this many bytes (the service
    /// takes log groups of up to 5 MiB; the rest is room for topic, source and tags).
    batch_max_bytes: usize = 3 * 1024 * 1024,
        OptionKind::number(Unit::Bytes, 1, MAX_BATCH_BYTES as u64);
    /// A batch seals when it holds this many logs.
    batch_max_count: usize = 4096,
        OptionKind::number(Unit::Count, 1, MAX_LOGS_PER_GROUP as u64);
    /// A batch seals this long after its first log; 0 sends every add at once.
    linger_ms: u64 = 2000, OptionKind::number(Unit::Milliseconds, 0, HOUR_MS);
    /// Raw bytes held in open, sealed, in-flight and retrying batches at most.
    buffer_max_bytes: usize = 64 * 1024 * 1024, OptionKind::Number {
        unit: Unit::Bytes,
        min: 1,
        max: at_most_usize(1 << 40),
        at_least: Some("batch_max_bytes"),
        power_of_two: false,
    };
    /// When the buffer is full, an add waits up to this long for room, then fails with
    /// `BufferFull`. 0: fail at once, never block the caller.
    max_block_ms: u64 = 0, OptionKind::number(Unit::Milliseconds, 0, HOUR_MS);
    /// The fewest batches at once an adaptive destination (`send_concurrency_mode`) is cut to.
    send_concurrency_min: usize = 1, OptionKind::number(Unit::Count, 1, 1024);
    /// Batches being sent at once, over every destination; with `send_concurrency_mode`
    /// `adaptive`, also the most one destination may be given.
    send_concurrency: usize = 8, OptionKind::Number {
        unit: Unit::Count,
        min: 1,
        max: 1024,
        at_least: Some("send_concurrency_min"),
        power_of_two: false,
    };
    /// `adaptive`: each destination (project and logstore) is given as many batches at once
    /// as its round trips allow, from 2, doubling while they stay flat, halved when the service
    /// pushes back (403, 429, 503, a timeout) and cut by a tenth when round trips rise; after a
    /// push back its requests are also paced to a rate that grows back slowly (docs/network.md).
    /// `fixed`: always `send_concurrency`, never paced.
    send_concurrency_mode: ConcurrencyMode = ConcurrencyMode::Adaptive,
        OptionKind::Choice(&["adaptive", "fixed"]);
    /// Body compression.
    compression: Compression = Compression::Lz4,
        OptionKind::Choice(&["lz4", "zstd", "deflate", "none"]);
    /// TCP connect timeout.
    connect_timeout_ms: u64 = 10_000, OptionKind::number(Unit::Milliseconds, 1, 600_000);
    /// Whole-request timeout.
    request_timeout_ms: u64 = 15_000, OptionKind::number(Unit::Milliseconds, 1, HOUR_MS);
    /// Attempts per batch, the first included; 1 means no retry.
    max_attempts: u32 = 10, OptionKind::number(Unit::Count, 1, 1_000_000);
    /// First retry delay (full jitter: each delay is random in `[0, min(cap, base·2^n)]`; after
    /// a quota answer (403, 429) at least 500 ms, spread over as much again).
    backoff_base_ms: u64 = 200, OptionKind::number(Unit::Milliseconds, 1, HOUR_MS);
    /// Longest retry delay.
    backoff_max_ms: u64 = 10_000, OptionKind::Number {
        unit: Unit::Milliseconds,
        min: 1,
        max: HOUR_MS,
        at_least: Some("backoff_base_ms"),
        power_of_two: false,
    };
    /// A batch not delivered this long after its first log fails.
    delivery_timeout_ms: u64 = 600_000,
        OptionKind::number(Unit::Milliseconds, 1, 30 * 24 * HOUR_MS);
    /// Extra attempts after a 401 (credentials may rotate meanwhile).
    unauthorized_attempts: u32 = 3, OptionKind::number(Unit::Count, 0, 1000);
    /// PEM file of an extra CA to trust for HTTPS (certificate checks stay on).
    ca_file: Option<String> = None, OptionKind::OptionalText { max_bytes: 0 };
    /// Connect to this `host:port` whatever the endpoint resolves to (the request keeps its
    /// Host).
    remote_address: Option<SocketAddr> = None, OptionKind::Address;
    /// Map shard keys onto `shard_buckets` evenly spread hash keys (md5), as the Go and Java
    /// producers do. Off: shard keys are sent as given (hex).
    adjust_shard_hash: bool = false, OptionKind::Flag;
    /// Buckets for `adjust_shard_hash`.
    shard_buckets: u32 = 64, OptionKind::Number {
        unit: Unit::Count,
        min: 1,
        max: 256,
        at_least: None,
        power_of_two: true,
    };
    /// Add the `__pack_id__` tag (`PREFIX-SEQ`), stable across retries.
    pack_id: bool = true, OptionKind::Flag;
    /// Which field keys an add accepts: `service` (what the service accepts: 1 to 128 bytes of
    /// UTF-8 without control characters, not a reserved name) or `strict` (also
    /// `[A-Za-z_][A-Za-z0-9_]*`).
    key_policy: KeyPolicy = KeyPolicy::Service, OptionKind::Choice(&["service", "strict"]);
    /// How long dropping a producer (Rust), or closing it when the environment exits (Node),
    /// waits for delivery.
    drop_timeout_ms: u64 = 2000, OptionKind::number(Unit::Milliseconds, 0, 600_000);
    /// A directory where every accepted record is also kept until its batch is delivered, so
    /// that a killed process loses nothing: the next producer opened on the directory sends
    /// what was left. Producers share it: each takes a slot directory of its own under it
    /// (`slot-<n>`), so the worker processes of a pre-fork server can all be given the same
    /// `spool_dir`; what a process that died left in its slot is sent by the next producer
    /// that takes the slot, or within about a second by a live producer on the same directory
    /// that finds it unheld. Created private to the user (0700, files 0600). Absent: memory
    /// only.
    spool_dir: Option<String> = None, OptionKind::OptionalText { max_bytes: 0 };
    /// How many producers may hold a slot of `spool_dir` at once; one more is refused with
    /// the spool-locked error naming the directory and a holder's pid (1: one producer per
    /// directory).
    spool_slots: u32 = 64, OptionKind::number(Unit::Count, 1, 1024);
    /// Most bytes of spool files on disk, per producer (per slot); beyond it records wait or
    /// fail as for a full buffer.
    spool_max_bytes: u64 = 1 << 30, OptionKind::number(Unit::Bytes, 1 << 20, 1 << 50);
    /// How far the spool is synced to disk: `none` (survives the process's death, not a
    /// power loss), `batch` (each batch synced before it is sent; when the disk fails the
    /// sync, written again on a fresh file) or `interval:<ms>` (a power loss loses at most
    /// the last interval). Whatever it says, a close that leaves records in the spool syncs
    /// them first, and a clean close syncs the directory after deleting its files.
    spool_sync: SpoolSync = SpoolSync::None,
        OptionKind::Choice(&["none", "batch", "interval:<ms>"]);
    /// How long the Python and Node fronts spend delivering what is held when the process
    /// gets SIGTERM or SIGINT, before letting the signal take its usual course (the
    /// application's own handler, or the default: the process ends by that signal). 0 turns
    /// the handling off. The Rust engine itself installs no handler: a Rust application calls
    /// `close` from its own.
    close_on_signal_ms: u64 = 5000, OptionKind::number(Unit::Milliseconds, 0, 600_000);
    /// How much of each log's time is written: `s` (seconds only, what the vendor's C producer
    /// writes; reads the coarse clock), `ms` or `ns`. Fewer sub-second digits compress better
    /// when many records share a millisecond; `ns` keeps the order of records within one.
    time_precision: TimePrecision = TimePrecision::Nanoseconds,
        OptionKind::Choice(&["s", "ms", "ns"]);
}

/// What the Python and Node fronts take besides the engine's options.
pub const FRONT_OPTIONS: &[FrontOption] = &[
    FrontOption {
        front: Front::Python,
        name: "on_delivery",
        type_name: "Callable[[list[DeliveryReport]], object] | None",
        default: "None",
        doc: "Called on the producer's report thread with each list of delivery reports.",
    },
    FrontOption {
        front: Front::Python,
        name: "credentials_provider",
        type_name: "Any",
        default: "None",
        doc: "An object with `get_credentials()` (the official SDK's providers have it) or a \
              function returning credentials; asked before every attempt, so a key rotated \
              between two retries is used.",
    },
    FrontOption {
        front: Front::Python,
        name: "default",
        type_name: "Callable[[Any], Any] | None",
        default: "None",
        doc: "Converts a value that has no text form of its own, as `json.dumps`' `default` \
              would; its result is converted again. None: a TypeError naming the field.",
    },
    FrontOption {
        front: Front::Python,
        name: "exit_timeout",
        type_name: "float | None",
        default: "None (5 seconds)",
        doc: "Seconds this producer may take to deliver what it holds when the process ends \
              (at exit, in a multiprocessing child, after a signal).",
    },
    FrontOption {
        front: Front::Node,
        name: "credentialsProvider",
        type_name: "CredentialsProvider",
        default: "none",
        doc: "Credentials asked before every attempt, so a token rotated between two retries \
              is used; the answer applies from the next attempt on (the first attempt waits \
              for the first answer).",
    },
    FrontOption {
        front: Front::Node,
        name: "exitTimeoutMs",
        type_name: "number",
        default: "5000",
        doc: "How long pending records keep the process alive without progress, in \
              milliseconds.",
    },
    FrontOption {
        front: Front::Node,
        name: "statsIntervalMs",
        type_name: "number",
        default: "0",
        doc: "Emit a `stats` event this often, in milliseconds; 0: never.",
    },
    FrontOption {
        front: Front::Node,
        name: "default",
        type_name: "(value: unknown) => unknown",
        default: "none",
        doc: "Converts a value that has no text form of its own (a function, a symbol), as \
              `JSON.stringify`'s replacer would; its result is converted again. None: a \
              TypeError naming the field.",
    },
];
