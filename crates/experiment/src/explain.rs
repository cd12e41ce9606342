//! Why, from a trace: where the threads under test of a traced run ran, how they
//! were woken, and what moved around the steps of its series. The runner fills
//! these from `analyze`'s pass over the run's trace; they are kept as they are,
//! no statistic is computed on them.

use serde::{Deserialize, Serialize};

use crate::recipe::Role;

/// The trace-based explanation of one traced run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// The run's place in the plan.
    pub seq: usize,
    /// Its cell.
    pub cell: usize,
    /// The trace file, relative to the experiment's directory (`traces/run-003.dat`),
    /// when it was kept.
    pub trace: Option<String>,
    /// The traced time, ns.
    pub duration_ns: u64,
    /// Events the kernel lost while recording.
    pub lost_events: u64,
    /// Every thread of the processes under test, most run time first.
    pub threads: Vec<ThreadPlacement>,
    /// What woke them: IRQ -> task and softirq -> task chains, most wake-ups first.
    pub chains: Vec<ChainSummary>,
    /// The migrations of the threads under test within a second of each step of the
    /// run's series.
    pub around_steps: Vec<StepMigrations>,
    /// The latency probe's spikes in the trace, blamed: the one a `break` stopped the
    /// trace at, else the probe's worst wake-up.
    #[serde(default)]
    pub spikes: Vec<BlamedSpike>,
}

/// A wake-up of the latency probe that the trace blames.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlamedSpike {
    /// The CPU.
    pub cpu: u32,
    /// The probe's thread.
    pub tid: i32,
    /// Its wake-up latency in the trace, ns.
    pub latency_ns: u64,
    /// Its switch-in, ns from the start of the trace.
    pub t_ns: u64,
    /// Whether the `break` marker names it.
    pub marked: bool,
    /// What took most of the window: `task`, `interrupts`, `no_events`, `idle`, `spread`.
    pub cause: String,
    /// The blame's verdict line.
    pub verdict: String,
    /// Events the kernel lost on its CPU within its window: the blame may miss the cause.
    #[serde(default)]
    pub lost_events: u64,
}

/// How many blamed spikes of the experiment had one cause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseCount {
    /// The cause.
    pub cause: String,
    /// Spikes, over all traced runs.
    pub spikes: u32,
    /// Of which stopped a trace (`break`).
    pub marked: u32,
}

/// The spikes of `explanations` grouped by cause, most first.
pub fn causes(explanations: &[Explanation]) -> Vec<CauseCount> {
    let mut out: Vec<CauseCount> = Vec::new();
    for s in explanations.iter().flat_map(|e| &e.spikes) {
        let i = match out.iter().position(|c| c.cause == s.cause) {
            Some(i) => i,
            None => {
                out.push(CauseCount {
                    cause: s.cause.clone(),
                    spikes: 0,
                    marked: 0,
                });
                out.len() - 1
            }
        };
        out[i].spikes += 1;
        out[i].marked += u32::from(s.marked);
    }
    out.sort_by(|a, b| b.spikes.cmp(&a.spikes).then(a.cause.cmp(&b.cause)));
    out
}

/// Where one thread under test ran in a traced run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadPlacement {
    /// The role of its process, when it is one of the runner's.
    pub role: Option<Role>,
    /// Its tid.
    pub tid: i32,
    /// Its process.
    pub tgid: Option<i32>,
    /// Its name.
    pub comm: String,
    /// Time on a CPU, ns.
    pub run_ns: u64,
    /// Time per CPU, ns, most first.
    pub cpus: Vec<CpuRun>,
    /// sched_migrate_task events.
    pub migrations: u64,
    /// Migrations per second of traced time.
    pub migrations_per_s: f64,
    /// Wake-ups (sched_waking -> switch-in).
    pub wakeups: u64,
    /// Median wake-up latency, ns.
    pub wake_p50_ns: Option<u64>,
    /// Worst wake-up latency, ns.
    pub wake_max_ns: Option<u64>,
    /// Wake-ups whose switch-in the trace did not record (inferred: upper bounds).
    #[serde(default)]
    pub wakeups_inferred: u64,
    /// Median latency of the wake-ups switched in from the idle task (the exit from
    /// idle is in them), ns.
    #[serde(default)]
    pub wake_idle_p50_ns: Option<u64>,
    /// Median latency of the wake-ups that took the CPU from another task, ns.
    #[serde(default)]
    pub wake_task_p50_ns: Option<u64>,
}

/// Run time on one CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuRun {
    /// The CPU.
    pub cpu: u32,
    /// Time on it, ns.
    pub run_ns: u64,
}

/// Wake-ups of one thread under test done in one IRQ or softirq: the latency from
/// the IRQ's handler exit, or the softirq's exit when no hardirq raised it (veth,
/// loopback), to the thread's switch-in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChainSummary {
    /// What woke it: `irq 36 virtio1-req.0`, `softirq NET_RX`.
    pub source: String,
    /// The woken thread.
    pub tid: i32,
    /// Its name.
    pub comm: String,
    /// Wake-ups by this source.
    pub count: u64,
    /// The CPUs the source ran on, most wake-ups first.
    pub source_cpus: Vec<u32>,
    /// Median latency from the source's exit to the switch-in, ns.
    pub p50_ns: Option<u64>,
    /// Worst such latency, ns.
    pub max_ns: Option<u64>,
    /// Of those wake-ups, the ones whose switch-in was inferred, not recorded: their
    /// latency is an upper bound, and with all of them, so are `p50_ns` and `max_ns`.
    #[serde(default)]
    pub inferred: u64,
}

/// The migrations near one step of a run's series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepMigrations {
    /// The series.
    pub series: String,
    /// The step's time, ns from the start of the run.
    pub step_t_ns: u64,
    /// The migrations within a second of it.
    pub migrations: Vec<Migration>,
}

/// One sched_migrate_task of a thread under test.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Migration {
    /// ns from the start of the run.
    pub t_ns: u64,
    /// The thread.
    pub tid: i32,
    /// Its name.
    pub comm: String,
    /// From this CPU.
    pub from_cpu: u32,
    /// To this CPU.
    pub to_cpu: u32,
}

/// The machine an experiment ran on, to warn when two compared experiments ran on
/// different ones.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Testbed {
    /// Its host name.
    pub hostname: String,
    /// `uname -r`.
    pub kernel: String,
    /// The online CPUs.
    pub cpus: String,
    /// The preemption model.
    pub preemption: String,
    /// What says the machine is virtual, if anything does.
    pub virtualization: Option<String>,
}
