//! `jitterlab run`: a command started inside the partition.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use jitterlab_host::partition::{enter_for_run, DEFAULT_STATE_DIR};
use jitterlab_host::pin::Sched;
use jitterlab_host::Root;

use crate::cli::{JsonOut, PolicyArg};
use crate::exit::{Error, Result};
use crate::output::emit_stderr;

/// `jitterlab run`.
#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: the command's own status (127 not found, 126 not runnable), or 2 with nothing changed when an argument is bad (--priority out of its policy's range, CPUs not isolated).\n\nExamples:\n  jitterlab run --cpus 1 --policy fifo --priority 80 -- ./rt-app\n  jitterlab run --cpus 1 -- cyclictest -m -p98 -i300 -a1"
)]
pub struct RunArgs {
    /// The isolated CPUs to run on.
    #[arg(long, value_name = "LIST")]
    pub cpus: String,
    /// Scheduling policy.
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,
    /// Priority for the policy: 1-99 for fifo and rr (default 50), 0 for the others.
    #[arg(long)]
    pub priority: Option<u32>,
    /// Where the partition's journal is.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    #[command(flatten)]
    pub json: JsonOut,
    /// The command (`--` before it is optional).
    #[arg(trailing_var_arg = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

pub fn run(root: &Root, args: RunArgs) -> Result {
    if !root.is_live() {
        return Err(Error::usage(
            "run starts a command here; it cannot take --root",
        ));
    }
    let cpus = super::online_cpus(root, &args.cpus)?;
    let sched = Sched::for_command(args.policy.map(PolicyArg::policy), args.priority);
    let placement = enter_for_run(root, &args.state_dir, &cpus, &args.command, sched.as_ref())?;
    if args.json.path.is_some() {
        emit_stderr(&placement, &args.json)?;
    }
    super::exec(&args.command, &cpus, sched)
}
