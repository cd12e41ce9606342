//! `jitterlab load`: the latency probe's load generators on their own, for a
//! while or around a command (seed 004's stress-cpu and stress-io under cyclictest).

use std::ffi::OsString;
use std::io;
use std::time::{Duration, Instant};

use clap::Args;
use jitterlab_host::{Error, Root};
use jitterlab_latency::load::{LoadRun, LoadSpec};
use jitterlab_render::render;

use crate::cli::Color;
use crate::output::{cancel_on_signals, emit, format};
use crate::EXIT_OK;

/// `jitterlab load`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  jitterlab load cpu:150 --cpus 0 --duration 1m\n  jitterlab load io:150 --cpus 0 -- cyclictest -m -p98 -i300 -a1 -t1 -l100000 -q\n  jitterlab load cpu:2 'cmd:stress-ng --vm 1' --cpus 0-1 --duration 30s"
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
    #[arg(long, value_parser = jitterlab_latency::parse_duration_ns)]
    pub duration: Option<u64>,
    /// Print JSON (a versioned envelope).
    #[arg(long)]
    pub json: bool,
    /// A command to run under the load; the load ends with it, and its status
    /// is the status. The summary then goes to stderr.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

pub fn run(root: &Root, args: LoadArgs, color: Color) -> anyhow::Result<u8> {
    if !root.is_live() {
        return Err(
            Error::Invalid("load runs on this machine; it cannot take --root".into()).into(),
        );
    }
    let cpus = match &args.cpus {
        Some(list) => super::online_cpus(root, list)?,
        None => root.read_cpu_list("/sys/devices/system/cpu/online")?,
    };
    // Block the signals before any thread starts, so Ctrl-C ends the load cleanly.
    let cancel = cancel_on_signals();
    let loads = jitterlab_latency::load::start(&args.loads, &cpus)?;
    let start = Instant::now();
    let deadline = args.duration.map(|d| start + Duration::from_nanos(d));
    let mut child = match args.command.split_first() {
        Some((prog, rest)) => match jitterlab_host::pin::child_command(prog).args(rest).spawn() {
            Ok(c) => Some(c),
            Err(e) => {
                drop(loads);
                eprintln!("jitterlab: cannot run {}: {e}", prog.to_string_lossy());
                return Ok(super::pin::spawn_status(&e));
            }
        },
        None => None,
    };
    let ended = super::wait_for_end(&cancel, deadline, child.as_mut(), || Ok(None))?;
    let (stopped_by, mut exit) = (ended.by, ended.exit);
    let wall_ns = start.elapsed().as_nanos() as u64;
    // The rates are over the run: the generators stop first.
    let results = loads.stop();
    if let (Some(c), None) = (&mut child, exit) {
        // Cut short by the duration or a signal. After Ctrl-C the command has its
        // own SIGINT (same process group) and may have ended already.
        exit = Some(jitterlab_host::pin::end_child(c, false)?);
    }
    let run = LoadRun::build(
        cpus,
        wall_ns,
        stopped_by,
        args.command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        exit.map(|s| s.to_string()),
        results,
    );
    if child.is_some() {
        // stdout is the command's.
        render(&run, format(args.json, Color::Never), &mut io::stderr())?;
    } else {
        emit(&run, format(args.json, color))?;
    }
    // The command's status, unless the duration ended it: then the load did its job.
    Ok(match exit {
        Some(status) if stopped_by != "duration" => super::pin::shell_status(status),
        _ => EXIT_OK,
    })
}
