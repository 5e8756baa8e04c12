//! `loghose-emulator`: the local SLS emulator as a command-line server, the same as
//! `loghose emulator` (see `loghose::cli::emulator`).

use clap::Parser;

/// A local server that accepts SLS PutLogs as the real service does.
#[derive(Parser, Debug)]
#[command(name = "loghose-emulator", version)]
struct Args {
    #[command(flatten)]
    emulator: loghose::cli::emulator::EmulatorArgs,
}

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(loghose::cli::emulator::run(
        Args::parse().emulator,
        "loghose-emulator",
    ))
}
