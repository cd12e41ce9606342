//! `audit_cpu`, `audit_finding`, `audit_latency`, `audit_noise`: a `jitterlab audit
//! --json` result.

use serde_json::Value;

use super::experiment::s;
use super::latency::J;
use crate::table::{opt, req, Table, TableDef, Ty};
use crate::Error;

/// One row per RT CPU.
pub const CPU: TableDef = TableDef {
    name: "audit_cpu",
    doc: "an RT CPU of an audit: its verdict and the finding that limits it most (`verdicts[]` of `jitterlab.audit`)",
    cols: &[
        req("mode", Ty::Kind, "the audit's mode: `static` (no measurement), `quick`, `full`"),
        req("cpu", Ty::I32, "the RT CPU"),
        req("verdict", Ty::Kind, "`ready`, `tune` (findings of medium severity) or `unfit` (one of high severity)"),
        opt("limiting_finding_id", Ty::Str, "the id of the finding that limits it most; null when ready"),
        opt("limiting_what", Ty::Str, "that finding's line"),
        req("high", Ty::I32, "findings of high severity that concern it"),
        req("medium", Ty::I32, "of medium severity"),
        req("low", Ty::I32, "of low severity"),
        req("machine_verdict", Ty::Kind, "the audit's verdict on the machine: the worst of its RT CPUs'"),
    ],
};

/// One row per finding.
pub const FINDING: TableDef = TableDef {
    name: "audit_finding",
    doc: "a finding of an audit, static or measured (`findings[]` of `jitterlab.audit`)",
    cols: &[
        req("mode", Ty::Kind, "the audit's mode"),
        req("finding_index", Ty::I32, "its position in the audit (0 = first)"),
        req("finding_id", Ty::Str, "its stable id (`kernel.preempt_rt`, `irqs.managed`, `measured.noise`, ...)"),
        req("subject", Ty::Str, "what it is about when the id can fire more than once (`IRQ 36`, `CPU 1`), else empty"),
        req("family", Ty::Kind, "`kernel`, `cmdline`, `power`, `irqs`, `scheduler`, `environment`, `measured`"),
        req("severity", Ty::Kind, "`info`, `low`, `medium`, `high`"),
        opt("cpu_list", Ty::Str, "the RT CPUs it concerns, as a CPU list (`1,3-5`); null: the machine"),
        req("what", Ty::Str, "what was found, in a line"),
        req("why", Ty::Str, "why it matters"),
        req("evidence", Ty::Str, "the files read (or probes) and their values, as JSON: `[{\"path\": ..., \"value\": ...}]`"),
        opt("fix_kind", Ty::Kind, "how it is fixed: `boot`, `sysctl`, `jitterlab`, `shell`, `kernel`, `host`, `config`; null: nothing to do on this machine"),
        opt("fix_apply", Ty::Str, "the change to make"),
        opt("fix_check", Ty::Str, "how to check the change took"),
        req("reboot", Ty::Bool, "the fix needs a reboot"),
        opt("effect_ns", Ty::I64, "the worst latency it may add, ns, where it can be told; for a measured finding, what both halves of its window reached"),
        opt("rank", Ty::I32, "the rank of the recommendation that resolves it (1 = the most effective change)"),
        req("noise_bound", Ty::Bool, "a measured finding whose worst figure one half of its window reached and the other did not (false in audits written before it was added)"),
    ],
};

/// One row per RT CPU and latency phase.
pub const LATENCY: TableDef = TableDef {
    name: "audit_latency",
    doc: "an RT CPU in one latency phase of a measured audit, idle then loaded (`measured.latency[]` of `jitterlab.audit`)",
    cols: &[
        req("phase", Ty::I32, "the phase's position (0 = idle)"),
        req("load", Ty::Kind, "`idle`, or the load (`cpu:2 on CPU 0-1`)"),
        req("cpu", Ty::I32, "the RT CPU"),
        req("dur_ns", Ty::I64, "the phase's length, ns"),
        req("samples", Ty::I64, "wake-ups measured"),
        req("min_ns", Ty::I64, "smallest latency, ns"),
        req("avg_ns", Ty::F64, "mean, ns"),
        req("p50_ns", Ty::I64, "median, ns"),
        req("p99_ns", Ty::I64, "99th percentile, ns"),
        req("p99_9_ns", Ty::I64, "99.9th percentile, ns"),
        req("max_ns", Ty::I64, "largest latency, ns"),
        req("missed_periods", Ty::I64, "periods the probe overran"),
        opt("steal_ticks", Ty::I64, "steal ticks the CPU gained during the phase (time a hypervisor ran something else)"),
        opt("blamed_cause", Ty::Kind, "when the phase's blamed spike is on this CPU: its cause (`task`, `interrupts`, `no_events`, `idle`, `spread`)"),
        opt("blamed_latency_ns", Ty::I64, "that wake-up's latency in the trace, ns"),
        opt("blamed_verdict", Ty::Str, "blame's line on it"),
        opt("trace_run_id", Ty::Str, "the run id an export of the trace kept with it gets by default (`trace` of the JSON, read beside the JSON file): joins that trace's tables; null when none was kept or it is not there"),
    ],
};

/// One row per RT CPU of the noise probe.
pub const NOISE: TableDef = TableDef {
    name: "audit_noise",
    doc: "the noise probe on one RT CPU of a measured audit: time taken from a busy loop (`measured.noise[]` of `jitterlab.audit`)",
    cols: &[
        req("cpu", Ty::I32, "the RT CPU"),
        req("threshold_ns", Ty::I64, "the smallest gap counted as noise, ns"),
        req("window_ns", Ty::I64, "the probe's window, ns"),
        req("noise_ns", Ty::I64, "the gaps' total, ns"),
        req("count", Ty::I64, "gaps counted"),
        req("available_ppm", Ty::I64, "parts per million of the window the probe had"),
        opt("longest_ns", Ty::I64, "the longest gap, ns"),
        opt("preemptions", Ty::I64, "times the probe was preempted"),
        opt("top_interrupt", Ty::Str, "the interrupt or softirq that fired most on the CPU in the window"),
        opt("trace_run_id", Ty::Str, "the run id an export of the trace kept with it gets by default (`trace` of the JSON, read beside the JSON file): joins that trace's tables; null when none was kept or it is not there"),
    ],
};

/// Writes the rows of a `jitterlab.audit` result's `data`.
pub(crate) fn push(j: &J<'_>, data: &Value, t: [&mut Table; 4]) -> Result<(), Error> {
    let [cpu_t, finding_t, latency_t, noise_t] = t;
    let text = |v: &Value, at: &str, key: &str| -> Result<String, Error> {
        s(v, &[key])
            .map(String::from)
            .ok_or_else(|| Error::input(j.path, format!("expected {at}.{key} to be text")))
    };
    let mode = text(data, "data", "mode")?;
    let machine = text(data, "data", "verdict")?;
    for (i, v) in j.arr(data, "data", "verdicts")?.iter().enumerate() {
        let at = format!("data.verdicts[{i}]");
        cpu_t
            .row()
            .str(&mode)
            .i32(j.i32(v, &at, "cpu")?)
            .str(&text(v, &at, "verdict")?)
            .opt_str(s(v, &["limiting"]))
            .opt_str(s(v, &["limiting_what"]))
            .i32(j.i32(v, &at, "high")?)
            .i32(j.i32(v, &at, "medium")?)
            .i32(j.i32(v, &at, "low")?)
            .str(&machine)
            .end()?;
    }
    // The rank of the recommendation that resolves a finding (`id` or `id subject`).
    let mut ranks = std::collections::HashMap::new();
    for (i, r) in j.arr(data, "data", "recommendations")?.iter().enumerate() {
        let at = format!("data.recommendations[{i}]");
        let rank = j.i32(r, &at, "rank")?;
        for key in j.arr(r, &at, "resolves")?.iter().filter_map(Value::as_str) {
            ranks.entry(key.to_string()).or_insert(rank);
        }
    }
    for (i, f) in j.arr(data, "data", "findings")?.iter().enumerate() {
        let at = format!("data.findings[{i}]");
        let (id, subject) = (text(f, &at, "id")?, text(f, &at, "subject")?);
        let key = if subject.is_empty() {
            id.clone()
        } else {
            format!("{id} {subject}")
        };
        let fix = f.get("fix").unwrap_or(&Value::Null);
        finding_t
            .row()
            .str(&mode)
            .i32(i32::try_from(i).unwrap_or(i32::MAX))
            .str(&id)
            .str(&subject)
            .str(&text(f, &at, "family")?)
            .str(&text(f, &at, "severity")?)
            .opt_str(s(f, &["cpus"]))
            .str(&text(f, &at, "what")?)
            .str(s(f, &["why"]).unwrap_or(""))
            .str(&Value::Array(j.arr(f, &at, "evidence")?.to_vec()).to_string())
            .opt_str(s(fix, &["kind"]))
            .opt_str(s(fix, &["apply"]))
            .opt_str(s(fix, &["check"]))
            .bool(
                f.get("needs_reboot")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            )
            .opt_u64(f.get("effect_ns").and_then(Value::as_u64))
            .opt_i32(ranks.get(&key).copied())
            .bool(
                f.get("noise_bound")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            )
            .end()?;
    }
    let measured = data.get("measured").unwrap_or(&Value::Null);
    for (p, ph) in j
        .arr(measured, "data.measured", "latency")?
        .iter()
        .enumerate()
    {
        let at = format!("data.measured.latency[{p}]");
        let load = text(ph, &at, "load")?;
        let wall = j.i64(ph, &at, "wall_ns")?;
        let blamed = ph.get("blamed").filter(|b| !b.is_null());
        let trace_run = j.trace_run_id(ph, "trace");
        for (k, c) in j.arr(ph, &at, "cpus")?.iter().enumerate() {
            let at = format!("{at}.cpus[{k}]");
            let cpu = j.i32(c, &at, "cpu")?;
            let steal = j
                .arr(ph, &at, "steal_ticks")?
                .iter()
                .filter_map(Value::as_array)
                .find(|st| st.first().and_then(Value::as_i64) == Some(i64::from(cpu)))
                .and_then(|st| st.get(1))
                .and_then(Value::as_u64);
            let blamed =
                blamed.filter(|b| b.get("cpu").and_then(Value::as_i64) == Some(cpu.into()));
            latency_t
                .row()
                .i32(p as i32)
                .str(&load)
                .i32(cpu)
                .i64(wall)
                .i64(j.i64(c, &at, "samples")?)
                .i64(j.i64(c, &at, "min_ns")?)
                .f64(j.f64(c, &at, "avg_ns")?)
                .i64(j.i64(c, &at, "p50_ns")?)
                .i64(j.i64(c, &at, "p99_ns")?)
                .i64(j.i64(c, &at, "p99_9_ns")?)
                .i64(j.i64(c, &at, "max_ns")?)
                .i64(j.i64(c, &at, "missed_periods")?)
                .opt_u64(steal)
                .opt_str(blamed.and_then(|b| s(b, &["cause"])))
                .opt_u64(
                    blamed
                        .and_then(|b| b.get("latency_ns"))
                        .and_then(Value::as_u64),
                )
                .opt_str(blamed.and_then(|b| s(b, &["verdict"])))
                .opt_str(trace_run.as_deref())
                .end()?;
        }
    }
    for (i, n) in j
        .arr(measured, "data.measured", "noise")?
        .iter()
        .enumerate()
    {
        let at = format!("data.measured.noise[{i}]");
        let longest = j
            .arr(n, &at, "longest")?
            .iter()
            .filter_map(|g| g.get("ns").and_then(Value::as_u64))
            .max();
        // `interrupts` is a list of [label, count].
        let top = j
            .arr(n, &at, "interrupts")?
            .iter()
            .filter_map(|x| Some((x.get(1)?.as_u64()?, x.get(0)?.as_str()?)))
            .max_by_key(|&(count, _)| count)
            .map(|(_, label)| label);
        noise_t
            .row()
            .i32(j.i32(n, &at, "cpu")?)
            .i64(j.i64(n, &at, "threshold_ns")?)
            .i64(j.i64(n, &at, "window_ns")?)
            .i64(j.i64(n, &at, "noise_ns")?)
            .i64(j.i64(n, &at, "count")?)
            .i64(j.i64(n, &at, "available_ppm")?)
            .opt_u64(longest)
            .opt_u64(n.get("preemptions").and_then(Value::as_u64))
            .opt_str(top)
            .opt_str(j.trace_run_id(n, "trace").as_deref())
            .end()?;
    }
    Ok(())
}
