//! `jitterlab analyze FILE`: Tracealyzer-style answers from a kernel trace.

use std::path::PathBuf;

use clap::Args;
use jitterlab_analyze::{analyze, Options, Pattern, Section};
use jitterlab_trace::Trace;

use crate::cli::Color;
use crate::output::{emit, format};
use crate::EXIT_OK;

/// `jitterlab analyze`.
#[derive(Args, Debug)]
#[command(
    after_help = "Sections: summary, cpus, tasks, irqs, blame, functions (default: all; functions only when the trace has function_graph calls).\n\nExamples:\n  jitterlab analyze trace.dat\n  jitterlab analyze trace.dat --section tasks --top 50\n  jitterlab analyze trace.dat --section irqs --irq virtio1-req.0 --task dd\n  jitterlab analyze /sys/kernel/tracing/trace --json | jq .data.tasks"
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

pub fn run(args: Analyze, color: Color) -> anyhow::Result<u8> {
    let trace = Trace::open(&args.file, args.lenient)?;
    let options = Options {
        sections: args.sections,
        irq: args.irq.map(Pattern::new),
        task: args.task.map(Pattern::new),
        top: args.top,
        blame: args.worst,
        ..Options::default()
    };
    let mut report = analyze(&mut *trace.events()?, &options)?;
    if let Some(other) = &args.compare {
        let only = Options {
            sections: vec![Section::Functions],
            ..options.clone()
        };
        let theirs = analyze(&mut *Trace::open(other, args.lenient)?.events()?, &only)?;
        if let (Some(mine), Some(theirs)) = (&mut report.functions, &theirs.functions) {
            mine.comparison = Some(mine.compare(theirs, &other.display().to_string()));
        }
    }
    emit(&report, format(args.json, color))?;
    Ok(EXIT_OK)
}
