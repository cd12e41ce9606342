//! Moving tasks: every thread of a process, one thread, or a new command.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::root::Root;
use crate::sched;
use crate::tasks::{self, Policy, Task, TaskKind, TaskQuery};
use crate::Status;

/// The result of pinning the threads of one process.
#[derive(Clone, Debug, Serialize)]
pub struct PinReport {
    /// The process.
    pub pid: u32,
    /// The CPUs asked for.
    pub cpus: CpuSet,
    /// One entry per thread touched, in tid order.
    pub threads: Vec<ThreadChange>,
}

/// What happened to one thread.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadChange {
    /// Thread id.
    pub tid: u32,
    /// Thread name.
    pub comm: String,
    /// Affinity before.
    pub old: Option<CpuSet>,
    /// Affinity after, read back; `None` when the thread exited or the write failed.
    pub new: Option<CpuSet>,
    /// Moved, exited while being moved, or failed.
    pub outcome: ThreadOutcome,
    /// Why it failed.
    pub error: Option<String>,
}

/// The verdict on one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadOutcome {
    /// Its affinity is now the requested set.
    Moved,
    /// It exited before it could be moved (not a failure).
    Exited,
    /// The kernel refused.
    Failed,
}

impl PinReport {
    /// How many threads were moved.
    pub fn moved(&self) -> usize {
        self.threads
            .iter()
            .filter(|t| t.outcome == ThreadOutcome::Moved)
            .count()
    }

    /// How many threads the kernel refused to move.
    pub fn failures(&self) -> usize {
        self.threads
            .iter()
            .filter(|t| t.outcome == ThreadOutcome::Failed)
            .count()
    }

    /// How `pin -p` ends: [`Status::Failed`] when the kernel refused a thread, or when
    /// no thread was moved (the process exited first), else [`Status::Ok`].
    pub fn status(&self) -> Status {
        Status::failed_if(self.failures() > 0 || self.moved() == 0)
    }
}

/// Sets the affinity of every thread of `pid` (or of `tid` only) to `cpus`.
///
/// Threads started while this runs are caught by listing the threads again until
/// no new one appears. Check `cpus` against the online CPUs before calling.
pub fn pin_process(root: &Root, pid: u32, tid: Option<u32>, cpus: &CpuSet) -> Result<PinReport> {
    let all = tasks::read_tasks(root, TaskQuery::threads_of(pid))?;
    if let Some(t) = tid {
        if !all.iter().any(|task| task.tid == t) {
            return Err(Error::Invalid(format!("process {pid} has no thread {t}")));
        }
    }
    let mut done: Vec<ThreadChange> = Vec::new();
    let mut pending = all;
    for _round in 0..16 {
        pending.retain(|t| tid.is_none_or(|only| t.tid == only));
        pending.retain(|t| !done.iter().any(|d| d.tid == t.tid));
        if pending.is_empty() {
            break;
        }
        for task in &pending {
            done.push(pin_thread(root, task, cpus));
        }
        // An error means the process exited: there is nothing new to catch.
        pending = tasks::read_tasks(root, TaskQuery::threads_of(pid)).unwrap_or_default();
    }
    done.sort_by_key(|t| t.tid);
    Ok(PinReport {
        pid,
        cpus: cpus.clone(),
        threads: done,
    })
}

/// Whether the thread listed as `task` is still that thread: same process,
/// same start time (a tid can be reused by another process after an exit).
fn same_thread(root: &Root, task: &Task) -> bool {
    tasks::read_start_ticks(root, task.pid, task.tid) == Some(task.start_ticks)
}

fn pin_thread(root: &Root, task: &Task, cpus: &CpuSet) -> ThreadChange {
    let (tid, kind) = (task.tid, task.kind);
    let mut change = ThreadChange {
        tid,
        comm: task.comm.clone(),
        old: None,
        new: None,
        outcome: ThreadOutcome::Failed,
        error: None,
    };
    if !same_thread(root, task) {
        change.outcome = ThreadOutcome::Exited;
        return change;
    }
    let gone = |e: &io::Error| e.raw_os_error() == Some(libc::ESRCH);
    match sched::get_affinity(tid) {
        Ok(old) => change.old = Some(old),
        Err(e) if gone(&e) => {
            change.outcome = ThreadOutcome::Exited;
            return change;
        }
        Err(e) => {
            change.error = Some(format!("sched_getaffinity: {e}"));
            return change;
        }
    }
    match sched::set_affinity(tid, cpus) {
        Ok(()) => {}
        Err(e) if gone(&e) => {
            change.outcome = ThreadOutcome::Exited;
            return change;
        }
        Err(e) => {
            change.error = Some(explain_setaffinity(&e, kind, cpus));
            return change;
        }
    }
    match sched::get_affinity(tid) {
        Ok(new) => {
            change.outcome = if &new == cpus {
                ThreadOutcome::Moved
            } else {
                change.error = Some(format!(
                    "the kernel set {new} instead (the thread's cpuset allows only part of {cpus})"
                ));
                ThreadOutcome::Failed
            };
            change.new = Some(new);
        }
        Err(e) if gone(&e) => change.outcome = ThreadOutcome::Exited,
        Err(e) => change.error = Some(format!("sched_getaffinity after the change: {e}")),
    }
    change
}

pub(crate) fn explain_setaffinity(e: &io::Error, kind: TaskKind, cpus: &CpuSet) -> String {
    match (e.raw_os_error(), kind) {
        (Some(libc::EINVAL), TaskKind::KthreadPerCpu) => {
            "EINVAL: a per-CPU kernel thread; the kernel fixes its CPU (PF_NO_SETAFFINITY)".into()
        }
        (Some(libc::EINVAL), TaskKind::UserManaged) => {
            "EINVAL: the kernel manages this thread's affinity (PF_NO_SETAFFINITY; an io_uring \
             worker follows its ring's owner)"
                .into()
        }
        (Some(libc::EINVAL), TaskKind::KthreadManaged) => {
            "EINVAL: the kernel manages this thread's affinity (PF_NO_SETAFFINITY; unbound \
             kworkers follow the workqueue cpumask)"
                .into()
        }
        (Some(libc::EINVAL), _) => {
            format!("EINVAL: none of CPUs {cpus} is allowed by the thread's cpuset cgroup")
        }
        (Some(libc::EPERM), _) => {
            "EPERM: not permitted (the thread belongs to another user; run as root or with \
             CAP_SYS_NICE)"
                .into()
        }
        _ => e.to_string(),
    }
}

/// How to schedule a command started by [`exec_pinned`].
#[derive(Clone, Copy, Debug)]
pub struct Sched {
    /// The policy.
    pub policy: Policy,
    /// Its priority: 1-99 for fifo and rr, 0 for the others.
    pub priority: u32,
}

impl Sched {
    /// The scheduling of a started command from `--policy` and `--priority`: none when
    /// neither is given; fifo when only a priority is; the policy's default priority
    /// ([`sched::COMMAND_PRIORITY`] for fifo and rr) when only a policy is.
    pub fn for_command(policy: Option<Policy>, priority: Option<u32>) -> Option<Sched> {
        if policy.is_none() && priority.is_none() {
            return None;
        }
        let policy = policy.unwrap_or(Policy::Fifo);
        let priority =
            priority.unwrap_or_else(|| sched::default_priority(policy, sched::COMMAND_PRIORITY));
        Some(Sched { policy, priority })
    }

    /// Checks the priority against the policy's range before anything starts.
    pub fn validate(&self) -> Result<()> {
        if matches!(
            self.policy,
            Policy::Deadline | Policy::Ext | Policy::Unknown
        ) {
            return Err(Error::Invalid(format!(
                "policy {:?} cannot be set here; use fifo, rr, other, batch or idle",
                self.policy
            )));
        }
        let (lo, hi) = sched::priority_range(self.policy);
        if self.priority < lo || self.priority > hi {
            return Err(Error::Invalid(format!(
                "priority {} is out of range for policy {}: {lo}-{hi}",
                self.priority,
                format!("{:?}", self.policy).to_lowercase()
            )));
        }
        Ok(())
    }
}

/// Replaces this process with `argv`, its affinity set to `cpus` and, if
/// given, its scheduling policy, as `taskset` and `chrt` do: the command never
/// runs elsewhere or otherwise, signals reach it directly, and its exit status
/// is the status. Returns only on failure; nothing has run then.
pub fn exec_pinned(argv: &[OsString], cpus: &CpuSet, sched: Option<Sched>) -> Error {
    let Some((program, args)) = argv.split_first() else {
        return Error::Invalid("no command to run".into());
    };
    if let Some(s) = &sched {
        if let Err(e) = s.validate() {
            return e;
        }
    }
    let what = |step: &str| format!("{step} for {}", program.to_string_lossy());
    if let Err(cause) = sched::set_affinity(0, cpus) {
        return Error::Sys {
            what: what(&format!("sched_setaffinity({cpus})")),
            cause,
        };
    }
    if let Some(s) = sched {
        if let Err(cause) = sched::set_scheduler(0, s.policy, s.priority) {
            return Error::Sys {
                what: what(&format!(
                    "sched_setscheduler({}, {})",
                    format!("{:?}", s.policy).to_lowercase(),
                    s.priority
                )),
                cause,
            };
        }
    }
    let cause = Command::new(program).args(args).exec();
    Error::Sys {
        what: format!("cannot run {}", program.to_string_lossy()),
        cause,
    }
}

/// How `pin -- CMD` and `run -- CMD` end when [`exec_pinned`] returned `err` and the
/// command never ran: a shell's status, 127 when the program is not found, 126 when it
/// cannot be run, else 1. (An [`Error::Invalid`] is a refused request instead.)
pub fn exec_status(err: &Error) -> Status {
    Status::Command(err.raw_os_error().map_or(1, |errno| {
        crate::child::spawn_status(&std::io::Error::from_raw_os_error(errno))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pin -p` fails when a thread was refused, or when none was moved.
    #[test]
    fn status_of_pin() {
        let thread = |tid: u32, outcome: ThreadOutcome| ThreadChange {
            tid,
            comm: "t".into(),
            old: None,
            new: None,
            outcome,
            error: None,
        };
        let report = |outcomes: &[ThreadOutcome]| PinReport {
            pid: 1,
            cpus: CpuSet::first_n(1),
            threads: (1..)
                .zip(outcomes)
                .map(|(tid, &o)| thread(tid, o))
                .collect(),
        };
        use ThreadOutcome::*;
        assert_eq!(report(&[Moved, Moved]).status(), Status::Ok);
        assert_eq!(report(&[Moved, Exited]).status(), Status::Ok);
        assert_eq!(report(&[Moved, Failed]).status(), Status::Failed);
        assert_eq!(report(&[Exited]).status(), Status::Failed, "none moved");
        assert_eq!(report(&[]).status(), Status::Failed, "none moved");
    }

    /// A command that never ran ends as a shell says: 127 not found, 126 not runnable.
    #[test]
    fn status_of_a_command_that_cannot_run() {
        let sys = |errno: i32| Error::Sys {
            what: "cannot run x".into(),
            cause: std::io::Error::from_raw_os_error(errno),
        };
        assert_eq!(exec_status(&sys(libc::ENOENT)), Status::Command(127));
        assert_eq!(exec_status(&sys(libc::EACCES)), Status::Command(126));
        assert_eq!(exec_status(&sys(libc::EPERM)), Status::Command(1));
        assert_eq!(exec_status(&Error::Invalid("x".into())), Status::Command(1));
    }
}
