//! `irq`: a hard interrupt handler's run.

use jitterlab_analyze::IrqSpan;

use crate::table::{opt, req, Table, TableDef, Ty};
use crate::Error;

/// The table.
pub const DEF: TableDef = TableDef {
    name: "irq",
    doc: "a hard IRQ handler's run, irq_handler_entry to irq_handler_exit",
    cols: &[
        req("ts_ns", Ty::I64, "entry, ns on the trace clock"),
        req("dur_ns", Ty::I64, "entry to exit, ns"),
        req("cpu", Ty::I32, "the CPU"),
        req("irq", Ty::I32, "the IRQ number"),
        req("irq_name", Ty::Str, "the handler's name (`virtio1-req.0`)"),
        req(
            "depth",
            Ty::I32,
            "nesting depth: 0 for a handler that interrupted no other",
        ),
        req(
            "ret",
            Ty::I32,
            "the handler's return value (1 handled, 0 not)",
        ),
        opt(
            "interrupted_tid",
            Ty::I32,
            "the task it interrupted (0: idle), when known",
        ),
    ],
};

pub(crate) fn push(t: &mut Table, s: &IrqSpan) -> Result<(), Error> {
    t.row()
        .u64(s.start)
        .u64(s.end.saturating_sub(s.start))
        .u32(s.cpu)
        .u32(s.irq)
        .str(&s.name)
        .u32(s.depth)
        .i32(s.ret)
        .opt_i32(s.interrupted)
        .end()
}
