//! What the scenario examples share, over the library's benchmark harness
//! (`loghose_lab::harness`): the emulator in a child process (the example re-runs itself
//! with `--emulator-child`), its exactly-once counters, and the process's own CPU time and
//! memory from `/proc` (Linux; elsewhere the figures read 0).

#![allow(dead_code)] // each example uses its own part of this

use loghose_lab::harness;
#[allow(unused_imports)]
pub(crate) use loghose_lab::harness::{thread_report, thread_times};

/// A producer configuration for counting adds: nothing is ever sent (a closed port), and no
/// batch seals while a count runs (8 000 S1 logs fit one batch and its linger).
pub(crate) fn unsealed_config() -> loghose::producer::ProducerConfig {
    loghose::producer::ProducerConfig {
        endpoint: "http://127.0.0.1:9".into(),
        project: "proj".into(),
        logstore: "logs".into(),
        access_key_id: "id".into(),
        access_key_secret: "secret".into(),
        batch_max_bytes: 4 << 20,
        batch_max_count: 40_960,
        buffer_max_bytes: 128 << 20,
        linger_ms: 600_000,
        ..loghose::producer::ProducerConfig::preset("server").expect("preset")
    }
}

/// This process's context switches (voluntary: a thread waited; involuntary: it was
/// preempted) and minor page faults so far, from `getrusage` (all threads): what a saturated,
/// multi-threaded run pays that instruction counts do not show.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Usage {
    pub(crate) voluntary_switches: i64,
    pub(crate) involuntary_switches: i64,
    pub(crate) minor_faults: i64,
}

pub(crate) fn usage() -> Usage {
    // SAFETY: getrusage writes one rusage into the zeroed struct it is handed.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Usage::default();
    }
    Usage {
        voluntary_switches: ru.ru_nvcsw as i64,
        involuntary_switches: ru.ru_nivcsw as i64,
        minor_faults: ru.ru_minflt as i64,
    }
}

impl Usage {
    /// Each count since `before`, per 1 000 of `logs`, as table columns.
    pub(crate) fn per_1k_logs_since(
        &self,
        before: &Usage,
        logs: u64,
    ) -> Vec<(String, serde_json::Value)> {
        let per = |now: i64, then: i64| (now - then).max(0) as f64 * 1000.0 / logs.max(1) as f64;
        vec![
            (
                "vol_cs_per_1k".into(),
                per(self.voluntary_switches, before.voluntary_switches).into(),
            ),
            (
                "invol_cs_per_1k".into(),
                per(self.involuntary_switches, before.involuntary_switches).into(),
            ),
            (
                "minflt_per_1k".into(),
                per(self.minor_faults, before.minor_faults).into(),
            ),
        ]
    }
}

/// CPU seconds (user + system) of this process, all threads.
pub(crate) fn proc_cpu_seconds() -> f64 {
    harness::cpu_seconds()
}

/// A `/proc/self/status` figure in kB (or a count, for `Threads:`).
pub(crate) fn proc_status_kb(key: &str) -> f64 {
    harness::status_kb(key)
}

/// Resident memory now, in MB.
pub(crate) fn rss_mb() -> f64 {
    harness::ProcessSample::now().rss_mb
}

/// The `p` quantile (0..=1) of `values`; None when empty.
pub(crate) fn percentile(values: &mut [f64], p: f64) -> Option<f64> {
    harness::percentile(values, p)
}

/// The least-squares slope of `values` against their index: a backlog's growth per second.
pub(crate) fn slope(values: &[u64]) -> f64 {
    harness::slope(&values.iter().map(|&v| v as f64).collect::<Vec<_>>())
}

/// The child side of [`ChildEmulator`]: serves until stdin closes (it keeps 8 GiB of logs,
/// which the S1 example reads back).
pub(crate) fn run_emulator_child() {
    harness::serve_emulator_child(8 << 30).expect("emulator child");
}

/// The emulator in a child process (this executable run with `--emulator-child`).
pub(crate) struct ChildEmulator {
    child: harness::ChildEmulator,
    pub endpoint: String,
}

impl ChildEmulator {
    pub(crate) fn start() -> Self {
        let mut command = std::process::Command::new(std::env::current_exe().expect("own path"));
        command.arg("--emulator-child");
        let child = harness::ChildEmulator::spawn(command).expect("emulator child");
        ChildEmulator {
            endpoint: child.endpoint.clone(),
            child,
        }
    }

    /// Every Log Service request's round trip from now on: `latency_ms` ± `jitter_ms`.
    pub(crate) fn set_network(&self, latency_ms: u64, jitter_ms: u64) {
        self.child
            .admin
            .set_network(latency_ms, jitter_ms)
            .expect("emulator admin");
    }

    /// Logs stored in a logstore since it was created.
    pub(crate) fn logs(&self, project: &str, logstore: &str) -> u64 {
        self.child
            .admin
            .logs(project, logstore)
            .expect("emulator admin")
    }

    /// Batches received twice (by pack id), all logstores.
    pub(crate) fn duplicate_groups(&self) -> u64 {
        self.child.admin.duplicate_groups().expect("emulator admin")
    }

    /// A producer configuration (the defaults) aimed at this emulator.
    pub(crate) fn config(
        &self,
        project: &str,
        logstore: &str,
    ) -> loghose::producer::ProducerConfig {
        self.aim(Default::default(), project, logstore)
    }

    /// `base` (a preset, say) aimed at this emulator.
    pub(crate) fn aim(
        &self,
        base: loghose::producer::ProducerConfig,
        project: &str,
        logstore: &str,
    ) -> loghose::producer::ProducerConfig {
        loghose::producer::ProducerConfig {
            endpoint: self.endpoint.clone(),
            project: project.into(),
            logstore: logstore.into(),
            access_key_id: self.child.access_key_id.clone(),
            access_key_secret: self.child.access_key_secret.clone(),
            ..base
        }
    }
}

/// The exactly-once check of one logstore: logs read back against logs sent, and batches the
/// emulator saw twice while the check was open.
pub(crate) struct Counted {
    project: String,
    logstore: String,
    duplicates0: u64,
}

/// What [`Counted::result`] found.
pub(crate) type Outcome = harness::Counted;

impl Counted {
    pub(crate) fn open(emu: &ChildEmulator, project: &str, logstore: &str) -> Self {
        Counted {
            project: project.into(),
            logstore: logstore.into(),
            duplicates0: emu.duplicate_groups(),
        }
    }

    pub(crate) fn result(&self, emu: &ChildEmulator, sent: u64) -> Outcome {
        let received = emu.logs(&self.project, &self.logstore);
        Outcome {
            received,
            lost: sent.saturating_sub(received),
            duplicates: received.saturating_sub(sent) + emu.duplicate_groups() - self.duplicates0,
        }
    }
}
