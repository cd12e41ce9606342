//! The export of a result file: `jitterlab latency --json` and `jitterlab experiment
//! --json` (their `jitterlab.latency` and `jitterlab.experiment` envelopes).

use std::path::Path;

use serde_json::Value;

use crate::table::{Table, TableDef};
use crate::tables::{experiment, latency};
use crate::trace::{finish, ExportSummary};
use crate::{Error, Origin};

/// The tables of results, in the order they are documented.
pub const RESULT_TABLES: [&TableDef; 8] = [
    &latency::RUN,
    &latency::HISTOGRAM,
    &latency::SPIKE,
    &latency::SPIKE_INTERRUPT,
    &experiment::CELL,
    &experiment::RUN,
    &experiment::STAT,
    &experiment::VERDICT,
];

/// What a result file says of where it came from: (schema, host, kernel).
pub fn result_origin(
    path: &Path,
    json: &Value,
) -> Result<(String, Option<String>, Option<String>), Error> {
    let schema = json.get("schema").and_then(Value::as_str).ok_or_else(|| {
        Error::input(
            path,
            "expected a jitterlab JSON result (an object with \"schema\" and \"data\")",
        )
    })?;
    let data = json.get("data").unwrap_or(&Value::Null);
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(String::from);
    Ok(match schema {
        "jitterlab.latency" => (
            schema.to_string(),
            None,
            text(
                data.get("environment")
                    .and_then(|e| e.get("kernel_release")),
            ),
        ),
        "jitterlab.experiment" => (
            schema.to_string(),
            text(data.get("machine").and_then(|m| m.get("hostname"))),
            text(data.get("machine").and_then(|m| m.get("kernel"))),
        ),
        other => {
            return Err(Error::input(
                path,
                format!(
                    "expected a jitterlab.latency or jitterlab.experiment result, found {other:?}"
                ),
            ))
        }
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
    let (schema, _, _) = result_origin(path, json)?;
    let data = json.get("data").unwrap_or(&Value::Null);
    let j = latency::J { path };
    let mk = |def: &'static TableDef| Table::create(dir, def, origin);
    let mut files = Vec::new();
    if schema == "jitterlab.latency" {
        let (mut a, mut b, mut c, mut d) = (
            mk(&latency::RUN)?,
            mk(&latency::HISTOGRAM)?,
            mk(&latency::SPIKE)?,
            mk(&latency::SPIKE_INTERRUPT)?,
        );
        latency::push(&j, data, &mut a, &mut b, &mut c, &mut d)?;
        for (def, t) in [
            (&latency::RUN, a),
            (&latency::HISTOGRAM, b),
            (&latency::SPIKE, c),
            (&latency::SPIKE_INTERRUPT, d),
        ] {
            files.push(finish(def, t)?);
        }
    } else {
        let (mut a, mut b, mut c, mut d) = (
            mk(&experiment::CELL)?,
            mk(&experiment::RUN)?,
            mk(&experiment::STAT)?,
            mk(&experiment::VERDICT)?,
        );
        experiment::push(&j, data, [&mut a, &mut b, &mut c, &mut d])?;
        for (def, t) in [
            (&experiment::CELL, a),
            (&experiment::RUN, b),
            (&experiment::STAT, c),
            (&experiment::VERDICT, d),
        ] {
            files.push(finish(def, t)?);
        }
    }
    Ok(ExportSummary {
        input: path.display().to_string(),
        host: origin.host.clone(),
        trace_id: origin.trace_id.clone(),
        kernel: origin.kernel.clone(),
        events: 0,
        files,
    })
}
