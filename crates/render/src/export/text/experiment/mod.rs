//! `jitterlab experiment`: the answers first (each sentence with the figures it rests
//! on under it), a header (runs, seed, run order, machine, the statistics' settings),
//! per metric a table of the cells (median with its interval, ratio to the baseline
//! with its interval, Holm's p, the verdict and the runs it stands on), the machine
//! during each cell's runs (`machine.rs`), the warnings in words, and per traced run its
//! explanation (`explain.rs`: where the threads ran, what woke them, what moved around
//! the steps). Every figure is the model's; these files only lay out and convert units.

mod explain;
mod machine;

use std::io::{self, Write};

use jitterlab_experiment::explain::Testbed;
use jitterlab_experiment::recipe::{Level, Order};
use jitterlab_experiment::report::{Background, Comparison, MetricStats, Warning};
use jitterlab_experiment::stats::{Direction, Estimate};
use jitterlab_experiment::ExperimentReport;

use crate::table::visible_width;
use crate::units::{duration_ns, escape, p_value, ratio, value, wrap, Scale};
use crate::{Col, Render, Style, Table};
use explain::{explanation, spike_causes};
use machine::machine_during;

/// The widest line the header's lists are cut to.
const WIDTH: usize = 100;

impl Render for ExperimentReport {
    const SCHEMA: &'static str = "jitterlab.experiment";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        answers(self, out, style)?;
        header(self, out, style)?;
        for m in &self.stats {
            writeln!(out)?;
            metric_table(self, m, out, style)?;
        }
        machine_during(self, out, style)?;
        warnings(self, out, style)?;
        spike_causes(self, out, style)?;
        for e in &self.explanations {
            writeln!(out)?;
            explanation(self, e, out, style)?;
        }
        Ok(())
    }
}

/// A cell's label, or `cell N` past the cells.
fn label(r: &ExperimentReport, cell: usize) -> String {
    r.cells
        .get(cell)
        .map_or_else(|| format!("cell {cell}"), |c| escape(&c.label))
}

/// The name a level's factor has in a recipe and in labels.
fn factor_name(l: &Level) -> &'static str {
    match l {
        Level::Affinity(_) => "affinity",
        Level::Irq(_) => "irq",
        Level::Partition(_) => "partition",
        Level::Bitrate(_) => "bitrate",
        Level::Load(_) => "load",
        Level::Setup(_) => "setup",
    }
}

/// The parts of `cell`'s label of the factors in `which`: `affinity=1`.
fn part_label(r: &ExperimentReport, cell: usize, which: &[bool]) -> String {
    let Some(c) = r.cells.get(cell) else {
        return label(r, cell);
    };
    let parts: Vec<String> = c
        .levels
        .iter()
        .zip(which)
        .filter(|(_, &w)| w)
        .map(|(l, _)| format!("{}={l}", factor_name(l)))
        .collect();
    escape(&parts.join(", "))
}

/// Which factors take more than one level among `cells`.
fn varying(r: &ExperimentReport, cells: &[usize]) -> Vec<bool> {
    let n = r.cells.first().map_or(0, |c| c.levels.len());
    (0..n)
        .map(|f| {
            let mut levels = cells.iter().filter_map(|&c| r.cells.get(c)?.levels.get(f));
            let first = levels.next();
            levels.any(|l| Some(l) != first)
        })
        .collect()
}

/// Up to `width` columns of `items` joined by spaces, then `(+N more)`.
fn fitted(prefix: &str, items: &[String], width: usize) -> String {
    let mut line = prefix.to_string();
    for (k, item) in items.iter().enumerate() {
        let more = format!(" (+{} more)", items.len() - k);
        let room = if k + 1 == items.len() { 0 } else { more.len() };
        if line.len() + 1 + item.len() + room > width {
            line.push_str(&more);
            return line;
        }
        line.push(' ');
        line.push_str(item);
    }
    line
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn machine_line(m: Option<&Testbed>) -> String {
    match m {
        None => "machine: -".to_string(),
        Some(m) => format!(
            "machine: {}, kernel {} ({}), CPUs {}{}",
            escape(&m.hostname),
            escape(&m.kernel),
            if m.preemption.is_empty() {
                "-"
            } else {
                &m.preemption
            },
            if m.cpus.is_empty() { "-" } else { &m.cpus },
            m.virtualization
                .as_deref()
                .map_or_else(String::new, |v| format!(", virtual ({})", escape(v)))
        ),
    }
}

/// The answers, first: each sentence, the figures it rests on in small print under it.
fn answers(r: &ExperimentReport, out: &mut dyn Write, style: &Style) -> io::Result<()> {
    if r.answers.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "{}",
        style.bold(&format!("answers ({})", escape(&r.name)))
    )?;
    for a in &r.answers {
        for (k, line) in wrap(&escape(&a.text), "    ", WIDTH).iter().enumerate() {
            match k {
                0 => writeln!(out, "  - {}", &line[4..])?,
                _ => writeln!(out, "{line}")?,
            }
        }
        for b in &a.basis {
            for line in wrap(&escape(b), "      ", WIDTH) {
                writeln!(out, "{}", style.dim(&line))?;
            }
        }
    }
    writeln!(out)
}

fn header(r: &ExperimentReport, out: &mut dyn Write, style: &Style) -> io::Result<()> {
    let warmup = r.runs.iter().filter(|x| x.warmup).count();
    let failed = r.runs.iter().filter(|x| x.error.is_some()).count();
    let traced = r.runs.iter().filter(|x| x.traced).count();
    writeln!(
        out,
        "{}",
        style.bold(&format!(
            "experiment {}: {}, {}, {} ({} warm-up, {} failed, {} traced); seed {}",
            escape(&r.name),
            plural(r.cells.len(), "cell", "cells"),
            plural(r.metrics.len(), "metric", "metrics"),
            plural(r.runs.len(), "run", "runs"),
            warmup,
            failed,
            traced,
            r.seed
        ))
    )?;
    let order: Vec<String> = r
        .runs
        .iter()
        .map(|x| format!("{}{}", if x.warmup { "w" } else { "" }, x.cell))
        .collect();
    let name = match r.order {
        Some(Order::Interleaved) => "interleaved ",
        Some(Order::Sequential) => "sequential ",
        Some(Order::Abba) => "abba ",
        None => "",
    };
    writeln!(
        out,
        "{}",
        fitted(
            &format!("{name}order (cell of each run, w: warm-up):"),
            &order,
            WIDTH
        )
    )?;
    if let Some(rounds) = r.stopped_early {
        writeln!(
            out,
            "stopped after {rounds} rounds: every cell's median was known to the precision asked"
        )?;
    }
    writeln!(out, "{}", machine_line(r.machine.as_ref()))?;
    let c = &r.config;
    writeln!(
        out,
        "medians with {}% bootstrap intervals ({} resamples); real: Holm-corrected Mann-Whitney",
        c.confidence * 100.0,
        c.resamples
    )?;
    writeln!(
        out,
        "p below {} and the ratio's interval beyond {}% noise; {} runs a cell at least",
        c.alpha,
        c.noise * 100.0,
        c.min_runs
    )
}

fn direction(d: Direction) -> &'static str {
    match d {
        Direction::LowerIsBetter => "lower is better",
        Direction::HigherIsBetter => "higher is better",
    }
}

/// `12.3 [12.1, 12.6]` in `scale`.
fn estimate(e: Option<&Estimate>, scale: &Scale) -> String {
    e.map_or_else(
        || "-".to_string(),
        |e| {
            format!(
                "{} {}",
                scale.number(e.value),
                interval(e, |v| scale.number(v))
            )
        },
    )
}

/// An estimate's interval, `[0.782, 0.819]`; one whose upper end is unbounded (not a
/// finite number in the model, null in the JSON: a ratio whose baseline resamples
/// reached 0) as `[3.000, ∞)`.
fn interval(e: &Estimate, number: impl Fn(f64) -> String) -> String {
    if e.high.is_finite() {
        format!("[{}, {}]", number(e.low), number(e.high))
    } else {
        format!("[{}, ∞)", number(e.low))
    }
}

/// A line of a metric's table: a group's title, or a cell.
enum Line {
    /// The levels a group of cells shares (`load=none`).
    Group(String),
    /// A cell: its label (indented under a group) and index.
    Cell(String, usize),
}

/// The rows of a metric's table: each cell that is its own baseline with the cells
/// compared with it, under a line naming the levels they share (`load=none`) and each
/// labelled by the levels that set it apart (`affinity=1`) when the experiment has a
/// baseline per level; then any other cell, by its label.
fn lines(r: &ExperimentReport) -> Vec<Line> {
    let n = r.cells.len();
    let base = |c: usize| r.baselines.get(c).copied().unwrap_or(c);
    let all: Vec<usize> = (0..n).collect();
    let in_labels = varying(r, &all);
    let consistent = r.cells.iter().all(|c| c.levels.len() == in_labels.len());
    let mut out = Vec::with_capacity(n + 2);
    let mut shown = vec![false; n];
    for h in (0..n).filter(|&h| base(h) == h) {
        let group: Vec<usize> = std::iter::once(h)
            .chain((0..n).filter(|&c| c != h && base(c) == h))
            .collect();
        let apart = varying(r, &group);
        let shared: Vec<bool> = in_labels
            .iter()
            .zip(&apart)
            .map(|(&l, &a)| l && !a)
            .collect();
        let titled = consistent && group.len() > 1 && shared.iter().any(|&s| s);
        if titled {
            out.push(Line::Group(part_label(r, h, &shared)));
        }
        for &c in &group {
            shown[c] = true;
            out.push(Line::Cell(
                if titled {
                    format!("  {}", part_label(r, c, &apart))
                } else {
                    label(r, c)
                },
                c,
            ));
        }
    }
    out.extend(
        (0..n)
            .filter(|&c| !shown[c])
            .map(|c| Line::Cell(label(r, c), c)),
    );
    out
}

/// A verdict's text cut before its reasons: `no real difference` and `(not
/// significant, within noise)`.
fn split_verdict(v: &str) -> (String, Option<String>) {
    match v.find(" (") {
        Some(i) => (v[..i].to_string(), Some(v[i + 1..].to_string())),
        None => (v.to_string(), None),
    }
}

fn metric_table(
    r: &ExperimentReport,
    m: &MetricStats,
    out: &mut dyn Write,
    style: &Style,
) -> io::Result<()> {
    let medians = m.cells.iter().filter_map(|c| c.median.as_ref());
    let largest = medians
        .clone()
        .flat_map(|e| [e.value, e.low, e.high])
        .filter(|v| v.is_finite())
        .fold(0.0, |a: f64, b| a.max(b.abs()));
    let smallest = medians
        .map(|e| e.value.abs())
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let scale = Scale::new(&m.metric.unit, largest).precise_to(smallest);
    writeln!(
        out,
        "{}",
        style.bold(&format!(
            "{} ({}, {}){}",
            escape(&m.metric.name),
            escape(&m.metric.unit),
            direction(m.metric.direction),
            if scale.unit != m.metric.unit {
                format!(": figures in {}", scale.unit)
            } else {
                String::new()
            }
        ))
    )?;
    // Each line's cells but the verdict, and its verdict. A group's title is a line of
    // its own, printed over an empty row: it does not widen the cells' column.
    let lines = lines(r);
    let titles: Vec<Option<&str>> = lines
        .iter()
        .map(|l| match l {
            Line::Group(title) => Some(title.as_str()),
            Line::Cell(..) => None,
        })
        .collect();
    let rows: Vec<([String; 5], Option<&Comparison>)> = lines
        .iter()
        .map(|line| {
            let (name, c) = match line {
                Line::Group(_) => return (Default::default(), None),
                Line::Cell(name, c) => (name.clone(), *c),
            };
            let summary = m.cells.iter().find(|s| s.cell == c);
            let cmp = m.comparisons.iter().find(|x| x.cell == c);
            let (ratio_text, p) = match cmp {
                Some(x) => (
                    x.ratio.as_ref().map_or_else(
                        || "-".to_string(),
                        |e| format!("{} {}", ratio(e.value), interval(e, ratio)),
                    ),
                    x.p_holm.map_or_else(|| "-".to_string(), p_value),
                ),
                None if r.baselines.get(c) == Some(&c) => ("baseline".to_string(), String::new()),
                None => ("-".to_string(), "-".to_string()),
            };
            (
                [
                    name,
                    summary.map_or_else(|| "-".to_string(), |s| s.runs.to_string()),
                    estimate(summary.and_then(|s| s.median.as_ref()), &scale),
                    ratio_text,
                    p,
                ],
                cmp,
            )
        })
        .collect();
    let verdicts: Vec<String> = rows
        .iter()
        .map(|(_, c)| c.map(|c| c.verdict.to_string()).unwrap_or_default())
        .collect();
    // The verdict is the last column, which is not padded: a row wider than the
    // terminal has its verdict's reasons on a line of their own, under the verdict.
    // With `at`, where the verdict column starts, each verdict too wide for the line has
    // its reasons under it, or all of it when even its head does not fit.
    let table = |at: Option<usize>| {
        let mut t = Table::new([
            Col::left("CELL"),
            Col::right("RUNS"),
            Col::left("MEDIAN [95% CI]"),
            Col::left("RATIO [95% CI]"),
            Col::right("p (Holm)"),
            Col::left("VERDICT"),
        ]);
        let mut reasons = Vec::new();
        for (k, (cells, cmp)) in rows.iter().enumerate() {
            let fits = |v: &str| at.is_none_or(|at| at + v.chars().count() <= WIDTH);
            let (head, why) = match split_verdict(&verdicts[k]) {
                _ if fits(&verdicts[k]) => (verdicts[k].clone(), None),
                (head, why) if fits(&head) => (head, why),
                _ => (String::new(), Some(verdicts[k].clone())),
            };
            let shown = match cmp {
                Some(c) => paint_verdict(style, &c.verdict, &head),
                None => head,
            };
            t.row(cells.iter().cloned().chain([shown]));
            // Under the verdict: its reasons when they did not fit beside it, and which
            // runs were compared when not all.
            let note = cmp.and_then(|c| background_note(&c.background));
            reasons.push([why, note]);
        }
        let mut buf = Vec::new();
        t.write(&mut buf, style)?;
        Ok::<_, io::Error>((String::from_utf8_lossy(&buf).into_owned(), reasons))
    };
    let (mut text, mut reasons) = table(None)?;
    let header = text.lines().next().unwrap_or_default().to_string();
    let at = header
        .find("VERDICT")
        .map_or(0, |i| visible_width(&header[..i]));
    if verdicts.iter().any(|v| at + v.chars().count() > WIDTH) {
        (text, reasons) = table(Some(at))?;
    }
    let mut printed = text.lines();
    writeln!(out, "{}", printed.next().unwrap_or_default())?;
    for ((line, under), title) in printed.zip(reasons).zip(titles) {
        match title {
            Some(title) => writeln!(out, "{title}")?,
            None => writeln!(out, "{line}")?,
        }
        for why in under.into_iter().flatten() {
            // Under the verdict, or as far right as the width lets it.
            let indent = at.min(WIDTH.saturating_sub(why.chars().count()));
            writeln!(out, "{}{why}", " ".repeat(indent))?;
        }
    }
    Ok(())
}

/// Which runs a comparison stood on, when that is not simply all of them: `compared on
/// 4 and 6 quiet runs`, `foreign CPUs 0.92 against 0.01` (unequal background).
fn background_note(b: &Background) -> Option<String> {
    match b {
        Background::Unknown | Background::Equal => None,
        Background::QuietRunsOnly {
            cell_runs,
            baseline_runs,
        } => Some(format!(
            "compared on {cell_runs} and {baseline_runs} quiet runs"
        )),
        Background::SameForeign {
            processes,
            demand,
            cell_cpus,
            baseline_cpus,
        } => Some(format!(
            "beside {} wanting {demand:.2} CPUs in every run (got {cell_cpus:.2} and {baseline_cpus:.2})",
            if processes.is_empty() {
                "foreign work".to_string()
            } else {
                escape(&processes.join(", "))
            }
        )),
        Background::Unequal {
            cell_cpus,
            baseline_cpus,
        } => Some(format!(
            "foreign CPUs {cell_cpus:.2} against {baseline_cpus:.2}"
        )),
    }
}

/// A verdict's text in its colour: green better, red worse.
fn paint_verdict(style: &Style, v: &jitterlab_experiment::Significance, text: &str) -> String {
    match v {
        jitterlab_experiment::Significance::Real { better: true, .. } => style.good(text),
        jitterlab_experiment::Significance::Real { better: false, .. } => style.bad(text),
        _ => text.to_string(),
    }
}

/// The unit of the metric called `name`, if there is one.
fn unit_of<'a>(r: &'a ExperimentReport, name: &str) -> &'a str {
    r.metrics
        .iter()
        .find(|m| m.name == name)
        .map_or("", |m| m.unit.as_str())
}

fn warnings(r: &ExperimentReport, out: &mut dyn Write, style: &Style) -> io::Result<()> {
    if r.warnings.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{}", style.bold("warnings"))?;
    for w in &r.warnings {
        match w {
            Warning::Drift {
                metric,
                cell,
                rho,
                p,
            } => warning_line(
                out,
                style,
                "drift:",
                &format!(
                    "{} in {} trends across the rounds (Spearman's rho {rho:.2}, p {}): \
                     the machine changed while it ran",
                    escape(metric),
                    label(r, *cell),
                    p_value(*p)
                ),
            )?,
            Warning::SlowFirstRun {
                metric,
                cell,
                first,
                others_worst,
                others_median,
            } => {
                let u = unit_of(r, metric);
                warning_line(
                    out,
                    style,
                    "slow first run:",
                    &format!(
                        "{} in {}: {}, the others {} at worst (median {}): more warm-up",
                        escape(metric),
                        label(r, *cell),
                        value(*first, u),
                        value(*others_worst, u),
                        value(*others_median, u)
                    ),
                )?
            }
            Warning::Steps {
                series,
                cell,
                runs,
                of,
            } => {
                warning_line(
                    out,
                    style,
                    "steps:",
                    &format!(
                        "{} in {}: level shifts in {runs} of {}",
                        escape(series),
                        label(r, *cell),
                        plural(*of, "run", "runs")
                    ),
                )?;
                for run in r.runs.iter().filter(|x| x.cell == *cell && !x.warmup) {
                    for s in run.series.iter().filter(|s| &s.name == series) {
                        for st in &s.steps {
                            writeln!(
                                out,
                                "    run {} at {}: {} -> {} ({:+.1}%), held {}",
                                run.seq,
                                duration_ns(st.t_ns),
                                value(st.before, &s.unit),
                                value(st.after, &s.unit),
                                st.change * 100.0,
                                duration_ns(st.held_ns)
                            )?;
                        }
                    }
                }
            }
            Warning::BusyRuns {
                cell,
                runs,
                of,
                foreign_cpus,
                steal,
                top,
            } => warning_line(
                out,
                style,
                "busy:",
                &format!(
                "{}: {runs} of {} measured beside foreign work (median {:.2} CPUs of other processes{}, steal {:.1}%){}",
                label(r, *cell),
                plural(*of, "run", "runs"),
                foreign_cpus,
                top.as_deref()
                    .map_or_else(String::new, |t| format!(", most {}", escape(t))),
                steal * 100.0,
                if runs == of {
                    ": its comparisons stand only against cells beside the same work"
                } else {
                    ": compared on its quiet runs where there are enough, else not called real"
                }
                ),
            )?,
            Warning::KernelMessages {
                cell,
                runs,
                of,
                messages,
                first,
                run,
            } => warning_line(
                out,
                style,
                "kernel:",
                &format!(
                    "{}: the kernel logged {} in {runs} of {}, first in run {run}: \"{}\"",
                    label(r, *cell),
                    plural(*messages, "warning", "warnings"),
                    plural(*of, "run", "runs"),
                    escape(first)
                ),
            )?,
            Warning::FailedRuns { cell, runs } => {
                let body = format!(
                    "{}: {} left out of the statistics",
                    label(r, *cell),
                    plural(*runs, "run", "runs")
                );
                for (k, line) in wrap(&format!("failed: {body}"), "    ", WIDTH)
                    .iter()
                    .enumerate()
                {
                    match k {
                        0 => writeln!(out, "  {}{}", style.bad("failed:"), &line[11..])?,
                        _ => writeln!(out, "{line}")?,
                    }
                }
                for run in r.runs.iter().filter(|x| x.cell == *cell && !x.warmup) {
                    if let Some(e) = &run.error {
                        writeln!(
                            out,
                            "    run {} (round {}): {}",
                            run.seq,
                            run.round,
                            escape(e)
                        )?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// A warning: its `label` painted, then `body`, wrapped at [`WIDTH`] with the lines
/// after the first indented under it.
fn warning_line(out: &mut dyn Write, style: &Style, label: &str, body: &str) -> io::Result<()> {
    let indent = "    ";
    for (k, line) in wrap(&format!("{label} {body}"), indent, WIDTH)
        .iter()
        .enumerate()
    {
        match k {
            // The label's words are the first line's, each followed by one space.
            0 => writeln!(
                out,
                "  {}{}",
                style.warn(label),
                line.get(indent.len() + label.len()..).unwrap_or_default()
            )?,
            _ => writeln!(out, "{line}")?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitted_lists_stop_at_the_width() {
        let items: Vec<String> = (0..50).map(|i| i.to_string()).collect();
        let line = fitted("order:", &items, 40);
        assert!(line.len() <= 40, "{line}");
        assert!(line.ends_with(" more)"), "{line}");
        let few: Vec<String> = ["1", "2"].iter().map(|s| s.to_string()).collect();
        assert_eq!(fitted("order:", &few, 40), "order: 1 2");
    }
}
