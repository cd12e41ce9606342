//! `experiment_cell`, `experiment_run`, `experiment_stat`, `experiment_verdict`: a
//! `jitterlab experiment --json` result.

use serde_json::Value;

use super::latency::J;
use crate::table::{opt, req, Table, TableDef, Ty};
use crate::Error;

/// One row per cell.
pub const CELL: TableDef = TableDef {
    name: "experiment_cell",
    doc: "a cell of an experiment: one combination of its factors' levels",
    cols: &[
        req("experiment", Ty::Str, "the experiment's (recipe's) name"),
        req("cell", Ty::I32, "the cell's index"),
        req(
            "label",
            Ty::Str,
            "its levels for people (`affinity=unpinned, load=cpu:2`)",
        ),
        opt("baseline", Ty::I32, "the cell it is compared with"),
        req(
            "settings",
            Ty::Str,
            "its settings as JSON (`settings` of `jitterlab.experiment`)",
        ),
    ],
};

/// One row per run and metric.
pub const RUN: TableDef = TableDef {
    name: "experiment_run",
    doc: "one metric of one run of an experiment",
    cols: &[
        req("experiment", Ty::Str, "the experiment's name"),
        req("seq", Ty::I32, "the run's position in the plan"),
        req("cell", Ty::I32, "its cell"),
        req("round", Ty::I32, "its round"),
        req("warmup", Ty::Bool, "a warm-up run (not in the statistics)"),
        req("traced", Ty::Bool, "the run was traced"),
        opt(
            "metric",
            Ty::Str,
            "the metric (null for a failed run without values)",
        ),
        opt("value", Ty::F64, "its value, in the metric's unit"),
        opt("error", Ty::Str, "why the run failed, when it did"),
        opt("trace_run_id", Ty::Str, "for a traced run whose trace was kept (`explanations[].trace`, read relative to the JSON file's directory): the run id an export of that trace gets by default, which joins its tables; else null"),
    ],
};

/// One row per metric and cell.
pub const STAT: TableDef = TableDef {
    name: "experiment_stat",
    doc: "a metric's statistics in one cell: the median with its bootstrap interval",
    cols: &[
        req("experiment", Ty::Str, "the experiment's name"),
        req("metric", Ty::Str, "the metric"),
        req("unit", Ty::Str, "its unit"),
        req(
            "direction",
            Ty::Kind,
            "`lower_is_better` or `higher_is_better`",
        ),
        req("cell", Ty::I32, "the cell"),
        req("run_count", Ty::I64, "runs counted"),
        opt("median", Ty::F64, "the median"),
        opt("median_low", Ty::F64, "its interval's low end"),
        opt("median_high", Ty::F64, "its interval's high end"),
        opt("min", Ty::F64, "the smallest value"),
        opt("max", Ty::F64, "the largest value"),
    ],
};

/// One row per comparison of a cell with its baseline.
pub const VERDICT: TableDef = TableDef {
    name: "experiment_verdict",
    doc: "a cell compared with its baseline on one metric: the ratio of medians, the test and the verdict",
    cols: &[
        req("experiment", Ty::Str, "the experiment's name"),
        req("metric", Ty::Str, "the metric"),
        req("cell", Ty::I32, "the cell"),
        req("baseline", Ty::I32, "the baseline cell"),
        opt("ratio", Ty::F64, "median of the cell / median of the baseline"),
        opt("ratio_low", Ty::F64, "its interval's low end"),
        opt("ratio_high", Ty::F64, "its interval's high end"),
        opt("p", Ty::F64, "the Mann-Whitney p-value"),
        opt("p_holm", Ty::F64, "Holm-adjusted"),
        opt("method", Ty::Kind, "`exact` or `normal`"),
        req("verdict", Ty::Kind, "the verdict (`real`, `noise`, ...)"),
        opt("change", Ty::Kind, "`lower` or `higher`"),
        opt("better", Ty::Bool, "the change is for the better"),
    ],
};

/// The number at `path` under `v`.
pub(crate) fn f(v: &Value, path: &[&str]) -> Option<f64> {
    let mut x = v;
    for k in path {
        x = x.get(k)?;
    }
    x.as_f64()
}

/// The text at `path` under `v`.
pub(crate) fn s<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut x = v;
    for k in path {
        x = x.get(k)?;
    }
    x.as_str()
}

/// Writes the rows of a `jitterlab.experiment` result's `data`.
pub(crate) fn push(j: &J<'_>, data: &Value, t: [&mut Table; 4]) -> Result<(), Error> {
    let [cell_t, run_t, stat_t, verdict_t] = t;
    let name = s(data, &["name"]).unwrap_or("experiment");
    let baselines = j.arr(data, "data", "baselines")?;
    for (i, c) in j.arr(data, "data", "cells")?.iter().enumerate() {
        let at = format!("data.cells[{i}]");
        let index = j.i32(c, &at, "index")?;
        cell_t
            .row()
            .str(name)
            .i32(index)
            .str(s(c, &["label"]).unwrap_or(""))
            .opt_i32(
                baselines
                    .get(i)
                    .and_then(Value::as_i64)
                    .and_then(|b| i32::try_from(b).ok()),
            )
            .str(&c.get("settings").map(Value::to_string).unwrap_or_default())
            .end()?;
    }
    // The kept trace of each explained run, by its seq.
    let mut traces = std::collections::HashMap::new();
    if let Some(Value::Array(ex)) = data.get("explanations") {
        for e in ex {
            if let (Some(seq), Some(id)) = (
                e.get("seq").and_then(Value::as_i64),
                j.trace_run_id(e, "trace"),
            ) {
                traces.insert(seq, id);
            }
        }
    }
    for (i, r) in j.arr(data, "data", "runs")?.iter().enumerate() {
        let at = format!("data.runs[{i}]");
        let (seq, cell, round) = (
            j.i32(r, &at, "seq")?,
            j.i32(r, &at, "cell")?,
            j.i32(r, &at, "round")?,
        );
        let warm = r.get("warmup").and_then(Value::as_bool).unwrap_or(false);
        let traced = r.get("traced").and_then(Value::as_bool).unwrap_or(false);
        let error = s(r, &["error"]);
        let values: Vec<(&String, &Value)> = match r.get("values") {
            Some(Value::Object(m)) => m.iter().collect(),
            _ => Vec::new(),
        };
        if values.is_empty() {
            run_t
                .row()
                .str(name)
                .i32(seq)
                .i32(cell)
                .i32(round)
                .bool(warm)
                .bool(traced)
                .opt_str(None)
                .opt_f64(None)
                .opt_str(error)
                .opt_str(traces.get(&i64::from(seq)).map(String::as_str))
                .end()?;
        }
        for (metric, v) in values {
            run_t
                .row()
                .str(name)
                .i32(seq)
                .i32(cell)
                .i32(round)
                .bool(warm)
                .bool(traced)
                .str(metric)
                .opt_f64(v.as_f64())
                .opt_str(error)
                .opt_str(traces.get(&i64::from(seq)).map(String::as_str))
                .end()?;
        }
    }
    for (i, st) in j.arr(data, "data", "stats")?.iter().enumerate() {
        let at = format!("data.stats[{i}]");
        let metric = s(st, &["metric", "name"])
            .ok_or_else(|| Error::input(j.path, format!("expected {at}.metric.name")))?;
        for (k, c) in j.arr(st, &at, "cells")?.iter().enumerate() {
            let at = format!("{at}.cells[{k}]");
            stat_t
                .row()
                .str(name)
                .str(metric)
                .str(s(st, &["metric", "unit"]).unwrap_or(""))
                .str(s(st, &["metric", "direction"]).unwrap_or(""))
                .i32(j.i32(c, &at, "cell")?)
                .i64(j.i64(c, &at, "runs")?)
                .opt_f64(f(c, &["median", "value"]))
                .opt_f64(f(c, &["median", "low"]))
                .opt_f64(f(c, &["median", "high"]))
                .opt_f64(f(c, &["min"]))
                .opt_f64(f(c, &["max"]))
                .end()?;
        }
        for (k, c) in j.arr(st, &at, "comparisons")?.iter().enumerate() {
            let at = format!("{at}.comparisons[{k}]");
            verdict_t
                .row()
                .str(name)
                .str(metric)
                .i32(j.i32(c, &at, "cell")?)
                .i32(j.i32(c, &at, "baseline")?)
                .opt_f64(f(c, &["ratio", "value"]))
                .opt_f64(f(c, &["ratio", "low"]))
                .opt_f64(f(c, &["ratio", "high"]))
                .opt_f64(f(c, &["test", "p"]))
                .opt_f64(f(c, &["p_holm"]))
                .opt_str(s(c, &["test", "method"]))
                .str(s(c, &["verdict", "verdict"]).unwrap_or("unknown"))
                .opt_str(s(c, &["verdict", "change"]))
                .put_opt_bool(
                    c.get("verdict")
                        .and_then(|v| v.get("better"))
                        .and_then(Value::as_bool),
                )
                .end()?;
        }
    }
    Ok(())
}
