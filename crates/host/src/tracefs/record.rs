//! `jitterlab record`: a session, its recorder and, optionally, a command, from the
//! start of tracing to a trace-cmd .dat file on disk with the task names and thread
//! groups the kernel kept.
//!
//! The recorder's spool files become the file's CPU data as they are (no copy); they
//! wait in a temporary directory next to the output.

use std::ffi::OsString;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use jitterlab_cpuset::CpuSet;
use jitterlab_trace::dat::{DatMeta, DatWriter, Spool as DatSpool};
use jitterlab_trace::output::OutputFile;

use super::{RecordSummary, RecordedCpu, Recorder, Session, SessionConfig};
use crate::child::{self, EndedBy};
use crate::error::{Error, Result};
use crate::root::Root;

/// A named set of events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// Scheduler: switches, wake-ups, migrations, fork/exec/exit.
    Sched,
    /// Interrupts: hard IRQ and softirq entry/exit/raise, hrtimer expiry, IPIs.
    Irq,
    /// sched, irq and workqueue execution.
    All,
}

impl Preset {
    /// The names `--preset` takes.
    pub const NAMES: [&'static str; 3] = ["sched", "irq", "all"];

    /// Its events, `SYSTEM:EVENT`.
    pub fn events(self) -> Vec<&'static str> {
        match self {
            Preset::Sched => SCHED.to_vec(),
            Preset::Irq => IRQ.to_vec(),
            Preset::All => [SCHED, IRQ, WORKQUEUE].concat(),
        }
    }
}

impl FromStr for Preset {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Preset, String> {
        match s {
            "sched" => Ok(Preset::Sched),
            "irq" => Ok(Preset::Irq),
            "all" => Ok(Preset::All),
            _ => Err(format!("expected one of sched, irq, all; found {s:?}")),
        }
    }
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

/// The events of `presets` and then `extra`, without repeats; `sched` and `irq` when
/// both are empty.
pub fn events_of(presets: &[Preset], extra: &[String]) -> Vec<String> {
    let defaults = [Preset::Sched, Preset::Irq];
    let presets = if presets.is_empty() && extra.is_empty() {
        &defaults[..]
    } else {
        presets
    };
    let mut out: Vec<String> = presets
        .iter()
        .flat_map(|p| p.events())
        .map(String::from)
        .collect();
    out.extend(extra.iter().cloned());
    let mut seen = std::collections::HashSet::new();
    out.retain(|e| seen.insert(e.clone()));
    out
}

/// What to record.
#[derive(Clone, Debug)]
pub struct RecordRequest {
    /// The events, `SYSTEM:EVENT`, `SYSTEM:*` or `SYSTEM` ([`events_of`]).
    pub events: Vec<String>,
    /// Only these CPUs (default: all online).
    pub cpus: Option<CpuSet>,
    /// Ring-buffer size per CPU, KiB (default: the kernel's).
    pub buffer_kb: Option<u64>,
    /// Stop after this long, ns.
    pub duration_ns: Option<u64>,
    /// The .dat file to write.
    pub output: PathBuf,
    /// Keep the newest events in the ring buffer and save them when tracing is turned
    /// off, instead of streaming everything.
    pub flight_recorder: bool,
    /// A command to trace while it runs (empty: none).
    pub command: Vec<OsString>,
}

/// Records until `cancel` is set (Ctrl-C: block the signals with
/// [`child::cancel_on_signals`] before calling), the duration passes, the command ends,
/// or tracing is turned off; then writes the .dat file.
pub fn record(root: &Root, req: &RecordRequest, cancel: &AtomicBool) -> Result<RecordSummary> {
    if !root.is_live() {
        return Err(Error::Invalid(
            "record traces this machine; it cannot take --root".into(),
        ));
    }
    if let Some(cpus) = &req.cpus {
        crate::cpus::check_online(root, cpus)?;
    }
    let config = SessionConfig {
        events: req.events.clone(),
        cpus: req.cpus.clone(),
        buffer_kb: req.buffer_kb,
        overwrite: req.flight_recorder,
        saved_cmdlines: Some(8192),
        // CLOCK_MONOTONIC's fast reading, so that the clock pair turns every trace time
        // into wall-clock time; the default `local` (sched_clock) counts from another
        // origin (tens of ms apart on the 2-CPU VM) at its own rate.
        clock: Some("mono".into()),
    };
    // Read before tracing starts: no event is older than the recording's start.
    let clocks = clock_pair();
    let session = Session::start(root, &config)?;
    let headers = session.headers()?;
    // The .dat is written as OutputFile writes (renamed over a regular file when
    // complete, copied into a FIFO or device); the spools wait beside its temporary file.
    let mut out = OutputFile::create(&req.output).map_err(|e| Error::io(&req.output, e))?;
    let dir = out.scratch_dir();
    let spool_dir = tempfile::Builder::new()
        .prefix(".jitterlab-record-")
        .tempdir_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    let recorder = Recorder::start(
        &session,
        spool_dir.path(),
        headers.page_size,
        !req.flight_recorder,
    )?;
    let start = Instant::now();
    let deadline = req.duration_ns.map(|d| start + Duration::from_nanos(d));
    let mut command = match req.command.split_first() {
        Some((prog, rest)) => Some(child::child_command(prog).args(rest).spawn().map_err(|e| {
            Error::Invalid(format!("cannot run {:?}: {e}", prog.to_string_lossy()))
        })?),
        None => None,
    };
    let ended = child::wait_for_end(cancel, deadline, command.as_mut(), || {
        Ok((!session.tracing()?).then_some(EndedBy::TracingOff))
    })?;
    let mut command_exit = ended.exit.map(|s| s.to_string());
    session.set_tracing(false)?;
    let wall_ns = start.elapsed().as_nanos() as u64;
    if let Some(mut c) = command {
        if command_exit.is_none() {
            // Ended by the duration or a signal: the command's own Ctrl-C may have
            // ended it already; else SIGTERM, then SIGKILL after 1 s.
            let status = child::end_child(&mut c, false).map_err(|e| Error::Sys {
                what: "ending the traced command".into(),
                cause: e,
            })?;
            command_exit = Some(status.to_string());
        }
    }
    let spools = recorder.finish()?;
    let mut cpus = Vec::new();
    for spool in &spools {
        let s = session.buffer_stats(spool.cpu)?;
        cpus.push(RecordedCpu {
            cpu: spool.cpu,
            pages: spool.pages,
            events: s.read_events,
            overrun: s.overrun,
            dropped: s.dropped_events,
            commit_overrun: s.commit_overrun,
        });
    }
    let (cmdlines, tgids) = session.task_names()?;
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
        tgids,
        // The pair relates CLOCK_MONOTONIC to the wall clock: it says nothing of
        // another trace clock.
        clocks: clocks.filter(|_| headers.clock == "mono"),
        hostname: hostname(),
        trace_clock: Some(format!("[{}]", headers.clock)),
        uname: Some(headers.uname),
        version: Some(format!("jitterlab {}", env!("CARGO_PKG_VERSION"))),
        cpustats: Vec::new(),
        lttng_env: None,
    };
    let out_err = |e| Error::io(&req.output, e);
    let mut writer = DatWriter::new(meta, DatSpool::Memory).map_err(out_err)?;
    for spool in &spools {
        writer
            .adopt_pages(0, spool.cpu, spool.path.clone())
            .map_err(|e| Error::io(&spool.path, e))?;
    }
    writer.finish(&mut out).map_err(out_err)?;
    let bytes = out.commit().map_err(out_err)?;
    Ok(RecordSummary {
        output: req.output.display().to_string(),
        format: "trace-cmd .dat v6".into(),
        bytes,
        events: req.events.clone(),
        wall_ns,
        stopped_by: ended.by.name().into(),
        command_exit,
        flight_recorder: req.flight_recorder,
        cpus,
    })
}

/// CLOCK_MONOTONIC and CLOCK_REALTIME read back to back (the monotonic time is the middle
/// of two readings around the real-time one; of 5 tries, the one whose readings were
/// closest, so that a host stall between them does not move the pair), for the .dat's
/// clocks option: traces of different hosts can then be put on one wall clock (issue 17).
/// `None` if a clock cannot be read.
fn clock_pair() -> Option<jitterlab_trace::dat::ClockPair> {
    fn read(clock: libc::clockid_t) -> Option<u64> {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the timespec it is given and nothing else.
        let r = unsafe { libc::clock_gettime(clock, &mut t) };
        (r == 0).then(|| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
    }
    let mut best: Option<(u64, u64, u64)> = None;
    for _ in 0..5 {
        let before = read(libc::CLOCK_MONOTONIC)?;
        let realtime = read(libc::CLOCK_REALTIME)?;
        let after = read(libc::CLOCK_MONOTONIC)?;
        let span = after.saturating_sub(before);
        if best.is_none_or(|(s, _, _)| span < s) {
            best = Some((span, before + span / 2, realtime));
        }
    }
    let (_, monotonic_ns, realtime_ns) = best?;
    Some(jitterlab_trace::dat::ClockPair {
        monotonic_ns,
        realtime_ns,
    })
}

/// This machine's host name (uname's nodename), for the .dat's clocks option.
fn hostname() -> Option<String> {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let bytes: Vec<u8> = u
        .nodename
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    Some(String::from_utf8_lossy(&bytes).into_owned()).filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_expand_without_repeats() {
        let all = events_of(&[], &[]);
        assert_eq!(all.len(), SCHED.len() + IRQ.len());
        let e = events_of(
            &[Preset::Sched, Preset::All],
            &["sched:sched_switch".into(), "kmem:kmalloc".into()],
        );
        assert_eq!(e.len(), SCHED.len() + IRQ.len() + WORKQUEUE.len() + 1);
        assert_eq!(e.last().map(String::as_str), Some("kmem:kmalloc"));
        assert_eq!(events_of(&[], &["irq".into()]), vec!["irq".to_string()]);
        assert_eq!("all".parse::<Preset>(), Ok(Preset::All));
        assert!("none".parse::<Preset>().is_err());
    }
}
