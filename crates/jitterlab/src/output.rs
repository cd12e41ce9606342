//! Where and how results are written: stdout or a file, text or JSON.

use std::io::{self, IsTerminal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use jitterlab_host::child::cancel_on_signals;
use jitterlab_trace::Trace;

use jitterlab_render::{ExportManager, Format, Json, Render, Style, Target};

use crate::cli::{Color, JsonOut};

/// Picks text or JSON, and colour for text.
pub fn format(json: bool, color: Color) -> Format {
    if json {
        return Format::Json;
    }
    let color = match color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    Format::Text(Style { color })
}

/// Set when one of the command's outputs is `-`: its data goes to stdout, so the summary
/// of what was written goes to stderr.
static DATA_ON_STDOUT: AtomicBool = AtomicBool::new(false);

/// Says that the command writes its data (a trace, a report) to stdout: [`emit`] then
/// writes to stderr, so the summary never mixes with the data.
pub fn data_on_stdout() {
    DATA_ON_STDOUT.store(true, Ordering::Relaxed);
}

/// Where a command's text summary goes beside its other outputs: stdout, or stderr when
/// its data goes to stdout.
pub fn summary_target() -> jitterlab_render::Target {
    if DATA_ON_STDOUT.load(Ordering::Relaxed) {
        jitterlab_render::Target::Stderr
    } else {
        jitterlab_render::Target::Stdout
    }
}

/// Writes a command's result as `--json` asks, the same way on every command: the text
/// without it; the JSON instead of the text with `--json`; the JSON to FILE and the text
/// with `--json=FILE`. What goes to the terminal goes to stdout, or to stderr when the
/// command's data goes there ([`data_on_stdout`]).
pub fn emit<T: Render>(value: &T, json: &JsonOut, color: Color) -> crate::exit::Result<()> {
    let mut outputs = ExportManager::new();
    add_result(&mut outputs, value, json, color);
    outputs.write_all()?;
    Ok(())
}

/// [`emit`] to stderr, for a command whose stdout belongs to the command it runs
/// (`run`, `load -- CMD`); no colour.
pub fn emit_stderr<T: Render>(value: &T, json: &JsonOut) -> crate::exit::Result<()> {
    let mut outputs = ExportManager::new();
    add_result_to(&mut outputs, value, json, Color::Never, Target::Stderr);
    outputs.write_all()?;
    Ok(())
}

/// Adds a command's result to `outputs` as [`emit`] writes it, for a command with more
/// outputs than its result (`latency --plot`, `audit --html`): the JSON to FILE with
/// `--json=FILE`, then the text, or the JSON with `--json`, where the summary goes.
pub fn add_result<'a, T: Render>(
    outputs: &mut ExportManager<'a>,
    value: &'a T,
    json: &JsonOut,
    color: Color,
) {
    add_result_to(outputs, value, json, color, summary_target());
}

fn add_result_to<'a, T: Render>(
    outputs: &mut ExportManager<'a>,
    value: &'a T,
    json: &JsonOut,
    color: Color,
    terminal: Target,
) {
    if let Some(path) = json.file() {
        outputs.add(Json, value, Target::file(path));
    }
    outputs.add(format(json.on_stdout(), color), value, terminal);
}

/// An error writing standard output, named so (its kind kept: a closed pipe is a quiet
/// end, [`crate::exit::Error::is_broken_pipe`]).
pub fn stdout_error(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("cannot write standard output: {e}"))
}

/// Ctrl-C (SIGINT, SIGTERM) while a text trace is read ends its read where it is, and
/// the command reports what was read (`report` and `analyze` on a stream such as
/// `trace_pipe`). A .dat file keeps the default: Ctrl-C ends the command.
pub struct Interrupt(Option<Arc<AtomicBool>>);

impl Interrupt {
    /// Set up for `trace`; call before any thread starts.
    pub fn for_trace(trace: &mut Trace) -> Interrupt {
        if !matches!(trace, Trace::Text { .. }) {
            return Interrupt(None);
        }
        let flag = cancel_on_signals();
        trace.set_cancel(Arc::clone(&flag));
        Interrupt(Some(flag))
    }

    /// Lets the same Ctrl-C end `trace`'s read too (a second trace of one command).
    pub fn also(&self, trace: &mut Trace) {
        if let Some(flag) = &self.0 {
            trace.set_cancel(Arc::clone(flag));
        }
    }

    /// Says on stderr when the read was cut short: what was printed is what was read
    /// before Ctrl-C.
    pub fn note(&self) {
        if self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed)) {
            eprintln!("jitterlab: interrupted: the results are those of the events read before");
        }
    }
}

/// Tells stderr what the reader found odd in `trace` (layout warnings) and, with
/// `buffers`, which buffers of a .dat are not read.
pub fn trace_notes(trace: &jitterlab_trace::Trace, buffers: bool) {
    let note = buffers.then(|| trace.buffer_note()).flatten();
    for n in trace.notes().into_iter().chain(note) {
        eprintln!("jitterlab: warning: {n}");
    }
}
