//! `jitterlab isolate`: the plan (with `--dry-run`), or the plan with each step's result.

use std::io::{self, Write};

use jitterlab_cpuset::CpuSet;
use jitterlab_host::partition::{
    Action, ApplyReport, Outcome, Plan, Step, StepResult, Target, TaskMove,
};

use crate::units::{duration_ns, names};
use crate::{Col, Render, Style, Table};

impl Render for Plan {
    const SCHEMA: &'static str = "jitterlab.isolate.plan";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        write_plan(out, style, self, None, &[])?;
        if self.ok() {
            writeln!(
                out,
                "dry run: nothing changed; without --dry-run these {} steps are applied and \
                 journalled in {}",
                self.steps.len(),
                self.state_dir
            )
        } else {
            writeln!(
                out,
                "{}",
                style.bad("a check failed: the plan cannot be applied")
            )
        }
    }
}

impl Render for ApplyReport {
    const SCHEMA: &'static str = "jitterlab.isolate";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        write_plan(
            out,
            style,
            &self.plan,
            Some(&self.results),
            &self.late_steps,
        )?;
        let count =
            |f: &dyn Fn(&Outcome) -> bool| self.results.iter().filter(|r| f(&r.outcome)).count();
        let pending = count(&|o| *o == Outcome::Pending);
        let gone = count(&|o| *o == Outcome::Gone);
        let mut parts = vec![format!("{} done", count(&|o| *o == Outcome::Done))];
        if pending > 0 {
            parts.push(format!(
                "{pending} pending (IRQs that move when they next fire)"
            ));
        }
        if gone > 0 {
            parts.push(format!("{gone} gone (threads that exited)"));
        }
        if self.refusals() > 0 {
            parts.push(style.warn(&format!("{} refused (see the remedy)", self.refusals())));
        }
        if self.failures() > 0 {
            parts.push(style.bad(&format!("{} failed", self.failures())));
        }
        writeln!(
            out,
            "{} steps in {}: {}{}",
            self.results.len(),
            duration_ns(self.elapsed_ns),
            parts.join(", "),
            if self.late_steps.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} of them threads that appeared meanwhile",
                    self.late_steps.len()
                )
            }
        )?;
        match (&self.rolled_back, &self.revert) {
            (None, _) => writeln!(
                out,
                "{} CPU {} is isolated; journal {}. Start the application with `jitterlab run \
                 --cpus {} -- CMD`, check with `jitterlab verify`, undo with `jitterlab revert`.",
                style.good("done:"),
                self.plan.cpus,
                self.journal,
                self.plan.cpus
            ),
            (Some(why), revert) => {
                writeln!(out, "{} {why}", style.bad("ROLLED BACK:"))?;
                if let Some(r) = revert {
                    writeln!(out)?;
                    r.text(out, style)?;
                }
                Ok(())
            }
        }
    }
}

/// A mask file's value with its list form: `1 (CPU 0)`.
fn mask(value: &str) -> String {
    match CpuSet::parse_mask(value) {
        Ok(set) if !value.is_empty() => format!("{value} (CPU {set})"),
        _ => value.to_string(),
    }
}

fn result_cell(style: &Style, r: Option<&StepResult>) -> String {
    match r.map(|r| &r.outcome) {
        None => String::new(),
        Some(Outcome::Done) => style.good("done"),
        Some(Outcome::Pending) => {
            style.warn("done; still delivered to the old CPU until it next fires")
        }
        Some(Outcome::Gone) => style.dim("exited meanwhile"),
        Some(Outcome::Refused { error, remedy }) => style.warn(&format!(
            "REFUSED: {error}{}",
            remedy
                .as_ref()
                .map(|r| format!(" — {r}"))
                .unwrap_or_default()
        )),
        Some(Outcome::Failed { error }) => style.bad(&format!("FAILED: {error}")),
    }
}

fn task_what(t: &TaskMove) -> String {
    if t.pid == t.tid {
        format!("{} (pid {})", t.comm, t.pid)
    } else {
        format!("{} (pid {} tid {})", t.comm, t.pid, t.tid)
    }
}

/// The checks, warnings, steps (grouped, with results when applied), exclusions
/// and the threads that cannot move.
fn write_plan(
    out: &mut dyn Write,
    style: &Style,
    plan: &Plan,
    results: Option<&[StepResult]>,
    late: &[Step],
) -> io::Result<()> {
    writeln!(
        out,
        "{} CPU {}, everything else on CPU {}, method {}",
        style.bold("isolate"),
        plan.cpus,
        plan.housekeeping,
        plan.method.name()
    )?;
    writeln!(out)?;
    let mut t = Table::new([Col::left("CHECK"), Col::left(""), Col::left("FOUND")]);
    for c in &plan.checks {
        t.row([
            c.name.clone(),
            if c.ok {
                style.good("ok")
            } else {
                style.bad("FAILED")
            },
            c.detail.clone(),
        ]);
    }
    t.write(out, style)?;
    for w in &plan.warnings {
        writeln!(out, "{}", style.warn(&format!("warning: {w}")))?;
    }
    let result = |seq: usize| results.and_then(|rs| rs.iter().find(|r| r.seq == seq));
    let headers = |first: &'static str| {
        let mut h = vec![
            Col::right("STEP"),
            Col::left(first),
            Col::left("OLD"),
            Col::left("NEW"),
        ];
        if results.is_some() {
            h.push(Col::left("RESULT"));
        }
        h
    };
    let steps: Vec<&Step> = plan.steps.iter().chain(late).collect();
    let group = |f: &dyn Fn(&Action) -> bool| -> Vec<&Step> {
        steps.iter().copied().filter(|s| f(&s.action)).collect()
    };
    let system = group(&|a| !matches!(a, Action::Task(_)));
    if !system.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{}",
            style.bold("cpusets, sysctls, workqueues and IRQs")
        )?;
        let mut t = Table::new(headers("WHAT"));
        for s in system {
            let (what, old, new) = match &s.action {
                Action::Write {
                    path,
                    old,
                    new,
                    target,
                    ..
                } => {
                    let (what, masked) = match target {
                        Target::Irq { irq, label } => (format!("IRQ {irq} {label}"), false),
                        Target::IrqDefault | Target::WorkqueueMask | Target::Workqueue { .. } => {
                            (path.clone(), true)
                        }
                        Target::Sysctl { name } => (name.clone(), false),
                        Target::Cpuset => (path.clone(), false),
                        Target::IdleLatency { cpu } => {
                            (format!("CPU {cpu} idle exit latency limit ({path})"), false)
                        }
                    };
                    let show = |v: &str| match target {
                        Target::IdleLatency { .. } => idle_limit(v),
                        _ if masked => mask(v),
                        _ => v.to_string(),
                    };
                    (
                        what,
                        if old.is_empty() {
                            "(new)".into()
                        } else {
                            show(old)
                        },
                        show(new),
                    )
                }
                Action::Mkdir { path, .. } => {
                    (format!("mkdir {path}"), String::new(), String::new())
                }
                Action::StopIrqbalance(ib) => (
                    format!("stop irqbalance (pid {})", ib.pid),
                    "running".into(),
                    "stopped".into(),
                ),
                Action::Task(_) => unreachable!("tasks are listed apart"),
            };
            let mut row = vec![(s.seq + 1).to_string(), what, old, new];
            if results.is_some() {
                row.push(result_cell(style, result(s.seq)));
            }
            t.row(row);
        }
        t.write(out, style)?;
    }
    let tasks = group(&|a| matches!(a, Action::Task(_)));
    if !tasks.is_empty() {
        let kthreads = tasks
            .iter()
            .filter(|s| matches!(&s.action, Action::Task(m) if m.kind.is_kthread()))
            .count();
        writeln!(out)?;
        writeln!(
            out,
            "{}",
            style.bold(&format!(
                "threads: {} user, {kthreads} kernel (every thread is checked by pid and start time before it is moved)",
                tasks.len() - kthreads
            ))
        )?;
        let mut t = Table::new(headers("THREAD"));
        for s in tasks {
            let Action::Task(m) = &s.action else { continue };
            let new = match &m.cpuset {
                Some(c) => format!("{} in cpuset {}", m.new_allowed, c.to),
                None => m.new_allowed.to_string(),
            };
            let mut row = vec![
                (s.seq + 1).to_string(),
                task_what(m),
                m.old_allowed.to_string(),
                new,
            ];
            if results.is_some() {
                row.push(result_cell(style, result(s.seq)));
            }
            t.row(row);
        }
        t.write(out, style)?;
    }
    if !plan.excluded.is_empty() {
        writeln!(out)?;
        writeln!(out, "{}", style.bold("left where they are"))?;
        for e in &plan.excluded {
            writeln!(
                out,
                "  {} (pid {}, {} thread{}, CPUs {}): {}",
                e.comm,
                e.pid,
                e.threads,
                if e.threads == 1 { "" } else { "s" },
                e.allowed,
                e.reason
            )?;
        }
    }
    if !plan.unmovable.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{}",
            style.bold(&format!("cannot move, stay on CPU {}", plan.cpus))
        )?;
        let mut reasons: Vec<(&str, Vec<String>)> = Vec::new();
        for u in &plan.unmovable {
            match reasons.iter_mut().find(|(r, _)| *r == u.reason) {
                Some((_, v)) => v.push(u.comm.clone()),
                None => reasons.push((&u.reason, vec![u.comm.clone()])),
            }
        }
        for (reason, comms) in reasons {
            writeln!(out, "  {}: {reason}", names(&comms, 8))?;
        }
    }
    writeln!(out)
}

/// A PM QoS resume latency limit in words: the file says `0` for none and `n/a`
/// for 0 us.
fn idle_limit(v: &str) -> String {
    match v {
        "0" => "0 (no limit)".into(),
        "n/a" => "n/a (0 us: poll)".into(),
        us => format!("{us} us"),
    }
}
