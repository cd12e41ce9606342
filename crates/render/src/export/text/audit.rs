//! `jitterlab audit`: a summary that fits a screen (the verdict per RT CPU with its
//! limiting factor, the first recommendations), then the details: what was measured,
//! every finding with its evidence, why and fix, what needed root, and what changed
//! since an earlier audit.

use std::io::{self, Write};

use jitterlab_audit::{AuditReport, Measured, Verdict};
use jitterlab_host::lint::{Finding, FixKind, Severity};
use serde::Serialize;

use crate::units::{duration_ns, wrap};
use crate::{Col, Render, Style, Table};

/// Recommendations in the summary; the rest follow the findings.
const SUMMARY_RECOMMENDATIONS: usize = 8;

fn verdict(style: &Style, v: Verdict) -> String {
    match v {
        Verdict::Ready => style.good("READY"),
        Verdict::Tune => style.warn("TUNE"),
        Verdict::Unfit => style.bad("UNFIT"),
    }
}

fn severity(style: &Style, s: Severity) -> String {
    match s {
        Severity::High => style.bad("high  "),
        Severity::Medium => style.warn("medium"),
        Severity::Low => "low   ".to_string(),
        Severity::Info => style.dim("info  "),
    }
}

fn kind(k: FixKind) -> &'static str {
    match k {
        FixKind::Boot => "boot option",
        FixKind::Sysctl => "sysctl",
        FixKind::Jitterlab => "jitterlab",
        FixKind::Shell => "shell",
        FixKind::Kernel => "kernel",
        FixKind::Host => "host",
        FixKind::Config => "config file",
    }
}

fn finding(out: &mut dyn Write, style: &Style, f: &Finding) -> io::Result<()> {
    writeln!(
        out,
        "  {}  {}{}  {}",
        severity(style, f.severity),
        style.bold(&f.id),
        if f.noise_bound {
            style.warn(" (noise-bound)")
        } else {
            String::new()
        },
        f.what
    )?;
    for e in &f.evidence {
        for (i, l) in wrap(&format!("{}: {}", e.path, e.value), "", 88)
            .into_iter()
            .enumerate()
        {
            let lead = if i == 0 { "read " } else { "     " };
            writeln!(out, "            {}", style.dim(&format!("{lead}{l}")))?;
        }
    }
    for l in wrap(&format!("why: {}", f.why), "            ", 100) {
        writeln!(out, "{l}")?;
    }
    if let Some(fix) = &f.fix {
        let reboot = if fix.needs_reboot { ", reboot" } else { "" };
        for l in wrap(
            &format!("fix ({}{reboot}): {}", kind(fix.kind), fix.apply),
            "            ",
            100,
        ) {
            writeln!(out, "{l}")?;
        }
    }
    Ok(())
}

impl Render for AuditReport {
    const SCHEMA: &'static str = "jitterlab.audit";

    /// The whole audit (`jitterlab audit --verbose`): the summary's verdicts and first
    /// recommendations, what was measured, every finding with its evidence, the other
    /// recommendations, what needed root, what changed, and the verdict's meaning again
    /// at the end, where a terminal leaves the reader.
    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        verdicts(out, style, self)?;
        recommendations(out, style, self, SUMMARY_RECOMMENDATIONS, "below")?;
        if let Some(m) = &self.measured {
            measured_tables(out, style, m)?;
            spikes(out, m)?;
            noise_traced(out, style, m)?;
            interrupt_rates(out, style, m)?;
        }
        writeln!(out)?;
        writeln!(out, "{}", style.bold("findings"))?;
        let mut sorted: Vec<&Finding> = self.findings.iter().collect();
        sorted.sort_by_key(|f| std::cmp::Reverse(f.severity));
        for f in sorted {
            finding(out, style, f)?;
        }
        if self.recommendations.len() > SUMMARY_RECOMMENDATIONS {
            writeln!(out)?;
            writeln!(out, "{}", style.bold("more recommendations"))?;
            for r in self.recommendations.iter().skip(SUMMARY_RECOMMENDATIONS) {
                recommendation(out, style, r)?;
            }
        }
        if !self.needs_root.is_empty() {
            writeln!(out)?;
            writeln!(out, "{}", style.warn("not checked without root:"))?;
            for n in &self.needs_root {
                writeln!(out, "  {n}")?;
            }
        }
        if let Some(c) = &self.compare {
            compared(out, style, c, true)?;
        }
        meaning(out, style, self, false)
    }
}

/// `jitterlab audit` without `--verbose`: what fits a terminal's first screen. The
/// verdict per RT CPU and what limits it, the first recommendations, the measured
/// latency and noise in one table each, what changed since `--compare`'s audit in one
/// line per verdict, then what the verdict and the exit status mean and where the rest
/// is. Its JSON is the whole [`AuditReport`]'s.
#[derive(Serialize)]
#[serde(transparent)]
pub struct AuditSummary<'a>(pub &'a AuditReport);

/// Recommendations in the short summary; `--verbose` and the page have them all.
const SHORT_RECOMMENDATIONS: usize = 4;

impl Render for AuditSummary<'_> {
    const SCHEMA: &'static str = AuditReport::SCHEMA;
    const VERSION: u32 = AuditReport::VERSION;

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let r = self.0;
        verdicts(out, style, r)?;
        recommendations(out, style, r, SHORT_RECOMMENDATIONS, "with --verbose")?;
        if let Some(m) = &r.measured {
            measured_tables(out, style, m)?;
        }
        if !r.needs_root.is_empty() {
            writeln!(out)?;
            writeln!(
                out,
                "{}",
                style.warn(&format!(
                    "{} checks need root and were not run: run the audit as root to measure",
                    r.needs_root.len()
                ))
            )?;
        }
        if let Some(c) = &r.compare {
            compared(out, style, c, false)?;
        }
        meaning(out, style, r, true)
    }
}

/// The first lines: what was audited, the verdict, each RT CPU's verdict and what
/// limits it, the findings by severity.
fn verdicts(out: &mut dyn Write, style: &Style, r: &AuditReport) -> io::Result<()> {
    writeln!(
        out,
        "{} RT CPU {} ({}), housekeeping CPU {}; kernel {}; {} audit, {}",
        style.bold("audit"),
        r.rt_cpus,
        r.rt_cpus_from,
        r.housekeeping,
        if r.kernel.is_empty() { "-" } else { &r.kernel },
        r.mode,
        duration_ns(r.wall_ns)
    )?;
    writeln!(out, "verdict: {}", verdict(style, r.verdict))?;
    for v in &r.verdicts {
        let limit = match (&v.limiting, &v.limiting_what) {
            (Some(id), Some(what)) => format!(": {id}: {what}"),
            _ => String::new(),
        };
        writeln!(
            out,
            "  CPU {:<3} {}{limit}",
            v.cpu,
            verdict(style, v.verdict)
        )?;
        writeln!(
            out,
            "           {}",
            style.dim(&format!(
                "{} high, {} medium, {} low",
                v.high, v.medium, v.low
            ))
        )?;
    }
    let count = |s: Severity| r.findings.iter().filter(|f| f.severity == s).count();
    writeln!(
        out,
        "findings: {} ({} high, {} medium, {} low, {} info)",
        r.findings.len(),
        count(Severity::High),
        count(Severity::Medium),
        count(Severity::Low),
        count(Severity::Info)
    )
}

/// The first `first` recommendations, and how many more there are and `where` they are.
fn recommendations(
    out: &mut dyn Write,
    style: &Style,
    r: &AuditReport,
    first: usize,
    rest_where: &str,
) -> io::Result<()> {
    if r.recommendations.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        style.bold("recommendations, most effective first")
    )?;
    for rec in r.recommendations.iter().take(first) {
        recommendation(out, style, rec)?;
    }
    if r.recommendations.len() > first {
        writeln!(
            out,
            "     ... {} more {rest_where}",
            r.recommendations.len() - first
        )?;
    }
    Ok(())
}

fn recommendation(
    out: &mut dyn Write,
    style: &Style,
    r: &jitterlab_audit::Recommendation,
) -> io::Result<()> {
    let reboot = if r.needs_reboot { ", reboot" } else { "" };
    let mut lines = wrap(&r.apply, "", 90).into_iter();
    writeln!(
        out,
        "{:>3}. [{}{reboot}] {}",
        r.rank,
        kind(r.kind),
        lines.next().unwrap_or_default()
    )?;
    for l in lines {
        writeln!(out, "       {l}")?;
    }
    let removes = crate::units::names(&r.resolves, 4);
    for l in wrap(
        &format!("removes {removes}; check: {}", r.check),
        "       ",
        100,
    ) {
        writeln!(out, "{}", style.dim(&l))?;
    }
    Ok(())
}

/// The latency probe's table (a row per phase and RT CPU) and the noise probe's (a row
/// per RT CPU).
fn measured_tables(out: &mut dyn Write, style: &Style, m: &Measured) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        style.bold("latency probe (SCHED_FIFO, 1 ms period)")
    )?;
    let mut t = Table::new([
        Col::left("LOAD"),
        Col::right("CPU"),
        Col::right("SAMPLES"),
        Col::right("P50"),
        Col::right("P99"),
        Col::right("P99.99"),
        Col::right("MAX"),
        Col::right("MAX BY HALF"),
    ]);
    for p in &m.latency {
        for s in &p.cpus {
            let halves = p.halves.iter().find(|h| h.cpu == s.cpu).map_or_else(
                || "-".to_string(),
                |h| {
                    format!(
                        "{} / {}",
                        duration_ns(h.max_ns[0]),
                        duration_ns(h.max_ns[1])
                    )
                },
            );
            t.row([
                p.load.clone(),
                s.cpu.to_string(),
                s.samples.to_string(),
                duration_ns(s.p50_ns),
                duration_ns(s.p99_ns),
                duration_ns(s.p99_99_ns),
                duration_ns(s.max_ns),
                halves,
            ]);
        }
    }
    t.write(out, style)?;
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        style.bold("noise probe (a SCHED_FIFO thread reading the clock)")
    )?;
    let mut t = Table::new([
        Col::right("CPU"),
        Col::right("WINDOW"),
        Col::right("GAPS"),
        Col::right("NOISE"),
        Col::right("AVAILABLE"),
        Col::right("LONGEST"),
        Col::right("LONGEST BY HALF"),
        Col::left("INTERRUPTS IN THE WINDOW"),
    ]);
    for (n, halves) in m.noise.iter().map(|n| (&n.result, &n.halves)) {
        let irqs: Vec<String> = n
            .interrupts
            .iter()
            .map(|(l, c)| format!("{l} x{c}"))
            .collect();
        t.row([
            n.cpu.to_string(),
            duration_ns(n.gaps.window_ns),
            n.gaps.count.to_string(),
            duration_ns(n.gaps.noise_ns),
            format!("{:.3} %", n.available_ppm as f64 / 10_000.0),
            n.gaps
                .longest
                .first()
                .map_or("-".to_string(), |g| duration_ns(g.ns)),
            match halves.as_slice() {
                [a, b] => format!(
                    "{} / {}",
                    duration_ns(a.longest_ns),
                    duration_ns(b.longest_ns)
                ),
                _ => "-".to_string(),
            },
            crate::units::names(&irqs, 4),
        ]);
    }
    t.write(out, style)
}

/// Each latency phase's worst spike with the interrupts around it, and its blamed
/// wake-up in the trace.
fn spikes(out: &mut dyn Write, m: &Measured) -> io::Result<()> {
    for p in &m.latency {
        if let Some(sp) = &p.worst_spike {
            let irqs: Vec<String> = sp
                .interrupts
                .iter()
                .map(|d| format!("{} x{}", d.name, d.count))
                .collect();
            writeln!(
                out,
                "worst spike, {}: {} on CPU {}; interrupts in its window: {}",
                p.load,
                duration_ns(sp.latency_ns),
                sp.cpu,
                if irqs.is_empty() {
                    "none (a stall no interrupt explains)".to_string()
                } else {
                    crate::units::names(&irqs, 5)
                }
            )?;
        }
        if let Some(b) = &p.blamed {
            writeln!(
                out,
                "blamed, {}: the probe's worst recorded wake-up in the trace, {} on CPU {} at {} ms: {} ({})",
                p.load,
                duration_ns(b.latency_ns),
                b.cpu,
                b.t_ns / 1_000_000,
                b.verdict,
                b.cause.replace('_', " ")
            )?;
        } else if let Some(note) = &p.blame_note {
            writeln!(out, "not blamed, {}: {note}", p.load)?;
        }
        if let Some(t) = &p.trace {
            writeln!(out, "  trace: {t} (its timeline: {t}.html)")?;
        }
    }
    Ok(())
}

/// What changed since `--compare`'s audit: the counts and the verdicts, and with
/// `each`, every finding gone and new.
fn compared(
    out: &mut dyn Write,
    style: &Style,
    c: &jitterlab_audit::Comparison,
    each: bool,
) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "{} {}: {} gone, {} new, {} kept",
        style.bold("compared with"),
        c.old,
        c.gone.len(),
        c.new.len(),
        c.kept
    )?;
    for v in &c.verdicts {
        writeln!(
            out,
            "  CPU {}: {} -> {}",
            v.cpu,
            v.before.as_deref().unwrap_or("-"),
            v.now.as_deref().unwrap_or("-")
        )?;
    }
    if each {
        for (tag, list) in [("gone", &c.gone), ("new ", &c.new)] {
            for k in list {
                writeln!(out, "  {tag}  {} {}: {}", k.severity, k.id, k.what)?;
            }
        }
    }
    Ok(())
}

/// The last lines: what the verdict means, the exit status it gives (3 is the audit's
/// answer for a CI gate, not a failure), and in the summary where the details are.
fn meaning(out: &mut dyn Write, style: &Style, r: &AuditReport, summary: bool) -> io::Result<()> {
    let cpus = |v: Verdict| -> Vec<String> {
        r.verdicts
            .iter()
            .filter(|c| c.verdict == v)
            .map(|c| c.cpu.to_string())
            .collect()
    };
    let (unfit, tune) = (cpus(Verdict::Unfit), cpus(Verdict::Tune));
    let plural = |l: &[String]| if l.len() == 1 { "" } else { "s" };
    writeln!(out)?;
    let what = match r.verdict {
        Verdict::Unfit => format!(
            "CPU{} {} cannot meet a deadline as it is: a high finding limits it (above), and \
             the recommendations remove it. Exit status 3: the audit's answer, for CI gates, \
             not a failed audit (that exits 1)",
            plural(&unfit),
            unfit.join(", ")
        ),
        Verdict::Tune => format!(
            "CPU{} {} can run real-time work, with the latency its medium findings add, which \
             the recommendations remove. Exit status 0 (3 when an RT CPU is unfit)",
            plural(&tune),
            tune.join(", ")
        ),
        Verdict::Ready => "nothing of medium or high severity concerns the RT CPUs. Exit status 0 \
             (3 when an RT CPU is unfit)"
            .to_string(),
    };
    // Wrapped uncoloured (colour codes have no width), the verdict coloured after.
    let plain_head = format!("verdict {}: ", r.verdict.name().to_uppercase());
    for l in hanging(&format!("{plain_head}{what}")) {
        match l.strip_prefix(&plain_head) {
            Some(rest) => writeln!(out, "verdict {}: {rest}", verdict(style, r.verdict))?,
            None => writeln!(out, "{l}")?,
        }
    }
    if summary {
        let mut details = vec![format!("{} findings with their evidence", r.findings.len())];
        if r.recommendations.len() > SHORT_RECOMMENDATIONS {
            details.push(format!(
                "{} more recommendations",
                r.recommendations.len() - SHORT_RECOMMENDATIONS
            ));
        }
        if r.measured.is_some() {
            details.push("the spikes blamed and the noise traced".to_string());
        }
        let text = format!(
            "details: {}: jitterlab audit --verbose, or --html FILE for a page",
            details.join(", ")
        );
        for l in hanging(&text) {
            writeln!(out, "{}", style.dim(&l))?;
        }
    }
    Ok(())
}

/// `text` wrapped at 100 columns, its lines after the first indented by two.
fn hanging(text: &str) -> impl Iterator<Item = String> {
    wrap(text, "", 98)
        .into_iter()
        .enumerate()
        .map(|(i, l)| if i == 0 { l } else { format!("  {l}") })
}

/// What the trace of each noise window shows: the time of each kind away from the
/// probe, the rest untraced, and the longest gaps with nothing in them.
fn noise_traced(out: &mut dyn Write, style: &Style, m: &Measured) -> io::Result<()> {
    if m.noise
        .iter()
        .all(|n| n.traced.is_none() && n.trace_note.is_none())
    {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        style.bold("the noise windows in the trace (what took the CPU from the probe)")
    )?;
    let mut t = Table::new([
        Col::right("CPU"),
        Col::right("NOISE"),
        Col::right("TRACED"),
        Col::right("IRQ"),
        Col::right("VECTORS"),
        Col::right("TIMERS"),
        Col::right("SOFTIRQ"),
        Col::right("THREADS"),
        Col::right("IDLE"),
        Col::right("UNTRACED"),
        Col::left("SILENT GAPS"),
    ]);
    let mut notes = Vec::new();
    for n in &m.noise {
        let r = &n.result;
        let Some(a) = &n.traced else {
            if let Some(note) = &n.trace_note {
                notes.push(format!("CPU {}: no account: {note}", r.cpu));
            }
            continue;
        };
        let (silent, silent_ns) = a.silent();
        t.row([
            r.cpu.to_string(),
            duration_ns(r.gaps.noise_ns),
            duration_ns(a.traced_ns),
            duration_ns(a.irq_ns),
            duration_ns(a.vector_ns),
            duration_ns(a.timer_ns),
            duration_ns(a.softirq_ns),
            duration_ns(a.thread_ns),
            duration_ns(a.idle_ns),
            duration_ns(r.gaps.noise_ns.saturating_sub(a.traced_ns)),
            if silent == 0 {
                format!("none of {}", a.gap_count())
            } else {
                format!("{silent} of {}, {}", a.gap_count(), duration_ns(silent_ns))
            },
        ]);
        if let Some(g) = a.gaps.first() {
            notes.push(format!(
                "CPU {}: the longest gap, {} at {} ms: {}",
                r.cpu,
                duration_ns(g.ns),
                g.at_ns / 1_000_000,
                if g.what.is_empty() {
                    "no event in the trace".to_string()
                } else {
                    format!("{} ({})", g.what.join(", "), g.cause.name())
                }
            ));
        }
        if let Some(tr) = &n.trace {
            notes.push(format!(
                "CPU {}: trace: {tr} (its timeline: {tr}.html)",
                r.cpu
            ));
        }
    }
    t.write(out, style)?;
    for n in notes {
        writeln!(out, "{n}")?;
    }
    Ok(())
}

/// The interrupts and softirqs of each RT CPU per second, over each measured window.
fn interrupt_rates(out: &mut dyn Write, style: &Style, m: &Measured) -> io::Result<()> {
    let windows = m
        .latency
        .iter()
        .flat_map(|p| {
            p.interrupts
                .iter()
                .map(move |c| (format!("latency, {}", p.load), c.cpu, p.wall_ns, &c.counts))
        })
        .chain(m.noise.iter().map(|n| {
            (
                "noise".to_string(),
                n.result.cpu,
                n.result.gaps.window_ns,
                &n.result.interrupts,
            )
        }));
    let mut t = Table::new([
        Col::left("WINDOW"),
        Col::right("CPU"),
        Col::right("LENGTH"),
        Col::right("PER SECOND"),
        Col::left("MOST (PER SECOND)"),
    ]);
    let mut rows = 0;
    for (window, cpu, ns, counts) in windows {
        let per_s = |n: u64| n as f64 * 1e9 / ns.max(1) as f64;
        let total: u64 = counts.iter().map(|(_, c)| c).sum();
        let most: Vec<String> = counts
            .iter()
            .map(|(l, c)| format!("{l} {:.0}", per_s(*c)))
            .collect();
        t.row([
            window,
            cpu.to_string(),
            duration_ns(ns),
            format!("{:.0}", per_s(total)),
            crate::units::names(&most, 4),
        ]);
        rows += 1;
    }
    if rows == 0 {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        style.bold("interrupts and softirqs on the RT CPUs, per second of each window")
    )?;
    t.write(out, style)
}
