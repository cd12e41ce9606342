//! The traced runs: a recording around the run's measures, and what its analysis says
//! about the threads under test.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jitterlab_analyze::analysis::blame::{BlameSection, Reason, Spike};
use jitterlab_analyze::analysis::irqs::CpuCount;
use jitterlab_analyze::{
    analyze_trace, migrations, AnalyzeReport, NoiseAccount, Options, Pattern, ProbeGap, Section,
    Stats,
};
use jitterlab_cpuset::CpuSet;
use jitterlab_experiment::explain::{
    BlamedSpike, ChainSummary, CpuRun, Explanation, Migration, StepMigrations, ThreadPlacement,
};
use jitterlab_experiment::recipe::Role;
use jitterlab_experiment::Run;
use jitterlab_host::tracefs::{events_of, record, Preset, RecordRequest, RecordSummary};
use jitterlab_host::Root;
use jitterlab_latency::noise::NoiseResult;
use jitterlab_trace::Trace;

use crate::error::{Error, Result};

/// A recording in progress, on a thread of its own.
pub struct Recording {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<jitterlab_host::Result<RecordSummary>>,
    /// The instance's directory, a host path.
    instance: std::path::PathBuf,
}

/// Starts recording sched and irq events into `path` (a flight recorder when
/// `flight`, which keeps the newest events and stops when a `--break` turns tracing
/// off), and waits until tracing is on, so that the probe's trip wire finds it. The
/// recorder's threads run on `observer` when given (off the measured CPUs).
pub fn start(
    root: &Root,
    path: &Path,
    flight: bool,
    observer: Option<&CpuSet>,
) -> Result<Recording> {
    start_request(
        root,
        RecordRequest {
            events: events_of(&[Preset::Sched, Preset::Irq], &[]),
            cpus: None,
            buffer_kb: Some(if flight { 8192 } else { 16384 }),
            duration_ns: None,
            output: path.to_path_buf(),
            flight_recorder: flight,
            command: Vec::new(),
        },
        observer,
    )
}

/// Starts recording what the noise probe's account needs on `cpu` alone into `path`:
/// sched and irq events, and the irq_vectors handlers (the local timer, IPIs,
/// irq_work) where the kernel has them. The recorder runs off `cpu` where there is room.
pub fn start_noise(root: &Root, path: &Path, cpu: u32) -> Result<Recording> {
    let online = jitterlab_host::cpus::online(root)?;
    let observer = observer_cpus(Some(&[cpu].into_iter().collect()), &online);
    let mount = jitterlab_host::tracefs::find(root)?.unwrap_or_default();
    let vectors = root.exists(format!("{mount}/events/irq_vectors/local_timer_entry"));
    let extra: Vec<String> = if vectors {
        vec!["irq_vectors".into()]
    } else {
        Vec::new()
    };
    start_request(
        root,
        RecordRequest {
            events: events_of(&[Preset::Sched, Preset::Irq], &extra),
            cpus: Some([cpu].into_iter().collect()),
            buffer_kb: Some(16384),
            duration_ns: None,
            output: path.to_path_buf(),
            flight_recorder: false,
            command: Vec::new(),
        },
        observer.as_ref(),
    )
}

/// The CPUs jitterlab's own threads (the trace recorder, the watcher) run on during a
/// run: those the latency probe does not measure, when it measures some and leaves any,
/// so that the observer does not delay what it observes. `None`: wherever the scheduler
/// puts them.
pub fn observer_cpus(measured: Option<&CpuSet>, online: &CpuSet) -> Option<CpuSet> {
    let rest = online.difference(measured?);
    (!rest.is_empty()).then_some(rest)
}

/// Puts the calling thread (and the threads it starts next) on `cpus`; best effort: a
/// run goes on where it cannot (an isolated machine's cpuset).
pub fn observe_on(cpus: Option<&CpuSet>) {
    if let Some(set) = cpus {
        let _ = jitterlab_host::sched::set_affinity(0, set);
    }
}

fn start_request(root: &Root, req: RecordRequest, observer: Option<&CpuSet>) -> Result<Recording> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let root2 = root.clone();
    let observer = observer.cloned();
    let thread = std::thread::Builder::new()
        .name("jl-record".into())
        .spawn(move || {
            // Its per-CPU readers inherit the placement.
            observe_on(observer.as_ref());
            record(&root2, &req, &flag)
        })
        .map_err(|e| Error::workload("starting the trace", e))?;
    // The session traces in an instance of its own, `instances/jitterlab-PID`: wait until
    // it traces, so that the probe's `break` trip wire, armed next, finds it, and the
    // measure's first events are in the trace. A new instance traces from its mkdir on,
    // before the session turns it off to enable the events and then on again: tracing
    // with events enabled is the session's last step.
    let mount = jitterlab_host::tracefs::find(root)?.unwrap_or_default();
    let dir = format!("{mount}/instances/jitterlab-{}", std::process::id());
    let on = format!("{dir}/tracing_on");
    let set_event = format!("{dir}/set_event");
    let started = || {
        root.read_line_opt(&on).ok().flatten().as_deref() == Some("1")
            && root
                .read_line_opt(&set_event)
                .ok()
                .flatten()
                .is_some_and(|l| !l.trim().is_empty())
    };
    for _ in 0..1000 {
        if thread.is_finished() || started() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(Recording {
        stop,
        thread,
        instance: root.path(&dir),
    })
}

/// The top-level buffer's `tracing_on` and its path, when tracefs is mounted.
pub fn top_tracing_on(root: &Root) -> Option<(String, bool)> {
    let mount = jitterlab_host::tracefs::find(root).ok().flatten()?;
    let file = format!("{mount}/tracing_on");
    let on = root.read_line_opt(&file).ok().flatten()?;
    Some((file, on == "1"))
}

/// Turns the top-level buffer's tracing back on if it was on (`top`, from
/// [`top_tracing_on`]) and a `break` turned it off.
pub fn restore_top_tracing_on(root: &Root, (file, was_on): (String, bool)) -> Result<()> {
    if was_on && root.read_line_opt(&file)?.as_deref() == Some("0") {
        root.write(&file, "1")?;
    }
    Ok(())
}

impl Recording {
    /// The `trace_marker` of the buffer it records (a host path): what is written there
    /// is in the trace.
    pub fn marker_path(&self) -> std::path::PathBuf {
        self.instance.join("trace_marker")
    }

    /// Stops the recording and writes the file.
    pub fn finish(self) -> Result<RecordSummary> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.join() {
            Ok(r) => Ok(r?),
            Err(_) => Err(Error::workload(
                "recording the trace",
                "the recorder panicked",
            )),
        }
    }
}

/// Analyzes a run's trace for the threads of `tasks` (thread group ids of processes
/// and thread ids of built-in threads): where each ran, its wake-ups.
pub fn analyze(path: &Path) -> Result<AnalyzeReport> {
    let trace = Trace::open(path, true).map_err(|e| Error::workload("reading the trace", e))?;
    let options = Options {
        sections: vec![Section::Summary, Section::Tasks, Section::Irqs],
        top: usize::MAX,
        ..Options::default()
    };
    analyze_trace(&trace, options, None).map_err(|e| Error::workload("analyzing the trace", e))
}

/// The worst probe wake-ups the blame pass keeps, of which the first at the probe's
/// real-time priority is chosen.
const PROBE_SPIKES_ASKED: usize = 5;

/// The probe's threads are `jitterlab-probe/CPU`, cut to the kernel's 15 characters.
const PROBE: &str = "jitterlab-probe";

/// The blame of the latency probe's wake-ups alone (a second pass: the worst wake-ups
/// of the whole machine would crowd the probe's out); of those whose switch-in the
/// trace recorded when `recorded` (see [`jitterlab_analyze::Options::blame_recorded`]).
pub fn probe_blame(path: &Path, recorded: bool) -> Result<Option<BlameSection>> {
    let trace = Trace::open(path, true).map_err(|e| Error::workload("reading the trace", e))?;
    let options = Options {
        sections: vec![Section::Blame],
        task: Some(Pattern::new(format!("{PROBE}*"))),
        // A few: the worst may be a wake-up from before the probe took its priority.
        blame: PROBE_SPIKES_ASKED,
        blame_recorded: recorded,
        ..Options::default()
    };
    let report = analyze_trace(&trace, options, None)
        .map_err(|e| Error::workload("analyzing the trace", e))?;
    Ok(report.blame)
}

/// The explanation of one traced run from its analysis: every thread of the
/// processes in `tasks`, most run time first.
pub fn explain(
    report: &AnalyzeReport,
    blame: Option<&BlameSection>,
    tasks: &[(Role, u32)],
    seq: usize,
    cell: usize,
    trace: Option<String>,
) -> Explanation {
    let duration_ns = report.summary.as_ref().map_or(0, |s| s.span_ns);
    let lost_events = report
        .summary
        .as_ref()
        .map_or(0, |s| s.lost_per_cpu.iter().flatten().sum());
    let role_of = |tid: i32, tgid: Option<i32>| -> Option<Role> {
        tasks
            .iter()
            .find(|(_, id)| *id as i32 == tid || Some(*id as i32) == tgid)
            .map(|(r, _)| *r)
    };
    let mut threads: Vec<ThreadPlacement> = report
        .tasks
        .as_ref()
        .map(|t| t.tasks.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|t| {
            // The processes under test, and the latency probe's threads (no role).
            let role = role_of(t.tid, t.tgid);
            if role.is_none() && !t.comm.starts_with(PROBE) {
                return None;
            }
            let secs = duration_ns as f64 / 1e9;
            Some(ThreadPlacement {
                role,
                tid: t.tid,
                tgid: t.tgid,
                comm: t.comm.clone(),
                run_ns: t.run_ns,
                cpus: t
                    .cpus
                    .iter()
                    .map(|c| CpuRun {
                        cpu: c.cpu,
                        run_ns: c.run_ns,
                    })
                    .collect(),
                migrations: t.migrations,
                migrations_per_s: if secs > 0.0 {
                    t.migrations as f64 / secs
                } else {
                    0.0
                },
                wakeups: t.wakeups.as_ref().map_or(0, |w| w.count),
                wake_p50_ns: t.wakeups.as_ref().map(|w| w.p50_ns),
                wake_max_ns: t.wakeups.as_ref().map(|w| w.max_ns),
                wakeups_inferred: t.wakeups_inferred,
                wake_idle_p50_ns: t.wakeups_from_idle.as_ref().map(|w| w.p50_ns),
                wake_task_p50_ns: t.wakeups_from_task.as_ref().map(|w| w.p50_ns),
            })
        })
        .collect();
    threads.sort_by(|a, b| b.run_ns.cmp(&a.run_ns).then(a.tid.cmp(&b.tid)));
    let ours = |tid: i32| threads.iter().any(|t| t.tid == tid);
    let summary = |source: String,
                   (tid, comm, count): (i32, &str, u64),
                   cpus: &[CpuCount],
                   (latency, inferred): (Option<&Stats>, u64)| ChainSummary {
        source,
        tid,
        comm: comm.to_string(),
        count,
        source_cpus: cpus.iter().map(|x| x.cpu).collect(),
        p50_ns: latency.map(|l| l.p50_ns),
        max_ns: latency.map(|l| l.max_ns),
        inferred,
    };
    let mut chains = Vec::new();
    if let Some(irqs) = &report.irqs {
        for c in irqs.chains.iter().filter(|c| ours(c.tid)) {
            chains.push(summary(
                format!("irq {} {}", c.irq, c.irq_name),
                (c.tid, &c.comm, c.count),
                &c.waker_cpus,
                (c.latency.as_ref(), c.inferred),
            ));
        }
        for c in irqs.softirq_chains.iter().filter(|c| ours(c.tid)) {
            chains.push(summary(
                c.source.clone(),
                (c.tid, &c.comm, c.count),
                &c.waker_cpus,
                (c.latency.as_ref(), c.inferred),
            ));
        }
    }
    chains.sort_by(|a, b| b.count.cmp(&a.count).then(a.tid.cmp(&b.tid)));
    let start = report.summary.as_ref().map_or(0, |s| s.start_ns);
    Explanation {
        spikes: blame.map_or_else(Vec::new, |b| probe_spikes(b, start)),
        seq,
        cell,
        trace,
        duration_ns,
        lost_events,
        threads,
        chains,
        around_steps: Vec::new(),
    }
}

/// The latency probe's blamed spikes in a blame of its wake-ups ([`probe_blame`]):
/// those a `break` marker names, else its worst one; `start` is the trace's first
/// timestamp, from which each spike's `t_ns` counts.
pub fn probe_spikes(blame: &BlameSection, start: u64) -> Vec<BlamedSpike> {
    // A wake-up of a probe thread before it took its real-time priority (kernel
    // priorities 100 and above are not real-time) is no sample of the probe.
    let probe: Vec<&Spike> = blame
        .spikes
        .iter()
        .filter(|s| s.comm.starts_with(PROBE) && s.prio < 100)
        .collect();
    let marked: Vec<&Spike> = probe
        .iter()
        .copied()
        .filter(|s| s.reason == Reason::Marker)
        .collect();
    let chosen = if marked.is_empty() {
        probe.into_iter().take(1).collect()
    } else {
        marked
    };
    chosen
        .into_iter()
        .map(|s| BlamedSpike {
            cpu: s.cpu,
            tid: s.tid,
            latency_ns: s.latency_ns,
            t_ns: s.switch_in_ns.saturating_sub(start),
            marked: s.reason == Reason::Marker,
            cause: s.cause.name().to_string(),
            verdict: s.verdict.clone(),
            lost_events: s.lost_events,
        })
        .collect()
}

/// The time of the first event of the trace at `path`, ns (0 for an empty trace): the
/// origin of the times a run's explanation gives.
pub fn trace_start(path: &Path) -> Result<u64> {
    let trace = Trace::open(path, true).map_err(|e| Error::workload("reading the trace", e))?;
    let mut events = trace
        .events()
        .map_err(|e| Error::workload("reading the trace", e))?;
    match events.next_event() {
        Ok(Some(ev)) => Ok(ev.ts),
        Ok(None) => Ok(0),
        Err(e) => Err(Error::workload("reading the trace", e)),
    }
}

/// The noise probe's window of `noise`, accounted for from the trace at `path` (made
/// by [`start_noise`] while the probe wrote its markers); `None` when the trace has not
/// both markers.
pub fn noise_account(path: &Path, noise: &NoiseResult) -> Result<Option<NoiseAccount>> {
    let trace = Trace::open(path, true).map_err(|e| Error::workload("reading the trace", e))?;
    let mut events = trace
        .events()
        .map_err(|e| Error::workload("reading the trace", e))?;
    let gaps: Vec<ProbeGap> = noise
        .gaps
        .all
        .iter()
        .map(|g| ProbeGap {
            at_ns: g.at_ns,
            ns: g.ns,
        })
        .collect();
    jitterlab_analyze::noise_account(events.as_mut(), noise.cpu, noise.gaps.window_ns, &gaps)
        .map_err(|e| Error::workload("reading the trace", e))
}

/// The migrations of the explained threads within a second of each step of the run's
/// series. A series' times count from the run's start, which is the trace's start to
/// within the few milliseconds the recording starts before the measures.
pub fn around_steps(path: &Path, explanation: &mut Explanation, run: &Run) -> Result<()> {
    let steps: Vec<(&str, u64)> = run
        .series
        .iter()
        .flat_map(|s| s.steps.iter().map(move |st| (s.name.as_str(), st.t_ns)))
        .collect();
    if steps.is_empty() || explanation.threads.is_empty() {
        return Ok(());
    }
    let start = trace_start(path)?;
    let trace = Trace::open(path, true).map_err(|e| Error::workload("reading the trace", e))?;
    const SECOND: u64 = 1_000_000_000;
    let windows: Vec<(u64, u64)> = steps
        .iter()
        .map(|(_, t)| {
            let at = start + t;
            (at.saturating_sub(SECOND), at + SECOND)
        })
        .collect();
    let tids: Vec<i32> = explanation.threads.iter().map(|t| t.tid).collect();
    let mut events = trace
        .events()
        .map_err(|e| Error::workload("reading the trace", e))?;
    let found = migrations(events.as_mut(), &tids, &windows)
        .map_err(|e| Error::workload("reading the trace", e))?;
    for (series, t) in steps {
        let at = start + t;
        explanation.around_steps.push(StepMigrations {
            series: series.to_string(),
            step_t_ns: t,
            migrations: found
                .iter()
                .filter(|m| m.ts_ns.abs_diff(at) <= SECOND)
                .map(|m| Migration {
                    t_ns: m.ts_ns.saturating_sub(start),
                    tid: m.tid,
                    comm: m.comm.clone(),
                    from_cpu: m.orig_cpu,
                    to_cpu: m.dest_cpu,
                })
                .collect(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_observer_keeps_off_the_measured_cpus_where_there_is_room() {
        let set = |s: &str| CpuSet::parse_list(s).unwrap();
        let online = set("0-3");
        assert_eq!(observer_cpus(Some(&set("1")), &online), Some(set("0,2-3")));
        assert_eq!(observer_cpus(Some(&set("0-3")), &online), None);
        assert_eq!(observer_cpus(None, &online), None);
    }
}
