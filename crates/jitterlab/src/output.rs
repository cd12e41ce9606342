//! Where and how results are written.

use std::io::{self, IsTerminal, Write};

use jitterlab_report::{render, Format, Render, Style};

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
pub fn emit<T: Render>(value: &T, format: Format) -> anyhow::Result<()> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    render(value, format, &mut out)?;
    out.flush()?;
    Ok(())
}

/// Whether an error is a closed stdout (`jitterlab show | head`), which is not a failure.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
