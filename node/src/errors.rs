//! Engine errors as the facade's `Error` subclasses: a native error's message carries its
//! class as a `Class|message` prefix, which the facade turns into the subclass with `code`.
//! Each engine `ErrorKind` has one class, named by the engine.

use loghose::emulator::EmbeddedError;
use loghose::producer::ProducerError;
use napi::{Error, Status};

/// An error the facade raises as class `code`.
pub(crate) fn fail(code: &str, message: impl std::fmt::Display) -> Error {
    Error::new(Status::GenericFailure, format!("{code}|{message}"))
}

pub(crate) fn producer_error(e: ProducerError) -> Error {
    fail(e.kind().class_name(), e)
}

pub(crate) fn emulator_error(e: EmbeddedError) -> Error {
    fail(e.kind().class_name(), e)
}
