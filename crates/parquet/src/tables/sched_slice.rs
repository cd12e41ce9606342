//! `sched_slice`: a task's (or the idle task's) time on a CPU, switch-in to switch-out.

use std::borrow::Cow;

use jitterlab_analyze::{RunSlice, SliceEnd, SliceStart};
use jitterlab_trace::TaskState;

use crate::table::{opt, req, Table, TableDef, Ty};
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

pub(crate) fn push(t: &mut Table, s: &RunSlice, tgid: Option<i32>) -> Result<(), Error> {
    let (end_kind, state) = match s.end_kind {
        SliceEnd::Preempted => ("preempted", Some(Cow::Borrowed("R"))),
        // The common states without formatting them.
        SliceEnd::Slept(TaskState(TaskState::INTERRUPTIBLE)) => ("slept", Some(Cow::Borrowed("S"))),
        SliceEnd::Slept(TaskState(TaskState::UNINTERRUPTIBLE)) => {
            ("slept", Some(Cow::Borrowed("D")))
        }
        SliceEnd::Slept(st) => ("slept", Some(Cow::Owned(st.to_string()))),
        SliceEnd::Exited => ("exited", Some(Cow::Borrowed("X"))),
        SliceEnd::TraceEnd => ("trace_end", None),
        SliceEnd::Displaced => ("displaced", None),
        SliceEnd::Lost => ("lost", None),
    };
    t.row()
        .u64(s.start)
        .u64(s.duration())
        .u32(s.cpu)
        .opt_i64(s.task.map(i64::from))
        .i32(s.tid)
        .opt_i32(tgid)
        .comm(s.comm)
        .opt_i32(s.prio)
        .kind(match s.start_kind {
            SliceStart::Switch => "switch",
            SliceStart::TraceStart => "trace_start",
            SliceStart::Inferred => "inferred",
        })
        .kind(end_kind)
        .put_str(state)
        .end()
}
