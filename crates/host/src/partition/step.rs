//! One change of a plan and what became of it.

use jitterlab_cpuset::CpuSet;
use serde::{Deserialize, Serialize};

use crate::tasks::TaskKind;

/// A change, numbered in plan order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Step {
    /// Its place in the plan (0-based); the journal refers to steps by it.
    pub seq: usize,
    /// What it does.
    #[serde(flatten)]
    pub action: Action,
}

/// What a step does.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Writes `new` to a file; revert does what `undo` says.
    Write {
        /// The host path (`/proc/irq/41/smp_affinity_list`).
        path: String,
        /// What it held before (empty for a file of a directory the plan creates).
        old: String,
        /// What is written.
        new: String,
        /// What the file is for.
        target: Target,
        /// How revert undoes it.
        undo: Undo,
        /// The value read back must start with this, or the step failed (a v2
        /// partition says `isolated invalid (...)` when the kernel refuses it).
        expect: Option<String>,
    },
    /// Creates a cgroup directory. Revert moves the tasks still in it to
    /// `evacuate_to` (a `tasks` or `cgroup.procs` file) and removes it.
    Mkdir {
        /// The host path of the directory.
        path: String,
        /// Where tasks left in it go on revert.
        evacuate_to: String,
    },
    /// Moves one thread.
    Task(TaskMove),
    /// Stops irqbalance, which would rewrite the IRQ masks; revert starts it again.
    StopIrqbalance(Irqbalance),
}

/// What a written file is for, to group and explain the writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    /// A cpuset or cgroup control file.
    Cpuset,
    /// `/proc/irq/default_smp_affinity`: where new IRQs go.
    IrqDefault,
    /// One IRQ's `smp_affinity_list`.
    Irq {
        /// Its number.
        irq: u32,
        /// Its device names.
        label: String,
    },
    /// The global unbound workqueue cpumask.
    WorkqueueMask,
    /// One workqueue's own cpumask.
    Workqueue {
        /// Its name.
        name: String,
    },
    /// A sysctl.
    Sysctl {
        /// Its dotted name (`kernel.timer_migration`).
        name: String,
    },
    /// A CPU's PM QoS resume latency limit (`power/pm_qos_resume_latency_us`):
    /// the idle states slower to leave are not used. The file's own language:
    /// `0` is no limit, `n/a` a limit of 0 us (poll, never halt).
    IdleLatency {
        /// The CPU.
        cpu: u32,
    },
}

/// How revert undoes a write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Undo {
    /// Write the old value back.
    Restore,
    /// Write this instead (`-cpuset` to `cgroup.subtree_control`, `member` to a partition).
    Write(String),
    /// Nothing: the file goes away with the directory the plan created.
    WithDirectory,
}

/// One thread's move to the housekeeping CPUs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TaskMove {
    /// Its process.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// Its start time in clock ticks after boot: with the tid, who it is. A
    /// thread with the same tid and another start time is someone else.
    pub start_ticks: u64,
    /// Its name.
    pub comm: String,
    /// User task or kernel thread.
    pub kind: TaskKind,
    /// Its CPUs before.
    pub old_allowed: CpuSet,
    /// Its CPUs after.
    pub new_allowed: CpuSet,
    /// The cpuset move (cgroup v1 user tasks of the root cpuset), or `None` when
    /// only `sched_setaffinity` moves it.
    pub cpuset: Option<CpusetMove>,
}

/// A thread's move from one v1 cpuset to another.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CpusetMove {
    /// The cpuset it was in (cgroup path, `/` for the root).
    pub from: String,
    /// The cpuset it goes to.
    pub to: String,
    /// The `tasks` file of `from`, for revert.
    pub from_tasks: String,
    /// The `tasks` file of `to`.
    pub to_tasks: String,
}

/// A running irqbalance, as revert needs it to start it again.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Irqbalance {
    /// Its pid.
    pub pid: u32,
    /// Its start time (clock ticks after boot).
    pub start_ticks: u64,
    /// Its command line, to start it again when no service manager runs it.
    pub argv: Vec<String>,
    /// The systemd unit it runs in (`irqbalance.service`), if any.
    pub unit: Option<String>,
}

/// What became of a step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Done as planned.
    Done,
    /// Done, but the kernel delivers an IRQ to an isolated CPU until it next
    /// fires (an edge IRQ's effective affinity changes then).
    Pending,
    /// The thread exited before it could be moved (not a failure).
    Gone,
    /// The kernel refused; `remedy` says what would do it (a boot option).
    Refused {
        /// What the kernel said.
        error: String,
        /// What would make the change possible.
        remedy: Option<String>,
    },
    /// Failed for another reason.
    Failed {
        /// What happened.
        error: String,
    },
}

impl Outcome {
    /// Whether the change was made (and revert must undo it).
    pub fn changed(&self) -> bool {
        matches!(self, Outcome::Done | Outcome::Pending)
    }
}

impl Action {
    /// A one-line description: `write /proc/irq/41/smp_affinity_list: 0-1 -> 0`.
    pub fn describe(&self) -> String {
        match self {
            Action::Write { path, old, new, .. } => {
                let old = if old.is_empty() { "(new)" } else { old };
                format!("write {path}: {old} -> {new}")
            }
            Action::Mkdir { path, .. } => format!("mkdir {path}"),
            Action::Task(t) => format!(
                "move {} (pid {} tid {}): {} -> {}",
                t.comm, t.pid, t.tid, t.old_allowed, t.new_allowed
            ),
            Action::StopIrqbalance(ib) => format!("stop irqbalance (pid {})", ib.pid),
        }
    }

    /// The IRQ whose mask this writes, if it writes one.
    pub fn irq(&self) -> Option<u32> {
        match self {
            Action::Write {
                target: Target::Irq { irq, .. },
                ..
            } => Some(*irq),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_write_to_an_irq_mask_names_an_irq() {
        let write = |target| Action::Write {
            path: "/proc/irq/41/smp_affinity_list".into(),
            old: "0-1".into(),
            new: "0".into(),
            target,
            undo: Undo::Restore,
            expect: None,
        };
        let irq = Target::Irq {
            irq: 41,
            label: "virtio0".into(),
        };
        assert_eq!(write(irq).irq(), Some(41));
        assert_eq!(write(Target::IrqDefault).irq(), None);
        let mkdir = Action::Mkdir {
            path: "/sys/fs/cgroup/cpuset/jitterlab".into(),
            evacuate_to: "/sys/fs/cgroup/cpuset/tasks".into(),
        };
        assert_eq!(mkdir.irq(), None);
    }
}
