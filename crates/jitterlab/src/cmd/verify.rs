//! `jitterlab verify`.

use std::path::PathBuf;

use clap::Args;
use jitterlab_host::partition::{verify, VerifyRequest, DEFAULT_STATE_DIR};
use jitterlab_host::Root;

use crate::cli::{Color, JsonOut};
use crate::exit::Result;
use crate::output::emit;

/// `jitterlab verify`.
#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: 0 when the CPUs are isolated (or only noisy, without --strict), 3 when a CPU is not isolated (with --strict also when one is noisy), 2 on a bad request.\n\nExamples:\n  jitterlab verify                  the CPUs of the partition, over 1 s\n  jitterlab verify 2-3 --interval 10s --json"
)]
pub struct VerifyArgs {
    /// The CPUs (default: the partition's, else those isolated at boot).
    #[arg(value_name = "CPUS")]
    pub cpus: Option<String>,
    /// Sample for this long, 1s, 10s (0s: one reading, no counts).
    #[arg(long, value_name = "TIME", default_value = "1s", value_parser = jitterlab_units::parse_duration_ns)]
    pub interval: u64,
    /// Where a partition's journal is.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    /// Noise (the tick, IPIs, softirqs, kernel threads, missing boot options) fails too.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub json: JsonOut,
}

pub fn run(root: &Root, args: VerifyArgs, color: Color) -> Result {
    let cpus = args
        .cpus
        .as_deref()
        .map(|c| crate::cli::cpu_list("CPUS", c))
        .transpose()?;
    let interval = jitterlab_host::window::interval("--interval", args.interval, true)?;
    let report = verify(
        root,
        &VerifyRequest {
            cpus,
            interval,
            state_dir: args.state_dir,
        },
    )?;
    emit(&report, &args.json, color)?;
    Ok(report.status(args.strict).into())
}
