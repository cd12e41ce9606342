//! The measures that need no network: the latency probe and a command's number.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jitterlab_cpuset::CpuSet;
use jitterlab_experiment::recipe::{CommandMeasure, LatencyMeasure};
use jitterlab_experiment::Series;
use jitterlab_host::child::{child_command, end_child};
use jitterlab_host::tasks::Policy;
use jitterlab_host::Root;
use jitterlab_latency::{Config, LatencyReport, Request, Stop};

use crate::error::{Error, Result};
use crate::Measured;

/// The latency probe for `duration_ns`: per run `latency.min`, `.avg`, `.p50`,
/// `.p99`, `.p99.9`, `.max` (ns) and `.missed` (periods). With several CPUs, the
/// minimum is the least of them, the average is weighted by samples, and every other
/// figure is the worst CPU's: a run is as good as its worst CPU. The series
/// `latency.worst` is the worst latency per over-time bucket of the worst CPU.
pub fn latency(
    root: &Root,
    m: &LatencyMeasure,
    duration_ns: u64,
    cancel: &Arc<AtomicBool>,
) -> Result<(Measured, LatencyReport)> {
    let cpus = match &m.cpus {
        Some(c) => c.clone(),
        None => jitterlab_host::cpus::online(root)?,
    };
    let req = Request {
        config: Config {
            cpus,
            policy: Policy::Fifo,
            priority: u32::from(m.priority),
            interval_ns: m.interval_ns,
            stop: Stop::DurationNs(duration_ns),
            deadline_ns: m.interval_ns,
            dma_latency: true,
            force: false,
            spike_threshold_ns: m.break_ns,
            break_ns: m.break_ns,
        },
        loads: Vec::new(),
        load_cpus: None,
        fail_above_ns: None,
    };
    let measured = jitterlab_latency::measure(root, &req, cancel, |_| {})?;
    let report = measured.report;
    Ok((latency_values(&report), report))
}

/// The run's values from a latency report (see [`latency`]).
pub fn latency_values(report: &LatencyReport) -> Measured {
    let mut out = Measured::default();
    let sums: Vec<_> = report.cpus.iter().map(|c| &c.summary).collect();
    if sums.is_empty() {
        return out;
    }
    let samples: u64 = sums.iter().map(|s| s.samples).sum();
    let worst = |f: &dyn Fn(&jitterlab_latency::stats::Summary) -> u64| {
        sums.iter().map(|s| f(s)).max().unwrap_or(0) as f64
    };
    let v = &mut out.values;
    if samples > 0 {
        let min = sums
            .iter()
            .filter(|s| s.samples > 0)
            .map(|s| s.min_ns)
            .min();
        v.insert("latency.min".into(), min.unwrap_or(0) as f64);
        let avg = sums
            .iter()
            .map(|s| s.avg_ns * s.samples as f64)
            .sum::<f64>()
            / samples as f64;
        v.insert("latency.avg".into(), avg);
        v.insert("latency.p50".into(), worst(&|s| s.p50_ns));
        v.insert("latency.p99".into(), worst(&|s| s.p99_ns));
        v.insert("latency.p99.9".into(), worst(&|s| s.p99_9_ns));
        v.insert("latency.max".into(), worst(&|s| s.max_ns));
    }
    v.insert("latency.missed".into(), worst(&|s| s.missed_periods));
    if let Some(cpu) = report.cpus.iter().max_by_key(|c| c.summary.max_ns) {
        let t = &cpu.over_time;
        out.series.push(Series {
            name: "latency.worst".into(),
            unit: "ns".into(),
            t_ns: (0..t.worst_ns.len() as u64)
                .map(|i| i * t.bucket_ns)
                .collect(),
            values: t.worst_ns.iter().map(|&w| w as f64).collect(),
            steps: Vec::new(),
        });
    }
    out
}

/// Runs a command measure once (`sh -c`), placed on `cpus` when given, and reads
/// its number from its standard output. It is ended when `cancel` is set, and after
/// twice the run's duration plus 30 s.
pub fn command(
    m: &CommandMeasure,
    duration_ns: u64,
    cpus: Option<&CpuSet>,
    cancel: &AtomicBool,
) -> Result<Measured> {
    let line = m.command_line(duration_ns);
    let what = format!("measure {:?} (`{line}`)", m.name);
    let mut cmd = child_command("sh");
    cmd.arg("-c")
        .arg(&line)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so that ending it ends what the shell started.
        .process_group(0);
    crate::place::pre_exec_affinity(&mut cmd, cpus);
    let mut child = cmd.spawn().map_err(|e| Error::workload(&what, e))?;
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.take(64 << 20).read_to_end(&mut buf);
        }
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.take(1 << 20).read_to_end(&mut buf);
        }
        buf
    });
    let limit = Duration::from_nanos(duration_ns.saturating_mul(2)) + Duration::from_secs(30);
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(e) => return Err(Error::workload(&what, e)),
        }
        if cancel.load(Ordering::Relaxed) || start.elapsed() > limit {
            let _ = end_child(&mut child, true);
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    let mut measured = Measured {
        raw: vec![
            (format!("{}.stdout", m.name), stdout.clone()),
            (format!("{}.stderr", m.name), stderr.clone()),
        ],
        ..Measured::default()
    };
    let Some(status) = status else {
        return Err(if cancel.load(Ordering::Relaxed) {
            Error::workload(&what, "cancelled")
        } else {
            Error::workload(&what, format!("still running after {limit:?}: ended"))
        });
    };
    if !status.success() {
        let tail = String::from_utf8_lossy(&stderr);
        let tail = tail.lines().last().unwrap_or("").trim();
        return Err(Error::workload(&what, format!("{status}: {tail}")));
    }
    let text = String::from_utf8_lossy(&stdout);
    let value = m
        .extract
        .apply(&text)
        .map_err(|e| Error::workload(&what, e))?;
    measured.values.insert(m.name.clone(), value);
    Ok(measured)
}
