//! `analyze`: the blame section.

use std::io::{self, Write};

use jitterlab_analyze::analysis::blame::{BlameSection, Reason, StepKind};

use super::{heading, prio, ts};
use crate::units::duration_ns;
use crate::{Col, Style, Table};

pub(super) fn write(s: &BlameSection, out: &mut dyn Write, style: &Style) -> io::Result<()> {
    heading(out, style, "Blame")?;
    if s.spikes.is_empty() {
        return writeln!(out, "no wake-up to blame");
    }
    writeln!(
        out,
        "what the woken task's CPU did from the waking (or a marked sample's due time) to the switch-in:"
    )?;
    for (i, p) in s.spikes.iter().enumerate() {
        writeln!(out)?;
        let why = match (p.reason, &p.marker) {
            (Reason::Marker, Some(m)) => format!("marked: \"{m}\""),
            _ => "worst".to_string(),
        };
        let lat = match p.latency_min_ns {
            Some(min) => format!("{} .. {}", duration_ns(min), duration_ns(p.latency_ns)),
            None => duration_ns(p.latency_ns),
        };
        writeln!(
            out,
            "{}",
            style.bold(&format!(
                "{}. {}-{} ({}) on CPU {}: {lat}, {}woken at {} s by {} [{why}]",
                i + 1,
                p.comm,
                p.tid,
                prio(Some(p.prio)),
                p.cpu,
                p.due_ns
                    .filter(|&d| d < p.waking_ns)
                    .map_or_else(String::new, |d| format!("due at {} s, ", ts(d))),
                ts(p.waking_ns),
                p.waker
            ))
        )?;
        let origin = p.due_ns.map_or(p.waking_ns, |d| d.min(p.waking_ns));
        writeln!(out, "   {}", style.warn(&p.verdict))?;
        let mut t = Table::new([Col::right("   FROM"), Col::right("FOR"), Col::left("WHAT")]);
        for step in &p.timeline {
            let what = match step.kind {
                StepKind::Task { tid: 0, .. } => format!("idle ({})", step.name),
                StepKind::Task { tid, prio: pr } => {
                    format!("task {}-{tid} ({})", step.name, prio(pr))
                }
                StepKind::Irq { irq } => format!("irq {irq} {}", step.name),
                StepKind::Softirq { .. } => format!("softirq {}", step.name),
                StepKind::Gap => "no events at all".to_string(),
                StepKind::Unrecorded { tid, .. } => {
                    format!(
                        "no events; {}-{tid} shows up current after, no switch-in recorded",
                        step.name
                    )
                }
            };
            t.row([
                format!("+{}", duration_ns(step.start_ns.saturating_sub(origin))),
                duration_ns(step.end_ns - step.start_ns),
                what,
            ]);
        }
        if !t.is_empty() {
            t.write(out, style)?;
        }
        if p.elided > 0 {
            writeln!(
                out,
                "{}",
                style.dim(&format!(
                    "   ({} shorter steps left out; all kinds in --json)",
                    p.elided
                ))
            )?;
        }
        if p.truncated {
            writeln!(
                out,
                "{}",
                style.dim("   (the CPU's history did not reach back to the waking)")
            )?;
        }
    }
    Ok(())
}
