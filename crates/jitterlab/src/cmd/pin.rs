//! `jitterlab pin`: move a process with all its threads, or start a command pinned.

use std::ffi::OsString;

use clap::Args;
use jitterlab_host::pin::Sched;
use jitterlab_host::{pin_process, Root};

use crate::cli::{Color, JsonOut, PolicyArg};
use crate::exit::{Error, Result};
use crate::output::emit;

/// `jitterlab pin`.
#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: 0 when every thread was moved, 1 when one was refused or none could be moved (the process exited), 2 on a bad request (nothing changed); with -- CMD, the command's own status (127 not found, 126 not runnable).\n\nExamples:\n  jitterlab pin 3 -p 12910          every thread of process 12910 to CPU 3\n  jitterlab pin 3 -p 12910 --tid 12911\n  jitterlab pin 1 --policy fifo --priority 80 -- ./rt-app --flag"
)]
pub struct PinArgs {
    /// The CPUs (list form: 0-3,8).
    #[arg(value_name = "CPUS")]
    pub cpus: String,
    /// The process whose threads to move (all of them).
    #[arg(short = 'p', long, value_name = "PID", conflicts_with = "command")]
    pub pid: Option<u32>,
    /// Only this thread of the process.
    #[arg(long, value_name = "TID", requires = "pid")]
    pub tid: Option<u32>,
    /// Scheduling policy for a started command.
    #[arg(long, value_enum, requires = "command")]
    pub policy: Option<PolicyArg>,
    /// Priority for the policy: 1-99 for fifo and rr (default 50), 0 for the others.
    #[arg(long, requires = "command")]
    pub priority: Option<u32>,
    #[command(flatten)]
    pub json: JsonOut,
    /// The command to start pinned (`--` before it is optional: `pin 1 sleep 1` is
    /// `pin 1 -- sleep 1`).
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

pub fn run(root: &Root, args: PinArgs, color: Color) -> Result {
    if !root.is_live() {
        return Err(Error::usage(
            "pin acts on live tasks; it cannot take --root",
        ));
    }
    let cpus = super::online_cpus(root, &args.cpus)?;
    if let Some(pid) = args.pid {
        let report = pin_process(root, pid, args.tid, &cpus)?;
        emit(&report, &args.json, color)?;
        return Ok(report.status().into());
    }
    if args.command.is_empty() {
        return Err(Error::usage(
            "pin needs -p PID (move a process) or -- CMD ARGS (start one)",
        ));
    }
    let sched = Sched::for_command(args.policy.map(PolicyArg::policy), args.priority);
    super::exec(&args.command, &cpus, sched)
}
