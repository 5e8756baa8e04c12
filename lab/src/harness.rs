//! The benchmark harness every front shares: the emulator in a child process standing in for
//! the remote service, the exactly-once check of what a run sent, the process's CPU time and
//! memory, the statistics (median, quantiles, slopes) and the rows a rate run reports. A front
//! (Python, Node, the Rust examples) supplies only its send loop and its producer: the figures
//! every front prints are computed here, once, the same way.
//!
//! Runs on the caller's thread and blocks it: the emulator's admin requests (a few per row) go
//! through a single-threaded runtime of the [`AdminClient`] itself. Process figures come from
//! `/proc` on Linux and read 0 elsewhere.

use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use serde::Deserialize;
use serde_json::{json, Value};

use super::Row;

/// What the process uses at one instant: CPU time so far, resident memory now (all of it, and
/// the anonymous part: the process's own data, not its code paged in), its peak, its threads.
#[derive(Clone, Copy, Debug, Default, Deserialize, serde::Serialize)]
pub struct ProcessSample {
    /// CPU seconds (user and system, every thread) so far.
    pub cpu_seconds: f64,
    /// Resident memory, MB.
    pub rss_mb: f64,
    /// Its anonymous part (heap, stacks: the process's own data), MB.
    pub anon_mb: f64,
    /// The most ever resident (since the start, or [`reset_peak_rss`]), MB.
    pub peak_rss_mb: f64,
    /// Threads.
    pub threads: u64,
}

impl ProcessSample {
    /// The figures now.
    pub fn now() -> ProcessSample {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let field = |key: &str| status_field(&status, key);
        ProcessSample {
            cpu_seconds: cpu_seconds(),
            rss_mb: field("VmRSS:") / 1024.0,
            anon_mb: field("RssAnon:") / 1024.0,
            peak_rss_mb: field("VmHWM:") / 1024.0,
            threads: field("Threads:") as u64,
        }
    }
}

/// A `/proc/self/status` figure in kB (or a count, for `Threads:`); 0 where there is none.
pub fn status_kb(key: &str) -> f64 {
    status_field(
        &std::fs::read_to_string("/proc/self/status").unwrap_or_default(),
        key,
    )
}

fn status_field(status: &str, key: &str) -> f64 {
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// CPU seconds (user + system) of this process, all threads, to the microsecond (Unix; 0
/// elsewhere).
pub fn cpu_seconds() -> f64 {
    #[cfg(unix)]
    {
        // SAFETY: getrusage writes the zeroed struct it is given.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
                return 0.0;
            }
            usage
        };
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
    #[cfg(not(unix))]
    0.0
}

fn ticks_per_second() -> f64 {
    #[cfg(unix)]
    {
        // SAFETY: sysconf reads a constant of the system.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if hz > 0 {
            return hz as f64;
        }
    }
    100.0
}

/// Resets the peak resident memory (`VmHWM`) to what is resident now (Linux 4.0 and later;
/// best effort), so a run's peak is its own.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// CPU seconds and minor page faults of each thread of this process, by thread id (Linux;
/// elsewhere empty): [`thread_report`] tells where a run's CPU went.
pub fn thread_times() -> std::collections::BTreeMap<u32, (String, f64, u64)> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    let hz = ticks_per_second();
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
        out.insert(tid, (name, (at(11) + at(12)) / hz, at(7) as u64));
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

/// The median of `values` (the mean of the middle two of an even count); None when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[mid]),
        _ => Some((sorted[mid - 1] + sorted[mid]) / 2.0),
    }
}

/// The `q` quantile (0..=1) of `values`, the nearest rank; None when empty.
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let last = sorted.len().checked_sub(1)?;
    let at = (q.clamp(0.0, 1.0) * last as f64).round() as usize;
    Some(sorted[at.min(last)])
}

/// The least-squares slope of `values` against their index: a backlog's growth per second
/// (one that keeps up saws around a flat line, near 0 against the rate).
pub fn slope(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    if values.len() < 2 {
        return 0.0;
    }
    let (mx, my) = ((n - 1.0) / 2.0, values.iter().sum::<f64>() / n);
    let (num, den) = values
        .iter()
        .enumerate()
        .fold((0.0, 0.0), |(num, den), (x, &y)| {
            let dx = x as f64 - mx;
            (num + dx * (y - my), den + dx * dx)
        });
    num / den
}

/// The child side of [`ChildEmulator`]: the emulator at nice 10 (it stands in for the remote
/// service, which takes none of the producer's CPU, so it runs on what the producer leaves),
/// its endpoint and keys printed as one JSON line, served until standard input closes.
/// `retention_bytes`: what it keeps of the logs themselves (totals count everything).
pub fn serve_emulator_child(retention_bytes: usize) -> std::io::Result<()> {
    // SAFETY: nice() only changes this process's scheduling priority.
    #[cfg(unix)]
    unsafe {
        libc::nice(10);
    }
    let emulator = loghose::emulator::Emulator::start(loghose::emulator::EmulatorConfig {
        retention_bytes,
        ..Default::default()
    })
    .map_err(|e| std::io::Error::other(e.to_string()))?;
    println!(
        "{}",
        json!({
            "endpoint": emulator.endpoint(),
            "access_key_id": loghose::emulator::DEFAULT_ACCESS_KEY_ID,
            "access_key_secret": loghose::emulator::DEFAULT_ACCESS_KEY_SECRET,
        })
    );
    let mut rest = String::new();
    while std::io::stdin().read_line(&mut rest)? > 0 {
        rest.clear();
    }
    drop(emulator);
    Ok(())
}

/// The emulator's admin endpoints, read over HTTP: what a logstore received, and the batches
/// received twice.
pub struct AdminClient {
    endpoint: String,
    runtime: tokio::runtime::Runtime,
    http: reqwest::Client,
}

impl AdminClient {
    /// A client of the emulator at `endpoint` (`http://127.0.0.1:port`).
    pub fn new(endpoint: &str) -> std::io::Result<AdminClient> {
        Ok(AdminClient {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
            http: reqwest::Client::builder()
                .no_proxy()
                .timeout(std::time::Duration::from_secs(60))
                // The emulator closes a connection idle past its header read timeout (20 s);
                // one kept longer fails the next request (a long flush between two reads).
                .pool_idle_timeout(std::time::Duration::from_secs(5))
                .build()
                .map_err(std::io::Error::other)?,
        })
    }

    fn get(&self, path: &str) -> std::io::Result<Value> {
        let url = format!("{}/_emulator/{path}", self.endpoint);
        self.runtime
            .block_on(async {
                self.http
                    .get(url)
                    .send()
                    .await?
                    .error_for_status()?
                    .json()
                    .await
            })
            .map_err(|e| std::io::Error::other(format!("emulator admin {path}: {e}")))
    }

    /// `PUT /_emulator/{path}` with a JSON body (the network, the quotas).
    pub fn put(&self, path: &str, body: &Value) -> std::io::Result<()> {
        let url = format!("{}/_emulator/{path}", self.endpoint);
        self.runtime
            .block_on(async {
                self.http
                    .put(url)
                    .json(body)
                    .send()
                    .await?
                    .error_for_status()
                    .map(|_| ())
            })
            .map_err(|e| std::io::Error::other(format!("emulator admin {path}: {e}")))
    }

    /// Sets the emulator's network: every Log Service request's round trip is `latency_ms`
    /// plus or minus up to `jitter_ms`.
    pub fn set_network(&self, latency_ms: u64, jitter_ms: u64) -> std::io::Result<()> {
        self.put(
            "network",
            &json!({"latency_ms": latency_ms, "jitter_ms": jitter_ms}),
        )
    }

    /// The emulator's counters (`GET /_emulator/counters`).
    pub fn counters(&self) -> std::io::Result<Value> {
        self.get("counters")
    }

    /// Logs a logstore received since it was made (0 when it was never written).
    pub fn logs(&self, project: &str, logstore: &str) -> std::io::Result<u64> {
        let totals = self.get(&format!("totals?project={project}&logstore={logstore}"))?;
        Ok(totals["logs"].as_u64().unwrap_or(0))
    }

    /// Batches received twice (by pack id), every logstore.
    pub fn duplicate_groups(&self) -> std::io::Result<u64> {
        Ok(self.get("counters")?["duplicate_groups"]
            .as_u64()
            .unwrap_or(0))
    }
}

/// The emulator in a child process: `command` runs [`serve_emulator_child`] (each front's
/// `bench-emulator` command, or a Rust example run again); it ends when this is dropped.
pub struct ChildEmulator {
    child: Child,
    /// Where it listens.
    pub endpoint: String,
    /// The keys it accepts.
    pub access_key_id: String,
    /// The keys it accepts.
    pub access_key_secret: String,
    /// Its admin endpoints.
    pub admin: AdminClient,
}

impl ChildEmulator {
    /// Starts `command` and reads its endpoint line.
    pub fn spawn(mut command: Command) -> std::io::Result<ChildEmulator> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let mut line = String::new();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("the emulator child has no stdout"))?;
        std::io::BufReader::new(stdout).read_line(&mut line)?;
        let info: Value = serde_json::from_str(&line).map_err(|e| {
            std::io::Error::other(format!(
                "the emulator child said {line:?}, not its endpoint: {e}"
            ))
        })?;
        let text = |key: &str| info[key].as_str().unwrap_or_default().to_owned();
        let endpoint = text("endpoint");
        Ok(ChildEmulator {
            admin: AdminClient::new(&endpoint)?,
            child,
            endpoint,
            access_key_id: text("access_key_id"),
            access_key_secret: text("access_key_secret"),
        })
    }
}

impl Drop for ChildEmulator {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// What the exactly-once check of a run found: logs received, lost (sent and never received)
/// and duplicated (received beyond what was sent, plus batches received twice).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counted {
    /// Logs the logstore received.
    pub received: u64,
    /// Logs sent and not received.
    pub lost: u64,
    /// Logs received beyond those sent, plus batches received twice.
    pub duplicates: u64,
}

/// A rate run as the front's send loop measured it.
#[derive(Clone, Debug, Deserialize)]
pub struct RateRun {
    /// The scenario (`s1`, `s2`).
    pub scenario: String,
    /// The producer's preset.
    pub preset: String,
    /// S1 pairs (two logs) added each second (S1-R: half its logs a second).
    pub pairs_per_second: u64,
    /// Raw bytes (keys and values) a log, when not S1's (S1-R's).
    #[serde(default)]
    pub raw_bytes_per_log: Option<f64>,
    /// How long each second's adds took (seconds), one per second of the run.
    pub took_seconds: Vec<f64>,
    /// Sends the producer refused (its buffer was full).
    pub refused: u64,
    /// Logs still pending after the flush.
    pub pending: u64,
    /// The process before the run (its idle memory).
    pub idle: ProcessSample,
    /// Front-specific figures, placed before the check's columns.
    #[serde(default)]
    pub extra: Vec<(String, Value)>,
}

/// An unthrottled run: logs added as fast as the front can for a while.
#[derive(Clone, Debug, Deserialize)]
pub struct UnthrottledRun {
    /// The scenario, when not `s1` (`s1r`).
    #[serde(default)]
    pub scenario: Option<String>,
    /// The producer's preset.
    pub preset: String,
    /// Logs added.
    pub sent: u64,
    /// Seconds spent adding.
    pub add_seconds: f64,
    /// Logs still pending after the flush.
    pub pending: u64,
    /// Front-specific figures, placed before the check's columns.
    #[serde(default)]
    pub extra: Vec<(String, Value)>,
}

/// Raw bytes (keys and values) of one S1 pair, the index written with six digits.
fn s1_pair_raw_bytes() -> f64 {
    let w = super::S1Workload::default();
    (w.raw_bytes(200_000) + w.raw_bytes(1)) as f64
}

/// One run's measure: the exactly-once check of its logstore and the process's CPU time and
/// memory, from [`Meter::start`] (before the producer is made) to [`Meter::stop`] (after its
/// flush); then the row.
pub struct Meter {
    admin: AdminClient,
    project: String,
    logstore: String,
    duplicates0: u64,
    start: Instant,
    cpu0: f64,
    stopped: Option<(f64, f64, ProcessSample)>,
}

impl Meter {
    /// Starts measuring a run into `project`/`logstore` of the emulator at `endpoint` (and
    /// resets the peak memory).
    pub fn start(endpoint: &str, project: &str, logstore: &str) -> std::io::Result<Self> {
        let admin = AdminClient::new(endpoint)?;
        let duplicates0 = admin.duplicate_groups()?;
        reset_peak_rss();
        Ok(Meter {
            admin,
            project: project.to_owned(),
            logstore: logstore.to_owned(),
            duplicates0,
            start: Instant::now(),
            cpu0: cpu_seconds(),
            stopped: None,
        })
    }

    /// The run's work begins now (its producer made): wall and CPU time count from here.
    pub fn begin(&mut self) {
        self.start = Instant::now();
        self.cpu0 = cpu_seconds();
        self.stopped = None;
    }

    /// The run's work is over (its flush returned): its wall and CPU time and memory now.
    pub fn stop(&mut self) {
        let sample = ProcessSample::now();
        let wall = self.start.elapsed().as_secs_f64();
        self.stopped = Some((wall, sample.cpu_seconds - self.cpu0, sample));
    }

    fn stopped(&mut self) -> (f64, f64, ProcessSample) {
        if self.stopped.is_none() {
            self.stop();
        }
        self.stopped.unwrap_or_default()
    }

    /// The exactly-once check: `sent` logs against what the logstore received.
    pub fn counted(&self, sent: u64) -> std::io::Result<Counted> {
        let received = self.admin.logs(&self.project, &self.logstore)?;
        let duplicated = self
            .admin
            .duplicate_groups()?
            .saturating_sub(self.duplicates0);
        Ok(Counted {
            received,
            lost: sent.saturating_sub(received),
            duplicates: received.saturating_sub(sent) + duplicated,
        })
    }

    /// The row of a rate run: µs per send (the median second: one disturbed by a collection or
    /// the neighbours does not move it), raw kB/s, CPU %, memory now and as growth over the
    /// idle process (all of it, the anonymous part, the peak), the front's own figures, the
    /// check, and what was refused or left pending.
    pub fn rate_row(&mut self, run: &RateRun) -> std::io::Result<Row> {
        let (wall, cpu, end) = self.stopped();
        let seconds = run.took_seconds.len() as u64;
        let logs_per_second = run.pairs_per_second * 2;
        let counted = self.counted(logs_per_second * seconds)?;
        let us_per_send =
            median(&run.took_seconds).unwrap_or(0.0) * 1e6 / logs_per_second.max(1) as f64;
        let mut row: Row = vec![
            ("scenario".into(), json!(run.scenario)),
            ("preset".into(), json!(run.preset)),
            ("rate".into(), json!(logs_per_second)),
            ("us_per_send".into(), json!(us_per_send)),
            (
                "raw_kb_s".into(),
                json!(
                    run.raw_bytes_per_log
                        .map_or(s1_pair_raw_bytes() / 2.0, |b| b)
                        * logs_per_second as f64
                        / 1024.0
                ),
            ),
            ("cpu_pct".into(), json!(cpu / wall.max(1e-9) * 100.0)),
            ("rss_mb".into(), json!(end.rss_mb)),
            ("rss_growth_mb".into(), json!(end.rss_mb - run.idle.rss_mb)),
            (
                "anon_growth_mb".into(),
                json!(end.anon_mb - run.idle.anon_mb),
            ),
            (
                "peak_rss_growth_mb".into(),
                json!(end.peak_rss_mb - run.idle.rss_mb),
            ),
        ];
        row.extend(run.extra.iter().cloned());
        row.extend(check_columns(counted));
        row.push(("refused".into(), json!(run.refused)));
        row.push(("pending".into(), json!(run.pending)));
        Ok(row)
    }

    /// The row of an unthrottled run: µs per send while adding, logs delivered per second and
    /// per CPU-second of the process, CPU %, the check.
    pub fn unthrottled_row(&mut self, run: &UnthrottledRun) -> std::io::Result<Row> {
        let (wall, cpu, _) = self.stopped();
        let counted = self.counted(run.sent)?;
        let mut row: Row = vec![
            (
                "scenario".into(),
                json!(run.scenario.as_deref().unwrap_or("s1")),
            ),
            ("preset".into(), json!(run.preset)),
            ("rate".into(), Value::Null),
            ("unthrottled".into(), json!(true)),
            (
                "us_per_send".into(),
                json!(run.add_seconds * 1e6 / run.sent.max(1) as f64),
            ),
            (
                "delivered_per_s".into(),
                json!(counted.received as f64 / wall.max(1e-9)),
            ),
            (
                "per_cpu_second".into(),
                json!(counted.received as f64 / cpu.max(1e-3)),
            ),
            ("cpu_pct".into(), json!(cpu / wall.max(1e-9) * 100.0)),
        ];
        row.extend(run.extra.iter().cloned());
        row.extend(check_columns(counted));
        row.push(("refused".into(), json!(0)));
        row.push(("pending".into(), json!(run.pending)));
        Ok(row)
    }
}

/// The language fronts' side of a [`Meter`]: runs and rows as JSON (a row: a list of
/// `[column, value]` pairs, in order), errors as text.
impl Meter {
    /// [`Meter::counted`] as a JSON object.
    pub fn counted_json(&self, sent: u64) -> Result<String, String> {
        let counted = self.counted(sent).map_err(|e| e.to_string())?;
        serde_json::to_string(&counted).map_err(|e| e.to_string())
    }

    /// [`Meter::rate_row`] of a [`RateRun`] given as JSON.
    pub fn rate_row_json(&mut self, run: &str) -> Result<String, String> {
        let run: RateRun = serde_json::from_str(run).map_err(|e| format!("rate run: {e}"))?;
        let row = self.rate_row(&run).map_err(|e| e.to_string())?;
        serde_json::to_string(&row).map_err(|e| e.to_string())
    }

    /// [`Meter::unthrottled_row`] of an [`UnthrottledRun`] given as JSON.
    pub fn unthrottled_row_json(&mut self, run: &str) -> Result<String, String> {
        let run: UnthrottledRun =
            serde_json::from_str(run).map_err(|e| format!("unthrottled run: {e}"))?;
        let row = self.unthrottled_row(&run).map_err(|e| e.to_string())?;
        serde_json::to_string(&row).map_err(|e| e.to_string())
    }
}

/// [`ProcessSample::now`] as a JSON object.
pub fn process_sample_json() -> String {
    serde_json::to_string(&ProcessSample::now()).unwrap_or_default()
}

fn check_columns(counted: Counted) -> [(String, Value); 3] {
    [
        ("received".into(), json!(counted.received)),
        ("lost".into(), json!(counted.lost)),
        ("duplicates".into(), json!(counted.duplicates)),
    ]
}

/// Whether a row's check failed: a log lost, duplicated, refused or left pending.
pub fn failed(row: &Row) -> bool {
    row.iter().any(|(k, v)| {
        matches!(k.as_str(), "lost" | "duplicates" | "refused" | "pending")
            && v.as_f64().is_some_and(|n| n != 0.0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_of_a_few_values() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(percentile(&[5.0, 1.0, 3.0, 2.0, 4.0], 0.5), Some(3.0));
        assert_eq!(percentile(&[5.0, 1.0, 3.0, 2.0, 4.0], 1.0), Some(5.0));
        assert_eq!(percentile(&[], 0.5), None);
        assert!((slope(&[0.0, 10.0, 20.0, 30.0]) - 10.0).abs() < 1e-9);
        assert_eq!(slope(&[7.0]), 0.0);
    }

    #[test]
    fn a_row_fails_on_any_loss_duplicate_refusal_or_pending() {
        let row = |k: &str, v: Value| -> Row { vec![("lost".into(), json!(0)), (k.into(), v)] };
        assert!(!failed(&row("pending", json!(0))));
        assert!(!failed(&row("rate", json!(5))));
        assert!(failed(&row("duplicates", json!(1))));
        assert!(failed(&row("refused", json!(2))));
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_process_figures_move_with_the_process() {
        let before = ProcessSample::now();
        assert!(before.rss_mb > 0.0 && before.threads >= 1);
        let mut x = 0u64;
        let t = Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(300) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let held = vec![1u8; 64 << 20];
        std::hint::black_box(&held);
        let after = ProcessSample::now();
        assert!(after.cpu_seconds > before.cpu_seconds);
        assert!(
            after.anon_mb > before.anon_mb + 32.0,
            "{before:?} {after:?}"
        );
    }
}
