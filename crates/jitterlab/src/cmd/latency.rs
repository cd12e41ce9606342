//! `jitterlab latency`: wake-up latency, as cyclictest measures it.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::progress::latency_progress;
use clap::Args;
use jitterlab_host::child::cancel_on_signals;
use jitterlab_host::sched::{default_priority, PROBE_PRIORITY};
use jitterlab_host::Root;
use jitterlab_latency::load::LoadSpec;
use jitterlab_latency::plot::LatencyPlot;
use jitterlab_latency::{Config, CyclictestHistogram, Request, Stop};
use jitterlab_render::{Cyclictest, ExportManager, Html, Svg, Target};

use crate::cli::{cpu_list, Color, JsonOut, PolicyArg};
use crate::exit::Result;
use crate::files::Files;
use crate::output::add_result;

/// Ten seconds, when neither --loops nor --duration is given.
const DEFAULT_DURATION_NS: u64 = 10_000_000_000;

/// `jitterlab latency`.
#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: 0, or 3 when a latency exceeded --fail-above or --break ended the run; 2 on a bad request (nothing started).\n\nExamples:\n  jitterlab latency --cpus 1 --interval 300us --loops 100000\n  jitterlab latency --duration 1m --json=run.json --histogram-cyclictest hist.txt\n  jitterlab latency --interval 1ms --duration 10s --fail-above 100us"
)]
pub struct LatencyArgs {
    /// CPUs to measure, one thread each (default: all online).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Scheduling policy of the measuring threads.
    #[arg(long, value_enum, default_value_t = PolicyArg::Fifo)]
    pub policy: PolicyArg,
    /// Their priority (1-99 for fifo and rr; default 95, 0 for the others).
    #[arg(long)]
    pub priority: Option<u32>,
    /// The period: 300us, 1ms.
    #[arg(long, default_value = "1ms", value_parser = jitterlab_units::parse_duration_ns)]
    pub interval: u64,
    /// Stop after N wake-ups per CPU.
    #[arg(long, conflicts_with = "duration")]
    pub loops: Option<u64>,
    /// Stop after this long: 10s, 5m (default 10s unless --loops).
    #[arg(long, value_parser = jitterlab_units::parse_duration_ns)]
    pub duration: Option<u64>,
    /// A wake-up later than this is a deadline miss (default: the interval).
    #[arg(long, value_parser = jitterlab_units::parse_duration_ns)]
    pub deadline: Option<u64>,
    /// Do not hold /dev/cpu_dma_latency at 0 while running.
    #[arg(long)]
    pub no_dma_latency: bool,
    /// Allow an interval under 10 us.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub json: JsonOut,
    /// Write cyclictest's -h histogram text to FILE.
    #[arg(long, value_name = "FILE")]
    pub histogram_cyclictest: Option<PathBuf>,
    /// Write the result as one offline HTML report (histograms, percentiles, latency over
    /// time, spikes) to FILE.
    #[arg(long, value_name = "FILE.html")]
    pub html: Option<PathBuf>,
    /// Draw each CPU's latency histogram (log scales) into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Rows (microseconds) of that histogram.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub histogram_rows: usize,
    /// A load to run during the measurement: cpu:N (threads looping usleep(1)),
    /// io:N (4 KiB O_SYNC writes), mem:N (memory streaming), cmd:'COMMAND'.
    /// Repeatable.
    #[arg(long = "load", value_name = "SPEC")]
    pub loads: Vec<LoadSpec>,
    /// CPUs the loads run on (default: all online).
    #[arg(long, value_name = "LIST")]
    pub load_cpus: Option<String>,
    /// Exit with status 3 when any latency exceeds this (100us, 1ms).
    #[arg(long, value_name = "TIME", value_parser = jitterlab_units::parse_duration_ns)]
    pub fail_above: Option<u64>,
    /// Keep every sample above this in the spike ledger, with the interrupts and softirqs
    /// its CPU took around it (50us, 1ms).
    #[arg(long, value_name = "TIME", value_parser = jitterlab_units::parse_duration_ns)]
    pub spike_threshold: Option<u64>,
    /// End the run at the first sample above TIME (200us): write "jitterlab: latency N
    /// us > LIMIT us on cpu C" to trace_marker and turn tracing off, so a trace recorded
    /// meanwhile ends at the spike.
    #[arg(long = "break", value_name = "TIME", value_parser = jitterlab_units::parse_duration_ns)]
    pub break_ns: Option<u64>,
}

impl LatencyArgs {
    /// The files it reads and writes, for [`crate::files::guard`].
    pub fn files(&self) -> Files<'_> {
        let mut f = Files::default();
        f.output_opt(self.histogram_cyclictest.as_ref())
            .output_opt(self.html.as_ref())
            .output_opt(self.plot.as_ref());
        f
    }
}

pub fn run(root: &Root, args: LatencyArgs, color: Color) -> Result {
    let cpus = match &args.cpus {
        Some(list) => cpu_list("--cpus", list)?,
        None if root.is_live() => jitterlab_host::cpus::online(root)?,
        None => Default::default(),
    };
    let policy = args.policy.policy();
    let request = Request {
        config: Config {
            cpus,
            policy,
            priority: args
                .priority
                .unwrap_or_else(|| default_priority(policy, PROBE_PRIORITY)),
            interval_ns: args.interval,
            stop: match (args.loops, args.duration) {
                (Some(n), _) => Stop::Loops(n),
                (None, Some(d)) => Stop::DurationNs(d),
                (None, None) => Stop::DurationNs(DEFAULT_DURATION_NS),
            },
            deadline_ns: args.deadline.unwrap_or(args.interval),
            dma_latency: !args.no_dma_latency,
            force: args.force,
            spike_threshold_ns: args.spike_threshold,
            break_ns: args.break_ns,
        },
        loads: args.loads,
        load_cpus: args
            .load_cpus
            .as_deref()
            .map(|l| cpu_list("--load-cpus", l))
            .transpose()?,
        fail_above_ns: args.fail_above,
    };
    let cancel = cancel_on_signals();
    let done = Arc::new(AtomicBool::new(false));
    let mut display = None;
    let measured = jitterlab_latency::measure(root, &request, &cancel, |live| {
        display = io::stderr()
            .is_terminal()
            .then(|| latency_progress(live.to_vec(), request.config.stop, Arc::clone(&done)));
    });
    done.store(true, Ordering::Relaxed);
    if let Some(d) = display {
        let _ = d.join();
    }
    let measured = measured?;
    let report = &measured.report;
    let hist = args
        .histogram_cyclictest
        .as_ref()
        .map(|_| CyclictestHistogram::build(&measured.run, args.histogram_rows));
    let plot = args.plot.as_ref().map(|_| LatencyPlot::build(report));
    let mut outputs = ExportManager::new();
    if let (Some(path), Some(hist)) = (&args.histogram_cyclictest, &hist) {
        outputs.add(Cyclictest, hist, Target::file(path));
    }
    if let (Some(path), Some(plot)) = (&args.plot, &plot) {
        outputs.add(Svg, plot, Target::file(path));
    }
    if let Some(path) = &args.html {
        outputs.add(Html::titled("latency"), report, Target::file(path));
    }
    add_result(&mut outputs, report, &args.json, color);
    outputs.write_all()?;
    Ok(report.status().into())
}
