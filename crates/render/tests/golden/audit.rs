//! `jitterlab audit`, static, on the audit fixture trees of the host crate: this VM
//! untuned (audit-vm2) and a made-up tuned 16-CPU machine whose isolation options
//! disagree (audit-rt16); and the comparison of the two. And the measured part: this
//! VM's static audit with a quick audit's measures of CPU 1.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use jitterlab_analyze::noise_account::{CauseTotal, GapCause, NoiseAccount, NoiseKind, Taker};
use jitterlab_audit::{
    add_measured, audit, judge, AuditReport, AuditRequest, BlamedSpike, CpuInterrupts,
    LatencyHalves, LatencyPhase, Measured, Mode, NoiseHalf, NoisePhase,
};
use jitterlab_host::Root;
use jitterlab_latency::noise_probe::{Gap, Gaps, NoiseResult};
use jitterlab_latency::spikes::{CountDelta, Spike};
use jitterlab_latency::stats::Summary;
use jitterlab_render::AuditSummary;

use crate::{both, check, text, workspace};

fn static_audit(tree: &str, cpus: Option<&str>) -> AuditReport {
    let root = Root::at(workspace(&format!("host/tests/fixtures/{tree}")));
    let req = AuditRequest {
        cpus: cpus.map(|c| jitterlab_cpuset::CpuSet::parse_list(c).unwrap()),
        mode: Mode::Static,
        compare: None,
        keep_traces: None,
    };
    let mut r = audit(&root, &req, &Arc::new(AtomicBool::new(false)), |_| {}).unwrap();
    r.wall_ns = 0; // the only figures that change from run to run
    r.start_wall_ns = 0;
    r
}

#[test]
fn audit_vm2() {
    let r = static_audit("audit-vm2", None);
    both("audit-vm2", &r);
    summary("audit-vm2", &r);
}

/// What `jitterlab audit` prints without `--verbose`: a screen that ends with what
/// the verdict and the exit status mean; its JSON is the whole report's.
fn summary(name: &str, r: &AuditReport) {
    let s = text(&AuditSummary(r));
    assert!(
        s.lines().count() <= 40,
        "{name}: {} lines\n{s}",
        s.lines().count()
    );
    assert!(s.contains("Exit status"), "{s}");
    assert_eq!(crate::json(&AuditSummary(r)), crate::json(r));
    check(&format!("{name}.summary.text"), &s);
}

#[test]
fn audit_rt16() {
    both("audit-rt16", &static_audit("audit-rt16", None));
}

#[test]
fn audit_compared() {
    let old = static_audit("audit-vm2", Some("1"));
    let old_json = crate::json(&old);
    let mut now = static_audit("audit-irqbalance", Some("1"));
    now.compare = Some(jitterlab_audit::compare("before.json", &old_json, &now).unwrap());
    let t = text(&now);
    let tail = &t[t.find("compared with").unwrap()..];
    check("audit-compare.text", tail);
    let s = text(&AuditSummary(&now));
    check(
        "audit-compare.summary.text",
        &s[s.find("compared with").unwrap()..],
    );
}

/// One latency phase on CPU 1: its statistics, worst spike and blamed wake-up, and
/// the worst wake-up of its second half (the first has the phase's worst).
fn phase(
    load: &str,
    max_us: u64,
    second_half_us: u64,
    blamed: Option<(u64, &str, &str)>,
) -> LatencyPhase {
    LatencyPhase {
        halves: vec![LatencyHalves {
            cpu: 1,
            max_ns: [max_us * 1000, second_half_us * 1000],
        }],
        load: load.into(),
        wall_ns: 2_000_000_000,
        cpus: vec![Summary {
            cpu: 1,
            samples: 2000,
            min_ns: 9_000,
            avg_ns: 31_000.0,
            stddev_ns: 12_000.0,
            p50_ns: 28_700,
            p90_ns: 41_000,
            p99_ns: 70_700,
            p99_9_ns: max_us * 900,
            p99_99_ns: max_us * 1000,
            max_ns: max_us * 1000,
            missed_periods: 0,
            deadline_misses: 1,
        }],
        worst_spike: Some(Spike {
            cpu: 1,
            sample: 55,
            t_ns: 55_630_620,
            latency_ns: max_us * 1000,
            window_ns: Some(1_000_000),
            interrupts: vec![CountDelta {
                name: "LOC".into(),
                count: 2,
            }],
        }),
        steal_ticks: vec![(1, 0)],
        interrupts: vec![CpuInterrupts {
            cpu: 1,
            counts: vec![
                ("LOC".into(), 500),
                ("softirq RCU".into(), 90),
                ("IRQ 36 virtio1-req.0".into(), 12),
            ],
        }],
        blamed: blamed.map(|(us, cause, verdict)| BlamedSpike {
            cpu: 1,
            tid: 9343,
            latency_ns: us * 1000,
            t_ns: 55_630_620,
            marked: false,
            cause: cause.into(),
            verdict: verdict.into(),
            lost_events: 0,
        }),
        blame_note: blamed.is_none().then(|| {
            "no wake-up of the probe at its real-time priority with a recorded switch-in among \
             the worst of the trace (this kernel logs few switches out of idle: a wake-up \
             without one is only bounded)"
                .into()
        }),
        trace: blamed.map(|_| format!("audit-traces/{load}.dat")),
    }
}

/// The noise window of CPU 1 as the trace saw it: the tick, a kworker, the fair
/// server's 50 ms after 950 ms of SCHED_FIFO, and gaps with no event (the host).
fn noise() -> NoisePhase {
    let gap = |at_ns, ns, cause, what: &[&str], traced_ns| GapCause {
        at_ns,
        t_ns: at_ns + 9_288_000,
        ns,
        cause,
        what: what.iter().map(|w| w.to_string()).collect(),
        traced_ns,
    };
    let longest = [
        (954_683_571, 52_058_171),
        (930_680_000, 51_900),
        (41_990_000, 40_100),
    ];
    NoisePhase {
        // The halves without the fair server's 52 ms (evidence of sched.rt_runtime).
        halves: vec![
            NoiseHalf {
                window_ns: 505_000_000,
                noise_ns: 3_100_000,
                gaps: 270,
                longest_ns: 40_100,
                available_ppm: 993_861,
            },
            NoiseHalf {
                window_ns: 505_000_000,
                noise_ns: 3_191_829,
                gaps: 267,
                longest_ns: 51_900,
                available_ppm: 993_679,
            },
        ],
        result: NoiseResult {
            cpu: 1,
            threshold_ns: 1_000,
            policy: "FF".into(),
            priority: 1,
            gaps: Gaps {
                window_ns: 1_010_000_000,
                noise_ns: 58_350_000,
                count: 538,
                readings: 37_000_000,
                longest: longest
                    .iter()
                    .map(|&(at_ns, ns)| Gap { at_ns, ns })
                    .collect(),
                all: Vec::new(),
            },
            available_ppm: 942_040,
            interrupts: vec![("LOC".into(), 262), ("softirq SCHED".into(), 20)],
            preemptions: Some(2),
            own_runtime_ns: Some(951_000_000),
        },
        traced: Some(NoiseAccount {
            cpu: 1,
            start_ns: 11_690_432_494_550,
            end_ns: 11_691_442_516_723,
            irq_ns: 0,
            vector_ns: 1_579_747,
            timer_ns: 178_273,
            softirq_ns: 76_308,
            thread_ns: 30_300,
            idle_ns: 52_036_843,
            traced_ns: 53_710_000,
            takers: vec![Taker {
                kind: NoiseKind::Idle,
                name: "idle".into(),
                count: 1,
                ns: 52_036_843,
            }],
            traced_in_gaps_ns: 53_710_000,
            shift_ns: -4_750,
            by_cause: vec![
                CauseTotal {
                    cause: NoiseKind::Idle,
                    gaps: 2,
                    ns: 52_100_000,
                    traced_ns: 52_070_000,
                },
                CauseTotal {
                    cause: NoiseKind::Vector,
                    gaps: 241,
                    ns: 3_890_000,
                    traced_ns: 1_570_000,
                },
                CauseTotal {
                    cause: NoiseKind::NoEvents,
                    gaps: 291,
                    ns: 2_250_000,
                    traced_ns: 0,
                },
                CauseTotal {
                    cause: NoiseKind::Softirq,
                    gaps: 4,
                    ns: 110_000,
                    traced_ns: 70_000,
                },
            ],
            gaps: vec![
                gap(
                    954_683_571,
                    52_058_171,
                    NoiseKind::Idle,
                    &["idle", "local_timer"],
                    52_036_843,
                ),
                gap(
                    930_680_000,
                    51_900,
                    NoiseKind::Vector,
                    &["local_timer", "TIMER"],
                    23_800,
                ),
                gap(41_990_000, 40_100, NoiseKind::NoEvents, &[], 0),
            ],
            lost_events: false,
        }),
        trace_note: None,
        trace: Some("audit-traces/noise-cpu1.dat".into()),
    }
}

/// The static audit of this VM with what a quick audit measured on CPU 1: the findings
/// the measures make (latency, noise, the host's stalls, the blamed spikes linked to
/// the static findings they point at, the throttling as evidence of sched.rt_runtime),
/// the verdicts judged again.
#[test]
fn audit_measured() {
    let mut r = static_audit("audit-vm2", Some("1"));
    let m = Measured {
        latency: vec![
            phase(
                "idle",
                958,
                85,
                Some((
                    394,
                    "task",
                    "rustc-9334 (lower priority: not preemptible there?) ran for 100% of the window",
                )),
            ),
            phase("cpu:2 on CPU 0-1", 703, 640, None),
        ],
        noise: vec![noise()],
    };
    add_measured(&mut r.findings, &m);
    let (verdicts, recommendations) = judge(&r.rt_cpus, &r.findings);
    r.verdict = verdicts.iter().map(|v| v.verdict).max().unwrap();
    r.verdicts = verdicts;
    r.recommendations = recommendations;
    r.mode = "quick".into();
    r.needs_root.clear();
    r.measured = Some(m);
    for id in [
        "measured.latency",
        "measured.noise",
        "measured.host_stall",
        "measured.spike",
    ] {
        assert!(r.findings.iter().any(|f| f.id == id), "no {id}");
    }
    // The throttling is evidence of the setting that makes it.
    let rt = r
        .findings
        .iter()
        .find(|f| f.id == "sched.rt_runtime")
        .unwrap();
    assert!(rt.what.contains("measured: the noise probe"), "{}", rt.what);
    both("audit-measured", &r);
    summary("audit-measured", &r);
}

/// An unfit RT CPU: the summary's last lines say that exit status 3 is the audit's
/// answer, not a failed audit.
#[test]
fn audit_unfit_summary_explains_its_status() {
    let mut r = static_audit("audit-vm2", None);
    r.verdict = jitterlab_audit::Verdict::Unfit;
    for v in &mut r.verdicts {
        v.verdict = jitterlab_audit::Verdict::Unfit;
    }
    let s = text(&AuditSummary(&r));
    check(
        "audit-unfit.summary.text",
        &s[s.find("\nverdict UNFIT").unwrap()..],
    );
}
