//! The state isolate changes, read before and after, and the differences.

use std::collections::BTreeSet;

use jitterlab_cpuset::CpuSet;
use serde::{Deserialize, Serialize};

use crate::cgroups::Cgroups;
use crate::error::Result;
use crate::root::Root;
use crate::tasks::{read_tasks, TaskKind, TaskQuery};

/// Sysctls `--sysctl` may change.
pub(crate) const SYSCTLS: [(&str, &str); 3] = [
    ("kernel.timer_migration", "/proc/sys/kernel/timer_migration"),
    ("vm.stat_interval", "/proc/sys/vm/stat_interval"),
    (
        "kernel.watchdog_cpumask",
        "/proc/sys/kernel/watchdog_cpumask",
    ),
];

pub(crate) const WQ_DIR: &str = "/sys/devices/virtual/workqueue";
pub(crate) const IRQ_DEFAULT: &str = "/proc/irq/default_smp_affinity";

/// What isolate may change, as it was at one moment.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// Every IRQ of `/proc/irq` with its `smp_affinity_list`.
    pub irqs: Vec<IrqState>,
    /// Control files (default IRQ mask, workqueue masks, sysctls, cpuset flags),
    /// path and trimmed content.
    pub files: Vec<(String, String)>,
    /// The cpusets (cgroup paths).
    pub cpusets: Vec<String>,
    /// Every thread.
    pub tasks: Vec<TaskState>,
}

/// One IRQ's configured affinity.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IrqState {
    /// Its number.
    pub irq: u32,
    /// `smp_affinity_list`.
    pub affinity: Option<CpuSet>,
    /// `effective_affinity_list`: the CPUs it is delivered to (none on kernels without
    /// the file; empty while the IRQ is not active).
    #[serde(default)]
    pub effective: Option<CpuSet>,
}

/// An IRQ whose mask is as it was but whose effective CPU moved: a mask narrowed and
/// widened back leaves the IRQ where the narrow mask put it (the kernel does not move
/// an IRQ whose CPU the new mask still holds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EffectiveMove {
    /// The IRQ.
    pub irq: u32,
    /// Its `smp_affinity_list`, before and now.
    pub affinity: CpuSet,
    /// Its effective CPUs before.
    pub before: CpuSet,
    /// And now.
    pub now: CpuSet,
}

/// One thread's placement.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TaskState {
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// Start time (identity with the tid).
    pub start_ticks: u64,
    /// Name.
    pub comm: String,
    /// Kind.
    pub kind: TaskKind,
    /// Allowed CPUs.
    pub allowed: CpuSet,
    /// Cpuset cgroup.
    pub cpuset: Option<String>,
}

/// Something that is not as it was.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// What (`IRQ 41 smp_affinity_list`, `/proc/sys/vm/stat_interval`, `thread 812 (bash)`).
    pub what: String,
    /// Before isolate.
    pub before: String,
    /// Now.
    pub after: String,
}

/// The control files a snapshot keeps, those that exist.
pub(crate) fn watched_files(root: &Root, cgroups: &Cgroups) -> Result<Vec<String>> {
    let mut paths = vec![IRQ_DEFAULT.to_string(), format!("{WQ_DIR}/cpumask")];
    for name in root.list_dir(WQ_DIR)? {
        paths.push(format!("{WQ_DIR}/{name}/cpumask"));
    }
    paths.extend(SYSCTLS.iter().map(|(_, p)| p.to_string()));
    if let Some(online) = root.read_cpu_list_opt("/sys/devices/system/cpu/online")? {
        paths.extend(online.iter().map(crate::partition::plan::idle_latency_path));
    }
    if let Some(mount) = &cgroups.cpuset_mount {
        let prefix = if cgroups.cpuset_noprefix {
            ""
        } else {
            "cpuset."
        };
        paths.push(format!("{mount}/{prefix}sched_load_balance"));
        paths.push(format!("{mount}/cgroup.subtree_control"));
    }
    paths.retain(|p| root.path(p).is_file());
    Ok(paths)
}

impl Snapshot {
    /// Reads it.
    pub fn read(root: &Root) -> Result<Snapshot> {
        let cgroups = Cgroups::read(root)?;
        let mut irqs = Vec::new();
        for irq in root.list_numeric("/proc/irq")? {
            irqs.push(IrqState {
                irq,
                affinity: root.read_cpu_list_opt(format!("/proc/irq/{irq}/smp_affinity_list"))?,
                effective: root
                    .read_cpu_list_opt(format!("/proc/irq/{irq}/effective_affinity_list"))?,
            });
        }
        let mut files = Vec::new();
        for path in watched_files(root, &cgroups)? {
            if let Some(v) = root.read_line_opt(&path)? {
                files.push((path, v));
            }
        }
        let tasks = read_tasks(root, TaskQuery::all_threads())?
            .into_iter()
            // An exited thread waiting to be reaped keeps the CPUs it died with;
            // it is not a placement to compare (nor can revert move it).
            .filter(|t| t.state != 'Z' && t.state != 'X')
            .map(|t| TaskState {
                pid: t.pid,
                tid: t.tid,
                start_ticks: t.start_ticks,
                comm: t.comm,
                kind: t.kind,
                allowed: t.allowed,
                cpuset: t.cpuset,
            })
            .collect();
        Ok(Snapshot {
            irqs,
            files,
            cpusets: cgroups.cpusets.into_iter().map(|c| c.path).collect(),
            tasks,
        })
    }

    /// The IRQs among `touched` (those whose masks were written in between) whose
    /// mask in `now` is as in `self` (before) but whose effective CPUs moved, both
    /// active (a non-empty effective set each time). An IRQ nobody touched that moved
    /// was moved by the kernel (a CPU's vectors rebalanced, an IRQ shut down and
    /// started again), and is not a change to undo.
    pub fn effective_moves(&self, now: &Snapshot, touched: &BTreeSet<u32>) -> Vec<EffectiveMove> {
        let mut out = Vec::new();
        for b in self.irqs.iter().filter(|b| touched.contains(&b.irq)) {
            let Some(a) = now.irqs.iter().find(|a| a.irq == b.irq) else {
                continue;
            };
            if let (Some(mask), Some(was), Some(is)) = (&b.affinity, &b.effective, &a.effective) {
                if a.affinity.as_ref() == Some(mask)
                    && !was.is_empty()
                    && !is.is_empty()
                    && was != is
                {
                    out.push(EffectiveMove {
                        irq: b.irq,
                        affinity: mask.clone(),
                        before: was.clone(),
                        now: is.clone(),
                    });
                }
            }
        }
        out
    }

    /// What differs from `self` (before) in `now`. Threads that exited or started
    /// in between are not differences; neither are the CPUs of kernel threads the
    /// kernel places (per-CPU and workqueue workers), nor an IRQ's effective CPU.
    pub fn diff(&self, now: &Snapshot) -> Vec<Difference> {
        let mut out = Vec::new();
        let show = |s: Option<&CpuSet>| s.map_or("-".to_string(), |s| s.to_string());
        for b in &self.irqs {
            if let Some(a) = now.irqs.iter().find(|a| a.irq == b.irq) {
                if a.affinity != b.affinity {
                    out.push(Difference {
                        what: format!("IRQ {} smp_affinity_list", b.irq),
                        before: show(b.affinity.as_ref()),
                        after: show(a.affinity.as_ref()),
                    });
                }
            }
        }
        for (path, before) in &self.files {
            let after = now
                .files
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, v)| v.as_str());
            if !same_value(Some(before), after) {
                out.push(Difference {
                    what: path.clone(),
                    before: before.clone(),
                    after: after.unwrap_or("(gone)").to_string(),
                });
            }
        }
        for c in &now.cpusets {
            if !self.cpusets.contains(c) {
                out.push(Difference {
                    what: format!("cpuset {c}"),
                    before: "(none)".into(),
                    after: "exists".into(),
                });
            }
        }
        for c in &self.cpusets {
            if !now.cpusets.contains(c) {
                out.push(Difference {
                    what: format!("cpuset {c}"),
                    before: "exists".into(),
                    after: "(gone)".into(),
                });
            }
        }
        for b in self.tasks.iter().filter(|t| t.kind.is_movable()) {
            let Some(a) = now
                .tasks
                .iter()
                .find(|a| a.tid == b.tid && a.start_ticks == b.start_ticks)
            else {
                continue;
            };
            let who = format!("thread {} ({}) of pid {}", b.tid, b.comm, b.pid);
            if a.allowed != b.allowed {
                out.push(Difference {
                    what: format!("{who} CPUs"),
                    before: b.allowed.to_string(),
                    after: a.allowed.to_string(),
                });
            }
            if a.cpuset != b.cpuset {
                out.push(Difference {
                    what: format!("{who} cpuset"),
                    before: b.cpuset.clone().unwrap_or_default(),
                    after: a.cpuset.clone().unwrap_or_default(),
                });
            }
        }
        out
    }

    /// The CPUs of a thread when the snapshot was taken.
    pub fn task(&self, tid: u32, start_ticks: u64) -> Option<&TaskState> {
        self.tasks
            .iter()
            .find(|t| t.tid == tid && t.start_ticks == start_ticks)
    }
}

/// Two control file values are the same: equal text, or the same CPU mask written
/// with other padding (`3` and `00000003`).
fn same_value(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) if a == b => true,
        (Some(a), Some(b)) => match (CpuSet::parse_mask(a), CpuSet::parse_mask(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        },
        (None, None) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_padding_is_no_difference() {
        assert!(same_value(Some("3"), Some("00000003")));
        assert!(!same_value(Some("3"), Some("1")));
        assert!(!same_value(Some("10"), Some("1")));
        assert!(same_value(Some("cpu io"), Some("cpu io")));
        assert!(!same_value(Some("cpu io"), Some("cpu io memory")));
    }

    #[test]
    fn an_irq_left_on_another_cpu_under_its_old_mask_is_an_effective_move() {
        let l = |s: &str| Some(CpuSet::parse_list(s).unwrap());
        let irq = |irq, affinity: &str, effective: &str| IrqState {
            irq,
            affinity: l(affinity),
            effective: l(effective),
        };
        let before = Snapshot {
            irqs: vec![
                irq(38, "0-1", "1"),
                irq(39, "0-1", "0"),
                irq(40, "0-1", ""),
                irq(41, "0-1", "0"),
            ],
            ..Snapshot::default()
        };
        let now = Snapshot {
            irqs: vec![
                irq(38, "0-1", "0"),
                irq(39, "1", "1"),
                irq(40, "0-1", "1"),
                irq(41, "0-1", "1"),
            ],
            ..Snapshot::default()
        };
        // 38: the mask is back, the IRQ is not. 39: its mask differs (diff's business).
        // 40: was not active. 41: moved, but its mask was never written: the kernel's.
        let touched = BTreeSet::from([38, 39, 40]);
        assert_eq!(
            before.effective_moves(&now, &touched),
            [EffectiveMove {
                irq: 38,
                affinity: CpuSet::parse_list("0-1").unwrap(),
                before: CpuSet::parse_list("1").unwrap(),
                now: CpuSet::parse_list("0").unwrap(),
            }]
        );
        assert_eq!(
            before
                .effective_moves(&now, &BTreeSet::from([38, 41]))
                .iter()
                .map(|m| m.irq)
                .collect::<Vec<_>>(),
            [38, 41]
        );
        assert!(before
            .diff(&now)
            .iter()
            .all(|d| !d.what.starts_with("IRQ 38") && !d.what.starts_with("IRQ 41")));
    }
}
