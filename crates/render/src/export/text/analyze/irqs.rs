//! `analyze`: IRQs, softirqs and IRQ -> task chains.

use std::io::{self, Write};

use jitterlab_analyze::analysis::irqs::{ChainRow, CpuCount, IrqSection};
use jitterlab_analyze::Bucket;

use super::{dur, heading, latency_cells, latency_columns, more, ts};
use crate::units::duration_ns;
use crate::{Col, Style, Table};

/// Width of the longest histogram bar.
const BAR: u64 = 40;

pub(super) fn write(
    s: &IrqSection,
    top: usize,
    out: &mut dyn Write,
    style: &Style,
) -> io::Result<()> {
    heading(out, style, "IRQs")?;
    if s.irqs.is_empty() {
        writeln!(out, "no irq_handler_entry/exit pairs in the trace")?;
    } else {
        writeln!(
            out,
            "handler duration = irq_handler_entry -> irq_handler_exit:"
        )?;
        let mut t = Table::new([
            Col::right("IRQ"),
            Col::left("NAME"),
            Col::right("COUNT"),
            Col::left("CPUS"),
            Col::right("MIN"),
            Col::right("AVG"),
            Col::right("P99"),
            Col::right("MAX"),
            Col::right("MAX AT (s)"),
            Col::right("WAKE-UPS"),
        ]);
        for r in s.irqs.iter().take(top) {
            let d = r.duration;
            t.row([
                r.irq.to_string(),
                r.name.clone(),
                r.count.to_string(),
                cpus(&r.cpus),
                dur(d.map(|d| d.min_ns)),
                dur(d.map(|d| d.avg_ns)),
                dur(d.map(|d| d.p99_ns)),
                dur(d.map(|d| d.max_ns)),
                d.map_or_else(|| "-".into(), |d| ts(d.max_at_ns)),
                r.wakeups.to_string(),
            ]);
        }
        t.write(out, style)?;
        more(out, style, top, s.irqs.len(), "IRQs")?;
    }

    if !s.softirqs.is_empty() {
        writeln!(out)?;
        writeln!(out, "softirqs (duration = softirq_entry -> softirq_exit):")?;
        let mut t = Table::new([
            Col::right("VEC"),
            Col::left("NAME"),
            Col::right("COUNT"),
            Col::left("CPUS"),
            Col::right("AVG"),
            Col::right("P99"),
            Col::right("MAX"),
            Col::right("RAISE->ENTRY AVG"),
            Col::right("MAX"),
            Col::left("RAISED BY"),
        ]);
        for r in &s.softirqs {
            let d = r.duration;
            let raised: Vec<String> = r
                .raised_by
                .iter()
                .map(|b| match b.irq {
                    Some(i) => format!("irq {i} ({})", b.count),
                    None => format!("no IRQ ({})", b.count),
                })
                .collect();
            t.row([
                r.vec.to_string(),
                r.name.clone(),
                r.count.to_string(),
                cpus(&r.cpus),
                dur(d.map(|d| d.avg_ns)),
                dur(d.map(|d| d.p99_ns)),
                dur(d.map(|d| d.max_ns)),
                dur(r.raise_to_entry.map(|d| d.avg_ns)),
                dur(r.raise_to_entry.map(|d| d.max_ns)),
                raised.join(", "),
            ]);
        }
        t.write(out, style)?;
    }

    let focus = match (&s.focus_irq, &s.focus_task) {
        (None, None) => String::new(),
        (i, t) => format!(
            " (--irq {} --task {})",
            i.as_deref().unwrap_or("*"),
            t.as_deref().unwrap_or("*")
        ),
    };
    irq_chains(s, top, &focus, out, style)?;
    softirq_chains(s, top, &focus, out, style)
}

fn irq_chains(
    s: &IrqSection,
    top: usize,
    focus: &str,
    out: &mut dyn Write,
    style: &Style,
) -> io::Result<()> {
    heading(out, style, &format!("IRQ -> task chains{focus}"))?;
    if s.chains.is_empty() {
        return writeln!(
            out,
            "no wake-up done in a hardirq handler or in a softirq an IRQ raised"
        );
    }
    writeln!(
        out,
        "latency = the IRQ's irq_handler_exit -> the woken task's switch-in:"
    )?;
    let mut t = Table::new(
        [
            Col::left("IRQ"),
            Col::left("TASK"),
            Col::right("WAKE-UPS"),
            Col::left("VIA"),
        ]
        .into_iter()
        .chain(latency_columns()),
    );
    for c in s.chains.iter().take(top) {
        let l = c.latency;
        let via = match (c.via_hardirq, c.via_softirq) {
            (0, _) => "softirq".to_string(),
            (_, 0) => "hardirq".to_string(),
            (h, s) => format!("hardirq {h}, softirq {s}"),
        };
        t.row(
            [
                format!("{} {}", c.irq, c.irq_name),
                format!("{}-{}", c.comm, c.tid),
                c.count.to_string(),
                via,
            ]
            .into_iter()
            .chain(latency_cells(l)),
        );
    }
    t.write(out, style)?;
    more(out, style, top, s.chains.len(), "chains")?;
    let unknown: u64 = s.chains.iter().map(|c| c.exit_unknown).sum();
    if unknown > 0 {
        writeln!(out, "{}", style.dim(&format!("{unknown} wake-ups switched in before their IRQ's exit was seen: not in the latencies")))?;
    }
    // The histogram of the focused chain, or of the busiest one.
    let shown = if focus.is_empty() { 1 } else { top };
    for c in s.chains.iter().take(shown) {
        histogram(c, out, style)?;
    }
    Ok(())
}

/// Softirq -> task chains, in the layout of the IRQ chains; nothing when there are none.
fn softirq_chains(
    s: &IrqSection,
    top: usize,
    focus: &str,
    out: &mut dyn Write,
    style: &Style,
) -> io::Result<()> {
    if s.softirq_chains.is_empty() {
        return Ok(());
    }
    heading(out, style, &format!("Softirq -> task chains{focus}"))?;
    writeln!(
        out,
        "wake-ups in softirqs no traced IRQ raised; latency = the softirq's softirq_exit -> the woken task's switch-in:"
    )?;
    let mut t = Table::new(
        [
            Col::left("SOURCE"),
            Col::left("TASK"),
            Col::right("WAKE-UPS"),
        ]
        .into_iter()
        .chain(latency_columns()),
    );
    for c in s.softirq_chains.iter().take(top) {
        let l = c.latency;
        t.row(
            [
                c.source.clone(),
                format!("{}-{}", c.comm, c.tid),
                c.count.to_string(),
            ]
            .into_iter()
            .chain(latency_cells(l)),
        );
    }
    t.write(out, style)?;
    more(out, style, top, s.softirq_chains.len(), "softirq chains")?;
    let unknown: u64 = s.softirq_chains.iter().map(|c| c.exit_unknown).sum();
    if unknown > 0 {
        writeln!(out, "{}", style.dim(&format!("{unknown} wake-ups switched in before their softirq's exit was seen: not in the latencies")))?;
    }
    let shown = if focus.is_empty() { 1 } else { top };
    for c in s.softirq_chains.iter().take(shown) {
        let title = format!(
            "{} -> {}-{}, softirq_exit -> switch-in:",
            c.source, c.comm, c.tid
        );
        bars(&title, &c.histogram, out, style)?;
    }
    Ok(())
}

fn histogram(c: &ChainRow, out: &mut dyn Write, style: &Style) -> io::Result<()> {
    let title = format!(
        "irq {} {} -> {}-{}, irq_handler_exit -> switch-in:",
        c.irq, c.irq_name, c.comm, c.tid
    );
    bars(&title, &c.histogram, out, style)
}

fn bars(title: &str, histogram: &[Bucket], out: &mut dyn Write, style: &Style) -> io::Result<()> {
    let max = histogram.iter().map(|b| b.count).max().unwrap_or(0);
    if max == 0 {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{title}")?;
    let mut t = Table::new([Col::right("LATENCY"), Col::right("COUNT"), Col::left("")]);
    for b in histogram {
        let label = match b.le_ns {
            Some(le) => format!("<= {}", duration_ns(le)),
            None => "more".to_string(),
        };
        let n = (b.count * BAR).div_ceil(max) as usize;
        t.row([label, b.count.to_string(), "#".repeat(n)]);
    }
    t.write(out, style)
}

/// `1:4077` or `0:12, 1:30`.
fn cpus(v: &[CpuCount]) -> String {
    let s: Vec<String> = v.iter().map(|c| format!("{}:{}", c.cpu, c.count)).collect();
    if s.is_empty() {
        "-".to_string()
    } else {
        s.join(", ")
    }
}
