//! `jitterlab convert`: what was written.

use std::io::{self, Write};

use serde::Serialize;

use crate::export::PerfettoCounts;
use crate::{Render, Style};

/// The result of a conversion.
#[derive(Clone, Debug, Serialize)]
pub struct Conversion {
    /// The input file.
    pub input: String,
    /// Its format, as the reader describes it.
    pub input_format: String,
    /// The output file.
    pub output: String,
    /// Its format.
    pub output_format: String,
    /// Bytes written.
    pub bytes: u64,
    /// What the Chrome JSON holds, for that output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perfetto: Option<PerfettoCounts>,
}

impl Render for Conversion {
    const SCHEMA: &'static str = "jitterlab.convert";

    fn text(&self, out: &mut dyn Write, _style: &Style) -> io::Result<()> {
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
        Ok(())
    }
}
