//! `loghose pipe`: one record per line of standard input, or of a file followed as `tail -F`
//! follows it (`--follow FILE`: across rotation, a new file at the path, and truncation).
//! Plain lines go into one field (`content`); with `--json` each line is an object whose
//! members become the fields (strings as they are, other values as their JSON text).
//!
//! Threads: a reader thread reads and sends; the calling thread waits for the end of input, or
//! for SIGTERM or SIGINT, then closes the producer, delivering what it holds within
//! `--close-timeout-ms`. The exit status says what became of the lines read:
//! - 0: every line was delivered;
//! - 75: every line was delivered or is kept durably in the spool (`spool_dir`), some kept:
//!   the next run on the directory delivers them;
//! - 1: some line is lost — refused, invalid, failed for good, left undelivered at the timeout
//!   without a spool, or kept in a spool whose disk failed its syncs (a power loss could lose
//!   it) — never 0 nor 75 then;
//! - 2: bad arguments or configuration.
//!
//! Unless it is 0, standard error says the counts. Nothing is dropped silently: a line
//! that cannot be a record is named (the first few) and counted. Input faster than the sends
//! waits for room in the buffer (`max_block_ms` an hour unless configured) rather than being
//! refused.

use std::fs::File;
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::metrics_server::MetricsServer;
use super::options::ProducerArgs;
use crate::producer::{Producer, ProducerError, SendOptions};

/// Reads lines and sends each as a record.
#[derive(clap::Args, Debug)]
pub struct PipeArgs {
    /// Where and how to send.
    #[command(flatten)]
    pub producer: ProducerArgs,
    /// Each line is a JSON object whose members become the record's fields.
    #[arg(long)]
    pub json: bool,
    /// The field a plain line goes into.
    #[arg(long, default_value = "content")]
    pub field: String,
    /// Follow FILE instead of reading standard input: lines as they are written, across
    /// rotation and truncation (as `tail -F`), until SIGTERM or SIGINT.
    #[arg(long, value_name = "FILE")]
    pub follow: Option<PathBuf>,
    /// With --follow: send what FILE already holds too, not only what is written after.
    #[arg(long, requires = "follow")]
    pub from_start: bool,
    /// With --follow: how often the file is checked, ms.
    #[arg(long, default_value_t = 200)]
    pub poll_ms: u64,
    /// How long the end (of input, or a signal) may take to deliver what is held, ms.
    #[arg(long, default_value_t = 30_000)]
    pub close_timeout_ms: u64,
    /// Serve the producer's metrics at http://HOST:PORT/metrics (Prometheus text format) while
    /// the command runs; port 0 picks a free one (the address is said on standard error).
    #[arg(long, env = "LOGHOSE_METRICS_ADDR", value_name = "HOST:PORT")]
    pub metrics_addr: Option<String>,
}

/// How long a line waits for room in the buffer (`max_block_ms`) unless configured: the
/// longest the engine allows. Input that comes faster than it can be sent is held back (the
/// writer of a pipe blocks, a followed file waits on disk) instead of refused; refused lines
/// are counted and reported, but they are gone.
const WAIT_FOR_ROOM_MS: u64 = 3_600_000;

/// Lines named on standard error before the rest are only counted.
const NAMED_PROBLEMS: u64 = 5;

#[derive(Default)]
struct Counts {
    lines: AtomicU64,
    sent: AtomicU64,
    invalid: AtomicU64,
    refused: AtomicU64,
}

struct Sender {
    producer: Arc<Producer>,
    json: bool,
    field: String,
    counts: Counts,
    stop: AtomicBool,
}

impl Sender {
    fn line(&self, raw: &[u8]) {
        let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.is_empty() {
            return;
        }
        let n = self.counts.lines.fetch_add(1, Ordering::Relaxed) + 1;
        let opts = SendOptions::default();
        let sent = if self.json {
            match serde_json::from_slice::<serde_json::Map<String, Value>>(raw) {
                Ok(object) => {
                    let fields: Vec<(&str, String)> = object
                        .iter()
                        .map(|(k, v)| {
                            let text = match v {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            (k.as_str(), text)
                        })
                        .collect();
                    self.producer.send(&fields, &opts)
                }
                Err(e) => {
                    self.problem(&self.counts.invalid, n, &format!("not a JSON object: {e}"));
                    return;
                }
            }
        } else {
            let text = String::from_utf8_lossy(raw);
            self.producer.send(&[(self.field.as_str(), &*text)], &opts)
        };
        match sent {
            Ok(()) => {
                self.counts.sent.fetch_add(1, Ordering::Relaxed);
            }
            Err(ProducerError::Record(e)) => {
                self.problem(&self.counts.invalid, n, &e.to_string());
            }
            Err(e) => self.problem(&self.counts.refused, n, &e.to_string()),
        }
    }

    fn problem(&self, counter: &AtomicU64, line: u64, why: &str) {
        let seen = self.counts.invalid.load(Ordering::Relaxed)
            + self.counts.refused.load(Ordering::Relaxed);
        counter.fetch_add(1, Ordering::Relaxed);
        if seen < NAMED_PROBLEMS {
            eprintln!("loghose pipe: line {line} not sent: {why}");
        } else if seen == NAMED_PROBLEMS {
            eprintln!("loghose pipe: more lines not sent; counted at the end");
        }
    }
}

/// A file followed as `tail -F` follows it: read from where it was left, reopened when the
/// path names a new file (rotation, after the old one is read to its end), read again from
/// the start when it shrinks (truncation).
struct Follower {
    path: PathBuf,
    file: Option<File>,
    identity: Option<(u64, u64)>,
    pos: u64,
    partial: Vec<u8>,
}

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

impl Follower {
    fn new(path: &Path, from_start: bool) -> Follower {
        let mut follower = Follower {
            path: path.to_owned(),
            file: None,
            identity: None,
            pos: 0,
            partial: Vec::new(),
        };
        if follower.open() && !from_start {
            follower.pos = follower
                .file
                .as_ref()
                .and_then(|f| f.metadata().ok())
                .map_or(0, |m| m.len());
        }
        follower
    }

    fn open(&mut self) -> bool {
        match File::open(&self.path) {
            Ok(file) => {
                self.identity = file.metadata().ok().as_ref().and_then(identity);
                self.file = Some(file);
                self.pos = 0;
                true
            }
            Err(_) => false,
        }
    }

    /// Reads what was written since the last poll, handing out whole lines.
    fn poll(&mut self, line: &mut impl FnMut(&[u8])) {
        if self.file.is_none() && !self.open() {
            return;
        }
        self.read_new(line);
        let replaced = match std::fs::metadata(&self.path) {
            Ok(meta) => identity(&meta).is_some() && identity(&meta) != self.identity,
            Err(_) => false,
        };
        if replaced {
            // Rotated: the old file was read to its end above; a last line without its
            // newline is still a line.
            if !self.partial.is_empty() {
                line(&std::mem::take(&mut self.partial));
            }
            if self.open() {
                self.read_new(line);
            }
        }
    }

    fn read_new(&mut self, line: &mut impl FnMut(&[u8])) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let len = file.metadata().map_or(self.pos, |m| m.len());
        if len < self.pos {
            // Truncated: what is there now was written after the truncation.
            self.pos = 0;
            self.partial.clear();
        }
        if file.seek(SeekFrom::Start(self.pos)).is_err() {
            return;
        }
        let mut chunk = Vec::new();
        if let Ok(n) = file.take(64 << 20).read_to_end(&mut chunk) {
            self.pos += n as u64;
        }
        let mut rest = &chunk[..];
        while let Some(at) = rest.iter().position(|b| *b == b'\n') {
            if self.partial.is_empty() {
                line(&rest[..at]);
            } else {
                self.partial.extend_from_slice(&rest[..at]);
                line(&std::mem::take(&mut self.partial));
            }
            rest = &rest[at + 1..];
        }
        self.partial.extend_from_slice(rest);
    }
}

/// Runs `loghose pipe`.
pub fn run(args: PipeArgs) -> u8 {
    let metrics = match MetricsServer::bind_flag(args.metrics_addr.as_deref(), "loghose pipe") {
        Ok(m) => m,
        Err(code) => return code,
    };
    let producer = match args.producer.producer(
        "loghose pipe",
        &[("max_block_ms", Value::from(WAIT_FOR_ROOM_MS))],
    ) {
        Ok(p) => Arc::new(p),
        Err(code) => return code,
    };
    if let Some(Err(code)) = metrics.map(|m| m.serve_announced(&producer, "loghose pipe")) {
        return code;
    }
    let sender = Arc::new(Sender {
        producer: producer.clone(),
        json: args.json,
        field: args.field.clone(),
        counts: Counts::default(),
        stop: AtomicBool::new(false),
    });
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        eprintln!("loghose pipe: cannot wait for signals");
        return super::EXIT_NOT_DELIVERED;
    };
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let reader = {
        let sender = sender.clone();
        let follow = args.follow.clone();
        let (from_start, poll) = (args.from_start, Duration::from_millis(args.poll_ms.max(1)));
        std::thread::Builder::new()
            .name("loghose-pipe-reader".into())
            .spawn(move || {
                match follow {
                    Some(path) => {
                        let mut follower = Follower::new(&path, from_start);
                        loop {
                            follower.poll(&mut |l| sender.line(l));
                            if sender.stop.load(Ordering::Acquire) {
                                break;
                            }
                            std::thread::sleep(poll);
                        }
                    }
                    None => {
                        let mut input = std::io::stdin().lock();
                        let mut buf = Vec::with_capacity(4096);
                        loop {
                            buf.clear();
                            match input.read_until(b'\n', &mut buf) {
                                Ok(0) => break,
                                Ok(_) if sender.stop.load(Ordering::Acquire) => break,
                                Ok(_) => sender.line(&buf),
                                Err(e) => {
                                    eprintln!("loghose pipe: cannot read standard input: {e}");
                                    break;
                                }
                            }
                        }
                    }
                }
                let _ = done_tx.send(());
            })
    };
    let reader = match reader {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loghose pipe: cannot start the reader: {e}");
            return super::EXIT_NOT_DELIVERED;
        }
    };
    let following = args.follow.is_some();
    let by_signal = runtime.block_on(async {
        tokio::select! {
            _ = done_rx => false,
            _ = super::wait_for_stop() => true,
        }
    });
    sender.stop.store(true, Ordering::Release);
    // At the end of input the reader is done; after a signal a follower makes one last poll
    // (what was written before it) and ends. A reader blocked on standard input after a signal
    // is left behind: the process ends.
    if !by_signal || following {
        let _ = reader.join();
    }
    let closed = producer.close(Duration::from_millis(args.close_timeout_ms));
    let counts = &sender.counts;
    let (lines, sent, invalid, refused) = (
        counts.lines.load(Ordering::Relaxed),
        counts.sent.load(Ordering::Relaxed),
        counts.invalid.load(Ordering::Relaxed),
        counts.refused.load(Ordering::Relaxed),
    );
    let outcome = PipeOutcome {
        lines,
        delivered: sent.saturating_sub(closed.undelivered + closed.kept),
        kept: closed.kept,
        kept_not_durable: closed.kept_not_durable,
        undelivered: closed.undelivered,
        invalid,
        refused,
    };
    if outcome.status() != super::EXIT_DELIVERED {
        let cause = closed
            .failed
            .last()
            .and_then(|r| r.error_message().map(str::to_owned))
            .map(|m| format!(" (last failure: {m})"))
            .unwrap_or_default();
        eprintln!("loghose pipe: {}{cause}", outcome.summary());
    }
    outcome.status()
}

/// What became of the lines read, once the producer closed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PipeOutcome {
    lines: u64,
    delivered: u64,
    /// Left in the spool for the next run, of which `kept_not_durable` where the disk failed
    /// its syncs.
    kept: u64,
    kept_not_durable: u64,
    /// Failed for good, or (without a spool) abandoned at the close timeout.
    undelivered: u64,
    invalid: u64,
    refused: u64,
}

impl PipeOutcome {
    /// Lines neither delivered nor durably kept.
    fn lost(&self) -> u64 {
        self.undelivered + self.invalid + self.refused + self.kept_not_durable
    }

    /// The exit status: 1 whenever a line is lost, 75 when some are kept (durably), else 0.
    fn status(&self) -> u8 {
        if self.lost() > 0 {
            super::EXIT_NOT_DELIVERED
        } else if self.kept > 0 {
            super::EXIT_KEPT
        } else {
            super::EXIT_DELIVERED
        }
    }

    fn summary(&self) -> String {
        let kept = match self.kept_not_durable {
            0 => format!("{} kept in the spool for the next run", self.kept),
            n => format!(
                "{} kept in the spool for the next run ({n} of them not durable: the disk \
                 failed its syncs, a power loss could lose them)",
                self.kept
            ),
        };
        format!(
            "{} lines, {} delivered, {kept}, {} undelivered, {} invalid, {} refused",
            self.lines, self.delivered, self.undelivered, self.invalid, self.refused
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(kept: u64, kept_not_durable: u64, undelivered: u64) -> PipeOutcome {
        PipeOutcome {
            lines: 10,
            delivered: 10 - kept - undelivered,
            kept,
            kept_not_durable,
            undelivered,
            ..PipeOutcome::default()
        }
    }

    #[test]
    fn the_exit_status_never_vouches_for_a_line_that_is_not_durable() {
        assert_eq!(outcome(0, 0, 0).status(), crate::cli::EXIT_DELIVERED);
        assert_eq!(outcome(4, 0, 0).status(), crate::cli::EXIT_KEPT);
        assert_eq!(outcome(4, 4, 0).status(), crate::cli::EXIT_NOT_DELIVERED);
        assert_eq!(outcome(4, 1, 0).status(), crate::cli::EXIT_NOT_DELIVERED);
        assert_eq!(outcome(2, 0, 1).status(), crate::cli::EXIT_NOT_DELIVERED);
        let invalid = PipeOutcome {
            invalid: 1,
            ..outcome(0, 0, 0)
        };
        assert_eq!(invalid.status(), crate::cli::EXIT_NOT_DELIVERED);
        let refused = PipeOutcome {
            refused: 1,
            ..outcome(3, 0, 0)
        };
        assert_eq!(refused.status(), crate::cli::EXIT_NOT_DELIVERED);
        assert!(outcome(4, 3, 0).summary().contains("3 of them not durable"));
    }
}
