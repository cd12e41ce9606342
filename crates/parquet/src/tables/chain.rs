//! `irq_chain`: a wake-up caused by an IRQ or a softirq, with its chain latency.

use jitterlab_analyze::{ChainSource, Wake, Waker};

use crate::table::{opt, req, Table, TableDef, Ty};
use crate::Error;

/// The table.
pub const DEF: TableDef = TableDef {
    name: "irq_chain",
    doc: "a wake-up that an IRQ or a softirq caused, one row per wake-up: `analyze`'s IRQ -> task chains are its rows with `source = 'irq'` grouped by (irq, utid), the softirq -> task chains those with `source = 'softirq'` grouped by (softirq_vec, utid)",
    cols: &[
        req("ts_ns", Ty::I64, "the woken task's switch-in, ns on the trace clock"),
        req("source", Ty::Kind, "`irq`: done in a hard IRQ's handler or in a softirq it raised; `softirq`: done in a softirq run no traced IRQ raised"),
        opt("irq", Ty::I32, "the IRQ, for `irq`"),
        opt("irq_name", Ty::Str, "its handler's name, when seen"),
        opt("softirq_vec", Ty::I32, "the vector: for `softirq` the chain's source, for `irq` the softirq the IRQ raised (null when done in the handler)"),
        opt("softirq_name", Ty::Str, "the vector's name (`NET_RX`, `BLOCK`, ...)"),
        req("via", Ty::Kind, "where the wake-up was done: `hardirq` or `softirq`"),
        req("utid", Ty::I64, "the woken task incarnation"),
        req("tid", Ty::I32, "its tid"),
        req("comm", Ty::Str, "its name"),
        opt("exit_ts_ns", Ty::I64, "the chain's start: the IRQ handler's exit (`irq`) or the softirq run's exit (`softirq`), ns, when seen"),
        opt("chain_latency_ns", Ty::I64, "`ts_ns - exit_ts_ns`: the chain latency; null when the exit was not seen before the switch-in (`analyze`'s `exit_unknown`)"),
        req("latency_ns", Ty::I64, "the wake-up latency, sched_waking -> switch-in (`wakeup.latency_ns` of the same wake-up), ns"),
    ],
};

pub(crate) fn push(t: &mut Table, w: &Wake, irq_name: Option<&str>) -> Result<(), Error> {
    let Some(src) = w.chain_source() else {
        return Ok(());
    };
    let (via, vec) = match w.waker {
        Waker::Hardirq { .. } => ("hardirq", None),
        Waker::Softirq { vec, .. } => ("softirq", vec),
        Waker::Task { .. } => return Ok(()),
    };
    let (source, irq, exit, lat) = match src {
        ChainSource::Irq(n) => ("irq", Some(n), w.irq_exit_ts, w.chain_latency()),
        ChainSource::Softirq(_) => (
            "softirq",
            None,
            w.softirq_exit_ts,
            w.softirq_chain_latency(),
        ),
    };
    // The same pairing as analyze: a latency only when the exit is known.
    let lat = exit.and(lat);
    t.row()
        .u64(w.switch_in_ts)
        .kind(source)
        .opt_u32(irq)
        .opt_str(irq.and(irq_name))
        .opt_u32(vec)
        .opt_str(vec.map(jitterlab_analyze::softirq_name).as_deref())
        .kind(via)
        .i64(i64::from(w.task))
        .i32(w.tid)
        .comm(w.comm)
        .opt_u64(exit)
        .opt_u64(lat)
        .u64(w.latency())
        .end()
}
