//! Renderers of jitterlab's result models.
//!
//! Every result model — a `Serialize` struct of the host, trace, analyze, latency and
//! experiment crates (`show`, `pin`, `isolate`, `record`, `report --stats`, `analyze`,
//! `latency`, `load`, `experiment` ...) — is written for people as aligned text tables,
//! colour only when [`Style::color`] is on, or for machines as JSON inside a versioned
//! envelope:
//!
//! ```json
//! {"schema": "jitterlab.show.irqs", "version": 1, "producer": "jitterlab 0.1.0", "data": { ... }}
//! ```
//!
//! `schema` names the shape of `data`; `version` is raised whenever a field is
//! removed or changes meaning (adding a field does not raise it); `producer` names the
//! jitterlab version that wrote it.
//!
//! Beside text and JSON the crate writes the SVG plot and cyclictest's histogram of a
//! latency run, `trace-cmd report`-style event lines, and Chrome trace-event JSON for
//! Perfetto, streamed from the analysis state machine. Each format is one file of the
//! `export` module (`src/export/`) behind one trait, [`Exporter`]; an [`ExportManager`]
//! writes a command's outputs (files and stdout) in one call.
//!
//! ```
//! use jitterlab_render::{Col, Style, Table};
//! let mut t = Table::new([Col::left("CPU"), Col::right("IRQS")]);
//! t.row(["0", "24"]);
//! let mut out = Vec::new();
//! t.write(&mut out, &Style::plain()).unwrap();
//! assert_eq!(String::from_utf8(out).unwrap(), "CPU  IRQS\n0      24\n");
//! ```
//!
//! [`stream`] writes the events `report` prints from a source it is handed, as they come;
//! [`view`] writes the HTML report: the viewer under `web/` and the model inside one file
//! (docs/html.md); [`convert`](mod@convert) holds the model of what `convert` wrote.
//!
//! What it does not do: renderers only lay out and convert units (ns to `12.3 us`,
//! absent data to `-`); they compute no statistics (percentiles, histograms, plot bins
//! and verdicts come with the models), open no input, run no pass over a trace and draw
//! no progress: the binary's `app` module opens inputs and drives the engine's pass
//! into the writers here (Perfetto JSON and protobuf, the HTML page). Nothing here
//! touches the host.

#![deny(missing_docs)]

pub mod convert;
mod export;
pub mod stream;
mod table;
pub mod units;
pub mod view;

use std::io::{self, Write};

use serde::Serialize;

pub use convert::Conversion;
pub use export::{
    html_block_text, write_cyclictest_histogram, write_event_line, write_latency_plot,
    AuditSummary, Compared, Cyclictest, EventLine, Events, EventsJson, ExportError, ExportManager,
    Exporter, Html, HtmlModel, Json, Opened, PageSpill, PageWork, PerfettoCounts, PerfettoWriter,
    SavedResult, Svg, Target, Text, CHUNK_ROWS, HTML_FORMAT,
};
pub use export::{named_output, PftraceCounts, PftraceTables, PftraceWriter, BUNDLE_EVENTS};
pub use table::{Align, Col, Table};

/// Colour and layout choices for text output.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    /// Use ANSI colours (only on a terminal).
    pub color: bool,
}

impl Style {
    /// No colour.
    pub fn plain() -> Style {
        Style { color: false }
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.color && !s.is_empty() {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// Bold (headers).
    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }

    /// Yellow (warnings).
    pub fn warn(&self, s: &str) -> String {
        self.paint("33", s)
    }

    /// Red (failures).
    pub fn bad(&self, s: &str) -> String {
        self.paint("31", s)
    }

    /// Green (good state, isolation).
    pub fn good(&self, s: &str) -> String {
        self.paint("32", s)
    }

    /// Dim (secondary detail).
    pub fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
}

/// A result model that can be rendered as text and as JSON.
pub trait Render: Serialize {
    /// The schema name in the JSON envelope, e.g. `jitterlab.show.irqs`.
    const SCHEMA: &'static str;
    /// The schema version.
    const VERSION: u32 = 1;
    /// Writes the human form.
    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()>;
}

/// Text or JSON, as a command's `--json` and `--color` choose: the [`Text`] or [`Json`]
/// exporter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Tables for people.
    Text(Style),
    /// The JSON envelope, pretty-printed.
    Json,
}

impl<M: Render> Exporter<M> for Format {
    fn write(&self, model: &M, out: &mut dyn Write) -> io::Result<()> {
        match *self {
            Format::Text(style) => Text(style).write(model, out),
            Format::Json => Json.write(model, out),
        }
    }
}

/// Writes `value` in `format`: the same as `format.write(value, out)`.
pub fn render<T: Render>(value: &T, format: Format, out: &mut dyn Write) -> io::Result<()> {
    format.write(value, out)
}

impl PartialEq for Style {
    fn eq(&self, other: &Style) -> bool {
        self.color == other.color
    }
}

impl Eq for Style {}
