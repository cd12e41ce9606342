//! `jitterlab view`: a trace, or a result saved with `--json` (`latency`, `analyze`,
//! `experiment`, `audit`), as one HTML report ([`Html`]), and the model of what was written
//! ([`Viewed`]; its text is in `export/text/view.rs`).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use jitterlab_analyze::analysis::timeline::LeftOut;
use jitterlab_analyze::{analyze_trace, Options};
use jitterlab_trace::Trace;
use serde::Serialize;

use crate::export::{Exporter, Html, HtmlModel, SavedResult, Target};

/// The schemas of saved results the viewer shows.
pub const VIEWABLE: [&str; 4] = [
    "jitterlab.latency",
    "jitterlab.analyze",
    "jitterlab.experiment",
    "jitterlab.audit",
];

/// A saved result is read whole; past this, it is refused.
const SAVED_LIMIT: u64 = 512 << 20;

/// What `view` reads.
pub enum Input {
    /// A trace (any format the trace crate reads).
    Trace(Trace),
    /// A result saved with `--json`.
    Saved(SavedResult),
}

/// Why a report was not written.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The input is not something the viewer shows.
    #[error("{0}")]
    Invalid(String),
    /// Reading the trace failed.
    #[error(transparent)]
    Trace(#[from] jitterlab_trace::Error),
    /// Reading the input or writing the report failed.
    #[error("{}: {cause}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        cause: io::Error,
    },
}

impl Input {
    /// Opens `path`: a JSON object (its first non-blank byte is `{`) is a saved result,
    /// anything else a trace, of the .dat buffer `buffer` when given.
    pub fn open(path: &Path, lenient: bool, buffer: Option<&str>) -> Result<Input, ViewError> {
        let io = |cause| ViewError::Io {
            path: path.to_path_buf(),
            cause,
        };
        let mut head = [0u8; 64];
        let n = File::open(path)
            .and_then(|mut f| f.read(&mut head))
            .map_err(io)?;
        if head[..n].iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Ok(Input::Trace(Trace::open_buffer(path, lenient, buffer)?));
        }
        let mut bytes = Vec::new();
        File::open(path)
            .and_then(|f| f.take(SAVED_LIMIT + 1).read_to_end(&mut bytes))
            .map_err(io)?;
        if bytes.len() as u64 > SAVED_LIMIT {
            return Err(ViewError::Invalid(format!(
                "{}: more than {} MiB of JSON; expected a result saved with --json",
                path.display(),
                SAVED_LIMIT >> 20
            )));
        }
        SavedResult::from_json(&path.display().to_string(), &bytes)
            .map(Input::Saved)
            .map_err(ViewError::Invalid)
    }
}

impl SavedResult {
    /// A result saved by `--json`, named `name` in errors: an envelope of one of the
    /// [`VIEWABLE`] schemas at version 1.
    pub fn from_json(name: &str, bytes: &[u8]) -> Result<SavedResult, String> {
        let envelope: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            let at = format!(" at line {} column {}", e.line(), e.column());
            let what = e.to_string();
            format!(
                "{name}: line {}, column {}: {}; expected a result saved with --json",
                e.line(),
                e.column(),
                what.strip_suffix(&at).unwrap_or(&what)
            )
        })?;
        jitterlab_parquet::check_envelope(&envelope, &VIEWABLE)
            .map_err(|e| format!("{name}: {e}"))?;
        Ok(SavedResult { envelope })
    }
}

/// What `view` wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Viewed {
    /// The report.
    pub output: PathBuf,
    /// Its size, bytes.
    pub bytes: u64,
    /// The schema of the result shown (`jitterlab.analyze` for a trace).
    pub schema: String,
    /// CPUs in the timeline (0 for a saved result).
    pub cpus: usize,
    /// Task slices in the timeline.
    pub slices: u64,
    /// Wake-ups in the timeline.
    pub wakes: u64,
    /// IRQ and softirq spans in the timeline.
    pub spans: u64,
    /// What did not fit under `max_slices`.
    pub left_out: Option<LeftOut>,
}

/// Writes `model` as an HTML report titled `title` to `output` (`-`: stdout); returns
/// the bytes written.
pub fn write_html<M: HtmlModel>(
    model: &M,
    title: &str,
    output: &Path,
) -> Result<u64, crate::ExportError> {
    let target = Target::from_arg(output);
    let err = |source| crate::ExportError {
        target: target.clone(),
        source,
    };
    let mut out = target.create().map_err(err)?;
    Html::titled(title).write(model, &mut out).map_err(err)?;
    out.finish().map_err(err)
}

/// Each trace's report beside it (`T.dat` -> `T.dat.html`), as `jitterlab view`
/// writes it, for the pages that link to their traces' timelines (an experiment's
/// traced runs, an audit's phases). Returns what could not be written, in words.
pub fn reports_beside(traces: &[PathBuf]) -> Vec<String> {
    let mut failed = Vec::new();
    for trace in traces {
        let html = trace.with_extension("dat.html");
        let title = trace.file_name().unwrap_or_default().to_string_lossy();
        let written = Input::open(trace, true, None)
            .and_then(|input| view(&input, &title, &html, Options::default()));
        if let Err(e) = written {
            failed.push(format!("{}: {e}", html.display()));
        }
    }
    failed
}

/// `jitterlab view`: `input` as an HTML report in `output`. A trace goes through
/// `analyze` with `options` (its timeline kept, as `options.timeline` or the default
/// limits say).
pub fn view(
    input: &Input,
    title: &str,
    output: &Path,
    options: Options,
) -> Result<Viewed, ViewError> {
    let io = |e: crate::ExportError| ViewError::Io {
        path: crate::export::named_output(output),
        cause: e.source,
    };
    let mut viewed = Viewed {
        output: output.to_path_buf(),
        bytes: 0,
        schema: String::new(),
        cpus: 0,
        slices: 0,
        wakes: 0,
        spans: 0,
        left_out: None,
    };
    match input {
        Input::Trace(trace) => {
            let options = Options {
                timeline: Some(options.timeline.unwrap_or_default()),
                ..options
            };
            let report = analyze_trace(trace, options, None)?;
            viewed.bytes = write_html(&report, title, output).map_err(io)?;
            viewed.schema = "jitterlab.analyze".into();
            if let Some(t) = &report.timeline {
                viewed.cpus = t.cpus.len();
                viewed.slices = t.slices() as u64;
                viewed.wakes = t.cpus.iter().map(|c| c.wakes.lat.len() as u64).sum();
                viewed.spans = t
                    .cpus
                    .iter()
                    .map(|c| (c.irqs.start.len() + c.softirqs.start.len()) as u64)
                    .sum();
                viewed.left_out = t.left_out;
            }
        }
        Input::Saved(saved) => {
            viewed.bytes = write_html(saved, title, output).map_err(io)?;
            viewed.schema = saved
                .envelope
                .get("schema")
                .and_then(|s| s.as_str())
                .unwrap_or_default()
                .to_string();
        }
    }
    Ok(viewed)
}
