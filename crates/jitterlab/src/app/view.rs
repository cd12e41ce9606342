//! `jitterlab view`: a trace, or a result saved with `--json` (`latency`, `analyze`,
//! `experiment`, `audit`), as one HTML report: the input opened, a trace's one pass
//! (`analyze` with its timeline kept), the model handed to render's [`write_html`].

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use jitterlab_analyze::{analyze_trace, Options};
use jitterlab_render::view::{write_html, Viewed};
use jitterlab_render::{Html, SavedResult};
use jitterlab_trace::Trace;

use super::Error;

/// A saved result is read whole; past this, it is refused.
const SAVED_LIMIT: u64 = 512 << 20;

/// What `view` reads.
pub enum Input {
    /// A trace (any format the trace crate reads).
    Trace(Trace),
    /// A result saved with `--json`.
    Saved(SavedResult),
}

impl Input {
    /// Opens `path`: a JSON object (its first non-blank byte is `{`) is a saved result,
    /// anything else a trace, of the .dat buffer `buffer` when given; a folder is a
    /// trace (an LTTng one).
    pub fn open(path: &Path, lenient: bool, buffer: Option<&str>) -> Result<Input, Error> {
        let io = |cause| Error::Io {
            path: path.to_path_buf(),
            cause,
        };
        if path.is_dir() {
            return Ok(Input::Trace(Trace::open_buffer(path, lenient, buffer)?));
        }
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
            return Err(Error::Invalid(format!(
                "{}: more than {} MiB of JSON; expected a result saved with --json",
                path.display(),
                SAVED_LIMIT >> 20
            )));
        }
        SavedResult::from_json(&path.display().to_string(), &bytes)
            .map(Input::Saved)
            .map_err(Error::Invalid)
    }
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
            .and_then(|input| view(&input, &Html::titled(title), &html, Options::default()));
        if let Err(e) = written {
            failed.push(format!("{}: {e}", html.display()));
        }
    }
    failed
}

/// `jitterlab view`: `input` as the HTML report `page` in `output`. A trace goes
/// through `analyze` with `options` (its timeline kept, as `options.timeline` or the
/// default limits say).
pub fn view(input: &Input, page: &Html, output: &Path, options: Options) -> Result<Viewed, Error> {
    let io = |e: jitterlab_render::ExportError| Error::Io {
        path: jitterlab_render::named_output(output),
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
            viewed.bytes = write_html(&report, page, output).map_err(io)?;
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
            viewed.bytes = write_html(saved, page, output).map_err(io)?;
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
