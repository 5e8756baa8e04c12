//! The `loghose` command: ship a record or a stream of lines from a shell script, a pipe or a
//! followed file, and run the emulator.
//!
//! - `loghose send KEY=VALUE…`: one record; the exit status says whether it was delivered.
//! - `loghose pipe [--json] [--follow FILE]`: a record per line (see [`pipe`]).
//! - `loghose emulator [--port N]`: the local emulator, until SIGINT or SIGTERM.
//!
//! Configuration from flags, the environment and a file, in that order ([`options`]). Exit
//! statuses: 0 everything delivered, 1 something was not (counted on standard error), 2 bad
//! arguments or configuration. Built with the `cli` feature (clap, toml); the binary
//! `loghose` is [`main`].

pub mod emulator;
pub mod options;
pub mod pipe;
pub mod send;

use std::ffi::OsString;
use std::process::ExitCode;

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
    /// Run the local SLS emulator until interrupted.
    Emulator(emulator::EmulatorArgs),
}

/// Runs the `loghose` command with `args` (the program name first).
pub fn main<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match cli.command {
        Command::Send(args) => send::run(args),
        Command::Pipe(args) => pipe::run(args),
        Command::Emulator(args) => emulator::run(args, "loghose emulator"),
    }
}

/// Until SIGINT or SIGTERM (Ctrl-C where there are no Unix signals).
#[cfg(unix)]
pub(crate) async fn wait_for_stop() {
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

/// Until Ctrl-C.
#[cfg(not(unix))]
pub(crate) async fn wait_for_stop() {
    let _ = tokio::signal::ctrl_c().await;
}
