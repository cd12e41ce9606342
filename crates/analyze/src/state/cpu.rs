//! Per-CPU state: the current task, the IRQ stack, the softirq in progress, the pending
//! softirq vectors and who raised them, the function_graph call stack.

use jitterlab_trace::Text;

use crate::model::{HandlerKind, SliceStart, TaskId};

/// Softirq vectors tracked (the kernel has 10: HI ... RCU).
pub(crate) const VECS: usize = 16;

/// The task current on a CPU.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Current {
    pub tid: i32,
    pub task: Option<TaskId>,
    pub since: u64,
    pub start_kind: SliceStart,
    pub prio: Option<i32>,
}

/// What a CPU is running.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cur {
    /// No event of this CPU yet.
    Untraced,
    /// State lost (lost events) since this time; the next event tells.
    Unknown { since: u64 },
    /// The current task was seen current on another CPU at this time: it left this one
    /// by a switch that is missing. If the idle task is seen next, it is taken as current
    /// from then (the missing switch went to idle); any other task makes it unknown.
    Vacated { since: u64 },
    /// This task.
    Task(Current),
}

/// A hard IRQ handler in progress.
#[derive(Clone, Debug)]
pub(crate) struct IrqFrame {
    pub irq: u32,
    pub name: Text,
    pub start: u64,
    /// Softirq vectors this handler raised (bit per vector).
    pub raised: u16,
}

/// A softirq in progress.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SoftFrame {
    pub vec: u32,
    pub start: u64,
    pub raise_ts: Option<u64>,
    pub raised_by: Option<u32>,
    /// The raising IRQ's handler exit.
    pub irq_exit_ts: Option<u64>,
}

/// A pending softirq vector: who raised it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Raise {
    pub ts: u64,
    pub irq: Option<u32>,
    pub irq_exit_ts: Option<u64>,
}

/// An hrtimer callback or an irq_vectors handler in progress.
#[derive(Clone, Debug)]
pub(crate) struct HandlerFrame {
    pub kind: HandlerKind,
    pub name: Text,
    pub start: u64,
}

/// A function_graph call in progress.
#[derive(Clone, Debug)]
pub(crate) struct FuncFrame {
    pub func: Text,
    pub depth: u32,
    pub start: u64,
    /// Inclusive time of the traced callees that returned.
    pub child_ns: u64,
}

/// One CPU.
#[derive(Clone, Debug)]
pub(crate) struct CpuState {
    pub cur: Cur,
    pub first_ts: Option<u64>,
    pub last_ts: u64,
    pub events: u64,
    pub irqs: Vec<IrqFrame>,
    /// Tasks woken in hardirq context: (IRQ stack depth at the waking, task).
    pub woken: Vec<(usize, TaskId)>,
    /// An irq_handler_entry was seen since the start or the last reset.
    pub irq_seen: bool,
    pub softirq: Option<SoftFrame>,
    /// Tasks woken in the softirq run in progress (each once).
    pub soft_woken: Vec<TaskId>,
    pub softirq_seen: bool,
    pub raised: [Option<Raise>; VECS],
    /// Some event had a non-zero flags byte: flags are recorded (not trace-cmd report text).
    pub flags_valid: bool,
    /// hrtimer callbacks and irq_vectors handlers in progress, innermost last.
    pub handlers: Vec<HandlerFrame>,
    pub funcs: Vec<FuncFrame>,
}

impl Default for CpuState {
    fn default() -> Self {
        CpuState {
            cur: Cur::Untraced,
            first_ts: None,
            last_ts: 0,
            events: 0,
            irqs: Vec::new(),
            woken: Vec::new(),
            irq_seen: false,
            softirq: None,
            soft_woken: Vec::new(),
            softirq_seen: false,
            raised: [None; VECS],
            flags_valid: false,
            handlers: Vec::new(),
            funcs: Vec::new(),
        }
    }
}

impl CpuState {
    /// The current tid, when known.
    pub fn tid(&self) -> Option<i32> {
        match self.cur {
            Cur::Task(c) => Some(c.tid),
            _ => None,
        }
    }

    /// In an hrtimer callback.
    pub fn in_hrtimer(&self) -> bool {
        self.handlers.iter().any(|h| h.kind == HandlerKind::Hrtimer)
    }

    /// Forgets the IRQ, softirq, timer and call nesting (after lost events).
    pub fn reset_nesting(&mut self) {
        self.irqs.clear();
        self.woken.clear();
        self.irq_seen = false;
        self.softirq = None;
        self.soft_woken.clear();
        self.softirq_seen = false;
        self.raised = [None; VECS];
        self.handlers.clear();
        self.funcs.clear();
    }
}
