//! The `jitterlab` binary: the command line and the glue between the library
//! crates. It reads nothing itself, computes nothing and formats nothing.

mod cli;
mod cmd;
mod output;

use std::process::ExitCode;

use clap::Parser;

/// Exit status: success.
pub const EXIT_OK: u8 = 0;
/// Exit status: partly failed, or a runtime failure.
pub const EXIT_FAILED: u8 = 1;
/// Exit status: usage error or invalid request; nothing was changed.
pub const EXIT_USAGE: u8 = 2;
/// Exit status: a measured latency exceeded `--fail-above`.
pub const EXIT_LIMIT: u8 = 3;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cmd::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            if output::is_broken_pipe(&err) {
                return ExitCode::from(EXIT_OK);
            }
            eprintln!("jitterlab: {err:#}");
            let invalid = err
                .downcast_ref::<jitterlab_host::Error>()
                .is_some_and(|e| matches!(e, jitterlab_host::Error::Invalid(_)))
                || err
                    .downcast_ref::<jitterlab_latency::Error>()
                    .is_some_and(|e| matches!(e, jitterlab_latency::Error::Invalid(_)));
            ExitCode::from(if invalid { EXIT_USAGE } else { EXIT_FAILED })
        }
    }
}
