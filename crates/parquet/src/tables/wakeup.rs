//! `wakeup`: a wake-up and its latency, sched_waking to switch-in.

use jitterlab_analyze::{Wake, Waker};

use crate::batch::{batch, Opt, Req, Str};
use crate::table::{i32_of, i64_of, opt, req, Table, TableDef, Ty};
use crate::Error;

/// The table.
pub const DEF: TableDef = TableDef {
    name: "wakeup",
    doc: "a wake-up: the first sched_waking (or sched_wakeup[_new]) of a task not on a CPU, to its next switch-in (what `analyze` calls a wake-up; Perfetto has no table of its own for it)",
    cols: &[
        req("ts_ns", Ty::I64, "the switch-in that ended it, ns on the trace clock"),
        req("waking_ts_ns", Ty::I64, "the sched_waking, ns"),
        opt("wakeup_ts_ns", Ty::I64, "the sched_wakeup (on a run queue), ns, when seen"),
        req("latency_ns", Ty::I64, "the wake-up latency, `ts_ns - waking_ts_ns`"),
        req("cpu", Ty::I32, "the CPU it was switched in on"),
        req("utid", Ty::I64, "the woken task incarnation (joins `thread.utid`)"),
        req("tid", Ty::I32, "its thread id"),
        opt("tgid", Ty::I32, "its process id, when known"),
        req("comm", Ty::Str, "its name"),
        req("prio", Ty::I32, "its kernel priority at the waking (0-139; 120 is nice 0; lower runs first)"),
        req("waker_kind", Ty::Kind, "who woke it: `task`, `hardirq` or `softirq`"),
        opt("waker_tid", Ty::I32, "the waking task's tid (0: idle), for `task`"),
        opt("waker_irq", Ty::I32, "the IRQ whose handler did it (`hardirq`), or raised the softirq that did (`softirq`); null for the local timer and IPIs"),
        opt("waker_softirq_vec", Ty::I32, "the softirq vector that did it, for `softirq`"),
        req("waker_cpu", Ty::I32, "the CPU the waker ran on"),
        req("by_hrtimer", Ty::Bool, "an hrtimer callback was running on the waker's CPU"),
        req("inferred", Ty::Bool, "the switch-in was inferred from common_pid: `latency_ns` is an upper bound"),
        opt("inferred_after_ts_ns", Ty::I64, "for an inferred switch-in, that CPU's last event before it, ns"),
        opt("irq_exit_ts_ns", Ty::I64, "for a wake-up by an IRQ (in its handler or in a softirq it raised): the handler's exit, ns"),
        opt("softirq_exit_ts_ns", Ty::I64, "for a wake-up in a softirq: the exit of that softirq run, ns"),
        req("new_task", Ty::Bool, "a new task's first wake-up (sched_wakeup_new)"),
    ],
};

batch! {
    /// The columns of [`DEF`], typed: a trace fills this table by the million.
    Batch {
        ts_ns: Req<i64>,
        waking_ts_ns: Req<i64>,
        wakeup_ts_ns: Opt<i64>,
        latency_ns: Req<i64>,
        cpu: Req<i32>,
        utid: Req<i64>,
        tid: Req<i32>,
        tgid: Opt<i32>,
        comm: Str,
        prio: Req<i32>,
        waker_kind: Str,
        waker_tid: Opt<i32>,
        waker_irq: Opt<i32>,
        waker_softirq_vec: Opt<i32>,
        waker_cpu: Req<i32>,
        by_hrtimer: Req<bool>,
        inferred: Req<bool>,
        inferred_after_ts_ns: Opt<i64>,
        irq_exit_ts_ns: Opt<i64>,
        softirq_exit_ts_ns: Opt<i64>,
        new_task: Req<bool>,
    }
}

/// The values of `waker_kind`.
static WAKERS: [&str; 3] = ["task", "hardirq", "softirq"];

pub(crate) fn push(t: &mut Table<Batch>, w: &Wake, tgid: Option<i32>) -> Result<(), Error> {
    let (kind, wtid, wirq, wvec) = match w.waker {
        Waker::Task { tid } => (0, Some(tid), None, None),
        Waker::Hardirq { irq } => (1, None, irq, None),
        Waker::Softirq { vec, raised_by } => (2, None, raised_by, vec),
    };
    let at = t.slot();
    let b = &mut t.batch;
    b.ts_ns.put(at, i64_of(w.switch_in_ts));
    b.waking_ts_ns.put(at, i64_of(w.waking_ts));
    b.wakeup_ts_ns.put(at, w.wakeup_ts.map(i64_of));
    b.latency_ns.put(at, i64_of(w.latency()));
    b.cpu.put(at, i32_of(w.cpu));
    b.utid.put(at, i64::from(w.task));
    b.tid.put(at, w.tid);
    b.tgid.put(at, tgid);
    b.comm.comm(at, w.comm);
    b.prio.put(at, w.prio);
    b.waker_kind.kind(at, &WAKERS, kind);
    b.waker_tid.put(at, wtid);
    b.waker_irq.put(at, wirq.map(i32_of));
    b.waker_softirq_vec.put(at, wvec.map(i32_of));
    b.waker_cpu.put(at, i32_of(w.waker_cpu));
    b.by_hrtimer.put(at, w.by_hrtimer);
    b.inferred.put(at, w.inferred);
    b.inferred_after_ts_ns.put(at, w.inferred_after.map(i64_of));
    b.irq_exit_ts_ns.put(at, w.irq_exit_ts.map(i64_of));
    b.softirq_exit_ts_ns.put(at, w.softirq_exit_ts.map(i64_of));
    b.new_task.put(at, w.new_task);
    t.end_row()
}
