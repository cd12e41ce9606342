//! The probe on this machine: totals, and missed periods under a deliberate stall.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jitterlab_cpuset::CpuSet;
use jitterlab_host::sched;
use jitterlab_host::tasks::Policy;
use jitterlab_host::testing::{is_root, skip};
use jitterlab_latency::probe::live_for;
use jitterlab_latency::{run, Config, Stop};

fn config(cpu: u32, policy: Policy, priority: u32, stop: Stop) -> Config {
    Config {
        cpus: CpuSet::from_iter([cpu]),
        policy,
        priority,
        interval_ns: 1_000_000,
        stop,
        deadline_ns: 1_000_000,
        dma_latency: false,
        force: false,
        spike_threshold_ns: None,
        break_ns: None,
    }
}

#[test]
fn histogram_totals_equal_samples() {
    // SCHED_OTHER needs no privilege.
    let c = config(0, Policy::Other, 0, Stop::Loops(200));
    let r = run(&c, &Arc::new(AtomicBool::new(false)), &live_for(&c)).unwrap();
    assert_eq!(r.cpus.len(), 1);
    let s = r.cpus[0].summary();
    assert_eq!(s.samples, 200);
    let total: u64 = r.cpus[0].buckets().iter().map(|b| b.count).sum();
    assert_eq!(total, 200);
    assert!(s.min_ns <= s.p50_ns && s.p50_ns <= s.p99_ns && s.p99_ns <= s.max_ns);
    // 200 periods of 1 ms take at least 200 ms, plus any skipped ones.
    assert!(r.wall_ns >= 200_000_000 + s.missed_periods * 1_000_000 - 1_000_000);
}

#[test]
fn a_stall_longer_than_several_intervals_counts_missed_periods() {
    if !is_root() {
        skip("SCHED_FIFO needs root");
        return;
    }
    let online =
        CpuSet::parse_list(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap())
            .unwrap();
    // The last online CPU; with one CPU only the hog would stall the whole machine.
    let Some(cpu) = online.last().filter(|_| online.len() >= 2) else {
        skip("needs two online CPUs");
        return;
    };
    let c = config(cpu, Policy::Fifo, 10, Stop::DurationNs(400_000_000));
    // A higher-priority FIFO hog on the measured CPU for 20 ms (20 intervals),
    // 150 ms into the run; bounded by time, on one CPU only.
    let hog = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        sched::set_affinity(0, &CpuSet::from_iter([cpu])).unwrap();
        sched::set_scheduler(0, Policy::Fifo, 50).unwrap();
        let end = Instant::now() + Duration::from_millis(20);
        while Instant::now() < end {
            std::hint::spin_loop();
        }
        sched::set_scheduler(0, Policy::Other, 0).unwrap();
    });
    let r = run(&c, &Arc::new(AtomicBool::new(false)), &live_for(&c)).unwrap();
    hog.join().unwrap();
    let s = r.cpus[0].summary();
    assert!(
        s.max_ns >= 15_000_000,
        "the stall shows as one long latency: {s:?}"
    );
    assert!(
        s.missed_periods >= 15,
        "about 20 periods were skipped: {s:?}"
    );
    assert!(s.deadline_misses >= 1);
    // Every period of the run is either a sample or a missed period: at least the
    // 400 ms asked for, and no more than the run's wall time holds (a host stall at the
    // end lengthens the run; a busy machine delays the joining thread, so the wall time
    // bounds the count from above only).
    let periods = s.samples + s.missed_periods;
    let elapsed = r.wall_ns / 1_000_000;
    assert!(periods >= 399, "{periods} periods: {s:?}");
    assert!(
        periods <= elapsed + 2,
        "{periods} periods in {elapsed} ms: {s:?}"
    );
}
