//! The task table: one entry per task incarnation, looked up by tid.

use jitterlab_trace::Comm;
use serde::Serialize;

use crate::hash::{FxMap, TidMap};
use crate::model::{AnomalyKind, TaskId, Waker};

/// What is known of one task incarnation at the end of the pass.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TaskInfo {
    /// The tid.
    pub tid: i32,
    /// The thread group (process) id, when the source knows it.
    pub tgid: Option<i32>,
    /// Its latest name (sched_switch, sched_waking, fork and exec fields; not the text's
    /// TASK-PID column, which may be stale).
    pub comm: Comm,
    /// Its latest kernel priority, when an event gave it.
    pub prio: Option<i32>,
    /// The tid that forked it, when the fork was traced.
    pub parent: Option<i32>,
    /// When it was first seen, ns.
    pub first_ts: u64,
    /// Its fork was traced.
    pub forked: bool,
    /// Its sched_process_exit was traced.
    pub exited: bool,
}

/// Where a task is, as far as the events tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Run {
    /// Not yet known.
    Unknown,
    /// Current on this CPU.
    Running(u32),
    /// Switched out runnable (preempted).
    Runnable,
    /// Switched out to sleep.
    Sleeping,
    /// Switched out for the last time (`Z`, `X`): its tid may be reused.
    Dead,
}

/// A wake-up requested and not yet ended by a switch-in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pending {
    pub waking_ts: u64,
    pub waker: Waker,
    pub waker_cpu: u32,
    pub by_hrtimer: bool,
    pub wakeup_ts: Option<u64>,
    pub target_cpu: u32,
    pub irq_exit_ts: Option<u64>,
    /// For a wake-up done in a softirq: that run's softirq_exit, once seen.
    pub softirq_exit_ts: Option<u64>,
    pub new_task: bool,
    pub prio: i32,
    /// The task was current on this CPU at the waking: either it was about to sleep and
    /// the waking only set it running again (then sched_wakeup comes on that CPU while it
    /// is still current, or it is switched out runnable), or its switch-out was missed.
    pub while_running: Option<u32>,
}

/// The per-task state the machine updates.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskRt {
    pub run: Run,
    pub pending: Option<Pending>,
    /// sched_process_exit seen. The task is still alive until its last switch-out (`Z` or
    /// `X`), which makes it [`Run::Dead`]; in between (preempted, asleep, migrated) its
    /// events are its own, not a reuse of its tid.
    pub exiting: bool,
}

/// Every task incarnation seen.
pub(crate) struct Tasks {
    pub infos: Vec<TaskInfo>,
    pub rt: Vec<TaskRt>,
    /// The latest incarnation of each tid: a lookup per sched event.
    by_tid: TidMap<TaskId>,
}

/// No incarnation of the tid yet, in the table of [`Tasks::by_tid`].
const UNSEEN: TaskId = TaskId::MAX;

impl Default for Tasks {
    fn default() -> Tasks {
        Tasks {
            infos: Vec::new(),
            rt: Vec::new(),
            by_tid: TidMap::new(UNSEEN),
        }
    }
}

impl Tasks {
    fn push(&mut self, tid: i32, ts: u64, comm: Comm, tgid: Option<i32>) -> TaskId {
        let id = self.infos.len() as TaskId;
        self.infos.push(TaskInfo {
            tid,
            tgid,
            comm,
            prio: None,
            parent: None,
            first_ts: ts,
            forked: false,
            exited: false,
        });
        self.rt.push(TaskRt {
            run: Run::Unknown,
            pending: None,
            exiting: false,
        });
        self.by_tid.insert(tid, id);
        id
    }

    /// The live incarnation of `tid`, named `comm` when given; `None` when there is none
    /// (unseen, or dead): the hot path of [`Tasks::lookup`], one hash probe.
    #[inline]
    pub fn live(&mut self, tid: i32, comm: Option<Comm>) -> Option<TaskId> {
        let id = self.by_tid.get(tid)?;
        let i = id as usize;
        if self.rt.get(i)?.run == Run::Dead {
            return None;
        }
        if let (Some(c), Some(info)) = (comm, self.infos.get_mut(i)) {
            info.comm = c;
        }
        Some(id)
    }

    /// The live incarnation of `tid` (created when unseen, or when the last one is dead:
    /// that is a reuse without a traced fork). `tid` must be positive. A new incarnation
    /// no event names takes its name from `saved` (the trace's saved cmdlines).
    pub fn lookup(
        &mut self,
        tid: i32,
        ts: u64,
        comm: Option<Comm>,
        saved: &FxMap<i32, Comm>,
        tgids: &FxMap<i32, i32>,
    ) -> (TaskId, Option<AnomalyKind>) {
        match self.by_tid.get(tid) {
            Some(id) if self.rt[id as usize].run != Run::Dead => {
                if let Some(c) = comm {
                    self.infos[id as usize].comm = c;
                }
                (id, None)
            }
            Some(id) => {
                let c = comm.unwrap_or(self.infos[id as usize].comm);
                (
                    self.push(tid, ts, c, tgids.get(&tid).copied()),
                    Some(AnomalyKind::PidReuseWithoutFork),
                )
            }
            None => (
                self.push(
                    tid,
                    ts,
                    comm.or_else(|| saved.get(&tid).copied())
                        .unwrap_or_default(),
                    tgids.get(&tid).copied(),
                ),
                None,
            ),
        }
    }

    /// A traced fork: always a new incarnation. A live task under that tid was never seen
    /// exiting (reported as [`AnomalyKind::ForkOfLiveTid`]) unless it was never seen running
    /// or its exit was seen (a self-reaping thread frees its tid before its last switch-out,
    /// which may then come after the fork, on another CPU).
    pub fn fork(
        &mut self,
        tid: i32,
        ts: u64,
        comm: Comm,
        parent: i32,
        tgids: &FxMap<i32, i32>,
    ) -> (TaskId, Option<AnomalyKind>) {
        let anomaly = match self.by_tid.get(tid) {
            Some(id) => {
                let rt = &self.rt[id as usize];
                (rt.run != Run::Dead && rt.run != Run::Unknown && !rt.exiting)
                    .then_some(AnomalyKind::ForkOfLiveTid)
            }
            None => None,
        };
        if let Some(old) = self.by_tid.get(tid) {
            self.rt[old as usize].run = Run::Dead;
        }
        let id = self.push(tid, ts, comm, tgids.get(&tid).copied());
        let info = &mut self.infos[id as usize];
        info.parent = Some(parent);
        info.forked = true;
        (id, anomaly)
    }

    pub fn info(&mut self, id: TaskId) -> &mut TaskInfo {
        &mut self.infos[id as usize]
    }

    pub fn rt(&mut self, id: TaskId) -> &mut TaskRt {
        &mut self.rt[id as usize]
    }

    /// Number of pending wake-ups, for the end of the pass.
    pub fn pending_count(&self) -> u64 {
        self.rt.iter().filter(|r| r.pending.is_some()).count() as u64
    }
}
