//! `loghose`: the command-line tool (see `loghose::cli`).
//!
//! This file also supplies `pow`, the one function of the C math library the program calls
//! (tokio's scheduler weighs its average poll time with `f64::powf`). With it defined here,
//! from the `libm` crate, the linker leaves `libm.so` out, and the process never maps it:
//! loading it alone made about 0.6 MB resident (its start-up relocations touch most of its
//! pages), an eighth of an idle `loghose pipe` on a small machine.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(loghose::cli::main(std::env::args_os()))
}

/// `pow(3)` for this executable, so that it needs no `libm.so` (see the note above). Only
/// with glibc, whose math library is a library of its own.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[no_mangle]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}
