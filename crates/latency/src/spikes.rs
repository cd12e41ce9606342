//! The spike ledger: every sample above `--spike-threshold`, with the change in its CPU's
//! interrupt and softirq counts around it.
//!
//! A measuring thread only hands the spike's times to a bounded channel (no allocation,
//! no blocking: a full channel counts a drop). A helper thread that is not real-time —
//! the [`Watcher`] — reads the per-CPU counters every period, keeps a short ring of
//! timestamped snapshots and, for each spike, diffs the last snapshot taken before the
//! previous wake-up against the first taken after the spike's wake-up. The window is
//! reported with the spike: it is the time the counts cover, at least one period plus
//! the latency. The watcher runs at nice -20 (where permitted) so that a load on its
//! CPUs does not starve it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use jitterlab_host::irqs::CpuCounters;
use serde::Serialize;

use crate::clock::Clock;

/// Spikes a run keeps in its ledger; later ones are counted as dropped.
pub const MAX_SPIKES: usize = 100_000;
/// Spikes in flight between the measuring threads and the watcher.
const CHANNEL: usize = 4096;
/// Snapshots the watcher keeps.
const RING: usize = 1024;

/// What a measuring thread reports of a spike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpikeEvent {
    /// The CPU.
    pub cpu: u32,
    /// The sample's number on its CPU (1 = first).
    pub sample: u64,
    /// The previous actual wake-up (or the start), ns on the probe's clock.
    pub prev_wake_ns: u64,
    /// This actual wake-up, ns on the probe's clock.
    pub wake_ns: u64,
    /// The latency, ns.
    pub latency_ns: u64,
}

/// The sending side, shared by the measuring threads.
#[derive(Debug, Clone)]
pub struct SpikeSink {
    threshold_ns: u64,
    tx: SyncSender<SpikeEvent>,
    dropped: Arc<AtomicU64>,
}

impl SpikeSink {
    /// Samples above this go to the ledger, ns.
    pub fn threshold_ns(&self) -> u64 {
        self.threshold_ns
    }

    /// Hands a spike over without blocking or allocating.
    pub fn offer(&self, spike: SpikeEvent) {
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = self.tx.try_send(spike)
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One interrupt source's count change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CountDelta {
    /// `IRQ 36 virtio1-req.0`, `LOC`, `softirq TIMER`.
    pub name: String,
    /// How many more there were on the spike's CPU over the window.
    pub count: u64,
}

/// One ledger entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Spike {
    /// The CPU.
    pub cpu: u32,
    /// The sample's number on its CPU (1 = first).
    pub sample: u64,
    /// When it woke, ns since the start of the measurement.
    pub t_ns: u64,
    /// Its latency, ns.
    pub latency_ns: u64,
    /// The time the counts cover, ns (`None` when no counter snapshot brackets it).
    pub window_ns: Option<u64>,
    /// Interrupt and softirq sources that fired on the CPU in the window, most first.
    pub interrupts: Vec<CountDelta>,
}

/// The ledger of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Ledger {
    /// Samples above this were kept, ns.
    pub threshold_ns: u64,
    /// The spikes, in the order the watcher resolved them (by time per CPU).
    pub spikes: Vec<Spike>,
    /// Spikes not kept: the channel was full or the ledger reached [`MAX_SPIKES`].
    pub dropped: u64,
}

/// Where the watcher gets counts from: the live /proc, or a fake in tests.
pub trait CounterSource: Send {
    /// The current counts, or `None` if they could not be read.
    fn read(&mut self) -> Option<CpuCounters>;
}

/// /proc/interrupts and /proc/softirqs of this machine.
#[derive(Debug, Default)]
pub struct ProcCounters;

impl CounterSource for ProcCounters {
    fn read(&mut self) -> Option<CpuCounters> {
        CpuCounters::read(&jitterlab_host::Root::live()).ok()
    }
}

/// A counter snapshot with the times its read started and ended.
struct Snapshot {
    before_ns: u64,
    after_ns: u64,
    counts: CpuCounters,
}

/// The helper thread that turns spike events into ledger entries.
pub struct Watcher {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Ledger>,
    dropped: Arc<AtomicU64>,
}

impl Watcher {
    /// Starts the watcher: it reads `source` every `period` and resolves spikes against the
    /// snapshots. `start_ns` is the measurement's start on `clock`, for [`Spike::t_ns`].
    /// `cpus` are the CPUs it may run on (`None`: anywhere).
    pub fn start(
        threshold_ns: u64,
        source: Box<dyn CounterSource>,
        clock: Box<dyn Clock + Send>,
        period: Duration,
        cpus: Option<jitterlab_cpuset::CpuSet>,
    ) -> std::io::Result<(Watcher, SpikeSink)> {
        let (tx, rx) = std::sync::mpsc::sync_channel(CHANNEL);
        let stop = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicU64::new(0));
        let sink = SpikeSink {
            threshold_ns,
            tx,
            dropped: Arc::clone(&dropped),
        };
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("jitterlab-spikes".into())
            .spawn(move || {
                if let Some(set) = cpus {
                    // Best effort: off the measured CPUs if there is anywhere else to go.
                    let _ = jitterlab_host::sched::set_affinity(0, &set);
                }
                // Not real-time, but first among equals: a load on the other CPUs must
                // not starve the reads, or the windows grow to hundreds of ms. Best
                // effort (needs CAP_SYS_NICE).
                // SAFETY: setpriority on this thread (tid 0 = the caller).
                unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -20) };
                watch(threshold_ns, source, clock, period, &rx, &flag)
            })?;
        Ok((
            Watcher {
                stop,
                handle,
                dropped,
            },
            sink,
        ))
    }

    /// Resolves what is left and returns the ledger. Call after the measuring threads
    /// have ended; `start_ns` is the measurement's start on the watcher's clock.
    pub fn finish(self, start_ns: u64) -> Ledger {
        self.stop.store(true, Ordering::SeqCst);
        let mut ledger = self.handle.join().unwrap_or_default();
        for s in &mut ledger.spikes {
            s.t_ns = s.t_ns.saturating_sub(start_ns);
        }
        ledger.dropped += self.dropped.load(Ordering::Relaxed);
        ledger
    }
}

/// The watcher's loop. Spike times are absolute until [`Watcher::finish`] makes them
/// relative to the start.
fn watch(
    threshold_ns: u64,
    mut source: Box<dyn CounterSource>,
    mut clock: Box<dyn Clock + Send>,
    period: Duration,
    rx: &Receiver<SpikeEvent>,
    stop: &AtomicBool,
) -> Ledger {
    let mut ring: VecDeque<Snapshot> = VecDeque::with_capacity(RING);
    let mut pending: VecDeque<SpikeEvent> = VecDeque::new();
    let mut ledger = Ledger {
        threshold_ns,
        ..Ledger::default()
    };
    let period_ns = period.as_nanos() as u64;
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let before_ns = clock.now_ns();
        if let Some(counts) = source.read() {
            if ring.len() == RING {
                ring.pop_front();
            }
            ring.push_back(Snapshot {
                before_ns,
                after_ns: clock.now_ns(),
                counts,
            });
        }
        pending.extend(rx.try_iter());
        while let Some(ev) = pending.front().copied() {
            match resolve(&ring, &ev, stopping) {
                Some(spike) => {
                    pending.pop_front();
                    if ledger.spikes.len() < MAX_SPIKES {
                        ledger.spikes.push(spike);
                    } else {
                        ledger.dropped += 1;
                    }
                }
                None => break,
            }
        }
        if stopping && pending.is_empty() {
            // Anything sent after the last drain was sent after the threads ended: none.
            return ledger;
        }
        clock.sleep_until_ns(before_ns + period_ns);
    }
}

/// The ledger entry of `ev`, or `None` while no snapshot after its wake-up exists (unless
/// `last`, when the latest snapshot is used as it is).
fn resolve(ring: &VecDeque<Snapshot>, ev: &SpikeEvent, last: bool) -> Option<Spike> {
    let end = ring.iter().find(|s| s.before_ns >= ev.wake_ns);
    let end = match (end, last) {
        (Some(e), _) => Some(e),
        (None, false) => return None,
        (None, true) => None,
    };
    let start = ring.iter().rev().find(|s| s.after_ns <= ev.prev_wake_ns);
    let (window_ns, interrupts) = match (start, end) {
        (Some(s), Some(e)) => (
            Some(e.after_ns.saturating_sub(s.before_ns)),
            e.counts
                .delta_on(&s.counts, ev.cpu)
                .into_iter()
                .map(|(name, count)| CountDelta { name, count })
                .collect(),
        ),
        _ => (None, Vec::new()),
    };
    Some(Spike {
        cpu: ev.cpu,
        sample: ev.sample,
        t_ns: ev.wake_ns,
        latency_ns: ev.latency_ns,
        window_ns,
        interrupts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Monotonic;

    fn counters(loc: [u64; 2], irq: [u64; 2]) -> CpuCounters {
        CpuCounters {
            cpus: vec![0, 1],
            rows: vec![
                ("IRQ 36 virtio1-req.0".into(), irq.to_vec()),
                ("LOC".into(), loc.to_vec()),
            ],
        }
    }

    fn snap(before_ns: u64, loc: [u64; 2], irq: [u64; 2]) -> Snapshot {
        Snapshot {
            before_ns,
            after_ns: before_ns + 10,
            counts: counters(loc, irq),
        }
    }

    fn event(prev_wake_ns: u64, wake_ns: u64) -> SpikeEvent {
        SpikeEvent {
            cpu: 1,
            sample: 7,
            prev_wake_ns,
            wake_ns,
            latency_ns: 500,
        }
    }

    #[test]
    fn a_spike_is_diffed_between_the_snapshots_that_bracket_its_period() {
        let ring: VecDeque<Snapshot> = [
            snap(0, [0, 10], [0, 0]),
            snap(1000, [1, 12], [0, 0]), // last one ending before the previous wake-up (1100)
            snap(2000, [2, 15], [0, 3]), // inside the period: not a bound
            snap(3000, [3, 17], [0, 4]), // first one starting after the wake-up (2900)
            snap(4000, [4, 30], [0, 9]),
        ]
        .into_iter()
        .collect();
        let s = resolve(&ring, &event(1100, 2900), false).expect("bracketed");
        assert_eq!(s.window_ns, Some(3010 - 1000));
        assert_eq!(
            s.interrupts,
            [
                CountDelta {
                    name: "LOC".into(),
                    count: 5
                },
                CountDelta {
                    name: "IRQ 36 virtio1-req.0".into(),
                    count: 4
                },
            ],
            "CPU 1's column only, largest first"
        );
        assert_eq!((s.cpu, s.sample, s.t_ns, s.latency_ns), (1, 7, 2900, 500));
    }

    #[test]
    fn a_spike_waits_for_a_snapshot_after_it_unless_the_run_is_over() {
        let ring: VecDeque<Snapshot> = [snap(0, [0, 0], [0, 0])].into_iter().collect();
        assert_eq!(resolve(&ring, &event(100, 900), false), None);
        let s = resolve(&ring, &event(100, 900), true).expect("forced at the end");
        assert_eq!(
            s.window_ns, None,
            "no snapshot after the wake-up: no window"
        );
        assert!(s.interrupts.is_empty());
    }

    struct Counting(u64);

    impl CounterSource for Counting {
        fn read(&mut self) -> Option<CpuCounters> {
            // One more LOC on CPU 1 per read.
            self.0 += 1;
            Some(counters([0, self.0], [0, 0]))
        }
    }

    #[test]
    fn the_watcher_resolves_every_spike_it_is_handed() {
        let (watcher, sink) = Watcher::start(
            100,
            Box::new(Counting(0)),
            Box::new(Monotonic),
            Duration::from_micros(200),
            None,
        )
        .unwrap();
        let mut clock = Monotonic;
        let start = clock.now_ns();
        let mut prev = start;
        for i in 1..=20 {
            std::thread::sleep(Duration::from_micros(300));
            let now = clock.now_ns();
            sink.offer(SpikeEvent {
                cpu: 1,
                sample: i,
                prev_wake_ns: prev,
                wake_ns: now,
                latency_ns: 150 + i,
            });
            prev = now;
        }
        let ledger = watcher.finish(start);
        assert_eq!(ledger.threshold_ns, 100);
        assert_eq!(ledger.dropped, 0);
        assert_eq!(ledger.spikes.len(), 20);
        for (i, s) in ledger.spikes.iter().enumerate() {
            assert_eq!(s.sample, i as u64 + 1, "in order");
            assert!(s.t_ns < 10_000_000_000, "relative to the start");
        }
        // Every spike that has a window saw at least one read's worth of LOC.
        assert!(ledger
            .spikes
            .iter()
            .filter(|s| s.window_ns.is_some())
            .all(|s| s.interrupts.iter().any(|d| d.name == "LOC" && d.count >= 1)));
        assert!(ledger.spikes.iter().any(|s| s.window_ns.is_some()));
    }
}
