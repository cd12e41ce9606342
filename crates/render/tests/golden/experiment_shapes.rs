//! The built-in recipes' shapes, as fixed synthetic results: `latency-hunt` (one cell,
//! twenty traced runs each stopped at a spike, the spikes grouped by cause) and
//! `tcp-affinity` (twelve cells whose labels are long, each compared with the server
//! on its softirq CPU). Their text is golden; their JSON envelopes are the fixtures
//! `tests/fixtures/experiment-hunt.json` and `experiment-tcp.json` (`UPDATE_FIXTURES=1`
//! rewrites them), which the browser tests view.

use jitterlab_experiment::explain::{causes, BlamedSpike, Explanation, ThreadPlacement};
use jitterlab_experiment::recipe::builtin;
use jitterlab_experiment::report::Answer;
use jitterlab_experiment::stats::Config;
use jitterlab_experiment::{ExperimentReport, Rng, Run};

use crate::{check, json, text};

/// A built-in recipe's result from `value(cell, round, rng)`: every metric of a run.
fn result(
    recipe: &str,
    value: impl Fn(usize, u32, &str, &mut Rng) -> f64,
) -> (jitterlab_experiment::Recipe, ExperimentReport) {
    let recipe = builtin(recipe).unwrap().recipe().unwrap();
    let plan = recipe.plan(42);
    let metrics = recipe.metrics();
    let runs = plan
        .runs
        .iter()
        .map(|p| {
            let mut rng = Rng::derive(11, &[p.seq as u64]);
            Run {
                seq: p.seq,
                cell: p.cell,
                round: p.round,
                warmup: p.warmup,
                traced: p.trace,
                values: metrics
                    .iter()
                    .map(|m| (m.name.clone(), value(p.cell, p.round, &m.name, &mut rng)))
                    .collect(),
                series: vec![],
                error: None,
                context: None,
            }
        })
        .collect();
    let config = Config {
        seed: 42,
        noise: recipe.noise,
        ..Config::default()
    };
    let report = ExperimentReport::new(
        &recipe.name,
        metrics,
        recipe.cells(),
        recipe.baselines(),
        runs,
        config,
    );
    (recipe, report)
}

/// The blamed spike of each run of the hunt, by cause (five causes, most first as
/// listed) and verdict.
const CAUSES: [(&str, &str); 5] = [
    (
        "interrupts",
        "irq 36 virtio1-req.0 ran for 78% of the window on CPU 1",
    ),
    (
        "task",
        "kworker/1:2 ran for 81% of the window on CPU 1: a task in the way",
    ),
    (
        "no_events",
        "no events for 91% of the window: hypervisor, SMI or IRQs-off suspected",
    ),
    (
        "idle",
        "CPU 1 was idle for 88% of the window: its exit from a C-state",
    ),
    (
        "spread",
        "no one cause: interrupts 31%, tasks 28%, no events 22%",
    ),
];
/// Which cause each of the twenty runs' spike has.
const RUN_CAUSE: [usize; 20] = [0, 1, 0, 2, 0, 1, 0, 0, 3, 1, 0, 2, 1, 0, 4, 0, 1, 2, 1, 0];

/// `latency-hunt`: twenty runs of the probe under io:4, each stopped at its first spike
/// over 500 us (but two, whose worst is blamed unmarked), the spikes grouped by cause.
pub fn hunt() -> ExperimentReport {
    let (_, mut report) = result("latency-hunt", |_, round, metric, rng| {
        let spike = if round % 9 == 4 { 410_000.0 } else { 640_000.0 };
        let v = match metric {
            "latency.min" => 2_100.0,
            "latency.avg" => 5_800.0,
            "latency.p50" => 4_900.0,
            "latency.p99" => 31_000.0,
            "latency.p99.9" => 96_000.0,
            "latency.max" => spike,
            _ => return f64::from(round % 3 == 0),
        };
        (v * (1.0 + 0.05 * rng.normal())).round()
    });
    let seqs: Vec<usize> = report.runs.iter().map(|r| r.seq).collect();
    report.explanations = seqs
        .into_iter()
        .enumerate()
        .map(|(k, seq)| {
            let (cause, verdict) = CAUSES[RUN_CAUSE[k]];
            let marked = k % 9 != 4;
            Explanation {
                seq,
                cell: 0,
                trace: Some(format!("traces/run-{seq:03}.dat")),
                duration_ns: 10_000_000_000,
                lost_events: 0,
                threads: vec![ThreadPlacement {
                    role: None,
                    tid: 5000 + k as i32,
                    tgid: Some(5000),
                    comm: "jl-probe".into(),
                    run_ns: 41_000_000,
                    cpus: vec![jitterlab_experiment::explain::CpuRun {
                        cpu: 1,
                        run_ns: 41_000_000,
                    }],
                    migrations: 0,
                    migrations_per_s: 0.0,
                    wakeups: 10_000,
                    wake_p50_ns: Some(4_900),
                    wake_max_ns: Some(if marked { 640_000 } else { 410_000 }),
                    wakeups_inferred: 0,
                    wake_idle_p50_ns: None,
                    wake_task_p50_ns: None,
                }],
                chains: vec![],
                around_steps: vec![],
                spikes: vec![BlamedSpike {
                    cpu: 1,
                    tid: 5000 + k as i32,
                    latency_ns: if marked { 640_000 } else { 410_000 },
                    t_ns: 1_000_000_000 + 350_000_000 * k as u64,
                    marked,
                    cause: cause.into(),
                    verdict: verdict.into(),
                    lost_events: 0,
                }],
            }
        })
        .collect();
    report.spike_causes = causes(&report.explanations);
    report.order = Some(jitterlab_experiment::recipe::Order::Sequential);
    report.answers = vec![Answer {
        topic: "spikes".into(),
        text: "Most spikes on CPU 1 were interrupts: the virtio block IRQ ran there; move it to CPU 0.".into(),
        basis: vec!["9 of 20 blamed spikes: interrupts; 6 a task; 3 no events".into()],
    }];
    report
}

/// `tcp-affinity`: the iperf3 server unpinned, on its softirq CPU and on the other CPU,
/// at 1G and unlimited, idle and under a busy loop per CPU: twelve cells whose labels
/// are long (`affinity=not-irq-cpu, bitrate=unlimited, load=cmd:stress-ng --cpu 2
/// --quiet`). At 1G every placement moves 1 Gbit/s; unlimited, the server beside its
/// softirq is slower, and under load the slowest.
pub fn tcp() -> ExperimentReport {
    let (recipe, mut report) = result("tcp-affinity", |cell, _, _, rng| {
        // Cells: affinity (unpinned, irq-cpu, not-irq-cpu) x bitrate (1G, unlimited) x
        // load (none, stress-ng), the last changing fastest.
        let (affinity, bitrate, load) = (cell / 4, (cell / 2) % 2, cell % 2);
        let gbit = match (bitrate, load, affinity) {
            (0, _, _) => 0.94,
            (_, 0, 0) => 9.2,
            (_, 0, 1) => 8.1,
            (_, 0, _) => 11.3,
            (_, _, 0) => 2.2,
            (_, _, 1) => 1.5,
            _ => 3.1,
        };
        (gbit * 1e9 * (1.0 + 0.015 * rng.normal())).round()
    });
    assert_eq!(recipe.cells().len(), 12);
    report.order = Some(recipe.order);
    report
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// `now` is what `name` holds (or, with `UPDATE_FIXTURES=1`, is written there).
fn fixture_is(name: &str, now: &str) {
    let path = fixture(name);
    if std::env::var_os("UPDATE_FIXTURES").is_some_and(|v| v == "1") {
        std::fs::write(&path, now).unwrap();
    }
    let saved = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        saved == now,
        "{} is not what the renderer writes now: rerun with UPDATE_FIXTURES=1 and read the diff",
        path.display()
    );
}

#[test]
fn latency_hunt_text_and_json() {
    let r = hunt();
    assert_eq!(r.runs.len(), 20);
    assert_eq!(r.spike_causes.len(), 5);
    assert_eq!(r.spike_causes[0].cause, "interrupts");
    assert_eq!(r.spike_causes[0].spikes, 9);
    let t = text(&r);
    for line in t.lines() {
        assert!(
            line.chars().count() <= 100,
            "wider than 100 columns: {line}"
        );
    }
    check("experiment_hunt.text", &t);
    fixture_is("experiment-hunt.json", &json(&r));
}

#[test]
fn tcp_affinity_text_and_json() {
    let r = tcp();
    assert_eq!(r.cells.len(), 12);
    let longest = r.cells.iter().map(|c| c.label.len()).max().unwrap();
    assert!(longest > 70, "labels as long as tcp-affinity's: {longest}");
    let t = text(&r);
    for line in t.lines() {
        assert!(
            line.chars().count() <= 100,
            "wider than 100 columns: {line}"
        );
    }
    check("experiment_tcp.text", &t);
    fixture_is("experiment-tcp.json", &json(&r));
}
