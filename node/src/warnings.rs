//! `UndeliveredWarnings`: the engine's policy for the "failed and nobody was told" warning
//! (one per error code every ten seconds, each batch counted once), worded for Node; the
//! facade emits what it returns as a process warning. Called on the JavaScript thread.

use loghose::producer::bindings::{Failure, Front, UndeliveredWarnings};
use napi_derive::napi;

/// The warnings of one producer.
#[napi]
#[derive(Default)]
pub struct NativeUndeliveredWarnings(UndeliveredWarnings);

/// A batch that failed for good (or was kept in the spool), as a warning names it.
#[napi(object)]
pub struct NativeFailure {
    pub batch_id: f64,
    pub project: String,
    pub logstore: String,
    pub code: String,
    pub message: String,
    pub kept: bool,
}

#[napi]
impl NativeUndeliveredWarnings {
    #[napi(constructor)]
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes `records` of a batch that failed for good (or was kept in the spool) with nobody
    /// told; the warning to give now, if any.
    #[napi]
    pub fn note(&self, batch: NativeFailure, records: f64) -> Option<String> {
        let failure = Failure {
            batch_id: batch.batch_id as u64,
            project: &batch.project,
            logstore: &batch.logstore,
            code: &batch.code,
            message: &batch.message,
            kept: batch.kept,
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
