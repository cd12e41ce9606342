//! `analyze`: the CPU section.

use std::io::{self, Write};

use jitterlab_analyze::analysis::cpus::CpuSection;

use super::{heading, pct};
use crate::units::duration_ns;
use crate::{Col, Style, Table};

/// Load levels, from idle to fully busy.
const BARS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

pub(super) fn write(c: &CpuSection, out: &mut dyn Write, style: &Style) -> io::Result<()> {
    heading(out, style, "CPUs")?;
    writeln!(
        out,
        "busy = a task other than idle current; hardirq and softirq time overlap busy and idle"
    )?;
    let mut t = Table::new([
        Col::right("CPU"),
        Col::right("SPAN"),
        Col::right("BUSY"),
        Col::right(""),
        Col::right("IDLE"),
        Col::right("UNKNOWN"),
        Col::right("HARDIRQ"),
        Col::right("SOFTIRQ"),
        Col::right("IRQS"),
        Col::right("SOFTIRQS"),
        Col::right("SWITCHES"),
        Col::right("INFERRED"),
    ]);
    for r in &c.cpus {
        let unknown = if r.unknown_ns > 0 {
            style.warn(&duration_ns(r.unknown_ns))
        } else {
            "0".to_string()
        };
        t.row([
            r.cpu.to_string(),
            duration_ns(r.span_ns),
            duration_ns(r.busy_ns),
            pct(r.busy_ns, r.span_ns),
            duration_ns(r.idle_ns),
            unknown,
            duration_ns(r.hardirq_ns),
            duration_ns(r.softirq_ns),
            r.irqs.to_string(),
            r.softirqs.to_string(),
            r.switches.to_string(),
            r.inferred_switches.to_string(),
        ]);
    }
    t.write(out, style)?;
    if c.cpus.iter().all(|r| r.load.is_empty()) {
        return Ok(());
    }
    writeln!(
        out,
        "load over time, one column per {} (blank idle, █ fully busy):",
        duration_ns(c.bucket_ns)
    )?;
    for r in &c.cpus {
        let line: String = r
            .load
            .iter()
            .map(|&busy| {
                let level = (busy.min(c.bucket_ns) * 8).div_ceil(c.bucket_ns.max(1)) as usize;
                BARS[level.min(8)]
            })
            .collect();
        writeln!(out, "CPU {:>3} |{line}|", r.cpu)?;
    }
    Ok(())
}
