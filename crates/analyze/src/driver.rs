//! The analysis driver: one pass over a trace, and the [`AnalyzeReport`] it returns.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use jitterlab_trace::EventSource;
use serde::Serialize;

use crate::analysis::timeline::{Timeline, TimelineOptions};
use crate::analysis::{
    blame::BlameSection, cpus::CpuSection, functions::FunctionSection, irqs::IrqSection,
    summary::Summary, tasks::TaskSection, Analyses,
};
use crate::engine;
use crate::filter::{task_selected, Filter};
use crate::pattern::Pattern;
use crate::state::{Machine, MachineOptions};

/// A section of the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// Time span, events by type, CPUs, lost events, anomalies, tasks, IRQs.
    Summary,
    /// Busy / idle / hardirq / softirq time per CPU and load over time.
    Cpus,
    /// Per task (grouped by process): run time, instances, CPUs, wake-up latency.
    Tasks,
    /// IRQs, softirqs and IRQ -> task chains.
    Irqs,
    /// The timelines of the worst and the marked wake-ups, with a verdict each.
    Blame,
    /// function_graph calls: per function the calls, inclusive and self time, callees.
    Functions,
}

impl Section {
    /// Every section, in report order.
    pub const ALL: [Section; 6] = [
        Section::Summary,
        Section::Cpus,
        Section::Tasks,
        Section::Irqs,
        Section::Blame,
        Section::Functions,
    ];

    /// The name on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Section::Summary => "summary",
            Section::Cpus => "cpus",
            Section::Tasks => "tasks",
            Section::Irqs => "irqs",
            Section::Blame => "blame",
            Section::Functions => "functions",
        }
    }
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Section {
    type Err = String;
    fn from_str(s: &str) -> Result<Section, String> {
        Section::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Section::ALL.iter().map(|x| x.name()).collect();
                format!(
                    "unknown section {s:?}; expected one of {}",
                    names.join(", ")
                )
            })
    }
}

/// What to compute.
#[derive(Clone, Debug)]
pub struct Options {
    /// The sections; empty = all.
    pub sections: Vec<Section>,
    /// Focus of the IRQ -> task chains: the IRQ (number, name or glob).
    pub irq: Option<Pattern>,
    /// Focus of the chains, and filter of the task rows: a tid, a name or a glob.
    pub task: Option<Pattern>,
    /// The time window, CPUs and process folded (see [`Filter`]); the state machine sees
    /// every event whatever it says.
    pub filter: Filter,
    /// Rows the text shows per table (the JSON has every row).
    pub top: usize,
    /// Worst wake-ups blamed (marked ones are blamed too).
    pub blame: usize,
    /// Blame only wake-ups whose switch-in the trace recorded: one inferred from the
    /// woken task's next event is only bounded, and on a kernel that logs few switches
    /// out of idle its window holds that task's own run, shown as the idle it woke from.
    pub blame_recorded: bool,
    /// Thread group ids by tid, when the source knows them (groups threads by process).
    pub tgids: HashMap<i32, i32>,
    /// Task names the source saved besides its events (a .dat's saved cmdlines), for the
    /// tasks no event names ([`MachineOptions::names`]).
    pub names: HashMap<i32, jitterlab_trace::Comm>,
    /// A stretch longer than this with no event on a CPU is a gap, ns.
    pub gap_ns: u64,
    /// Load-over-time buckets per CPU, at most.
    pub load_buckets: usize,
    /// Keep the [`Timeline`] (for the HTML report), with these limits.
    pub timeline: Option<TimelineOptions>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sections: Vec::new(),
            irq: None,
            task: None,
            filter: Filter::default(),
            top: 20,
            blame: 5,
            blame_recorded: false,
            tgids: HashMap::new(),
            names: HashMap::new(),
            gap_ns: 100_000,
            load_buckets: 60,
            timeline: None,
        }
    }
}

impl Options {
    /// Whether `s` is to be computed.
    pub fn wants(&self, s: Section) -> bool {
        self.sections.is_empty() || self.sections.contains(&s)
    }

    /// Whether the task `tid` (of process `tgid`, named `comm`) gets a row: `--task` and
    /// the process filter.
    pub fn wants_task(&self, tid: i32, tgid: Option<i32>, comm: &str) -> bool {
        task_selected(self.task.as_ref(), &self.filter, tid, tgid, comm)
    }
}

/// Where the events came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Source {
    /// The reader's description of the format.
    pub format: String,
    /// CPUs, when the source says.
    pub cpus: Option<u32>,
}

/// The result of `jitterlab analyze`: the sections asked for. Every time is in ns.
#[derive(Clone, Debug, Serialize)]
pub struct AnalyzeReport {
    /// The source.
    pub source: Source,
    /// Rows the text shows per table.
    pub top: usize,
    /// The filter the sections after the summary were folded with (absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<Filter>,
    /// Summary (always of the whole trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    /// Per CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<CpuSection>,
    /// Per task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TaskSection>,
    /// IRQs, softirqs, chains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub irqs: Option<IrqSection>,
    /// Blamed wake-ups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blame: Option<BlameSection>,
    /// function_graph statistics (left out when all sections are asked for and the trace
    /// has no function_graph calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub functions: Option<FunctionSection>,
    /// What the user should know about the result, such as a `--compare` that had
    /// nothing to compare.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Every slice, wake-up and span, when [`Options::timeline`] asked for it (not in the
    /// JSON: the HTML report embeds it as columns).
    #[serde(skip)]
    pub timeline: Option<Timeline>,
}

/// Runs the state machine and the analyses over every event of `source`, in one pass.
pub fn analyze(
    source: &mut dyn EventSource,
    options: &Options,
) -> jitterlab_trace::Result<AnalyzeReport> {
    let mut machine = Machine::new(MachineOptions {
        gap_ns: options.gap_ns,
        tgids: options.tgids.clone(),
        names: options.names.clone(),
    });
    let mut analyses = Analyses::new(options);
    let (_, meta, stats) = engine::pass_source(
        source,
        Some(&mut machine),
        &mut engine::no_raw,
        &mut analyses,
    )?;
    Ok(analyses.report(&machine, &meta, &stats, options))
}

/// The analyses `options` asks for, whose [`Report::sink`] rides an [`engine::pass`]
/// beside other consumers; [`Report::finish`] builds the report once the pass is over.
pub struct Report {
    analyses: Analyses,
    options: Options,
}

impl Report {
    /// The analyses of `options` over a trace that records `tables` (the thread groups
    /// and task names the machine of [`engine::pass`] gets too).
    pub fn new(tables: &engine::Tables, options: Options) -> Report {
        let options = Options {
            tgids: tables.tgids.clone(),
            names: tables.names.clone(),
            ..options
        };
        Report {
            analyses: Analyses::new(&options),
            options,
        }
    }

    /// The pass's settings these analyses need.
    pub fn pass_options(&self) -> engine::PassOptions {
        engine::PassOptions {
            gap_ns: self.options.gap_ns,
            machine: true,
            // The analyses, the timeline and the Parquet rows read untyped events' names
            // only.
            untyped_fields: false,
        }
    }

    /// The analyses, as the pass's sink.
    pub fn sink(&mut self) -> &mut Analyses {
        &mut self.analyses
    }

    /// The report, from what the analyses folded and the pass.
    pub fn finish(self, pass: &engine::Pass) -> AnalyzeReport {
        self.analyses
            .report(&pass.machine, &pass.meta, &pass.stats, &self.options)
    }
}

/// `jitterlab analyze` as one call: the pass over an opened `trace` (a .dat is decoded in
/// a second thread, overlapped with the analyses), with the thread groups the trace
/// records; with `compare` (another trace and its name), its function_graph statistics
/// compared with this trace's.
pub fn analyze_trace(
    trace: &jitterlab_trace::Trace,
    options: Options,
    compare: Option<(&jitterlab_trace::Trace, &str)>,
) -> jitterlab_trace::Result<AnalyzeReport> {
    let tables = engine::Tables::of(trace);
    let mut analyses = Report::new(&tables, options);
    let pass = engine::pass(
        trace,
        &tables,
        &analyses.pass_options(),
        &mut engine::no_raw,
        analyses.sink(),
    )?;
    let options = compare.is_some().then(|| analyses.options.clone());
    let mut report = analyses.finish(&pass);
    if let (Some((other, name)), Some(options)) = (compare, options) {
        let tables = engine::Tables::of(other);
        let mut only = Report::new(
            &tables,
            Options {
                sections: vec![Section::Functions],
                timeline: None,
                ..options
            },
        );
        let pass = engine::pass(
            other,
            &tables,
            &only.pass_options(),
            &mut engine::no_raw,
            only.sink(),
        )?;
        let theirs = only.finish(&pass);
        let calls =
            |f: &Option<FunctionSection>| f.as_ref().is_some_and(|f| !f.functions.is_empty());
        if !calls(&report.functions) {
            report.warnings.push(
                "--compare: this trace has no function_graph calls; nothing was compared".into(),
            );
        } else if !calls(&theirs.functions) {
            report.warnings.push(format!(
                "--compare: {name} has no function_graph calls; nothing was compared"
            ));
        } else if let (Some(mine), Some(theirs)) = (&mut report.functions, &theirs.functions) {
            mine.comparison = Some(mine.compare(theirs, name));
        }
    }
    Ok(report)
}
