//! `jitterlab view INPUT`: a trace or a saved result as one offline HTML report.

use std::path::PathBuf;

use crate::app::view::{view, Input};
use clap::Args;
use jitterlab_analyze::analysis::timeline::TimelineOptions;
use jitterlab_analyze::Options;
use jitterlab_render::Html;

use crate::cli::{Color, JsonOut, TraceInput, Window};
use crate::exit::{Error, Exit, Result};
use crate::files::Files;
use crate::output::{emit, trace_notes, Interrupt};
use crate::progress::{self, file_name, Progress};

/// `jitterlab view`.
#[derive(Args, Debug)]
#[command(
    after_help = "The report is one HTML file that opens from disk in any browser, with no network access: a timeline of every CPU (tasks, hardirqs, softirqs, wake-ups and their causes), a task view, the analyze sections as tables, a latency result's histograms and percentiles, and an experiment's runs per cell with their verdicts.\n\nExamples:\n  jitterlab view trace.dat                 # writes trace.html\n  jitterlab view trace.dat -o /tmp/spike.html --cpu 1 --from 976.30 --to 976.35\n  jitterlab view run.json                  # a result of latency --json\n  jitterlab view experiment.json           # a result of experiment --json"
)]
pub struct ViewArgs {
    /// A trace (any format `analyze` reads), or a result saved with `latency --json`,
    /// `analyze --json` or `experiment --json`.
    pub input: PathBuf,
    /// The report (default: INPUT with the extension .html; - for stdout).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Only these CPUs and this window.
    #[command(flatten)]
    pub window: Window,
    /// Only this process's tables (its threads' rows); the timeline keeps every task.
    #[arg(long, value_name = "PID")]
    pub pid: Option<i32>,
    /// Keep at most N slices and spans in the timeline (later ones are left out, and the
    /// page says so); the tables cover the whole trace.
    #[arg(long, value_name = "N", default_value_t = TimelineOptions::default().max_slices)]
    pub max_slices: u64,
    /// Open the timeline with a thread row for each task QUERY finds, as its search box
    /// takes it (a comm such as `iperf3`, `tid:N`, `pid:N`), under the CPU rows: where the
    /// thread ran, coloured by CPU, its wake-ups and their wakers (repeatable).
    #[arg(long, value_name = "QUERY")]
    pub pin: Vec<String>,
    #[command(flatten)]
    pub json: JsonOut,
    /// How the trace is read.
    #[command(flatten)]
    pub trace: TraceInput,
}

impl ViewArgs {
    /// The files it reads and writes, for [`crate::files::guard`].
    pub fn files(&self) -> Files<'_> {
        let mut f = Files::default();
        f.input(&self.input).output_opt(self.output.as_ref());
        f
    }
}

pub fn run(args: ViewArgs, color: Color) -> Result {
    let filter = args.window.filter(args.pid)?;
    let output = match &args.output {
        Some(o) => o.clone(),
        None if args.input.as_os_str() == "-" => {
            return Err(Error::usage(
                "-o: give the report's name when reading stdin",
            ))
        }
        None => args.input.with_extension("html"),
    };
    // The default name too (`x.html` read as a saved result is its own INPUT.html).
    crate::files::check(&output)?;
    let mut input = Input::open(
        &args.input,
        args.trace.lenient,
        args.trace.buffer.as_deref(),
    )?;
    let (interrupt, progress) = match &mut input {
        Input::Trace(trace) => {
            trace_notes(trace, true);
            let interrupt = Interrupt::for_trace(trace);
            // After the signals are blocked: the progress thread must not take Ctrl-C.
            let label = format!("reading {}", file_name(&args.input));
            (Some(interrupt), progress::reading(trace, label, false))
        }
        Input::Saved(_) => (None, Progress::hidden()),
    };
    let title = args
        .input
        .file_name()
        .map_or_else(|| "stdin".to_string(), |n| n.to_string_lossy().into_owned());
    let options = Options {
        filter,
        timeline: Some(TimelineOptions {
            max_slices: args.max_slices,
            ..TimelineOptions::default()
        }),
        ..Options::default()
    };
    let page = Html {
        title,
        pins: args.pin.clone(),
    };
    let viewed = view(&input, &page, &output, options)?;
    progress.finish();
    if let Some(i) = interrupt {
        i.note();
    }
    emit(&viewed, &args.json, color)?;
    Ok(Exit::Ok)
}
