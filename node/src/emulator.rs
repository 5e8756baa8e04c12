//! `NativeEmulator`: the engine's embedded emulator, held for the facade's `Emulator`.

use loghose::emulator::EmbeddedEmulator;
use napi::{Env, Result};
use napi_derive::napi;

use crate::errors::RaiseIn;
use crate::views::{EmulatorCounters, LogstoreTotals};

/// The embedded emulator behind `require('loghose').Emulator`.
#[napi]
pub struct NativeEmulator(EmbeddedEmulator);

#[napi]
impl NativeEmulator {
    /// Starts an emulator from its configuration as JSON (snake_case keys).
    #[napi(constructor)]
    pub fn new(env: Env, config_json: String) -> Result<Self> {
        EmbeddedEmulator::start_json(&config_json)
            .map(NativeEmulator)
            .raise_in(&env)
    }

    #[napi(getter)]
    pub fn endpoint(&self) -> String {
        self.0.endpoint().to_owned()
    }

    #[napi(getter)]
    pub fn access_key_id(&self) -> String {
        self.0.access_key_id().to_owned()
    }

    #[napi(getter)]
    pub fn access_key_secret(&self) -> String {
        self.0.access_key_secret().to_owned()
    }

    /// The stored logs of a logstore, as the engine's JSON (the facade's `logs` reads it, as
    /// Python's does).
    #[napi]
    pub fn logs_json(&self, env: Env, project: String, logstore: String) -> Result<String> {
        self.0.logs_json(&project, &logstore).raise_in(&env)
    }

    /// The exact totals of a logstore (null if it does not exist).
    #[napi]
    pub fn totals(
        &self,
        env: Env,
        project: String,
        logstore: String,
    ) -> Result<Option<LogstoreTotals>> {
        let totals = self.0.totals(&project, &logstore).raise_in(&env)?;
        Ok(totals.map(LogstoreTotals::from))
    }

    /// The emulator's counters.
    #[napi]
    pub fn counters(&self, env: Env) -> Result<EmulatorCounters> {
        Ok(self.0.counters().raise_in(&env)?.into())
    }

    #[napi]
    pub fn inject_json(&self, env: Env, fault_json: String) -> Result<()> {
        self.0.inject_json(&fault_json).raise_in(&env)
    }

    /// Replaces the temporary (STS) keys (JSON list of `{"id", "secret", "token"}`).
    #[napi]
    pub fn replace_sts_keys_json(&self, env: Env, keys_json: String) -> Result<()> {
        self.0.replace_sts_keys_json(&keys_json).raise_in(&env)
    }

    #[napi]
    pub fn clear_faults(&self, env: Env) -> Result<()> {
        self.0.clear_faults().raise_in(&env)
    }

    #[napi]
    pub fn reset(&self, env: Env) -> Result<()> {
        self.0.reset().raise_in(&env)
    }

    #[napi]
    pub fn create_logstore(
        &self,
        env: Env,
        project: String,
        logstore: String,
        shards: Option<u32>,
    ) -> Result<()> {
        self.0
            .create_logstore(&project, &logstore, shards)
            .raise_in(&env)
    }

    /// Stops serving (idempotent).
    #[napi]
    pub fn close(&self) {
        self.0.close();
    }
}
