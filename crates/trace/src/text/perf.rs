//! The reader of `perf script` text of tracepoint samples:
//! `COMM TID [CPU] SECONDS.USECS: SYSTEM:EVENT: FIELDS`.

use std::io::BufRead;

use super::events::{self, Ctx};
use super::lines::LineError;
use super::lines::{self, LineState, Lines};
use super::reorder::{Output, MAX_CPU};
use super::syntax::parse_ts;
use super::TextOptions;
use crate::{Event, EventSource, Flags, ReadStats, Result, TraceMeta};

/// Reads `perf script` output of tracepoint samples (`perf sched record`, `perf record -e
/// sched:* -e irq:*`) into events, in time order.
///
/// The default fields are read: `COMM TID [CPU] TIME: SYSTEM:EVENT: FIELDS`, with the comm
/// right-aligned and possibly holding spaces, and the event name padded or not. Also
/// accepted: `PID/TID` (`-F +pid`; the event's pid is the TID), nanosecond times (`--ns`),
/// callchain lines (`-g`: tab-indented `ADDRESS SYMBOL (DSO)`, skipped), the `# ...` header
/// of `--header` (`# nrcpus avail : 2` gives [`TraceMeta::cpus`]) and `PERF_RECORD_*`
/// side-band lines of `--show-task-events` and the like (skipped). The CPU column is
/// required: without it (`perf record` without `-a`, or `-F` without `cpu`) the per-CPU
/// scheduler state cannot be followed, and the first such line is an error.
///
/// The bodies are the tracepoints' own print formats, as in the kernel's ftrace text, and
/// are decoded the same way: sched_switch, sched_waking, irq_handler_entry, ... become their
/// typed [`crate::EventKind`]s when their system is the expected one (`sched:`, `irq:`,
/// `timer:`, ...); every other event is an [`crate::EventKind::Other`] named
/// `system:event`. perf prints no irq-info column: every event has flags 0 and a preempt
/// count of 0. perf script prints nothing where perf lost samples (it says so on stderr),
/// so [`ReadStats::lost`] stays empty and [`ReadStats::lost_unrecorded`] says so: unknown,
/// not zero.
pub struct PerfReader<R> {
    lines: Lines<R>,
    st: State,
}

struct State {
    opts: TextOptions,
    meta: TraceMeta,
    out: Output,
    ctx: Ctx,
    eof: bool,
}

impl<R: BufRead> PerfReader<R> {
    /// Reads up to the first event line of `input`; fails (in strict mode) if the first
    /// data line cannot be decoded.
    pub fn new(input: R, options: TextOptions) -> Result<Self> {
        let mut r = PerfReader {
            lines: Lines::new(input, options.cancel.clone()),
            st: State {
                out: Output::new(options.reorder_window),
                opts: options,
                meta: TraceMeta {
                    format: "perf script text".to_string(),
                    ..TraceMeta::default()
                },
                ctx: Ctx::default(),
                eof: false,
            },
        };
        r.st.out.stats.lost_unrecorded = true;
        lines::skip_to_data(&mut r.lines, &mut r.st)?;
        Ok(r)
    }
}

impl<R: BufRead> EventSource for PerfReader<R> {
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
    /// Decodes one line; true if it is a data line.
    fn line(&mut self, line: &str) -> Result<bool, LineError> {
        let t = line.trim();
        if t.is_empty() {
            return Ok(false);
        }
        if let Some(h) = t.strip_prefix('#') {
            self.header(h);
            return Ok(false);
        }
        if is_frame(line) {
            return Ok(false);
        }
        let p = parse_prefix(line)?;
        if p.event.starts_with("PERF_RECORD_") {
            return Ok(false);
        }
        let cpu = p.cpu.ok_or(
            "expected the CPU column `[CPU]` between the TID and the time (record with -a, \
             print with the default fields or -F +cpu)",
        )?;
        let kind = match p.event.split_once(':') {
            Some((sys, name)) if events::is_typed(name) && events::system_of(name) == Some(sys) => {
                events::parse_event(&mut self.ctx, name, p.body)?
            }
            _ => events::other_named(&mut self.ctx, p.event, p.body),
        };
        self.out.push(Event {
            ts: p.ts,
            cpu,
            pid: p.tid,
            flags: Flags(0),
            preempt_count: 0,
            kind,
        })?;
        Ok(true)
    }

    /// `--header` lines: `nrcpus avail : 2` gives the CPU count.
    fn header(&mut self, h: &str) {
        let Some((key, value)) = h.split_once(':') else {
            return;
        };
        if key.trim() == "nrcpus avail" {
            if let Ok(n) = value.trim().parse::<u32>() {
                if n <= MAX_CPU + 1 {
                    self.meta.cpus = Some(n);
                    self.out.set_cpus(n);
                }
            }
        }
    }
}

/// A callchain line of `perf script -g`: a tab, then `ADDRESS SYMBOL (DSO)`.
fn is_frame(line: &str) -> bool {
    line.starts_with('\t')
        && line
            .split_whitespace()
            .next()
            .is_some_and(|a| a.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The columns of an event line.
struct Prefix<'a> {
    tid: i32,
    cpu: Option<u32>,
    ts: u64,
    /// `system:name` as printed (or a bare name: a hardware or software event).
    event: &'a str,
    body: &'a str,
}

/// True if `line` looks like a `perf script` event line (for [`super::detect`]).
pub(crate) fn looks_like_perf_line(line: &str) -> bool {
    parse_prefix(line).is_ok()
}

/// The whitespace-separated tokens of `s` with their byte offsets.
fn tokens(s: &str) -> impl Iterator<Item = (usize, &str)> {
    s.split(|c: char| c.is_ascii_whitespace())
        .scan(0usize, |at, tok| {
            let start = *at;
            *at += tok.len() + 1;
            Some((start, tok))
        })
        .filter(|(_, tok)| !tok.is_empty())
}

/// `[COMM] TID|PID/TID [[CPU]] TIME: EVENT: BODY`. The comm may hold spaces, digits and
/// brackets: the first token shaped like a time (`123.456789:`) that is followed by an
/// `EVENT:` token and preceded by `[CPU]` and a TID token (or by a TID token only) ends
/// the prefix.
fn parse_prefix(line: &str) -> Result<Prefix<'_>, LineError> {
    const SHAPE: &str = "expected `COMM TID [CPU] SECONDS.USECS: SYSTEM:EVENT: FIELDS`";
    // The last two tokens before the current one.
    let mut back: [Option<&str>; 2] = [None, None];
    let mut it = tokens(line).peekable();
    while let Some((_, tok)) = it.next() {
        let ts = tok
            .strip_suffix(':')
            .filter(|t| t.contains('.'))
            .and_then(parse_ts);
        let event = it.peek().and_then(|(e_at, e)| {
            let name = e.strip_suffix(':')?;
            (!name.is_empty()).then_some((*e_at, name))
        });
        if let (Some(ts), Some((e_at, event))) = (ts, event) {
            let (cpu, tid) = match back[1].and_then(cpu_column) {
                Some(cpu) => (Some(cpu), back[0].and_then(tid_column)),
                None => (None, back[1].and_then(tid_column)),
            };
            if let Some(tid) = tid {
                return Ok(Prefix {
                    tid,
                    cpu: cpu.transpose()?,
                    ts,
                    event,
                    body: line[e_at + event.len() + 1..].trim(),
                });
            }
        }
        back = [back[1], Some(tok)];
    }
    Err(SHAPE.into())
}

/// `[001]` -> the CPU (an error past [`MAX_CPU`]); `None` if not a CPU column.
fn cpu_column(tok: &str) -> Option<Result<u32, LineError>> {
    let digits = tok.strip_prefix('[')?.strip_suffix(']')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(
        digits
            .parse::<u32>()
            .ok()
            .filter(|c| *c <= MAX_CPU)
            .ok_or_else(|| LineError::limit(format!("expected a CPU number up to {MAX_CPU}"))),
    )
}

/// `1234` (TID) or `1200/1234` (PID/TID) -> the TID.
fn tid_column(tok: &str) -> Option<i32> {
    let tid = tok.rsplit_once('/').map_or(tok, |(pid, tid)| {
        if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) {
            tid
        } else {
            ""
        }
    });
    let digits = tid.strip_prefix('-').unwrap_or(tid);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    tid.parse().ok()
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
