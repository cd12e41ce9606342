//! The audit on the host: the static checks, then (live, as root, unless static) the
//! latency probe idle and loaded and the noise probe per RT CPU, each traced; what
//! they measured becomes findings ([`crate::findings`], pure), then verdicts and
//! recommendations ([`crate::judge`], pure).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use jitterlab_cpuset::CpuSet;
use jitterlab_host::irqs::CpuCounters;
use jitterlab_host::lint::{default_rt_cpus, static_checks};
use jitterlab_host::tasks::Policy;
use jitterlab_host::Root;
use jitterlab_latency::load::LoadSpec;
use jitterlab_latency::{run_noise, Config, NoiseConfig, NoiseMarkers, Request, Stop};
use jitterlab_runner::trace::{ask, Questions};

use crate::findings::{add_measured, latency_halves, noise_phase_halves, TUNE_LATENCY_NS};
use crate::model::{
    AuditReport, BlamedSpike, CpuInterrupts, LatencyHalves, LatencyPhase, Measured, NoisePhase,
};
use crate::{judge, Error};

/// The length of each measured phase of a quick audit, ns: the latency probe idle,
/// then loaded, 2 s each; the noise probe 1 s on each RT CPU.
pub const QUICK_NS: u64 = 2_000_000_000;

/// How much to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The static checks only.
    Static,
    /// Each latency phase 2 s, the noise probe 1 s per RT CPU.
    Quick,
    /// Each latency phase this long (ns), the noise probe half of it per RT CPU.
    Full(u64),
}

/// What to audit.
#[derive(Clone, Debug)]
pub struct AuditRequest {
    /// The CPUs meant for real-time work; default: the isolated ones, else the last.
    pub cpus: Option<CpuSet>,
    /// How much to measure. Without root, or with a fixture tree, the audit is static
    /// whatever this says, and says why.
    pub mode: Mode,
    /// An earlier audit's `--json` file to compare with.
    pub compare: Option<std::path::PathBuf>,
    /// Where to keep the traces of the measured phases (else they live as long as the
    /// audit).
    pub keep_traces: Option<KeepTraces>,
}

/// Where the traces of the measured phases are kept: `idle.dat`, `loaded.dat` (the
/// flight recorder of each latency phase) and `noise-cpuN.dat` (the noise probe's CPU)
/// in a directory.
#[derive(Clone, Debug)]
pub struct KeepTraces {
    /// The directory (made when missing).
    pub dir: std::path::PathBuf,
    /// How the report names it (relative to the page it is kept beside).
    pub shown: String,
}

/// Audits the machine below `root` (see [`AuditRequest`]); `progress` is told what is
/// being measured, and `cancel` (Ctrl-C) ends a measurement early.
pub fn audit(
    root: &Root,
    req: &AuditRequest,
    cancel: &Arc<AtomicBool>,
    mut progress: impl FnMut(&str),
) -> Result<AuditReport, Error> {
    let t0 = Instant::now();
    let start_wall_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    // The old audit is read first: a wrong file fails before anything is measured.
    let old = match &req.compare {
        Some(p) => Some((
            p.display().to_string(),
            std::fs::read_to_string(p)
                .map_err(|e| Error::Compare(format!("{}: {e}", p.display())))?,
        )),
        None => None,
    };
    let (rt, from) = match &req.cpus {
        Some(c) => (c.clone(), "--cpus"),
        None => {
            let c = default_rt_cpus(root)?;
            let iso = root
                .read_cpu_list_opt("/sys/devices/system/cpu/isolated")?
                .unwrap_or_default();
            (
                c.clone(),
                if c.is_subset(&iso) && !iso.is_empty() {
                    "isolated"
                } else {
                    "last CPU"
                },
            )
        }
    };
    progress("static checks");
    let st = static_checks(root, &rt).map_err(|e| match e {
        jitterlab_host::Error::Invalid(m) => Error::Invalid(m),
        e => Error::Host(e),
    })?;
    let mut findings = st.findings;
    let mut needs_root = st.needs_root;
    let can_measure = root.is_live() && jitterlab_host::running_as_root();
    let (mode, phase_ns, noise_ns) = match req.mode {
        Mode::Static => ("static", 0, 0),
        _ if !can_measure => ("static", 0, 0),
        Mode::Quick => ("quick", QUICK_NS, QUICK_NS / 2),
        Mode::Full(d) => ("full", d, (d / 2).max(100_000_000)),
    };
    let measured = if phase_ns > 0 {
        let m = measure(
            root,
            &rt,
            (phase_ns, noise_ns),
            req.keep_traces.as_ref(),
            cancel,
            &mut progress,
        )?;
        add_measured(&mut findings, &m);
        Some(m)
    } else {
        if req.mode != Mode::Static
            && root.is_live()
            && !needs_root.iter().any(|n| n.contains("measured"))
        {
            needs_root.push("the measured checks need root".into());
        }
        None
    };
    let (verdicts, recommendations) = judge(&rt, &findings);
    let verdict = verdicts
        .iter()
        .map(|v| v.verdict)
        .max()
        .unwrap_or(crate::Verdict::Ready);
    let mut report = AuditReport {
        rt_cpus: rt,
        rt_cpus_from: from.to_string(),
        housekeeping: st.housekeeping,
        mode: mode.to_string(),
        kernel: root
            .read_line_opt("/proc/sys/kernel/osrelease")?
            .unwrap_or_default(),
        hostname: root
            .read_line_opt("/proc/sys/kernel/hostname")?
            .filter(|h| !h.is_empty()),
        start_wall_ns,
        kernel_config: st.kernel_config,
        verdict,
        verdicts,
        recommendations,
        findings,
        measured,
        needs_root,
        wall_ns: t0.elapsed().as_nanos() as u64,
        compare: None,
    };
    if let Some((name, text)) = old {
        report.compare = Some(crate::compare(&name, &text, &report)?);
    }
    Ok(report)
}

fn measure(
    root: &Root,
    rt: &CpuSet,
    (phase_ns, noise_ns): (u64, u64),
    keep: Option<&KeepTraces>,
    cancel: &Arc<AtomicBool>,
    progress: &mut dyn FnMut(&str),
) -> Result<Measured, Error> {
    let online = jitterlab_host::cpus::online(root)?;
    // The traces, one per latency phase and one per noise window: kept where asked,
    // else they live only as long as the audit (what they say is kept as the blamed
    // spikes and the noise accounts).
    let (traces, _temp): (Result<std::path::PathBuf, String>, _) = match keep {
        Some(k) => (
            std::fs::create_dir_all(&k.dir)
                .map(|_| k.dir.clone())
                .map_err(|e| format!("{}: {e}", k.dir.display())),
            None,
        ),
        None => match tempfile::Builder::new()
            .prefix("jitterlab-audit-")
            .tempdir()
        {
            Ok(t) => (Ok(t.path().to_path_buf()), Some(t)),
            Err(e) => (
                Err(format!("a temporary directory for the traces: {e}")),
                None,
            ),
        },
    };
    let shown = |name: &str| keep.map(|k| format!("{}/{name}", k.shown));
    let mut latency = Vec::new();
    for loaded in [false, true] {
        let loads = if loaded {
            vec![LoadSpec::Cpu(online.len().max(1))]
        } else {
            Vec::new()
        };
        let name = if loaded {
            format!("cpu:{} on CPU {online}", online.len())
        } else {
            "idle".to_string()
        };
        progress(&format!("latency probe on CPU {rt}, {name}"));
        let req = Request {
            config: Config {
                cpus: rt.clone(),
                policy: Policy::Fifo,
                priority: jitterlab_host::sched::PROBE_PRIORITY,
                interval_ns: 1_000_000,
                stop: Stop::DurationNs(phase_ns),
                deadline_ns: 1_000_000,
                dma_latency: true,
                force: false,
                spike_threshold_ns: Some(TUNE_LATENCY_NS / 2),
                break_ns: None,
            },
            loads,
            load_cpus: None,
            fail_above_ns: None,
        };
        let file = if loaded { "loaded.dat" } else { "idle.dat" };
        let path = traces.as_ref().map(|d| d.join(file));
        let observer = jitterlab_runner::trace::observer_cpus(Some(rt), &online);
        let recording = match &path {
            Ok(p) => jitterlab_runner::trace::start(root, p, true, observer.as_ref())
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let counters = CpuCounters::read(root);
        let m = jitterlab_latency::measure(root, &req, cancel, |_| {});
        let interrupts = match (counters, CpuCounters::read(root)) {
            (Ok(before), Ok(after)) => rt
                .iter()
                .map(|cpu| CpuInterrupts {
                    cpu,
                    counts: after.delta_on(&before, cpu),
                })
                .collect(),
            // Best effort: the latency measure stands without them.
            _ => Vec::new(),
        };
        // The recording stops whether or not the probe succeeded.
        let recorded = recording.and_then(|r| r.finish().map_err(|e| e.to_string()));
        let m = m?;
        let (blamed, blame_note) = match (recorded, &path) {
            (Ok(_), Ok(p)) => match blame(p) {
                Ok(Some(b)) => (Some(b), None),
                Ok(None) => (
                    None,
                    Some(
                        "no wake-up of the probe at its real-time priority with a recorded \
                         switch-in among the worst of the trace (this kernel logs few switches \
                         out of idle: a wake-up without one is only bounded)"
                            .into(),
                    ),
                ),
                Err(e) => (None, Some(format!("blaming the trace: {e}"))),
            },
            (Err(e), _) => (None, Some(format!("recording the trace: {e}"))),
            (_, Err(e)) => (None, Some(format!("recording the trace: {e}"))),
        };
        let kept = path.is_ok_and(|p| p.exists());
        let worst_spike = m
            .report
            .spikes
            .as_ref()
            .and_then(|l| l.spikes.iter().max_by_key(|s| s.latency_ns).cloned());
        let halves = m
            .run
            .cpus
            .iter()
            .map(|c| LatencyHalves {
                cpu: c.cpu,
                max_ns: latency_halves(c.over_time(), m.report.wall_ns),
            })
            .collect();
        latency.push(LatencyPhase {
            load: name,
            wall_ns: m.report.wall_ns,
            cpus: m.report.cpus.iter().map(|c| c.summary.clone()).collect(),
            worst_spike,
            steal_ticks: m.report.steal_ticks.clone(),
            interrupts,
            blamed,
            blame_note,
            trace: shown(file).filter(|_| kept),
            halves,
        });
    }
    let mut noise = Vec::new();
    for cpu in rt.iter() {
        progress(&format!("noise probe on CPU {cpu}"));
        noise.push(noise_phase(root, cpu, noise_ns, &traces, &shown)?);
    }
    Ok(Measured { latency, noise })
}

/// The noise probe on `cpu`, traced: a recording of that CPU alone runs around it,
/// and the probe marks its window in it.
fn noise_phase(
    root: &Root,
    cpu: u32,
    noise_ns: u64,
    traces: &Result<std::path::PathBuf, String>,
    shown: &dyn Fn(&str) -> Option<String>,
) -> Result<NoisePhase, Error> {
    let file = format!("noise-cpu{cpu}.dat");
    let path = traces.as_ref().map(|d| d.join(&file));
    let recording = match &path {
        Ok(p) => jitterlab_runner::trace::start_noise(root, p, cpu).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let markers = recording.as_ref().ok().map(|r| NoiseMarkers {
        path: r.marker_path(),
        start: format!(
            "{} cpu {cpu}",
            jitterlab_analyze::noise_account::START_MARKER
        ),
        end: format!("{} cpu {cpu}", jitterlab_analyze::noise_account::END_MARKER),
    });
    let result = run_noise(
        root,
        &NoiseConfig {
            cpu,
            duration_ns: noise_ns,
            threshold_ns: 1_000,
            policy: Policy::Fifo,
            priority: 1,
            markers,
        },
    );
    // The recording stops whether or not the probe succeeded.
    let recorded = recording.and_then(|r| r.finish().map_err(|e| e.to_string()));
    let result = result?;
    let (traced, trace_note) = match (recorded, &path) {
        (Ok(_), Ok(p)) => match ask(
            p,
            &Questions {
                noise: Some(&result),
                ..Questions::default()
            },
        )
        .map(|a| a.noise)
        {
            Ok(Some(a)) => (Some(a), None),
            Ok(None) => (
                None,
                Some("the probe's markers are not in the trace of its CPU".to_string()),
            ),
            Err(e) => (None, Some(format!("reading the trace: {e}"))),
        },
        (Err(e), _) => (None, Some(format!("recording the trace: {e}"))),
        (_, Err(e)) => (None, Some(format!("recording the trace: {e}"))),
    };
    let kept = path.as_ref().is_ok_and(|p| p.exists());
    Ok(NoisePhase {
        halves: noise_phase_halves(&result, traced.as_ref()),
        result,
        traced,
        trace_note,
        trace: shown(&file).filter(|_| kept),
    })
}

/// The probe's worst wake-up in the trace at `path` whose switch-in the trace recorded,
/// blamed (the runner's second analyze pass over the probe's threads alone). One
/// without a recorded switch-in (most wake-ups out of idle, on this kernel) is only
/// bounded, and its window holds the probe's own run shown as idle: the probe's own
/// figures stand for it.
fn blame(path: &std::path::Path) -> Result<Option<BlamedSpike>, String> {
    let answers = ask(
        path,
        &Questions {
            probe_blame: Some(true),
            ..Questions::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let Some(section) = answers.probe_blame else {
        return Ok(None);
    };
    Ok(
        jitterlab_runner::trace::probe_spikes(&section, answers.start)
            .into_iter()
            .next(),
    )
}
