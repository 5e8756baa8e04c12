//! The service's limits (docs/protocol.md §9), shared by the producer's validation and the
//! emulator's enforcement so both ends refuse the same things.

/// Largest uncompressed PutLogs body the service accepts (`x-log-bodyrawsize`), 10 MiB.
pub const MAX_RAW_BODY_BYTES: usize = 10 * 1024 * 1024;
/// Largest body as sent (compressed) that the emulator reads before refusing the request.
/// Above the raw limit because zlib and zstd can grow incompressible input slightly.
pub const MAX_SENT_BODY_BYTES: usize = MAX_RAW_BODY_BYTES + 64 * 1024;
/// Largest `LogGroup` (uncompressed) one PutLogs may carry, 5 MiB: the service's log group
/// limit. A `batch_group` request's list may hold several, up to the raw body limit.
pub const MAX_LOG_GROUP_BYTES: usize = 5 * 1024 * 1024;
/// Most logs in one `LogGroup` the emulator accepts (the official Python SDK's bound; the
/// producers themselves stop at [`MAX_LOGS_PER_GROUP`]).
pub const MAX_LOGS_PER_GROUP_ACCEPTED: usize = 512_000;
/// Most fields in one log. The service documents none; this bound is far above any real log
/// and refuses a map of a whole table sent by mistake.
pub const MAX_FIELDS_PER_LOG: usize = 4_096;
/// Largest value of one log field, 1 MiB.
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;
/// Longest key of one log field, in bytes.
pub const MAX_KEY_BYTES: usize = 128;
/// Shortest project or logstore name the service allows, in bytes.
pub const MIN_NAME_BYTES: usize = 3;
/// Longest project or logstore name the service allows, in bytes (the rule: `wire::names`).
pub const MAX_NAME_BYTES: usize = 63;
/// Most shards a logstore can be created with (the service's CreateLogstore takes 1 to 100).
pub const MAX_SHARDS_PER_LOGSTORE: u32 = 100;
/// Longest topic, in bytes.
pub const MAX_TOPIC_BYTES: usize = 128;
/// Longest source, in bytes.
pub const MAX_SOURCE_BYTES: usize = 128;
/// Most logs the producers put in one group (the Java, Go and Rust producers' cap).
pub const MAX_LOGS_PER_GROUP: usize = 40_960;
/// Allowed difference between a request's date and the server's clock, in seconds (±15 min).
pub const MAX_CLOCK_SKEW_SECS: i64 = 15 * 60;
/// The only API version the service speaks.
pub const API_VERSION: &str = "0.6.0";
/// Field keys the service reserves for itself.
pub const RESERVED_KEYS: [&str; 6] = [
    "__time__",
    "__source__",
    "__topic__",
    "__partition_time__",
    "_extract_others_",
    "__extract_others__",
];
