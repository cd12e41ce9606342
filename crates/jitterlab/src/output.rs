//! Where and how results are written: stdout or a file, text or JSON.

use std::io::{self, BufWriter, IsTerminal, Write};

use jitterlab_render::{render, Format, Render, Style};

use crate::cli::Color;

/// Picks text or JSON, and colour for text.
pub fn format(json: bool, color: Color) -> Format {
    if json {
        return Format::Json;
    }
    let color = match color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    Format::Text(Style { color })
}

/// Writes a result to stdout.
pub fn emit<T: Render>(value: &T, format: Format) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    render(value, format, &mut out)?;
    out.flush()
}

/// Tells stderr what the reader found odd in `trace` (layout warnings) and, with
/// `buffers`, which buffers of a .dat are not read.
pub fn trace_notes(trace: &jitterlab_trace::Trace, buffers: bool) {
    let note = buffers.then(|| trace.buffer_note()).flatten();
    for n in trace.notes().into_iter().chain(note) {
        eprintln!("jitterlab: warning: {n}");
    }
}
