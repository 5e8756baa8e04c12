//! The service's error answer: an HTTP status and a JSON `{"errorCode","errorMessage"}` body
//! (docs/protocol.md §8). Every refusal of the emulator is one of these; the request id header is
//! added by the response writer.

use hyper::http::StatusCode;

/// A refusal as the service words it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// `errorCode`, e.g. `SignatureNotMatch`.
    pub code: &'static str,
    /// `errorMessage`, naming what was wrong.
    pub message: String,
}

impl ApiError {
    /// A refusal with a fixed code.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    /// 400 with `code`.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 401 `Unauthorized`.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized", message)
    }

    /// The JSON body.
    pub fn body(&self) -> Vec<u8> {
        serde_json::json!({ "errorCode": self.code, "errorMessage": self.message })
            .to_string()
            .into_bytes()
    }
}

/// The emulator could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmulatorError {
    /// The runtime's threads could not be started.
    #[error("cannot start the emulator's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The TLS certificate or key could not be used.
    #[error("cannot serve HTTPS: {0}")]
    Tls(String),
    /// A configuration value outside what the service allows.
    #[error("`{key}` is invalid: {reason}")]
    Config {
        /// The option.
        key: &'static str,
        /// Why.
        reason: String,
    },
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
