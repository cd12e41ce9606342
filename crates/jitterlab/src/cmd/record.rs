//! `jitterlab record`: tracefs events into a trace-cmd .dat file.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use jitterlab_host::child::cancel_on_signals;
use jitterlab_host::tracefs::{events_of, record, Preset, RecordRequest};
use jitterlab_host::Root;

use crate::cli::{cpu_list, Color, JsonOut};
use crate::exit::{Exit, Result};
use crate::files::Files;
use crate::output::emit;
use crate::progress::Progress;

/// `jitterlab record`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  jitterlab record --duration 10s -o idle.dat\n  jitterlab record --preset all -- stress-ng --switch 2 --timeout 5s\n  jitterlab record --flight-recorder --buffer-kb 8192 -o spike.dat &\n  jitterlab latency --cpus 1 --break 200us"
)]
pub struct RecordArgs {
    /// An event to record, `SYSTEM:EVENT`, `SYSTEM:*` or `SYSTEM` (repeatable).
    #[arg(short = 'e', long = "event", value_name = "SYSTEM:EVENT")]
    pub events: Vec<String>,
    /// A set of events: sched (switches, wake-ups, migrations, fork/exec/exit), irq (hard
    /// IRQ and softirq entry/exit/raise, hrtimer expiry, IPIs) or all (both and workqueue
    /// execution); default sched and irq when no -e is given.
    #[arg(long, value_name = "NAME", value_parser = preset())]
    pub preset: Vec<Preset>,
    /// Trace only these CPUs.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Ring-buffer size per CPU, KiB (default: the kernel's).
    #[arg(long, value_name = "N")]
    pub buffer_kb: Option<u64>,
    /// Stop after this long (default: when the command ends, or Ctrl-C).
    #[arg(long, value_parser = jitterlab_units::parse_duration_ns)]
    pub duration: Option<u64>,
    /// The output file.
    #[arg(short = 'o', long, default_value = "trace.dat")]
    pub output: PathBuf,
    /// Keep the newest events in the ring buffer and save them when tracing is turned
    /// off (by `jitterlab latency --break`, by hand, at the end of the duration or of the
    /// command, or on Ctrl-C), instead of streaming everything.
    #[arg(long)]
    pub flight_recorder: bool,
    #[command(flatten)]
    pub json: JsonOut,
    /// The command to trace while it runs.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

impl RecordArgs {
    /// The files it reads and writes, for [`crate::files::guard`].
    pub fn files(&self) -> Files<'_> {
        let mut f = Files::default();
        f.output(&self.output);
        f
    }
}

pub fn run(root: &Root, args: RecordArgs, color: Color) -> Result {
    let request = RecordRequest {
        events: events_of(&args.preset, &args.events),
        cpus: args
            .cpus
            .as_deref()
            .map(|l| cpu_list("--cpus", l))
            .transpose()?,
        buffer_kb: args.buffer_kb,
        duration_ns: args.duration,
        output: args.output,
        flight_recorder: args.flight_recorder,
        command: args.command,
    };
    // Block the signals before any thread starts, so Ctrl-C ends the recording cleanly.
    let cancel = cancel_on_signals();
    // With a duration and no command (whose output would mix with the line): the time
    // recorded of the duration. Started after the signals are blocked.
    let progress = match request.duration_ns {
        Some(ns) if request.command.is_empty() => Progress::time(
            format!("recording {}", request.output.display()),
            std::time::Duration::from_nanos(ns),
        ),
        _ => Progress::hidden(),
    };
    let summary = record(root, &request, &cancel)?;
    progress.finish();
    emit(&summary, &args.json, color)?;
    Ok(Exit::Ok)
}

/// `--preset`, with its names in `--help` and in the error.
fn preset() -> impl clap::builder::TypedValueParser<Value = Preset> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Preset::NAMES).try_map(|s| s.parse::<Preset>())
}
