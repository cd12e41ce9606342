//! Where an input came from: its [`Origin`], from what the file records and what the
//! command line says.

use std::path::Path;

use jitterlab_trace::Trace;
use serde_json::Value;

use crate::{content_hash, minted_run_id, result_origin, trace_origin, Error, Origin};

/// What the command line says of the inputs' origin (each overrides the file's own).
#[derive(Clone, Debug, Default)]
pub struct OriginOptions {
    /// The host name.
    pub host: Option<String>,
    /// The trace or run id (for one input).
    pub run: Option<String>,
    /// The kernel release.
    pub kernel: Option<String>,
}

fn host_missing(path: &Path) -> Error {
    Error::input(
        path,
        "records no host name (traces of `jitterlab record` and trace-cmd's uname do, experiment and audit results do, latency results written since 2026-11-29 do); give --host",
    )
}

/// The run id of an input when the command line gives none: [`minted_run_id`] with the
/// input's content hash, or, for a stream (which cannot be read twice), a hash of its
/// name and of the time now. `part` names the part of the file read when it is not the
/// whole (an instance buffer of a .dat): it goes into the hash, so that each buffer of
/// a file exported is a run of its own.
fn default_run(
    prefix: &str,
    path: &Path,
    stream: bool,
    start: Option<i64>,
    part: Option<&str>,
) -> Result<String, Error> {
    let hash = if stream {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = format!("{}\0{now}\0{}", path.display(), std::process::id());
        twox_hash::XxHash64::oneshot(0, seed.as_bytes())
    } else {
        content_hash(path).map_err(|e| Error::io(path, "cannot read", e))?
    };
    let hash = match part {
        Some(p) => twox_hash::XxHash64::oneshot(hash, p.as_bytes()),
        None => hash,
    };
    Ok(minted_run_id(prefix, start, hash))
}

/// The instance buffer of a .dat that `trace` reads, if not the top one.
fn instance(trace: &Trace) -> Option<&str> {
    match crate::trace::buffer_name(trace) {
        Some("top") | None => None,
        Some(b) => Some(b),
    }
}

/// The run id an export of the trace at `path` gets by default (what `export` mints for
/// it), or `None` when it cannot be read as a trace: how a result's rows name the trace
/// recorded with them, so that the two join once both are exported.
pub fn default_trace_run_id(path: &Path) -> Option<String> {
    let trace = Trace::open(path, false).ok()?;
    let (_, _, clocks) = trace_origin(&trace);
    let start = clocks.map(|c| i64::try_from(c.realtime_ns).unwrap_or(i64::MAX));
    default_run("trace", path, trace.is_stream(), start, instance(&trace)).ok()
}

/// The origin of a trace: the command line's values, else the host name, kernel
/// release and clock pair the file records ([`trace_origin`]); the run id a minted one
/// ([`minted_run_id`], prefix `trace`).
pub fn origin_of_trace(trace: &Trace, path: &Path, o: &OriginOptions) -> Result<Origin, Error> {
    let (host, kernel, clocks) = trace_origin(trace);
    let start_wall_ns = clocks.map(|c| i64::try_from(c.realtime_ns).unwrap_or(i64::MAX));
    Ok(Origin {
        host: o.host.clone().or(host).ok_or_else(|| host_missing(path))?,
        run_id: match &o.run {
            Some(r) => r.clone(),
            None => default_run(
                "trace",
                path,
                trace.is_stream(),
                start_wall_ns,
                instance(trace),
            )?,
        },
        kernel: o.kernel.clone().or(kernel),
        start_wall_ns,
    })
}

/// The origin of a result file; the run id a minted one ([`minted_run_id`], prefix
/// `latency`, `experiment` or `audit`).
pub fn origin_of_result(json: &Value, path: &Path, o: &OriginOptions) -> Result<Origin, Error> {
    let r = result_origin(path, json)?;
    let prefix = r.schema.strip_prefix("jitterlab.").unwrap_or("result");
    Ok(Origin {
        host: o
            .host
            .clone()
            .or(r.host)
            .ok_or_else(|| host_missing(path))?,
        run_id: match &o.run {
            Some(r) => r.clone(),
            None => default_run(prefix, path, false, r.start_wall_ns, None)?,
        },
        kernel: o.kernel.clone().or(r.kernel),
        start_wall_ns: r.start_wall_ns,
    })
}

/// Whether `path` holds a JSON result rather than a trace: its first byte that is not
/// white space is `{` (a folder is a trace: an LTTng one).
pub fn is_json_result(path: &Path) -> Result<bool, Error> {
    use std::io::Read;
    if path.is_dir() {
        return Ok(false);
    }
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
    let mut head = [0u8; 256];
    let n = f
        .read(&mut head)
        .map_err(|e| Error::io(path, "cannot read", e))?;
    Ok(head[..n]
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{'))
}

/// The most bytes a result file may have (a latency result with its histograms and
/// spikes, an experiment with its series, are well under it).
pub const RESULT_LIMIT: u64 = 256 << 20;

/// The version of the result envelopes this jitterlab reads (every schema is at 1).
pub const RESULT_VERSION: u64 = 1;

/// What `data` must hold for each result schema, as (field, JSON type): the fields every
/// result of that schema has, which its readers (`export`, `view`) rely on.
const RESULT_SHAPES: [(&str, &[(&str, JsonKind)]); 4] = [
    (
        "jitterlab.latency",
        &[
            ("environment", JsonKind::Object),
            ("config", JsonKind::Object),
            ("cpus", JsonKind::Array),
        ],
    ),
    (
        "jitterlab.experiment",
        &[
            ("name", JsonKind::String),
            ("cells", JsonKind::Array),
            ("runs", JsonKind::Array),
            ("stats", JsonKind::Array),
        ],
    ),
    (
        "jitterlab.audit",
        &[
            ("verdict", JsonKind::String),
            ("verdicts", JsonKind::Array),
            ("findings", JsonKind::Array),
        ],
    ),
    ("jitterlab.analyze", &[("source", JsonKind::Object)]),
];

/// A JSON value's type, as a result's shape names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JsonKind {
    Object,
    Array,
    String,
}

impl JsonKind {
    fn matches(self, v: &Value) -> bool {
        match self {
            JsonKind::Object => v.is_object(),
            JsonKind::Array => v.is_array(),
            JsonKind::String => v.is_string(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            JsonKind::Object => "an object",
            JsonKind::Array => "an array",
            JsonKind::String => "a string",
        }
    }
}

/// Checks a saved result's envelope before anything uses it: `schema` one of `accepted`,
/// `version` [`RESULT_VERSION`], and `data` an object with the fields its schema always
/// has. The error names the field and what was expected (the caller names the file).
/// Returns the schema.
pub fn check_envelope<'a>(json: &'a Value, accepted: &[&str]) -> Result<&'a str, String> {
    let list = accepted.join(", ");
    let Some(envelope) = json.as_object() else {
        return Err(format!("expected a JSON object saved with --json ({list})"));
    };
    let schema = match envelope.get("schema") {
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err("\"schema\": expected a string".into()),
        None => {
            return Err(format!(
                "no \"schema\" field; expected a result saved with --json ({list})"
            ))
        }
    };
    if !accepted.contains(&schema) {
        return Err(format!("\"schema\": {schema:?}; expected one of {list}"));
    }
    match envelope.get("version") {
        Some(v) if v.as_u64() == Some(RESULT_VERSION) => {}
        Some(v) if v.is_u64() => {
            return Err(format!(
                "\"version\": {schema} version {v}; this jitterlab reads version {RESULT_VERSION} (a newer jitterlab wrote it?)"
            ))
        }
        Some(v) => return Err(format!("\"version\": {v}; expected the number {RESULT_VERSION}")),
        None => return Err(format!("no \"version\" field; expected {RESULT_VERSION}")),
    }
    let data = match envelope.get("data") {
        Some(d @ Value::Object(_)) => d,
        Some(Value::Null) | None => {
            return Err(format!(
                "\"data\": missing or null; a {schema} result holds an object there"
            ))
        }
        Some(_) => return Err("\"data\": expected an object".into()),
    };
    let shape = RESULT_SHAPES
        .iter()
        .find(|(s, _)| *s == schema)
        .map_or(&[][..], |(_, fields)| *fields);
    for (field, kind) in shape {
        match data.get(*field) {
            Some(v) if kind.matches(v) => {}
            Some(_) => {
                return Err(format!(
                    "\"data.{field}\": expected {} in a {schema} result",
                    kind.name()
                ))
            }
            None => {
                return Err(format!(
                    "\"data.{field}\": missing; every {schema} result has it"
                ))
            }
        }
    }
    Ok(schema)
}

/// Reads a JSON result file (at most [`RESULT_LIMIT`] bytes), checked by
/// [`check_envelope`] to be one of the [`EXPORTABLE`] results.
pub fn read_result(path: &Path) -> Result<Value, Error> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
    let mut bytes = Vec::new();
    f.take(RESULT_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, "cannot read", e))?;
    if bytes.len() as u64 > RESULT_LIMIT {
        return Err(Error::input(
            path,
            format!("expected a result of at most {RESULT_LIMIT} bytes"),
        ));
    }
    let json: Value = serde_json::from_slice(&bytes).map_err(|e| {
        Error::input(
            path,
            format!("expected JSON (a jitterlab --json result): {e}"),
        )
    })?;
    check_envelope(&json, &EXPORTABLE).map_err(|e| Error::input(path, e))?;
    Ok(json)
}

/// The result schemas `export` writes as tables.
pub const EXPORTABLE: [&str; 3] = [
    "jitterlab.latency",
    "jitterlab.experiment",
    "jitterlab.audit",
];
