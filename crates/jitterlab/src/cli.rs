//! The command line.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// See where every thread, IRQ and kernel thread runs, and move them.
///
/// Exit status: 0 success; 1 partly failed (some threads or IRQs were refused)
/// or a runtime failure; 2 usage error or invalid request (nothing was changed).
#[derive(Parser, Debug)]
#[command(name = "jitterlab", version, max_term_width = 100)]
pub struct Cli {
    /// Read /proc and /sys below DIR instead of / (a tree copied from a machine).
    #[arg(long, global = true, value_name = "DIR", hide_short_help = true)]
    pub root: Option<PathBuf>,

    /// When to use colour: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    pub color: Color,

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
    Show(Show),
    /// Set the CPU affinity of every thread of a process, or start a command pinned.
    Pin(Pin),
    /// Set the affinity of IRQs, or the default affinity of new IRQs.
    Irq(Irq),
    /// Measure wake-up latency per CPU, as cyclictest does, with exact histograms.
    Latency(Latency),
    /// Run load generators on some CPUs, for a while or around a command (seed 004's stress).
    Load(crate::cmd::load::LoadArgs),
    /// Isolate CPUs: plan, then apply with a crash-safe journal (cpusets, workqueues, IRQs, tasks).
    Isolate(crate::cmd::isolate::IsolateArgs),
    /// Undo the partition journalled by isolate, also after a crash, and compare with before.
    Revert(crate::cmd::revert::RevertArgs),
    /// Sample the isolated CPUs and say, per CPU, what still disturbs them.
    Verify(crate::cmd::verify::VerifyArgs),
    /// Start a command inside the partition (on isolated CPUs), like `cset proc -e`.
    Run(crate::cmd::run::RunArgs),
    /// Print the kernel command line for a boot-time partition, and what each option does.
    Advise(crate::cmd::advise::AdviseArgs),
    /// Record kernel events through tracefs into a trace-cmd .dat file.
    Record(crate::cmd::record::Record),
    /// Print a trace's events one per line (any format), or its counts with --stats.
    Report(crate::cmd::report::Report),
    /// Analyze a trace: CPU load, per-task wake-up latency, IRQ -> task chains, IRQ times.
    Analyze(crate::cmd::analyze::Analyze),
    /// Convert a trace: .dat v6 <-> v7, or to Perfetto / chrome://tracing JSON.
    Convert(crate::cmd::convert::Convert),
}

/// `jitterlab latency`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  jitterlab latency --cpus 1 --interval 300us --loops 100000\n  jitterlab latency --duration 1m --json run.json --histogram-cyclictest hist.txt\n  jitterlab latency --interval 1ms --duration 10s --fail-above 100"
)]
pub struct Latency {
    /// CPUs to measure, one thread each (default: all online).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Scheduling policy of the measuring threads.
    #[arg(long, value_enum, default_value_t = PolicyArg::Fifo)]
    pub policy: PolicyArg,
    /// Their priority (1-99 for fifo and rr; default 95, 0 for the others).
    #[arg(long)]
    pub priority: Option<u32>,
    /// The period: 300us, 1ms (a bare number is microseconds).
    #[arg(long, default_value = "1ms", value_parser = jitterlab_latency::parse_duration_ns)]
    pub interval: u64,
    /// Stop after N wake-ups per CPU.
    #[arg(long, conflicts_with = "duration")]
    pub loops: Option<u64>,
    /// Stop after this long: 10s, 5m (default 10s unless --loops).
    #[arg(long, value_parser = jitterlab_latency::parse_duration_ns)]
    pub duration: Option<u64>,
    /// A wake-up later than this is a deadline miss (default: the interval).
    #[arg(long, value_parser = jitterlab_latency::parse_duration_ns)]
    pub deadline: Option<u64>,
    /// Do not hold /dev/cpu_dma_latency at 0 while running.
    #[arg(long)]
    pub no_dma_latency: bool,
    /// Allow an interval under 10 us.
    #[arg(long)]
    pub force: bool,
    /// Write the full result as JSON to FILE (- for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Write cyclictest's -h histogram text to FILE.
    #[arg(long, value_name = "FILE")]
    pub histogram_cyclictest: Option<std::path::PathBuf>,
    /// Draw each CPU's latency histogram (log scales) into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
    /// Rows (microseconds) of that histogram.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub histogram_rows: usize,
    /// A load to run during the measurement: cpu:N (threads looping usleep(1)),
    /// io:N (4 KiB O_SYNC writes), mem:N (memory streaming), cmd:'COMMAND'.
    /// Repeatable.
    #[arg(long = "load", value_name = "SPEC")]
    pub loads: Vec<jitterlab_latency::load::LoadSpec>,
    /// CPUs the loads run on (default: all online).
    #[arg(long, value_name = "LIST")]
    pub load_cpus: Option<String>,
    /// Exit with status 3 when any latency exceeds US microseconds.
    #[arg(long, value_name = "US")]
    pub fail_above: Option<u64>,
    /// Keep every sample above this in the spike ledger, with the interrupts and softirqs
    /// its CPU took around it (a bare number is microseconds).
    #[arg(long, value_name = "TIME", value_parser = jitterlab_latency::parse_duration_ns)]
    pub spike_threshold: Option<u64>,
    /// End the run at the first sample above US microseconds: write "jitterlab: latency N
    /// us > US on cpu C" to trace_marker and turn tracing off, so a trace recorded
    /// meanwhile ends at the spike.
    #[arg(long = "break", value_name = "US")]
    pub break_us: Option<u64>,
}

/// `jitterlab show [VIEW]`.
#[derive(Args, Debug)]
pub struct Show {
    /// A sub-view; without one, the per-CPU overview.
    #[command(subcommand)]
    pub view: Option<ShowView>,
    /// The filters and output format, shared by every view.
    #[command(flatten)]
    pub common: ShowCommon,
}

/// Options every `show` view takes.
#[derive(Args, Debug, Clone)]
pub struct ShowCommon {
    /// Print JSON (a versioned envelope: {"schema", "version", "data"}).
    #[arg(long, global = true)]
    pub json: bool,
    /// Only what concerns these CPUs (list form: 0-3,8).
    #[arg(long = "cpu", global = true, value_name = "LIST")]
    pub cpu: Option<String>,
    /// Only the entries whose name matches this glob (irq/*, iperf*, virtio*).
    #[arg(long, global = true, value_name = "GLOB")]
    pub name: Option<String>,
}

/// The `show` sub-views.
#[derive(Subcommand, Debug)]
pub enum ShowView {
    /// Topology, frequency, idle states and isolation of each CPU.
    Cpus,
    /// Every IRQ with its configured and effective affinity and per-CPU counts;
    /// the system interrupt counters (LOC, RES, ...) and softirqs.
    Irqs {
        /// Sample twice, SECONDS apart, and show per-CPU rates over the window.
        #[arg(long, value_name = "SECONDS")]
        interval: Option<f64>,
    },
    /// Processes (or threads) with policy, priority, allowed CPUs and last CPU.
    Tasks {
        /// One row per thread.
        #[arg(long)]
        threads: bool,
        /// All threads of this process; warns when their CPU masks differ.
        #[arg(short = 'p', long, value_name = "PID")]
        pid: Option<u32>,
    },
    /// The workqueue cpumasks.
    Workqueues,
    /// The cgroup layout and the cpuset tree.
    Cgroups,
}

/// `jitterlab pin`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  jitterlab pin 3 -p 12910          every thread of process 12910 to CPU 3\n  jitterlab pin 3 -p 12910 --tid 12911\n  jitterlab pin 1 --policy fifo --priority 80 -- ./rt-app --flag"
)]
pub struct Pin {
    /// The CPUs (list form: 0-3,8).
    #[arg(value_name = "CPUS")]
    pub cpus: String,
    /// The process whose threads to move (all of them).
    #[arg(short = 'p', long, value_name = "PID", conflicts_with = "command")]
    pub pid: Option<u32>,
    /// Only this thread of the process.
    #[arg(long, value_name = "TID", requires = "pid")]
    pub tid: Option<u32>,
    /// Scheduling policy for a started command.
    #[arg(long, value_enum, requires = "command")]
    pub policy: Option<PolicyArg>,
    /// Priority for the policy: 1-99 for fifo and rr, 0 for the others.
    #[arg(long, requires = "command")]
    pub priority: Option<u32>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// The command to start pinned.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Policies a started command can get.
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

/// `jitterlab irq`.
#[derive(Args, Debug)]
pub struct Irq {
    /// The action.
    #[command(subcommand)]
    pub action: IrqAction,
}

/// What to do with IRQs.
#[derive(Subcommand, Debug)]
pub enum IrqAction {
    /// Write smp_affinity_list of the IRQs given, read back the effective affinity.
    Set {
        /// An IRQ number, or a glob over IRQ names (virtio3-*, eth0).
        #[arg(value_name = "IRQ|GLOB")]
        irq: String,
        /// The CPUs (list form).
        #[arg(value_name = "CPUS")]
        cpus: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write /proc/irq/default_smp_affinity, the affinity of IRQs set up from now on.
    Default {
        /// The CPUs (list form).
        #[arg(value_name = "CPUS")]
        cpus: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}
