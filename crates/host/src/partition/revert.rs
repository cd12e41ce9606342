//! Undoing a journal, newest step first, and comparing with the snapshot taken
//! before the first change.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::error::Result;
use crate::partition::journal::{Journal, Recorded};
use crate::partition::snapshot::{Difference, Snapshot};
use crate::partition::step::{Action, Outcome, Step, TaskMove, Undo};
use crate::partition::system::System;
use crate::partition::Method;
use crate::tasks::{read_tasks, TaskKind, TaskQuery};
use crate::Status;

/// The result of `revert`.
#[derive(Clone, Debug, Serialize)]
pub struct RevertReport {
    /// The journal undone.
    pub journal: String,
    /// The CPUs that were isolated.
    pub cpus: CpuSet,
    /// How.
    pub method: Method,
    /// The pid of the isolating process.
    pub isolated_by: u32,
    /// Whether that apply had finished (false: it was killed or cancelled halfway).
    pub apply_complete: bool,
    /// The journal is from another boot: its state is gone, nothing was undone.
    pub other_boot: bool,
    /// One entry per step undone, in the order undone.
    pub undone: Vec<UndoResult>,
    /// Threads started during the partition that inherited its CPUs, given back
    /// their parent's CPUs.
    pub released: Vec<UndoResult>,
    /// What is not as it was before isolate.
    pub differences: Vec<Difference>,
    /// Whether the journal was removed (kept when an undo failed, for another try).
    pub journal_removed: bool,
    /// Wall time, ns.
    pub elapsed_ns: u64,
}

/// What became of one undo.
#[derive(Clone, Debug, Serialize)]
pub struct UndoResult {
    /// The step (`None` for a thread released that no step moved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<usize>,
    /// What the step had done.
    pub what: String,
    /// What revert did.
    #[serde(flatten)]
    pub outcome: UndoOutcome,
}

/// What revert did with a step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum UndoOutcome {
    /// Put back as it was.
    Restored,
    /// Already as it was (undone by an earlier revert, or never changed).
    Unchanged,
    /// Nothing to undo: the thread exited, the step was refused or never made, or
    /// the file went with its directory.
    Skipped {
        /// Why.
        reason: String,
    },
    /// Could not be undone.
    Failed {
        /// What happened.
        error: String,
    },
}

impl RevertReport {
    /// Undos that failed.
    pub fn failures(&self) -> usize {
        self.undone
            .iter()
            .chain(&self.released)
            .filter(|u| matches!(u.outcome, UndoOutcome::Failed { .. }))
            .count()
    }

    /// How `revert` ends: [`Status::Failed`] when an undo failed or something is not as
    /// it was before isolate, else [`Status::Ok`]. (No journal, nothing to revert, is
    /// [`Status::Ok`] too: see [`revert_status`].)
    pub fn status(&self) -> Status {
        Status::failed_if(self.failures() > 0 || !self.differences.is_empty())
    }
}

/// How `revert` ends for what [`revert`] returned: its report's
/// [`RevertReport::status`], or [`Status::Ok`] when there was no journal to revert.
pub fn revert_status(report: Option<&RevertReport>) -> Status {
    report.map_or(Status::Ok, RevertReport::status)
}

/// Undoes the journal in `dir`; `None` when there is none. Safe to run again: every
/// undo checks the present state first.
pub fn revert(sys: &mut dyn System, dir: &Path) -> Result<Option<RevertReport>> {
    let start = Instant::now();
    let Some(rec) = Journal::read(dir)? else {
        return Ok(None);
    };
    let boot_id = sys
        .root()
        .read_line_opt("/proc/sys/kernel/random/boot_id")?
        .unwrap_or_default();
    let other_boot = !rec.header.boot_id.is_empty() && rec.header.boot_id != boot_id;
    let mut undone = Vec::new();
    let mut released = Vec::new();
    if !other_boot {
        for (step, outcome) in rec.steps.iter().rev() {
            undone.push(UndoResult {
                seq: Some(step.seq),
                what: step.action.describe(),
                outcome: undo(sys, step, outcome.as_ref()),
            });
        }
        released = release_inherited(sys, &rec);
    }
    let differences = if other_boot {
        Vec::new()
    } else {
        rec.header.snapshot.diff(&Snapshot::read(sys.root())?)
    };
    let mut report = RevertReport {
        journal: rec.path.display().to_string(),
        cpus: rec.header.cpus.clone(),
        method: rec.header.method,
        isolated_by: rec.header.pid,
        apply_complete: rec.complete,
        other_boot,
        undone,
        released,
        differences,
        journal_removed: false,
        elapsed_ns: 0,
    };
    if report.failures() == 0 {
        Journal::remove(dir)?;
        report.journal_removed = true;
    }
    report.elapsed_ns = start.elapsed().as_nanos() as u64;
    Ok(Some(report))
}

fn skipped(reason: &str) -> UndoOutcome {
    UndoOutcome::Skipped {
        reason: reason.to_string(),
    }
}

fn failed(error: impl ToString) -> UndoOutcome {
    UndoOutcome::Failed {
        error: error.to_string(),
    }
}

fn undo(sys: &mut dyn System, step: &Step, outcome: Option<&Outcome>) -> UndoOutcome {
    // A refused or failed write changed nothing; a task move may have half
    // happened (cpuset joined, affinity refused), so tasks are always checked.
    let unchanged = outcome.is_some_and(|o| !o.changed());
    match &step.action {
        Action::Write { .. } | Action::Mkdir { .. } | Action::StopIrqbalance(_) if unchanged => {
            skipped("never changed (the step was refused or failed)")
        }
        Action::Write {
            path, old, undo, ..
        } => {
            let value = match undo {
                Undo::WithDirectory => return skipped("goes with its directory"),
                Undo::Restore => old,
                Undo::Write(v) => v,
            };
            if *undo == Undo::Restore {
                match sys.root().read_line_opt(path) {
                    Ok(Some(now)) if now == *old => return UndoOutcome::Unchanged,
                    Ok(None) => return skipped("the file is gone"),
                    _ => {}
                }
            }
            match sys.write(path, value) {
                Ok(()) => UndoOutcome::Restored,
                Err(e) if e.is_not_found() => skipped("the file is gone"),
                Err(e) => failed(e),
            }
        }
        Action::Mkdir { path, evacuate_to } => remove_cgroup(sys, path, evacuate_to),
        Action::Task(t) => undo_task(sys, t),
        Action::StopIrqbalance(ib) => match sys.start_irqbalance(ib) {
            Ok(()) => UndoOutcome::Restored,
            Err(e) => failed(e),
        },
    }
}

/// Moves the tasks still in a cgroup the plan made to its parent, then removes it.
pub(crate) fn remove_cgroup(sys: &mut dyn System, path: &str, evacuate_to: &str) -> UndoOutcome {
    if !sys.root().exists(path) {
        return UndoOutcome::Unchanged;
    }
    let members = if evacuate_to.ends_with("cgroup.procs") {
        "cgroup.procs"
    } else {
        "tasks"
    };
    let mut last_error = None;
    // Threads may fork while being moved: a few rounds.
    for _ in 0..5 {
        let ids = sys
            .root()
            .read_opt(format!("{path}/{members}"))
            .ok()
            .flatten()
            .unwrap_or_default();
        for id in ids.split_whitespace() {
            // ESRCH: it exited meanwhile.
            let _ = sys.write(evacuate_to, id);
        }
        match sys.rmdir(path) {
            Ok(()) => return UndoOutcome::Restored,
            Err(e) if e.is_not_found() => return UndoOutcome::Unchanged,
            Err(e) => last_error = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    failed(format!(
        "{}; tasks left in it: {}",
        last_error.map(|e| e.to_string()).unwrap_or_default(),
        sys.root()
            .read_opt(format!("{path}/{members}"))
            .ok()
            .flatten()
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    ))
}

fn undo_task(sys: &mut dyn System, t: &TaskMove) -> UndoOutcome {
    if sys.start_ticks(t.pid, t.tid) != Some(t.start_ticks) {
        return skipped("the thread exited");
    }
    let mut changed = false;
    if let Some(c) = &t.cpuset {
        let in_target = sys
            .root()
            .read_opt(format!("/proc/{}/task/{}/cgroup", t.pid, t.tid))
            .ok()
            .flatten()
            .and_then(|text| crate::tasks::cpuset_of(&text))
            .is_none_or(|cg| cg != c.from);
        if in_target {
            match sys.write(&c.from_tasks, &t.tid.to_string()) {
                Ok(()) => changed = true,
                Err(e) if e.is_not_found() => return skipped("the thread exited"),
                Err(e) => return failed(format!("back to cpuset {}: {e}", c.from)),
            }
        }
    }
    match sys.get_affinity(t.tid) {
        Ok(now) if now == t.old_allowed => {}
        Ok(_) => match sys.set_affinity(t.tid, &t.old_allowed) {
            Ok(()) => changed = true,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return skipped("the thread exited"),
            Err(e) => return failed(format!("sched_setaffinity({}): {e}", t.old_allowed)),
        },
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return skipped("the thread exited"),
        Err(e) => return failed(format!("sched_getaffinity: {e}")),
    }
    if changed {
        UndoOutcome::Restored
    } else {
        UndoOutcome::Unchanged
    }
}

/// Threads started during the partition by a moved process (a shell's new
/// command) inherited the housekeeping CPUs; they get their ancestor's old CPUs
/// back. Threads that chose other CPUs themselves are left alone.
fn release_inherited(sys: &mut dyn System, rec: &Recorded) -> Vec<UndoResult> {
    let Ok(tasks) = read_tasks(sys.root(), TaskQuery::all_threads()) else {
        return Vec::new();
    };
    let moved: HashMap<(u32, u64), &TaskMove> = rec
        .steps
        .iter()
        .filter_map(|(s, _)| match &s.action {
            Action::Task(t) if t.pid == t.tid => Some(((t.pid, t.start_ticks), t)),
            _ => None,
        })
        .collect();
    let processes: HashMap<u32, (u32, u64)> = tasks
        .iter()
        .filter(|t| t.tid == t.pid)
        .map(|t| (t.pid, (t.ppid, t.start_ticks)))
        .collect();
    let ancestor_move = |pid: u32| -> Option<&TaskMove> {
        let mut p = pid;
        for _ in 0..64 {
            let &(ppid, start) = processes.get(&p)?;
            if let Some(m) = moved.get(&(p, start)) {
                return Some(m);
            }
            if ppid <= 1 {
                return None;
            }
            p = ppid;
        }
        None
    };
    let mut out = Vec::new();
    for t in &tasks {
        if t.start_ticks < rec.header.start_ticks
            || !matches!(t.kind, TaskKind::User | TaskKind::KthreadMovable)
            || t.allowed != rec.header.housekeeping
        {
            continue;
        }
        let Some(m) = ancestor_move(t.pid) else {
            continue;
        };
        if m.old_allowed == t.allowed {
            continue;
        }
        let outcome = match sys.set_affinity(t.tid, &m.old_allowed) {
            Ok(()) => UndoOutcome::Restored,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => skipped("the thread exited"),
            Err(e) => failed(format!("sched_setaffinity({}): {e}", m.old_allowed)),
        };
        out.push(UndoResult {
            seq: None,
            what: format!(
                "{} (pid {} tid {}), started during the partition: {} -> {}",
                t.comm, t.pid, t.tid, t.allowed, m.old_allowed
            ),
            outcome,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `revert` fails when an undo failed or something differs from before isolate; no
    /// journal is nothing to do.
    #[test]
    fn status_of_revert() {
        let undo = |outcome: UndoOutcome| UndoResult {
            seq: Some(0),
            what: "write".into(),
            outcome,
        };
        let clean = RevertReport {
            journal: "j".into(),
            cpus: CpuSet::first_n(1),
            method: Method::Cgroup1,
            isolated_by: 1,
            apply_complete: true,
            other_boot: false,
            undone: vec![
                undo(UndoOutcome::Restored),
                undo(UndoOutcome::Unchanged),
                undo(UndoOutcome::Skipped {
                    reason: "gone".into(),
                }),
            ],
            released: vec![],
            differences: vec![],
            journal_removed: true,
            elapsed_ns: 1,
        };
        assert_eq!(clean.status(), Status::Ok);
        assert_eq!(revert_status(Some(&clean)), Status::Ok);
        assert_eq!(revert_status(None), Status::Ok);
        let mut failed = clean.clone();
        failed.released.push(undo(UndoOutcome::Failed {
            error: "EBUSY".into(),
        }));
        assert_eq!(failed.status(), Status::Failed);
        assert_eq!(revert_status(Some(&failed)), Status::Failed);
        let mut differs = clean.clone();
        differs.differences.push(Difference {
            what: "IRQ 41 smp_affinity_list".into(),
            before: "0-1".into(),
            after: "0".into(),
        });
        assert_eq!(differs.status(), Status::Failed);
    }
}
