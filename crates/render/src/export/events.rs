//! The event-line format of `jitterlab report`: one line per event as `trace-cmd report`
//! prints it, `comm-pid [cpu] seconds.micros: name: fields` in its columns
//! (`%16s-%-5d [%03d] %5lu.%06lu: %s: ` and the name padded to 20), the time rounded to
//! the microsecond; a .dat's fields as its print format prints them (the text comes with
//! the line, [`EventLine::info`]), a text trace's from its decoded fields; a loss as
//! `CPU:N [M EVENTS DROPPED]` before the next line of that CPU; the buffer's name before
//! each line when the lines mix several buffers of a .dat.
//!
//! A streaming format: the command feeds events one by one (memory does not grow with the
//! trace), each through [`Events`]' [`Exporter::write`] with the task name it resolved;
//! [`EventsJson`] writes the same events as JSON lines (`report --json`).

use std::io::{self, Write};

use jitterlab_trace::{Event, EventJson, EventKind, Sym, Text, Value};

use super::Exporter;

/// One event and what its line shows besides it.
#[derive(Clone, Copy, Debug)]
pub struct EventLine<'a> {
    /// The event.
    pub event: &'a Event,
    /// The name of the task `event.pid`.
    pub comm: &'a str,
    /// The event's name as its format names it (a .dat's `bputs` is a `print` event);
    /// `None`: [`EventKind::name`].
    pub name: Option<&'a str>,
    /// The text of its fields as its print format prints them (a .dat's); `None`: made
    /// from the decoded fields.
    pub info: Option<&'a [u8]>,
    /// When the lines mix several buffers: this event's buffer's name (`""`: the top
    /// buffer) and the longest name's length, which the prefix is aligned to (after a
    /// loss, the notice takes the prefix and the event's line goes without it).
    pub buffer: Option<(&'a str, usize)>,
    /// A loss on this CPU before the event, printed on a line before it (`Some(None)`:
    /// of an unknown count).
    pub dropped: Option<Option<u64>>,
    /// Timestamps as seconds with six decimals (else the raw count, as trace-cmd prints a
    /// clock that does not count nanoseconds).
    pub seconds: bool,
    /// The fields of its format that its typed variant does not keep (JSON only).
    pub untyped: &'a [(Text, Value)],
}

impl<'a> EventLine<'a> {
    /// The line of `event` with nothing but its task name: fields from the decoded
    /// event, timestamps in seconds.
    pub fn new(event: &'a Event, comm: &'a str) -> EventLine<'a> {
        EventLine {
            event,
            comm,
            name: None,
            info: None,
            buffer: None,
            dropped: None,
            seconds: true,
            untyped: &[],
        }
    }
}

/// The event-line format.
#[derive(Clone, Copy, Debug, Default)]
pub struct Events;

impl Exporter<EventLine<'_>> for Events {
    fn write(&self, line: &EventLine<'_>, out: &mut dyn Write) -> io::Result<()> {
        self.write_with(line, &mut Vec::with_capacity(160), out)
    }
}

impl Events {
    /// [`Exporter::write`], the line made in `buf` (cleared first): a caller writing
    /// many lines keeps one buffer for all of them.
    pub fn write_with(
        &self,
        line: &EventLine<'_>,
        buf: &mut Vec<u8>,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        buf.clear();
        event_line(buf, line)?;
        out.write_all(buf)
    }
}

/// The event-line format of `report --json`: one JSON object per line, the event's
/// `Serialize` form (its `event` field names it), its buffer's name when the lines mix
/// buffers and it is an instance's, and the fields of its format its typed variant does
/// not keep ([`EventJson`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct EventsJson;

impl Exporter<EventLine<'_>> for EventsJson {
    fn write(&self, line: &EventLine<'_>, out: &mut dyn Write) -> io::Result<()> {
        let json = EventJson {
            event: line.event,
            buffer: line.buffer.map(|b| b.0).filter(|b| !b.is_empty()),
            untyped: line.untyped,
        };
        serde_json::to_writer(&mut *out, &json)?;
        writeln!(out)
    }
}

/// Writes one event line (see the module documentation). The same as [`Events`]'
/// [`Exporter::write`] of [`EventLine::new`].
pub fn write_event_line(out: &mut dyn Write, ev: &Event, comm: &str) -> io::Result<()> {
    Events.write(&EventLine::new(ev, comm), out)
}

/// A symbol as the kernel prints it: its name, else its address.
fn sym(s: &Sym) -> String {
    match &s.name {
        Some(n) => n.to_string(),
        None => format!("{:#x}", s.addr),
    }
}

/// `s` right-aligned in `width` bytes (C's `%*s`).
fn right(buf: &mut Vec<u8>, s: &str, width: usize) {
    filled(buf, s, width, b' ');
}

/// `s` right-aligned in `width` bytes, `fill` before it (`%0*u` with `b'0'`).
fn filled(buf: &mut Vec<u8>, s: &str, width: usize, fill: u8) {
    buf.resize(buf.len() + width.saturating_sub(s.len()), fill);
    buf.extend_from_slice(s.as_bytes());
}

/// `s` left-aligned in `width` bytes (`%-*s`).
fn left(buf: &mut Vec<u8>, s: &str, width: usize) {
    buf.extend_from_slice(s.as_bytes());
    buf.resize(buf.len() + width.saturating_sub(s.len()), b' ');
}

/// The buffer prefix (`%*s: `, or `%*s  ` for the top buffer).
fn prefix(buf: &mut Vec<u8>, buffer: Option<(&str, usize)>) {
    if let Some((name, width)) = buffer {
        right(buf, name, width);
        buf.extend_from_slice(if name.is_empty() { b"  " } else { b": " });
    }
}

/// `CPU:N [M EVENTS DROPPED]`.
fn dropped(buf: &mut Vec<u8>, cpu: u32, count: Option<u64>) {
    let text = match count {
        Some(n) => format!("CPU:{cpu} [{n} EVENTS DROPPED]"),
        None => format!("CPU:{cpu} [EVENTS DROPPED]"),
    };
    buf.extend_from_slice(text.as_bytes());
}

/// The line of `line`, appended to `buf`.
fn event_line(buf: &mut Vec<u8>, line: &EventLine<'_>) -> io::Result<()> {
    let ev = line.event;
    prefix(buf, line.buffer);
    if let EventKind::Lost { count } = ev.kind {
        // A loss no event followed: its notice alone.
        dropped(buf, ev.cpu, count);
        buf.push(b'\n');
        return Ok(());
    }
    if let Some(count) = line.dropped {
        // trace-cmd prints the notice after the buffer's name, then the event's line.
        dropped(buf, ev.cpu, count);
        buf.push(b'\n');
    }
    right(buf, line.comm, 16);
    // trace-cmd's " %6.1000d:" (seconds, the µs rounded), or "%12d:" for a clock that
    // does not count ns: the raw count, no space before.
    // "-{pid:<5} [{cpu:03}]" and the time, by hand: `write!` with widths was a fifth of
    // report's time.
    let mut n = itoa::Buffer::new();
    buf.push(b'-');
    left(buf, n.format(ev.pid), 5);
    buf.extend_from_slice(b" [");
    filled(buf, n.format(ev.cpu), 3, b'0');
    buf.push(b']');
    if line.seconds {
        let us = ev.ts.saturating_add(500) / 1000;
        buf.push(b' ');
        right(buf, n.format(us / 1_000_000), 5);
        buf.push(b'.');
        filled(buf, n.format(us % 1_000_000), 6, b'0');
    } else {
        right(buf, n.format(ev.ts), 12);
    }
    let name = line.name.unwrap_or_else(|| ev.kind.name());
    buf.extend_from_slice(b": ");
    buf.extend_from_slice(name.as_bytes());
    buf.extend_from_slice(b": ");
    buf.resize(buf.len() + 20usize.saturating_sub(name.len()), b' ');
    match line.info {
        Some(info) => buf.extend_from_slice(info),
        None => fields(buf, ev)?,
    }
    // As trace-cmd: a line's one trailing newline is its end.
    if buf.last() == Some(&b'\n') {
        buf.pop();
    }
    buf.push(b'\n');
    Ok(())
}

/// The fields of a decoded event (a text trace's), as the kernel prints them.
fn fields(out: &mut Vec<u8>, ev: &Event) -> io::Result<()> {
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
        EventKind::Other { fields, .. } => {
            // Written in place (an LTTng trace is mostly such events: a String per
            // field cost report a third of its time).
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(b' ');
                }
                out.extend_from_slice(k.as_bytes());
                out.push(b'=');
                let mut n = itoa::Buffer::new();
                match v {
                    Value::Int(i) => out.extend_from_slice(n.format(*i).as_bytes()),
                    Value::Uint(u) => out.extend_from_slice(n.format(*u).as_bytes()),
                    Value::Str(s) => out.extend_from_slice(s.as_bytes()),
                    Value::Bytes(b) => write!(out, "[{} bytes]", b.len())?,
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The kernel's name of a softirq vector.
fn softirq_name(vec: u32) -> &'static str {
    jitterlab_trace::SOFTIRQ_NAMES
        .get(vec as usize)
        .copied()
        .unwrap_or("?")
}
