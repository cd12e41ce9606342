//! The noise probe on this machine (root, two CPUs): an idle CPU is nearly all
//! available, and a bounded SCHED_FIFO hog of known length shows up as one gap of that
//! length at the moment it ran.

use std::time::{Duration, Instant};

use jitterlab_cpuset::CpuSet;
use jitterlab_host::sched;
use jitterlab_host::tasks::Policy;
use jitterlab_host::testing::{host_lock, skip, wait_for_rt_budget};
use jitterlab_host::{running_as_root, Root};
use jitterlab_latency::{run_noise, NoiseConfig, NoiseMarkers};

fn last_cpu() -> Option<u32> {
    let online =
        CpuSet::parse_list(&std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?)
            .ok()?;
    online.last().filter(|_| online.len() >= 2)
}

fn config(cpu: u32, ms: u64) -> NoiseConfig {
    config_marked(cpu, ms, None)
}

fn config_marked(cpu: u32, ms: u64, markers: Option<NoiseMarkers>) -> NoiseConfig {
    NoiseConfig {
        cpu,
        duration_ns: ms * 1_000_000,
        threshold_ns: 1_000,
        policy: Policy::Fifo,
        priority: 1,
        markers,
    }
}

#[test]
fn an_idle_cpu_is_nearly_all_available() {
    let _lock = host_lock().unwrap();
    if !running_as_root() {
        return skip("SCHED_FIFO needs root");
    }
    let Some(cpu) = last_cpu() else {
        return skip("needs two online CPUs");
    };
    let r = run_noise(&Root::live(), &config(cpu, 1000)).unwrap();
    eprintln!(
        "CPU {cpu}: window {} ns, noise {} ns in {} gaps, available {} ppm, longest {:?}, readings {}, interrupts {:?}",
        r.gaps.window_ns, r.gaps.noise_ns, r.gaps.count, r.available_ppm, r.gaps.longest.first(), r.gaps.readings, r.interrupts
    );
    // The window is what was asked, to within a reading; the accounting adds up.
    assert!(r.gaps.window_ns >= 1_000_000_000 && r.gaps.window_ns < 1_000_000_000 + 100_000_000);
    assert_eq!(
        r.available_ppm,
        (r.gaps.window_ns - r.gaps.noise_ns) as u128 as u64 * 1_000_000 / r.gaps.window_ns
    );
    assert!(r.gaps.longest.windows(2).all(|w| w[0].ns >= w[1].ns));
    // Every gap is an interruption: each is at least one interrupt the counters saw
    // (the tick, an IPI, a device), or the hypervisor taking the vCPU (which the guest's
    // counters do not see); the loop itself reads the clock millions of times.
    assert!(r.gaps.readings > 1_000_000, "{}", r.gaps.readings);
    assert!(r.available_ppm > 900_000, "{} ppm", r.available_ppm);
}

#[test]
fn a_fifo_hog_of_known_length_is_one_gap_of_that_length() {
    let _lock = host_lock().unwrap();
    if !running_as_root() {
        return skip("SCHED_FIFO needs root");
    }
    let Some(cpu) = last_cpu() else {
        return skip("needs two online CPUs");
    };
    let hog_ms = 30;
    // The other test's 1 s window may have used up this CPU's real-time budget; this
    // window and hog (830 ms) on top of it would be throttled in the middle, and the
    // hog's gap lengthened by the throttling's (54-68 ms were seen for 30 ms).
    wait_for_rt_budget();
    // Above the probe's priority, on its CPU, 300 ms into the window, for 30 ms. The
    // window's start is the probe's start marker (written to a plain file here, just
    // before its first clock reading), not the hog's own start: a probe slow to start
    // (a loaded machine) would otherwise meet the hog before its window. The hog waits
    // on another CPU, so that it adds nothing to the window but its 30 ms.
    let dir = tempfile::tempdir().unwrap();
    let marks = dir.path().join("marker");
    std::fs::write(&marks, "").unwrap();
    let markers = NoiseMarkers {
        path: marks.clone(),
        start: "start".into(),
        end: "end".into(),
    };
    let other = (0..cpu).next().unwrap_or(0);
    let hog = std::thread::spawn(move || {
        sched::set_affinity(0, &CpuSet::from_iter([other])).unwrap();
        let waiting = Instant::now();
        while std::fs::read_to_string(&marks)
            .unwrap_or_default()
            .is_empty()
        {
            assert!(
                waiting.elapsed() < Duration::from_secs(10),
                "the probe never started"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(300));
        // Real-time first, then onto the probe's CPU: as SCHED_OTHER it would never run
        // there under the probe.
        sched::set_scheduler(0, Policy::Fifo, 50).unwrap();
        sched::set_affinity(0, &CpuSet::from_iter([cpu])).unwrap();
        let end = Instant::now() + Duration::from_millis(hog_ms);
        let t0 = Instant::now();
        let on = unsafe { libc::sched_getcpu() };
        while Instant::now() < end {
            std::hint::spin_loop();
        }
        eprintln!("hog on CPU {on} for {:?}", t0.elapsed());
        sched::set_scheduler(0, Policy::Other, 0).unwrap();
        sched::set_affinity(0, &CpuSet::from_iter([other])).unwrap();
    });
    let r = run_noise(&Root::live(), &config_marked(cpu, 800, Some(markers))).unwrap();
    hog.join().unwrap();
    let want = hog_ms * 1_000_000;
    // The hog's gap: among the longest kept, the one that starts where the hog ran (it
    // slept 300 ms). A host stall elsewhere in the window may be longer: this VM's host
    // stops the vCPU for tens of ms now and then.
    let g = r
        .gaps
        .longest
        .iter()
        .copied()
        .find(|g| g.at_ns > 200_000_000 && g.at_ns < 500_000_000 && g.ns >= want)
        .unwrap_or_else(|| {
            panic!(
                "no gap of the hog's length where it ran: {:?}",
                r.gaps.longest
            )
        });
    eprintln!("the hog's gap: {} ns at {} ns", g.ns, g.at_ns);
    // The gap is the hog, to within a few host stalls.
    assert!(g.ns < want * 13 / 10, "{} ns for a {want} ns hog", g.ns);
    assert!(r.gaps.noise_ns >= g.ns);
}
