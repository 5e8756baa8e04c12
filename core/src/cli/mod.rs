//! The `loghose` command: ship a record or a stream of lines from a shell script, a pipe or a
//! followed file, and run the emulator.
//!
//! - `loghose send KEY=VALUE…`: one record; the exit status says whether it was delivered.
//! - `loghose pipe [--json] [--follow FILE]`: a record per line (see [`pipe`]).
//! - `loghose otlp`: an OpenTelemetry logs receiver (OTLP/HTTP) in front of a producer (see
//!   [`otlp`]).
//! - `loghose emulator [--port N]`: the local emulator, until SIGINT or SIGTERM.
//!
//! Configuration from flags, the environment and a file, in that order ([`options`]). Exit
//! statuses: 0 everything delivered, 1 something was not (counted on standard error), 2 bad
//! arguments or configuration. Built with the `cli` feature (clap, toml); the binary
//! `loghose` is [`main`].

pub mod emulator;
mod metrics_server;
pub mod options;
pub mod otlp;
pub mod pipe;
pub mod send;

use std::ffi::OsString;

use clap::{Parser, Subcommand};

/// Ships logs to Alibaba Cloud Log Service (SLS) from the command line.
#[derive(Parser, Debug)]
#[command(name = "loghose", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Send one record (KEY=VALUE fields) and wait until it is delivered.
    Send(send::SendArgs),
    /// Send each line of standard input (or of a followed file) as a record.
    Pipe(pipe::PipeArgs),
    /// Receive OpenTelemetry logs over OTLP/HTTP (POST /v1/logs) and send them.
    Otlp(otlp::OtlpArgs),
    /// Run the local SLS emulator until interrupted.
    Emulator(emulator::EmulatorArgs),
}

/// Exit status: everything was delivered (or the command served until stopped).
pub const EXIT_DELIVERED: u8 = 0;
/// Exit status: something was lost — not delivered and not durably kept (refused, invalid,
/// failed for good, or kept in a spool whose disk failed its syncs; counted on standard
/// error) — or the command could not run.
pub const EXIT_NOT_DELIVERED: u8 = 1;
/// Exit status: bad arguments or configuration.
pub const EXIT_USAGE: u8 = 2;
/// Exit status (`pipe`): every line was delivered or kept durably in the spool, and some were
/// kept: the next run on the same `spool_dir` delivers them. 75 is `EX_TEMPFAIL` of
/// `sysexits.h` ("try again later"); a systemd unit may list it in `SuccessExitStatus=`.
pub const EXIT_KEPT: u8 = 75;

/// Runs the `loghose` command with `args` (the program name first) and answers its exit
/// status. The binary calls it; so do the Python and Node packages' `loghose` commands.
pub fn main<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                EXIT_USAGE
            } else {
                EXIT_DELIVERED
            };
        }
    };
    match cli.command {
        Command::Send(args) => send::run(args),
        Command::Pipe(args) => pipe::run(args),
        Command::Otlp(args) => otlp::run(args),
        Command::Emulator(args) => emulator::run(args, "loghose emulator"),
    }
}

/// Whether the host process owns the signals (Node: its own listeners call [`request_stop`]);
/// then the command installs no handler of its own.
static HOST_SIGNALS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Asked to stop by the host (see [`request_stop`]).
static STOP: std::sync::OnceLock<tokio::sync::Notify> = std::sync::OnceLock::new();

fn stop_notify() -> &'static tokio::sync::Notify {
    STOP.get_or_init(tokio::sync::Notify::new)
}

/// For a host that handles SIGINT and SIGTERM itself (the Node package's `loghose`): the
/// command installs no signal handler and stops when [`request_stop`] is called instead.
pub fn use_host_signals() {
    HOST_SIGNALS.store(true, std::sync::atomic::Ordering::Release);
}

/// Stops a running command as SIGTERM would (from the host's own signal listener).
pub fn request_stop() {
    // A permit is kept if the command is not waiting yet.
    stop_notify().notify_one();
}

/// Asks the kernel to send this process SIGTERM when its parent ends (Linux; elsewhere
/// nothing), and stops at once if the parent has already ended. For a command started by a
/// launcher that does not pass signals on and leaves its children running when it is
/// stopped (`npx`: a SIGTERM ends npm and its shell, not the command), so that the command
/// ends with it, delivering what it holds, instead of running on orphaned. Returns whether
/// the request was made.
pub fn stop_with_parent() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getppid and prctl take no pointers; PR_SET_PDEATHSIG takes a signal number.
        let parent = unsafe { libc::getppid() };
        // SAFETY: as above.
        let set = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) } == 0;
        // SAFETY: as above.
        if set && unsafe { libc::getppid() } != parent {
            // The parent ended before the request: its signal will never come.
            request_stop();
        }
        set
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// Until SIGINT or SIGTERM (on Windows Ctrl-C, Ctrl-Break or the console closed), or
/// [`request_stop`].
pub(crate) async fn wait_for_stop() {
    if HOST_SIGNALS.load(std::sync::atomic::Ordering::Acquire) {
        stop_notify().notified().await;
        return;
    }
    tokio::select! {
        _ = stop_notify().notified() => {},
        _ = os_signal() => {},
    }
}

/// Until SIGINT or SIGTERM.
#[cfg(unix)]
async fn os_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {},
                _ = term.recv() => {},
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Until Ctrl-C, Ctrl-Break, the console window closed, or the user logging off or the system
/// shutting down (a service's stop). Windows ends the process about five seconds after a close,
/// log-off or shutdown event whatever the handler does: `--close-timeout-ms` longer than that is cut
/// short there, and a spool keeps what the drain did not send.
#[cfg(windows)]
async fn os_signal() {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close, ctrl_logoff, ctrl_shutdown};
    use tokio::signal::windows::{CtrlBreak, CtrlC, CtrlClose, CtrlLogoff, CtrlShutdown};
    type Listeners = (CtrlC, CtrlBreak, CtrlClose, CtrlLogoff, CtrlShutdown);
    // Listeners that live as long as the process: an event that finds none (a second Ctrl-C
    // during the drain, or one that comes after the input ended) goes on to Windows' default
    // handler, which ends the process at once, while the records are being delivered.
    static FOR_THE_PROCESS: std::sync::Mutex<Option<Listeners>> = std::sync::Mutex::new(None);
    if let Ok(mut kept) = FOR_THE_PROCESS.lock() {
        if kept.is_none() {
            if let (Ok(c), Ok(brk), Ok(close), Ok(logoff), Ok(shutdown)) = (
                ctrl_c(),
                ctrl_break(),
                ctrl_close(),
                ctrl_logoff(),
                ctrl_shutdown(),
            ) {
                *kept = Some((c, brk, close, logoff, shutdown));
            }
        }
    }
    match (
        ctrl_c(),
        ctrl_break(),
        ctrl_close(),
        ctrl_logoff(),
        ctrl_shutdown(),
    ) {
        (Ok(mut c), Ok(mut brk), Ok(mut close), Ok(mut logoff), Ok(mut shutdown)) => {
            tokio::select! {
                _ = c.recv() => {},
                _ = brk.recv() => {},
                _ = close.recv() => {},
                _ = logoff.recv() => {},
                _ = shutdown.recv() => {},
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Until Ctrl-C (neither Unix nor Windows).
#[cfg(not(any(unix, windows)))]
async fn os_signal() {
    let _ = tokio::signal::ctrl_c().await;
}
