//! `latency` and `load`: the summary table, the JSON, the SVG plot and cyclictest's
//! histogram of a run built from fixed samples (the probe does not run).

use jitterlab_cpuset::CpuSet;
use jitterlab_host::env::Environment;
use jitterlab_host::tasks::Policy;
use jitterlab_latency::load::{LoadResult, LoadRun, LoadSpec};
use jitterlab_latency::plot::LatencyPlot;
use jitterlab_latency::probe::{BreakHit, Run};
use jitterlab_latency::spikes::{CountDelta, Ledger, Spike};
use jitterlab_latency::stats::CpuStats;
use jitterlab_latency::{Config, CyclictestHistogram, LatencyReport, Stop};
use jitterlab_render::{
    write_cyclictest_histogram, write_latency_plot, Cyclictest, ExportManager, Json, Svg, Target,
    Text,
};

use crate::{both, check};

/// A fixed sequence of latencies: a bulk around `base` ns, a tail, and a few spikes.
fn samples(seed: u64, base: u64, n: usize) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (x >> 33) % 1000;
            match i % 500 {
                499 => base * 40 + r * 10,
                250 => base * 8 + r,
                _ => base + r * base / 1000,
            }
        })
        .collect()
}

fn run() -> Run {
    let cpus = [(0, 2_100), (1, 1_400)]
        .iter()
        .map(|&(cpu, base)| {
            let mut s = CpuStats::new(cpu, 50_000);
            // One sample per ms: 2 s of run, latency over time in 1 ms buckets.
            for (i, l) in samples(u64::from(cpu) + 7, base, 2000)
                .into_iter()
                .enumerate()
            {
                s.record_at(i as u64 * 1_000_000, l);
            }
            s.add_missed(u64::from(cpu));
            s
        })
        .collect();
    Run {
        cpus,
        mlocked: true,
        dma_latency_held: true,
        cancelled: false,
        wall_ns: 2_000_000_000,
        warnings: vec!["CPU 1 has cpuidle states deeper than 10 us enabled".into()],
        ledger: Some(Ledger {
            threshold_ns: 20_000,
            spikes: vec![
                Spike {
                    cpu: 0,
                    sample: 499,
                    t_ns: 499_000_000,
                    latency_ns: 91_000,
                    window_ns: Some(2_000_000),
                    interrupts: vec![
                        CountDelta {
                            name: "LOC".into(),
                            count: 3,
                        },
                        CountDelta {
                            name: "36 virtio1-req.0".into(),
                            count: 1,
                        },
                    ],
                },
                Spike {
                    cpu: 1,
                    sample: 999,
                    t_ns: 999_000_000,
                    latency_ns: 61_000,
                    window_ns: None,
                    interrupts: vec![],
                },
            ],
            dropped: 0,
        }),
        break_hit: None,
        break_buffers: vec![],
    }
}

fn environment() -> Environment {
    Environment {
        hostname: Some("rt-board".into()),
        kernel_release: "6.18.0-test".into(),
        kernel_version: "#1 SMP PREEMPT_DYNAMIC".into(),
        preemption: "PREEMPT_DYNAMIC".into(),
        preempt_rt: false,
        cmdline: "quiet".into(),
        isolated_cpus: CpuSet::new(),
        nohz_full: None,
        clocksource: Some("tsc".into()),
        virtualization: Some("kvm".into()),
        cpuidle_driver: Some("haltpoll".into()),
        cpuidle_governor: Some("haltpoll".into()),
        cpufreq_governors: vec![],
    }
}

fn config() -> Config {
    Config {
        cpus: CpuSet::parse_list("0-1").unwrap(),
        policy: Policy::Fifo,
        priority: 95,
        interval_ns: 1_000_000,
        stop: Stop::Loops(2000),
        deadline_ns: 50_000,
        dma_latency: true,
        force: false,
        spike_threshold_ns: Some(20_000),
        break_ns: None,
    }
}

fn loads() -> Vec<LoadResult> {
    vec![
        LoadResult {
            spec: LoadSpec::Cpu(2),
            ops: 18_000,
            exit: None,
            output: vec![],
            failure: None,
        },
        LoadResult {
            spec: LoadSpec::Cmd("stress-ng --io 1".into()),
            ops: 0,
            exit: Some("exit status: 0".into()),
            output: vec![],
            failure: None,
        },
    ]
}

pub fn report() -> LatencyReport {
    let mut r = LatencyReport::build(
        environment(),
        config(),
        &run(),
        Some(80_000),
        &[(0, 10), (1, 10)],
        &[(0, 10), (1, 12)],
    );
    r.load_cpus = Some(CpuSet::parse_list("0").unwrap());
    r.loads = loads();
    r
}

#[test]
fn latency_report() {
    both("latency", &report());
}

#[test]
fn latency_report_ended_by_break() {
    let mut r = report();
    r.break_ns = Some(50_000);
    r.break_hit = Some(BreakHit {
        cpu: 0,
        latency_ns: 91_000,
        sample: 499,
        traced: true,
    });
    r.break_buffers = vec!["top".into()];
    r.cancelled = true;
    check("latency_break.text", &crate::text(&r));
}

#[test]
fn latency_plot_svg() {
    let mut out = Vec::new();
    write_latency_plot(&LatencyPlot::build(&report()), &mut out).unwrap();
    check("latency_plot.svg", &String::from_utf8(out).unwrap());
}

#[test]
fn cyclictest_histogram() {
    let mut out = Vec::new();
    write_cyclictest_histogram(&CyclictestHistogram::build(&run(), 100), &mut out).unwrap();
    check("latency_cyclictest.txt", &String::from_utf8(out).unwrap());
}

#[test]
fn load_run() {
    both(
        "load",
        &LoadRun::build(
            CpuSet::parse_list("0-1").unwrap(),
            4_000_000_000,
            "duration",
            vec!["sleep".into(), "4".into()],
            Some("exit status: 0".into()),
            loads(),
        ),
    );
}

/// `latency --json=FILE --plot FILE.svg --histogram-cyclictest FILE`: one manager, one
/// call, the same bytes as each format alone.
#[test]
fn latency_outputs_through_the_manager() {
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n);
    let report = report();
    let plot = LatencyPlot::build(&report);
    let hist = CyclictestHistogram::build(&run(), 100);
    let mut outputs = ExportManager::new();
    outputs
        .add(Json, &report, Target::file(path("run.json")))
        .add(Svg, &plot, Target::file(path("run.svg")))
        .add(Cyclictest, &hist, Target::file(path("run.hist")))
        .add(
            Text(jitterlab_render::Style::plain()),
            &report,
            Target::file(path("run.txt")),
        );
    outputs.write_all().unwrap();
    let read = |n: &str| std::fs::read_to_string(path(n)).unwrap();
    assert_eq!(read("run.json"), crate::json(&report));
    assert_eq!(read("run.txt"), crate::text(&report));
    let mut svg = Vec::new();
    write_latency_plot(&plot, &mut svg).unwrap();
    assert_eq!(read("run.svg").as_bytes(), svg);
    let mut h = Vec::new();
    write_cyclictest_histogram(&hist, &mut h).unwrap();
    assert_eq!(read("run.hist").as_bytes(), h);
}
