//! The experiment's text: each traced run's explanation, and the blamed spikes of all
//! of them by cause.

use std::io::{self, Write};

use jitterlab_experiment::explain::Explanation;
use jitterlab_experiment::ExperimentReport;

use super::label;
use crate::units::{duration_ns, escape, rate};
use crate::{Col, Style, Table};

/// CPUs of a thread shown before `+N`.
const MAX_CPUS: usize = 4;
/// Migrations shown per step before `(+N more)`.
const MAX_MIGRATIONS: usize = 8;

pub(super) fn explanation(
    r: &ExperimentReport,
    e: &Explanation,
    out: &mut dyn Write,
    style: &Style,
) -> io::Result<()> {
    let round = r
        .runs
        .iter()
        .find(|x| x.seq == e.seq)
        .map_or_else(String::new, |x| format!(", round {}", x.round));
    writeln!(
        out,
        "{}",
        style.bold(&format!(
            "trace of run {} ({}{round}): {} traced, {} events lost",
            e.seq,
            label(r, e.cell),
            duration_ns(e.duration_ns),
            super::super::lost_count(e.lost_events)
        ))
    )?;
    writeln!(
        out,
        "trace: {}",
        e.trace
            .as_deref()
            .map_or_else(|| "- (not kept)".to_string(), escape)
    )?;
    let mut t = Table::new([
        Col::left("ROLE"),
        Col::left("COMM"),
        Col::right("TID"),
        Col::right("RUN"),
        Col::left("CPUS (% OF RUN)"),
        Col::right("MIGR/S"),
        Col::right("P50"),
        Col::right("IDLE"),
        Col::right("TASK"),
        Col::right("MAX"),
    ]);
    for th in &e.threads {
        let mut cpus: Vec<String> = th
            .cpus
            .iter()
            .take(MAX_CPUS)
            .map(|c| {
                if th.run_ns > 0 {
                    format!(
                        "{} {:.0}%",
                        c.cpu,
                        c.run_ns as f64 * 100.0 / th.run_ns as f64
                    )
                } else {
                    c.cpu.to_string()
                }
            })
            .collect();
        if th.cpus.len() > MAX_CPUS {
            cpus.push(format!("+{}", th.cpus.len() - MAX_CPUS));
        }
        t.row([
            th.role.map_or("-", |x| x.name()).to_string(),
            escape(&th.comm),
            th.tid.to_string(),
            duration_ns(th.run_ns),
            if cpus.is_empty() {
                "-".to_string()
            } else {
                cpus.join(", ")
            },
            rate(th.migrations_per_s),
            th.wake_p50_ns.map_or_else(|| "-".into(), duration_ns),
            th.wake_idle_p50_ns.map_or_else(|| "-".into(), duration_ns),
            th.wake_task_p50_ns.map_or_else(|| "-".into(), duration_ns),
            th.wake_max_ns.map_or_else(|| "-".into(), duration_ns),
        ]);
    }
    if t.is_empty() {
        writeln!(out, "threads: none found in the trace")?;
    } else {
        t.write(out, style)?;
        writeln!(
            out,
            "{}",
            style.dim("P50, MAX: wake-up latency; IDLE, TASK: the p50 of those that found their CPU idle\n(they pay the idle exit) and of the others")
        )?;
        for th in e.threads.iter().filter(|th| th.wakeups_inferred > 0) {
            writeln!(
                out,
                "{}",
                style.warn(&format!(
                    "{}-{}: {} of {} wake-ups with the switch-in inferred, not recorded: upper bounds",
                    escape(&th.comm),
                    th.tid,
                    th.wakeups_inferred,
                    th.wakeups
                ))
            )?;
        }
    }
    let mut t = Table::new([
        Col::left("WOKEN BY"),
        Col::left("WOKEN"),
        Col::right("TID"),
        Col::right("COUNT"),
        Col::left("ON CPUS"),
        Col::right("P50"),
        Col::right("MAX"),
        Col::right("INFERRED"),
    ]);
    for c in &e.chains {
        let cpus: Vec<String> = c.source_cpus.iter().map(u32::to_string).collect();
        t.row([
            escape(&c.source),
            escape(&c.comm),
            c.tid.to_string(),
            c.count.to_string(),
            if cpus.is_empty() {
                "-".to_string()
            } else {
                cpus.join(", ")
            },
            c.p50_ns.map_or_else(|| "-".into(), duration_ns),
            c.max_ns.map_or_else(|| "-".into(), duration_ns),
            inferred(c.inferred, style),
        ]);
    }
    if !t.is_empty() {
        writeln!(
            out,
            "wake-ups by an IRQ or softirq (latency from its exit to the switch-in):"
        )?;
        t.write(out, style)?;
    }
    if !e.around_steps.is_empty() {
        writeln!(out, "migrations within a second of each step:")?;
        let mut t = Table::new([
            Col::left("STEP"),
            Col::right("AT"),
            Col::left("THREAD"),
            Col::right("FROM"),
            Col::right("TO"),
        ]);
        for s in &e.around_steps {
            let step = format!("{} at {}", escape(&s.series), duration_ns(s.step_t_ns));
            if s.migrations.is_empty() {
                t.row([step, "-".into(), "(none)".into()]);
                continue;
            }
            for m in s.migrations.iter().take(MAX_MIGRATIONS) {
                t.row([
                    step.clone(),
                    duration_ns(m.t_ns),
                    format!("{}-{}", escape(&m.comm), m.tid),
                    m.from_cpu.to_string(),
                    m.to_cpu.to_string(),
                ]);
            }
            if s.migrations.len() > MAX_MIGRATIONS {
                t.row([
                    step,
                    String::new(),
                    format!("(+{} more)", s.migrations.len() - MAX_MIGRATIONS),
                ]);
            }
        }
        t.write(out, style)?;
    }
    if !e.spikes.is_empty() {
        writeln!(out, "the latency probe's spikes, blamed:")?;
        for s in &e.spikes {
            let mark = if s.marked { ", stopped the trace" } else { "" };
            writeln!(
                out,
                "  CPU {} {} at {}{mark}: {}",
                s.cpu,
                duration_ns(s.latency_ns),
                duration_ns(s.t_ns),
                s.cause.replace('_', " ")
            )?;
            writeln!(out, "    {}", escape(&s.verdict))?;
        }
    }
    Ok(())
}

/// The blamed spikes of all traced runs by cause.
pub(super) fn spike_causes(
    r: &ExperimentReport,
    out: &mut dyn Write,
    style: &Style,
) -> io::Result<()> {
    if r.spike_causes.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "blamed spikes of the traced runs, by cause:")?;
    let mut t = Table::new([
        Col::left("CAUSE"),
        Col::right("SPIKES"),
        Col::right("STOPPED A TRACE"),
    ]);
    for c in &r.spike_causes {
        t.row([
            c.cause.replace('_', " "),
            c.spikes.to_string(),
            c.marked.to_string(),
        ]);
    }
    t.write(out, style)
}

/// A count of inferred wake-ups, marked when there are any (their latencies are upper
/// bounds).
fn inferred(n: u64, style: &Style) -> String {
    if n > 0 {
        style.warn(&n.to_string())
    } else {
        "0".to_string()
    }
}
