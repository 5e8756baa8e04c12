//! The network between a client and the emulator, played without root: every Log Service
//! request waits a round trip (latency, with jitter) and its body's time on a shared link of
//! limited bandwidth before it is processed.
//!
//! - **Latency**: `latency_ms ± jitter_ms`, uniform, per request (never below zero): the time
//!   a request and its answer spend on the wire, so a client sees it as its round trip.
//! - **Bandwidth**: one link for every connection, first come first served: a body of `n`
//!   bytes holds it `n / bandwidth` seconds, so requests sent together queue behind each other
//!   and round trips grow with what is in flight, as on a congested uplink.
//!
//! Set by the configuration (`--latency-ms`, `--jitter-ms`, `--bandwidth-bytes-per-sec`) and changed
//! while serving through the admin API (`PUT /_emulator/network`). The emulator's own API is
//! never delayed, so tests read back at once. When nothing is set, the check is one relaxed
//! atomic load. Any thread; the wait itself is a timer on the server's runtime.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The network a client sees (all zero: loopback as it is).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkConfig {
    /// Round trip added to every Log Service request, in milliseconds.
    pub latency_ms: u64,
    /// Each request's round trip is `latency_ms` plus or minus up to this much, uniformly.
    pub jitter_ms: u64,
    /// Bytes per second of the link request bodies share; 0: unlimited.
    pub bandwidth_bytes_per_sec: u64,
}

impl NetworkConfig {
    /// Whether it changes anything.
    pub fn is_set(&self) -> bool {
        self.latency_ms > 0 || self.jitter_ms > 0 || self.bandwidth_bytes_per_sec > 0
    }
}

/// The network model and its link.
#[derive(Debug)]
pub(crate) struct Network {
    set: AtomicBool,
    config: Mutex<NetworkConfig>,
    /// When the shared link is free again.
    link_free_at: Mutex<Instant>,
}

impl Network {
    pub(crate) fn new(config: NetworkConfig) -> Network {
        Network {
            set: AtomicBool::new(config.is_set()),
            config: Mutex::new(config),
            link_free_at: Mutex::new(Instant::now()),
        }
    }

    pub(crate) fn config(&self) -> NetworkConfig {
        *self.config.lock()
    }

    pub(crate) fn replace(&self, config: NetworkConfig) {
        *self.config.lock() = config;
        self.set.store(config.is_set(), Ordering::Relaxed);
    }

    /// How long a request with a body of `body_bytes` waits before it is processed: its
    /// latency, plus its wait for and time on the link.
    pub(crate) fn delay(&self, body_bytes: usize) -> Duration {
        if !self.set.load(Ordering::Relaxed) {
            return Duration::ZERO;
        }
        let config = self.config();
        let jitter = config.jitter_ms;
        let latency_ms = if jitter == 0 {
            config.latency_ms
        } else {
            (config.latency_ms + fastrand::u64(0..=2 * jitter)).saturating_sub(jitter)
        };
        let latency = Duration::from_millis(latency_ms);
        if config.bandwidth_bytes_per_sec == 0 {
            return latency;
        }
        let on_link =
            Duration::from_secs_f64(body_bytes as f64 / config.bandwidth_bytes_per_sec as f64);
        let now = Instant::now();
        let done = {
            let mut free_at = self.link_free_at.lock();
            let done = (*free_at).max(now) + on_link;
            *free_at = done;
            done
        };
        latency + (done - now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_set_is_no_delay() {
        let n = Network::new(NetworkConfig::default());
        assert_eq!(n.delay(1 << 20), Duration::ZERO);
    }

    #[test]
    fn latency_with_jitter_stays_within_its_bounds_and_spreads() {
        let n = Network::new(NetworkConfig {
            latency_ms: 50,
            jitter_ms: 10,
            bandwidth_bytes_per_sec: 0,
        });
        let delays: Vec<u128> = (0..2000).map(|_| n.delay(0).as_millis()).collect();
        assert!(delays.iter().all(|d| (40..=60).contains(d)), "{delays:?}");
        assert!(delays.contains(&40) && delays.contains(&60));
        let mean = delays.iter().sum::<u128>() as f64 / delays.len() as f64;
        assert!((mean - 50.0).abs() < 1.0, "mean {mean}");
    }

    #[test]
    fn bodies_sent_together_queue_on_the_link() {
        let n = Network::new(NetworkConfig {
            latency_ms: 0,
            jitter_ms: 0,
            bandwidth_bytes_per_sec: 1_000_000,
        });
        // 100 kB at 1 MB/s: 100 ms each; the third waits for the first two.
        let first = n.delay(100_000);
        let second = n.delay(100_000);
        let third = n.delay(100_000);
        assert!(first >= Duration::from_millis(99) && first <= Duration::from_millis(101));
        assert!(second >= Duration::from_millis(199) && second <= Duration::from_millis(201));
        assert!(third >= Duration::from_millis(299) && third <= Duration::from_millis(301));
    }

    #[test]
    fn replacing_the_config_takes_effect_and_zero_turns_it_off() {
        let n = Network::new(NetworkConfig::default());
        n.replace(NetworkConfig {
            latency_ms: 7,
            ..NetworkConfig::default()
        });
        assert_eq!(n.delay(0), Duration::from_millis(7));
        n.replace(NetworkConfig::default());
        assert_eq!(n.delay(0), Duration::ZERO);
    }
}
