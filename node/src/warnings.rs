//! `UndeliveredWarnings`: the engine's policy for the "failed and nobody was told" warning
//! (one per error code every ten seconds, each batch counted once), worded for Node; the
//! facade emits what it returns as a process warning. Called on the JavaScript thread.

use loghose::producer::Front;
use loghose::producer::{Failure, UndeliveredWarnings};
use napi_derive::napi;

/// The warnings of one producer.
#[napi]
#[derive(Default)]
pub struct NativeUndeliveredWarnings(UndeliveredWarnings);

#[napi]
impl NativeUndeliveredWarnings {
    #[napi(constructor)]
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes `records` of a batch that failed for good (or was kept in the spool) with nobody
    /// told; the warning to give now, if any.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn note(
        &self,
        batch_id: f64,
        project: String,
        logstore: String,
        code: String,
        message: String,
        kept: bool,
        records: f64,
    ) -> Option<String> {
        let failure = Failure {
            batch_id: batch_id as u64,
            project: &project,
            logstore: &logstore,
            code: &code,
            message: &message,
            kept,
        };
        self.0
            .note_failure(&failure, records.max(0.0) as u64)
            .map(|w| w.text(Front::Node))
    }

    /// What the quiet time held back, to give now.
    #[napi]
    pub fn flush(&self) -> Vec<String> {
        self.0.flush().iter().map(|w| w.text(Front::Node)).collect()
    }
}
