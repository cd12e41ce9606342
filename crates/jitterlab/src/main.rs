//! The `jitterlab` binary: the command line. Each command parses its arguments, calls one
//! library entry point, hands the result model to a renderer and maps the outcome to an
//! exit status ([`exit`]); it reads nothing itself, computes nothing and formats nothing.

mod cli;
mod cmd;
mod exit;
mod output;

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
