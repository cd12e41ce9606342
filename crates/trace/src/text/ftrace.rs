//! The reader of the kernel's ftrace text and of `trace-cmd report` output:
//! `TASK-PID [CPU] [FLAGS] SECONDS.USECS: EVENT: FIELDS`.

use std::collections::HashMap;
use std::io::BufRead;

use super::events::{self, Ctx};
use super::function_graph_lines::{parse_graph, GraphState};
use super::lines::LineError;
use super::lines::{self, LineState, Lines};
use super::reorder::{Output, MAX_CPU};
use super::syntax::{parse_flags, parse_lost, parse_ts, split_buffer};
use super::{TextOptions, KERNEL_STACK, USER_STACK};
use crate::{ErrorKind, Event, EventKind, EventSource, Flags, ReadStats, Result};
use crate::{TraceMeta, Value};

/// Reads ftrace text (the tracefs `trace` and `trace_pipe` files) and `trace-cmd report`
/// output into events, in time order. See the [module docs](super) for what is accepted.
///
/// Header lines give [`TraceMeta::cpus`] (`#P:2`, `cpus=2`). The pid of each event is the
/// TASK-PID column's; its comm is not kept (the column comes from the saved-cmdlines cache and
/// may be stale: the event's own fields are right). Without the irq-info column (trace-cmd
/// report's default) events have no flags and a preempt count of 0.
pub struct FtraceReader<R> {
    lines: Lines<R>,
    st: State,
}

struct State {
    opts: TextOptions,
    meta: TraceMeta,
    out: Output,
    ctx: Ctx,
    graph: GraphState,
    graph_out: Vec<(u64, EventKind)>,
    report: bool,
    tracer: Option<String>,
    overwritten: Option<u64>,
    /// A `<stack trace>` event collecting its ` => frame` lines.
    stack: Option<Event>,
    eof: bool,
}

impl<R: BufRead> FtraceReader<R> {
    /// Reads the header and the first event line of `input`; fails (in strict mode) if the
    /// first data line cannot be decoded.
    pub fn new(input: R, options: TextOptions) -> Result<Self> {
        let mut r = FtraceReader {
            lines: Lines::new(input, options.cancel.clone()),
            st: State {
                out: Output::new(options.reorder_window),
                opts: options,
                meta: TraceMeta::default(),
                ctx: Ctx::default(),
                graph: GraphState::default(),
                graph_out: Vec::new(),
                report: false,
                tracer: None,
                overwritten: None,
                stack: None,
                eof: false,
            },
        };
        lines::skip_to_data(&mut r.lines, &mut r.st)?;
        r.st.set_meta();
        Ok(r)
    }

    /// How many events the kernel wrote that its buffer no longer held when the text was
    /// read (`entries-in-buffer/entries-written` of the header differ): the oldest ones were
    /// overwritten. Their CPUs are not known. `None` without that header line.
    pub fn overwritten(&self) -> Option<u64> {
        self.st.overwritten
    }

    /// The tracer the header names (`# tracer: nop`).
    pub fn tracer(&self) -> Option<&str> {
        self.st.tracer.as_deref()
    }
}

impl<R: BufRead> EventSource for FtraceReader<R> {
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

impl State {
    fn set_meta(&mut self) {
        self.meta.format = match (&self.tracer, self.report) {
            (_, true) => "trace-cmd report text".to_string(),
            (Some(t), false) => format!("ftrace text (tracer: {t})"),
            (None, false) => "ftrace text".to_string(),
        };
    }

    fn finish(&mut self) {
        if let Some(ev) = self.stack.take() {
            // Checked when its line was read, and nothing was released since.
            let _ = self.out.push(ev);
        }
        self.eof = true;
    }

    /// Decodes one line; true if it is a data line.
    fn line(&mut self, line: &str) -> Result<bool, LineError> {
        let t = line.trim();
        if let Some(frame) = t.strip_prefix("=>") {
            let ev = self
                .stack
                .as_mut()
                .ok_or("expected a `<stack trace>` line before this frame")?;
            if let EventKind::Other { fields, .. } = &mut ev.kind {
                if fields.len() < 4096 {
                    let frame = frame.trim();
                    fields.push((self.ctx.text("caller"), Value::Str(self.ctx.text(frame))));
                }
            }
            return Ok(true);
        }
        if let Some(ev) = self.stack.take() {
            self.out.push(ev)?;
        }
        // `trace-cmd report` of several buffers: `NAME: ` before a buffer's lines (a drop
        // line names its buffer in any text).
        let named = split_buffer(t).filter(|(_, rest)| {
            parse_lost(rest).is_some() || (self.report && looks_like_event_line(rest))
        });
        self.out.set_buffer(named.map(|(name, _)| name))?;
        let (t, line) = match named {
            Some((_, rest)) => (rest.trim(), rest),
            None => (t, line),
        };
        if t.is_empty() {
            return Ok(false);
        }
        if t.starts_with('#') {
            self.header(t);
            return Ok(false);
        }
        if let Some(n) = t.strip_prefix("cpus=") {
            let n: u32 = n.parse().map_err(|_| "expected `cpus=NUMBER`")?;
            self.meta.cpus = Some(n);
            self.out.set_cpus(n);
            self.report = true;
            self.set_meta();
            return Ok(false);
        }
        if t.starts_with("version =") || (t.starts_with("CPU ") && t.ends_with(" is empty")) {
            self.report = true;
            self.set_meta();
            return Ok(false);
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
        self.event_line(line)?;
        Ok(true)
    }

    /// `# tracer: nop`, `# entries-in-buffer/entries-written: 8324/8324   #P:2`.
    fn header(&mut self, t: &str) {
        if let Some(tracer) = t.strip_prefix("# tracer:") {
            self.tracer = Some(tracer.trim().to_string());
            self.set_meta();
        }
        if let Some(counts) = t.strip_prefix("# entries-in-buffer/entries-written:") {
            let counts = counts.split_whitespace().next().unwrap_or("");
            if let Some((held, written)) = counts.split_once('/') {
                if let (Ok(h), Ok(w)) = (held.parse::<u64>(), written.parse::<u64>()) {
                    self.overwritten = Some(w.saturating_sub(h));
                }
            }
        }
        if let Some(p) = t.find("#P:") {
            let n: String = t[p + 3..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(n) = n.parse::<u32>() {
                self.meta.cpus = Some(n);
                self.out.set_cpus(n);
            }
        }
    }

    fn event_line(&mut self, line: &str) -> Result<(), LineError> {
        let p = parse_prefix(line)?;
        let rest = p.rest.trim();
        let ev = |kind| Event {
            ts: p.ts,
            cpu: p.cpu,
            pid: p.pid,
            flags: p.flags,
            preempt_count: p.preempt,
            kind,
        };
        let name_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        let after = &rest[name_len..];
        if name_len > 0 && (after == ":" || after.starts_with(": ")) {
            let name = &rest[..name_len];
            let body = after[1..].trim();
            match name {
                "funcgraph_entry" | "funcgraph_exit" => {
                    let g = parse_graph(body)?;
                    self.graph.switch(p.cpu, None, p.pid);
                    self.graph
                        .call(p.cpu, Some(p.ts), &g, &mut self.ctx, &mut self.graph_out)?;
                    for (ts, kind) in self.graph_out.drain(..) {
                        self.out.push(Event { ts, ..ev(kind) })?;
                    }
                    return Ok(());
                }
                "kernel_stack" | "user_stack" if body.starts_with('<') => {
                    let name = if name == "kernel_stack" {
                        KERNEL_STACK
                    } else {
                        USER_STACK
                    };
                    return self.start_stack(ev, name);
                }
                _ => {}
            }
            let kind = events::parse_event(&mut self.ctx, name, body)?;
            return self.out.push(ev(kind));
        }
        if rest.starts_with("<stack trace>") {
            return self.start_stack(ev, KERNEL_STACK);
        }
        if rest.starts_with("<user stack trace>") {
            return self.start_stack(ev, USER_STACK);
        }
        // The function tracer: `func <-parent`, or `func` with noprint-parent.
        let mut it = rest.split_whitespace();
        let ip = it
            .next()
            .ok_or("expected `EVENT: FIELDS` after the timestamp")?;
        let parent = it.next();
        let parent = match parent.map(|p| p.strip_prefix("<-")) {
            // noprint-parent: only under the function tracer, so that a cut event line
            // is not taken for a function.
            None if self.tracer.as_deref() == Some("function") => None,
            None => return Err("expected `EVENT: FIELDS` after the timestamp".into()),
            Some(Some(p)) if !p.is_empty() && it.next().is_none() => Some(p),
            Some(_) => {
                return Err("expected `EVENT: FIELDS` or `FUNCTION <-PARENT` after the \
                            timestamp"
                    .into())
            }
        };
        let kind = events::function(&mut self.ctx, ip, parent);
        self.out.push(ev(kind))
    }

    /// Holds a `<stack trace>` record until its ` => frame` lines are read (nothing is
    /// released meanwhile, see `next_event`).
    fn start_stack(
        &mut self,
        ev: impl FnOnce(EventKind) -> Event,
        name: &str,
    ) -> Result<(), LineError> {
        let name = self.ctx.text(name);
        let ev = ev(EventKind::Other {
            name,
            fields: Vec::new(),
        });
        self.out.check(ev.ts)?;
        self.stack = Some(ev);
        Ok(())
    }
}

/// The columns before an event's name.
struct Prefix<'a> {
    /// `TASK-PID [(TGID)]`, before the CPU column.
    head: &'a str,
    pid: i32,
    cpu: u32,
    flags: Flags,
    preempt: u8,
    ts: u64,
    rest: &'a str,
}

/// True if `line` starts like an ftrace event line (for [`super::detect`]).
/// An event line, or one of the right shape whose value is out of its range (a CPU past
/// the largest): the reader then says which.
pub(crate) fn looks_like_event_line(line: &str) -> bool {
    match parse_prefix(line) {
        Ok(_) => true,
        Err(e) => e.kind == ErrorKind::Limit,
    }
}

/// `TASK-PID [(TGID)] [CPU] [FLAGS] SECONDS.USECS:` -> the columns and the rest. The comm may
/// hold spaces, dashes and brackets: the CPU column is the first `[digits]` after a space
/// whose left side ends in `-PID`, and the pid follows the last `-`.
fn parse_prefix(line: &str) -> Result<Prefix<'_>, LineError> {
    const NO_CPU: &str = "expected `TASK-PID [CPU]` at the start of an event line";
    let b = line.as_bytes();
    let mut from = 0;
    let (pid, open, close) = loop {
        let open = from + b[from..].iter().position(|&c| c == b'[').ok_or(NO_CPU)?;
        let digits = b[open + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let close = open + 1 + digits;
        if digits > 0 && b.get(close) == Some(&b']') && open > 0 && b[open - 1] == b' ' {
            if let Some(pid) = task_pid(&line[..open]) {
                break (pid, open, close);
            }
        }
        from = open + 1;
    };
    let cpu = line[open + 1..close]
        .parse::<u32>()
        .ok()
        .filter(|c| *c <= MAX_CPU)
        .ok_or_else(|| LineError::limit(format!("expected a CPU number up to {MAX_CPU}")))?;
    let (tok, mut rest) = token(&line[close + 1..]);
    let (flags, preempt, ts_tok) = match tok.strip_suffix(':') {
        Some(ts) => (Flags(0), 0, ts),
        None => {
            let (flags, preempt) = parse_flags(tok).ok_or_else(|| {
                format!("expected the irq-info column (`d.h1.`) or a timestamp, found `{tok}`")
            })?;
            let (ts, r) = token(rest);
            rest = r;
            let ts = ts
                .strip_suffix(':')
                .ok_or("expected `SECONDS.USECS:` after the irq-info column")?;
            (flags, preempt, ts)
        }
    };
    let ts = parse_ts(ts_tok)
        .ok_or_else(|| format!("expected a timestamp `SECONDS.USECS:`, found `{ts_tok}:`"))?;
    Ok(Prefix {
        head: &line[..open],
        pid,
        cpu,
        flags,
        preempt,
        ts,
        rest,
    })
}

/// Thread group ids by tid from the TGID column (`comm-pid (  tgid) [cpu]`, the
/// `record-tgid` trace option) of ftrace text. The column is on every event line or on
/// none, so the scan stops at the first event line without it: text without the column
/// costs one line. Unknown tgids (`(-------)`) are left out.
pub(crate) fn scan_tgids(mut text: impl BufRead) -> HashMap<i32, i32> {
    let mut tgids = HashMap::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match text.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return tgids,
            Ok(_) => {}
        }
        // A comm cut inside a UTF-8 character is read lossily, as by the reader.
        let line = String::from_utf8_lossy(&buf);
        let line: &str = &line;
        if line.trim_start().starts_with('#') {
            continue;
        }
        let Ok(p) = parse_prefix(line) else {
            continue;
        };
        let Some(col) = p.head.trim_end().strip_suffix(')') else {
            return tgids;
        };
        let tgid = col
            .rfind('(')
            .and_then(|i| col[i + 1..].trim().parse::<i32>().ok());
        if let Some(tgid) = tgid.filter(|t| *t > 0) {
            tgids.insert(p.pid, tgid);
        }
    }
}

/// The next space-separated token of `s` and what follows it.
fn token(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    let end = s.find(' ').unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// The pid of `comm-pid` or `comm-pid  (  tgid)` / `comm-pid (-------)`.
fn task_pid(head: &str) -> Option<i32> {
    let mut h = head.trim_end();
    if h.ends_with(')') {
        h = h[..h.rfind('(')?].trim_end();
    }
    let (_, pid) = h.rsplit_once('-')?;
    if pid.is_empty() || !pid.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

impl LineState for State {
    fn line(&mut self, line: &str) -> Result<bool, LineError> {
        State::line(self, line)
    }
    fn finish(&mut self) {
        State::finish(self)
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
    fn pop_ready(&mut self) -> Option<Event> {
        // An event whose kernel stack lines may follow waits for them.
        if self.stack.is_none() {
            self.out.pop_ready()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tgids_from_the_tgid_column() {
        let text = b"# tracer: nop\n\
            #           TASK-PID     TGID     CPU#  ||||   TIMESTAMP  FUNCTION\n\
            \x20         <idle>-0       (-------) [001] d.h1.   976.348312: irq_handler_entry: irq=36 name=x\n\
            \x20          iperf-4411    (   4410) [000] .....   976.348313: sched_waking: comm=a pid=1 prio=120 target_cpu=000\n\
            \x20  Web Content-4412    (   4410) [001] .....   976.348314: sched_waking: comm=a pid=1 prio=120 target_cpu=000\n";
        let t = scan_tgids(&text[..]);
        assert_eq!(t.len(), 2, "{t:?}");
        assert_eq!((t[&4411], t[&4412]), (4410, 4410));
        let plain = b"  iperf-4411 [000] .....   976.348313: sched_waking: comm=a pid=1 prio=120 target_cpu=000\n\
            \x20 iperf-4412    (   4410) [001] .....   976.348314: sched_waking: comm=a pid=1 prio=120 target_cpu=000\n";
        assert!(scan_tgids(&plain[..]).is_empty());
    }
}
