//! The producer's error type. Every error has a [`kind`](ProducerError::kind), a small stable
//! enum that the Python and Node fronts map to their own exception classes; the message names
//! what is wrong (the key, the limit, the value).

use super::config::ConfigError;
use super::encode::RecordError;

/// Why a producer could not be built or a record was not accepted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProducerError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The record is invalid; nothing was accepted.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The buffer is full; the record was not accepted (counted as dropped).
    #[error("buffer full: {used} of {limit} bytes in use, record needs {needed} (waited {waited_ms} ms)")]
    BufferFull {
        /// Bytes in use.
        used: usize,
        /// `buffer_max_bytes`.
        limit: usize,
        /// The record's size.
        needed: usize,
        /// How long the add waited for room.
        waited_ms: u64,
    },
    /// The spool directory holds `spool_max_bytes`, or its disk has no room for another
    /// segment; the record was not accepted (counted as dropped).
    #[error(
        "spool full: {used} bytes of spool files, {} (waited {waited_ms} ms)",
        if *disk_full { "and the disk holding spool_dir has no room for another segment".to_owned() } else { format!("spool_max_bytes {limit}") }
    )]
    SpoolFull {
        /// Bytes of spool files.
        used: usize,
        /// `spool_max_bytes`.
        limit: usize,
        /// How long the add waited for room.
        waited_ms: u64,
        /// The disk ran out of space before the limit was reached.
        disk_full: bool,
    },
    /// The spool directory cannot be used (every slot held by other producers, or a file
    /// error).
    #[error(transparent)]
    Spool(#[from] super::spool::files::SpoolError),
    /// The producer is closed; the record was not accepted.
    #[error("the producer is closed")]
    Closed,
    /// The producer was built in another process and inherited through `fork`: its I/O
    /// threads live in the parent, so it can neither send nor flush here.
    #[error("this producer was created before fork(); its I/O threads live in the parent. Create a new producer in the child")]
    Inherited,
    /// The shared I/O runtime or a producer thread could not start.
    #[error("cannot start the I/O runtime: {0}")]
    Engine(String),
    /// The TLS settings (`ca_file`) could not be used.
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// `ca_file` could not be read.
    #[error("cannot read ca_file {path}: {source}")]
    CaFile {
        /// The path.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The class of a [`ProducerError`], stable across versions: what a caller (or a binding's
/// exception hierarchy) branches on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A configuration (or TLS setting) that cannot work.
    Config,
    /// A record refused as invalid.
    InvalidRecord,
    /// A record refused because the buffer is full.
    BufferFull,
    /// A record refused because the producer is closed.
    Closed,
    /// The engine cannot serve the call: a thread or runtime could not start, or the
    /// producer was inherited through `fork`.
    Engine,
    /// Every slot of `spool_dir` is held by another producer (`spool_slots`).
    SpoolLocked,
}

impl ErrorKind {
    /// The name of the exception class every front raises for this kind: loghose's error
    /// hierarchy is the same in Python and Node (`LoghoseError` and its subclasses).
    pub fn class_name(self) -> &'static str {
        match self {
            ErrorKind::Config => "ConfigError",
            ErrorKind::InvalidRecord => "InvalidRecordError",
            ErrorKind::BufferFull => "BufferFullError",
            ErrorKind::Closed => "ProducerClosedError",
            ErrorKind::Engine => "LoghoseError",
            ErrorKind::SpoolLocked => "SpoolLockedError",
        }
    }
}

impl ProducerError {
    /// The class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ProducerError::Spool(super::spool::files::SpoolError::Locked { .. }) => {
                ErrorKind::SpoolLocked
            }
            ProducerError::Config(_)
            | ProducerError::CaFile { .. }
            | ProducerError::Tls(_)
            | ProducerError::Spool(_) => ErrorKind::Config,
            ProducerError::Record(_) => ErrorKind::InvalidRecord,
            ProducerError::BufferFull { .. } | ProducerError::SpoolFull { .. } => {
                ErrorKind::BufferFull
            }
            ProducerError::Closed => ErrorKind::Closed,
            ProducerError::Engine(_) | ProducerError::Inherited => ErrorKind::Engine,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_its_kind() {
        let cases = [
            (
                ProducerError::Config(ConfigError::Missing { key: "project" }),
                ErrorKind::Config,
            ),
            (ProducerError::Tls("bad".into()), ErrorKind::Config),
            (
                ProducerError::Record(RecordError::Empty),
                ErrorKind::InvalidRecord,
            ),
            (
                ProducerError::BufferFull {
                    used: 1,
                    limit: 1,
                    needed: 1,
                    waited_ms: 0,
                },
                ErrorKind::BufferFull,
            ),
            (ProducerError::Closed, ErrorKind::Closed),
            (ProducerError::Engine("x".into()), ErrorKind::Engine),
            (ProducerError::Inherited, ErrorKind::Engine),
            (
                ProducerError::Spool(super::super::spool::files::SpoolError::Locked {
                    dir: "/s".into(),
                    slots: 1,
                    pid: "7".into(),
                }),
                ErrorKind::SpoolLocked,
            ),
            (
                ProducerError::Spool(super::super::spool::files::SpoolError::Io {
                    dir: "/s".into(),
                    what: "cannot list it",
                    source: std::io::Error::other("x"),
                }),
                ErrorKind::Config,
            ),
        ];
        for (error, kind) in cases {
            assert_eq!(error.kind(), kind, "{error}");
        }
    }
}
