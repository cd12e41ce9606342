//! `analyze`: the summary section.

use std::io::{self, Write};

use jitterlab_analyze::analysis::summary::Summary;

use super::{heading, ts};
use crate::units::duration_ns;
use crate::{Col, Style, Table};

pub(super) fn write(s: &Summary, out: &mut dyn Write, style: &Style) -> io::Result<()> {
    heading(out, style, "Summary")?;
    writeln!(
        out,
        "span {} ({} s .. {} s), {} events on {} CPUs, {} tasks, {} IRQs",
        duration_ns(s.span_ns),
        ts(s.start_ns),
        ts(s.end_ns),
        s.events,
        s.cpus,
        s.tasks,
        s.irqs.len()
    )?;
    let types: Vec<String> = s
        .events_by_type
        .iter()
        .map(|t| format!("{} {}", t.name, t.count))
        .collect();
    writeln!(out, "events: {}", types.join(", "))?;
    let per_cpu: Vec<String> = s
        .events_per_cpu
        .iter()
        .enumerate()
        .map(|(c, n)| format!("CPU {c}: {n}"))
        .collect();
    writeln!(out, "events per CPU: {}", per_cpu.join(", "))?;
    let lost: Vec<String> = s
        .lost_per_cpu
        .iter()
        .enumerate()
        .filter(|(_, l)| **l != Some(0))
        .map(|(c, l)| {
            format!(
                "CPU {c}: {}",
                l.map_or_else(
                    || "some (count unknown)".to_string(),
                    crate::export::text::lost_count,
                )
            )
        })
        .collect();
    if lost.is_empty() && !s.lost_recorded {
        writeln!(
            out,
            "{}",
            style.warn("lost events: unknown (this format does not record them)")
        )?;
    } else if lost.is_empty() {
        writeln!(out, "lost events: none")?;
    } else {
        writeln!(
            out,
            "{}",
            style.warn(&format!("lost events: {}", lost.join(", ")))
        )?;
    }
    if s.skipped > 0 {
        writeln!(
            out,
            "{}",
            style.warn(&format!("records skipped as undecodable: {}", s.skipped))
        )?;
    }
    if !s.irqs.is_empty() {
        let irqs: Vec<String> = s
            .irqs
            .iter()
            .map(|i| format!("{} {}", i.irq, i.name))
            .collect();
        writeln!(out, "IRQs: {}", irqs.join(", "))?;
    }
    writeln!(
        out,
        "wake-ups: {} measured ({} with a switch-in inferred from common_pid: upper bounds), {} of tasks already running, {} pending at the end",
        s.wakeups, s.wakeups_inferred, s.wakes_of_running, s.wakes_pending_at_end
    )?;
    if s.anomalies.is_empty() {
        return writeln!(out, "anomalies: none");
    }
    writeln!(
        out,
        "anomalies (corrections the analysis made; GUIDE.md, `jitterlab analyze`, explains each kind):"
    )?;
    let mut t = Table::new([
        Col::left("KIND"),
        Col::right("CPU"),
        Col::right("COUNT"),
        Col::right("FIRST AT (s)"),
    ]);
    for a in &s.anomalies {
        t.row([
            a.kind.name().to_string(),
            a.cpu.to_string(),
            crate::export::text::lost_count(a.count),
            ts(a.first_ns),
        ]);
    }
    t.write(out, style)
}
