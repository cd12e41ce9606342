//! Renderers of jitterlab's result models.
//!
//! Every result model (a `Serialize` struct of the host crate and, later, of the
//! analysis and latency crates) is written either for people — aligned tables,
//! colour only when [`Style::color`] is on — or for machines as JSON inside a
//! versioned envelope:
//!
//! ```json
//! {"schema": "jitterlab.show.irqs", "version": 1, "data": { ... }}
//! ```
//!
//! `schema` names the shape of `data`; `version` is raised whenever a field is
//! removed or changes meaning (adding a field does not raise it).
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
//! Renderers only lay out and convert units; they compute no statistics.

#![deny(missing_docs)]

mod analyze;
mod change;
mod convert;
mod events;
mod latency;
mod partition;
mod perfetto;
mod record;
mod show;
mod svg;
mod table;
pub mod units;

use std::io::{self, Write};

use serde::Serialize;

pub use convert::Conversion;
pub use events::write_event_line;
pub use latency::write_cyclictest_histogram;
pub use perfetto::{PerfettoCounts, PerfettoWriter};
pub use svg::write_latency_plot;
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

/// A result model that can be rendered.
pub trait Render: Serialize {
    /// The schema name in the JSON envelope, e.g. `jitterlab.show.irqs`.
    const SCHEMA: &'static str;
    /// The schema version.
    const VERSION: u32 = 1;
    /// Writes the human form.
    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()>;
}

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Tables for people.
    Text(Style),
    /// The JSON envelope, pretty-printed.
    Json,
}

#[derive(Serialize)]
struct Envelope<'a, T: Serialize> {
    schema: &'static str,
    version: u32,
    data: &'a T,
}

/// Writes `value` in `format`.
pub fn render<T: Render>(value: &T, format: Format, out: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Text(style) => value.text(out, &style),
        Format::Json => {
            let env = Envelope {
                schema: T::SCHEMA,
                version: T::VERSION,
                data: value,
            };
            serde_json::to_writer_pretty(&mut *out, &env)?;
            writeln!(out)
        }
    }
}

impl PartialEq for Style {
    fn eq(&self, other: &Style) -> bool {
        self.color == other.color
    }
}

impl Eq for Style {}
