//! The event-line format of `jitterlab report`: one line per event as `trace-cmd report`
//! prints it, `comm-pid [cpu] seconds.micros: name: fields`.
//!
//! A streaming format: the command feeds events one by one (memory does not grow with the
//! trace), each through [`Events`]' [`Exporter::write`] with the task name it resolved;
//! [`EventsJson`] writes the same events as JSON lines (`report --json`).

use std::io::{self, Write};

use jitterlab_trace::{Event, EventKind, Sym, Value};

use super::Exporter;

/// One event and the name of the task it ran in (trace-cmd's `comm`).
#[derive(Clone, Copy, Debug)]
pub struct EventLine<'a> {
    /// The event.
    pub event: &'a Event,
    /// The name of the task `event.pid`.
    pub comm: &'a str,
}

/// The event-line format.
#[derive(Clone, Copy, Debug, Default)]
pub struct Events;

impl Exporter<EventLine<'_>> for Events {
    fn write(&self, line: &EventLine<'_>, out: &mut dyn Write) -> io::Result<()> {
        event_line(out, line.event, line.comm)
    }
}

/// The event-line format of `report --json`: one JSON object per line, the event's
/// `Serialize` form (its `event` field names it).
#[derive(Clone, Copy, Debug, Default)]
pub struct EventsJson;

impl Exporter<EventLine<'_>> for EventsJson {
    fn write(&self, line: &EventLine<'_>, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer(&mut *out, line.event)?;
        writeln!(out)
    }
}

/// Writes one event line: `comm-pid [cpu] seconds.micros: name: fields`. The same as
/// [`Events`]' [`Exporter::write`].
pub fn write_event_line(out: &mut dyn Write, ev: &Event, comm: &str) -> io::Result<()> {
    event_line(out, ev, comm)
}

/// A symbol as the kernel prints it: its name, else its address.
fn sym(s: &Sym) -> String {
    match &s.name {
        Some(n) => n.to_string(),
        None => format!("{:#x}", s.addr),
    }
}

fn event_line(out: &mut dyn Write, ev: &Event, comm: &str) -> io::Result<()> {
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
