//! `softirq`: a softirq's run.

use jitterlab_analyze::SoftirqSpan;

use crate::table::{opt, req, Table, TableDef, Ty};
use crate::Error;

/// The table.
pub const DEF: TableDef = TableDef {
    name: "softirq",
    doc: "a softirq's run, softirq_entry to softirq_exit",
    cols: &[
        req("ts_ns", Ty::I64, "entry, ns on the trace clock"),
        req("dur_ns", Ty::I64, "entry to exit, ns"),
        req("cpu", Ty::I32, "the CPU"),
        req("softirq_vec", Ty::I32, "the vector"),
        req(
            "softirq_name",
            Ty::Str,
            "its name (`TIMER`, `NET_RX`, `BLOCK`, ...)",
        ),
        opt(
            "raise_ts_ns",
            Ty::I64,
            "the softirq_raise that made it pending on this CPU, ns, when seen",
        ),
        opt(
            "raised_by_irq",
            Ty::I32,
            "the IRQ whose handler raised it, when one did",
        ),
    ],
};

pub(crate) fn push(t: &mut Table, s: &SoftirqSpan) -> Result<(), Error> {
    t.row()
        .u64(s.start)
        .u64(s.end.saturating_sub(s.start))
        .u32(s.cpu)
        .u32(s.vec)
        .str(&jitterlab_analyze::softirq_name(s.vec))
        .opt_u64(s.raise_ts)
        .opt_u32(s.raised_by)
        .end()
}
