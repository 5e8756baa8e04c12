//! What the scenario examples share: the emulator in a child process (the example re-runs
//! itself with `--emulator-child`), its exactly-once counters, and the process's own CPU time
//! and memory from `/proc` (Linux; elsewhere the figures read 0).

#![allow(dead_code)] // each example uses its own part of this

use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};

use loghose::emulator::{Emulator, EmulatorConfig};

/// A producer configuration for counting adds: nothing is ever sent (a closed port), and no
/// batch seals while a count runs (8 000 S1 logs fit one batch and its linger).
pub fn unsealed_config() -> loghose::producer::ProducerConfig {
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

/// CPU seconds (user + system) of this process, all threads.
pub fn proc_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command name.
    (ticks(11) + ticks(12)) / 100.0
}

/// CPU seconds and minor page faults of each thread of this process, by thread id (Linux;
/// elsewhere empty): [`thread_report`] tells where a run's CPU went.
pub fn thread_times() -> std::collections::BTreeMap<u32, (String, f64, u64)> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for task in tasks.flatten() {
        let Ok(tid) = task.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let Some((head, after)) = stat.rsplit_once(')') else {
            continue;
        };
        let name = head.split_once('(').map_or("", |(_, n)| n).to_owned();
        let fields: Vec<f64> = after
            .split_whitespace()
            .map(|v| v.parse().unwrap_or(0.0))
            .collect();
        // After the name: minflt is field 10 of the line (8 here), utime and stime 14 and 15.
        let at = |i: usize| fields.get(i).copied().unwrap_or(0.0);
        out.insert(tid, (name, (at(11) + at(12)) / 100.0, at(7) as u64));
    }
    out
}

/// The CPU seconds and minor faults each thread name took between two [`thread_times`]
/// snapshots (threads that ended in between are not seen), largest first.
pub fn thread_report(
    before: &std::collections::BTreeMap<u32, (String, f64, u64)>,
    after: &std::collections::BTreeMap<u32, (String, f64, u64)>,
) -> String {
    let mut by_name = std::collections::BTreeMap::<&str, (f64, u64)>::new();
    for (tid, (name, cpu, faults)) in after {
        let (cpu0, faults0) = before.get(tid).map_or((0.0, 0), |b| (b.1, b.2));
        let e = by_name.entry(name.as_str()).or_default();
        e.0 += cpu - cpu0;
        e.1 += faults.saturating_sub(faults0);
    }
    let mut rows: Vec<_> = by_name
        .into_iter()
        .filter(|(_, (c, f))| *c > 0.0 || *f > 0)
        .collect();
    rows.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0));
    rows.iter()
        .map(|(name, (cpu, faults))| format!("{name} {cpu:.2} s {faults} faults"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A `/proc/self/status` figure in kB (or a count, for `Threads:`).
pub fn proc_status_kb(key: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// Resident memory now, in MB.
pub fn rss_mb() -> f64 {
    proc_status_kb("VmRSS:") / 1024.0
}

/// The `p` quantile (0..=1) of `values` (sorted here); None when empty.
pub fn percentile(values: &mut [f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable_by(f64::total_cmp);
    let at = (p * (values.len() - 1) as f64).round() as usize;
    Some(values[at.min(values.len() - 1)])
}

/// The least-squares slope of `values` against their index: a backlog's growth per second.
pub fn slope(values: &[u64]) -> f64 {
    let n = values.len() as f64;
    if values.len() < 2 {
        return 0.0;
    }
    let (mx, my) = ((n - 1.0) / 2.0, values.iter().sum::<u64>() as f64 / n);
    let (num, den) = values
        .iter()
        .enumerate()
        .fold((0.0, 0.0), |(num, den), (x, &y)| {
            let dx = x as f64 - mx;
            (num + dx * (y as f64 - my), den + dx * dx)
        });
    num / den
}

/// The child side of [`ChildEmulator`]: serves until stdin closes.
pub fn run_emulator_child() {
    // The emulator stands in for the remote service, which takes none of the producer's CPU:
    // at nice 10 it runs on what the producer leaves. Best effort: the figures only.
    // SAFETY: nice() only changes this process's scheduling priority.
    unsafe {
        libc::nice(10);
    }
    let emulator = Emulator::start(EmulatorConfig {
        retention_bytes: 8 << 30,
        ..EmulatorConfig::default()
    })
    .expect("emulator");
    println!("{}", emulator.endpoint());
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

/// The emulator in a child process (this executable run with `--emulator-child`).
pub struct ChildEmulator {
    child: Child,
    pub endpoint: String,
    rt: tokio::runtime::Runtime,
}

impl ChildEmulator {
    pub fn start() -> Self {
        let exe = std::env::current_exe().expect("own path");
        let mut child = Command::new(exe)
            .arg("--emulator-child")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("emulator child");
        let mut endpoint = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut endpoint)
            .expect("endpoint line");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        ChildEmulator {
            child,
            endpoint: endpoint.trim().to_owned(),
            rt,
        }
    }

    fn admin(&self, path: &str) -> serde_json::Value {
        let url = format!("{}/_emulator/{path}", self.endpoint);
        self.rt
            .block_on(async { reqwest::get(url).await?.json().await })
            .expect("emulator admin")
    }

    /// Logs stored in a logstore since it was created.
    pub fn logs(&self, project: &str, logstore: &str) -> u64 {
        self.admin(&format!("totals?project={project}&logstore={logstore}"))["logs"]
            .as_u64()
            .unwrap_or(0)
    }

    /// Batches received twice (by pack id), all logstores.
    pub fn duplicate_groups(&self) -> u64 {
        self.admin("counters")["duplicate_groups"]
            .as_u64()
            .unwrap_or(0)
    }

    /// A producer configuration (the defaults) aimed at this emulator.
    pub fn config(&self, project: &str, logstore: &str) -> loghose::producer::ProducerConfig {
        self.aim(Default::default(), project, logstore)
    }

    /// `base` (a preset, say) aimed at this emulator.
    pub fn aim(
        &self,
        base: loghose::producer::ProducerConfig,
        project: &str,
        logstore: &str,
    ) -> loghose::producer::ProducerConfig {
        loghose::producer::ProducerConfig {
            endpoint: self.endpoint.clone(),
            project: project.into(),
            logstore: logstore.into(),
            access_key_id: loghose::emulator::DEFAULT_ACCESS_KEY_ID.into(),
            access_key_secret: loghose::emulator::DEFAULT_ACCESS_KEY_SECRET.into(),
            ..base
        }
    }
}

impl Drop for ChildEmulator {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// The exactly-once check of one logstore: logs read back against logs sent, and batches the
/// emulator saw twice while the check was open.
pub struct Counted {
    project: String,
    logstore: String,
    duplicates0: u64,
}

/// What [`Counted::result`] found.
pub struct Outcome {
    pub received: u64,
    pub lost: u64,
    pub duplicates: u64,
}

impl Counted {
    pub fn open(emu: &ChildEmulator, project: &str, logstore: &str) -> Self {
        Counted {
            project: project.into(),
            logstore: logstore.into(),
            duplicates0: emu.duplicate_groups(),
        }
    }

    pub fn result(&self, emu: &ChildEmulator, sent: u64) -> Outcome {
        let received = emu.logs(&self.project, &self.logstore);
        Outcome {
            received,
            lost: sent.saturating_sub(received),
            duplicates: received.saturating_sub(sent) + emu.duplicate_groups() - self.duplicates0,
        }
    }
}
