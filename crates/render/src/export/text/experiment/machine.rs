//! The experiment's text: the machine during each cell's runs (`cell_contexts`).

use std::io::{self, Write};

use jitterlab_experiment::report::CellContext;
use jitterlab_experiment::ExperimentReport;

use super::{lines, Line};
use crate::units::{escape, rate};
use crate::{Col, Style, Table};

/// Softirq vectors shown per CPU before `+N`.
const MAX_SOFTIRQS: usize = 3;

/// `rows` as a table under `columns`, each row after the title of its group, if it
/// starts one (a line of its own, so that a long title does not widen the first column).
fn grouped_table(
    columns: Vec<Col>,
    rows: Vec<(Option<String>, Vec<String>)>,
    out: &mut dyn Write,
    style: &Style,
) -> io::Result<()> {
    let mut t = Table::new(columns);
    let mut titles = Vec::new();
    for (title, cells) in rows {
        if let Some(title) = title {
            t.row(Vec::<String>::new());
            titles.push(Some(title));
        }
        t.row(cells);
        titles.push(None);
    }
    let mut buf = Vec::new();
    t.write(&mut buf, style)?;
    let text = String::from_utf8_lossy(&buf);
    let mut lines = text.lines();
    writeln!(out, "{}", lines.next().unwrap_or_default())?;
    for (line, title) in lines.zip(titles) {
        match title {
            Some(title) => writeln!(out, "{title}")?,
            None => writeln!(out, "{line}")?,
        }
    }
    Ok(())
}

/// A count a second, its unit in the column's head: `3953`, `3.0`, `12.1k`.
fn per_s(x: f64) -> String {
    rate(x).trim_end_matches("/s").to_string()
}

/// A share of the run's CPU time as CPUs: `0.92`.
fn cpus(x: f64) -> String {
    format!("{x:.2}")
}

/// What else the machine did during each cell's runs (`cell_contexts`): per cell the CPU
/// use of everything beside the experiment and the steal, then per CPU the interrupts
/// and softirqs a second, as a core-partitioning study tabulates LOC and device IRQs
/// per CPU.
pub(super) fn machine_during(
    r: &ExperimentReport,
    out: &mut dyn Write,
    style: &Style,
) -> io::Result<()> {
    if r.cell_contexts.is_empty() {
        return Ok(());
    }
    // The cells with a context, in the metric tables' order and groups.
    let mut rows: Vec<(Option<String>, String, &CellContext)> = Vec::new();
    let mut title = None;
    for line in lines(r) {
        match line {
            Line::Group(t) => title = Some(t),
            Line::Cell(name, c) => {
                if let Some(ctx) = r.cell_contexts.iter().find(|x| x.cell == c) {
                    rows.push((title.take(), name, ctx));
                }
            }
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        style.bold("the machine during the runs: medians over each cell's measured runs")
    )?;
    writeln!(
        out,
        "CPU use in CPUs (1.00: one CPU the whole run); foreign: processes outside the experiment"
    )?;
    grouped_table(
        vec![
            Col::left("CELL"),
            Col::right("RUNS"),
            Col::right("BUSY RUNS"),
            Col::right("FOREIGN"),
            Col::right("KERNEL"),
            Col::right("TOOLS"),
            Col::right("TESTED"),
            Col::right("STEAL"),
        ],
        rows.iter()
            .map(|(title, name, c)| {
                (
                    title.clone(),
                    vec![
                        name.clone(),
                        c.runs.to_string(),
                        c.busy_runs.to_string(),
                        cpus(c.foreign_cpus),
                        cpus(c.kernel_cpus),
                        cpus(c.tools_cpus),
                        cpus(c.tested_cpus),
                        format!("{:.1}%", c.steal * 100.0),
                    ],
                )
            })
            .collect(),
        out,
        style,
    )?;
    writeln!(
        out,
        "per CPU: time not idle, and interrupts and softirqs a second"
    )?;
    let mut per_cpu = Vec::new();
    for (title, name, c) in &rows {
        for (k, cpu) in c.cpus.iter().enumerate() {
            let mut soft: Vec<String> = cpu
                .softirqs_per_s
                .iter()
                .take(MAX_SOFTIRQS)
                .map(|v| format!("{} {}", escape(&v.name), per_s(v.per_s)))
                .collect();
            if cpu.softirqs_per_s.len() > MAX_SOFTIRQS {
                soft.push(format!("+{}", cpu.softirqs_per_s.len() - MAX_SOFTIRQS));
            }
            per_cpu.push((
                if k == 0 { title.clone() } else { None },
                vec![
                    if k == 0 { name.clone() } else { String::new() },
                    cpu.cpu.to_string(),
                    format!("{:.0}%", cpu.busy * 100.0),
                    per_s(cpu.local_timer_per_s),
                    per_s(cpu.device_irqs_per_s),
                    per_s(cpu.other_irqs_per_s),
                    if soft.is_empty() {
                        "-".to_string()
                    } else {
                        soft.join(", ")
                    },
                ],
            ));
        }
    }
    grouped_table(
        vec![
            Col::left("CELL"),
            Col::right("CPU"),
            Col::right("BUSY"),
            Col::right("LOC/s"),
            Col::right("DEVICE/s"),
            Col::right("OTHER/s"),
            Col::left("SOFTIRQS/s (most first)"),
        ],
        per_cpu,
        out,
        style,
    )
}
