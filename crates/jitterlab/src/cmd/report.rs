//! `jitterlab report FILE`: a trace's events one per line, or its counts.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use jitterlab_analyze::{EventFilter, Pattern};
use jitterlab_render::stream::{write_events, EventOutputs, StreamError};
use jitterlab_render::{ExportError, Target};
use jitterlab_trace::stats::TraceStats;

use crate::cli::{Color, JsonOut, TraceInput, Window};
use crate::exit::{Exit, Result};
use crate::files::Files;
use crate::output::{emit, trace_notes, Interrupt};
use crate::progress::{self, file_name};

/// `jitterlab report`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  jitterlab report trace.dat --stats\n  jitterlab report trace.dat --cpu 1 --event 'sched_*' --from 976.3 --to 976.4\n  jitterlab report /sys/kernel/tracing/trace --json | jq .event"
)]
pub struct ReportArgs {
    /// A trace-cmd .dat (v6, v7), ftrace text, trace-cmd report text or function_graph
    /// text: told apart by content.
    pub file: PathBuf,
    /// Counts per event type and per CPU, lost events, time span and format, without
    /// printing events: of every buffer of a .dat, added up and one by one.
    #[arg(long)]
    pub stats: bool,
    /// Only events of these CPUs and this window.
    #[command(flatten)]
    pub window: Window,
    /// Only events whose current task (common_pid) belongs to this process: its threads
    /// when the trace has thread group ids, and the task with this tid.
    #[arg(long, value_name = "PID")]
    pub pid: Option<i32>,
    /// Only events whose name matches (glob: `sched_*`, `irq_handler_entry`; repeatable).
    #[arg(long, value_name = "NAME")]
    pub event: Vec<String>,
    #[command(flatten)]
    pub json: JsonOut,
    /// How the trace is read.
    #[command(flatten)]
    pub trace: TraceInput,
}

impl ReportArgs {
    /// The files it reads and writes, for [`crate::files::guard`].
    pub fn files(&self) -> Files<'_> {
        let mut f = Files::default();
        f.input(&self.file);
        f
    }
}

pub fn run(args: ReportArgs, color: Color) -> Result {
    let filter = EventFilter {
        filter: args.window.filter(args.pid)?,
        names: args.event.iter().map(Pattern::new).collect(),
        tgids: Default::default(),
    };
    let mut trace = args.trace.open(&args.file)?;
    // --stats counts every buffer; the events are every buffer's, or the one named.
    trace_notes(&trace, false);
    let interrupt = Interrupt::for_trace(&mut trace);
    if args.stats {
        // Every buffer is counted.
        let progress = progress::reading(
            &mut trace,
            format!("counting {}", file_name(&args.file)),
            true,
        );
        let stats = TraceStats::of(&args.file.display().to_string(), &trace)?;
        progress.finish();
        interrupt.note();
        emit(&stats, &args.json, color)?;
        return Ok(Exit::Ok);
    }
    let filter = EventFilter {
        tgids: trace.tgids(),
        ..filter
    };
    let lines = trace.lines();
    // From a stream, each line as it comes (stdout is line-buffered); else in blocks.
    let mut stdout: Box<dyn Write> = if trace.is_stream() {
        Box::new(io::stdout().lock())
    } else {
        Box::new(BufWriter::with_capacity(1 << 16, io::stdout().lock()))
    };
    // --json=FILE: the JSON lines to FILE and the text to stdout, in one pass.
    let target = args.json.file().map(Target::file);
    let cannot_write = |source| ExportError {
        target: target.clone().unwrap_or(Target::Stdout),
        source,
    };
    let mut file = target
        .as_ref()
        .map(Target::create)
        .transpose()
        .map_err(cannot_write)?;
    let outputs = match (&mut file, args.json.on_stdout()) {
        (Some(f), _) => EventOutputs {
            text: Some(&mut *stdout),
            json: Some(f),
        },
        (None, true) => EventOutputs {
            text: None,
            json: Some(&mut *stdout),
        },
        (None, false) => EventOutputs {
            text: Some(&mut *stdout),
            json: None,
        },
    };
    let skipped = match write_events(&mut *trace.printed_events()?, &filter, lines, outputs) {
        Err(StreamError::WriteJson(e)) if file.is_some() => return Err(cannot_write(e).into()),
        r => r?,
    };
    if let Some(f) = file {
        f.finish().map_err(cannot_write)?;
    }
    interrupt.note();
    if skipped > 0 {
        eprintln!("jitterlab: {skipped} undecodable records or lines skipped (--lenient)");
    }
    Ok(Exit::Ok)
}
