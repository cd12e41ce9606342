//! `jitterlab record`: what was written and what was lost.

use std::io::{self, Write};

use jitterlab_host::tracefs::RecordSummary;

use crate::units::duration_ns;
use crate::{Col, Render, Style, Table};

impl Render for RecordSummary {
    const SCHEMA: &'static str = "jitterlab.record";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        writeln!(
            out,
            "{}: {}, {} bytes, {} of {} event types ({}){}",
            self.output,
            self.format,
            self.bytes,
            duration_ns(self.wall_ns),
            self.events.len(),
            self.stopped_by,
            if self.flight_recorder {
                ", flight recorder"
            } else {
                ""
            }
        )?;
        if let Some(exit) = &self.command_exit {
            writeln!(out, "command: {exit}")?;
        }
        let mut t = Table::new([
            Col::right("CPU"),
            Col::right("PAGES"),
            Col::right("EVENTS"),
            Col::right("OVERRUN"),
            Col::right("DROPPED"),
            Col::right("COMMIT OVERRUN"),
        ]);
        let lost = |n: u64| {
            if n > 0 {
                style.bad(&n.to_string())
            } else {
                "0".into()
            }
        };
        for c in &self.cpus {
            t.row([
                c.cpu.to_string(),
                c.pages.to_string(),
                c.events.to_string(),
                lost(c.overrun),
                lost(c.dropped),
                lost(c.commit_overrun),
            ]);
        }
        t.write(out, style)?;
        // A flight recorder overwrites by design: its older events are the ones it let
        // go, not a loss to warn of.
        let overwritten: u64 = self.cpus.iter().map(|c| c.overrun).sum();
        let total: u64 = self
            .cpus
            .iter()
            .map(|c| {
                c.dropped + c.commit_overrun + if self.flight_recorder { 0 } else { c.overrun }
            })
            .sum();
        if self.flight_recorder && overwritten > 0 {
            writeln!(
                out,
                "flight recorder: the file holds the last events before tracing stopped; {overwritten} older ones were overwritten"
            )?;
        }
        if total > 0 {
            writeln!(
                out,
                "{}",
                style.bad(&format!(
                    "warning: the kernel lost {total} events: raise --buffer-kb, trace fewer events or CPUs"
                ))
            )?;
        }
        Ok(())
    }
}
