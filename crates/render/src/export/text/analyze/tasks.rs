//! `analyze`: the task section.

use std::io::{self, Write};

use jitterlab_analyze::analysis::tasks::{GroupBy, TaskRow, TaskSection};

use super::{dur, heading, latency_cells, latency_columns, more, prio};
use crate::units::duration_ns;
use crate::{Col, Style, Table};

pub(super) fn write(
    s: &TaskSection,
    top: usize,
    out: &mut dyn Write,
    style: &Style,
) -> io::Result<()> {
    heading(out, style, "Tasks")?;
    let by = match s.group_by {
        GroupBy::Tgid => "process",
        GroupBy::Comm => "name (the trace has no thread group ids)",
    };
    writeln!(out, "threads by {by}:")?;
    let mut g = Table::new([
        Col::left("GROUP"),
        Col::right("THREADS"),
        Col::left("TIDS"),
        Col::left("CPUS"),
        Col::right("RUN"),
        Col::right("WAKE-UPS"),
    ]);
    for r in s.groups.iter().take(top) {
        let name = match r.tgid {
            Some(p) => format!("{}-{p}", r.comm),
            None => r.comm.clone(),
        };
        let cpus: Vec<String> = r.cpus.iter().map(u32::to_string).collect();
        g.row([
            name,
            r.threads.len().to_string(),
            list(&r.threads, 6),
            cpus.join(","),
            duration_ns(r.run_ns),
            r.wakeups.to_string(),
        ]);
    }
    g.write(out, style)?;
    more(out, style, top, s.groups.len(), "groups")?;

    writeln!(out)?;
    writeln!(out, "run time (instance = switch-in to switch-out):")?;
    let mut t = Table::new([
        Col::right("TID"),
        Col::left("NAME"),
        Col::left("PRIO"),
        Col::right("RUN"),
        Col::right("INSTANCES"),
        Col::right("AVG"),
        Col::right("MAX"),
        Col::left("CPUS (run time)"),
        Col::right("MIGR"),
        Col::right("PREEMPTED"),
        Col::right("SLEPT"),
    ]);
    for r in s.tasks.iter().take(top) {
        let inst = r.instances;
        t.row([
            r.tid.to_string(),
            r.comm.clone(),
            prio(r.prio),
            duration_ns(r.run_ns),
            inst.map_or(0, |i| i.count).to_string(),
            dur(inst.map(|i| i.avg_ns)),
            dur(inst.map(|i| i.max_ns)),
            cpus(r),
            r.migrations.to_string(),
            r.preempted.to_string(),
            r.slept.to_string(),
        ]);
    }
    t.write(out, style)?;
    more(out, style, top, s.tasks.len(), "tasks")?;

    let mut woken: Vec<&TaskRow> = s.tasks.iter().filter(|r| r.wakeups.is_some()).collect();
    if woken.is_empty() {
        return Ok(());
    }
    woken.sort_by_key(|r| std::cmp::Reverse(r.wakeups.map_or(0, |w| w.max_ns)));
    writeln!(out)?;
    match s.wakeups {
        Some(all) => writeln!(
            out,
            "wake-up latency (sched_waking -> switch-in), worst first; all tasks: {} wake-ups, p50 {}, p99 {}, max {}:",
            all.count,
            duration_ns(all.p50_ns),
            duration_ns(all.p99_ns),
            duration_ns(all.max_ns)
        )?,
        None => writeln!(out, "wake-up latency (sched_waking -> switch-in), worst first:")?,
    }
    let mut t = Table::new(
        [Col::right("TID"), Col::left("NAME"), Col::right("WAKE-UPS")]
            .into_iter()
            .chain(latency_columns())
            .chain([Col::right("INFERRED"), Col::left("WOKEN MOSTLY BY")]),
    );
    for r in woken.iter().take(top) {
        let Some(w) = r.wakeups else { continue };
        let inferred = if r.wakeups_inferred > 0 {
            style.warn(&r.wakeups_inferred.to_string())
        } else {
            "0".to_string()
        };
        let by = r
            .wakers
            .first()
            .map_or_else(|| "-".to_string(), |w| format!("{} ({})", w.name, w.count));
        t.row(
            [r.tid.to_string(), r.comm.clone(), w.count.to_string()]
                .into_iter()
                .chain(latency_cells(Some(w)))
                .chain([inferred, by]),
        );
    }
    t.write(out, style)?;
    more(out, style, top, woken.len(), "tasks with wake-ups")?;
    if woken.iter().any(|r| r.wakeups_inferred > 0) {
        writeln!(
            out,
            "{}",
            style.dim("INFERRED: wake-ups whose switch-in no sched_switch recorded; taken at the task's first event, so the latency is an upper bound")
        )?;
    }
    Ok(())
}

/// `1 (1.10 ms), 0 (95.4 us)`.
fn cpus(r: &TaskRow) -> String {
    let v: Vec<String> = r
        .cpus
        .iter()
        .take(4)
        .map(|c| format!("{} ({})", c.cpu, duration_ns(c.run_ns)))
        .collect();
    if r.cpus.len() > 4 {
        format!("{} +{}", v.join(", "), r.cpus.len() - 4)
    } else {
        v.join(", ")
    }
}

/// At most `max` numbers, then `+N`.
fn list(v: &[i32], max: usize) -> String {
    let shown: Vec<String> = v.iter().take(max).map(i32::to_string).collect();
    if v.len() > max {
        format!("{},+{}", shown.join(","), v.len() - max)
    } else {
        shown.join(",")
    }
}
