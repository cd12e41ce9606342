//! `jitterlab convert`: the text of what was written.

use std::io::{self, Write};

use crate::convert::Conversion;
use crate::{Render, Style};

impl Render for Conversion {
    const SCHEMA: &'static str = "jitterlab.convert";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        writeln!(
            out,
            "{} ({}) -> {} ({}), {} bytes",
            self.input, self.input_format, self.output, self.output_format, self.bytes
        )?;
        if let Some(p) = &self.perfetto {
            writeln!(
                out,
                "{} CPUs: {} task slices, {} IRQ slices, {} softirq slices, {} wake-up arrows, {} markers, {} lost-event marks",
                p.cpus, p.task_slices, p.irq_slices, p.softirq_slices, p.wakeups, p.markers, p.lost
            )?;
        }
        if let Some(p) = &self.pftrace {
            writeln!(
                out,
                "{} CPUs: {} events in {} bundles ({} sched_switch, {} sched_waking, {} IRQ, {} softirq), {} processes and {} threads named, {} events without a Perfetto message skipped, {} bundles after lost events",
                p.cpus, p.events, p.bundles, p.sched_switch, p.sched_waking, p.irq, p.softirq, p.processes, p.threads, p.skipped, p.lost
            )?;
        }
        for w in &self.warnings {
            writeln!(out, "{}", style.warn(&format!("warning: {w}")))?;
        }
        Ok(())
    }
}
