//! The user-space noise probe: a thread pinned to one CPU reads the clock in a tight
//! loop and records every gap between two readings above a threshold — time the CPU
//! was taken from it (an interrupt, a softirq, a kernel thread, the hypervisor). What
//! rtla osnoise measures where the kernel has its tracer; this works without one.
//!
//! A run is bounded in time and measures one CPU; a caller measures several CPUs one
//! after another, never all at once (a real-time spinner on every CPU would starve the
//! machine). The interrupt and softirq counts of the CPU over the same window are read
//! from /proc/interrupts and /proc/softirqs before and after.

use std::time::Duration;

use jitterlab_host::irqs::CpuCounters;
use jitterlab_host::tasks::Policy;
use jitterlab_host::Root;
use serde::Serialize;

use crate::Error;

/// What to measure.
#[derive(Clone, Debug)]
pub struct NoiseConfig {
    /// The CPU.
    pub cpu: u32,
    /// How long, ns (at most 60 s).
    pub duration_ns: u64,
    /// A gap between two clock readings longer than this is noise, ns.
    pub threshold_ns: u64,
    /// The probe thread's policy; SCHED_FIFO keeps other threads off (their time is
    /// noise the scheduler could avoid), SCHED_OTHER shares the CPU with them.
    pub policy: Policy,
    /// Its real-time priority (for SCHED_FIFO).
    pub priority: u32,
    /// Trace markers the probe thread writes just before its first clock reading and
    /// just after its last, so that a trace of the CPU can put the window on its own
    /// clock (`jitterlab_analyze::noise_account`).
    pub markers: Option<NoiseMarkers>,
}

/// The trace markers around the probe's window.
#[derive(Clone, Debug)]
pub struct NoiseMarkers {
    /// The `trace_marker` file (a host path) of the buffer that records the CPU.
    pub path: std::path::PathBuf,
    /// The line written before the window.
    pub start: String,
    /// The line written after it.
    pub end: String,
}

/// The longest gaps kept, longest first.
pub const KEPT_GAPS: usize = 10;

/// One gap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// When it began, ns after the window's start.
    pub at_ns: u64,
    /// How long, ns.
    pub ns: u64,
}

/// What the loop saw.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Gaps {
    /// The window, ns (from the first reading to the last).
    pub window_ns: u64,
    /// The time in gaps above the threshold, ns.
    pub noise_ns: u64,
    /// How many gaps.
    pub count: u64,
    /// The clock readings made.
    pub readings: u64,
    /// The longest gaps, longest first (at most [`KEPT_GAPS`]).
    pub longest: Vec<Gap>,
    /// Every gap in the order they came, up to [`ALL_GAPS`] (the rest are counted
    /// only): what a trace of the window accounts for, gap by gap. Not written out.
    #[serde(skip)]
    pub all: Vec<Gap>,
}

/// At most this many gaps are kept in [`Gaps::all`] (16 bytes each).
pub const ALL_GAPS: usize = 1 << 20;

impl Gaps {
    /// The share of the window the loop had, in parts per million.
    pub fn available_ppm(&self) -> u64 {
        if self.window_ns == 0 {
            return 0;
        }
        let had = self.window_ns.saturating_sub(self.noise_ns) as u128;
        (had * 1_000_000 / self.window_ns as u128) as u64
    }
}

/// The loop: reads `now` until it passes `duration_ns` after the first reading, and
/// keeps the gaps above `threshold_ns`.
pub fn scan(mut now: impl FnMut() -> u64, duration_ns: u64, threshold_ns: u64) -> Gaps {
    let start = now();
    let end = start.saturating_add(duration_ns);
    let mut g = Gaps::default();
    // Room for every gap of a noisy window, made before it starts: growing the vector
    // inside the loop would make gaps of its own.
    g.all
        .reserve((duration_ns / 50_000).clamp(1024, ALL_GAPS as u64) as usize);
    let mut prev = start;
    loop {
        let t = now();
        g.readings += 1;
        let d = t.saturating_sub(prev);
        if d > threshold_ns {
            g.noise_ns += d;
            g.count += 1;
            if g.all.len() < ALL_GAPS {
                g.all.push(Gap {
                    at_ns: prev - start,
                    ns: d,
                });
            }
            if g.longest.len() < KEPT_GAPS || g.longest.last().is_some_and(|l| d > l.ns) {
                let gap = Gap {
                    at_ns: prev - start,
                    ns: d,
                };
                let i = g.longest.partition_point(|x| x.ns >= d);
                g.longest.insert(i, gap);
                g.longest.truncate(KEPT_GAPS);
            }
        }
        prev = t;
        if t >= end {
            break;
        }
    }
    g.window_ns = prev - start;
    g
}

/// The result on one CPU.
#[derive(Clone, Debug, Serialize)]
pub struct NoiseResult {
    /// The CPU.
    pub cpu: u32,
    /// The threshold, ns.
    pub threshold_ns: u64,
    /// The policy the probe ran with, as ps prints it (`FF` SCHED_FIFO, `TS` SCHED_OTHER).
    pub policy: String,
    /// Its priority.
    pub priority: u32,
    /// The gaps.
    #[serde(flatten)]
    pub gaps: Gaps,
    /// The share of the window the probe had, parts per million.
    pub available_ppm: u64,
    /// Interrupts and softirqs on the CPU over the window (`IRQ 36 virtio1-req.0`,
    /// `LOC`, `softirq TIMER`), largest first.
    pub interrupts: Vec<(String, u64)>,
    /// Times another thread took the CPU from the probe over the window (its
    /// `nonvoluntary_ctxt_switches`): the gaps that were threads, not interrupts or the
    /// hypervisor.
    pub preemptions: Option<u64>,
    /// The probe's own CPU time over the window (`/proc/thread-self/schedstat`), ns; the
    /// window minus this is the time others had the CPU as the scheduler counts it.
    pub own_runtime_ns: Option<u64>,
}

/// The probe thread's own counters: involuntary context switches and CPU time, ns.
fn own_counters() -> (Option<u64>, Option<u64>) {
    let read = |p: &str| {
        jitterlab_host::read_file_bounded(std::path::Path::new(p), 64 * 1024)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    let switches = read("/proc/thread-self/status").and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok())
    });
    let runtime = read("/proc/thread-self/schedstat")
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()));
    (switches, runtime)
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Runs the probe on `cfg.cpu` for `cfg.duration_ns` in a thread of its own, pinned
/// there with the policy asked for; the live machine only.
pub fn run_noise(root: &Root, cfg: &NoiseConfig) -> Result<NoiseResult, Error> {
    if !root.is_live() {
        return Err(Error::Invalid(
            "the noise probe measures this machine; it cannot take --root".into(),
        ));
    }
    if cfg.duration_ns == 0 || cfg.duration_ns > 60_000_000_000 {
        return Err(Error::Invalid(format!(
            "the noise probe's window must be between 1 ns and 60 s, not {} ns",
            cfg.duration_ns
        )));
    }
    let online = jitterlab_host::cpus::online(root)?;
    if !online.contains(cfg.cpu) {
        return Err(Error::Invalid(format!("CPU {} is not online", cfg.cpu)));
    }
    if cfg.policy.is_realtime() && online.len() < 2 {
        return Err(Error::Invalid(
            "a real-time noise probe needs another online CPU for everything else".into(),
        ));
    }
    let before = CpuCounters::read(root)?;
    let c = cfg.clone();
    // Opened here: the probe thread only writes.
    let marker = match &cfg.markers {
        Some(m) => Some(
            std::fs::OpenOptions::new()
                .write(true)
                .open(&m.path)
                .map_err(|e| Error::Setup(format!("{}: {e}", m.path.display())))?,
        ),
        None => None,
    };
    let handle = std::thread::Builder::new()
        .name(format!("jl-noise/{}", cfg.cpu))
        .spawn(
            move || -> Result<(Gaps, Option<u64>, Option<u64>), String> {
                // Inside a jitterlab partition this thread joins the isolated cpuset.
                crate::probe::pin_to(c.cpu)?;
                if c.policy != Policy::Other {
                    jitterlab_host::sched::set_scheduler(0, c.policy, c.priority).map_err(|e| {
                        format!("sched_setscheduler({:?}, {}): {e}", c.policy, c.priority)
                    })?;
                }
                // Let the migration land before the window starts.
                std::thread::sleep(Duration::from_millis(1));
                let before = own_counters();
                // The lines are made before the window: each marker is one write(2)
                // next to the first or last reading.
                let lines = c
                    .markers
                    .as_ref()
                    .map(|m| (format!("{}\n", m.start), format!("{}\n", m.end)));
                let mark = |line: Option<&String>| {
                    if let (Some(mut f), Some(l)) = (marker.as_ref(), line) {
                        use std::io::Write;
                        // A marker that fails to write leaves the trace without the
                        // window: the account says so, the measure stands.
                        let _ = f.write_all(l.as_bytes());
                    }
                };
                mark(lines.as_ref().map(|l| &l.0));
                let gaps = scan(monotonic_ns, c.duration_ns, c.threshold_ns);
                mark(lines.as_ref().map(|l| &l.1));
                let after = own_counters();
                let delta = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
                Ok((gaps, delta(before.0, after.0), delta(before.1, after.1)))
            },
        )
        .map_err(|e| Error::Setup(format!("spawn: {e}")))?;
    let (gaps, preemptions, own_runtime_ns) = handle
        .join()
        .map_err(|_| Error::Setup("the noise probe thread panicked".into()))?
        .map_err(Error::Setup)?;
    let after = CpuCounters::read(root)?;
    Ok(NoiseResult {
        cpu: cfg.cpu,
        threshold_ns: cfg.threshold_ns,
        policy: cfg.policy.short().to_string(),
        priority: if cfg.policy.is_realtime() {
            cfg.priority
        } else {
            0
        },
        available_ppm: gaps.available_ppm(),
        gaps,
        interrupts: after.delta_on(&before, cfg.cpu),
        preemptions,
        own_runtime_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake clock: readings 10 ns apart, with the given stalls after given readings.
    fn clock(stalls: &[(u64, u64)]) -> impl FnMut() -> u64 + '_ {
        let mut t = 0u64;
        let mut n = 0u64;
        move || {
            n += 1;
            t += 10;
            if let Some((_, ns)) = stalls.iter().find(|(at, _)| *at == n) {
                t += ns;
            }
            t
        }
    }

    #[test]
    fn gaps_above_the_threshold_are_noise() {
        let g = scan(
            clock(&[(100, 5_000), (200, 300), (300, 50_000)]),
            100_000,
            1_000,
        );
        assert_eq!(g.count, 2);
        assert_eq!(g.noise_ns, 5_010 + 50_010);
        assert_eq!(g.longest[0].ns, 50_010);
        assert_eq!(g.longest[1].ns, 5_010);
        assert!(
            g.window_ns >= 100_000 && g.window_ns < 100_020,
            "{}",
            g.window_ns
        );
        let ppm = g.available_ppm();
        assert_eq!(ppm, (g.window_ns - g.noise_ns) * 1_000_000 / g.window_ns);
    }

    #[test]
    fn keeps_the_longest_ten_longest_first() {
        let stalls: Vec<(u64, u64)> = (1..=30).map(|i| (i * 10, i * 1_000)).collect();
        let g = scan(clock(&stalls), 10_000_000, 500);
        assert_eq!(g.count, 30);
        let kept: Vec<u64> = g.longest.iter().map(|x| x.ns).collect();
        let want: Vec<u64> = (21..=30).rev().map(|i| i * 1_000 + 10).collect();
        assert_eq!(kept, want);
    }

    #[test]
    fn a_quiet_clock_has_everything() {
        let g = scan(clock(&[]), 1_000_000, 1_000);
        assert_eq!((g.count, g.noise_ns, g.available_ppm()), (0, 0, 1_000_000));
    }
}
