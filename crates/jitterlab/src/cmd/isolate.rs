//! `jitterlab isolate`.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use clap::{Args, ValueEnum};
use jitterlab_cpuset::CpuSet;
use jitterlab_host::child::cancel_on_signals;
use jitterlab_host::partition::{
    apply_live, build_plan, Exclude, Method, MethodChoice, Request, DEFAULT_STATE_DIR,
};
use jitterlab_host::Root;

use crate::cli::{Color, JsonOut};
use crate::exit::{Error, Exit, Result};
use crate::output::emit;

/// `jitterlab isolate`.
#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: 0 when the partition stands (managed IRQs that refuse are listed with their remedy, not counted as failures), 1 when a step failed or the apply was rolled back (Ctrl-C, an invalid partition), 2 when a check failed (nothing changed; --dry-run too).\n\nExamples:\n  jitterlab isolate 1 --dry-run        show the plan, change nothing\n  jitterlab isolate 2-3 --exclude 'qemu*' --stop-irqbalance --sysctl\n  jitterlab run --cpus 1 -- ./rt-app   then start the application inside\n  jitterlab revert                     undo it all"
)]
pub struct IsolateArgs {
    /// The CPUs to isolate (list form: 1, 2-3).
    #[arg(value_name = "CPUS")]
    pub cpus: String,
    /// Show the plan and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// How to keep tasks off the CPUs (auto: the cpuset partition of the hierarchy
    /// that has the cpuset controller, else affinity).
    #[arg(long, value_enum, default_value_t = MethodArg::Auto)]
    pub method: MethodArg,
    /// Where the journal goes.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    /// Leave this process (PID) or these tasks (a glob over thread or process
    /// names) where they are. Repeatable. PID 1 is left alone too, unless --move-init.
    #[arg(long, value_name = "PID|COMM-GLOB")]
    pub exclude: Vec<String>,
    /// Move PID 1's threads off the CPUs too, by affinity only (it stays in its
    /// cgroup), as `taskset -p 1 1` in a hand partition; revert gives them their CPUs back.
    #[arg(long)]
    pub move_init: bool,
    /// Stop irqbalance, which would move IRQs back (revert starts it again).
    #[arg(long)]
    pub stop_irqbalance: bool,
    /// Also set kernel.timer_migration=0, vm.stat_interval=10 and the lockup
    /// watchdog's CPUs (kernel.watchdog_cpumask) to the housekeeping CPUs.
    #[arg(long)]
    pub sysctl: bool,
    /// Keep the isolated CPUs out of idle states slower to leave than US
    /// microseconds (per-CPU PM QoS, power/pm_qos_resume_latency_us); 0: poll,
    /// never halt, as idle=poll on those CPUs alone, at the price of a busy CPU.
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u32).range(0..i32::MAX as i64))]
    pub idle_latency: Option<u32>,
    #[command(flatten)]
    pub json: JsonOut,
}

/// `--method`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum MethodArg {
    /// cgroup2 or cgroup1, where the cpuset controller is; else affinity.
    Auto,
    /// A cgroup v2 isolated partition.
    Cgroup2,
    /// cgroup v1 cpusets (housekeeping and isolated sets).
    Cgroup1,
    /// sched_setaffinity only.
    Affinity,
}

pub fn run(root: &Root, args: IsolateArgs, color: Color) -> Result {
    let cpus = CpuSet::parse_list(&args.cpus).map_err(|e| Error::usage(e.to_string()))?;
    let excludes = args
        .exclude
        .iter()
        .map(|e| Exclude::parse(e))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let req = Request {
        cpus,
        method: match args.method {
            MethodArg::Auto => MethodChoice::Auto,
            MethodArg::Cgroup2 => MethodChoice::Only(Method::Cgroup2),
            MethodArg::Cgroup1 => MethodChoice::Only(Method::Cgroup1),
            MethodArg::Affinity => MethodChoice::Only(Method::Affinity),
        },
        excludes,
        move_init: args.move_init,
        stop_irqbalance: args.stop_irqbalance,
        sysctl: args.sysctl,
        idle_latency_us: args.idle_latency,
        state_dir: args.state_dir.clone(),
        privileged: jitterlab_host::running_as_root(),
    };
    if !args.dry_run && !root.is_live() {
        return Err(Error::usage(
            "isolate changes the live machine; with --root only --dry-run is possible",
        ));
    }
    // Ctrl-C from here on cancels, and a cancel rolls back what was done.
    let cancel = (!args.dry_run).then(cancel_on_signals);
    let plan = build_plan(root, &req)?;
    if args.dry_run || !plan.ok() {
        emit(&plan, &args.json, color)?;
        return Ok(plan.status().into());
    }
    if cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
        eprintln!("jitterlab: cancelled before any change");
        return Ok(Exit::Failed);
    }
    let cancel = cancel.unwrap_or_default();
    let report = apply_live(root, &plan, &args.state_dir, &cancel)?;
    emit(&report, &args.json, color)?;
    Ok(report.status().into())
}
