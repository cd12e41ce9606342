//! `jitterlab load`: the latency probe's load generators on their own, for a while or
//! around a command (stress-cpu or stress-io under cyclictest).

use std::ffi::OsString;

use clap::Args;
use jitterlab_host::child::cancel_on_signals;
use jitterlab_host::Root;
use jitterlab_latency::load::{run_load, LoadOutcome, LoadRequest, LoadSpec};

use crate::cli::{cpu_list, Color, JsonOut};
use crate::exit::Result;
use crate::output::{emit, emit_stderr};

/// `jitterlab load`.
#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: with -- CMD, the command's own status (127 not found, 126 not runnable, 128 + N when signal N ended it), or 0 when --duration ended it first; without one, 0.\n\nExamples:\n  jitterlab load cpu:150 --cpus 0 --duration 1m\n  jitterlab load io:150 --cpus 0 -- cyclictest -m -p98 -i300 -a1 -t1 -l100000 -q\n  jitterlab load cpu:2 'cmd:stress-ng --vm 1' --cpus 0-1 --duration 30s"
)]
pub struct LoadArgs {
    /// The loads: cpu:N (threads looping usleep(1)), io:N (4 KiB O_SYNC writes),
    /// mem:N (memory streaming), cmd:'COMMAND'.
    #[arg(required = true, value_name = "SPEC")]
    pub loads: Vec<LoadSpec>,
    /// CPUs the loads run on (default: all online).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Stop after this long: 10s, 5m (default: when the command ends, or Ctrl-C).
    #[arg(long, value_parser = jitterlab_units::parse_duration_ns)]
    pub duration: Option<u64>,
    #[command(flatten)]
    pub json: JsonOut,
    /// A command to run under the load; the load ends with it, and its status
    /// is the status. The summary then goes to stderr.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

pub fn run(root: &Root, args: LoadArgs, color: Color) -> Result {
    let request = LoadRequest {
        specs: args.loads,
        cpus: args
            .cpus
            .as_deref()
            .map(|l| cpu_list("--cpus", l))
            .transpose()?,
        duration_ns: args.duration,
        command: args.command,
    };
    // Block the signals before any thread starts, so Ctrl-C ends the load cleanly.
    let cancel = cancel_on_signals();
    let outcome = run_load(root, &request, &cancel)?;
    match &outcome {
        LoadOutcome::CannotStart { program, error } => {
            eprintln!("jitterlab: cannot run {program}: {error}");
        }
        LoadOutcome::Ran { run, .. } if request.command.is_empty() => {
            emit(run, &args.json, color)?;
        }
        LoadOutcome::Ran { run, .. } => {
            // stdout is the command's.
            emit_stderr(run, &args.json)?;
        }
    }
    Ok(outcome.status().into())
}
