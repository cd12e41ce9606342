//! The reader of function_graph text: what the kernel writes to `trace` / `trace_pipe` when
//! `current_tracer` is `function_graph`.
//!
//! ```text
//! # tracer: function_graph
//! #
//! # CPU  DURATION                  FUNCTION CALLS
//! # |     |   |                     |   |   |   |
//!  0)               |  do_sys_open() {
//!  0)   0.123 us    |    getname();
//!  0) + 12.345 us   |  }
//! ```
//!
//! Accepted per line, left to right: an abstime column (`976.348313 |`), the CPU column
//! (`0)`), a proc column (`bash-1234 |`, comm cut to 7 characters by the kernel), a latency
//! column (`d..1 |`), the duration column with its overhead mark, then the call:
//! `func() {`, `func();` (a leaf), `}` (with `/* func */` under funcgraph-tail or when the
//! entry was not seen), `/* comment */` (trace_printk, marker writes, and events:
//! `/* sched_switch: prev_comm=... */` become typed events). Also `==========>` /
//! `<==========` irq lines ([`super::GRAPH_IRQ_ENTRY`], [`super::GRAPH_IRQ_EXIT`]; the calls
//! between them get [`crate::Flags::HARDIRQ`]), `------` separators with the
//! `bash-1234 => sshd-1755` task-switch line between them ([`super::GRAPH_TASK_SWITCH`]),
//! and lost-events lines.
//!
//! Each task has a call stack, as the kernel's return stack is per task (the idle task of
//! each CPU has its own; a task not yet named by a proc column or task-switch line uses its
//! CPU's): `{` pushes, `}` pops (by the name its comment gives, else by its indentation,
//! else the innermost call), so a [`crate::EventKind::FuncReturn`] names its function even
//! without funcgraph-tail, and a task's calls stay open while it sleeps. Depth comes from the
//! stack; the indentation is checked against it, and wins when they disagree (events were
//! lost, or the trace starts inside a call tree; [`FgraphReader::resyncs`] counts these). A
//! `}` whose entry is not in the trace keeps the name its comment gives, if any, and the
//! depth of its indentation. A leaf is a [`crate::EventKind::FuncEntry`] and a
//! [`crate::EventKind::FuncReturn`] with its duration. A return value printed by
//! funcgraph-retval is not kept. The relative times of traces without abstime are explained
//! in the [module docs](super).
//!
//! The event pid is the proc column's, else the last task switch's; events before the first
//! task-switch line of their CPU get the pid that line names as the previous task, if they
//! are still in the reorder window, else -1 (not known).

use std::io::BufRead;

use super::events::{self, Ctx};
use super::function_graph_lines::{parse_duration, parse_graph, Content, GraphState};
use super::lines::LineError;
use super::lines::{self, LineState, Lines};
use super::reorder::{Output, MAX_CPU};
use super::syntax::{is_ident, is_key_values, parse_flags, parse_lost, parse_ts};
use super::{TextOptions, GRAPH_IRQ_ENTRY, GRAPH_IRQ_EXIT, GRAPH_TASK_SWITCH};
use crate::{Event, EventKind, EventSource, Flags, ReadStats, Result};
use crate::{TraceMeta, Value};

/// Reads function_graph text into events, in time order.
pub struct FgraphReader<R> {
    lines: Lines<R>,
    st: State,
}

struct State {
    opts: TextOptions,
    meta: TraceMeta,
    out: Output,
    ctx: Ctx,
    graph: GraphState,
    buf: Vec<(u64, EventKind)>,
    /// Whether the first data line had the abstime column.
    abstime: Option<bool>,
    eof: bool,
}

impl<R: BufRead> FgraphReader<R> {
    /// Reads the header and the first data line of `input`; fails (in strict mode) if the
    /// first data line cannot be decoded.
    pub fn new(input: R, options: TextOptions) -> Result<Self> {
        let mut r = FgraphReader {
            lines: Lines::new(input, options.cancel.clone()),
            st: State {
                out: Output::new(options.reorder_window),
                opts: options,
                meta: TraceMeta {
                    format: "function_graph text".to_string(),
                    cpus: None,
                },
                ctx: Ctx::default(),
                graph: GraphState::default(),
                buf: Vec::new(),
                abstime: None,
                eof: false,
            },
        };
        lines::skip_to_data(&mut r.lines, &mut r.st)?;
        Ok(r)
    }

    /// Lines whose indentation disagreed with the call stack so far (calls lost or cut off
    /// at the trace's start); the stack was resynchronised from the indentation.
    pub fn resyncs(&self) -> u64 {
        self.st.graph.resyncs
    }

    /// True when the text has no timestamps, so that event times are relative,
    /// reconstructed from the durations (known after the first data line).
    pub fn relative_times(&self) -> bool {
        self.st.abstime == Some(false)
    }
}

impl<R: BufRead> EventSource for FgraphReader<R> {
    fn next_event(&mut self) -> Result<Option<Event>> {
        lines::next_event(&mut self.lines, &mut self.st)
    }

    fn meta(&self) -> &TraceMeta {
        &self.st.meta
    }

    fn stats(&self) -> &ReadStats {
        &self.st.out.stats
    }
}

/// The columns before the duration column.
struct Prefix<'a> {
    abstime: Option<u64>,
    cpu: Option<u32>,
    rest: &'a str,
}

/// True if `line` looks like a function_graph data line (for [`super::detect`]).
pub(crate) fn looks_like_graph_line(line: &str) -> bool {
    match parse_prefix(line) {
        Ok(p) => {
            let r = p.rest.trim_start();
            p.cpu.is_some() && (r.contains('|') || r.contains("=>") || r.starts_with("<=========="))
        }
        Err(_) => false,
    }
}

/// `[SECONDS.USECS |] [| ] [CPU)] REST`.
fn parse_prefix(line: &str) -> Result<Prefix<'_>, LineError> {
    let mut s = line.trim_start();
    let mut abstime = None;
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        let end = s.find(char::is_whitespace).unwrap_or(s.len());
        let after = s[end..].trim_start();
        if s[..end].contains('.') && after.starts_with('|') {
            abstime = Some(parse_ts(&s[..end]).ok_or_else(|| {
                format!(
                    "expected a timestamp `SECONDS.USECS |`, found `{}`",
                    &s[..end]
                )
            })?);
            s = after[1..].trim_start();
        }
    }
    // Old kernels drew the task-switch line as ` | 1)  a-1  =>  b-2`.
    if let Some(r) = s.strip_prefix("| ") {
        s = r.trim_start();
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let mut cpu = None;
    if digits > 0 && s.as_bytes().get(digits) == Some(&b')') {
        let n = s[..digits]
            .parse::<u32>()
            .ok()
            .filter(|c| *c <= MAX_CPU)
            .ok_or_else(|| LineError::limit(format!("expected a CPU number up to {MAX_CPU}")))?;
        cpu = Some(n);
        s = &s[digits + 1..];
    }
    Ok(Prefix {
        abstime,
        cpu,
        rest: s,
    })
}

impl State {
    /// Decodes one line; true if it is a data line.
    fn line(&mut self, line: &str) -> Result<bool, LineError> {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            return Ok(false);
        }
        if t.starts_with("-----") || t.starts_with("(Overruns:") {
            return Ok(true);
        }
        if let Some((cpu, count)) = parse_lost(t) {
            if cpu > MAX_CPU {
                return Err(LineError::limit(format!(
                    "expected a CPU number up to {MAX_CPU}"
                )));
            }
            self.out.lost(cpu, count);
            return Ok(true);
        }
        let p = parse_prefix(line)?;
        if self.abstime.is_none() {
            self.abstime = Some(p.abstime.is_some());
            if p.abstime.is_none() {
                self.meta.format = "function_graph text (no timestamps: times are relative, \
                                    reconstructed from durations)"
                    .to_string();
            }
        }
        let cpu = p.cpu.unwrap_or(0);
        let r = p.rest.trim_start();
        if r.starts_with("==========>") || r.starts_with("<==========") {
            let enter = r.starts_with('=');
            if enter {
                self.graph.irq(cpu, true);
            }
            let ts = self.graph.time(cpu, p.abstime);
            let name = self.ctx.text(if enter {
                GRAPH_IRQ_ENTRY
            } else {
                GRAPH_IRQ_EXIT
            });
            let pid = self.graph.pid(cpu).unwrap_or(-1);
            self.push(
                ts,
                cpu,
                pid,
                (Flags(Flags::HARDIRQ), 0),
                EventKind::Other {
                    name,
                    fields: Vec::new(),
                },
            )?;
            if !enter {
                self.graph.irq(cpu, false);
            }
            return Ok(true);
        }
        if !r.contains('|') {
            if let Some((prev, next)) = r.split_once("=>") {
                return self.task_switch(cpu, p.abstime, prev, next).map(|_| true);
            }
        }
        // Optional proc and latency columns, each closed by `|`, before the duration.
        let mut rest = p.rest;
        let mut pid = None;
        let mut lat = None;
        for _ in 0..2 {
            let Some(bar) = rest.find('|') else { break };
            let seg = rest[..bar].trim();
            if seg.is_empty() || parse_duration(seg).is_some() {
                break;
            }
            if let Some(t) = task(seg).filter(|_| pid.is_none()) {
                pid = Some(t.1);
            } else if let Some(f) = parse_flags(seg).filter(|_| lat.is_none()) {
                lat = Some(f);
            } else {
                break;
            }
            rest = &rest[bar + 1..];
        }
        if let Some(pid) = pid {
            self.graph.switch(cpu, None, pid);
        }
        let pid = pid.or(self.graph.pid(cpu)).unwrap_or(-1);
        let g = parse_graph(rest)?;
        if let Content::Comment(text) = g.content {
            let ts = self.graph.time(cpu, p.abstime);
            let flags = self.flags(cpu, lat);
            let kind = self.comment(text)?;
            return self.push(ts, cpu, pid, flags, kind).map(|_| true);
        }
        let flags = self.flags(cpu, lat);
        self.graph
            .call(cpu, p.abstime, &g, &mut self.ctx, &mut self.buf)?;
        let mut buf = std::mem::take(&mut self.buf);
        let res = buf
            .drain(..)
            .try_for_each(|(ts, kind)| self.push(ts, cpu, pid, flags, kind));
        self.buf = buf;
        res.map(|_| true)
    }

    /// The flags of a line of `cpu`: the latency column's, else hard-irq inside
    /// `==========>` ... `<==========`.
    fn flags(&mut self, cpu: u32, lat: Option<(Flags, u8)>) -> (Flags, u8) {
        lat.unwrap_or_else(|| {
            let f = if self.graph.in_irq(cpu) {
                Flags::HARDIRQ
            } else {
                0
            };
            (Flags(f), 0)
        })
    }

    fn push(
        &mut self,
        ts: u64,
        cpu: u32,
        pid: i32,
        (flags, preempt_count): (Flags, u8),
        kind: EventKind,
    ) -> Result<(), LineError> {
        self.out.push(Event {
            ts,
            cpu,
            pid,
            flags,
            preempt_count,
            kind,
        })
    }

    /// ` 0)    <idle>-0    =>   bash-1234   `
    fn task_switch(
        &mut self,
        cpu: u32,
        abstime: Option<u64>,
        prev: &str,
        next: &str,
    ) -> Result<(), LineError> {
        let bad = || "expected `COMM-PID => COMM-PID`".to_string();
        let (prev_comm, prev_pid) = task(prev.trim()).ok_or_else(bad)?;
        let (next_comm, next_pid) = task(next.trim()).ok_or_else(bad)?;
        let ts = self.graph.time(cpu, abstime);
        if self.graph.pid(cpu).is_none() {
            self.out.name_unknown_pid(cpu, prev_pid);
        }
        self.graph.switch(cpu, Some(prev_pid), next_pid);
        let c = &mut self.ctx;
        let fields = vec![
            (c.text("prev_comm"), Value::Str(c.text(prev_comm))),
            (c.text("prev_pid"), Value::Int(prev_pid.into())),
            (c.text("next_comm"), Value::Str(c.text(next_comm))),
            (c.text("next_pid"), Value::Int(next_pid.into())),
        ];
        let name = c.text(GRAPH_TASK_SWITCH);
        let flags = self.flags(cpu, None);
        self.push(ts, cpu, next_pid, flags, EventKind::Other { name, fields })
    }

    /// A comment: an event (`sched_switch: prev_comm=...`), else a trace_printk or
    /// trace_marker text.
    fn comment(&mut self, text: &str) -> Result<EventKind, String> {
        if let Some((name, body)) = text.split_once(':') {
            let body = body.trim();
            if is_ident(name) && (events::is_typed(name) || is_key_values(body)) {
                return events::parse_event(&mut self.ctx, name, body);
            }
        }
        Ok(EventKind::Print {
            ip: 0,
            text: self.ctx.text(text),
        })
    }
}

/// `comm-pid` (the comm may hold dashes): (comm, pid).
fn task(s: &str) -> Option<(&str, i32)> {
    let (comm, pid) = s.rsplit_once('-')?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((comm, pid.parse().ok()?))
}

impl LineState for State {
    fn line(&mut self, line: &str) -> Result<bool, LineError> {
        State::line(self, line)
    }
    fn finish(&mut self) {
        self.eof = true
    }
    fn at_eof(&self) -> bool {
        self.eof
    }
    fn opts(&self) -> &TextOptions {
        &self.opts
    }
    fn out(&mut self) -> &mut Output {
        &mut self.out
    }
}
