//! The SLS wire protocol, shared by the producer and the emulator.
//!
//! Nothing here performs I/O or spawns threads: every function is a pure transformation of
//! bytes and strings, callable from any thread. Modules:
//!
//! - [`proto`]: the `Log`/`LogGroup`/`LogGroupList` messages (prost), field numbers as the
//!   service defines them;
//! - [`compress`]: lz4 raw block, zstd frame, zlib deflate and identity bodies;
//! - [`sign`]: signature v1 (HMAC-SHA1), v4 (SLS4-HMAC-SHA256), STS tokens and bearer keys;
//! - [`request`]: composing a complete, signed PutLogs request (headers, path, body);
//! - [`keys`]: the service's rules for field keys, one implementation for both ends;
//! - [`names`]: the service's rules for project and logstore names, likewise;
//! - [`scan`]: a zero-copy validator for `LogGroup` bodies (what the service accepts);
//! - [`hashkey`]: shard hash keys and their routing;
//! - [`limits`]: the service's documented limits, one place for both ends.

pub mod compress;
pub mod hashkey;
pub mod keys;
pub mod limits;
pub mod names;
pub mod proto;
pub mod request;
pub mod scan;
pub mod sign;
