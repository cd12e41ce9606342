//! Derived intervals: what the state machine hands to the analyses.
//!
//! Every time is in nanoseconds on the trace clock. Each interval is emitted once, when it
//! ends (a run slice at its switch-out, a wake-up at the switch-in that ends it), so a
//! consumer sees them in the order their ends happened.

use jitterlab_trace::{Comm, TaskState, Text};
use serde::Serialize;

/// One incarnation of a task: an index into [`crate::Machine::tasks`]. A tid that exits and
/// is reused by a later fork gets a new `TaskId`.
pub type TaskId = u32;

/// How a run slice began.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SliceStart {
    /// A sched_switch put the task on the CPU.
    Switch,
    /// The task was current at the first event of its CPU (already running when the
    /// trace, or the CPU's data after lost events, starts).
    TraceStart,
    /// No switch put it there: an event showed it current (its common_pid), and it is taken
    /// as switched in at that event (an [`AnomalyKind::ImplicitSwitchIn`]).
    Inferred,
}

/// How a run slice ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SliceEnd {
    /// Switched out while runnable (`R`, `R+`): preempted or yielded.
    Preempted,
    /// Switched out to sleep, with the state it slept in (`S`, `D`, ...).
    Slept(#[serde(serialize_with = "state_letters")] TaskState),
    /// Switched out dead (after sched_process_exit, or with state `X`/`Z`).
    Exited,
    /// Still current when the trace ended.
    TraceEnd,
    /// Another task was seen current on the CPU without a switch: this one left at an
    /// unknown moment before (the missing switch-out).
    Displaced,
    /// The CPU lost events here; its state was reset.
    Lost,
}

fn state_letters<S: serde::Serializer>(st: &TaskState, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(st)
}

/// A task's time on a CPU, from switch-in to switch-out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSlice {
    /// The CPU.
    pub cpu: u32,
    /// The task incarnation; `None` for the idle task (tid 0).
    pub task: Option<TaskId>,
    /// Its tid (0 = idle).
    pub tid: i32,
    /// Its name at the switch-out.
    pub comm: Comm,
    /// Its kernel priority, when an event gave it: the highest (numerically lowest) of
    /// its switch-in's and its switch-out's, the one it could preempt others with (a
    /// thread that dropped its real-time priority before it gave up the CPU ran above
    /// them).
    pub prio: Option<i32>,
    /// Switch-in, ns.
    pub start: u64,
    /// Switch-out, ns.
    pub end: u64,
    /// How it began.
    pub start_kind: SliceStart,
    /// How it ended.
    pub end_kind: SliceEnd,
    /// The last event its CPU logged while it ran, ns: its end, but for a
    /// [`SliceEnd::Displaced`] slice, whose switch-out the trace lost somewhere between
    /// this and its end.
    pub last_seen: u64,
}

impl RunSlice {
    /// `end - start`.
    pub fn duration(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
    /// True for the idle task.
    pub fn is_idle(&self) -> bool {
        self.tid == 0
    }
}

/// The context a wake-up was requested from (the CPU that logged sched_waking).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Waker {
    /// A task (process context); tid 0 = the idle task.
    Task {
        /// The waker's tid.
        tid: i32,
    },
    /// A hard interrupt handler: IRQ `irq`, or `None` when the CPU was in hardirq context
    /// without an irq_handler_entry (the local timer, IPIs).
    Hardirq {
        /// The IRQ whose handler was running.
        irq: Option<u32>,
    },
    /// A softirq, and the IRQ whose handler raised it on that CPU (when one did).
    Softirq {
        /// The vector, when its softirq_entry was seen.
        vec: Option<u32>,
        /// The IRQ that raised the vector on that CPU.
        raised_by: Option<u32>,
    },
}

/// A wake-up and its latency: the first sched_waking (or sched_wakeup / sched_wakeup_new
/// when no sched_waking came first) of a task that is not on a CPU, to its next switch-in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wake {
    /// The woken task.
    pub task: TaskId,
    /// Its tid.
    pub tid: i32,
    /// Its name.
    pub comm: Comm,
    /// Its priority at the waking.
    pub prio: i32,
    /// The sched_waking, ns.
    pub waking_ts: u64,
    /// Who woke it.
    pub waker: Waker,
    /// The CPU the waker ran on.
    pub waker_cpu: u32,
    /// A hrtimer callback was running on the waker's CPU (e.g. `hrtimer_wakeup`).
    pub by_hrtimer: bool,
    /// The sched_wakeup (on a run queue), ns, when seen.
    pub wakeup_ts: Option<u64>,
    /// The switch-in, ns.
    pub switch_in_ts: u64,
    /// The CPU it was switched in on.
    pub cpu: u32,
    /// True when the switch-in was inferred from common_pid (no sched_switch): the real
    /// switch-in lies in `(inferred_after, switch_in_ts]`, so the latency is an upper bound.
    pub inferred: bool,
    /// For an inferred switch-in, the last event of that CPU before it.
    pub inferred_after: Option<u64>,
    /// What the CPU was doing before the recorded switch-in: `Some(true)` from the idle
    /// task (the wake-up paid the exit from idle), `Some(false)` from another task (it
    /// was preempted or yielded), `None` when the switch-in was not recorded.
    pub from_idle: Option<bool>,
    /// For a wake-up done in hardirq N or in a softirq N raised: N's irq_handler_exit, ns.
    pub irq_exit_ts: Option<u64>,
    /// For a wake-up done in a softirq: the softirq_exit of that softirq run, ns, when it
    /// came before the switch-in.
    pub softirq_exit_ts: Option<u64>,
    /// A new task's first wake-up (sched_wakeup_new).
    pub new_task: bool,
}

impl Wake {
    /// Wake-up latency: switch-in minus waking.
    pub fn latency(&self) -> u64 {
        self.switch_in_ts.saturating_sub(self.waking_ts)
    }

    /// The IRQ behind the wake-up: the hardirq it was done in, or the one that raised the
    /// softirq it was done in.
    pub fn irq(&self) -> Option<u32> {
        match self.waker {
            Waker::Hardirq { irq } => irq,
            Waker::Softirq { raised_by, .. } => raised_by,
            Waker::Task { .. } => None,
        }
    }

    /// IRQ -> task latency: from the IRQ's handler exit to the switch-in, when both known
    /// and in that order.
    pub fn chain_latency(&self) -> Option<u64> {
        let exit = self.irq_exit_ts?;
        self.switch_in_ts.checked_sub(exit)
    }

    /// Where the wake-up's chain starts: the IRQ behind it ([`Wake::irq`]), or else the
    /// softirq vector it was done in (a softirq that no traced IRQ handler raised: raised
    /// by a task, e.g. NET_RX on veth or loopback, or by an untraced hardirq such as the
    /// local timer, and run on irq exit, on `local_bh_enable` or in ksoftirqd).
    pub fn chain_source(&self) -> Option<ChainSource> {
        if let Some(irq) = self.irq() {
            return Some(ChainSource::Irq(irq));
        }
        match self.waker {
            Waker::Softirq { vec: Some(v), .. } => Some(ChainSource::Softirq(v)),
            _ => None,
        }
    }

    /// Softirq -> task latency: from the softirq_exit of the run that did the wake-up to
    /// the switch-in, when both known and in that order.
    pub fn softirq_chain_latency(&self) -> Option<u64> {
        let exit = self.softirq_exit_ts?;
        self.switch_in_ts.checked_sub(exit)
    }
}

/// The start of a chain to a woken task (see [`Wake::chain_source`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChainSource {
    /// A hard IRQ: the wake-up was done in its handler or in a softirq it raised; the
    /// chain's latency runs from its irq_handler_exit ([`Wake::chain_latency`]).
    Irq(u32),
    /// A softirq vector no traced IRQ raised: the wake-up was done in a run of it; the
    /// chain's latency runs from that run's softirq_exit ([`Wake::softirq_chain_latency`]).
    Softirq(u32),
}

/// A hard interrupt handler's run, irq_handler_entry to irq_handler_exit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IrqSpan {
    /// The CPU.
    pub cpu: u32,
    /// The IRQ number.
    pub irq: u32,
    /// The handler's name from irq_handler_entry (`virtio1-req.0`).
    pub name: Text,
    /// Entry, ns.
    pub start: u64,
    /// Exit, ns.
    pub end: u64,
    /// Nesting depth: 0 for a handler that interrupted no other handler.
    pub depth: u32,
    /// The handler's return value (1 handled, 0 not).
    pub ret: i32,
    /// The tid current on the CPU (the interrupted task; 0 = idle), when known.
    pub interrupted: Option<i32>,
}

/// A softirq's run, softirq_entry to softirq_exit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SoftirqSpan {
    /// The CPU.
    pub cpu: u32,
    /// The vector.
    pub vec: u32,
    /// Entry, ns.
    pub start: u64,
    /// Exit, ns.
    pub end: u64,
    /// The softirq_raise that made it pending on this CPU, ns, when seen.
    pub raise_ts: Option<u64>,
    /// The IRQ whose handler raised it, when a handler did.
    pub raised_by: Option<u32>,
}

/// What kind of handler a [`HandlerSpan`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HandlerKind {
    /// An hrtimer callback, hrtimer_expire_entry to hrtimer_expire_exit (the tick
    /// among them).
    Hrtimer,
    /// An irq_vectors handler, `irq_vectors:X_entry` to `irq_vectors:X_exit`: the
    /// local timer, an IPI, irq_work (x86).
    Vector,
}

/// A handler's run that is neither a device IRQ's nor a softirq's: an hrtimer callback
/// or an irq_vectors handler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandlerSpan {
    /// The CPU.
    pub cpu: u32,
    /// Which kind.
    pub kind: HandlerKind,
    /// The callback as the source resolved it (`tick_nohz_handler+0x0/0x10`, or
    /// `hrtimer 0xffff...` when only its address is known), or the vector
    /// (`local_timer`, `call_function_single`).
    pub name: Text,
    /// Entry, ns.
    pub start: u64,
    /// Exit, ns.
    pub end: u64,
}

/// A sched_migrate_task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    /// When, ns.
    pub ts: u64,
    /// The task.
    pub task: TaskId,
    /// Its tid.
    pub tid: i32,
    /// From this CPU.
    pub from: u32,
    /// To this CPU.
    pub to: u32,
}

/// A write to trace_marker (ftrace:print).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    /// When, ns.
    pub ts: u64,
    /// The CPU.
    pub cpu: u32,
    /// The writer's tid.
    pub tid: i32,
    /// The text.
    pub text: Text,
}

/// A stretch with no event at all on a CPU, longer than the machine's gap threshold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    /// The CPU.
    pub cpu: u32,
    /// The last event before, ns.
    pub start: u64,
    /// The first event after, ns.
    pub end: u64,
    /// The tid current during the gap (0 = idle), when known.
    pub tid: Option<i32>,
}

/// A stretch where a CPU's state is unknown: after lost events, until its next event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blind {
    /// The CPU.
    pub cpu: u32,
    /// From, ns.
    pub start: u64,
    /// To, ns.
    pub end: u64,
}

/// What the state machine had to correct or could not explain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnomalyKind {
    /// An event showed a task current (common_pid) that no sched_switch put there; it is
    /// taken as switched in at that event. (This kernel omits most idle -> task switches.)
    ImplicitSwitchIn,
    /// A sched_switch whose prev_pid differs from its own common_pid.
    SwitchPrevMismatch,
    /// A task became current on a CPU while still current on another (its switch-out
    /// there is missing); its slice there is closed.
    RunningElsewhere,
    /// An irq_handler_exit with no matching entry on its CPU.
    UnmatchedIrqExit,
    /// An irq_handler_exit before any entry on its CPU: the trace starts inside an IRQ.
    TraceStartsInIrq,
    /// An IRQ entry whose exit never came (a later exit of an outer IRQ, or an event out
    /// of hardirq context, showed it over).
    IrqExitMissing,
    /// A softirq_exit with no matching entry on its CPU.
    UnmatchedSoftirqExit,
    /// A softirq_exit before any entry on its CPU: the trace starts inside a softirq.
    TraceStartsInSoftirq,
    /// A softirq entry whose exit never came.
    SoftirqExitMissing,
    /// The kernel lost events on a CPU (ring-buffer overrun); its state was reset.
    LostEvents,
    /// Pending wake-ups towards a CPU dropped because that CPU lost events (their switch-in
    /// may be among the lost).
    WakeDroppedOnLost,
    /// An event earlier than the one before it; taken at the earlier one's time.
    TimeBackwards,
    /// A tid seen again after its task's last switch-out (`Z`/`X`; not merely after its
    /// sched_process_exit, which the task outlives), without a fork: taken as a new task.
    PidReuseWithoutFork,
    /// A fork of a tid whose task was seen running and never seen exiting: taken as a new
    /// task.
    ForkOfLiveTid,
    /// A function_graph return with no matching entry on its CPU.
    UnmatchedFuncReturn,
}

impl AnomalyKind {
    /// Every kind, in report order.
    pub const ALL: [AnomalyKind; 15] = [
        AnomalyKind::ImplicitSwitchIn,
        AnomalyKind::SwitchPrevMismatch,
        AnomalyKind::RunningElsewhere,
        AnomalyKind::UnmatchedIrqExit,
        AnomalyKind::TraceStartsInIrq,
        AnomalyKind::IrqExitMissing,
        AnomalyKind::UnmatchedSoftirqExit,
        AnomalyKind::TraceStartsInSoftirq,
        AnomalyKind::SoftirqExitMissing,
        AnomalyKind::LostEvents,
        AnomalyKind::WakeDroppedOnLost,
        AnomalyKind::TimeBackwards,
        AnomalyKind::PidReuseWithoutFork,
        AnomalyKind::ForkOfLiveTid,
        AnomalyKind::UnmatchedFuncReturn,
    ];

    /// The snake_case name used in the JSON and the text report.
    pub fn name(self) -> &'static str {
        match self {
            AnomalyKind::ImplicitSwitchIn => "implicit_switch_in",
            AnomalyKind::SwitchPrevMismatch => "switch_prev_mismatch",
            AnomalyKind::RunningElsewhere => "running_elsewhere",
            AnomalyKind::UnmatchedIrqExit => "unmatched_irq_exit",
            AnomalyKind::TraceStartsInIrq => "trace_starts_in_irq",
            AnomalyKind::IrqExitMissing => "irq_exit_missing",
            AnomalyKind::UnmatchedSoftirqExit => "unmatched_softirq_exit",
            AnomalyKind::TraceStartsInSoftirq => "trace_starts_in_softirq",
            AnomalyKind::SoftirqExitMissing => "softirq_exit_missing",
            AnomalyKind::LostEvents => "lost_events",
            AnomalyKind::WakeDroppedOnLost => "wake_dropped_on_lost",
            AnomalyKind::TimeBackwards => "time_backwards",
            AnomalyKind::PidReuseWithoutFork => "pid_reuse_without_fork",
            AnomalyKind::ForkOfLiveTid => "fork_of_live_tid",
            AnomalyKind::UnmatchedFuncReturn => "unmatched_func_return",
        }
    }
}

/// One correction or unexplained event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Anomaly {
    /// When, ns.
    pub ts: u64,
    /// The CPU.
    pub cpu: u32,
    /// What.
    pub kind: AnomalyKind,
    /// The task concerned, when one is.
    pub tid: Option<i32>,
    /// How many (lost events: the count, when known; otherwise 1).
    pub count: u64,
}

/// A completed function_graph call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncCall {
    /// The CPU.
    pub cpu: u32,
    /// The tid that made it, when known.
    pub tid: Option<i32>,
    /// The function.
    pub func: Text,
    /// The caller, when it was traced too.
    pub parent: Option<Text>,
    /// Call depth (0 = outermost traced call).
    pub depth: u32,
    /// Entry, ns.
    pub start: u64,
    /// Inclusive duration, ns.
    pub duration: u64,
    /// Exclusive (self) duration: inclusive minus the traced callees' inclusive time.
    pub self_ns: u64,
    /// The call path, outermost first, including this function.
    pub path: Vec<Text>,
}
