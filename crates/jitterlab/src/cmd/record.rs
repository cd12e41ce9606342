//! `jitterlab record`: tracefs events into a trace-cmd .dat file.

use std::fs::File;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use jitterlab_host::tracefs::{RecordSummary, RecordedCpu, Recorder, Session, SessionConfig};
use jitterlab_host::{Error, Root};
use jitterlab_trace::dat::{DatMeta, DatWriter, Spool};

use crate::cli::Color;
use crate::output::{cancel_on_signals, emit, format};
use crate::EXIT_OK;

/// `jitterlab record`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  jitterlab record --duration 10s -o idle.dat\n  jitterlab record --preset all -- stress-ng --switch 2 --timeout 5s\n  jitterlab record --flight-recorder --buffer-kb 8192 -o spike.dat &\n  jitterlab latency --cpus 1 --break 200"
)]
pub struct Record {
    /// An event to record, `SYSTEM:EVENT`, `SYSTEM:*` or `SYSTEM` (repeatable).
    #[arg(short = 'e', long = "event", value_name = "SYSTEM:EVENT")]
    pub events: Vec<String>,
    /// A set of events (default `sched` and `irq` when no -e is given).
    #[arg(long, value_enum)]
    pub preset: Vec<Preset>,
    /// Trace only these CPUs.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Ring-buffer size per CPU, KiB (default: the kernel's).
    #[arg(long, value_name = "N")]
    pub buffer_kb: Option<u64>,
    /// Stop after this long (default: when the command ends, or Ctrl-C).
    #[arg(long, value_parser = jitterlab_latency::parse_duration_ns)]
    pub duration: Option<u64>,
    /// The output file.
    #[arg(short = 'o', long, default_value = "trace.dat")]
    pub output: PathBuf,
    /// Keep the newest events in the ring buffer and save them when tracing is turned
    /// off (by `jitterlab latency --break`, by hand, at the end of the duration or of the
    /// command, or on Ctrl-C), instead of streaming everything.
    #[arg(long)]
    pub flight_recorder: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// The command to trace while it runs.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// A named set of events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Preset {
    /// Scheduler: switches, wake-ups, migrations, fork/exec/exit.
    Sched,
    /// Interrupts: hard IRQ and softirq entry/exit/raise, hrtimer expiry, IPIs.
    Irq,
    /// sched, irq and workqueue execution.
    All,
}

const SCHED: &[&str] = &[
    "sched:sched_switch",
    "sched:sched_waking",
    "sched:sched_wakeup",
    "sched:sched_wakeup_new",
    "sched:sched_migrate_task",
    "sched:sched_process_fork",
    "sched:sched_process_exec",
    "sched:sched_process_exit",
];
const IRQ: &[&str] = &[
    "irq:irq_handler_entry",
    "irq:irq_handler_exit",
    "irq:softirq_raise",
    "irq:softirq_entry",
    "irq:softirq_exit",
    "timer:hrtimer_expire_entry",
    "timer:hrtimer_expire_exit",
    "ipi:ipi_send_cpu",
];
const WORKQUEUE: &[&str] = &[
    "workqueue:workqueue_execute_start",
    "workqueue:workqueue_execute_end",
];

/// The events asked for, presets expanded, without repeats.
fn events(args: &Record) -> Vec<String> {
    let mut presets = args.preset.clone();
    if presets.is_empty() && args.events.is_empty() {
        presets = vec![Preset::Sched, Preset::Irq];
    }
    let mut out: Vec<String> = Vec::new();
    for p in presets {
        let list: Vec<&str> = match p {
            Preset::Sched => SCHED.to_vec(),
            Preset::Irq => IRQ.to_vec(),
            Preset::All => [SCHED, IRQ, WORKQUEUE].concat(),
        };
        out.extend(list.into_iter().map(String::from));
    }
    out.extend(args.events.iter().cloned());
    let mut seen = std::collections::HashSet::new();
    out.retain(|e| seen.insert(e.clone()));
    out
}

pub fn run(root: &Root, args: Record, color: Color) -> anyhow::Result<u8> {
    if !root.is_live() {
        return Err(
            Error::Invalid("record traces this machine; it cannot take --root".into()).into(),
        );
    }
    let cpus = match &args.cpus {
        Some(list) => Some(super::online_cpus(root, list)?),
        None => None,
    };
    let events = events(&args);
    let config = SessionConfig {
        events: events.clone(),
        cpus,
        buffer_kb: args.buffer_kb,
        overwrite: args.flight_recorder,
        saved_cmdlines: Some(8192),
    };
    // Block the signals before any thread starts, so Ctrl-C ends the recording cleanly.
    let cancel = cancel_on_signals();
    let session = Session::start(root, &config)?;
    let headers = session.headers()?;
    let spool_dir = tempfile::Builder::new()
        .prefix(".jitterlab-record-")
        .tempdir_in(
            args.output
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new(".")),
        )?;
    let recorder = Recorder::start(
        &session,
        spool_dir.path(),
        headers.page_size,
        !args.flight_recorder,
    )?;
    let start = Instant::now();
    let deadline = args.duration.map(|d| start + Duration::from_nanos(d));
    let mut child = match args.command.split_first() {
        Some((prog, rest)) => Some(
            jitterlab_host::pin::child_command(prog)
                .args(rest)
                .spawn()
                .map_err(|e| Error::Invalid(format!("cannot run {prog:?}: {e}")))?,
        ),
        None => None,
    };
    let ended = super::wait_for_end(&cancel, deadline, child.as_mut(), || {
        Ok((!session.tracing()?).then_some("tracing off"))
    })?;
    let stopped_by = ended.by;
    let mut command_exit = ended.exit.map(|s| s.to_string());
    session.set_tracing(false)?;
    let wall_ns = start.elapsed().as_nanos() as u64;
    if let Some(mut c) = child {
        if command_exit.is_none() {
            // Ended by the duration or a signal: the command's own Ctrl-C may have
            // ended it already; else SIGTERM, then SIGKILL after 1 s.
            command_exit = Some(jitterlab_host::pin::end_child(&mut c, false)?.to_string());
        }
    }
    let spools = recorder.finish()?;
    let mut cpus_out = Vec::new();
    for spool in &spools {
        let s = session.buffer_stats(spool.cpu)?;
        cpus_out.push(RecordedCpu {
            cpu: spool.cpu,
            pages: spool.pages,
            overrun: s.overrun,
            dropped: s.dropped_events,
            commit_overrun: s.commit_overrun,
        });
    }
    let (cmdlines, _tgids) = session.task_names()?;
    let ncpus = session.online().last().map_or(1, |c| c + 1);
    session.close()?;

    let meta = DatMeta {
        big_endian: cfg!(target_endian = "big"),
        long_size: std::mem::size_of::<libc::c_long>() as u8,
        page_size: headers.page_size as u32,
        cpus: ncpus,
        header_page: headers.header_page,
        header_event: headers.header_event,
        ftrace_formats: headers.ftrace_formats.into_iter().map(|(_, f)| f).collect(),
        event_formats: headers
            .event_formats
            .into_iter()
            .map(|(s, list)| (s, list.into_iter().map(|(_, f)| f).collect()))
            .collect(),
        kallsyms: headers.kallsyms,
        printk: headers.printk_formats,
        cmdlines,
        trace_clock: Some(format!("[{}]", headers.clock)),
        uname: Some(headers.uname),
        version: Some(format!("jitterlab {}", env!("CARGO_PKG_VERSION"))),
        cpustats: Vec::new(),
    };
    // The recorder's spool files become the file's CPU data as they are: no copy.
    let mut writer = DatWriter::new(meta, Spool::Memory)?;
    for spool in &spools {
        writer.adopt_pages(0, spool.cpu, spool.path.clone())?;
    }
    let out = File::create(&args.output)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.output.display()))?;
    let bytes = writer.finish(out)?;
    let summary = RecordSummary {
        output: args.output.display().to_string(),
        format: "trace-cmd .dat v6".into(),
        bytes,
        events,
        wall_ns,
        stopped_by: stopped_by.into(),
        command_exit,
        flight_recorder: args.flight_recorder,
        cpus: cpus_out,
    };
    emit(&summary, format(args.json, color))?;
    Ok(EXIT_OK)
}
