//! The per-CPU overview of `jitterlab show`: what runs where, derived from the
//! CPU map, the IRQ map and the thread list.

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::cpus::{CpuMap, IsolationReason};
use crate::filter::{Filter, MaskGroup};
use crate::irqs::IrqMap;
use crate::tasks::mask_groups;
use crate::tasks::{Task, TaskKind};

/// One row per CPU.
#[derive(Clone, Debug, Serialize)]
pub struct Overview {
    /// The rows.
    pub cpus: Vec<CpuRow>,
    /// The online CPUs among the rows.
    pub online: CpuSet,
    /// The isolated CPUs among the rows (an isolating reason besides `rcu_nocbs`).
    pub isolated: CpuSet,
    /// New IRQs' affinity.
    pub default_irq_affinity: Option<CpuSet>,
    /// Threads read (user and kernel).
    pub threads: usize,
    /// Processes read.
    pub processes: usize,
    /// The pid of a running irqbalance, which rewrites IRQ affinity.
    pub irqbalance: Option<u32>,
    /// User processes whose threads do not all share one CPU mask (the
    /// `taskset -p` trap: `taskset -p PID` moves the main thread only).
    pub split_masks: Vec<SplitProcess>,
}

/// A process whose threads have different CPU masks.
#[derive(Clone, Debug, Serialize)]
pub struct SplitProcess {
    /// Process id.
    pub pid: u32,
    /// Name of its main thread.
    pub comm: String,
    /// The masks with the threads holding each, largest group first.
    pub groups: Vec<MaskGroup>,
}

/// What one CPU is, and what runs on it.
#[derive(Clone, Debug, Serialize)]
pub struct CpuRow {
    /// The CPU.
    pub cpu: u32,
    /// Whether it is online.
    pub online: bool,
    /// Whether it is isolated: a reason other than `rcu_nocbs` applies.
    pub isolated: bool,
    /// Every isolation-related option that applies to it.
    pub isolation: Vec<IsolationReason>,
    /// Core id.
    pub core_id: Option<u32>,
    /// SMT siblings, this CPU included.
    pub smt_siblings: Option<CpuSet>,
    /// Package.
    pub package_id: Option<u32>,
    /// NUMA node.
    pub node: Option<u32>,
    /// Device IRQs delivered here (effective affinity).
    pub irqs: Vec<NamedIrq>,
    /// Threads that last ran here, busiest first.
    pub last_ran: Vec<TaskRef>,
    /// How many threads are allowed to run here.
    pub allowed: usize,
    /// How many of those are allowed nowhere else.
    pub bound: usize,
    /// Kernel threads bound to this CPU alone, per-CPU ones first.
    pub kthreads: Vec<TaskRef>,
}

/// An IRQ by number and name.
#[derive(Clone, Debug, Serialize)]
pub struct NamedIrq {
    /// Number.
    pub irq: u32,
    /// Actions or chip.
    pub name: String,
}

/// A thread by id and name.
#[derive(Clone, Debug, Serialize)]
pub struct TaskRef {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Name.
    pub comm: String,
    /// Kind.
    pub kind: TaskKind,
}

impl TaskRef {
    fn of(t: &Task) -> TaskRef {
        TaskRef {
            pid: t.pid,
            tid: t.tid,
            comm: t.comm.clone(),
            kind: t.kind,
        }
    }
}

impl Overview {
    /// Builds the overview from a thread list (read with `threads: true`);
    /// a running irqbalance is found among the threads.
    /// `--cpu` keeps those CPUs' rows; `--name` keeps the IRQs and threads listed.
    pub fn build(cpus: &CpuMap, irqs: &IrqMap, threads: &[Task], filter: &Filter) -> Overview {
        let named = |s: &str| filter.name.as_ref().is_none_or(|p| p.matches(s));
        let mut busiest: Vec<&Task> = threads.iter().collect();
        busiest.sort_by_key(|t| std::cmp::Reverse(t.cpu_time_ns));
        let mut rows = Vec::new();
        for c in &cpus.cpus {
            if filter.cpus.as_ref().is_some_and(|f| !f.contains(c.cpu)) {
                continue;
            }
            let cpu = c.cpu;
            let row_irqs = irqs
                .irqs
                .iter()
                .filter(|i| i.delivered_to().is_some_and(|d| d.contains(cpu)))
                .filter(|i| filter.name.as_ref().is_none_or(|p| i.matches(p)))
                .map(|i| NamedIrq {
                    irq: i.irq,
                    name: i.label(),
                })
                .collect();
            let last_ran = busiest
                .iter()
                .filter(|t| t.last_cpu == cpu && c.online && named(&t.comm))
                .map(|t| TaskRef::of(t))
                .collect();
            let allowed: Vec<&Task> = threads
                .iter()
                .filter(|t| t.allowed.contains(cpu) && named(&t.comm))
                .collect();
            let bound = allowed.iter().filter(|t| t.allowed.len() == 1).count();
            let mut kthreads: Vec<TaskRef> = allowed
                .iter()
                .filter(|t| t.kind.is_kthread() && t.allowed.len() == 1)
                .map(|t| TaskRef::of(t))
                .collect();
            kthreads.sort_by_key(|t| (t.kind != TaskKind::KthreadPerCpu, t.tid));
            rows.push(CpuRow {
                cpu,
                online: c.online,
                isolated: c.isolation.iter().any(|r| r.isolates()),
                isolation: c.isolation.clone(),
                core_id: c.core_id,
                smt_siblings: c.smt_siblings.clone(),
                package_id: c.package_id,
                node: c.node,
                irqs: row_irqs,
                last_ran,
                allowed: allowed.len(),
                bound,
                kthreads,
            });
        }
        let mut pids: Vec<u32> = threads.iter().map(|t| t.pid).collect();
        pids.dedup();
        let mut split_masks = Vec::new();
        for chunk in threads.chunk_by(|a, b| a.pid == b.pid) {
            let main = &chunk[0];
            if chunk.len() < 2 || main.kind.is_kthread() || !named(&main.comm) {
                continue;
            }
            let groups = mask_groups(chunk);
            if groups.len() > 1 {
                split_masks.push(SplitProcess {
                    pid: main.pid,
                    comm: main.comm.clone(),
                    groups: groups
                        .into_iter()
                        .map(|(allowed, tids)| MaskGroup { allowed, tids })
                        .collect(),
                });
            }
        }
        let irqbalance = threads
            .iter()
            .find(|t| t.comm == "irqbalance" && !t.kind.is_kthread())
            .map(|t| t.pid);
        Overview {
            online: rows.iter().filter(|r| r.online).map(|r| r.cpu).collect(),
            isolated: rows.iter().filter(|r| r.isolated).map(|r| r.cpu).collect(),
            cpus: rows,
            default_irq_affinity: irqs.default_affinity.clone(),
            threads: threads.len(),
            processes: pids.len(),
            irqbalance,
            split_masks,
        }
    }
}
