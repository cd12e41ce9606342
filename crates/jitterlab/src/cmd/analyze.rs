//! `jitterlab analyze FILE`: Tracealyzer-style answers from a kernel trace.

use std::path::PathBuf;

use clap::Args;
use jitterlab_analyze::analysis::timeline::TimelineOptions;
use jitterlab_analyze::{analyze_trace, Options, Pattern, Section};
use jitterlab_render::view::write_html;
use jitterlab_render::Html;
use jitterlab_trace::Trace;

use crate::cli::{Color, JsonOut, TraceInput, Window};
use crate::exit::{Exit, Result};
use crate::files::Files;
use crate::output::{emit, trace_notes, Interrupt};
use crate::progress::{self, file_name};

/// `jitterlab analyze`.
#[derive(Args, Debug)]
#[command(
    after_help = "Sections: summary, cpus, tasks, irqs, blame, functions (default: all; functions only when the trace has function_graph calls).\n\nExamples:\n  jitterlab analyze trace.dat\n  jitterlab analyze trace.dat --section tasks --top 50\n  jitterlab analyze trace.dat --section irqs --irq virtio1-req.0 --task dd\n  jitterlab analyze trace.dat --cpu 1 --from 976.3483 --to 976.3500\n  jitterlab analyze /sys/kernel/tracing/trace --json | jq .data.tasks"
)]
pub struct AnalyzeArgs {
    /// A trace-cmd .dat (v6, v7), ftrace text, trace-cmd report text or function_graph
    /// text: told apart by content.
    pub file: PathBuf,
    /// Only these sections (repeatable, or comma-separated).
    #[arg(long = "section", value_name = "NAME", value_delimiter = ',')]
    pub sections: Vec<Section>,
    /// Focus the IRQ -> task chains on this IRQ: a number, a name or a glob (virtio*).
    #[arg(long, value_name = "IRQ")]
    pub irq: Option<String>,
    /// Only this task: a tid, a name or a glob; also focuses the IRQ -> task chains.
    #[arg(long, value_name = "TASK")]
    pub task: Option<String>,
    /// Only this process: the rows, chains and blamed wake-ups of all its threads (when the
    /// trace has thread group ids; else of the task with this tid).
    #[arg(long, value_name = "PID")]
    pub pid: Option<i32>,
    /// Only these CPUs and this window.
    #[command(flatten)]
    pub window: Window,
    /// Rows per table in the text output (the JSON has every row).
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: usize,
    /// Blame the N worst wake-ups (every `jitterlab:` trace_marker is blamed too).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub worst: usize,
    #[command(flatten)]
    pub json: JsonOut,
    /// Compare the function_graph statistics with this other trace (tracing on vs. off,
    /// before vs. after a fix): the functions whose self time or call count changed most.
    #[arg(long, value_name = "OTHER")]
    pub compare: Option<PathBuf>,
    /// How the trace is read.
    #[command(flatten)]
    pub trace: TraceInput,
    /// Also write the report as one offline HTML file: a timeline of every CPU, the task
    /// view, these sections as tables (as `jitterlab view` does).
    #[arg(long, value_name = "FILE.html")]
    pub html: Option<PathBuf>,
    /// With --html: keep at most N slices and spans in the timeline (later ones are left
    /// out, and the page says so).
    #[arg(long, value_name = "N", default_value_t = TimelineOptions::default().max_slices)]
    pub max_slices: u64,
}

impl AnalyzeArgs {
    /// The files it reads and writes, for [`crate::files::guard`].
    pub fn files(&self) -> Files<'_> {
        let mut f = Files::default();
        f.input(&self.file)
            .input_opt(self.compare.as_ref())
            .output_opt(self.html.as_ref());
        f
    }
}

pub fn run(args: AnalyzeArgs, color: Color) -> Result {
    let options = Options {
        sections: args.sections,
        irq: args.irq.map(Pattern::new),
        task: args.task.map(Pattern::new),
        filter: args.window.filter(args.pid)?,
        top: args.top,
        blame: args.worst,
        // The page's timeline compressed as the pass goes (docs/html.md, "Chunks").
        timeline: args.html.as_ref().map(|_| TimelineOptions {
            max_slices: args.max_slices,
            spill: Some(crate::app::view::page_spill().spill_to()),
            ..TimelineOptions::default()
        }),
        ..Options::default()
    };
    let mut trace = args.trace.open(&args.file)?;
    trace_notes(&trace, true);
    let interrupt = Interrupt::for_trace(&mut trace);
    trace.parse_symbols_behind();
    // After the signals are blocked: the progress thread must not take Ctrl-C.
    let progress = progress::reading(
        &mut trace,
        format!("analyzing {}", file_name(&args.file)),
        false,
    );
    let other = match &args.compare {
        Some(path) => Some((
            Trace::open(path, args.trace.lenient)?,
            path.display().to_string(),
        )),
        None => None,
    };
    let report = analyze_trace(
        &trace,
        options,
        other.as_ref().map(|(t, n)| (t, n.as_str())),
    )?;
    progress.finish();
    interrupt.note();
    if let Some(path) = &args.html {
        let title = args.file.file_name().unwrap_or_default().to_string_lossy();
        write_html(&report, &Html::titled(title), path)?;
    }
    emit(&report, &args.json, color)?;
    Ok(Exit::Ok)
}
