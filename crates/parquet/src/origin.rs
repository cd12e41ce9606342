//! Where an input came from: its [`Origin`], from what the file records and what the
//! command line says.

use std::path::Path;

use jitterlab_trace::Trace;
use serde_json::Value;

use crate::{default_trace_id, result_origin, trace_origin, Error, Origin};

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
        "records no host name (only traces of `jitterlab record` and trace-cmd's uname, experiment and audit results, do); give --host",
    )
}

/// The origin of a trace: the command line's values, else the host name, kernel
/// release and clock pair the file records ([`trace_origin`]).
pub fn origin_of_trace(trace: &Trace, path: &Path, o: &OriginOptions) -> Result<Origin, Error> {
    let (host, kernel, clocks) = trace_origin(trace);
    Ok(Origin {
        host: o.host.clone().or(host).ok_or_else(|| host_missing(path))?,
        trace_id: o.run.clone().unwrap_or_else(|| default_trace_id(path)),
        kernel: o.kernel.clone().or(kernel),
        start_wall_ns: clocks.map(|c| i64::try_from(c.realtime_ns).unwrap_or(i64::MAX)),
    })
}

/// The origin of a result file.
pub fn origin_of_result(json: &Value, path: &Path, o: &OriginOptions) -> Result<Origin, Error> {
    let r = result_origin(path, json)?;
    Ok(Origin {
        host: o
            .host
            .clone()
            .or(r.host)
            .ok_or_else(|| host_missing(path))?,
        trace_id: o.run.clone().unwrap_or_else(|| default_trace_id(path)),
        kernel: o.kernel.clone().or(r.kernel),
        start_wall_ns: r.start_wall_ns,
    })
}

/// Whether `path` holds a JSON result rather than a trace: its first byte that is not
/// white space is `{`.
pub fn is_json_result(path: &Path) -> Result<bool, Error> {
    use std::io::Read;
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

/// Reads a JSON result file (at most [`RESULT_LIMIT`] bytes).
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
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::input(
            path,
            format!("expected JSON (a jitterlab --json result): {e}"),
        )
    })
}
