//! The export of a result file: `jitterlab latency --json`, `jitterlab experiment
//! --json` and `jitterlab audit --json` (their `jitterlab.latency`,
//! `jitterlab.experiment` and `jitterlab.audit` envelopes).

use std::path::Path;

use serde_json::Value;

use crate::table::{Table, TableDef};
use crate::tables::{audit, experiment, latency};
use crate::trace::{finish, ExportSummary, FileWritten};
use crate::{Error, Origin};

/// The tables of results, in the order they are documented.
pub const RESULT_TABLES: [&TableDef; 12] = [
    &latency::RUN,
    &latency::HISTOGRAM,
    &latency::SPIKE,
    &latency::SPIKE_INTERRUPT,
    &experiment::CELL,
    &experiment::RUN,
    &experiment::STAT,
    &experiment::VERDICT,
    &audit::CPU,
    &audit::FINDING,
    &audit::LATENCY,
    &audit::NOISE,
];

/// What a result file says of where it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResultOrigin {
    /// Its envelope's schema (`jitterlab.latency`, ...).
    pub schema: String,
    /// The host name, when the result names it (an experiment, an audit, a latency run
    /// of jitterlab since 2026-11-29).
    pub host: Option<String>,
    /// The kernel release, when it names it.
    pub kernel: Option<String>,
    /// When the run started, wall-clock ns since 1970-01-01 UTC, when it says.
    pub start_wall_ns: Option<i64>,
}

/// What a result file says of where it came from.
pub fn result_origin(path: &Path, json: &Value) -> Result<ResultOrigin, Error> {
    let schema = json.get("schema").and_then(Value::as_str).ok_or_else(|| {
        Error::input(
            path,
            "expected a jitterlab JSON result (an object with \"schema\" and \"data\")",
        )
    })?;
    let data = json.get("data").unwrap_or(&Value::Null);
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(String::from);
    let (host, kernel) = match schema {
        "jitterlab.latency" => (
            text(data.get("environment").and_then(|e| e.get("hostname"))),
            text(
                data.get("environment")
                    .and_then(|e| e.get("kernel_release")),
            ),
        ),
        "jitterlab.experiment" => (
            text(data.get("machine").and_then(|m| m.get("hostname"))),
            text(data.get("machine").and_then(|m| m.get("kernel"))),
        ),
        "jitterlab.audit" => (
            text(data.get("hostname")),
            text(data.get("kernel")).filter(|k| !k.is_empty()),
        ),
        other => {
            return Err(Error::input(
                path,
                format!(
                    "expected a jitterlab.latency, jitterlab.experiment or jitterlab.audit result, found {other:?}"
                ),
            ))
        }
    };
    // Every kind says when it started (results written before it did say nothing).
    let start = data
        .get("start_wall_ns")
        .and_then(Value::as_u64)
        .map(crate::table::i64_of);
    Ok(ResultOrigin {
        schema: schema.to_string(),
        host,
        kernel,
        start_wall_ns: start,
    })
}

/// Exports the result `json` (read from `path`) under `dir`, hive-style, with the
/// provenance of `origin`.
pub fn export_result(
    path: &Path,
    json: &Value,
    origin: &Origin,
    dir: &Path,
) -> Result<ExportSummary, Error> {
    crate::dataset::check_names(path, origin)?;
    let schema = result_origin(path, json)?.schema;
    let data = json.get("data").unwrap_or(&Value::Null);
    let j = latency::J { path };
    // The four tables of a kind of result, filled by `push`, then finished.
    let four = |defs: [&'static TableDef; 4],
                push: &dyn Fn([&mut Table; 4]) -> Result<(), Error>|
     -> Result<Vec<FileWritten>, Error> {
        let [a, b, c, d] = defs.map(|def| Table::create(dir, def, origin));
        let mut t = [a?, b?, c?, d?];
        let [ta, tb, tc, td] = &mut t;
        push([ta, tb, tc, td])?;
        defs.into_iter()
            .zip(t)
            .filter_map(|(def, table)| finish(def, table).transpose())
            .collect()
    };
    let files = match schema.as_str() {
        "jitterlab.latency" => four(
            [
                &latency::RUN,
                &latency::HISTOGRAM,
                &latency::SPIKE,
                &latency::SPIKE_INTERRUPT,
            ],
            &|[a, b, c, d]| latency::push(&j, data, a, b, c, d),
        )?,
        "jitterlab.experiment" => four(
            [
                &experiment::CELL,
                &experiment::RUN,
                &experiment::STAT,
                &experiment::VERDICT,
            ],
            &|t| experiment::push(&j, data, t),
        )?,
        _ => four(
            [&audit::CPU, &audit::FINDING, &audit::LATENCY, &audit::NOISE],
            &|t| audit::push(&j, data, t),
        )?,
    };
    crate::dataset::remove_stale(dir, origin, &crate::trace::written(&files))?;
    Ok(ExportSummary {
        input: path.display().to_string(),
        host: origin.host.clone(),
        run_id: origin.run_id.clone(),
        kernel: origin.kernel.clone(),
        events: 0,
        files,
    })
}
