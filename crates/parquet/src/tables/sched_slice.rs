//! `sched_slice`: a task's (or the idle task's) time on a CPU, switch-in to switch-out.

use jitterlab_analyze::{RunSlice, SliceEnd, SliceStart};
use jitterlab_trace::TaskState;

use crate::batch::{batch, Opt, OptStr, Req, Str};
use crate::table::{i32_of, i64_of, opt, req, Table, TableDef, Ty};
use crate::Error;

/// The table.
pub const DEF: TableDef = TableDef {
    name: "sched_slice",
    doc: "a task's (or the idle task's) time on a CPU, from switch-in to switch-out (Perfetto's `sched_slice`)",
    cols: &[
        req("ts_ns", Ty::I64, "switch-in, ns on the trace clock"),
        req("dur_ns", Ty::I64, "time on the CPU, ns"),
        req("cpu", Ty::I32, "the CPU"),
        opt("utid", Ty::I64, "the task incarnation (joins `thread.utid`); null for the idle task"),
        req("tid", Ty::I32, "its thread id (0: idle)"),
        opt("tgid", Ty::I32, "its process id, when the trace records thread groups"),
        req("comm", Ty::Str, "its name at the switch-out"),
        opt("prio", Ty::I32, "its kernel priority, when an event gave it"),
        req("start_kind", Ty::Kind, "how it began: `switch`, `trace_start`, `inferred` (no switch; an event showed it current)"),
        req("end_kind", Ty::Kind, "how it ended: `preempted`, `slept`, `exited`, `trace_end`, `displaced`, `lost`"),
        opt("end_state", Ty::Kind, "the state it was switched out in (`R`, `S`, `D`, ... as Perfetto's `end_state`); null for ends without a switch-out"),
    ],
};

batch! {
    /// The columns of [`DEF`], typed: a trace fills this table by the million.
    Batch {
        ts_ns: Req<i64>,
        dur_ns: Req<i64>,
        cpu: Req<i32>,
        utid: Opt<i64>,
        tid: Req<i32>,
        tgid: Opt<i32>,
        comm: Str,
        prio: Opt<i32>,
        start_kind: Str,
        end_kind: Str,
        end_state: OptStr,
    }
}

/// The values of `start_kind`, `end_kind` and `end_state` (but the rare states).
static STARTS: [&str; 3] = ["switch", "trace_start", "inferred"];
static ENDS: [&str; 6] = [
    "preempted",
    "slept",
    "exited",
    "trace_end",
    "displaced",
    "lost",
];
static STATES: [&str; 4] = ["R", "S", "D", "X"];

pub(crate) fn push(t: &mut Table<Batch>, s: &RunSlice, tgid: Option<i32>) -> Result<(), Error> {
    // The end, and the state by index into STATES, without formatting the common ones.
    let (end, state) = match s.end_kind {
        SliceEnd::Preempted => (0, Some(Ok(0))),
        SliceEnd::Slept(TaskState(TaskState::INTERRUPTIBLE)) => (1, Some(Ok(1))),
        SliceEnd::Slept(TaskState(TaskState::UNINTERRUPTIBLE)) => (1, Some(Ok(2))),
        SliceEnd::Slept(st) => (1, Some(Err(st))),
        SliceEnd::Exited => (2, Some(Ok(3))),
        SliceEnd::TraceEnd => (3, None),
        SliceEnd::Displaced => (4, None),
        SliceEnd::Lost => (5, None),
    };
    let at = t.slot();
    let b = &mut t.batch;
    b.ts_ns.put(at, i64_of(s.start));
    b.dur_ns.put(at, i64_of(s.duration()));
    b.cpu.put(at, i32_of(s.cpu));
    b.utid.put(at, s.task.map(i64::from));
    b.tid.put(at, s.tid);
    b.tgid.put(at, tgid);
    b.comm.comm(at, s.comm);
    b.prio.put(at, s.prio);
    let start = match s.start_kind {
        SliceStart::Switch => 0,
        SliceStart::TraceStart => 1,
        SliceStart::Inferred => 2,
    };
    b.start_kind.kind(at, &STARTS, start);
    b.end_kind.kind(at, &ENDS, end);
    match state {
        Some(Ok(i)) => b.end_state.kind(at, &STATES, i),
        Some(Err(st)) => b.end_state.str(at, &st.to_string()),
        None => b.end_state.null(at),
    }
    t.end_row()
}
