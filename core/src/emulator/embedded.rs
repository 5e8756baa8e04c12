//! The emulator as the Python and Node fronts hold it: started from a JSON configuration,
//! read back as JSON, stopped explicitly (or when dropped). Both fronts wrap this one type, so
//! they expose the same emulator with the same errors.
//!
//! Every method is safe from any thread; reads take the store's locks briefly; `close` stops
//! the server and waits for its threads (a blocking call: bindings release their interpreter
//! lock around it). After `close`, every method but `close` fails with
//! [`EmbeddedError::Stopped`].

use std::sync::Mutex;

use super::config::{EmulatorConfig, StsKey};
use super::error::{ApiError, EmulatorError};
use super::faults::Fault;
use super::instance::Emulator;
use super::service::Counters;
use super::store::{LogstoreTotals, StoredLog};

/// Why an embedded emulator call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbeddedError {
    /// The configuration or fault given is not valid JSON of the right shape.
    #[error("{what}: {message}")]
    Config {
        /// What was being read (`emulator config`, `fault`).
        what: &'static str,
        /// The parser's message, naming the field.
        message: String,
    },
    /// The emulator could not start.
    #[error(transparent)]
    Start(#[from] EmulatorError),
    /// The emulator refused the call as the service would (a shard count out of range).
    #[error("{}: {}", .0.code, .0.message)]
    Refused(ApiError),
    /// The emulator was closed.
    #[error("the emulator is stopped")]
    Stopped,
}

impl EmbeddedError {
    /// Whether the caller's input was at fault (a configuration error) rather than the
    /// emulator.
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            EmbeddedError::Config { .. }
                | EmbeddedError::Refused(_)
                | EmbeddedError::Start(EmulatorError::Config { .. })
        )
    }
}

/// A running emulator with its address and credentials, read through JSON.
#[derive(Debug)]
pub struct EmbeddedEmulator {
    emulator: Mutex<Option<Emulator>>,
    endpoint: String,
    access_key_id: String,
    access_key_secret: String,
}

impl EmbeddedEmulator {
    /// Starts an emulator from its configuration as JSON (`{}` for the defaults).
    pub fn start_json(config_json: &str) -> Result<EmbeddedEmulator, EmbeddedError> {
        let config: EmulatorConfig =
            serde_json::from_str(config_json).map_err(|e| EmbeddedError::Config {
                what: "emulator config",
                message: e.to_string(),
            })?;
        let emulator = Emulator::start(config)?;
        let credentials = emulator.credentials();
        Ok(EmbeddedEmulator {
            endpoint: emulator.endpoint(),
            access_key_id: credentials
                .as_ref()
                .map(|c| c.access_key_id.clone())
                .unwrap_or_default(),
            access_key_secret: credentials.map(|c| c.access_key_secret).unwrap_or_default(),
            emulator: Mutex::new(Some(emulator)),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The AccessKeyId it accepts (empty when it accepts none).
    pub fn access_key_id(&self) -> &str {
        &self.access_key_id
    }

    /// The AccessKeySecret of that key.
    pub fn access_key_secret(&self) -> &str {
        &self.access_key_secret
    }

    fn with<T>(&self, f: impl FnOnce(&Emulator) -> T) -> Result<T, EmbeddedError> {
        let guard = self
            .emulator
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        guard.as_ref().map(f).ok_or(EmbeddedError::Stopped)
    }

    /// The stored logs of a logstore.
    pub fn logs(&self, project: &str, logstore: &str) -> Result<Vec<StoredLog>, EmbeddedError> {
        self.with(|e| e.logs(project, logstore))
    }

    /// The exact totals of a logstore (`None` if it does not exist).
    pub fn totals(
        &self,
        project: &str,
        logstore: &str,
    ) -> Result<Option<LogstoreTotals>, EmbeddedError> {
        self.with(|e| e.totals(project, logstore))
    }

    /// The counters.
    pub fn counters(&self) -> Result<Counters, EmbeddedError> {
        self.with(Emulator::counters)
    }

    /// The stored logs of a logstore, as a JSON array.
    pub fn logs_json(&self, project: &str, logstore: &str) -> Result<String, EmbeddedError> {
        self.with(|e| to_json(&e.logs(project, logstore)))
    }

    /// The exact totals of a logstore, as JSON (`null` if it does not exist).
    pub fn totals_json(&self, project: &str, logstore: &str) -> Result<String, EmbeddedError> {
        self.with(|e| to_json(&e.totals(project, logstore)))
    }

    /// The counters, as JSON.
    pub fn counters_json(&self) -> Result<String, EmbeddedError> {
        self.with(|e| to_json(&e.counters()))
    }

    /// Adds a fault rule given as JSON (the shape `POST /_emulator/faults` takes).
    pub fn inject_json(&self, fault_json: &str) -> Result<(), EmbeddedError> {
        let fault: Fault = serde_json::from_str(fault_json).map_err(|e| EmbeddedError::Config {
            what: "fault",
            message: e.to_string(),
        })?;
        self.with(|e| e.inject(fault))
    }

    /// Replaces the temporary (STS) keys with those given as JSON (a list of
    /// `{"id", "secret", "token"}`): requests signed with a replaced key are refused.
    pub fn replace_sts_keys_json(&self, keys_json: &str) -> Result<(), EmbeddedError> {
        let keys: Vec<StsKey> =
            serde_json::from_str(keys_json).map_err(|e| EmbeddedError::Config {
                what: "sts_keys",
                message: e.to_string(),
            })?;
        self.with(|e| e.service().replace_sts_keys(&keys))
    }

    /// Removes every fault rule.
    pub fn clear_faults(&self) -> Result<(), EmbeddedError> {
        self.with(Emulator::clear_faults)
    }

    /// Forgets logs, counters and faults.
    pub fn reset(&self) -> Result<(), EmbeddedError> {
        self.with(Emulator::reset)
    }

    /// Creates a logstore (for emulators that do not create them on first write).
    pub fn create_logstore(
        &self,
        project: &str,
        logstore: &str,
        shards: Option<u32>,
    ) -> Result<(), EmbeddedError> {
        self.with(|e| e.create_logstore(project, logstore, shards))?
            .map_err(EmbeddedError::Refused)
    }

    /// Stops serving and waits for the server's threads. Idempotent.
    pub fn close(&self) {
        let taken = self
            .emulator
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(e) = taken {
            e.shutdown();
        }
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    // The emulator's types serialize to JSON without fail (plain data, string keys).
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_in_json_out_and_stopped_after_close() {
        let emu = EmbeddedEmulator::start_json("{}").unwrap();
        assert!(emu.endpoint().starts_with("http://127.0.0.1:"));
        assert_eq!(emu.access_key_id(), super::super::DEFAULT_ACCESS_KEY_ID);
        assert_eq!(emu.logs_json("proj", "logs").unwrap(), "[]");
        assert_eq!(emu.totals_json("proj", "logs").unwrap(), "null");
        emu.create_logstore("proj", "logs", Some(2)).unwrap();
        for shards in [0, 101, u32::MAX] {
            let refused = emu
                .create_logstore("proj", "huge", Some(shards))
                .unwrap_err();
            assert!(refused.is_config(), "{refused}");
            assert!(refused.to_string().contains("1 to 100"), "{refused}");
        }
        assert_eq!(emu.totals_json("proj", "huge").unwrap(), "null");
        assert!(emu.totals_json("proj", "logs").unwrap().starts_with('{'));
        let bad = emu.inject_json(r#"{"kind":"nope"}"#).unwrap_err();
        assert!(
            bad.is_config() && bad.to_string().starts_with("fault: "),
            "{bad}"
        );
        emu.inject_json(r#"{"kind":"reset","count":1}"#).unwrap();
        emu.clear_faults().unwrap();
        emu.reset().unwrap();
        assert!(emu.counters_json().unwrap().contains("requests"));
        emu.close();
        emu.close();
        assert!(matches!(emu.counters_json(), Err(EmbeddedError::Stopped)));
    }

    #[test]
    fn a_shard_count_the_service_refuses_is_a_config_error() {
        let e = EmbeddedEmulator::start_json(r#"{"shard_count": 4294967295}"#).unwrap_err();
        assert!(e.is_config());
        assert!(e.to_string().contains("shard_count"), "{e}");
    }

    #[test]
    fn a_bad_config_names_the_field() {
        let e = EmbeddedEmulator::start_json(r#"{"shard_count":"four"}"#).unwrap_err();
        assert!(e.is_config());
        assert!(e.to_string().starts_with("emulator config: "), "{e}");
    }
}
