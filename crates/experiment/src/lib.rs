//! Experiments: A/B runs of a workload under affinity, partitioning and load
//! scenarios, and the statistics that say whether a difference is real.
//!
//! A [`Recipe`] (TOML, [`recipe`]) names factors whose cross product gives the
//! cells, what each run measures, how many rounds of how long, and in what order;
//! [`Recipe::plan`] lays out every run for a seed (interleaved rounds by default,
//! warm-up runs marked). The runner runs them and hands the values back as
//! [`Run`]s; [`ExperimentReport::new`] computes, per metric, each cell's median
//! with a bootstrap interval, each cell against its baseline (ratio of medians
//! with its interval, a Mann-Whitney test, Holm-corrected), the verdicts ([`Significance`]), the
//! warnings (drift across rounds, a slow first run) and the level shifts in the
//! runs' per-interval series ([`stats::steps`]). One run is one sample.
//!
//! ```
//! use jitterlab_experiment::{ExperimentReport, Recipe, Run};
//! use jitterlab_experiment::stats::Config;
//!
//! let recipe = Recipe::parse("ab.toml", r#"
//!     name = "ab"
//!     rounds = 8
//!     [factors]
//!     load = ["none", "cpu:2"]
//!     [[measure.command]]
//!     name = "rate"
//!     command = "my-bench"
//!     regex = "rate: ([0-9.]+)"
//!     unit = "op/s"
//!     better = "higher"
//! "#)?;
//! let cells = recipe.cells();
//! assert_eq!(cells[1].label, "load=cpu:2");
//! let plan = recipe.plan(42);
//! assert_eq!(plan.runs.len(), 2 * (8 + 1)); // one warm-up run per cell
//!
//! // The runner's values: the loaded cell is 20 % slower.
//! let runs = plan.runs.iter().map(|p| Run {
//!     seq: p.seq, cell: p.cell, round: p.round, warmup: p.warmup, traced: p.trace,
//!     values: [("rate".to_string(), (100.0 + p.seq as f64 % 3.0) * if p.cell == 1 { 0.8 } else { 1.0 })].into(),
//!     series: vec![], error: None, context: None,
//! }).collect();
//! let config = Config { seed: 42, noise: recipe.noise, ..Config::default() };
//! let result = ExperimentReport::new(&recipe.name, recipe.metrics(), cells, recipe.baselines(), runs, config);
//! let cmp = &result.metric("rate").unwrap().comparisons[0];
//! assert_eq!(cmp.verdict.to_string(), "worse (lower)");
//! # Ok::<(), jitterlab_experiment::RecipeError>(())
//! ```
//!
//! This crate is pure: it never touches the host. Applying a cell's settings,
//! running the workloads and the probe, recording traces and rendering the result
//! are the runner's and the renderers' (jitterlab-host, jitterlab-latency,
//! jitterlab-render).

#![deny(missing_docs)]

pub mod answers;
pub mod context;
pub mod explain;
pub mod recipe;
pub mod report;
mod rng;
pub mod stats;

pub use explain::{Explanation, Testbed};
pub use recipe::{Cell, Plan, Recipe, RecipeError};
pub use report::{ExperimentReport, Metric, Run, Series};
pub use rng::Rng;
pub use stats::Significance;
