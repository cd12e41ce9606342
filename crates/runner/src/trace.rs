//! The traced runs: a recording around the run's measures, and what its analysis says
//! about the threads under test.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jitterlab_analyze::analysis::blame::{BlameSection, Reason, Spike};
use jitterlab_analyze::analysis::irqs::CpuCount;
use jitterlab_analyze::engine::{self, PassOptions, Tables};
use jitterlab_analyze::{
    AnalyzeReport, MigrationEvent, MigrationFold, NoiseAccount, NoiseFold, Options, Pattern,
    ProbeGap, Report, Section, Stats,
};
use jitterlab_cpuset::CpuSet;
use jitterlab_experiment::explain::{
    BlamedSpike, ChainSummary, CpuRun, Explanation, Migration, StepMigrations, ThreadPlacement,
};
use jitterlab_experiment::recipe::Role;
use jitterlab_experiment::Run;
use jitterlab_host::tracefs::{events_of, record, Preset, RecordRequest, RecordSummary};
use jitterlab_host::Root;
use jitterlab_latency::noise_probe::NoiseResult;
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

/// What a caller asks of one trace, answered by [`ask`] in one pass.
#[derive(Default)]
pub struct Questions<'a> {
    /// The analysis of a run: its summary, tasks and IRQs, every row.
    pub analysis: bool,
    /// The blame of the latency probe's wake-ups alone: `Some(recorded)`, of those whose
    /// switch-in the trace recorded when `recorded` (see
    /// [`jitterlab_analyze::Options::blame_recorded`]).
    pub probe_blame: Option<bool>,
    /// The sched_migrate_task events of these processes' threads (thread group ids)
    /// and of these threads (the built-in workloads').
    pub migrations_of: &'a [i32],
    /// The noise probe's window, accounted for from the trace of its CPU (made by
    /// [`start_noise`] while the probe wrote its markers).
    pub noise: Option<&'a NoiseResult>,
}

/// The answers of [`ask`].
#[derive(Default)]
pub struct Answers {
    /// The analysis, when asked.
    pub analysis: Option<AnalyzeReport>,
    /// The blame of the probe's wake-ups, when asked and the trace has any.
    pub probe_blame: Option<BlameSection>,
    /// The time of the trace's first event, ns (0 for an empty trace): the origin of
    /// the times an explanation gives.
    pub start: u64,
    /// The migrations asked for, in time order.
    pub migrations: Vec<MigrationEvent>,
    /// The noise probe's window, when asked and the trace has both its markers.
    pub noise: Option<NoiseAccount>,
}

/// The worst probe wake-ups the blame pass keeps, of which the first at the probe's
/// real-time priority is chosen.
const PROBE_SPIKES_ASKED: usize = 5;

/// The probe's threads are `jitterlab-probe/CPU`, cut to the kernel's 15 characters.
const PROBE: &str = "jitterlab-probe";

/// Answers every question of `questions` about the trace at `path` in one pass of the
/// engine: the run's analysis and the probe's blame (its own analysis of the probe's
/// threads alone: the worst wake-ups of the whole machine would crowd the probe's out)
/// and the noise account as sinks of one state machine, the migrations from the raw
/// events on the way.
pub fn ask(path: &Path, questions: &Questions<'_>) -> Result<Answers> {
    let trace = Trace::open(path, true).map_err(|e| Error::workload("reading the trace", e))?;
    let tables = Tables::of(&trace);
    let mut analysis = questions.analysis.then(|| {
        Report::new(
            &tables,
            Options {
                sections: vec![Section::Summary, Section::Tasks, Section::Irqs],
                top: usize::MAX,
                ..Options::default()
            },
        )
    });
    let mut blame = questions.probe_blame.map(|recorded| {
        Report::new(
            &tables,
            Options {
                sections: vec![Section::Blame],
                task: Some(Pattern::new(format!("{PROBE}*"))),
                // A few: the worst may be a wake-up from before the probe took its priority.
                blame: PROBE_SPIKES_ASKED,
                blame_recorded: recorded,
                ..Options::default()
            },
        )
    });
    let wanted = &questions.migrations_of;
    let tids: Vec<i32> = tables
        .tgids
        .iter()
        .filter(|(_, tgid)| wanted.contains(tgid))
        .map(|(&tid, _)| tid)
        .chain(wanted.iter().copied())
        .collect();
    let mut moves = MigrationFold::new(&tids, &[(0, u64::MAX)]);
    let mut noise = questions.noise.map(|n| {
        let gaps: Vec<ProbeGap> = n
            .gaps
            .all
            .iter()
            .map(|g| ProbeGap {
                at_ns: g.at_ns,
                ns: g.ns,
            })
            .collect();
        NoiseFold::new(n.cpu, &gaps)
    });
    let mut start = None;
    let pass = engine::pass(
        &trace,
        &tables,
        &PassOptions {
            machine: analysis.is_some() || blame.is_some() || noise.is_some(),
            ..PassOptions::default()
        },
        &mut |ev| {
            start.get_or_insert(ev.ts);
            if !tids.is_empty() {
                moves.feed(ev);
            }
            ControlFlow::Continue(())
        },
        &mut (
            analysis.as_mut().map(Report::sink),
            (blame.as_mut().map(Report::sink), noise.as_mut()),
        ),
    )
    .map_err(|e| Error::workload("reading the trace", e))?;
    Ok(Answers {
        analysis: analysis.map(|a| a.finish(&pass)),
        probe_blame: blame.and_then(|b| b.finish(&pass).blame),
        start: start.unwrap_or(0),
        migrations: moves.finish(),
        noise: match (noise, questions.noise) {
            (Some(f), Some(n)) => f.finish(n.gaps.window_ns),
            _ => None,
        },
    })
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

/// The latency probe's blamed spikes in a blame of its wake-ups ([`Answers::probe_blame`]):
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

/// The migrations of the explained threads within a second of each step of the run's
/// series, from the run's migrations ([`Answers::migrations`], of the trace that began
/// at `start`). A series' times count from the run's start, which is the trace's start
/// to within the few milliseconds the recording starts before the measures.
pub fn around_steps(
    migrations: &[MigrationEvent],
    start: u64,
    explanation: &mut Explanation,
    run: &Run,
) {
    const SECOND: u64 = 1_000_000_000;
    if explanation.threads.is_empty() {
        return;
    }
    let tids: Vec<i32> = explanation.threads.iter().map(|t| t.tid).collect();
    for s in &run.series {
        for st in &s.steps {
            let at = start + st.t_ns;
            explanation.around_steps.push(StepMigrations {
                series: s.name.clone(),
                step_t_ns: st.t_ns,
                migrations: migrations
                    .iter()
                    .filter(|m| tids.contains(&m.tid) && m.ts_ns.abs_diff(at) <= SECOND)
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
    }
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

    /// The questions asked together in one pass get the answers each gets alone (and
    /// the migrations those of a fold over the raw events): an audit's latency phase,
    /// recorded on the reference VM.
    #[test]
    fn questions_asked_together_get_the_answers_asked_alone() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../web/test/fixtures/audit-traces/idle.dat");
        let trace = Trace::open(&path, false).unwrap();
        let every: Vec<i32> = trace.tgids().into_keys().collect();
        assert!(!every.is_empty(), "the recording keeps its thread groups");
        let together = ask(
            &path,
            &Questions {
                analysis: true,
                probe_blame: Some(true),
                migrations_of: &every,
                noise: None,
            },
        )
        .unwrap();
        let analysis = ask(
            &path,
            &Questions {
                analysis: true,
                ..Questions::default()
            },
        )
        .unwrap();
        let blame = ask(
            &path,
            &Questions {
                probe_blame: Some(true),
                ..Questions::default()
            },
        )
        .unwrap();
        let json = |r: &Option<AnalyzeReport>| serde_json::to_string(r).unwrap();
        assert_eq!(json(&together.analysis), json(&analysis.analysis));
        assert!(together.analysis.is_some());
        let blamed = |b: &Option<BlameSection>| serde_json::to_string(b).unwrap();
        assert_eq!(blamed(&together.probe_blame), blamed(&blame.probe_blame));
        assert!(
            together
                .probe_blame
                .as_ref()
                .is_some_and(|b| !b.spikes.is_empty()),
            "the probe's wake-ups are blamed"
        );
        // The trace's first event, as the events give it.
        let first = trace.events().unwrap().next_event().unwrap().unwrap().ts;
        assert_eq!((together.start, blame.start), (first, first));
        let folded =
            jitterlab_analyze::migrations(&mut *trace.events().unwrap(), &every, &[(0, u64::MAX)])
                .unwrap();
        assert!(!folded.is_empty(), "the recording has migrations");
        assert_eq!(together.migrations, folded);
        assert!(analysis.migrations.is_empty(), "none asked");
    }
}
