//! The output formats, one file per format, behind one trait, and the manager that
//! writes a command's outputs.
//!
//! | format | file | exporter | model |
//! |---|---|---|---|
//! | text tables | `text/` (one file per command's view) | [`Text`] | any [`Render`](crate::Render) model |
//! | JSON envelope | `json.rs` | [`Json`] | any [`Render`](crate::Render) model |
//! | SVG latency plot | `svg.rs` | [`Svg`] | [`LatencyPlot`](jitterlab_latency::plot::LatencyPlot) |
//! | cyclictest histogram | `cyclictest.rs` | [`Cyclictest`] | [`CyclictestHistogram`](jitterlab_latency::CyclictestHistogram) |
//! | event lines, text or JSON | `events.rs` | [`Events`], [`EventsJson`] | [`EventLine`], one event (streaming) |
//! | HTML report | `html.rs` | [`Html`] | [`AnalyzeReport`](jitterlab_analyze::AnalyzeReport) with its timeline, [`LatencyReport`](jitterlab_latency::LatencyReport), [`ExperimentReport`](jitterlab_experiment::ExperimentReport), a [`SavedResult`] |
//! | Chrome/Perfetto JSON | `perfetto.rs` | [`PerfettoWriter`] | the state machine's intervals (streaming) |
//! | Perfetto protobuf (.pftrace) | `pftrace.rs` (`protobuf.rs`: the encoding) | [`PftraceWriter`] | the trace's events (streaming) |
//!
//! Every format that writes a whole model implements [`Exporter`]; an
//! [`ExportManager`] holds a command's outputs, each an exporter bound to its model and
//! to a [`Target`] (a file or stdout), and writes them all in one call:
//!
//! ```no_run
//! # fn demo(report: &jitterlab_latency::LatencyReport,
//! #         plot: &jitterlab_latency::plot::LatencyPlot,
//! #         hist: &jitterlab_latency::CyclictestHistogram) -> Result<(), jitterlab_render::ExportError> {
//! use jitterlab_render::{Cyclictest, ExportManager, Json, Style, Svg, Target, Text};
//! let mut outputs = ExportManager::new();
//! outputs
//!     .add(Json, report, Target::file("run.json"))
//!     .add(Svg, plot, Target::file("run.svg"))
//!     .add(Cyclictest, hist, Target::file("run.hist"))
//!     .add(Text(Style::plain()), report, Target::Stdout);
//! outputs.write_all()
//! # }
//! ```
//!
//! Streaming formats are written while the input is read, so that memory does not grow
//! with a trace: [`Events`] is called once per event by the command's read loop, and
//! [`PerfettoWriter`] is a [`Sink`](jitterlab_analyze::Sink) of the analysis state
//! machine, opened on a [`Target::create`] stream and closed with
//! [`PerfettoWriter::finish`]. They share the targets, not the manager.
//!
//! Exporters only lay out and convert units: the models they take (a plot's bins, a
//! histogram's rows, a report's percentiles) are computed by the crates that own them.
//! The HTML report ([`Html`], `html.rs`) is one more exporter: it writes one
//! self-contained file with the viewer (`web/`) and the model's JSON and timeline columns
//! embedded (docs/html.md).

mod cyclictest;
mod events;
mod html;
mod htmltext;
mod json;
mod perfetto;
mod pftrace;
mod protobuf;
mod spill;
mod svg;
pub(crate) mod text;

use std::fmt;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use jitterlab_trace::output::{check_output, OutputFile};

pub use cyclictest::{write_cyclictest_histogram, Cyclictest};
pub use events::{write_event_line, EventLine, Events, EventsJson};
pub use html::{Compared, Html, HtmlModel, SavedResult, HTML_FORMAT};
pub use htmltext::html_block_text;
pub use json::Json;
pub use perfetto::{PerfettoCounts, PerfettoWriter};
pub use pftrace::{PftraceCounts, PftraceTables, PftraceWriter, BUNDLE_EVENTS};
pub use spill::{PageSpill, PageWork, CHUNK_ROWS};
pub use svg::{write_latency_plot, Svg};
pub use text::{AuditSummary, Text};

/// `s` with `&`, `<`, `>` and `"` escaped, for the text and attributes of the SVG and
/// HTML outputs.
pub(crate) fn escape_markup(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An output format for models of type `M`.
pub trait Exporter<M: ?Sized> {
    /// Writes `model` to `out`.
    fn write(&self, model: &M, out: &mut dyn Write) -> io::Result<()>;
}

impl<M: ?Sized, E: Exporter<M> + ?Sized> Exporter<M> for &E {
    fn write(&self, model: &M, out: &mut dyn Write) -> io::Result<()> {
        (**self).write(model, out)
    }
}

/// Where an output goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Standard output.
    Stdout,
    /// Standard error (a summary, when the command's data goes to stdout).
    Stderr,
    /// A file: written under a temporary name and renamed over it when complete, or
    /// copied through into it when it is a FIFO or a device
    /// ([`jitterlab_trace::output::OutputFile`]).
    File(PathBuf),
}

impl Target {
    /// A file.
    pub fn file(path: impl Into<PathBuf>) -> Target {
        Target::File(path.into())
    }

    /// A command-line argument: `-` is stdout, anything else a file.
    pub fn from_arg(arg: &Path) -> Target {
        if arg.as_os_str() == "-" {
            Target::Stdout
        } else {
            Target::File(arg.to_path_buf())
        }
    }

    /// Opens the target for writing, buffered; [`Opened::finish`] completes it. A
    /// target that is one of the command's inputs (a file, or stdout redirected into
    /// one) is refused ([`jitterlab_trace::output::check_output`]).
    pub fn create(&self) -> io::Result<Opened> {
        Ok(match self {
            Target::Stdout => {
                check_output(Path::new("-"))
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                Opened::Stdout(Counted {
                    out: BufWriter::with_capacity(1 << 16, Box::new(io::stdout())),
                    bytes: 0,
                })
            }
            Target::Stderr => Opened::Stdout(Counted {
                out: BufWriter::with_capacity(1 << 16, Box::new(io::stderr())),
                bytes: 0,
            }),
            Target::File(path) => {
                Opened::File(BufWriter::with_capacity(1 << 16, OutputFile::create(path)?))
            }
        })
    }
}

/// Standard output (or error), counting what is written to it.
pub struct Counted {
    out: BufWriter<Box<dyn Write>>,
    bytes: u64,
}

/// An open [`Target`].
pub enum Opened {
    /// Standard output or error.
    Stdout(Counted),
    /// A file, complete once finished.
    File(BufWriter<OutputFile>),
}

impl Opened {
    /// Flushes, and puts a file in place; a target dropped unfinished leaves no file.
    /// Returns the bytes written to the target (what a FIFO's reader got, not what the
    /// FIFO's size says).
    pub fn finish(self) -> io::Result<u64> {
        match self {
            Opened::Stdout(mut w) => w.out.flush().map(|()| w.bytes),
            Opened::File(w) => {
                let file = w.into_inner().map_err(|e| e.into_error())?;
                file.commit()
            }
        }
    }
}

impl Write for Opened {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Opened::Stdout(w) => {
                let n = w.out.write(buf)?;
                w.bytes += n as u64;
                Ok(n)
            }
            Opened::File(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Opened::Stdout(w) => w.out.flush(),
            Opened::File(w) => w.flush(),
        }
    }
}

/// An output path as errors name it: `-` is "standard output".
pub fn named_output(path: &Path) -> PathBuf {
    if path.as_os_str() == "-" {
        PathBuf::from("standard output")
    } else {
        path.to_path_buf()
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Stdout => f.write_str("standard output"),
            Target::Stderr => f.write_str("standard error"),
            Target::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// An output that could not be written.
#[derive(Debug)]
pub struct ExportError {
    /// Where it was going.
    pub target: Target,
    /// Why it failed.
    pub source: io::Error,
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write {}: {}", self.target, self.source)
    }
}

impl std::error::Error for ExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// A format bound to its model: writes it to a stream.
type Bound<'a> = Box<dyn Fn(&mut dyn Write) -> io::Result<()> + 'a>;

/// One output: a format bound to its model, and where it goes.
struct Export<'a> {
    target: Target,
    write: Bound<'a>,
}

/// A command's outputs: each an exporter, the model it writes and its target. Models
/// are borrowed, so one model may go to several formats.
#[derive(Default)]
pub struct ExportManager<'a> {
    exports: Vec<Export<'a>>,
}

impl<'a> ExportManager<'a> {
    /// No outputs yet.
    pub fn new() -> ExportManager<'a> {
        ExportManager {
            exports: Vec::new(),
        }
    }

    /// Adds an output: `model` written by `exporter` to `target`.
    pub fn add<M, E>(&mut self, exporter: E, model: &'a M, target: Target) -> &mut Self
    where
        M: ?Sized,
        E: Exporter<M> + 'a,
    {
        self.exports.push(Export {
            target,
            write: Box::new(move |out| exporter.write(model, out)),
        });
        self
    }

    /// The targets, in the order they are written.
    pub fn targets(&self) -> impl Iterator<Item = &Target> {
        self.exports.iter().map(|e| &e.target)
    }

    /// Whether no output was added.
    pub fn is_empty(&self) -> bool {
        self.exports.is_empty()
    }

    /// Writes every output in the order added (a file is replaced only when its turn
    /// comes, and only once complete), stopping at the first that fails.
    pub fn write_all(&self) -> Result<(), ExportError> {
        for e in &self.exports {
            let fail = |source| ExportError {
                target: e.target.clone(),
                source,
            };
            let mut out = e.target.create().map_err(fail)?;
            (e.write)(&mut out).map_err(fail)?;
            out.finish().map_err(fail)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Render, Style};
    use serde::Serialize;

    #[derive(Serialize)]
    struct Model {
        n: u32,
    }

    impl Render for Model {
        const SCHEMA: &'static str = "jitterlab.test";
        fn text(&self, out: &mut dyn Write, _style: &Style) -> io::Result<()> {
            writeln!(out, "n = {}", self.n)
        }
    }

    #[test]
    fn the_manager_writes_each_output_to_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.json"), dir.path().join("a.txt"));
        let model = Model { n: 7 };
        let mut m = ExportManager::new();
        m.add(Json, &model, Target::file(&a))
            .add(Text(Style::plain()), &model, Target::file(&b));
        assert_eq!(m.targets().count(), 2);
        m.write_all().unwrap();
        let json = std::fs::read_to_string(&a).unwrap();
        assert!(json.contains("\"schema\": \"jitterlab.test\""), "{json}");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "n = 7\n");
    }

    #[test]
    fn a_failed_output_names_its_target() {
        let model = Model { n: 1 };
        let mut m = ExportManager::new();
        let bad = Path::new("/nonexistent-dir-of-jitterlab/x.json");
        m.add(Json, &model, Target::from_arg(bad));
        let err = m.write_all().unwrap_err();
        assert_eq!(err.target, Target::file(bad));
        assert!(err
            .to_string()
            .starts_with("cannot write /nonexistent-dir-of-jitterlab/x.json: "));
        assert_eq!(Target::from_arg(Path::new("-")), Target::Stdout);
    }
}
