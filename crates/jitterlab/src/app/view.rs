//! `jitterlab view`: a trace, or a result saved with `--json` (`latency`, `analyze`,
//! `experiment`, `audit`), as one HTML report: the input opened, a trace's one pass
//! (`analyze` with its timeline kept), the model handed to render's [`write_html`].

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use jitterlab_analyze::analysis::timeline::TimelineOptions;
use jitterlab_analyze::{analyze_trace, AnalyzeReport, Options};
use jitterlab_render::view::{write_html, Shown, Viewed};
use jitterlab_render::{Compared, Html, HtmlModel, PageSpill, SavedResult, CHUNK_ROWS};
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
    let shown = match input {
        Input::Trace(trace) => {
            let report = analyze_trace(trace, timeline_kept(options), None)?;
            let bytes = write_html(&report, page, output).map_err(io(output))?;
            return Ok(viewed(output, bytes, shown_trace(&report), None));
        }
        Input::Saved(saved) => saved,
    };
    let bytes = write_html(shown, page, output).map_err(io(output))?;
    Ok(viewed(output, bytes, shown_saved(shown), None))
}

/// `jitterlab view A B`: two traces (or saved `analyze` results) on one compare page
/// `page` in `output`, A the reference; each input is read once, A's then B's.
pub fn compare(
    inputs: [(&Input, &str); 2],
    page: &Html,
    output: &Path,
    options: Options,
) -> Result<Viewed, Error> {
    let [a, b] = inputs.map(|(input, name)| -> Result<_, Error> {
        let (analysis, mut shown) = match input {
            Input::Trace(trace) => {
                let report = analyze_trace(trace, timeline_kept(options.clone()), None)?;
                let shown = shown_trace(&report);
                (Analysis::Trace(Box::new(report)), shown)
            }
            Input::Saved(saved) => {
                let schema = saved.envelope.get("schema").and_then(|s| s.as_str());
                if schema != Some("jitterlab.analyze") {
                    return Err(Error::Invalid(format!(
                        "{name}: a {} result; a compare page takes two traces or two results of analyze --json",
                        schema.unwrap_or("saved")
                    )));
                }
                (Analysis::Saved(saved), shown_saved(saved))
            }
        };
        shown.name = Some(name.to_string());
        Ok((analysis, shown))
    });
    let ((a, a_shown), (b, b_shown)) = (a?, b?);
    let pair = Compared {
        a: a.model(),
        a_title: inputs[0].1.to_string(),
        b: b.model(),
        b_title: inputs[1].1.to_string(),
    };
    let bytes = write_html(&pair, page, output).map_err(io(output))?;
    Ok(viewed(output, bytes, a_shown, Some(b_shown)))
}

/// One side of a compare page: an analysis made here, or one saved.
enum Analysis<'a> {
    Trace(Box<AnalyzeReport>),
    Saved(&'a SavedResult),
}

impl Analysis<'_> {
    fn model(&self) -> &dyn HtmlModel {
        match self {
            Analysis::Trace(r) => r.as_ref(),
            Analysis::Saved(s) => *s,
        }
    }
}

/// The HTML report's chunk encoder, its compression on a thread of its own at the
/// lowest priority (render starts no thread; docs/html.md, "Chunks"). The thread ends
/// once the report is written. When none can be started, the chunks are compressed as
/// they come.
pub fn page_spill() -> Arc<PageSpill> {
    let (spill, work) = PageSpill::with_worker(CHUNK_ROWS);
    // Dropped unrun (no thread), the work leaves the compression to the spill.
    let _ = std::thread::Builder::new()
        .name("page".into())
        .spawn(move || {
            jitterlab_trace::lowest_priority();
            work.run();
        });
    Arc::new(spill)
}

/// `options` with the timeline kept (its limits as given, or the default ones), its
/// task slices and wake-ups compressed into the page's blocks as the pass goes.
fn timeline_kept(options: Options) -> Options {
    Options {
        timeline: Some(TimelineOptions {
            spill: Some(page_spill().spill_to()),
            ..options.timeline.unwrap_or_default()
        }),
        ..options
    }
}

fn io(output: &Path) -> impl Fn(jitterlab_render::ExportError) -> Error + '_ {
    move |e| Error::Io {
        path: jitterlab_render::named_output(output),
        cause: e.source,
    }
}

fn viewed(output: &Path, bytes: u64, shown: Shown, compared: Option<Shown>) -> Viewed {
    Viewed {
        output: output.to_path_buf(),
        bytes,
        shown,
        compared: compared.map(Box::new),
    }
}

/// What a trace's report shows: its timeline's counts.
fn shown_trace(report: &AnalyzeReport) -> Shown {
    let mut shown = Shown {
        schema: "jitterlab.analyze".into(),
        ..Shown::default()
    };
    if let Some(t) = &report.timeline {
        shown.cpus = t.cpus.len();
        shown.slices = t.slices() as u64;
        shown.wakes = t.wakes() as u64;
        shown.spans = t
            .cpus
            .iter()
            .map(|c| (c.irqs.start.len() + c.softirqs.start.len()) as u64)
            .sum();
        shown.left_out = t.left_out;
    }
    shown
}

/// What a saved result's report shows: its schema.
fn shown_saved(saved: &SavedResult) -> Shown {
    Shown {
        schema: saved
            .envelope
            .get("schema")
            .and_then(|s| s.as_str())
            .unwrap_or_default()
            .to_string(),
        ..Shown::default()
    }
}
