//! The `jitterlab` binary: the command line. Each command parses its arguments, calls one
//! library entry point, hands the result model to a renderer and maps the outcome to an
//! exit status ([`exit`]); it reads nothing itself, computes nothing and formats nothing.

mod cli;
mod cmd;
mod exit;
mod output;
mod progress;

/// `jitterlab --version`: the version and the commit it was built from (`unknown` when
/// built outside a git clone), e.g. `0.1.0 (commit 1a2b3c4)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("JITTERLAB_COMMIT"),
    ")"
);

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cmd::run(cli) {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(err) if err.is_broken_pipe() => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("jitterlab: {err}");
            ExitCode::from(err.code())
        }
    }
}
