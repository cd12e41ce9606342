//! `jitterlab show`: where everything runs.

use clap::{Args, Subcommand};
use jitterlab_host::overview::Overview;
use jitterlab_host::tasks::{read_tasks, TaskQuery};
use jitterlab_host::{Cgroups, CpuMap, Filter, IrqMap, Root, TaskList, Workqueues};

use crate::cli::{Color, JsonOut};
use crate::exit::{Error, Exit, Result};
use crate::output::emit;

/// `jitterlab show [VIEW]`.
#[derive(Args, Debug)]
pub struct ShowArgs {
    /// A sub-view; without one, the per-CPU overview.
    #[command(subcommand)]
    pub view: Option<ShowView>,
    #[command(flatten)]
    pub json: JsonOut,
    /// Only what concerns these CPUs (list form: 0-3,8).
    #[arg(long = "cpu", global = true, value_name = "LIST")]
    pub cpu: Option<String>,
    /// Only the entries whose name matches this glob (irq/*, iperf*, virtio*).
    #[arg(long, global = true, value_name = "GLOB")]
    pub name: Option<String>,
}

/// The `show` sub-views.
#[derive(Subcommand, Debug)]
pub enum ShowView {
    /// Topology, frequency, idle states and isolation of each CPU.
    Cpus,
    /// Every IRQ with its configured and effective affinity and per-CPU counts;
    /// the system interrupt counters (LOC, RES, ...) and softirqs.
    Irqs {
        /// Sample twice, TIME apart (1s, 500ms), and show per-CPU rates over the window.
        #[arg(long, value_name = "TIME", value_parser = jitterlab_units::parse_duration_ns)]
        interval: Option<u64>,
    },
    /// Processes (or threads) with policy, priority, allowed CPUs and last CPU.
    Tasks {
        /// One row per thread.
        #[arg(long)]
        threads: bool,
        /// All threads of this process; warns when their CPU masks differ.
        #[arg(short = 'p', long, value_name = "PID")]
        pid: Option<u32>,
    },
    /// The workqueue cpumasks.
    Workqueues,
    /// The cgroup layout and the cpuset tree.
    Cgroups,
}

pub fn run(root: &Root, args: ShowArgs, color: Color) -> Result {
    let filter = Filter::new(args.cpu.as_deref(), args.name.as_deref())?;
    if let Some(list) = &args.cpu {
        // A CPU the machine lacks is a mistake, not an empty view.
        let set =
            jitterlab_cpuset::CpuSet::parse_list(list).map_err(|e| Error::usage(e.to_string()))?;
        jitterlab_host::cpus::check_exist(root, &set)?;
    }
    match args.view {
        None => {
            let cgroups = Cgroups::read(root)?;
            let cpus = CpuMap::read(root, &cgroups.isolated_cpus())?;
            let irqs = IrqMap::read(root)?;
            let threads = read_tasks(root, TaskQuery::all_threads())?;
            emit(
                &Overview::build(&cpus, &irqs, &threads, &filter),
                &args.json,
                color,
            )?;
        }
        Some(ShowView::Cpus) => {
            let cgroups = Cgroups::read(root)?;
            let mut cpus = CpuMap::read(root, &cgroups.isolated_cpus())?;
            filter.cpus_view(&mut cpus);
            emit(&cpus, &args.json, color)?;
        }
        Some(ShowView::Irqs { interval }) => {
            let mut irqs = match interval {
                None => IrqMap::read(root)?,
                Some(ns) => IrqMap::sample(root, ns)?,
            };
            filter.irqs_view(&mut irqs);
            emit(&irqs, &args.json, color)?;
        }
        Some(ShowView::Tasks { threads, pid }) => {
            let tasks = read_tasks(root, TaskQuery { threads, pid })?;
            emit(
                &TaskList::new(tasks, threads, pid, &filter),
                &args.json,
                color,
            )?;
        }
        Some(ShowView::Workqueues) => {
            let mut wq = Workqueues::read(root)?;
            filter.workqueues_view(&mut wq);
            emit(&wq, &args.json, color)?;
        }
        Some(ShowView::Cgroups) => {
            let mut cg = Cgroups::read(root)?;
            filter.cgroups_view(&mut cg);
            emit(&cg, &args.json, color)?;
        }
    }
    Ok(Exit::Ok)
}
