//! `anomaly`: what the state machine corrected or could not explain.

use jitterlab_analyze::Anomaly;

use crate::table::{opt, req, Table, TableDef, Ty};
use crate::Error;

/// The table.
pub const DEF: TableDef = TableDef {
    name: "anomaly",
    doc: "a correction the state machine made or an event it could not explain (the kinds of `analyze`'s summary: `implicit_switch_in`, `lost_events`, ...)",
    cols: &[
        req("ts_ns", Ty::I64, "when, ns on the trace clock"),
        req("cpu", Ty::I32, "the CPU"),
        req("kind", Ty::Kind, "what, in `analyze --json`'s names"),
        opt("tid", Ty::I32, "the task concerned, when one is"),
        req("count", Ty::I64, "how many (lost events: the count when known; otherwise 1)"),
    ],
};

pub(crate) fn push(t: &mut Table, a: &Anomaly) -> Result<(), Error> {
    t.row()
        .u64(a.ts)
        .u32(a.cpu)
        .str(a.kind.name())
        .opt_i32(a.tid)
        .u64(a.count)
        .end()
}
