//! `jitterlab show` and its sub-views: one file per view.

mod cgroups;
mod cpus;
mod irqs;
mod overview;
mod tasks;
mod workqueues;

use jitterlab_cpuset::CpuSet;
use jitterlab_host::cpus::IsolationReason;
use jitterlab_host::tasks::TaskKind;

pub(super) fn set(s: Option<&CpuSet>) -> String {
    match s {
        Some(s) if s.is_empty() => "(none)".to_string(),
        Some(s) => s.to_string(),
        None => "-".to_string(),
    }
}

pub(super) fn isolation(reasons: &[IsolationReason]) -> String {
    if reasons.is_empty() {
        return "-".to_string();
    }
    let names: Vec<&str> = reasons
        .iter()
        .map(|r| match r {
            IsolationReason::Isolcpus => "isolcpus",
            IsolationReason::SchedDomain => "no-sched-domain",
            IsolationReason::NohzFull => "nohz_full",
            IsolationReason::RcuNocbs => "rcu_nocbs",
            IsolationReason::CpusetPartition => "cpuset",
        })
        .collect();
    names.join(",")
}

pub(super) fn kind(k: TaskKind) -> &'static str {
    match k {
        TaskKind::User => "user",
        TaskKind::UserManaged => "user/managed",
        TaskKind::KthreadMovable => "kthread",
        TaskKind::KthreadPerCpu => "kthread/per-cpu",
        TaskKind::KthreadManaged => "kthread/managed",
    }
}
