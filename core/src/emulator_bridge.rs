//! Where the producer and the emulator meet: a producer configuration aimed at an emulator,
//! and the embedded emulator's errors classed as the producer's are (the bindings raise both
//! alike). The one file that names both, so that neither `producer/` nor `emulator/` imports
//! the other. Plain functions on the caller's thread.

use crate::emulator::{EmbeddedError, Emulator};
use crate::producer::{ErrorKind, ProducerConfig};

impl Emulator {
    /// A producer configuration aimed at this emulator: its endpoint, `project` and
    /// `logstore` (created as the first record arrives) and its first key; every other option
    /// at its default.
    pub fn producer_config(&self, project: &str, logstore: &str) -> ProducerConfig {
        let mut config = ProducerConfig::new(self.endpoint(), project, logstore);
        if let Some(key) = self.credentials() {
            config.access_key_id = key.access_key_id;
            config.access_key_secret = key.access_key_secret;
        }
        config
    }
}

impl EmbeddedError {
    /// The error's class, as the producer's errors have one: `Config` for bad input, `Engine`
    /// otherwise.
    pub fn kind(&self) -> ErrorKind {
        if self.is_config() {
            ErrorKind::Config
        } else {
            ErrorKind::Engine
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_for_the_emulator_carries_its_endpoint_and_key() {
        let emulator = Emulator::start_default().expect("the emulator");
        let config = emulator.producer_config("proj", "logs");
        assert_eq!(config.endpoint, emulator.endpoint());
        assert_eq!(config.project, "proj");
        assert_eq!(config.logstore, "logs");
        let key = emulator.credentials().expect("a key");
        assert_eq!(config.access_key_id, key.access_key_id);
    }
}
