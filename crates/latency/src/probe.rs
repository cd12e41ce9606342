//! The measuring threads: one per CPU, pinned, real-time, sleeping on an
//! absolute timer; latency = actual wake-up minus programmed wake-up.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use jitterlab_cpuset::CpuSet;
use jitterlab_host::sched;

use crate::clock::{Clock, Monotonic};
use crate::config::{Config, Stop};
use crate::dma::DmaLatency;
use crate::spikes::{Ledger, ProcCounters, SpikeEvent, SpikeSink, Watcher};
use crate::stats::CpuStats;
use crate::Error;

/// What one CPU's thread has seen so far, for a live display.
#[derive(Debug, Default)]
pub struct Live {
    /// The CPU.
    pub cpu: u32,
    /// The latest latency, ns.
    pub last_ns: AtomicU64,
    /// The largest latency so far, ns.
    pub max_ns: AtomicU64,
    /// Samples so far.
    pub samples: AtomicU64,
}

/// The result of a run.
#[derive(Debug)]
pub struct Run {
    /// Per CPU, in CPU order.
    pub cpus: Vec<CpuStats>,
    /// Whether mlockall succeeded.
    pub mlocked: bool,
    /// Whether /dev/cpu_dma_latency was held at 0 (false when skipped or refused).
    pub dma_latency_held: bool,
    /// Whether the run was ended early (Ctrl-C or a stop request).
    pub cancelled: bool,
    /// Wall time of the measurement, ns.
    pub wall_ns: u64,
    /// Warnings gathered while setting up.
    pub warnings: Vec<String>,
    /// Samples above the spike threshold (empty without `spike_threshold_ns`).
    pub ledger: Option<Ledger>,
    /// The sample that ended the run under `break_ns`.
    pub break_hit: Option<BreakHit>,
    /// The trace buffers the break stopped (`top`, `instances/NAME`).
    pub break_buffers: Vec<String>,
}

/// The first sample above `--break`: it ended the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BreakHit {
    /// The CPU.
    pub cpu: u32,
    /// Its latency, ns.
    pub latency_ns: u64,
    /// The sample's number on its CPU.
    pub sample: u64,
    /// Whether a trace marker was written and tracing turned off.
    pub traced: bool,
}

/// What the measuring loop does beyond statistics: hand spikes to the ledger, and end
/// the run (and the trace) at the first sample above the break threshold.
#[derive(Default)]
pub struct Hooks {
    /// Where spikes go.
    pub spikes: Option<SpikeSink>,
    /// End the run at the first sample above this, ns.
    pub break_ns: Option<u64>,
    /// Marks the trace and turns tracing off at the break.
    pub breaker: Option<jitterlab_host::tracefs::Breaker>,
    /// The sample that broke the run.
    pub hit: OnceLock<BreakHit>,
}

impl Hooks {
    /// Called for each sample; returns true when the run must end.
    fn sample(
        &self,
        cpu: u32,
        sample: u64,
        prev_wake_ns: u64,
        wake_ns: u64,
        latency_ns: u64,
    ) -> bool {
        if let Some(sink) = &self.spikes {
            if latency_ns > sink.threshold_ns() {
                sink.offer(SpikeEvent {
                    cpu,
                    sample,
                    prev_wake_ns,
                    wake_ns,
                    latency_ns,
                });
            }
        }
        match self.break_ns {
            Some(limit) if latency_ns > limit => {
                let traced = self
                    .breaker
                    .as_ref()
                    .is_some_and(|b| b.fire(latency_ns, cpu));
                let _ = self.hit.set(BreakHit {
                    cpu,
                    latency_ns,
                    sample,
                    traced,
                });
                true
            }
            _ => false,
        }
    }
}

/// The measuring loop of one thread. Returns when the stop condition is met
/// or `cancel` is set.
pub fn measure(
    clock: &mut dyn Clock,
    interval: u64,
    stop: Stop,
    stats: &mut CpuStats,
    cancel: &AtomicBool,
    live: &Live,
    hooks: &Hooks,
) {
    let start = clock.now_ns();
    let mut prev_wake = start;
    let end = match stop {
        Stop::DurationNs(d) => Some(start.saturating_add(d)),
        Stop::Loops(_) => None,
    };
    let mut next = start + interval;
    loop {
        clock.sleep_until_ns(next);
        let now = clock.now_ns();
        let latency = now.saturating_sub(next);
        stats.record_at(next.saturating_sub(start), latency);
        live.last_ns.store(latency, Ordering::Relaxed);
        live.max_ns.fetch_max(latency, Ordering::Relaxed);
        live.samples.store(stats.samples(), Ordering::Relaxed);
        if hooks.sample(stats.cpu, stats.samples(), prev_wake, now, latency) {
            cancel.store(true, Ordering::Relaxed);
            return;
        }
        prev_wake = now;
        // A wake-up more than one interval late skips the periods it overran;
        // the next programmed wake-up is the first still in the future.
        let skipped = latency / interval;
        if skipped > 0 {
            stats.add_missed(skipped);
            next += skipped * interval;
        }
        next += interval;
        let done = match (stop, end) {
            (Stop::Loops(n), _) => stats.samples() >= n,
            (_, Some(e)) => now >= e,
            _ => false,
        };
        if done || cancel.load(Ordering::Relaxed) {
            return;
        }
    }
}

/// Checks that this process may use the policy at that priority, before any
/// thread starts (root, or RLIMIT_RTPRIO high enough).
fn check_permission(config: &Config) -> Result<(), Error> {
    if !config.policy.is_realtime() {
        return Ok(());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: lim is a valid rlimit.
    unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut lim) };
    if lim.rlim_cur < u64::from(config.priority) {
        return Err(Error::Invalid(format!(
            "no permission for policy {} priority {}: run as root or raise RLIMIT_RTPRIO \
             (ulimit -r is {})",
            format!("{:?}", config.policy).to_lowercase(),
            config.priority,
            lim.rlim_cur
        )));
    }
    Ok(())
}

/// Runs the probe: one thread per CPU of the configuration. `live` must hold
/// one entry per CPU, in CPU order (see [`live_for`]).
pub fn run(config: &Config, cancel: &Arc<AtomicBool>, live: &[Arc<Live>]) -> Result<Run, Error> {
    check_permission(config)?;
    let mut warnings = Vec::new();
    // SAFETY: mlockall has no memory-safety preconditions.
    let mlocked = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } == 0;
    if !mlocked {
        warnings.push(format!(
            "mlockall failed ({}): page faults may add latency",
            std::io::Error::last_os_error()
        ));
    }
    let dma = if config.dma_latency {
        match DmaLatency::hold_zero() {
            Ok(d) => Some(d),
            Err(e) => {
                warnings.push(format!(
                    "could not hold /dev/cpu_dma_latency at 0 ({e}): deep idle states may add latency"
                ));
                None
            }
        }
    } else {
        None
    };
    let (hooks, watcher) = hooks_for(config, &mut warnings)?;
    let hooks = Arc::new(hooks);
    let cpus: Vec<u32> = config.cpus.iter().collect();
    let barrier = Arc::new(Barrier::new(cpus.len() + 1));
    let failed = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for (i, &cpu) in cpus.iter().enumerate() {
        let (barrier, failed) = (Arc::clone(&barrier), Arc::clone(&failed));
        let live = Arc::clone(&live[i]);
        let cfg = config.clone();
        let cancel = Arc::clone(cancel);
        let hooks = Arc::clone(&hooks);
        let handle = std::thread::Builder::new()
            .name(format!("jitterlab-probe/{cpu}"))
            .stack_size(256 * 1024)
            .spawn(move || -> Result<CpuStats, Error> {
                let setup = (|| {
                    pin_to(cpu)?;
                    sched::set_scheduler(0, cfg.policy, cfg.priority).map_err(|e| {
                        format!(
                            "sched_setscheduler({:?}, {}): {e}",
                            cfg.policy, cfg.priority
                        )
                    })?;
                    prefault_stack();
                    Ok::<(), String>(())
                })();
                if setup.is_err() {
                    failed.store(true, Ordering::SeqCst);
                }
                barrier.wait();
                setup.map_err(Error::Setup)?;
                if failed.load(Ordering::SeqCst) {
                    return Err(Error::Setup("another probe thread failed to start".into()));
                }
                let mut stats = CpuStats::new(cpu, cfg.deadline_ns);
                measure(
                    &mut Monotonic,
                    cfg.interval_ns,
                    cfg.stop,
                    &mut stats,
                    &cancel,
                    &live,
                    &hooks,
                );
                Ok(stats)
            })
            .map_err(|e| Error::Setup(format!("spawning the probe thread for CPU {cpu}: {e}")))?;
        handles.push(handle);
    }
    let start = Instant::now();
    let start_ns = Monotonic.now_ns();
    barrier.wait();
    let mut stats = Vec::new();
    let mut first_error = None;
    for h in handles {
        match h.join() {
            Ok(Ok(s)) => stats.push(s),
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(_) => {
                first_error.get_or_insert(Error::Setup("a probe thread panicked".into()));
            }
        }
    }
    let wall_ns = start.elapsed().as_nanos() as u64;
    let ledger = watcher.map(|w| w.finish(start_ns));
    let break_hit = hooks.hit.get().copied();
    let break_buffers = hooks
        .breaker
        .as_ref()
        .map(|b| b.buffers().iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    let dma_latency_held = dma.is_some();
    drop(dma);
    if mlocked {
        // SAFETY: no preconditions.
        unsafe { libc::munlockall() };
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok(Run {
        cpus: stats,
        mlocked,
        dma_latency_held,
        cancelled: cancel.load(Ordering::Relaxed) && break_hit.is_none(),
        wall_ns,
        warnings,
        ledger,
        break_hit,
        break_buffers,
    })
}

/// The hooks of a run: the spike watcher (off the measured CPUs where possible) and the
/// trace breaker on the live tracefs.
fn hooks_for(
    config: &Config,
    warnings: &mut Vec<String>,
) -> Result<(Hooks, Option<Watcher>), Error> {
    let mut hooks = Hooks {
        break_ns: config.break_ns,
        ..Hooks::default()
    };
    let mut watcher = None;
    let root = jitterlab_host::Root::live();
    if let Some(threshold) = config.spike_threshold_ns {
        let others = root
            .read_cpu_list("/sys/devices/system/cpu/online")
            .ok()
            .map(|online| online.difference(&config.cpus))
            .filter(|set| !set.is_empty());
        if others.is_none() {
            warnings.push(
                "the spike watcher shares the measured CPUs: it reads /proc/interrupts every period"
                    .into(),
            );
        }
        // Half a period keeps the counted window near one interval, at a bounded cost.
        let period = Duration::from_nanos((config.interval_ns / 2).max(500_000));
        let (w, sink) = Watcher::start(
            threshold,
            Box::new(ProcCounters),
            Box::new(Monotonic),
            period,
            others,
        )
        .map_err(|e| Error::Setup(format!("starting the spike watcher: {e}")))?;
        hooks.spikes = Some(sink);
        watcher = Some(w);
    }
    if let Some(limit) = config.break_ns {
        match jitterlab_host::tracefs::find(&root) {
            Ok(Some(mount)) => {
                let breaker = jitterlab_host::tracefs::Breaker::arm(&root, &mount, limit / 1000)
                    .map_err(|e| Error::Setup(format!("arming --break: {e}")))?;
                hooks.breaker = Some(breaker);
            }
            Ok(None) => warnings
                .push("tracefs is not mounted: --break ends the run but marks no trace".into()),
            Err(e) => warnings.push(format!(
                "tracefs not found ({e}): --break ends the run but marks no trace"
            )),
        }
    }
    Ok((hooks, watcher))
}

/// One live entry per CPU of the configuration, in CPU order.
pub fn live_for(config: &Config) -> Vec<Arc<Live>> {
    config
        .cpus
        .iter()
        .map(|cpu| {
            Arc::new(Live {
                cpu,
                ..Live::default()
            })
        })
        .collect()
}

/// Pins the calling thread to `cpu`. When the process's cpuset keeps it off the CPU
/// (EINVAL: `jitterlab isolate` put everything else on the housekeeping CPUs), the
/// thread first joins the partition's isolated cpuset — one thread, so the load
/// generators and the spike watcher stay on the housekeeping CPUs.
pub(crate) fn pin_to(cpu: u32) -> Result<(), String> {
    let one = CpuSet::from_iter([cpu]);
    let pinned = match sched::set_affinity(0, &one) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            match jitterlab_host::partition::enter_cpu(cpu) {
                Ok(true) => sched::set_affinity(0, &one),
                Ok(false) => Err(e),
                Err(pe) => return Err(format!("sched_setaffinity(CPU {cpu}): {e}; {pe}")),
            }
        }
        r => r,
    };
    pinned.map_err(|e| format!("sched_setaffinity(CPU {cpu}): {e}"))
}

/// Touches 64 KiB of stack so the measuring loop never faults on it.
#[inline(never)]
fn prefault_stack() {
    let mut buf = [0u8; 64 * 1024];
    for i in (0..buf.len()).step_by(4096) {
        buf[i] = 1;
    }
    std::hint::black_box(&buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Fake;

    fn run_fake(lateness: Vec<u64>, interval: u64, stop: Stop) -> CpuStats {
        let mut clock = Fake::new(1_000_000, lateness);
        let mut stats = CpuStats::new(0, interval);
        measure(
            &mut clock,
            interval,
            stop,
            &mut stats,
            &AtomicBool::new(false),
            &Live::default(),
            &Hooks::default(),
        );
        stats
    }

    #[test]
    fn latency_is_wakeup_minus_programmed_time() {
        let s = run_fake(vec![5, 10, 0, 7], 1000, Stop::Loops(4)).summary();
        assert_eq!(s.samples, 4);
        assert_eq!((s.min_ns, s.max_ns), (0, 10));
        assert!((s.avg_ns - 5.5).abs() < 1e-9);
        assert_eq!(s.missed_periods, 0);
    }

    #[test]
    fn late_wakeups_skip_and_count_periods() {
        // 2.5 intervals late: the wake-ups for the two overrun periods never happen.
        let s = run_fake(vec![0, 2500, 0, 1000, 999], 1000, Stop::Loops(5)).summary();
        assert_eq!(s.samples, 5);
        assert_eq!(
            s.missed_periods,
            2 + 1,
            "2 for 2500 ns, 1 for exactly one interval"
        );
        assert_eq!(s.deadline_misses, 1, "only 2500 > 1000");
        assert_eq!(s.max_ns, 2500);
    }

    #[test]
    fn duration_stop() {
        // 1 ms interval for 10 ms: 10 wake-ups, on time.
        let s = run_fake(vec![], 1_000_000, Stop::DurationNs(10_000_000)).summary();
        assert_eq!(s.samples, 10);
    }

    #[test]
    fn cancel_stops_the_loop() {
        let mut clock = Fake::new(0, vec![]);
        let mut stats = CpuStats::new(0, 1);
        let cancel = AtomicBool::new(true);
        measure(
            &mut clock,
            1000,
            Stop::Loops(1_000_000),
            &mut stats,
            &cancel,
            &Live::default(),
            &Hooks::default(),
        );
        assert_eq!(stats.samples(), 1);
    }
}
