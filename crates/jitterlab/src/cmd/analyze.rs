//! `jitterlab analyze FILE`: Tracealyzer-style answers from a kernel trace.

use std::path::PathBuf;

use clap::Args;
use jitterlab_analyze::{analyze, Filter, Options, Pattern, Section};
use jitterlab_cpuset::CpuSet;
use jitterlab_host::Error;
use jitterlab_trace::{read_ahead, Trace};

use super::report::seconds_ns;
use crate::cli::Color;
use crate::output::{emit, format};
use crate::EXIT_OK;

/// `jitterlab analyze`.
#[derive(Args, Debug)]
#[command(
    after_help = "Sections: summary, cpus, tasks, irqs, blame, functions (default: all; functions only when the trace has function_graph calls).\n\nExamples:\n  jitterlab analyze trace.dat\n  jitterlab analyze trace.dat --section tasks --top 50\n  jitterlab analyze trace.dat --section irqs --irq virtio1-req.0 --task dd\n  jitterlab analyze trace.dat --cpu 1 --from 976.3483 --to 976.3500\n  jitterlab analyze /sys/kernel/tracing/trace --json | jq .data.tasks"
)]
pub struct Analyze {
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
    #[command(flatten)]
    pub window: Window,
    /// Rows per table in the text output (the JSON has every row).
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: usize,
    /// Blame the N worst wake-ups (every `jitterlab:` trace_marker is blamed too).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub worst: usize,
    /// Print JSON (a versioned envelope: {"schema": "jitterlab.analyze", "version", "data"}).
    #[arg(long)]
    pub json: bool,
    /// Compare the function_graph statistics with this other trace (tracing on vs. off,
    /// before vs. after a fix): the functions whose self time or call count changed most.
    #[arg(long, value_name = "OTHER")]
    pub compare: Option<PathBuf>,
    /// Skip undecodable records and lines, counting them, instead of stopping.
    #[arg(long)]
    pub lenient: bool,
}

/// The CPUs and the time window of a trace to look at (`analyze`, `convert`).
#[derive(Args, Debug, Default)]
pub struct Window {
    /// Only the time, IRQs and wake-ups of these CPUs (a list: 0,2-3).
    #[arg(long, value_name = "LIST")]
    pub cpu: Option<String>,
    /// Only from this time on, in seconds as printed (`976.3483`): intervals are cut to the
    /// window; the state is still followed from the start of the trace.
    #[arg(long, value_name = "SECONDS", value_parser = seconds_ns)]
    pub from: Option<u64>,
    /// Only up to this time, in seconds as printed.
    #[arg(long, value_name = "SECONDS", value_parser = seconds_ns)]
    pub to: Option<u64>,
}

impl Window {
    /// The filter, checked (exit 2 on a bad CPU list or an empty window).
    pub fn filter(&self, pid: Option<i32>) -> Result<Filter, Error> {
        let cpus = match &self.cpu {
            Some(l) => {
                Some(CpuSet::parse_list(l).map_err(|e| Error::Invalid(format!("--cpu: {e}")))?)
            }
            None => None,
        };
        if let (Some(from), Some(to)) = (self.from, self.to) {
            if to < from {
                return Err(Error::Invalid(
                    "--to: expected a time at or after --from".into(),
                ));
            }
        }
        Ok(Filter {
            from_ns: self.from,
            to_ns: self.to,
            cpus,
            pid,
        })
    }
}

pub fn run(args: Analyze, color: Color) -> anyhow::Result<u8> {
    let filter = args.window.filter(args.pid)?;
    let trace = Trace::open(&args.file, args.lenient)?;
    let options = Options {
        sections: args.sections,
        irq: args.irq.map(Pattern::new),
        task: args.task.map(Pattern::new),
        filter,
        tgids: trace.tgids(),
        top: args.top,
        blame: args.worst,
        ..Options::default()
    };
    let mut report = match &trace {
        // Decoding the .dat in a second thread overlaps it with the analyses.
        Trace::Dat(d) => read_ahead(d.events(0)?, |s| analyze(s, &options))?,
        _ => analyze(&mut *trace.events()?, &options)?,
    };
    if let Some(other) = &args.compare {
        let other_trace = Trace::open(other, args.lenient)?;
        let only = Options {
            sections: vec![Section::Functions],
            tgids: other_trace.tgids(),
            ..options.clone()
        };
        let theirs = analyze(&mut *other_trace.events()?, &only)?;
        if let (Some(mine), Some(theirs)) = (&mut report.functions, &theirs.functions) {
            mine.comparison = Some(mine.compare(theirs, &other.display().to_string()));
        }
    }
    emit(&report, format(args.json, color))?;
    Ok(EXIT_OK)
}
