//! Fake measurements for the pure part's tests: latency phases, noise windows and
//! their trace accounts, built from a few figures.

use jitterlab_analyze::noise_account::{CauseTotal, GapCause, NoiseAccount, NoiseKind};
use jitterlab_cpuset::CpuSet;
use jitterlab_host::lint::{Family, Finding, FixKind, Severity};
use jitterlab_latency::noise_probe::{Gap, Gaps, NoiseResult};
use jitterlab_latency::stats::Summary;

use crate::model::{BlamedSpike, CpuInterrupts, LatencyHalves, LatencyPhase, Measured, NoisePhase};

/// A CPU's latency statistics with this worst case, ns.
pub fn summary(cpu: u32, max_ns: u64) -> Summary {
    Summary {
        cpu,
        samples: 2000,
        min_ns: 5_000,
        avg_ns: 20_000.0,
        stddev_ns: 5_000.0,
        p50_ns: 18_000,
        p90_ns: 25_000,
        p99_ns: 40_000.min(max_ns),
        p99_9_ns: 60_000.min(max_ns),
        p99_99_ns: max_ns,
        max_ns,
        missed_periods: 0,
        deadline_misses: 0,
    }
}

/// A latency phase of 2 s on `cpu` with this worst case in both halves, nothing
/// blamed.
pub fn phase(load: &str, cpu: u32, max_ns: u64) -> LatencyPhase {
    halves(load, cpu, [max_ns, max_ns])
}

/// A latency phase of 2 s on `cpu` with these worst cases in its halves.
pub fn halves(load: &str, cpu: u32, max_ns: [u64; 2]) -> LatencyPhase {
    LatencyPhase {
        halves: vec![LatencyHalves { cpu, max_ns }],
        load: load.into(),
        wall_ns: 2_000_000_000,
        cpus: vec![summary(cpu, max_ns[0].max(max_ns[1]))],
        worst_spike: None,
        steal_ticks: vec![(cpu, 0)],
        interrupts: vec![CpuInterrupts {
            cpu,
            counts: vec![("LOC".into(), 2000)],
        }],
        blamed: None,
        blame_note: Some("tracefs is busy".into()),
        trace: None,
    }
}

/// The phase with its worst wake-up in the trace blamed on `cause`.
pub fn blamed(mut p: LatencyPhase, latency_ns: u64, cause: &str, verdict: &str) -> LatencyPhase {
    p.blamed = Some(BlamedSpike {
        cpu: p.cpus[0].cpu,
        tid: 4242,
        latency_ns,
        t_ns: 500_000_000,
        marked: false,
        cause: cause.into(),
        verdict: verdict.into(),
        lost_events: 0,
    });
    p.blame_note = None;
    p
}

/// A noise window of `window_ns` on `cpu` with these gaps (at, length), untraced.
pub fn noise(cpu: u32, window_ns: u64, gaps: &[(u64, u64)]) -> NoisePhase {
    let all: Vec<Gap> = gaps.iter().map(|&(at_ns, ns)| Gap { at_ns, ns }).collect();
    let mut longest = all.clone();
    longest.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.at_ns.cmp(&b.at_ns)));
    let g = Gaps {
        window_ns,
        noise_ns: all.iter().map(|g| g.ns).sum(),
        count: all.len() as u64,
        readings: window_ns / 30,
        longest,
        all,
    };
    let result = NoiseResult {
        cpu,
        threshold_ns: 1_000,
        policy: "FF".into(),
        priority: 1,
        available_ppm: g.available_ppm(),
        gaps: g,
        interrupts: vec![("LOC".into(), 250)],
        preemptions: Some(0),
        own_runtime_ns: Some(window_ns),
    };
    NoisePhase {
        halves: crate::findings::noise_halves(&result, &[]),
        result,
        traced: None,
        trace_note: Some("tracefs is busy".into()),
        trace: None,
    }
}

/// The noise window with a trace account saying what took each gap (`cause`, what).
pub fn traced(mut n: NoisePhase, causes: &[(NoiseKind, &[&str])]) -> NoisePhase {
    let r = &n.result;
    let gaps: Vec<GapCause> = r
        .gaps
        .all
        .iter()
        .zip(causes)
        .map(|(g, (cause, what))| GapCause {
            at_ns: g.at_ns,
            t_ns: g.at_ns + 1_000_000,
            ns: g.ns,
            cause: *cause,
            what: what.iter().map(|w| w.to_string()).collect(),
            traced_ns: if *cause == NoiseKind::NoEvents {
                0
            } else {
                g.ns
            },
        })
        .collect();
    let mut by_cause: Vec<CauseTotal> = Vec::new();
    for g in &gaps {
        match by_cause.iter_mut().find(|c| c.cause == g.cause) {
            Some(c) => {
                c.gaps += 1;
                c.ns += g.ns;
                c.traced_ns += g.traced_ns;
            }
            None => by_cause.push(CauseTotal {
                cause: g.cause,
                gaps: 1,
                ns: g.ns,
                traced_ns: g.traced_ns,
            }),
        }
    }
    let traced_ns = gaps.iter().map(|g| g.traced_ns).sum();
    let mut described = gaps;
    described.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.at_ns.cmp(&b.at_ns)));
    described.truncate(jitterlab_analyze::noise_account::DETAILED_GAPS);
    n.traced = Some(NoiseAccount {
        cpu: r.cpu,
        start_ns: 1_000_000_000,
        end_ns: 1_000_000_000 + r.gaps.window_ns,
        irq_ns: 0,
        vector_ns: 0,
        timer_ns: 0,
        softirq_ns: 0,
        thread_ns: traced_ns,
        idle_ns: 0,
        traced_ns,
        takers: Vec::new(),
        traced_in_gaps_ns: traced_ns,
        shift_ns: 0,
        by_cause,
        gaps: described,
        lost_events: false,
    });
    n.trace_note = None;
    n.halves = crate::findings::noise_phase_halves(&n.result, n.traced.as_ref());
    n
}

/// What was measured: these latency phases and noise windows.
pub fn measured(latency: Vec<LatencyPhase>, noise: Vec<NoisePhase>) -> Measured {
    Measured { latency, noise }
}

/// The static findings of a VM whose kernel is not fully preemptible and whose
/// real-time tasks are throttled: what the measured findings link to.
pub fn statics(rt: &CpuSet) -> Vec<Finding> {
    vec![
        Finding::new(
            "kernel.preempt_mode",
            Family::Kernel,
            Severity::Medium,
            "the kernel runs without kernel preemption",
        )
        .evidence("/sys/kernel/debug/sched/preempt", "none")
        .fix(
            FixKind::Boot,
            "preempt=full",
            "after the reboot: jitterlab audit",
        ),
        Finding::new(
            "irqs.on_rt_cpu",
            Family::Irqs,
            Severity::Medium,
            "IRQ 26 ttyS0 is delivered to CPU 1",
        )
        .subject("IRQ 26")
        .cpus(rt)
        .evidence("/proc/irq/26/effective_affinity_list", "1")
        .fix(
            FixKind::Jitterlab,
            "jitterlab irq set 26 0",
            "jitterlab verify 1",
        ),
        Finding::new(
            "sched.rt_runtime",
            Family::Scheduler,
            Severity::Low,
            "real-time tasks are throttled (kernel.sched_rt_runtime_us = 950000)",
        )
        .evidence("/proc/sys/kernel/sched_rt_runtime_us", "950000")
        .fix(
            FixKind::Sysctl,
            "sysctl -w kernel.sched_rt_runtime_us=-1",
            "sysctl kernel.sched_rt_runtime_us",
        ),
        Finding::new(
            "env.hypervisor",
            Family::Environment,
            Severity::Medium,
            "this is a virtual machine under KVM",
        )
        .evidence("CPUID 0x40000000", "KVMKVMKVM")
        .fix(FixKind::Host, "run on bare metal", "jitterlab audit")
        .effect(2_000_000),
    ]
}
