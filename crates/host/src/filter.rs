//! The `--cpu LIST` and `--name GLOB` filters, with one meaning per view.
//!
//! | view       | `--cpu LIST` keeps                                   | `--name GLOB` keeps            |
//! |------------|------------------------------------------------------|--------------------------------|
//! | cpus       | those CPUs                                           | cpuidle states of that name    |
//! | irqs       | IRQs delivered to or allowed on LIST; LIST's columns | IRQs with a matching action/number; counters and softirqs of that name |
//! | tasks      | tasks allowed on, or last run on, a CPU of LIST      | tasks whose comm matches       |
//! | workqueues | workqueues whose cpumask meets LIST                  | workqueues of that name        |
//! | cgroups    | cpusets whose effective CPUs meet LIST               | cpusets whose path matches     |

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::cgroups::Cgroups;
use crate::cpus::CpuMap;
use crate::error::{Error, Result};
use crate::irqs::{Counter, IrqMap};
use crate::tasks::{mask_groups, Task};
use crate::workqueues::Workqueues;

/// The two filters every `show` view takes.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// `--cpu LIST`.
    pub cpus: Option<CpuSet>,
    /// `--name GLOB`.
    pub name: Option<glob::Pattern>,
}

impl Filter {
    /// Builds a filter from the command-line strings.
    pub fn new(cpus: Option<&str>, name: Option<&str>) -> Result<Filter> {
        let cpus = cpus
            .map(|c| {
                if c.trim().is_empty() {
                    return Err(Error::Invalid(format!(
                        "--cpu {c:?}: expected a CPU list such as 0-3,8 (an empty list is not a filter)"
                    )));
                }
                CpuSet::parse_list(c).map_err(|e| Error::Invalid(format!("--cpu: {e}")))
            })
            .transpose()?;
        let name = name
            .map(|n| {
                glob::Pattern::new(n)
                    .map_err(|e| Error::Invalid(format!("--name {n:?}: not a glob pattern: {e}")))
            })
            .transpose()?;
        Ok(Filter { cpus, name })
    }

    fn name_ok(&self, s: &str) -> bool {
        self.name.as_ref().is_none_or(|p| p.matches(s))
    }

    fn cpus_meet(&self, set: Option<&CpuSet>) -> bool {
        match (&self.cpus, set) {
            (None, _) => true,
            (Some(f), Some(s)) => f.intersects(s),
            (Some(_), None) => false,
        }
    }

    /// Keeps the CPUs and idle states asked for.
    pub fn cpus_view(&self, map: &mut CpuMap) {
        if let Some(f) = &self.cpus {
            map.cpus.retain(|c| f.contains(c.cpu));
        }
        for c in &mut map.cpus {
            c.idle_states.retain(|s| self.name_ok(&s.name));
        }
    }

    /// Keeps the IRQs, counters and CPU columns asked for.
    pub fn irqs_view(&self, map: &mut IrqMap) {
        map.irqs.retain(|i| {
            let name = self.name.as_ref().is_none_or(|p| i.matches(p));
            let cpu = self.cpus_meet(i.delivered_to()) || self.cpus_meet(i.affinity());
            name && cpu
        });
        if self.name.is_some() {
            map.counters.retain(|c| self.name_ok(&c.name));
            map.softirqs.retain(|c| self.name_ok(&c.name));
        }
        if let Some(f) = &self.cpus {
            let keep: Vec<bool> = map.cpus.iter().map(|c| f.contains(*c)).collect();
            let soft_keep: Vec<bool> = map.softirq_cpus.iter().map(|c| f.contains(*c)).collect();
            map.cpus.retain(|c| f.contains(*c));
            map.softirq_cpus.retain(|c| f.contains(*c));
            for irq in &mut map.irqs {
                irq.counts = pick(&irq.counts, &keep);
                irq.rates = irq.rates.as_ref().map(|r| pick(r, &keep));
            }
            let columns = |rows: &mut Vec<Counter>, keep: &[bool]| {
                for row in rows.iter_mut().filter(|r| r.per_cpu) {
                    row.counts = pick(&row.counts, keep);
                    row.rates = row.rates.as_ref().map(|r| pick(r, keep));
                }
            };
            columns(&mut map.counters, &keep);
            columns(&mut map.softirqs, &soft_keep);
        }
    }

    /// Keeps the tasks asked for.
    pub fn tasks_view(&self, tasks: &mut Vec<Task>) {
        tasks.retain(|t| {
            let cpu = self
                .cpus
                .as_ref()
                .is_none_or(|f| f.intersects(&t.allowed) || f.contains(t.last_cpu));
            cpu && self.name_ok(&t.comm)
        });
    }

    /// Keeps the workqueues asked for.
    pub fn workqueues_view(&self, wq: &mut Workqueues) {
        wq.queues.retain(|q| {
            let cpu = q.cpumask.is_none() || self.cpus_meet(q.cpumask.as_ref());
            cpu && self.name_ok(&q.name)
        });
    }

    /// Keeps the cpusets asked for.
    pub fn cgroups_view(&self, cg: &mut Cgroups) {
        cg.cpusets.retain(|c| {
            self.cpus_meet(c.effective_cpus.as_ref().or(c.cpus.as_ref())) && self.name_ok(&c.path)
        });
    }
}

fn pick<T: Copy>(values: &[T], keep: &[bool]) -> Vec<T> {
    values
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(v, _)| *v)
        .collect()
}

/// The task list of `show tasks`, with the check of `-p PID` (`taskset -p` moves only
/// the main thread).
#[derive(Clone, Debug, Serialize)]
pub struct TaskList {
    /// Whether each row is a thread (otherwise a process).
    pub threads: bool,
    /// The process asked for with `-p`.
    pub pid: Option<u32>,
    /// The rows.
    pub tasks: Vec<Task>,
    /// With `-p`: the distinct affinity masks of the process's threads with the
    /// thread ids holding each, largest group first. More than one group means
    /// the threads do not share one mask (`taskset -p` moved only one of them).
    pub mask_groups: Option<Vec<MaskGroup>>,
}

/// Threads sharing one affinity mask.
#[derive(Clone, Debug, Serialize)]
pub struct MaskGroup {
    /// The mask.
    pub allowed: CpuSet,
    /// The threads.
    pub tids: Vec<u32>,
}

impl TaskList {
    /// Builds the list; with `pid`, computes the mask groups over all its threads
    /// before the filter applies, so the warning is never filtered away.
    pub fn new(mut tasks: Vec<Task>, threads: bool, pid: Option<u32>, filter: &Filter) -> TaskList {
        let mask_groups = pid.map(|_| {
            mask_groups(&tasks)
                .into_iter()
                .map(|(allowed, tids)| MaskGroup { allowed, tids })
                .collect()
        });
        filter.tasks_view(&mut tasks);
        TaskList {
            threads: threads || pid.is_some(),
            pid,
            tasks,
            mask_groups,
        }
    }
}
