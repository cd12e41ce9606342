//! `cpu`: one CPU of the trace.

use jitterlab_analyze::CpuInfo;

use crate::table::{opt, req, Table, TableDef, Ty};
use crate::Error;

/// The table.
pub const DEF: TableDef = TableDef {
    name: "cpu",
    doc: "a CPU that logged an event, with its span and counts",
    cols: &[
        req("cpu", Ty::I32, "the CPU"),
        opt(
            "first_ts_ns",
            Ty::I64,
            "its first event, ns on the trace clock",
        ),
        req("last_ts_ns", Ty::I64, "its last event, ns"),
        req("events", Ty::I64, "its events, lost markers included"),
        opt(
            "lost_events",
            Ty::I64,
            "events the kernel lost on it; null when lost in an unknown number",
        ),
    ],
};

pub(crate) fn push(t: &mut Table, c: &CpuInfo, lost: Option<u64>) -> Result<(), Error> {
    t.row()
        .u32(c.cpu)
        .opt_u64(c.first_ts)
        .u64(c.last_ts)
        .u64(c.events)
        .opt_u64(lost)
        .end()
}
