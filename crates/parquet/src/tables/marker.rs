//! `marker`: a write to trace_marker.

use jitterlab_analyze::Marker;

use crate::table::{req, Table, TableDef, Ty};
use crate::Error;

/// The table.
pub const DEF: TableDef = TableDef {
    name: "marker",
    doc: "a write to trace_marker (ftrace's print event)",
    cols: &[
        req("ts_ns", Ty::I64, "when, ns on the trace clock"),
        req("cpu", Ty::I32, "the CPU"),
        req("tid", Ty::I32, "the writer's tid"),
        req("text", Ty::Str, "the text"),
    ],
};

pub(crate) fn push(t: &mut Table, m: &Marker) -> Result<(), Error> {
    t.row().u64(m.ts).u32(m.cpu).i32(m.tid).str(&m.text).end()
}
