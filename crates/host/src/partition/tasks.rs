//! Which threads a partition moves, which it leaves alone, and which cannot move.

use std::collections::HashMap;

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::partition::plan::{Excluded, Unmovable};
use crate::partition::step::{CpusetMove, TaskMove};
use crate::tasks::{Task, TaskKind};

/// An `--exclude`: a process by pid, or tasks by name.
#[derive(Clone, Debug)]
pub enum Exclude {
    /// This process, all its threads.
    Pid(u32),
    /// Threads whose name, or whose process's name, matches.
    Comm(glob::Pattern),
}

impl Exclude {
    /// A pid when all digits, else a glob over names.
    pub fn parse(s: &str) -> Result<Exclude> {
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            return s
                .parse()
                .map(Exclude::Pid)
                .map_err(|_| Error::Invalid(format!("--exclude {s}: pid out of range")));
        }
        glob::Pattern::new(s)
            .map(Exclude::Comm)
            .map_err(|e| Error::Invalid(format!("--exclude {s:?}: not a pid or a glob: {e}")))
    }

    fn text(&self) -> String {
        match self {
            Exclude::Pid(p) => p.to_string(),
            Exclude::Comm(g) => format!("'{}'", g.as_str()),
        }
    }
}

/// How threads are moved.
pub(crate) struct Rules<'a> {
    pub isolated: &'a CpuSet,
    pub housekeeping: &'a CpuSet,
    pub excludes: &'a [Exclude],
    /// Whether PID 1's threads move (by affinity only).
    pub move_init: bool,
    /// cgroup v1: user tasks of the root cpuset go to this set.
    pub cpuset: Option<CpusetMove>,
}

/// The threads sorted into moves, exclusions and the unmovable.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Sorted {
    pub moves: Vec<TaskMove>,
    pub excluded: Vec<Excluded>,
    pub unmovable: Vec<Unmovable>,
}

impl Rules<'_> {
    /// Why a thread is left alone, if it is.
    fn exclusion(&self, t: &Task, process_comm: &str) -> Option<String> {
        if t.pid == 1 && !self.move_init {
            return Some(
                "PID 1 is left alone unless --move-init (safety exclusion, as tuned's \
                 ps_blacklist)"
                    .into(),
            );
        }
        self.excludes
            .iter()
            .find(|e| match e {
                Exclude::Pid(p) => *p == t.pid,
                Exclude::Comm(g) => g.matches(&t.comm) || g.matches(process_comm),
            })
            .map(|e| format!("--exclude {}", e.text()))
    }

    /// The thread's CPUs after the move: its CPUs without the isolated ones, or
    /// all housekeeping CPUs when that leaves none (a thread pinned to CPU 0 of
    /// the housekeeping set stays there).
    pub fn new_allowed(&self, old: &CpuSet) -> CpuSet {
        let kept = old.difference(self.isolated);
        if kept.is_empty() {
            self.housekeeping.clone()
        } else {
            kept
        }
    }

    /// Sorts `tasks` (every thread).
    pub fn sort(&self, tasks: &[Task]) -> Sorted {
        let comms: HashMap<u32, &str> = tasks
            .iter()
            .filter(|t| t.tid == t.pid)
            .map(|t| (t.pid, t.comm.as_str()))
            .collect();
        let mut out = Sorted::default();
        for t in tasks {
            let process_comm = comms.get(&t.pid).copied().unwrap_or(&t.comm);
            if let Some(reason) = self.exclusion(t, process_comm) {
                match out.excluded.iter_mut().find(|e| e.pid == t.pid) {
                    Some(e) => e.threads += 1,
                    None => out.excluded.push(Excluded {
                        pid: t.pid,
                        comm: process_comm.to_string(),
                        threads: 1,
                        allowed: t.allowed.clone(),
                        reason,
                    }),
                }
                continue;
            }
            let on_isolated = t.allowed.intersects(self.isolated);
            match t.kind {
                TaskKind::User | TaskKind::KthreadMovable => {
                    let cpuset = self
                        .cpuset
                        .as_ref()
                        // PID 1 stays in its cgroup (moving init's cgroup
                        // breaks container tools); only its CPUs change.
                        .filter(|_| t.kind == TaskKind::User && t.pid != 1)
                        .filter(|m| t.cpuset.as_deref() == Some(m.from.as_str()))
                        .cloned();
                    if on_isolated || cpuset.is_some() {
                        out.moves.push(TaskMove {
                            pid: t.pid,
                            tid: t.tid,
                            start_ticks: t.start_ticks,
                            comm: t.comm.clone(),
                            kind: t.kind,
                            old_allowed: t.allowed.clone(),
                            new_allowed: self.new_allowed(&t.allowed),
                            cpuset,
                        });
                    }
                }
                kind if on_isolated => out.unmovable.push(Unmovable {
                    pid: t.pid,
                    tid: t.tid,
                    comm: t.comm.clone(),
                    kind,
                    allowed: t.allowed.clone(),
                    reason: unmovable_reason(kind).to_string(),
                }),
                _ => {}
            }
        }
        out
    }
}

fn unmovable_reason(kind: TaskKind) -> &'static str {
    match kind {
        TaskKind::KthreadPerCpu => {
            "per-CPU kernel thread (PF_NO_SETAFFINITY): runs when the kernel has work for this CPU"
        }
        TaskKind::KthreadManaged => {
            "kernel-managed (unbound kworker or rescuer): follows the workqueue cpumask"
        }
        TaskKind::UserManaged => {
            "kernel-managed user thread (PF_NO_SETAFFINITY, an io_uring worker): follows its owner"
        }
        TaskKind::User | TaskKind::KthreadMovable => "movable",
    }
}
