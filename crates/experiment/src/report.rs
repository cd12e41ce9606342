//! The result of a finished experiment: the cells, every run with its values and
//! series, and per metric the cells' medians, the comparisons with their
//! verdicts, the warnings and the steps, in one `Serialize` model that `--json`,
//! the text tables and the HTML page render.
//!
//! Values are `f64` in the metric's unit (`ns` for latencies, `bit/s`, `msg/s`):
//! medians of an even count and ratios are not integers. A non-finite number
//! (an unbounded interval) is serialized as `null`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::context::{CpuContext, RunContext, BUSY_CPUS};
use crate::explain::{CauseCount, Explanation, Testbed};
use crate::recipe::Cell;
#[cfg(test)]
use crate::recipe::Recipe;
use crate::rng::Rng;
use crate::stats::steps::{find_steps, Step};
use crate::stats::warnings::{drift, slow_first};
use crate::stats::{self, rank, Config, Direction, Estimate, Significance};

/// A metric the runs report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Metric {
    /// Its name (`latency.p99`, `tcp.throughput`, a command measure's name).
    pub name: String,
    /// Its unit.
    pub unit: String,
    /// Which way is better.
    pub direction: Direction,
}

impl Metric {
    /// A metric.
    pub fn new(name: &str, unit: &str, direction: Direction) -> Metric {
        Metric {
            name: name.into(),
            unit: unit.into(),
            direction,
        }
    }
}

/// A per-interval series of one run (messages per second per 100 ms, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// What it measures (a metric's name, or its own).
    pub name: String,
    /// Its unit.
    pub unit: String,
    /// The start of each interval, ns from the start of the run.
    pub t_ns: Vec<u64>,
    /// The value of each interval.
    pub values: Vec<f64>,
    /// The level shifts found in it (filled by [`ExperimentReport::new`]).
    pub steps: Vec<Step>,
}

/// One run as the runner recorded it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Its place in the plan.
    pub seq: usize,
    /// Its cell.
    pub cell: usize,
    /// Its round (measured rounds from 0; warm-up runs count their own).
    pub round: u32,
    /// A warm-up run: kept in the result, left out of the statistics.
    pub warmup: bool,
    /// Whether it was traced.
    pub traced: bool,
    /// Its value of each metric it reported.
    pub values: BTreeMap<String, f64>,
    /// Its per-interval series.
    pub series: Vec<Series>,
    /// Why it failed, if it did (its values are then left out).
    pub error: Option<String>,
    /// What else the machine did meanwhile, when the runner measured it.
    #[serde(default)]
    pub context: Option<RunContext>,
}

/// A cell's runs of one metric, summarised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellSummary {
    /// The cell.
    pub cell: usize,
    /// Measured runs with a value.
    pub runs: usize,
    /// Their median with its bootstrap interval; `None` without runs.
    pub median: Option<Estimate>,
    /// The least value.
    pub min: Option<f64>,
    /// The greatest value.
    pub max: Option<f64>,
}

/// A cell compared with its baseline on one metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// The cell.
    pub cell: usize,
    /// Its baseline cell.
    pub baseline: usize,
    /// The ratio of medians, cell over baseline, with its bootstrap interval.
    pub ratio: Option<Estimate>,
    /// The Mann-Whitney test of the two cells' runs.
    pub test: Option<rank::UTest>,
    /// Its p-value after Holm's correction over all the experiment's comparisons.
    pub p_holm: Option<f64>,
    /// Whether the two cells ran beside the same foreign work, and which runs were
    /// compared.
    pub background: Background,
    /// Whether the difference is real.
    pub verdict: Significance,
}

/// How a comparison's two cells stood to foreign work (see [`RunContext::busy`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Background {
    /// The runs carry no context (a saved experiment of an older jitterlab).
    Unknown,
    /// Both quiet, or both beside the same foreign load: every run compared.
    Equal,
    /// Some runs ran beside foreign work and the others were enough: only the runs
    /// without it are compared.
    QuietRunsOnly {
        /// The cell's runs compared.
        cell_runs: usize,
        /// The baseline's runs compared.
        baseline_runs: usize,
    },
    /// Every run of both beside foreign work, and both cells' foreign work wanting the
    /// same of the CPUs (its CPU time and its wait for a CPU,
    /// [`RunContext::foreign_demand`], medians within [`DEMAND_TOLERANCE_CPUS`]): one
    /// load beside the whole experiment, whose share of the CPUs the cells decide (a
    /// busy loop gets what a cell leaves idle). Every run compared, under that load.
    SameForeign {
        /// The foreign processes that wanted most, by name.
        processes: Vec<String>,
        /// What foreign work wanted, CPUs (the median over both cells' runs).
        demand: f64,
        /// The cell's median foreign CPU use (what it got), CPUs.
        cell_cpus: f64,
        /// The baseline's.
        baseline_cpus: f64,
    },
    /// Unequal, and too few quiet runs to compare those alone: the difference is never
    /// called real.
    Unequal {
        /// The cell's median foreign CPU use, CPUs.
        cell_cpus: f64,
        /// The baseline's.
        baseline_cpus: f64,
    },
}

/// Two cells' foreign CPU use (medians, CPUs) differ when they are further apart than
/// this (0.05: 5 % of a CPU), unless both are below [`crate::context::BUSY_CPUS`].
pub const BACKGROUND_TOLERANCE_CPUS: f64 = 0.05;

/// Two cells' foreign demands ([`RunContext::foreign_demand`], the medians over their
/// runs) are the same background when they lie within this of each other (0.15 CPUs).
pub const DEMAND_TOLERANCE_CPUS: f64 = 0.15;

/// One metric across the cells.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricStats {
    /// The metric.
    pub metric: Metric,
    /// One per cell, in cell order.
    pub cells: Vec<CellSummary>,
    /// One per cell that has a baseline other than itself.
    pub comparisons: Vec<Comparison>,
}

/// Something in the runs that the numbers alone do not show.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// A cell's values trend across the rounds (Spearman's correlation of value and
    /// round is significant): the machine changed while the experiment ran.
    Drift {
        /// The metric.
        metric: String,
        /// The cell.
        cell: usize,
        /// The correlation (-1 ..= 1).
        rho: f64,
        /// Its p-value.
        p: f64,
    },
    /// A cell's first measured run is worse than all its others by more than the
    /// margin: it was not warmed up enough.
    SlowFirstRun {
        /// The metric.
        metric: String,
        /// The cell.
        cell: usize,
        /// The first run's value.
        first: f64,
        /// The worst of the others.
        others_worst: f64,
        /// The median of the others.
        others_median: f64,
    },
    /// Runs of a cell whose series have level shifts.
    Steps {
        /// The series.
        series: String,
        /// The cell.
        cell: usize,
        /// How many of its measured runs have steps.
        runs: usize,
        /// Its measured runs with this series.
        of: usize,
    },
    /// Runs of a cell measured beside foreign work, or under the host's steal
    /// ([`RunContext::busy`]).
    BusyRuns {
        /// The cell.
        cell: usize,
        /// How many of its measured runs.
        runs: usize,
        /// Its measured runs with a context.
        of: usize,
        /// The median foreign CPU use of those runs, CPUs.
        foreign_cpus: f64,
        /// The median steal of those runs, a fraction of their CPU time.
        steal: f64,
        /// The foreign process that used the most CPU in them.
        top: Option<String>,
    },
    /// Measured runs of a cell during which the kernel logged a warning or worse (a
    /// workqueue stall, RT throttling, a lockup): the machine misbehaved, whatever
    /// the figures say.
    KernelMessages {
        /// The cell.
        cell: usize,
        /// How many of its measured runs.
        runs: usize,
        /// Its measured runs with a context.
        of: usize,
        /// The messages in those runs (as many as were kept).
        messages: usize,
        /// The first of them, and the run it was logged in.
        first: String,
        /// That run.
        run: usize,
    },
    /// Runs that failed, left out of the statistics.
    FailedRuns {
        /// The cell.
        cell: usize,
        /// How many.
        runs: usize,
    },
}

/// What else a cell's machine did while its runs were measured: per figure, the median
/// over its measured runs that carry a [`RunContext`] (the "machine during the runs"
/// table of the reports).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellContext {
    /// The cell.
    pub cell: usize,
    /// Its measured runs with a context.
    pub runs: usize,
    /// Of which measured beside foreign work or under the host's steal
    /// ([`RunContext::busy`]).
    pub busy_runs: usize,
    /// The foreign processes' CPU use, CPUs ([`RunContext::foreign_cpus`]).
    pub foreign_cpus: f64,
    /// Kernel threads' CPU use, CPUs.
    pub kernel_cpus: f64,
    /// The experiment's own tools' (jitterlab's threads, the loads), CPUs.
    pub tools_cpus: f64,
    /// The processes under test, CPUs.
    pub tested_cpus: f64,
    /// The host's steal, a fraction of the run's CPU time
    /// ([`RunContext::steal_fraction`]).
    pub steal: f64,
    /// Per CPU, in CPU order.
    pub cpus: Vec<CellCpu>,
}

/// One CPU during a cell's runs: medians over the runs whose context has it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellCpu {
    /// The CPU.
    pub cpu: u32,
    /// Time not idle over the run's wall time (1.0: busy the whole run).
    pub busy: f64,
    /// Local timer interrupts (`LOC`) per second.
    pub local_timer_per_s: f64,
    /// Device interrupts per second.
    pub device_irqs_per_s: f64,
    /// Other architecture interrupts per second.
    pub other_irqs_per_s: f64,
    /// Softirqs per second by vector, the most first (those whose median is above 0).
    pub softirqs_per_s: Vec<SoftirqRate>,
}

/// A softirq vector's rate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SoftirqRate {
    /// The vector (`NET_RX`, `TIMER`...).
    pub name: String,
    /// Per second.
    pub per_s: f64,
}

/// A finished experiment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExperimentReport {
    /// The experiment's name.
    pub name: String,
    /// The seed of its run order and statistics.
    pub seed: u64,
    /// The statistics' settings.
    pub config: Config,
    /// The metrics, in the recipe's order.
    pub metrics: Vec<Metric>,
    /// The cells.
    pub cells: Vec<Cell>,
    /// Each cell's baseline cell.
    pub baselines: Vec<usize>,
    /// Every run, warm-up runs included, in the order they ran.
    pub runs: Vec<Run>,
    /// The statistics of each metric.
    pub stats: Vec<MetricStats>,
    /// The warnings.
    pub warnings: Vec<Warning>,
    /// Per cell whose measured runs carry a context, the machine during them.
    pub cell_contexts: Vec<CellContext>,
    /// Why, from the traced runs (filled by the runner after [`ExperimentReport::new`]).
    pub explanations: Vec<Explanation>,
    /// The machine it ran on, when the runner knows it.
    pub machine: Option<Testbed>,
    /// When its first run started, wall-clock ns since 1970-01-01 UTC, when the runner
    /// knows it (what an export names the run and its rows' start by).
    pub start_wall_ns: Option<u64>,
    /// The rounds run when the recipe's `precision` stopped the experiment before all
    /// its rounds (`None`: every planned round ran, or Ctrl-C ended it).
    pub stopped_early: Option<u32>,
    /// The order the runs were planned in, when the runner knows it (a comparison of
    /// saved experiments has none).
    pub order: Option<crate::recipe::Order>,
    /// The blamed spikes of the traced runs grouped by cause (filled with the
    /// explanations).
    pub spike_causes: Vec<CauseCount>,
    /// The experiment's questions answered, one sentence each, from the numbers the runs
    /// collected (filled once the explanations are in):
    /// what the reports show first.
    pub answers: Vec<Answer>,
}

/// One question of an experiment answered in one sentence, with the figures it rests
/// on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Answer {
    /// What it answers: `throughput`, `latency`, `bound`, `migrations`, `interrupts`,
    /// `background`, `spikes`...
    pub topic: String,
    /// The sentence.
    pub text: String,
    /// The measured figures it rests on, in words (`server 0.31 CPUs at 1.00 Gbit/s`).
    pub basis: Vec<String>,
}

impl ExperimentReport {
    /// Computes the statistics of `runs`: the steps of every series, each cell's
    /// median per metric, each cell against its baseline (`baselines[cell]`; a
    /// cell that is its own baseline is not compared), Holm's correction over all
    /// the comparisons of all metrics, the verdicts and the warnings. The bootstrap
    /// of metric `m`, cell `c` draws from the stream `(config.seed, m, c)`.
    pub fn new(
        name: &str,
        metrics: Vec<Metric>,
        cells: Vec<Cell>,
        baselines: Vec<usize>,
        mut runs: Vec<Run>,
        config: Config,
    ) -> ExperimentReport {
        for run in &mut runs {
            for s in &mut run.series {
                s.steps = find_steps(&s.t_ns, &s.values, &config.steps);
            }
        }
        let measured: Vec<&Run> = runs
            .iter()
            .filter(|r| !r.warmup && r.error.is_none())
            .collect();
        // A cell's values of a metric, with their rounds, in the order they ran; with
        // `quiet`, of the runs measured without foreign work only.
        let values_of = |metric: &str, cell: usize, quiet: bool| -> (Vec<f64>, Vec<f64>) {
            let mut rs: Vec<&&Run> = measured
                .iter()
                .filter(|r| r.cell == cell && !(quiet && is_busy(r)))
                .collect();
            rs.sort_by_key(|r| r.seq);
            rs.iter()
                .filter_map(|r| {
                    let v = *r.values.get(metric)?;
                    v.is_finite().then_some((v, f64::from(r.round)))
                })
                .unzip()
        };
        let values = |metric: &str, cell: usize| values_of(metric, cell, false);

        let mut per_metric = Vec::new();
        let mut warnings = Vec::new();
        for (mi, metric) in metrics.iter().enumerate() {
            let per_cell: Vec<(Vec<f64>, Vec<f64>)> =
                (0..cells.len()).map(|c| values(&metric.name, c)).collect();
            let summaries = per_cell
                .iter()
                .enumerate()
                .map(|(c, (v, _))| {
                    let mut rng = Rng::derive(config.seed, &[mi as u64, c as u64, 0]);
                    CellSummary {
                        cell: c,
                        runs: v.len(),
                        median: stats::median_ci(v, config.confidence, config.resamples, &mut rng),
                        min: v.iter().copied().reduce(f64::min),
                        max: v.iter().copied().reduce(f64::max),
                    }
                })
                .collect();
            let comparisons = (0..cells.len())
                .filter(|&c| baselines.get(c).is_some_and(|&b| b != c))
                .map(|c| {
                    let b = baselines[c];
                    let mut rng = Rng::derive(config.seed, &[mi as u64, c as u64, 1]);
                    let background = background(&measured, c, b, config.min_runs);
                    let cmp = match background {
                        Background::QuietRunsOnly { .. } => stats::compare(
                            &values_of(&metric.name, c, true).0,
                            &values_of(&metric.name, b, true).0,
                            &config,
                            &mut rng,
                        ),
                        _ => stats::compare(&per_cell[c].0, &per_cell[b].0, &config, &mut rng),
                    };
                    Comparison {
                        cell: c,
                        baseline: b,
                        ratio: cmp.ratio,
                        test: cmp.test,
                        p_holm: None,
                        background,
                        verdict: Significance::NoRealDifference { reasons: vec![] },
                    }
                })
                .collect();
            for (c, (v, rounds)) in per_cell.iter().enumerate() {
                if let Some(d) = drift(rounds, v, config.drift_alpha) {
                    warnings.push(Warning::Drift {
                        metric: metric.name.clone(),
                        cell: c,
                        rho: d.rho,
                        p: d.p,
                    });
                }
                if let Some(s) = slow_first(v, metric.direction, config.first_run_margin) {
                    warnings.push(Warning::SlowFirstRun {
                        metric: metric.name.clone(),
                        cell: c,
                        first: s.first,
                        others_worst: s.others_worst,
                        others_median: s.others_median,
                    });
                }
            }
            per_metric.push(MetricStats {
                metric: metric.clone(),
                cells: summaries,
                comparisons,
            });
        }

        // Holm over every comparison of the experiment, then the verdicts.
        let ps: Vec<Option<f64>> = per_metric
            .iter()
            .flat_map(|r| r.comparisons.iter().map(|c| c.test.map(|t| t.p)))
            .collect();
        let mut adjusted = rank::holm(&ps).into_iter();
        for r in &mut per_metric {
            for c in &mut r.comparisons {
                c.p_holm = adjusted.next().flatten();
                c.verdict = Significance::decide_under(
                    c.ratio.as_ref(),
                    c.p_holm,
                    r.metric.direction,
                    &config,
                    matches!(c.background, Background::Unequal { .. }),
                );
            }
        }

        warnings.extend(step_warnings(&measured, cells.len()));
        warnings.extend(busy_warnings(&measured, cells.len()));
        warnings.extend(kernel_warnings(&measured, cells.len()));
        // The foreign work itself drifting across the rounds.
        for c in 0..cells.len() {
            let mut rs: Vec<&&Run> = measured.iter().filter(|r| r.cell == c).collect();
            rs.sort_by_key(|r| r.seq);
            let (v, rounds): (Vec<f64>, Vec<f64>) = rs
                .iter()
                .filter_map(|r| Some((r.context.as_ref()?.foreign_cpus(), f64::from(r.round))))
                .unzip();
            if let Some(d) = drift(&rounds, &v, config.drift_alpha) {
                warnings.push(Warning::Drift {
                    metric: BACKGROUND_METRIC.into(),
                    cell: c,
                    rho: d.rho,
                    p: d.p,
                });
            }
        }
        for c in 0..cells.len() {
            let failed = runs
                .iter()
                .filter(|r| r.cell == c && !r.warmup && r.error.is_some())
                .count();
            if failed > 0 {
                warnings.push(Warning::FailedRuns {
                    cell: c,
                    runs: failed,
                });
            }
        }
        let cell_contexts = (0..cells.len())
            .filter_map(|c| cell_context(&measured, c))
            .collect();
        ExperimentReport {
            name: name.to_string(),
            seed: config.seed,
            config,
            metrics,
            cells,
            baselines,
            runs,
            stats: per_metric,
            warnings,
            cell_contexts,
            explanations: Vec::new(),
            machine: None,
            start_wall_ns: None,
            spike_causes: Vec::new(),
            answers: Vec::new(),
            order: None,
            stopped_early: None,
        }
    }

    /// The statistics of the metric called `name`.
    pub fn metric(&self, name: &str) -> Option<&MetricStats> {
        self.stats.iter().find(|r| r.metric.name == name)
    }
}

/// The name [`Warning::Drift`] gives the foreign CPU use when it drifts.
pub const BACKGROUND_METRIC: &str = "background.foreign_cpus";

/// Whether a run was measured beside foreign work or under the host's steal.
fn is_busy(r: &Run) -> bool {
    r.context.as_ref().is_some_and(RunContext::busy)
}

fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// How cell `c` and its baseline `b` stood to foreign work.
fn background(measured: &[&Run], c: usize, b: usize, min_runs: usize) -> Background {
    let contexts = |cell: usize| -> Vec<&RunContext> {
        measured
            .iter()
            .filter(|r| r.cell == cell)
            .filter_map(|r| r.context.as_ref())
            .collect()
    };
    let side = |ctx: &[&RunContext]| -> Option<(usize, usize, f64)> {
        if ctx.is_empty() {
            return None;
        }
        let busy = ctx.iter().filter(|x| x.busy()).count();
        let cpus = median_of(ctx.iter().map(|x| x.foreign_cpus()).collect());
        Some((ctx.len(), busy, cpus))
    };
    let (cc, cb) = (contexts(c), contexts(b));
    let (Some((nc, bc, fc)), Some((nb, bb, fb))) = (side(&cc), side(&cb)) else {
        return Background::Unknown;
    };
    let both_quiet = bc == 0 && bb == 0;
    let both_beside_the_same = bc == nc && bb == nb && (fc - fb).abs() <= BACKGROUND_TOLERANCE_CPUS;
    if both_quiet || both_beside_the_same {
        return Background::Equal;
    }
    // Foreign work beside every run of both that wanted the same of the CPUs (the
    // medians: a thread that waited once for long, behind the load, is no second load):
    // one load throughout, whatever share each cell left it.
    let demand_of =
        |ctx: &[&RunContext]| median_of(ctx.iter().map(|x| x.foreign_demand()).collect());
    let (dc, db) = (demand_of(&cc), demand_of(&cb));
    let beside_all = cc.iter().chain(&cb).all(|x| x.foreign_demand() > BUSY_CPUS);
    if beside_all && (dc - db).abs() <= DEMAND_TOLERANCE_CPUS {
        let demand = demand_of(&[cc.as_slice(), cb.as_slice()].concat());
        // Those that wanted much in half the runs at least, most often first.
        let mut seen: Vec<(&str, usize)> = Vec::new();
        for x in cc.iter().chain(&cb) {
            for p in x.foreign_demanding() {
                match seen.iter_mut().find(|(q, _)| *q == p) {
                    Some(e) => e.1 += 1,
                    None => seen.push((p, 1)),
                }
            }
        }
        seen.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
        let runs = cc.len() + cb.len();
        let processes: Vec<String> = seen
            .into_iter()
            .filter(|&(_, n)| 2 * n >= runs)
            .map(|(p, _)| p.to_string())
            .collect();
        return Background::SameForeign {
            processes,
            demand,
            cell_cpus: fc,
            baseline_cpus: fb,
        };
    }
    let (qc, qb) = (nc - bc, nb - bb);
    if qc >= min_runs && qb >= min_runs {
        return Background::QuietRunsOnly {
            cell_runs: qc,
            baseline_runs: qb,
        };
    }
    Background::Unequal {
        cell_cpus: fc,
        baseline_cpus: fb,
    }
}

/// Cell `c`'s machine during its measured runs with a context, or `None` without any.
fn cell_context(measured: &[&Run], c: usize) -> Option<CellContext> {
    let ctx: Vec<&RunContext> = measured
        .iter()
        .filter(|r| r.cell == c)
        .filter_map(|r| r.context.as_ref())
        .collect();
    if ctx.is_empty() {
        return None;
    }
    let med = |f: &dyn Fn(&RunContext) -> f64| median_of(ctx.iter().map(|x| f(x)).collect());
    let cpu_ids: std::collections::BTreeSet<u32> = ctx
        .iter()
        .flat_map(|x| x.cpus.iter().map(|k| k.cpu))
        .collect();
    let cpus = cpu_ids
        .into_iter()
        .map(|cpu| {
            // The runs that have this CPU and a wall time, with that CPU's figures.
            let of: Vec<(&CpuContext, f64)> = ctx
                .iter()
                .filter(|x| x.wall_ns > 0)
                .filter_map(|x| Some((x.cpu(cpu)?, x.wall_ns as f64)))
                .collect();
            let med = |f: &dyn Fn(&CpuContext, f64) -> f64| {
                median_of(of.iter().map(|(k, wall)| f(k, *wall)).collect())
            };
            let per_s = |n: u64, wall: f64| n as f64 * 1e9 / wall;
            let vectors: std::collections::BTreeSet<&str> = of
                .iter()
                .flat_map(|(k, _)| k.softirqs.keys().map(String::as_str))
                .collect();
            let mut softirqs: Vec<SoftirqRate> = vectors
                .into_iter()
                .map(|name| SoftirqRate {
                    name: name.to_string(),
                    per_s: med(&|k, wall| per_s(k.softirqs.get(name).copied().unwrap_or(0), wall)),
                })
                .filter(|v| v.per_s > 0.0)
                .collect();
            softirqs.sort_by(|a, b| b.per_s.total_cmp(&a.per_s).then(a.name.cmp(&b.name)));
            CellCpu {
                cpu,
                busy: med(&|k, wall| k.busy_ns as f64 / wall),
                local_timer_per_s: med(&|k, wall| per_s(k.local_timer, wall)),
                device_irqs_per_s: med(&|k, wall| per_s(k.device_irqs, wall)),
                other_irqs_per_s: med(&|k, wall| per_s(k.other_irqs, wall)),
                softirqs_per_s: softirqs,
            }
        })
        .collect();
    let cpus_of = |ns: fn(&RunContext) -> u64| {
        move |x: &RunContext| {
            if x.wall_ns == 0 {
                0.0
            } else {
                ns(x) as f64 / x.wall_ns as f64
            }
        }
    };
    Some(CellContext {
        cell: c,
        runs: ctx.len(),
        busy_runs: ctx.iter().filter(|x| x.busy()).count(),
        foreign_cpus: med(&RunContext::foreign_cpus),
        kernel_cpus: med(&cpus_of(|x| x.kernel_ns)),
        tools_cpus: med(&cpus_of(|x| x.tools_ns)),
        tested_cpus: med(&cpus_of(|x| x.tested_ns)),
        steal: med(&RunContext::steal_fraction),
        cpus,
    })
}

/// Per cell, the measured runs beside foreign work.
fn busy_warnings(measured: &[&Run], cells: usize) -> Vec<Warning> {
    let mut out = Vec::new();
    for c in 0..cells {
        let ctx: Vec<&RunContext> = measured
            .iter()
            .filter(|r| r.cell == c)
            .filter_map(|r| r.context.as_ref())
            .collect();
        let busy: Vec<&&RunContext> = ctx.iter().filter(|x| x.busy()).collect();
        if busy.is_empty() {
            continue;
        }
        let mut top: BTreeMap<&str, u64> = BTreeMap::new();
        for t in busy.iter().flat_map(|x| &x.foreign_top) {
            *top.entry(&t.comm).or_default() += t.cpu_ns;
        }
        out.push(Warning::BusyRuns {
            cell: c,
            runs: busy.len(),
            of: ctx.len(),
            foreign_cpus: median_of(busy.iter().map(|x| x.foreign_cpus()).collect()),
            steal: median_of(busy.iter().map(|x| x.steal_fraction()).collect()),
            top: top
                .into_iter()
                .max_by_key(|(_, ns)| *ns)
                .map(|(comm, _)| comm.to_string()),
        });
    }
    out
}

/// Per cell, the measured runs during which the kernel logged a warning.
fn kernel_warnings(measured: &[&Run], cells: usize) -> Vec<Warning> {
    let mut out = Vec::new();
    for c in 0..cells {
        let ctx: Vec<(usize, &RunContext)> = measured
            .iter()
            .filter(|r| r.cell == c)
            .filter_map(|r| Some((r.seq, r.context.as_ref()?)))
            .collect();
        let logged: Vec<&(usize, &RunContext)> = ctx
            .iter()
            .filter(|(_, x)| !x.kernel_messages.is_empty())
            .collect();
        let Some((run, first)) = logged
            .iter()
            .flat_map(|(seq, x)| x.kernel_messages.iter().map(move |m| (*seq, m)))
            .min_by_key(|(_, m)| m.ts_us)
        else {
            continue;
        };
        out.push(Warning::KernelMessages {
            cell: c,
            runs: logged.len(),
            of: ctx.len(),
            messages: logged.iter().map(|(_, x)| x.kernel_messages.len()).sum(),
            first: first.text.clone(),
            run,
        });
    }
    out
}

/// Per cell and series name, how many measured runs have steps.
fn step_warnings(measured: &[&Run], cells: usize) -> Vec<Warning> {
    let mut out = Vec::new();
    for c in 0..cells {
        let mut by_series: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for r in measured.iter().filter(|r| r.cell == c) {
            for s in &r.series {
                let e = by_series.entry(&s.name).or_default();
                e.1 += 1;
                if !s.steps.is_empty() {
                    e.0 += 1;
                }
            }
        }
        for (series, (runs, of)) in by_series {
            if runs > 0 {
                out.push(Warning::Steps {
                    series: series.to_string(),
                    cell: c,
                    runs,
                    of,
                });
            }
        }
    }
    out
}

/// Whether every cell's median of every metric is known to `precision` from the
/// measured runs so far: each cell has at least `min_rounds` measured runs with a value,
/// and the half-width of its median's bootstrap interval is at most `precision` times
/// the median's magnitude. A median of 0 counts as known when its interval is `[0, 0]`.
/// The bootstrap draws from the same streams as [`ExperimentReport::new`].
pub fn precise_enough(
    metrics: &[Metric],
    cells: usize,
    runs: &[Run],
    config: &Config,
    precision: f64,
    min_rounds: usize,
) -> bool {
    for (mi, metric) in metrics.iter().enumerate() {
        for c in 0..cells {
            let v: Vec<f64> = runs
                .iter()
                .filter(|r| r.cell == c && !r.warmup && r.error.is_none())
                .filter_map(|r| r.values.get(&metric.name).copied())
                .filter(|v| v.is_finite())
                .collect();
            if v.len() < min_rounds.max(config.min_runs) {
                return false;
            }
            let mut rng = Rng::derive(config.seed, &[mi as u64, c as u64, 0]);
            let Some(e) = stats::median_ci(&v, config.confidence, config.resamples, &mut rng)
            else {
                return false;
            };
            let half = (e.high - e.low) / 2.0;
            if half.is_nan() || half > precision * e.value.abs() {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{CpuContext, TaskTime};

    fn run(seq: usize, cell: usize, warmup: bool, context: Option<RunContext>) -> Run {
        Run {
            seq,
            cell,
            round: seq as u32,
            warmup,
            traced: false,
            values: BTreeMap::new(),
            series: vec![],
            error: None,
            context,
        }
    }

    /// Over `secs` seconds: `foreign` CPUs of other processes, CPU 1 `loc` local timer
    /// interrupts and `net_rx` NET_RX softirqs a second.
    fn context(secs: u64, foreign: f64, loc: u64, net_rx: u64) -> RunContext {
        let wall_ns = secs * 1_000_000_000;
        let cpu1 = CpuContext {
            cpu: 1,
            busy_ns: wall_ns / 4,
            local_timer: loc * secs,
            device_irqs: 10 * secs,
            softirqs: [
                ("NET_RX".to_string(), net_rx * secs),
                ("TIMER".to_string(), 250 * secs),
            ]
            .into(),
            ..CpuContext::default()
        };
        RunContext {
            wall_ns,
            cpus: vec![
                CpuContext {
                    cpu: 0,
                    steal_ns: wall_ns / 10,
                    ..CpuContext::default()
                },
                cpu1,
            ],
            foreign_ns: (foreign * wall_ns as f64) as u64,
            tested_ns: wall_ns / 2,
            foreign_top: vec![TaskTime {
                comm: "busyloop".into(),
                pid: 1,
                cpu_ns: 1,
                wait_ns: 0,
            }],
            ..RunContext::default()
        }
    }

    /// The report of `runs` of two cells, `load=none` (the baseline of both) and
    /// `load=cpu:1`, with no metric.
    fn two_cells(runs: Vec<Run>) -> ExperimentReport {
        let cells = Recipe::parse(
            "t.toml",
            "name = \"t\"\n[factors]\nload = [\"none\", \"cpu:1\"]\n[measure.latency]\n",
        )
        .unwrap()
        .cells();
        ExperimentReport::new("t", vec![], cells, vec![0, 0], runs, Config::default())
    }

    #[test]
    fn a_cells_machine_is_the_median_of_its_measured_runs_per_second() {
        let runs = vec![
            // A warm-up run, not counted.
            run(0, 0, true, Some(context(1, 5.0, 9_999, 9_999))),
            run(1, 0, false, Some(context(2, 0.0, 100, 1000))),
            run(2, 0, false, Some(context(1, 1.0, 300, 3000))),
            run(3, 0, false, Some(context(4, 0.0, 200, 0))),
            // No context: left out; a cell without any has no entry.
            run(4, 0, false, None),
            run(5, 1, false, None),
        ];
        let r = two_cells(runs);
        assert_eq!(r.cell_contexts.len(), 1, "{:?}", r.cell_contexts);
        let c = &r.cell_contexts[0];
        // Steal of 5 % is not busy; the foreign busy loop is.
        assert_eq!((c.cell, c.runs, c.busy_runs), (0, 3, 1));
        assert_eq!(c.foreign_cpus, 0.0);
        assert_eq!(c.tested_cpus, 0.5);
        assert!((c.steal - 0.05).abs() < 1e-12, "{}", c.steal);
        assert_eq!(c.cpus.iter().map(|k| k.cpu).collect::<Vec<_>>(), [0, 1]);
        let cpu1 = &c.cpus[1];
        // Rates, not counts: the 4 s run counted twice as many as the 2 s one.
        assert_eq!(cpu1.local_timer_per_s, 200.0);
        assert_eq!(cpu1.device_irqs_per_s, 10.0);
        assert_eq!(cpu1.busy, 0.25);
        let soft: Vec<(&str, f64)> = cpu1
            .softirqs_per_s
            .iter()
            .map(|v| (v.name.as_str(), v.per_s))
            .collect();
        assert_eq!(soft, [("NET_RX", 1000.0), ("TIMER", 250.0)], "most first");
        // A vector that never ran is not listed.
        assert!(c.cpus[0].softirqs_per_s.is_empty());
    }

    /// The kernel's warnings are told per cell, the earliest first, and a quiet log
    /// gives no warning.
    #[test]
    fn the_kernels_warnings_are_told_per_cell() {
        let logged = |ts_us: u64, text: &str| {
            let mut c = context(1, 0.0, 100, 0);
            c.kernel_messages = vec![crate::context::KernelMessage {
                level: 4,
                kernel: true,
                ts_us,
                text: text.into(),
            }];
            c
        };
        let runs = vec![
            // Warm-up runs are not measured.
            run(0, 1, true, Some(logged(1, "warm-up"))),
            run(1, 0, false, Some(context(1, 0.0, 100, 0))),
            run(2, 1, false, Some(logged(30, "second"))),
            run(3, 0, false, Some(context(1, 0.0, 100, 0))),
            run(4, 1, false, Some(logged(20, "BUG: workqueue lockup"))),
            run(5, 1, false, Some(context(1, 0.0, 100, 0))),
        ];
        let r = two_cells(runs);
        let kernel: Vec<&Warning> = r
            .warnings
            .iter()
            .filter(|w| matches!(w, Warning::KernelMessages { .. }))
            .collect();
        assert_eq!(
            kernel,
            [&Warning::KernelMessages {
                cell: 1,
                runs: 2,
                of: 3,
                messages: 2,
                first: "BUG: workqueue lockup".into(),
                run: 4,
            }]
        );
    }
}
