//! `jitterlab view`: the text of what was written.

use std::io::{self, Write};

use crate::units::bytes;
use crate::view::Viewed;
use crate::{Render, Style};

impl Render for Viewed {
    const SCHEMA: &'static str = "jitterlab.view";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        write!(out, "{} ({}", self.output.display(), bytes(self.bytes))?;
        if self.schema == "jitterlab.analyze" {
            writeln!(
                out,
                "): {} CPU{}, {} task slices, {} wake-ups, {} IRQ and softirq spans",
                self.cpus,
                if self.cpus == 1 { "" } else { "s" },
                self.slices,
                self.wakes,
                self.spans
            )?;
        } else {
            writeln!(out, "): a {} result", self.schema)?;
        }
        if let Some(l) = &self.left_out {
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
}
