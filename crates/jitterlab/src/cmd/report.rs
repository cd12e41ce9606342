//! `jitterlab report FILE`: a trace's events one per line, or its counts.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use jitterlab_cpuset::CpuSet;
use jitterlab_host::Error;
use jitterlab_trace::stats::{TaskNames, TraceStats};
use jitterlab_trace::{EventKind, Trace};

use crate::cli::Color;
use crate::output::{emit, format};
use crate::EXIT_OK;

/// `jitterlab report`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  jitterlab report trace.dat --stats\n  jitterlab report trace.dat --cpu 1 --event 'sched_*' --from 976.3 --to 976.4\n  jitterlab report /sys/kernel/tracing/trace --json | jq .event"
)]
pub struct Report {
    /// A trace-cmd .dat (v6, v7), ftrace text, trace-cmd report text or function_graph
    /// text: told apart by content.
    pub file: PathBuf,
    /// Counts per event type and per CPU, lost events, time span and format, without
    /// printing events.
    #[arg(long)]
    pub stats: bool,
    /// Only events of these CPUs.
    #[arg(long, value_name = "LIST")]
    pub cpu: Option<String>,
    /// Only events whose current task (common_pid) is one of these (repeatable).
    #[arg(long, value_name = "PID")]
    pub pid: Vec<i32>,
    /// Only events whose name matches (glob: `sched_*`, `irq_handler_entry`; repeatable).
    #[arg(long, value_name = "NAME")]
    pub event: Vec<String>,
    /// Only events at or after this time, in seconds as printed (`976.3483`).
    #[arg(long, value_name = "SECONDS", value_parser = seconds_ns)]
    pub from: Option<u64>,
    /// Only events at or before this time, in seconds as printed.
    #[arg(long, value_name = "SECONDS", value_parser = seconds_ns)]
    pub to: Option<u64>,
    /// One JSON object per event (with an `event` field naming it); with --stats, the
    /// counts as one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Skip undecodable records and lines, counting them, instead of stopping.
    #[arg(long)]
    pub lenient: bool,
}

pub fn run(args: Report, color: Color) -> anyhow::Result<u8> {
    let trace = Trace::open(&args.file, args.lenient)?;
    let name = args.file.display().to_string();
    if args.stats {
        let stats = match &trace {
            Trace::Dat(d) => TraceStats::from_dat_counts(&name, &d.count_events(0)?),
            _ => TraceStats::count(&name, &trace.format(), &mut *trace.events()?)?,
        };
        emit(&stats, format(args.json, color))?;
        return Ok(EXIT_OK);
    }
    let cpus = match &args.cpu {
        Some(l) => Some(CpuSet::parse_list(l).map_err(|e| Error::Invalid(format!("--cpu: {e}")))?),
        None => None,
    };
    let patterns = args
        .event
        .iter()
        .map(|p| glob::Pattern::new(p).map_err(|e| Error::Invalid(format!("--event {p:?}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let (from, to) = (args.from, args.to);
    let mut names = TaskNames::new(trace.cmdlines());
    let mut source = trace.events()?;
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    while let Some(ev) = source.next_event()? {
        names.learn(&ev);
        if from.is_some_and(|f| ev.ts < f) {
            continue;
        }
        if to.is_some_and(|t| ev.ts > t) {
            break;
        }
        if cpus.as_ref().is_some_and(|c| !c.contains(ev.cpu))
            || (!args.pid.is_empty() && !args.pid.contains(&ev.pid))
        {
            continue;
        }
        if !patterns.is_empty() {
            let full = match &ev.kind {
                EventKind::Other { name, .. } => name.to_string(),
                k => k.name().to_string(),
            };
            let short = ev.kind.name();
            if !patterns
                .iter()
                .any(|p| p.matches(short) || p.matches(&full))
            {
                continue;
            }
        }
        if args.json {
            serde_json::to_writer(&mut out, &ev).map_err(io::Error::from)?;
            writeln!(out)?;
        } else {
            jitterlab_render::write_event_line(&mut out, &ev, names.get(ev.pid))?;
        }
    }
    out.flush()?;
    let skipped = source.stats().skipped;
    if skipped > 0 {
        eprintln!("jitterlab: {skipped} undecodable records or lines skipped (--lenient)");
    }
    Ok(EXIT_OK)
}

/// `--from`/`--to` of `report` and `analyze`: a time on the trace clock in seconds as the
/// traces print it (`976.3483`, `976.348312`, `976`), to ns, exactly (up to 9 decimals).
pub(crate) fn seconds_ns(s: &str) -> Result<u64, String> {
    let expected =
        || format!("expected seconds as the trace prints them (976.348312), found {s:?}");
    let (secs, frac) = s.trim().split_once('.').unwrap_or((s.trim(), ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if secs.is_empty() || !digits(secs) || frac.len() > 9 || !digits(frac) {
        return Err(expected());
    }
    let secs: u64 = secs.parse().map_err(|_| expected())?;
    let ns: u64 = format!("{frac:0<9}").parse().map_err(|_| expected())?;
    secs.checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(ns))
        .ok_or_else(expected)
}

#[cfg(test)]
mod tests {
    use super::seconds_ns;

    #[test]
    fn seconds() {
        assert_eq!(seconds_ns("976.3483"), Ok(976_348_300_000));
        assert_eq!(seconds_ns("976.348312123"), Ok(976_348_312_123));
        assert_eq!(seconds_ns("976"), Ok(976_000_000_000));
        assert_eq!(seconds_ns("976."), Ok(976_000_000_000));
        for bad in [
            "",
            "-1",
            "1e3",
            "976.1234567891",
            "x",
            ".5",
            "99999999999999999999",
        ] {
            assert!(
                seconds_ns(bad).unwrap_err().contains("expected seconds"),
                "{bad}"
            );
        }
    }
}
