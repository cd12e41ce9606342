//! `jitterlab view INPUT [B]`: a trace or a saved result as one offline HTML report; two
//! traces (or two `analyze --json` results) as one compare page.

use std::path::PathBuf;

use crate::app::view::{compare, view, Input};
use clap::Args;
use jitterlab_analyze::analysis::timeline::TimelineOptions;
use jitterlab_analyze::Options;
use jitterlab_render::Html;

use crate::cli::{Color, JsonOut, TraceInput, Window};
use crate::exit::{Error, Exit, Result};
use crate::files::Files;
use crate::output::{emit, trace_notes, Interrupt};
use crate::progress::{self, file_name};

/// `jitterlab view`.
#[derive(Args, Debug)]
#[command(
    after_help = "The report is one HTML file that opens from disk in any browser, with no network access: a timeline of every CPU (tasks, hardirqs, softirqs, wake-ups and their causes), a task view, the analyze sections as tables, a latency result's histograms and percentiles, and an experiment's runs per cell with their verdicts.\n\nWith two traces, one page compares them: both timelines on one time axis (each from its own start), zoomed and moved together, and every table as A, B and B/A.\n\nExamples:\n  jitterlab view trace.dat                 # writes trace.html\n  jitterlab view idle.dat stress.dat       # writes idle-vs-stress.html\n  jitterlab view trace.dat -o /tmp/spike.html --cpu 1 --from 976.30 --to 976.35\n  jitterlab view run.json                  # a result of latency --json\n  jitterlab view experiment.json           # a result of experiment --json"
)]
pub struct ViewArgs {
    /// A trace (any format `analyze` reads), or a result saved with `latency --json`,
    /// `analyze --json` or `experiment --json`.
    pub input: PathBuf,
    /// A second trace (or `analyze --json` result), compared with INPUT on one page:
    /// INPUT is A, this is B.
    #[arg(value_name = "B")]
    pub compare: Option<PathBuf>,
    /// The report (default: INPUT with the extension .html, or A-vs-B.html beside A;
    /// - for stdout).
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
        if let Some(b) = &self.compare {
            f.input(b);
        }
        f
    }
}

pub fn run(args: ViewArgs, color: Color) -> Result {
    let filter = args.window.filter(args.pid)?;
    let stdin = |p: &PathBuf| p.as_os_str() == "-";
    let output = match (&args.output, &args.compare) {
        (Some(o), _) => o.clone(),
        (None, _) if stdin(&args.input) || args.compare.as_ref().is_some_and(stdin) => {
            return Err(Error::usage(
                "-o: give the report's name when reading stdin",
            ))
        }
        (None, None) => args.input.with_extension("html"),
        (None, Some(b)) => {
            let stem = |p: &PathBuf| {
                p.file_stem()
                    .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
            };
            args.input
                .with_file_name(format!("{}-vs-{}.html", stem(&args.input), stem(b)))
        }
    };
    // The default name too (`x.html` read as a saved result is its own INPUT.html).
    crate::files::check(&output)?;
    let open = |path: &PathBuf| Input::open(path, args.trace.lenient, args.trace.buffer.as_deref());
    let mut inputs = vec![open(&args.input)?];
    if let Some(b) = &args.compare {
        inputs.push(open(b)?);
    }
    // One progress line and one Ctrl-C for every trace read (a compare page's two).
    let mut interrupt = None;
    let mut traces: Vec<&mut jitterlab_trace::Trace> = Vec::new();
    for input in &mut inputs {
        if let Input::Trace(trace) = input {
            trace_notes(trace, true);
            match &interrupt {
                None => interrupt = Some(Interrupt::for_trace(trace)),
                Some(i) => i.also(trace),
            }
            // A thread: after the signals are blocked.
            trace.parse_symbols_behind();
            traces.push(trace);
        }
    }
    // After the signals are blocked: the progress thread must not take Ctrl-C.
    let names: Vec<String> = [Some(&args.input), args.compare.as_ref()]
        .into_iter()
        .flatten()
        .map(|p| file_name(p))
        .collect();
    let progress = progress::reading_all(traces, format!("reading {}", names.join(" and ")), false);
    let options = Options {
        filter,
        timeline: Some(TimelineOptions {
            max_slices: args.max_slices,
            ..TimelineOptions::default()
        }),
        ..Options::default()
    };
    let title = |p: &PathBuf| {
        p.file_name()
            .map_or_else(|| "stdin".to_string(), |n| n.to_string_lossy().into_owned())
    };
    let viewed = match (&inputs[..], &args.compare) {
        ([a, b], Some(b_path)) => {
            let (ta, tb) = (title(&args.input), title(b_path));
            let page = Html {
                title: format!("{ta} vs {tb}"),
                pins: args.pin.clone(),
            };
            compare([(a, &ta), (b, &tb)], &page, &output, options)?
        }
        _ => {
            let page = Html {
                title: title(&args.input),
                pins: args.pin.clone(),
            };
            view(&inputs[0], &page, &output, options)?
        }
    };
    progress.finish();
    if let Some(i) = interrupt {
        i.note();
    }
    emit(&viewed, &args.json, color)?;
    Ok(Exit::Ok)
}
