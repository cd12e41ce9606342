//! `latency_run`, `latency_histogram`, `latency_spike`, `latency_spike_interrupt`: a
//! `jitterlab latency --json` result.

use serde_json::Value;

use crate::table::{opt, req, Table, TableDef, Ty};
use crate::Error;

/// One row per measured CPU.
pub const RUN: TableDef = TableDef {
    name: "latency_run",
    doc: "one measured CPU of a `jitterlab latency` run: its statistics (the `cpus[]` of `jitterlab.latency`) and the run's settings",
    cols: &[
        req("cpu", Ty::I32, "the CPU"),
        req("samples", Ty::I64, "wake-ups measured"),
        req("min_ns", Ty::I64, "smallest latency, ns"),
        req("avg_ns", Ty::F64, "mean, ns"),
        req("stddev_ns", Ty::F64, "standard deviation, ns"),
        req("p50_ns", Ty::I64, "median (HDR, 3 significant digits), ns"),
        req("p90_ns", Ty::I64, "90th percentile, ns"),
        req("p99_ns", Ty::I64, "99th percentile, ns"),
        req("p99_9_ns", Ty::I64, "99.9th percentile, ns"),
        req("p99_99_ns", Ty::I64, "99.99th percentile, ns"),
        req("max_ns", Ty::I64, "largest latency (exact), ns"),
        req("missed_periods", Ty::I64, "periods the probe overran"),
        req("deadline_misses", Ty::I64, "wake-ups later than the deadline"),
        opt("interval_ns", Ty::I64, "the probe's period, ns"),
        opt("policy", Ty::Str, "its scheduling policy (`fifo`, `other`, ...)"),
        opt("rt_priority", Ty::I32, "the probe's real-time priority (sched_priority, 1-99; not the kernel `prio` of the trace tables)"),
        opt("dur_ns", Ty::I64, "the run's length, ns"),
        opt("preemption", Ty::Str, "the kernel's preemption model"),
        opt("preempt_rt", Ty::Bool, "the kernel is PREEMPT_RT"),
        opt("virtualization", Ty::Str, "the hypervisor, when virtual"),
        req("cancelled", Ty::Bool, "the run was cut short (Ctrl-C)"),
        req("failed", Ty::Bool, "`--fail-above` was exceeded"),
    ],
};

/// One row per non-empty histogram bucket.
pub const HISTOGRAM: TableDef = TableDef {
    name: "latency_histogram",
    doc: "one non-empty bucket of a CPU's HDR histogram, exact: the histograms of several runs (or hosts) merge by summing `count` per (`le_ns`), and a percentile of the sum is the smallest `le_ns` whose running count reaches `ceil(q * total)` (kept within the exact min and max, as `jitterlab latency` does)",
    cols: &[
        req("cpu", Ty::I32, "the CPU"),
        req("le_ns", Ty::I64, "the bucket's upper bound (its highest value equivalent at 3 significant digits), ns"),
        req("count", Ty::I64, "samples in it"),
    ],
};

/// One row per spike of the ledger.
pub const SPIKE: TableDef = TableDef {
    name: "latency_spike",
    doc: "a wake-up over `--spike-threshold` (the spike ledger)",
    cols: &[
        req("cpu", Ty::I32, "the CPU"),
        req(
            "sample",
            Ty::I64,
            "the sample's number on its CPU (1 = first)",
        ),
        req(
            "t_ns",
            Ty::I64,
            "when, ns since the start of the measurement",
        ),
        req("latency_ns", Ty::I64, "its latency, ns"),
        opt(
            "window_ns",
            Ty::I64,
            "the time the interrupt counts cover, ns",
        ),
        opt(
            "top_interrupt",
            Ty::Str,
            "the interrupt or softirq that fired most on the CPU in the window",
        ),
    ],
};

/// One row per interrupt source of a spike.
pub const SPIKE_INTERRUPT: TableDef = TableDef {
    name: "latency_spike_interrupt",
    doc: "an interrupt or softirq source that fired on a spike's CPU in its window",
    cols: &[
        req("cpu", Ty::I32, "the spike's CPU"),
        req(
            "sample",
            Ty::I64,
            "the spike's sample number (joins `latency_spike`)",
        ),
        req(
            "interrupt",
            Ty::Str,
            "`IRQ 36 virtio1-req.0`, `LOC`, `softirq TIMER`, ...",
        ),
        req("count", Ty::I64, "how many more there were over the window"),
    ],
};

/// A field of a JSON result, or an error naming it.
pub(crate) struct J<'a> {
    pub path: &'a std::path::Path,
}

impl J<'_> {
    /// The default run id of the trace that `v[key]` names relative to the result
    /// file's directory (see [`crate::origin::default_trace_run_id`]); `None` when it
    /// names none or the file is not there.
    pub(crate) fn trace_run_id(&self, v: &Value, key: &str) -> Option<String> {
        let rel = v.get(key).and_then(Value::as_str)?;
        let dir = self.path.parent().unwrap_or(std::path::Path::new("."));
        crate::origin::default_trace_run_id(&dir.join(rel))
    }

    pub(crate) fn u64(&self, v: &Value, at: &str, key: &str) -> Result<u64, Error> {
        v.get(key).and_then(Value::as_u64).ok_or_else(|| {
            Error::input(
                self.path,
                format!("expected {at}.{key} to be a whole number"),
            )
        })
    }
    pub(crate) fn i64(&self, v: &Value, at: &str, key: &str) -> Result<i64, Error> {
        Ok(crate::table::i64_of(self.u64(v, at, key)?))
    }
    pub(crate) fn i32(&self, v: &Value, at: &str, key: &str) -> Result<i32, Error> {
        let n = self.u64(v, at, key)?;
        i32::try_from(n).map_err(|_| {
            Error::input(
                self.path,
                format!("expected {at}.{key} below 2^31, found {n}"),
            )
        })
    }
    pub(crate) fn f64(&self, v: &Value, at: &str, key: &str) -> Result<f64, Error> {
        v.get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| Error::input(self.path, format!("expected {at}.{key} to be a number")))
    }
    pub(crate) fn arr<'v>(&self, v: &'v Value, at: &str, key: &str) -> Result<&'v [Value], Error> {
        match v.get(key) {
            Some(Value::Array(a)) => Ok(a),
            Some(Value::Null) | None => Ok(&[]),
            Some(_) => Err(Error::input(
                self.path,
                format!("expected {at}.{key} to be a list"),
            )),
        }
    }
}

/// Writes the rows of a `jitterlab.latency` result's `data`.
pub(crate) fn push(
    j: &J<'_>,
    data: &Value,
    run: &mut Table,
    hist: &mut Table,
    spike: &mut Table,
    spike_irq: &mut Table,
) -> Result<(), Error> {
    let env = data.get("environment").unwrap_or(&Value::Null);
    let config = data.get("config").unwrap_or(&Value::Null);
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(String::from);
    for (i, c) in j.arr(data, "data", "cpus")?.iter().enumerate() {
        let at = format!("data.cpus[{i}]");
        let cpu = j.i32(c, &at, "cpu")?;
        run.row()
            .i32(cpu)
            .i64(j.i64(c, &at, "samples")?)
            .i64(j.i64(c, &at, "min_ns")?)
            .f64(j.f64(c, &at, "avg_ns")?)
            .f64(j.f64(c, &at, "stddev_ns")?)
            .i64(j.i64(c, &at, "p50_ns")?)
            .i64(j.i64(c, &at, "p90_ns")?)
            .i64(j.i64(c, &at, "p99_ns")?)
            .i64(j.i64(c, &at, "p99_9_ns")?)
            .i64(j.i64(c, &at, "p99_99_ns")?)
            .i64(j.i64(c, &at, "max_ns")?)
            .i64(j.i64(c, &at, "missed_periods")?)
            .i64(j.i64(c, &at, "deadline_misses")?)
            .opt_u64(config.get("interval_ns").and_then(Value::as_u64))
            .opt_str(s(config, "policy").as_deref())
            .opt_i32(
                config
                    .get("priority")
                    .and_then(Value::as_i64)
                    .and_then(|p| i32::try_from(p).ok()),
            )
            .opt_u64(data.get("wall_ns").and_then(Value::as_u64))
            .opt_str(s(env, "preemption").as_deref())
            .put_opt_bool(env.get("preempt_rt").and_then(Value::as_bool))
            .opt_str(s(env, "virtualization").as_deref())
            .bool(
                data.get("cancelled")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            )
            .bool(data.get("failed").and_then(Value::as_bool).unwrap_or(false))
            .end()?;
        for (k, b) in j.arr(c, &at, "buckets")?.iter().enumerate() {
            let at = format!("{at}.buckets[{k}]");
            hist.row()
                .i32(cpu)
                .i64(j.i64(b, &at, "le_ns")?)
                .i64(j.i64(b, &at, "count")?)
                .end()?;
        }
    }
    let spikes = data.get("spikes").unwrap_or(&Value::Null);
    for (i, sp) in j.arr(spikes, "data.spikes", "spikes")?.iter().enumerate() {
        let at = format!("data.spikes.spikes[{i}]");
        let cpu = j.i32(sp, &at, "cpu")?;
        let sample = j.i64(sp, &at, "sample")?;
        let irqs = j.arr(sp, &at, "interrupts")?;
        spike
            .row()
            .i32(cpu)
            .i64(sample)
            .i64(j.i64(sp, &at, "t_ns")?)
            .i64(j.i64(sp, &at, "latency_ns")?)
            .opt_u64(sp.get("window_ns").and_then(Value::as_u64))
            .opt_str(
                irqs.first()
                    .and_then(|x| x.get("name"))
                    .and_then(Value::as_str),
            )
            .end()?;
        for (k, x) in irqs.iter().enumerate() {
            let at = format!("{at}.interrupts[{k}]");
            let name = x
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::input(j.path, format!("expected {at}.name to be text")))?;
            spike_irq
                .row()
                .i32(cpu)
                .i64(sample)
                .str(name)
                .i64(j.i64(x, &at, "count")?)
                .end()?;
        }
    }
    Ok(())
}
