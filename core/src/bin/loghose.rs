//! `loghose`: the command-line tool (see `loghose::cli`).

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(loghose::cli::main(std::env::args_os()))
}
