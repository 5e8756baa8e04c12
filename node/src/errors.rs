//! Engine errors as the facade's `Error` subclasses: a native error's message carries its
//! class as a `Class|message` prefix, which the facade turns into the subclass with `code`.
//! Each engine [`ErrorKind`] has one class.

use loghose::emulator::EmbeddedError;
use loghose::producer::{ErrorKind, ProducerError};
use napi::{Error, Status};

/// An error the facade raises as class `code`.
pub(crate) fn fail(code: &str, message: impl std::fmt::Display) -> Error {
    Error::new(Status::GenericFailure, format!("{code}|{message}"))
}

/// The facade's class of an engine error kind.
fn class_of(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Config => "ConfigError",
        ErrorKind::InvalidRecord => "InvalidRecordError",
        ErrorKind::BufferFull => "BufferFullError",
        ErrorKind::Closed => "ProducerClosedError",
        _ => "LoghoseError",
    }
}

pub(crate) fn producer_error(e: ProducerError) -> Error {
    fail(class_of(e.kind()), e)
}

pub(crate) fn emulator_error(e: EmbeddedError) -> Error {
    fail(
        if e.is_config() {
            "ConfigError"
        } else {
            "LoghoseError"
        },
        e,
    )
}
