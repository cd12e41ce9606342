//! `jitterlab report`: events one per line as `trace-cmd report` prints them, and the
//! counts of `--stats`.

use std::io::{self, Write};

use jitterlab_trace::stats::TraceStats;
use jitterlab_trace::{Event, EventKind, Sym, Value};

use crate::units::duration_ns;
use crate::{Col, Render, Style, Table};

/// A symbol as the kernel prints it: its name, else its address.
fn sym(s: &Sym) -> String {
    match &s.name {
        Some(n) => n.to_string(),
        None => format!("{:#x}", s.addr),
    }
}

/// Writes one event line: `comm-pid [cpu] seconds.micros: name: fields`.
pub fn write_event_line(out: &mut dyn Write, ev: &Event, comm: &str) -> io::Result<()> {
    let task = format!("{comm}-{}", ev.pid);
    write!(
        out,
        "{task:>22} [{:03}] {:>6}.{:06}: {:<20} ",
        ev.cpu,
        ev.ts / 1_000_000_000,
        ev.ts % 1_000_000_000 / 1000,
        format!("{}:", ev.kind.name())
    )?;
    match &ev.kind {
        EventKind::SchedSwitch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
        } => write!(
            out,
            "prev_comm={prev_comm} prev_pid={prev_pid} prev_prio={prev_prio} prev_state={prev_state} ==> next_comm={next_comm} next_pid={next_pid} next_prio={next_prio}"
        ),
        EventKind::SchedWaking(w) | EventKind::SchedWakeup(w) | EventKind::SchedWakeupNew(w) => {
            write!(
                out,
                "comm={} pid={} prio={} target_cpu={:03}",
                w.comm, w.pid, w.prio, w.target_cpu
            )
        }
        EventKind::SchedMigrateTask {
            comm,
            pid,
            prio,
            orig_cpu,
            dest_cpu,
        } => write!(
            out,
            "comm={comm} pid={pid} prio={prio} orig_cpu={orig_cpu} dest_cpu={dest_cpu}"
        ),
        EventKind::SchedProcessFork {
            parent_comm,
            parent_pid,
            child_comm,
            child_pid,
        } => write!(
            out,
            "comm={parent_comm} pid={parent_pid} child_comm={child_comm} child_pid={child_pid}"
        ),
        EventKind::SchedProcessExec {
            filename,
            pid,
            old_pid,
        } => write!(out, "filename={filename} pid={pid} old_pid={old_pid}"),
        EventKind::SchedProcessExit { comm, pid, prio } => {
            write!(out, "comm={comm} pid={pid} prio={prio}")
        }
        EventKind::IrqHandlerEntry { irq, name } => write!(out, "irq={irq} name={name}"),
        EventKind::IrqHandlerExit { irq, ret } => write!(
            out,
            "irq={irq} ret={}",
            if *ret != 0 { "handled" } else { "unhandled" }
        ),
        EventKind::SoftirqRaise { vec }
        | EventKind::SoftirqEntry { vec }
        | EventKind::SoftirqExit { vec } => write!(out, "vec={vec} [action={}]", softirq_name(*vec)),
        EventKind::HrtimerExpireEntry {
            hrtimer,
            now,
            function,
        } => write!(
            out,
            "hrtimer={hrtimer:#x} now={now} function={}",
            sym(function)
        ),
        EventKind::HrtimerExpireExit { hrtimer } => write!(out, "hrtimer={hrtimer:#x}"),
        EventKind::IpiSendCpu {
            cpu,
            callsite,
            callback,
        } => write!(
            out,
            "cpu={cpu} callsite={} callback={}",
            sym(callsite),
            sym(callback)
        ),
        EventKind::WorkqueueExecuteStart { work, function }
        | EventKind::WorkqueueExecuteEnd { work, function } => {
            write!(out, "work struct {work:#x}: function {}", sym(function))
        }
        EventKind::Print { text, .. } => write!(out, "{text}"),
        EventKind::FuncEntry { func, depth } => write!(out, "depth={depth} func={}", sym(func)),
        EventKind::FuncReturn {
            func,
            depth,
            duration,
        } => write!(
            out,
            "depth={depth} func={} duration={}",
            sym(func),
            duration.map_or("-".into(), |d| d.to_string())
        ),
        EventKind::Lost { count } => match count {
            Some(n) => write!(out, "[LOST {n} EVENTS]"),
            None => write!(out, "[LOST EVENTS]"),
        },
        EventKind::Other { fields, .. } => {
            let parts: Vec<String> = fields
                .iter()
                .map(|(k, v)| match v {
                    Value::Int(i) => format!("{k}={i}"),
                    Value::Uint(u) => format!("{k}={u}"),
                    Value::Str(s) => format!("{k}={s}"),
                    Value::Bytes(b) => format!("{k}=[{} bytes]", b.len()),
                })
                .collect();
            write!(out, "{}", parts.join(" "))
        }
        _ => Ok(()),
    }?;
    writeln!(out)
}

/// The kernel's name of a softirq vector.
fn softirq_name(vec: u32) -> &'static str {
    jitterlab_trace::SOFTIRQ_NAMES
        .get(vec as usize)
        .copied()
        .unwrap_or("?")
}

impl Render for TraceStats {
    const SCHEMA: &'static str = "jitterlab.report.stats";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let span = match (self.first_ts, self.last_ts) {
            (Some(a), Some(b)) => format!(
                "{}.{:06} s to {}.{:06} s ({})",
                a / 1_000_000_000,
                a % 1_000_000_000 / 1000,
                b / 1_000_000_000,
                b % 1_000_000_000 / 1000,
                duration_ns(b - a)
            ),
            _ => "-".into(),
        };
        writeln!(out, "{}: {}", self.file, self.format)?;
        writeln!(out, "{} events, {span}", self.total)?;
        if self.skipped > 0 {
            writeln!(
                out,
                "{}",
                style.warn(&format!("{} undecodable records skipped", self.skipped))
            )?;
        }
        let mut t = Table::new([Col::left("EVENT"), Col::right("COUNT")]);
        for e in &self.by_event {
            t.row([e.name.clone(), e.count.to_string()]);
        }
        t.write(out, style)?;
        writeln!(out)?;
        let mut t = Table::new([
            Col::right("CPU"),
            Col::right("EVENTS"),
            Col::right("LOST"),
            Col::left("FIRST"),
            Col::left("LAST"),
        ]);
        let ts = |t: Option<u64>| {
            t.map_or("-".into(), |t| {
                format!("{}.{:06}", t / 1_000_000_000, t % 1_000_000_000 / 1000)
            })
        };
        for c in &self.per_cpu {
            let lost = match c.lost {
                Some(0) if !self.lost_recorded => "?".to_string(),
                Some(0) => "0".to_string(),
                Some(n) => style.bad(&n.to_string()),
                None => style.bad("some"),
            };
            t.row([
                c.cpu.to_string(),
                c.events.to_string(),
                lost,
                ts(c.first_ts),
                ts(c.last_ts),
            ]);
        }
        t.write(out, style)?;
        if !self.lost_recorded {
            writeln!(
                out,
                "{}",
                style.warn(&format!(
                    "lost events: unknown ({} does not record them)",
                    self.format
                ))
            )?;
        }
        Ok(())
    }
}
