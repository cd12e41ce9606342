//! Workqueues: the unbound cpumask and each sysfs-visible workqueue.

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::error::Result;
use crate::root::Root;

const WQ_DIR: &str = "/sys/devices/virtual/workqueue";

/// The workqueue masks.
#[derive(Clone, Debug, Serialize)]
pub struct Workqueues {
    /// `cpumask`: where unbound work may run, for every unbound workqueue.
    pub cpumask: Option<CpuSet>,
    /// `cpumask_requested`: what user space asked for (6.x).
    pub cpumask_requested: Option<CpuSet>,
    /// `cpumask_isolated`: CPUs the kernel keeps unbound work off (isolcpus, 6.x).
    pub cpumask_isolated: Option<CpuSet>,
    /// The workqueues with the WQ_SYSFS flag, the only ones user space can see.
    pub queues: Vec<Workqueue>,
}

/// One workqueue.
#[derive(Clone, Debug, Serialize)]
pub struct Workqueue {
    /// Its name.
    pub name: String,
    /// Whether it is per-CPU (work runs on the CPU that queued it).
    pub per_cpu: Option<bool>,
    /// Its own cpumask (unbound workqueues only).
    pub cpumask: Option<CpuSet>,
    /// `affinity_scope` (cpu, smt, cache, numa, system, default).
    pub affinity_scope: Option<String>,
    /// `affinity_strict`.
    pub affinity_strict: Option<bool>,
    /// `max_active`.
    pub max_active: Option<u32>,
    /// Nice value of its workers.
    pub nice: Option<i32>,
}

impl Workqueues {
    /// Reads them; on a kernel without sysfs workqueues everything is empty.
    pub fn read(root: &Root) -> Result<Workqueues> {
        let mut queues = Vec::new();
        for name in root.list_dir(WQ_DIR)? {
            let dir = format!("{WQ_DIR}/{name}");
            // Workqueues are directories with a per_cpu or max_active file;
            // `power` and the top-level files are not.
            if !root.exists(format!("{dir}/per_cpu")) && !root.exists(format!("{dir}/max_active")) {
                continue;
            }
            queues.push(Workqueue {
                per_cpu: root.read_flag_opt(format!("{dir}/per_cpu"))?,
                cpumask: root.read_cpu_mask_opt(format!("{dir}/cpumask"))?,
                affinity_scope: root.read_line_opt(format!("{dir}/affinity_scope"))?,
                affinity_strict: root.read_flag_opt(format!("{dir}/affinity_strict"))?,
                max_active: root.read_num_opt(format!("{dir}/max_active"))?,
                nice: root.read_num_opt(format!("{dir}/nice"))?,
                name,
            });
        }
        let mask = |f: &str| root.read_cpu_mask_opt(format!("{WQ_DIR}/{f}"));
        Ok(Workqueues {
            cpumask: mask("cpumask")?,
            cpumask_requested: mask("cpumask_requested")?,
            cpumask_isolated: mask("cpumask_isolated")?,
            queues,
        })
    }
}
