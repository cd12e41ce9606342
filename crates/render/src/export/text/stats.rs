//! `jitterlab report --stats`: events by type and per CPU, lost events.

use std::io::{self, Write};

use jitterlab_trace::stats::TraceStats;

use crate::units::duration_ns;
use crate::{Col, Render, Style, Table};

impl Render for TraceStats {
    const SCHEMA: &'static str = "jitterlab.report.stats";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let span = match (self.first_ts, self.last_ts) {
            (Some(a), Some(b)) => format!(
                "{}.{:06} s to {}.{:06} s ({})",
                a / 1_000_000_000,
                a % 1_000_000_000 / 1000,
                b / 1_000_000_000,
                b % 1_000_000_000 / 1000,
                duration_ns(b - a)
            ),
            _ => "-".into(),
        };
        writeln!(out, "{}: {}", self.file, self.format)?;
        writeln!(out, "{} events, {span}", self.total)?;
        if self.skipped > 0 {
            writeln!(
                out,
                "{}",
                style.warn(&format!("{} undecodable records skipped", self.skipped))
            )?;
        }
        let mut t = Table::new([Col::left("EVENT"), Col::right("COUNT")]);
        for e in &self.by_event {
            t.row([e.name.clone(), e.count.to_string()]);
        }
        t.write(out, style)?;
        writeln!(out)?;
        let mut t = Table::new([
            Col::right("CPU"),
            Col::right("EVENTS"),
            Col::right("LOST"),
            Col::left("FIRST"),
            Col::left("LAST"),
        ]);
        let ts = |t: Option<u64>| {
            t.map_or("-".into(), |t| {
                format!("{}.{:06}", t / 1_000_000_000, t % 1_000_000_000 / 1000)
            })
        };
        let lost = |l: Option<u64>| match l {
            Some(0) if !self.lost_recorded => "?".to_string(),
            Some(0) => "0".to_string(),
            Some(n) => style.bad(&super::lost_count(n)),
            None => style.bad("some"),
        };
        for c in &self.per_cpu {
            t.row([
                c.cpu.to_string(),
                c.events.to_string(),
                lost(c.lost),
                ts(c.first_ts),
                ts(c.last_ts),
            ]);
        }
        t.write(out, style)?;
        // Several buffers: the tables above add them up; here each on its own.
        if self.buffers.len() > 1 {
            writeln!(out)?;
            let mut t = Table::new([
                Col::left("BUFFER"),
                Col::right("CPU"),
                Col::right("EVENTS"),
                Col::right("LOST"),
                Col::left("FIRST"),
                Col::left("LAST"),
            ]);
            for b in &self.buffers {
                let name = if b.name.is_empty() {
                    "(top)".to_string()
                } else {
                    b.name.clone()
                };
                t.row([
                    name.clone(),
                    "all".into(),
                    b.total.to_string(),
                    lost(b.lost),
                    "".into(),
                    "".into(),
                ]);
                for c in &b.per_cpu {
                    t.row([
                        name.clone(),
                        c.cpu.to_string(),
                        c.events.to_string(),
                        lost(c.lost),
                        ts(c.first_ts),
                        ts(c.last_ts),
                    ]);
                }
            }
            t.write(out, style)?;
        }
        if !self.lost_recorded {
            writeln!(
                out,
                "{}",
                style.warn(&format!(
                    "lost events: unknown ({} does not record them)",
                    self.format
                ))
            )?;
        }
        Ok(())
    }
}
