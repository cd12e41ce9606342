//! `jitterlab latency` and `jitterlab load`: the summary tables.

use std::io::{self, Write};

use jitterlab_latency::load::{LoadResult, LoadRun, LoadSpec};
use jitterlab_latency::spikes::{Ledger, Spike};
use jitterlab_latency::{LatencyReport, Stop};
use jitterlab_units::format_ns;

use crate::units::duration_ns;
use crate::{Col, Render, Style, Table};

/// Latency in microseconds with one decimal, the unit of the table.
fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

/// What a generator did: `1234 sleeps`, `exit status: 0`.
fn load_ops(l: &LoadResult) -> String {
    match &l.spec {
        LoadSpec::Cpu(_) => format!("{} sleeps", l.ops),
        LoadSpec::Io(_) => format!("{} 4 KiB O_SYNC writes", l.ops),
        LoadSpec::Mem(_) => format!("{} 64 MiB passes", l.ops),
        LoadSpec::Cmd(_) => l.exit.as_deref().unwrap_or("-").to_string(),
    }
}

/// A generator as the user wrote it, a command quoted: `cpu:150`, `cmd:'stress-ng --cpu 2'`.
fn load_name(spec: &LoadSpec) -> String {
    match spec {
        LoadSpec::Cmd(c) => format!("cmd:'{c}'"),
        spec => spec.to_string(),
    }
}

/// A generator and what it did: `cpu:150 (1234 sleeps)`, `cmd:'stress-ng' (exit status: 0)`.
fn load_done(l: &LoadResult) -> String {
    format!("{} ({})", load_name(&l.spec), load_ops(l))
}

impl Render for LoadRun {
    const SCHEMA: &'static str = "jitterlab.load";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        writeln!(
            out,
            "load on CPUs {} for {} (ended by {})",
            self.cpus,
            duration_ns(self.wall_ns),
            self.stopped_by
        )?;
        if !self.command.is_empty() {
            writeln!(
                out,
                "around: {} ({})",
                self.command.join(" "),
                self.command_exit.as_deref().unwrap_or("-")
            )?;
        }
        let mut t = Table::new([
            Col::left("LOAD"),
            Col::left("DONE"),
            Col::right("PER SECOND"),
        ]);
        for l in &self.loads {
            t.row([
                load_name(&l.result.spec),
                load_ops(&l.result),
                l.ops_per_s.map_or("-".into(), |r| format!("{r:.0}")),
            ]);
        }
        t.write(out, style)
    }
}

impl Render for LatencyReport {
    const SCHEMA: &'static str = "jitterlab.latency";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let c = &self.config;
        let stop = match c.stop {
            Stop::Loops(n) => format!("{n} loops"),
            Stop::DurationNs(d) => format!("{} run", format_ns(d)),
        };
        writeln!(
            out,
            "CPUs {}, {} priority {}, interval {}, deadline {}, {stop}; measured for {}{}",
            c.cpus,
            format!("{:?}", c.policy).to_lowercase(),
            c.priority,
            format_ns(c.interval_ns),
            format_ns(c.deadline_ns),
            duration_ns(self.wall_ns),
            if self.cancelled { " (ended early)" } else { "" }
        )?;
        writeln!(
            out,
            "kernel {} ({}), clocksource {}, cpuidle {}",
            self.environment.kernel_release,
            self.environment.preemption,
            self.environment.clocksource.as_deref().unwrap_or("-"),
            self.environment.cpuidle_driver.as_deref().unwrap_or("-"),
        )?;
        if let Some(cpus) = &self.load_cpus {
            let loads: Vec<String> = self.loads.iter().map(load_done).collect();
            writeln!(out, "load on CPUs {cpus}: {}", loads.join(", "))?;
        }
        writeln!(out, "latencies in us")?;
        let mut t = Table::new([
            Col::right("CPU"),
            Col::right("SAMPLES"),
            Col::right("MIN"),
            Col::right("AVG"),
            Col::right("STDDEV"),
            Col::right("P50"),
            Col::right("P90"),
            Col::right("P99"),
            Col::right("P99.9"),
            Col::right("P99.99"),
            Col::right("MAX"),
            Col::right("MISSED"),
            Col::right(">DEADLINE"),
        ]);
        for cpu in &self.cpus {
            let s = &cpu.summary;
            let over = |n: u64| {
                if n > 0 {
                    style.warn(&n.to_string())
                } else {
                    "0".to_string()
                }
            };
            t.row([
                s.cpu.to_string(),
                s.samples.to_string(),
                us(s.min_ns as f64),
                us(s.avg_ns),
                us(s.stddev_ns),
                us(s.p50_ns as f64),
                us(s.p90_ns as f64),
                us(s.p99_ns as f64),
                us(s.p99_9_ns as f64),
                us(s.p99_99_ns as f64),
                us(s.max_ns as f64),
                over(s.missed_periods),
                over(s.deadline_misses),
            ]);
        }
        t.write(out, style)?;
        if let Some(ledger) = &self.spikes {
            write_ledger(ledger, out, style)?;
        }
        if let Some(hit) = &self.break_hit {
            let traced = if hit.traced {
                format!(
                    "; marked and stopped the trace in {}",
                    self.break_buffers.join(", ")
                )
            } else {
                "; no trace was marked".to_string()
            };
            writeln!(
                out,
                "{}",
                style.warn(&format!(
                    "break: sample {} on CPU {} took {} us > {}{traced}",
                    hit.sample,
                    hit.cpu,
                    us(hit.latency_ns as f64),
                    self.break_ns.map(format_ns).unwrap_or_default()
                ))
            )?;
        }
        for w in &self.warnings {
            writeln!(out, "{}", style.warn(&format!("warning: {w}")))?;
        }
        if let (Some(limit), true) = (self.fail_above_ns, self.failed) {
            writeln!(
                out,
                "{}",
                style.bad(&format!("FAILED: a latency exceeded {}", format_ns(limit)))
            )?;
        }
        Ok(())
    }
}

/// Spikes shown in the text summary; all of them are in the JSON.
const SPIKES_SHOWN: usize = 20;

/// The ledger's largest spikes, in time order, with the sources that fired around them.
fn write_ledger(ledger: &Ledger, out: &mut dyn Write, style: &Style) -> io::Result<()> {
    let n = ledger.spikes.len();
    writeln!(
        out,
        "spikes above {}: {n}{}",
        format_ns(ledger.threshold_ns),
        if n > SPIKES_SHOWN {
            format!(" (the {SPIKES_SHOWN} largest; all in --json)")
        } else {
            String::new()
        }
    )?;
    if n == 0 {
        return Ok(());
    }
    let mut shown: Vec<&Spike> = ledger.spikes.iter().collect();
    shown.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
    shown.truncate(SPIKES_SHOWN);
    shown.sort_by_key(|s| (s.t_ns, s.cpu));
    let mut t = Table::new([
        Col::right("AT"),
        Col::right("CPU"),
        Col::right("SAMPLE"),
        Col::right("LATENCY"),
        Col::right("WINDOW"),
        Col::left("INTERRUPTS ON THE CPU"),
    ]);
    for s in shown {
        let irqs: Vec<String> = s
            .interrupts
            .iter()
            .take(4)
            .map(|d| format!("{} x{}", d.name, d.count))
            .collect();
        t.row([
            duration_ns(s.t_ns),
            s.cpu.to_string(),
            s.sample.to_string(),
            format!("{} us", us(s.latency_ns as f64)),
            s.window_ns.map(duration_ns).unwrap_or_else(|| "-".into()),
            if irqs.is_empty() {
                "-".into()
            } else {
                irqs.join(", ")
            },
        ]);
    }
    t.write(out, style)
}
