//! `migration`: a sched_migrate_task.

use jitterlab_analyze::Migration;

use crate::table::{req, Table, TableDef, Ty};
use crate::Error;

/// The table.
pub const DEF: TableDef = TableDef {
    name: "migration",
    doc: "a task moved between CPUs (sched_migrate_task)",
    cols: &[
        req("ts_ns", Ty::I64, "when, ns on the trace clock"),
        req("utid", Ty::I64, "the task incarnation"),
        req("tid", Ty::I32, "its tid"),
        req("from_cpu", Ty::I32, "from this CPU"),
        req("to_cpu", Ty::I32, "to this CPU"),
    ],
};

pub(crate) fn push(t: &mut Table, m: &Migration) -> Result<(), Error> {
    t.row()
        .u64(m.ts)
        .i64(i64::from(m.task))
        .i32(m.tid)
        .u32(m.from)
        .u32(m.to)
        .end()
}
