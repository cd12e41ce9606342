//! Text trace readers: the kernel's ftrace text, `trace-cmd report` output, function_graph
//! text and `perf script` output.
//!
//! Four shapes of text are read:
//!
//! - **ftrace text**, what the kernel writes to the tracefs `trace` and `trace_pipe` files:
//!   `TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: FIELDS`, with or without the `#` header, with or
//!   without the irq-info column (`dNh2.`), with or without the TGID column;
//! - **`trace-cmd report`** output: the same line shape without the flags column (unless `-l`),
//!   a `cpus=N` first line, trace-cmd's pretty-printed `sched_switch`
//!   (`bash:11382 [120] S ==> bash:11384 [120]`) and `sched_wakeup`
//!   (`migration/0:18 [0] CPU:000`), and `funcgraph_entry` / `funcgraph_exit` events;
//! - **function_graph text**, what the kernel writes when `current_tracer` is
//!   `function_graph`: `CPU) DURATION | FUNCTION CALLS` with nested `{ }`, leaves `;`,
//!   overhead markers, irq `==========>` lines, task-switch blocks, optional abstime, proc
//!   and latency columns, and events printed as `/* comments */`;
//! - **`perf script`** output of tracepoint samples (`perf sched record`, `perf record -e
//!   sched:*`): `COMM TID [CPU] TIME: SYSTEM:EVENT: FIELDS`, the comm right-aligned and
//!   possibly holding spaces, with or without `PID/TID`, µs or ns times, callchain lines.
//!
//! [`detect`] tells them apart by content; [`FtraceReader`] reads the first two,
//! [`FgraphReader`] the third and [`PerfReader`] the fourth; [`open`] picks the reader for a
//! [`TextKind`].
//!
//! ```
//! use jitterlab_trace::text::{detect, open, TextKind, TextOptions};
//! use jitterlab_trace::{EventKind, EventSource};
//!
//! let text = b"cpus=1\n\
//!     \x20   <idle>-0 [000] 976.348848: irq_handler_entry: irq=36 name=virtio1-req.0\n";
//! let kind = detect(text).unwrap();
//! assert_eq!(kind, TextKind::TraceCmdReport);
//! let mut reader = open(&text[..], kind, TextOptions::named("example.txt"))?;
//! let event = reader.next_event()?.unwrap();
//! assert_eq!((event.ts, event.cpu, event.pid), (976_348_848_000, 0, 0));
//! assert!(matches!(event.kind, EventKind::IrqHandlerEntry { irq: 36, .. }));
//! assert_eq!(reader.meta().cpus, Some(1));
//! # Ok::<(), jitterlab_trace::Error>(())
//! ```
//!
//! # Time
//!
//! Text timestamps are seconds with microsecond (6 digits) or nanosecond (9 digits)
//! precision; they are converted to ns with integer arithmetic, never through floats.
//! function_graph durations (`12.345 us`, `28117.53 us`, `3594274 us`) are converted the same
//! way, keeping exactly the digits the kernel printed.
//!
//! function_graph text without the abstime column has no timestamps at all. Its times are then
//! **relative** and reconstructed from the durations (the meta format says so): one virtual
//! clock runs over the file in line order, starting at 0; an entry happens at the clock, a
//! leaf returns `duration` after its entry and moves the clock there, and a `}` returns at
//! `entry + duration` (or later, if lines of other CPUs moved the clock past that). Durations
//! stay exact ([`crate::EventKind::FuncReturn`] carries them), so call counts, inclusive time,
//! self time (inclusive minus the children's inclusive time) and callees are exact; only the
//! placement of calls on the time line, and the gaps between them, are invented.
//!
//! # Order
//!
//! The kernel's `trace` and `trace_pipe` text is already merged across CPUs in time order, and
//! so is `trace-cmd report`. The readers stream: each event goes into a small reorder buffer
//! (a stable sort over the last [`TextOptions::reorder_window`] events) so that events a line
//! implies later than the lines that follow it (a function_graph leaf's return) come out in
//! order, and so that slightly shuffled input is mended. Text times are cut to microseconds
//! while a leaf's return is its entry plus a duration in ns, so a function_graph line less
//! than 1 us before the previous return on its CPU is moved up to that return. An event
//! older than one already returned cannot be placed: in strict mode it is an error naming its
//! line, in lenient mode it is counted in [`crate::ReadStats::skipped`] and dropped.
//!
//! Read from a stream (a pipe, `trace_pipe`: [`crate::Trace::open`] of a file without a
//! size), the events waiting in the window are handed out whenever the input has been quiet
//! for 100 ms, so that a slow stream is not held back; a [`TextOptions::cancel`] flag ends
//! the read where it is.
//!
//! Memory is bounded by the window, the longest line (1 MiB), the interned names (at most
//! 16384 strings of up to 96 bytes) and, for function_graph, the open calls of each task,
//! never by the length of the file.
//!
//! The pid of an event whose text does not say it (function_graph without the proc column,
//! before the first task-switch line of its CPU) is -1.
//!
//! # Lost events
//!
//! `CPU:N [LOST M EVENTS]` (kernel) and `CPU:N [M EVENTS DROPPED]` (trace-cmd) lines become
//! [`crate::EventKind::Lost`] events on CPU N, timed at the next event of that CPU (where the
//! gap ends, or at its last event when none follows), and are added up per CPU in
//! [`crate::ReadStats::lost`], saturating at `u64::MAX` (a count printed past it is
//! `u64::MAX` too: "at least that many"). `trace-cmd report` text of several buffers names
//! the buffer before each line of an instance (`jlab_small: CPU:0 [734 EVENTS DROPPED]`,
//! `  jlab_big:   <idle>-0 [001] ...`; the top buffer's lines have blanks there); its drops
//! are counted on the CPU, whatever the buffer, and each buffer's events and losses per CPU
//! in [`crate::ReadStats::buffers`]. A drop line's buffer name is read in any text; an
//! event line's first word ending in `:` only in `trace-cmd report` text, and only when the
//! rest of the line is an event line. The `entries-in-buffer/entries-written` header of the `trace`
//! file also tells of events overwritten before the oldest one shown, on CPUs it does not
//! name: [`FtraceReader::overwritten`].
//!
//! # Errors
//!
//! In strict mode (the default) the first line that cannot be decoded is an error naming
//! the line number and what was expected there; calling `next_event` again goes on with the
//! next line. In lenient mode such lines are skipped and counted in
//! [`crate::ReadStats::skipped`].

mod events;
mod ftrace;
mod function_graph;
mod function_graph_lines;
mod lines;
mod perf;
mod reorder;
pub(crate) mod stream;
mod syntax;

use std::io::BufRead;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::{EventSource, Result};

pub(crate) use ftrace::scan_tgids;
pub use ftrace::FtraceReader;
pub use function_graph::FgraphReader;
pub use perf::PerfReader;

/// [`crate::EventKind::Other`] name of a function_graph `==========>` line: an interrupt
/// was entered on this CPU (the functions up to the matching exit ran in hard-irq context).
pub const GRAPH_IRQ_ENTRY: &str = "funcgraph:irq_entry";
/// [`crate::EventKind::Other`] name of a function_graph `<==========` line: the interrupt
/// entered at the matching [`GRAPH_IRQ_ENTRY`] returned.
pub const GRAPH_IRQ_EXIT: &str = "funcgraph:irq_exit";
/// [`crate::EventKind::Other`] name of a function_graph task-switch block
/// (`0)  <idle>-0  =>  bash-1234`), with fields `prev_comm`, `prev_pid`, `next_comm`,
/// `next_pid`. The kernel cuts these comms to 7 characters.
pub const GRAPH_TASK_SWITCH: &str = "funcgraph:task_switch";
/// [`crate::EventKind::Other`] name of a function tracer line (`func <-parent`), with
/// fields `ip` and `parent_ip` holding the symbols as printed.
pub const FUNCTION: &str = "ftrace:function";
/// [`crate::EventKind::Other`] name of a `<stack trace>` record; its fields are the frames,
/// innermost first, each named `caller`.
pub const KERNEL_STACK: &str = "ftrace:kernel_stack";
/// [`crate::EventKind::Other`] name of a `<user stack trace>` record, fields as
/// [`KERNEL_STACK`].
pub const USER_STACK: &str = "ftrace:user_stack";

/// Which text format a buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TextKind {
    /// The kernel's `trace` / `trace_pipe` text of the event tracers (nop, function, ...).
    Ftrace,
    /// `trace-cmd report` output.
    TraceCmdReport,
    /// The kernel's function_graph tracer text.
    FunctionGraph,
    /// `perf script` output of tracepoint samples.
    PerfScript,
}

/// How a text reader reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextOptions {
    /// The name errors give for the input (a file name).
    pub source_name: String,
    /// Skip lines that cannot be decoded (counting them in [`crate::ReadStats::skipped`])
    /// instead of failing on them.
    pub lenient: bool,
    /// How many decoded events are held back to be put in time order (see the module docs).
    pub reorder_window: usize,
    /// Once set, the input ends where it is: the line being read (if cut) is dropped, the
    /// events read are handed out and the read ends as at the end of the input (Ctrl-C on
    /// a stream).
    pub cancel: Cancel,
}

/// A flag that ends a read early (see [`TextOptions::cancel`]); the default is never set.
/// Two `Cancel`s are equal when they share their flag.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Option<Arc<AtomicBool>>);

impl Cancel {
    /// Ends the read once `flag` is true (set by a signal handler, another thread, ...).
    pub fn new(flag: Arc<AtomicBool>) -> Cancel {
        Cancel(Some(flag))
    }

    /// Whether the read is to end.
    pub fn is_set(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

impl PartialEq for Cancel {
    fn eq(&self, other: &Cancel) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for Cancel {}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            source_name: "text trace".to_string(),
            lenient: false,
            reorder_window: 4096,
            cancel: Cancel::default(),
        }
    }
}

impl TextOptions {
    /// Strict options naming the source `source_name`.
    pub fn named(source_name: impl Into<String>) -> Self {
        TextOptions {
            source_name: source_name.into(),
            ..TextOptions::default()
        }
    }
}

/// Tells which text trace format `bytes` (the start of a file is enough; 64 KiB are looked
/// at) holds, or `None` if it is none of them (binary data, an empty file, other text).
///
/// The first data line decides; the bytes of a comm do not matter (a comm the kernel cut
/// at 15 bytes may end inside a UTF-8 character: such lines are read lossily). Lines end at
/// `\n`, `\r\n` or a lone `\r`. Text with headers and no data line (an empty `trace`
/// file, `trace-cmd report` of an empty buffer, a function_graph header) is a trace of its
/// format with no events; whitespace alone is not a trace. (A `\r` ends lines only in text
/// without `\n`.)
pub fn detect(bytes: &[u8]) -> Option<TextKind> {
    match detect_lines(bytes, true) {
        Detected::Kind(k) => Some(k),
        Detected::NotATrace | Detected::Undecided => None,
    }
}

/// What the lines read so far tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Detected {
    /// This format.
    Kind(TextKind),
    /// None of the formats.
    NotATrace,
    /// Headers only, so far: more text is needed (only when not `complete`).
    Undecided,
}

/// [`detect`] over the start of an input; when not `complete` (more may follow: a pipe),
/// the last line, which may be cut, is not looked at, and headers alone leave the format
/// [`Detected::Undecided`].
pub(crate) fn detect_lines(bytes: &[u8], complete: bool) -> Detected {
    let head = &bytes[..bytes.len().min(64 * 1024)];
    if head.contains(&0) {
        return Detected::NotATrace;
    }
    // Only whole lines when more may follow (or the head was cut at 64 KiB).
    let whole = if complete && head.len() == bytes.len() {
        head
    } else {
        match head.iter().rposition(|b| *b == b'\n' || *b == b'\r') {
            Some(end) => &head[..end],
            None if head.len() == bytes.len() && !complete => return Detected::Undecided,
            None => head,
        }
    };
    let mut header = None;
    // Lines end at `\n` (or `\r\n`), or at a lone `\r` when there is no `\n`.
    let end = if whole.contains(&b'\n') { b'\n' } else { b'\r' };
    // Blank lines are skipped without counting: a trace may start with any number.
    let lines = whole
        .split(|b| *b == end)
        .filter(|raw| !raw.iter().all(u8::is_ascii_whitespace))
        .take(400);
    for raw in lines {
        let line = String::from_utf8_lossy(raw);
        let line: &str = &line;
        let t = line.trim();
        if t.starts_with("-----") || syntax::parse_lost(t).is_some() {
            continue;
        }
        if let Some(tracer) = t.strip_prefix("# tracer:") {
            if tracer.trim() == "function_graph" {
                return Detected::Kind(TextKind::FunctionGraph);
            }
            header.get_or_insert(TextKind::Ftrace);
            continue;
        }
        if t.starts_with('#') {
            if t.contains("FUNCTION CALLS") {
                return Detected::Kind(TextKind::FunctionGraph);
            }
            if t.starts_with("# captured on") || t.starts_with("# perf version") {
                header.get_or_insert(TextKind::PerfScript);
            }
            continue;
        }
        if t.starts_with("cpus=")
            || t.starts_with("version =")
            || (t.starts_with("CPU ") && t.ends_with(" is empty"))
        {
            header = Some(TextKind::TraceCmdReport);
            continue;
        }
        if ftrace::looks_like_event_line(line) {
            return Detected::Kind(if header == Some(TextKind::TraceCmdReport) {
                TextKind::TraceCmdReport
            } else {
                TextKind::Ftrace
            });
        }
        if perf::looks_like_perf_line(line) {
            return Detected::Kind(TextKind::PerfScript);
        }
        if function_graph::looks_like_graph_line(line) {
            return Detected::Kind(TextKind::FunctionGraph);
        }
        // The headers named a format and its first event line is bad: that format, so
        // that its reader names the line and what is wrong with it.
        return header.map_or(Detected::NotATrace, Detected::Kind);
    }
    match header {
        Some(k) if complete || head.len() < bytes.len() => Detected::Kind(k),
        None if complete || head.len() < bytes.len() => Detected::NotATrace,
        _ => Detected::Undecided,
    }
}

/// Opens the reader for `kind` over `input` (use `&bytes[..]` for bytes in memory).
/// Fails, in strict mode, if the first data line cannot be decoded.
pub fn open<'a, R: BufRead + 'a>(
    input: R,
    kind: TextKind,
    options: TextOptions,
) -> Result<Box<dyn EventSource + 'a>> {
    Ok(match kind {
        TextKind::Ftrace | TextKind::TraceCmdReport => Box::new(FtraceReader::new(input, options)?),
        TextKind::FunctionGraph => Box::new(FgraphReader::new(input, options)?),
        TextKind::PerfScript => Box::new(PerfReader::new(input, options)?),
    })
}

/// Cuts `line` to a short excerpt for error messages.
fn excerpt(line: &str) -> String {
    const MAX: usize = 80;
    let t = line.trim();
    if t.len() <= MAX {
        return format!("`{t}`");
    }
    let mut end = MAX;
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    format!("`{}...`", &t[..end])
}
