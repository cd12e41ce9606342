//! `jitterlab analyze`: the report of a trace, one file per section.

mod blame;
mod cpus;
mod functions;
mod irqs;
mod summary;
mod tasks;

use std::io::{self, Write};

use jitterlab_analyze::{AnalyzeReport, Filter, Stats};

use crate::units::duration_ns;
use crate::{Col, Render, Style};

impl Render for AnalyzeReport {
    const SCHEMA: &'static str = "jitterlab.analyze";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let cpus = self
            .source
            .cpus
            .map_or_else(String::new, |n| format!(", {n} CPUs"));
        writeln!(out, "{}{cpus}", self.source.format)?;
        if let Some(f) = &self.filter {
            filter(f, out, style)?;
        }
        if let Some(s) = &self.summary {
            summary::write(s, out, style)?;
        }
        if let Some(c) = &self.cpus {
            cpus::write(c, out, style)?;
        }
        if let Some(t) = &self.tasks {
            tasks::write(t, self.top, out, style)?;
        }
        if let Some(i) = &self.irqs {
            irqs::write(i, self.top, out, style)?;
        }
        if let Some(b) = &self.blame {
            blame::write(b, out, style)?;
        }
        if let Some(f) = &self.functions {
            functions::write(f, self.top, out, style)?;
        }
        for w in &self.warnings {
            writeln!(out, "{}", style.warn(&format!("warning: {w}")))?;
        }
        Ok(())
    }
}

/// What the sections after the summary were folded with.
fn filter(f: &Filter, out: &mut dyn Write, style: &Style) -> io::Result<()> {
    let mut parts = Vec::new();
    match (f.from_ns, f.to_ns) {
        (Some(a), Some(b)) => parts.push(format!("{} s .. {} s", ts(a), ts(b))),
        (Some(a), None) => parts.push(format!("from {} s", ts(a))),
        (None, Some(b)) => parts.push(format!("to {} s", ts(b))),
        (None, None) => {}
    }
    if let Some(c) = &f.cpus {
        parts.push(format!("CPUs {c}"));
    }
    if let Some(p) = f.pid {
        parts.push(format!("pid {p}"));
    }
    writeln!(
        out,
        "{}",
        style.warn(&format!(
            "filtered: {} (the summary is of the whole trace)",
            parts.join(", ")
        ))
    )
}

/// A section heading.
fn heading(out: &mut dyn Write, style: &Style, title: &str) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "{}", style.bold(&format!("== {title} ==")))
}

/// A trace timestamp as the kernel prints it: seconds with microseconds.
fn ts(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1_000)
}

/// A duration, or `-`.
fn dur(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_string(), duration_ns)
}

/// The latency columns of the wake-up tables: the tasks', the IRQ and softirq chains'.
pub(super) fn latency_columns() -> [Col; 6] {
    [
        Col::right("MIN"),
        Col::right("AVG"),
        Col::right("P50"),
        Col::right("P99"),
        Col::right("MAX"),
        Col::right("MAX AT (s)"),
    ]
}

/// A latency's statistics in [`latency_columns`] (`-` in each when there are none).
pub(super) fn latency_cells(l: Option<Stats>) -> [String; 6] {
    [
        dur(l.map(|l| l.min_ns)),
        dur(l.map(|l| l.avg_ns)),
        dur(l.map(|l| l.p50_ns)),
        dur(l.map(|l| l.p99_ns)),
        dur(l.map(|l| l.max_ns)),
        l.map_or_else(|| "-".into(), |l| ts(l.max_at_ns)),
    ]
}

/// `part` as a percentage of `whole`, one decimal.
fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// A kernel priority for people: `rt 90` (0..=99 are real-time: 99 - prio), `nice 0`
/// (100..=139: prio - 120), `dl` (-1: deadline).
fn prio(p: Option<i32>) -> String {
    match p {
        None => "-".to_string(),
        Some(p) if p < 0 => "dl".to_string(),
        Some(p) if p < 100 => format!("rt {}", 99 - p),
        Some(p) => format!("nice {}", p - 120),
    }
}

/// Omitted-rows note under a table shown truncated.
fn more(
    out: &mut dyn Write,
    style: &Style,
    shown: usize,
    total: usize,
    what: &str,
) -> io::Result<()> {
    if total > shown {
        writeln!(
            out,
            "{}",
            style.dim(&format!(
                "({} more {what}; all in --json, or raise --top)",
                total - shown
            ))
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(ts(976_348_312_873), "976.348312");
        assert_eq!(prio(Some(9)), "rt 90");
        assert_eq!(prio(Some(120)), "nice 0");
        assert_eq!(prio(Some(100)), "nice -20");
        assert_eq!(pct(1, 3), "33.3%");
        assert_eq!(dur(None), "-");
    }
}
