//! `jitterlab view`: the text of what was written.

use std::io::{self, Write};

use crate::units::bytes;
use crate::view::{Shown, Viewed};
use crate::{Render, Style};

impl Render for Viewed {
    const SCHEMA: &'static str = "jitterlab.view";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        write!(out, "{} ({})", self.output.display(), bytes(self.bytes))?;
        match &self.compared {
            None => {
                write!(out, ": ")?;
                shown(&self.shown, out, style)
            }
            Some(b) => {
                writeln!(out, ": two inputs compared")?;
                for (side, s) in [("A", &self.shown), ("B", b.as_ref())] {
                    write!(out, "  {side} {}: ", s.name.as_deref().unwrap_or("-"))?;
                    shown(s, out, style)?;
                }
                Ok(())
            }
        }
    }
}

/// What the report shows of one input, and what it left out.
fn shown(s: &Shown, out: &mut dyn Write, style: &Style) -> io::Result<()> {
    if s.schema == "jitterlab.analyze" {
        writeln!(
            out,
            "{} CPU{}, {} task slices, {} wake-ups, {} IRQ and softirq spans",
            s.cpus,
            if s.cpus == 1 { "" } else { "s" },
            s.slices,
            s.wakes,
            s.spans
        )?;
    } else {
        writeln!(out, "a {} result", s.schema)?;
    }
    if let Some(l) = &s.left_out {
        let left = format!(
            "warning: more than --max-slices {}: {} task slices, {} spans and {} wake-ups after {:.6} s are left out (the page says so); narrow the window with --from/--to or --cpu, or raise --max-slices",
            l.max_slices,
            l.slices,
            l.irqs + l.softirqs,
            l.wakes,
            l.after as f64 / 1e9
        );
        writeln!(out, "{}", style.warn(&left))?;
    }
    Ok(())
}
