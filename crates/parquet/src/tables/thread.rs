//! `thread`: one task incarnation.

use jitterlab_analyze::TaskInfo;

use crate::table::{opt, req, Table, TableDef, Ty};
use crate::Error;

/// The table.
pub const DEF: TableDef = TableDef {
    name: "thread",
    doc: "a task incarnation (a tid reused after an exit is a new one), as Perfetto's `thread`",
    cols: &[
        req(
            "utid",
            Ty::I64,
            "the incarnation's id within the trace (what the other tables' `utid` joins)",
        ),
        req("tid", Ty::I32, "the thread id"),
        opt(
            "tgid",
            Ty::I32,
            "the process id, when the trace records thread groups",
        ),
        req(
            "comm",
            Ty::Str,
            "its latest name (from the trace's saved cmdlines when no event names it)",
        ),
        opt(
            "prio",
            Ty::I32,
            "its latest kernel priority, when an event gave it",
        ),
        opt(
            "parent_tid",
            Ty::I32,
            "the tid that forked it, when the fork was traced",
        ),
        req("first_ts_ns", Ty::I64, "first seen, ns on the trace clock"),
        req("forked", Ty::Bool, "its fork was traced"),
        req("exited", Ty::Bool, "its sched_process_exit was traced"),
    ],
};

pub(crate) fn push(t: &mut Table, utid: usize, info: &TaskInfo) -> Result<(), Error> {
    t.row()
        .u64(utid as u64)
        .i32(info.tid)
        .opt_i32(info.tgid)
        .comm(info.comm)
        .opt_i32(info.prio)
        .opt_i32(info.parent)
        .u64(info.first_ts)
        .bool(info.forked)
        .bool(info.exited)
        .end()
}
