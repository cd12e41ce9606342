//! `jitterlab experiment`'s result (`ExperimentReport`): its text (golden), its JSON
//! envelope (the fixture `tests/fixtures/experiment.json`, which the browser tests also
//! view, must equal what the renderer writes now), and its HTML report.
//!
//! The experiment is synthetic and fixed: two factors of two levels (four cells), a
//! baseline per level of `load` (`affinity = "unpinned"`), three metrics (a latency in
//! ns, lower is better; a throughput in bit/s, higher is better; drops, whose baseline
//! mostly drops none, so that a ratio's interval is unbounded above), a warm-up run per
//! cell, one failed run, a per-interval throughput series in every run with a step in
//! one of them, the trace explanation of that run, what else the machine did in every
//! run (two runs of one cell and every run of another beside a foreign busy loop: a
//! comparison on the quiet runs only and an unequal one), and the answers.
//! `UPDATE_FIXTURES=1` rewrites the fixture.

use jitterlab_experiment::explain::{
    causes, BlamedSpike, ChainSummary, CpuRun, Explanation, Migration, StepMigrations, Testbed,
    ThreadPlacement,
};
use std::collections::BTreeMap;

use jitterlab_experiment::context::{CpuContext, KernelMessage, RoleTime, RunContext, TaskTime};
use jitterlab_experiment::recipe::Role;
use jitterlab_experiment::report::Answer;
use jitterlab_experiment::stats::Config;
use jitterlab_experiment::{ExperimentReport, Recipe, Rng, Run, Series};
use jitterlab_render::{Exporter, Html};
use serde_json::Value;

use crate::{check, json, text};

const RECIPE: &str = r#"
name = "synthetic"
rounds = 6
warmup = 1
order = "interleaved"
trace = "none"

[factors]
affinity = ["unpinned", "1"]
load = ["none", "cpu:2"]

[workload]
command = "my-server"

[[measure.command]]
name = "rtt.p99"
command = "my-client --rtt"
regex = "p99: ([0-9.]+)"
unit = "ns"
better = "lower"

[[measure.command]]
name = "throughput"
command = "my-client --tput"
regex = "tput: ([0-9.]+)"
unit = "bit/s"
better = "higher"

[[measure.command]]
name = "drops"
command = "my-client --drops"
regex = "drops: ([0-9]+)"
unit = "msg"
better = "lower"

[baseline]
affinity = "unpinned"
"#;

/// The cell, round of the failed run, and of the run whose series has a step.
const FAILED: (usize, u32) = (3, 2);
const STEPPED: (usize, u32) = (3, 1);
/// The measured rounds of cell 2 beside a foreign busy loop (its comparison is made on
/// its quiet runs); every run of cell 3 ran beside one (its comparison is unequal).
const BUSY_ROUNDS_OF_2: [u32; 2] = [1, 4];
/// Drops per measured round: the baseline of cell 2 (cell 0) mostly drops none, so the
/// resampled ratio is unbounded above.
const DROPS: [[f64; 6]; 4] = [
    [0.0, 2.0, 0.0, 1.0, 0.0, 3.0],
    [1.0, 0.0, 2.0, 1.0, 1.0, 0.0],
    [6.0, 7.0, 8.0, 6.0, 7.0, 9.0],
    [3.0, 4.0, 2.0, 5.0, 3.0, 4.0],
];
/// A run's wall time.
const WALL_NS: u64 = 10_000_000_000;
/// The series' interval and length.
const INTERVAL_NS: u64 = 500_000_000;
const POINTS: u64 = 20;

/// The synthetic experiment.
pub fn synthetic() -> ExperimentReport {
    let recipe = Recipe::parse("synthetic.toml", RECIPE).unwrap();
    let cells = recipe.cells();
    assert_eq!(cells.len(), 4);
    let plan = recipe.plan(42);
    // Cells: 0 unpinned/none, 1 unpinned/cpu:2, 2 1/none, 3 1/cpu:2.
    let rtt = [50_000.0, 75_000.0, 40_000.0, 74_500.0];
    let tput = [9.40e9, 8.10e9, 9.41e9, 7.30e9];
    let runs: Vec<Run> = plan
        .runs
        .iter()
        .map(|p| {
            let key = (p.cell, p.round);
            let measured = !p.warmup;
            let mut rng = Rng::derive(7, &[p.seq as u64]);
            let busy =
                p.cell == 3 || (measured && p.cell == 2 && BUSY_ROUNDS_OF_2.contains(&p.round));
            let mut run = Run {
                seq: p.seq,
                cell: p.cell,
                round: p.round,
                warmup: p.warmup,
                traced: measured && key == STEPPED,
                values: Default::default(),
                series: vec![],
                error: None,
                context: Some(context(p.cell, busy, &mut rng)),
            };
            if measured && key == FAILED {
                run.error = Some("my-client --tput: exit status 1".into());
                return run;
            }
            // A warm-up run is slower; so is a run beside a busy loop.
            let warm = if p.warmup { 1.15 } else { 1.0 } * if busy { 1.1 } else { 1.0 };
            let r = (rtt[p.cell] * warm * (1.0 + 0.02 * rng.normal())).round();
            let t = tput[p.cell] / warm * (1.0 + 0.01 * rng.normal());
            run.values.insert("rtt.p99".into(), r);
            run.values.insert("throughput".into(), t.round());
            let drops = if p.warmup {
                5.0
            } else {
                DROPS[p.cell][p.round as usize]
            };
            run.values.insert("drops".into(), drops);
            let t_ns: Vec<u64> = (0..POINTS).map(|i| i * INTERVAL_NS).collect();
            let values = t_ns
                .iter()
                .map(|&at| {
                    let level = if measured && key == STEPPED && at >= 4_000_000_000 {
                        0.88
                    } else {
                        1.0
                    };
                    (t * level * (1.0 + 0.003 * rng.normal())).round()
                })
                .collect();
            run.series.push(Series {
                name: "throughput".into(),
                unit: "bit/s".into(),
                t_ns,
                values,
                steps: vec![],
            });
            run
        })
        .collect();
    let config = Config {
        seed: 42,
        noise: recipe.noise,
        ..Config::default()
    };
    let mut report = ExperimentReport::new(
        &recipe.name,
        recipe.metrics(),
        cells,
        recipe.baselines(),
        runs,
        config,
    );
    let stepped = report
        .runs
        .iter()
        .find(|r| r.traced)
        .expect("the traced run");
    let step = stepped.series[0].steps.first().expect("a step").t_ns;
    report
        .explanations
        .push(explanation(stepped.seq, stepped.cell, step));
    report.spike_causes = causes(&report.explanations);
    report.order = Some(jitterlab_experiment::recipe::Order::Interleaved);
    report.machine = Some(Testbed {
        hostname: "vm2".into(),
        kernel: "6.1.0-28-amd64".into(),
        cpus: "0-1".into(),
        preemption: "PREEMPT_DYNAMIC".into(),
        virtualization: Some("kvm".into()),
    });
    report.answers = answers(&report);
    report
}

/// The experiment's answers as the runner words them, from the report's figures.
fn answers(r: &ExperimentReport) -> Vec<Answer> {
    let stat = |metric: &str, cell: usize| {
        let m = r.metric(metric).unwrap();
        let median = |c: usize| m.cells[c].median.unwrap().value;
        let cmp = m.comparisons.iter().find(|x| x.cell == cell).unwrap();
        (median(cell), median(cmp.baseline), cmp.ratio.unwrap())
    };
    let (pinned, unpinned, ratio) = stat("rtt.p99", 2);
    let (_, _, tput) = stat("throughput", 3);
    let busy = |cell: usize| r.cell_contexts.iter().find(|c| c.cell == cell).unwrap();
    let cpu = |cell: usize, cpu: usize| &busy(cell).cpus[cpu];
    vec![
        Answer {
            topic: "latency".into(),
            text: format!(
                "Pinning my-server to CPU 1 lowers its rtt.p99 by {:.0}% on an otherwise idle machine.",
                (1.0 - ratio.value) * 100.0
            ),
            basis: vec![
                format!(
                    "rtt.p99 median {:.1} us pinned against {:.1} us unpinned, ratio {:.3}",
                    pinned / 1e3,
                    unpinned / 1e3,
                    ratio.value
                ),
                "compared on the 4 pinned runs without the foreign busy loop".into(),
            ],
        },
        Answer {
            topic: "background".into(),
            text: "Under the cpu:2 load, pinning cannot be judged: every pinned run had a foreign busy loop beside it.".into(),
            basis: vec![
                format!(
                    "foreign CPU use {:.2} against {:.2} CPUs (busyloop)",
                    busy(3).foreign_cpus,
                    busy(1).foreign_cpus
                ),
                format!("throughput ratio {:.3}, not called real", tput.value),
            ],
        },
        Answer {
            topic: "interrupts".into(),
            text: "CPU 0 takes the network interrupts; CPU 1, where the pinned server runs, mostly its local timer.".into(),
            basis: vec![
                format!(
                    "CPU 0: {:.0} device interrupts/s, NET_RX {:.0}/s",
                    cpu(2, 0).device_irqs_per_s,
                    cpu(2, 0).softirqs_per_s[0].per_s
                ),
                format!(
                    "CPU 1: {:.0} device interrupts/s, LOC {:.0}/s",
                    cpu(2, 1).device_irqs_per_s,
                    cpu(2, 1).local_timer_per_s
                ),
            ],
        },
        Answer {
            topic: "spikes".into(),
            text: "The one blamed latency spike had no events in its window: the hypervisor, an SMI or interrupts off.".into(),
            basis: vec!["612.0 us on CPU 1, which stopped the trace of run 10".into()],
        },
    ]
}

/// What else the 2-CPU machine did during a run of `cell`: CPU 0 takes the network
/// interrupts and their softirqs, CPU 1 runs the server (pinned there in cells 2 and
/// 3); a `cpu:2` load (cells 1 and 3) is the experiment's own tools; a busy run has a
/// foreign busy loop beside it on CPU 0.
fn context(cell: usize, busy: bool, rng: &mut Rng) -> RunContext {
    let secs = WALL_NS / 1_000_000_000;
    let jitter = |rng: &mut Rng, x: f64| (x * (1.0 + 0.03 * rng.normal())).max(0.0);
    let ns = |rng: &mut Rng, cpus: f64| jitter(rng, cpus * WALL_NS as f64) as u64;
    let count = |rng: &mut Rng, per_s: f64| jitter(rng, per_s * secs as f64) as u64;
    let loaded = cell % 2 == 1;
    let foreign = if busy { 0.95 } else { 0.01 };
    let mut cpus = Vec::new();
    for cpu in 0..2u32 {
        let irq_cpu = cpu == 0;
        let softirqs: BTreeMap<String, u64> = [
            ("NET_RX", if irq_cpu { 3900.0 } else { 12.0 }),
            ("TIMER", if loaded { 250.0 } else { 110.0 }),
            ("RCU", 40.0),
            ("SCHED", if loaded { 180.0 } else { 30.0 }),
            ("NET_TX", if irq_cpu { 4.0 } else { 0.0 }),
        ]
        .into_iter()
        .filter(|&(_, r)| r > 0.0)
        .map(|(name, r)| (name.to_string(), count(rng, r)))
        .collect();
        cpus.push(CpuContext {
            cpu,
            busy_ns: ns(
                rng,
                if loaded {
                    0.97
                } else if irq_cpu {
                    0.35
                } else {
                    0.62
                },
            ),
            irq_ns: ns(rng, if irq_cpu { 0.04 } else { 0.002 }),
            softirq_ns: ns(rng, if irq_cpu { 0.11 } else { 0.004 }),
            steal_ns: ns(rng, 0.004),
            foreign_ns: if irq_cpu { ns(rng, foreign) } else { 0 },
            local_timer: count(rng, if loaded { 250.0 } else { 160.0 }),
            device_irqs: count(rng, if irq_cpu { 4100.0 } else { 3.0 }),
            other_irqs: count(rng, if loaded { 900.0 } else { 220.0 }),
            softirqs,
        });
    }
    let mut foreign_top = Vec::new();
    if busy {
        foreign_top.push(TaskTime {
            comm: "busyloop".into(),
            pid: 5151,
            cpu_ns: ns(rng, 0.94),
            wait_ns: 0,
        });
    }
    foreign_top.push(TaskTime {
        comm: "systemd-journal".into(),
        pid: 312,
        cpu_ns: ns(rng, 0.008),
        wait_ns: 0,
    });
    RunContext {
        wall_ns: WALL_NS,
        stat_tick_ns: 10_000_000,
        foreign_ns: ns(rng, foreign),
        // The busy loop waited for a CPU a twentieth of the time.
        foreign_wait_ns: if busy { WALL_NS / 20 } else { 0 },
        kernel_ns: ns(rng, 0.06),
        tools_ns: ns(rng, if loaded { 1.85 } else { 0.02 }),
        tested_ns: ns(rng, 0.61),
        foreign_top,
        roles: vec![RoleTime {
            role: Role::Workload,
            comm: "my-server".into(),
            pid: 4242,
            thread: false,
            allowed: if loaded { "1".into() } else { "0-1".into() },
            cpu_ns: ns(rng, 0.61),
            wait_ns: ns(rng, if loaded { 0.05 } else { 0.002 }),
            migrations: if loaded { 0 } else { 14 },
            voluntary_switches: 51_234,
            involuntary_switches: if loaded { 310 } else { 12 },
            cpus: if loaded {
                vec![(1, 500)]
            } else {
                vec![(1, 420), (0, 80)]
            },
        }],
        shared: Vec::new(),
        // The foreign loop kept a kworker off its CPU.
        kernel_messages: if busy {
            vec![KernelMessage {
                level: 4,
                kernel: true,
                ts_us: 1_234_567_890,
                text: "workqueue: blk_mq_run_work_fn hogged CPU for >10000us 4 times, consider switching to WQ_UNBOUND".into(),
            }]
        } else {
            Vec::new()
        },
        cpus,
    }
}

fn explanation(seq: usize, cell: usize, step_ns: u64) -> Explanation {
    let thread =
        |tid, run_ns, cpus: &[(u32, u64)], migrations, wake: Option<(u64, u64)>| ThreadPlacement {
            role: Some(Role::Workload),
            tid,
            tgid: Some(4242),
            comm: "my-server".into(),
            run_ns,
            cpus: cpus
                .iter()
                .map(|&(cpu, run_ns)| CpuRun { cpu, run_ns })
                .collect(),
            migrations,
            migrations_per_s: migrations as f64 / 10.0,
            wakeups: if wake.is_some() { 51_234 } else { 0 },
            wake_p50_ns: wake.map(|w| w.0),
            wake_max_ns: wake.map(|w| w.1),
            wakeups_inferred: if wake.is_some() { 120 } else { 0 },
            wake_idle_p50_ns: wake.map(|w| w.0 + 41_000),
            wake_task_p50_ns: wake.map(|w| w.0 / 2),
        };
    let migration = |t_ns, tid, from_cpu, to_cpu| Migration {
        t_ns,
        tid,
        comm: "my-server".into(),
        from_cpu,
        to_cpu,
    };
    Explanation {
        seq,
        cell,
        trace: Some(format!("traces/run-{seq:03}.dat")),
        duration_ns: 10_000_000_000,
        lost_events: 0,
        threads: vec![
            thread(
                4242,
                6_500_000_000,
                &[(1, 6_100_000_000), (0, 400_000_000)],
                3,
                Some((8_200, 96_000)),
            ),
            thread(4243, 12_000_000, &[(1, 12_000_000)], 0, None),
        ],
        chains: vec![
            ChainSummary {
                source: "irq 36 virtio1-input.0".into(),
                tid: 4242,
                comm: "my-server".into(),
                count: 40_000,
                source_cpus: vec![0],
                p50_ns: Some(6_100),
                max_ns: Some(51_000),
                inferred: 0,
            },
            ChainSummary {
                source: "softirq NET_RX".into(),
                tid: 4243,
                comm: "my-server".into(),
                count: 2,
                source_cpus: vec![0, 1],
                p50_ns: None,
                max_ns: None,
                inferred: 2,
            },
        ],
        around_steps: vec![StepMigrations {
            series: "throughput".into(),
            step_t_ns: step_ns,
            migrations: vec![
                migration(step_ns - 120_000_000, 4242, 1, 0),
                migration(step_ns + 300_000_000, 4242, 0, 1),
            ],
        }],
        spikes: vec![BlamedSpike {
            cpu: 1,
            tid: 4300,
            latency_ns: 612_000,
            t_ns: 1_250_000_000,
            marked: true,
            cause: "no_events".into(),
            verdict: "no events for 91% of the window: hypervisor, SMI or IRQs-off suspected"
                .into(),
            lost_events: 0,
        }],
    }
}

fn fixture_path() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/experiment.json")
}

#[test]
fn experiment_text_golden() {
    let r = synthetic();
    // What the golden is meant to show.
    assert!(r.runs.iter().any(|x| x.warmup));
    assert!(r.runs.iter().any(|x| x.error.is_some()));
    assert_eq!(r.baselines, [0, 1, 0, 1]);
    assert_eq!(r.stats.len(), 3);
    let unbounded = r.stats.iter().flat_map(|m| &m.comparisons);
    assert!(
        unbounded
            .filter_map(|c| c.ratio)
            .any(|e| !e.high.is_finite()),
        "a ratio unbounded above"
    );
    let t = text(&r);
    assert!(t.contains(", ∞)"), "{t}");
    assert!(
        t.starts_with("answers (synthetic)\n  - "),
        "the answers first: {t}"
    );
    for line in t.lines() {
        assert!(
            line.chars().count() <= 100,
            "wider than 100 columns: {line}\n{t}"
        );
    }
    check("experiment.text", &t);
}

#[test]
fn experiment_json_fixture_is_up_to_date() {
    let now = json(&synthetic());
    let path = fixture_path();
    if std::env::var_os("UPDATE_FIXTURES").is_some_and(|v| v == "1") {
        std::fs::write(&path, &now).unwrap();
    }
    let saved = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        saved == now,
        "{} is not what the renderer writes now: rerun with UPDATE_FIXTURES=1 and read the diff",
        path.display()
    );
    let v: Value = serde_json::from_str(&now).unwrap();
    assert_eq!(v["schema"], "jitterlab.experiment");
    assert_eq!(v["version"], 1);
    assert_eq!(v["data"]["cells"].as_array().unwrap().len(), 4);
}

#[test]
fn experiment_html_embeds_the_envelope() {
    let r = synthetic();
    let mut out = Vec::new();
    Html::titled("synthetic").write(&r, &mut out).unwrap();
    let page = String::from_utf8(out).unwrap();
    let at = page.find("id=\"jl-meta\">").unwrap() + "id=\"jl-meta\">".len();
    let end = at + page[at..].find("</script>").unwrap();
    let mut m: Value = serde_json::from_str(&page[at..end]).unwrap();
    // The report inside is the --json output, the fixture.
    let fixture: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture_path()).unwrap()).unwrap();
    assert_eq!(m["report"], fixture);
    assert!(page.contains("// ---- web/experiment.js"));
    assert!(!page.contains("id=\"jl-data-0\""), "no timeline blocks");
    // What `experiment --html FILE` calls writes the same page.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("experiment.html");
    jitterlab_render::view::write_html(&r, &jitterlab_render::Html::titled("synthetic"), &file)
        .unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), page);
    m["report"] = Value::String("(the jitterlab.experiment envelope)".into());
    m["generator"] = Value::String("jitterlab VERSION".into());
    check(
        "html_experiment_meta",
        &serde_json::to_string_pretty(&m).unwrap(),
    );
}
