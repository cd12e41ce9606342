//! `trace`: one row per exported trace.

use crate::table::{opt, req, Table, TableDef, Ty};
use crate::{Error, TraceFacts};

/// The table.
pub const DEF: TableDef = TableDef {
    name: "trace",
    doc: "one row per exported trace: where it came from, its span and clocks (Perfetto keeps these in `metadata`)",
    cols: &[
        req("file", Ty::Str, "the trace file as given to `export`"),
        req("format", Ty::Str, "its format (`trace-cmd .dat v6`, ...)"),
        opt("uname", Ty::Str, "the `uname` text the file records"),
        opt("clock", Ty::Str, "the trace clock (`local`, `mono`, ...)"),
        opt("cpu_count", Ty::I32, "CPUs of the recording, when the file says"),
        opt("first_ts_ns", Ty::I64, "the first event, ns on the trace clock"),
        opt("last_ts_ns", Ty::I64, "the last event, ns"),
        req("events", Ty::I64, "events read"),
        req("lost_events", Ty::I64, "events the kernel reported lost (known counts)"),
        opt("monotonic_ns", Ty::I64, "CLOCK_MONOTONIC when the recording started (the clock pair `jitterlab record` saves)"),
        opt("realtime_ns", Ty::I64, "CLOCK_REALTIME at the same moment, ns since 1970 (= `start_wall_ns`)"),
        opt("wall_offset_ns", Ty::I64, "`realtime_ns - monotonic_ns`: added to a trace time it gives wall-clock time; only with the `mono` trace clock (`jitterlab record`'s), null with another (the default `local`, sched_clock, is tens of ms from CLOCK_MONOTONIC: see docs/parquet.md)"),
        opt("buffer", Ty::Str, "the .dat buffer exported: `top`, or an instance's name (`export --buffer` chooses; by default the top buffer when it holds events, else the fullest); null for a text trace"),
        opt("buffers_not_exported", Ty::Str, "the .dat's other buffers, not exported, with their counts (`buffer tracing-a (2460 events)`, comma-separated); null when it has none"),
        req("schema_version", Ty::I32, "the version of these tables' schema (docs/parquet.md)"),
        req("jitterlab_version", Ty::Str, "the jitterlab that exported it"),
    ],
};

pub(crate) fn push(t: &mut Table, f: &TraceFacts) -> Result<(), Error> {
    let left_out = f.buffers_not_exported.join(", ");
    t.row()
        .str(&f.file)
        .str(&f.format)
        .opt_str(f.uname.as_deref())
        .opt_str(f.clock.as_deref())
        .opt_u32(f.cpus)
        .opt_u64(f.first_ts)
        .opt_u64(f.last_ts)
        .u64(f.events)
        .u64(f.lost_events)
        .opt_u64(f.clocks.map(|c| c.monotonic_ns))
        .opt_u64(f.clocks.map(|c| c.realtime_ns))
        .opt_i64(
            f.clocks
                .filter(|_| f.clock.as_deref() == Some("mono"))
                .map(|c| c.wall_offset_ns()),
        )
        .opt_str(f.buffer.as_deref())
        .opt_str(Some(left_out.as_str()).filter(|s| !s.is_empty()))
        .u32(crate::SCHEMA_VERSION)
        .str(env!("CARGO_PKG_VERSION"))
        .end()
}
