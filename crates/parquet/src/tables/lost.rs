//! `lost`: a stretch of a CPU's time whose state is unknown after lost events.

use jitterlab_analyze::Blind;

use crate::table::{req, Table, TableDef, Ty};
use crate::Error;

/// The table.
pub const DEF: TableDef = TableDef {
    name: "lost",
    doc: "a stretch where a CPU's state is unknown: from its last event before lost events (a ring-buffer overrun) to its next known state; the counts are the `lost_events` rows of `anomaly`",
    cols: &[
        req("ts_ns", Ty::I64, "from, ns on the trace clock"),
        req("dur_ns", Ty::I64, "how long, ns"),
        req("cpu", Ty::I32, "the CPU"),
    ],
};

pub(crate) fn push(t: &mut Table, b: &Blind) -> Result<(), Error> {
    t.row()
        .u64(b.start)
        .u64(b.end.saturating_sub(b.start))
        .u32(b.cpu)
        .end()
}
