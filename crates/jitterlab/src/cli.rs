//! The command line: the global options, the commands, and the argument types several
//! commands share. Each command's own arguments (`XxxArgs`) live in its file under `cmd/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use jitterlab_analyze::Filter;
use jitterlab_cpuset::CpuSet;

use crate::cmd;
use crate::exit::Error;

/// See where every thread, IRQ and kernel thread runs, move them, partition cores,
/// measure wake-up latency, record and analyze kernel traces.
///
/// Exit status (each command's help says its own): 0 success; 1 partly failed (a thread
/// or IRQ was refused, an IRQ's mask altered or unknown, an isolate step or an undo
/// failed, an experiment interrupted or not restored) or a runtime failure; 2 usage
/// error or invalid request (nothing was changed); 3 a limit was hit (latency
/// --fail-above or --break, verify finds a CPU not isolated, audit an RT CPU unfit);
/// with -- CMD (pin, run, load), the command's own status.
#[derive(Parser, Debug)]
#[command(
    name = "jitterlab",
    version = crate::VERSION,
    max_term_width = 100,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// Read /proc and /sys below DIR instead of / (a tree copied from a machine).
    #[arg(long, global = true, value_name = "DIR", hide_short_help = true)]
    pub root: Option<PathBuf>,

    /// When to use colour: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    pub color: Color,

    /// Draw no progress line on stderr (it is drawn only on a terminal anyway; warnings
    /// and errors are still printed).
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Colour choice.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Color {
    /// On a terminal unless NO_COLOR is set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Show where everything runs: per CPU, its IRQs, threads and kernel threads.
    Show(cmd::show::ShowArgs),
    /// Set the CPU affinity of every thread of a process, or start a command pinned.
    Pin(cmd::pin::PinArgs),
    /// Set the affinity of IRQs, or the default affinity of new IRQs.
    Irq(cmd::irq::IrqArgs),
    /// Measure wake-up latency per CPU, as cyclictest does, with exact histograms.
    Latency(cmd::latency::LatencyArgs),
    /// Run load generators on some CPUs, for a while or around a command (as stress under cyclictest).
    Load(cmd::load::LoadArgs),
    /// Isolate CPUs: plan, then apply with a crash-safe journal (cpusets, workqueues, IRQs, tasks).
    Isolate(cmd::isolate::IsolateArgs),
    /// Undo the partition journalled by isolate, also after a crash, and compare with before.
    Revert(cmd::revert::RevertArgs),
    /// Sample the isolated CPUs and say, per CPU, what still disturbs them.
    Verify(cmd::verify::VerifyArgs),
    /// Start a command inside the partition (on isolated CPUs), like `cset proc -e`.
    Run(cmd::run::RunArgs),
    /// Print the kernel command line for a boot-time partition, and what each option does.
    Advise(cmd::advise::AdviseArgs),
    /// Record kernel events through tracefs into a trace-cmd .dat file.
    Record(cmd::record::RecordArgs),
    /// Print a trace's events one per line (any format), or its counts with --stats.
    Report(cmd::report::ReportArgs),
    /// Analyze a trace: CPU load, per-task wake-up latency, IRQ -> task chains, IRQ times.
    Analyze(cmd::analyze::AnalyzeArgs),
    /// Convert a trace: .dat v6 <-> v7, or to Perfetto / chrome://tracing JSON.
    Convert(cmd::convert::ConvertArgs),
    /// Write a trace or a saved result as one offline HTML report: timeline, tasks, tables, plots.
    View(cmd::view::ViewArgs),
    /// Run A/B experiments under affinity, partitioning and load; say which differences are real.
    Experiment(cmd::experiment::ExperimentArgs),
    /// Is this machine fit for real-time work on some CPUs, and what exactly to change.
    Audit(cmd::audit::AuditArgs),
    /// Export traces and latency/experiment results as Parquet tables for DuckDB and Spark.
    Export(cmd::export::ExportArgs),
    /// Print a shell's completion script (bash, zsh, fish, elvish, powershell).
    Completions(cmd::completions::CompletionsArgs),
    /// Print or write the man pages, one per command (jitterlab-latency.1, ...).
    Man(cmd::man::ManArgs),
    /// Print this help, or a command's (`jitterlab help show irqs`).
    Help(HelpArgs),
}

/// `jitterlab help [COMMAND...]`.
#[derive(Args, Debug)]
pub struct HelpArgs {
    /// The command (and sub-command) whose help to print.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Scheduling policies a command line can ask for.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PolicyArg {
    /// SCHED_FIFO.
    Fifo,
    /// SCHED_RR.
    Rr,
    /// SCHED_OTHER.
    Other,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
}

impl PolicyArg {
    /// The host's policy.
    pub fn policy(self) -> jitterlab_host::tasks::Policy {
        use jitterlab_host::tasks::Policy;
        match self {
            PolicyArg::Fifo => Policy::Fifo,
            PolicyArg::Rr => Policy::Rr,
            PolicyArg::Other => Policy::Other,
            PolicyArg::Batch => Policy::Batch,
            PolicyArg::Idle => Policy::Idle,
        }
    }
}

/// A CPU list argument (`0-3,8`), parsed; the error names the option.
/// An empty list is an error too: it selects nothing.
pub fn cpu_list(option: &str, arg: &str) -> Result<CpuSet, Error> {
    if arg.trim().is_empty() {
        return Err(Error::usage(format!(
            "{option} {arg:?}: expected a CPU list such as 0-3,8, not an empty one"
        )));
    }
    CpuSet::parse_list(arg).map_err(|e| Error::usage(format!("{option}: {e}")))
}

/// `--json[=FILE]`, with one meaning on every command: `--json` prints the result as
/// JSON instead of text, a versioned envelope `{"schema", "version", "data"}`;
/// `--json=FILE` writes that JSON to FILE and prints the text as well (`--json=-` is
/// `--json`). The `=` is required: `analyze --json trace.dat` reads trace.dat.
#[derive(Args, Debug, Default, Clone)]
pub struct JsonOut {
    /// Print JSON instead of text (a versioned envelope: {"schema", "version", "data"});
    /// --json=FILE writes it to FILE and prints the text too.
    #[arg(
        long = "json",
        value_name = "FILE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "-",
        global = true
    )]
    pub path: Option<PathBuf>,
}

impl JsonOut {
    /// Whether the JSON replaces the text on stdout (`--json`, `--json=-`).
    pub fn on_stdout(&self) -> bool {
        self.path.as_deref().is_some_and(|p| p.as_os_str() == "-")
    }

    /// The file the JSON is written to (`--json=FILE`).
    pub fn file(&self) -> Option<&PathBuf> {
        self.path.as_ref().filter(|p| p.as_os_str() != "-")
    }
}

/// How a trace is read, the same for every command that reads one (`report`, `analyze`,
/// `convert`, `view`, `export`): which buffer of a multi-buffer .dat, and whether
/// undecodable records stop the read.
#[derive(Args, Debug, Default, Clone)]
pub struct TraceInput {
    /// The buffer of a multi-buffer .dat (`trace-cmd record -B`, instances) to read: its
    /// instance name, or `top`. Default: the top buffer when it holds events, else the
    /// buffer with the most, and the buffers not read are named on stderr; `report`
    /// prints every buffer, merged in time order as `trace-cmd report` does, and a .dat
    /// copy (`convert` to .dat) keeps every buffer.
    #[arg(long, value_name = "NAME")]
    pub buffer: Option<String>,
    /// Skip undecodable records and lines, counting them, instead of stopping.
    #[arg(long)]
    pub lenient: bool,
}

impl TraceInput {
    /// Opens the trace at `path` as these options say.
    pub fn open(
        &self,
        path: &std::path::Path,
    ) -> Result<jitterlab_trace::Trace, jitterlab_trace::Error> {
        jitterlab_trace::Trace::open_buffer(path, self.lenient, self.buffer.as_deref())
    }
}

/// The CPUs, time window and process of a trace to look at (`report`, `analyze`,
/// `convert`): one [`Filter`], with one meaning of `--pid` for all three.
#[derive(Args, Debug, Default)]
pub struct Window {
    /// Only the events, time, IRQs and wake-ups of these CPUs (a list: 0,2-3).
    #[arg(long, value_name = "LIST")]
    pub cpu: Option<String>,
    /// Only from this time on, in seconds as printed (`976.3483`): intervals are cut to the
    /// window; the state is still followed from the start of the trace.
    #[arg(long, value_name = "SECONDS", value_parser = jitterlab_analyze::parse_seconds_ns)]
    pub from: Option<u64>,
    /// Only up to this time, in seconds as printed.
    #[arg(long, value_name = "SECONDS", value_parser = jitterlab_analyze::parse_seconds_ns)]
    pub to: Option<u64>,
}

impl Window {
    /// The filter, checked (exit 2 on a bad CPU list or an empty window), for process
    /// `pid`: all its threads when the trace has thread group ids, and the task with
    /// that tid.
    pub fn filter(&self, pid: Option<i32>) -> Result<Filter, Error> {
        let cpus = self
            .cpu
            .as_deref()
            .map(|l| cpu_list("--cpu", l))
            .transpose()?;
        if let (Some(from), Some(to)) = (self.from, self.to) {
            if to < from {
                return Err(Error::usage("--to: expected a time at or after --from"));
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
