//! Recipes: an experiment as a TOML file.
//!
//! ```toml
//! name = "tcp-affinity"
//! rounds = 15            # measured runs per cell (15)
//! duration = "10s"       # per run (10s)
//! warmup = 1             # discarded runs per cell (1)
//! order = "interleaved"  # or sequential, abba (interleaved)
//! noise = "2%"           # the noise threshold of the verdicts (2%)
//! precision = "3%"       # stop early once every median is known to +-3% (off)
//! trace = "first"        # or all, none (first)
//!
//! [factors]              # their cross product gives the cells
//! affinity = ["unpinned", "irq-cpu", "not-irq-cpu"]
//! load = ["none", "cpu:2"]
//!
//! [measure.tcp]
//! bitrate = "1G"
//! client_cpus = "0"
//!
//! [baseline]             # what the others are compared with (the first cell)
//! affinity = "unpinned"  # naming some factors: a baseline per level of the others
//! ```
//!
//! The factors, in this order whatever the file's: `affinity` of the processes
//! under test ([`Affinity`]: `unpinned`, a CPU list, `irq-cpu`, `not-irq-cpu`, or
//! per role, `sender:0 receiver:1`), `irq` affinity ([`IrqLevel`]: `unchanged`,
//! `SELECTOR=CPUS`), `partition` ([`Partition`]: `off`, `on:CPUS`), `load`
//! `bitrate` of `measure.tcp` (`1G`, `unlimited`), `load`
//! ([`Load`]: `none`, `cpu:N`, `io:N`, `mem:N`, `cmd:COMMAND`) and `setup`
//! ([`SetupLevel`]: `[[factors.setup]]` tables of `name`, `setup`, `teardown`).
//! Top-level `setup` and `teardown` commands run once around the experiment, and
//! `[workload] command = "..."` is a process under test for command measures.
//!
//! The measures ([`Measures`]): `[measure.latency]` (`cpus`, `interval`, `priority`,
//! `break`), `[[measure.command]]` (`name`, `command`, `json` or `regex`, `unit`,
//! `better = "higher"|"lower"`), `[measure.tcp]` (`bitrate`, `streams`, `interval`,
//! `server_cpus`, `client_cpus`) and `[measure.mcast]` (`payload`, `rate`,
//! `interval`, `sender_cpus`, `receiver_cpus`).
//!
//! [`Recipe::parse`] checks everything it can without the host; an error names the
//! file, line and column and what was expected there. [`Recipe::parse_on`] also
//! checks the recipe against the machine it is to run on ([`HostFacts`], which the
//! runner reads): every CPU it names online, every IRQ it names there, a partition
//! that leaves a CPU for housekeeping; so that a recipe this machine cannot run is
//! refused before anything runs, not run after run.

mod builtin;
mod facts;
mod levels;
mod measure;
mod plan;
mod raw;
mod validate;

use std::fmt;

use serde::Serialize;

pub use builtin::{builtin, builtins, Builtin};
pub use facts::{HostFacts, IrqFacts};
pub use levels::{
    Affinity, IrqLevel, IrqSelector, Load, Partition, Pin, Placement, Role, SetupLevel,
};
pub use measure::{
    CommandMeasure, Extract, LatencyMeasure, McastMeasure, Measures, TcpMeasure, LATENCY_METRICS,
};
pub use plan::{plan, Order, Plan, PlannedRun, Trace};

use crate::report::Metric;

/// A checked recipe.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recipe {
    /// The experiment's name (letters, digits, `.`, `_`, `-`).
    pub name: String,
    /// What it asks, for `--list`.
    pub description: String,
    /// Measured runs per cell (15: with 15 runs a cell, a 10 % difference under
    /// this VM's run-to-run noise, about 4 %, is called real 19 times in 20).
    pub rounds: u32,
    /// The length of a run, ns.
    pub duration_ns: u64,
    /// Warm-up runs per cell, discarded.
    pub warmup: u32,
    /// The order of the runs.
    pub order: Order,
    /// The seed of the order and the statistics; `None`: the runner draws one and
    /// records it.
    pub seed: Option<u64>,
    /// The noise threshold of the verdicts, a fraction (0.02).
    pub noise: f64,
    /// Stop before `rounds` once every cell's median of every metric is known to this
    /// precision: its 95 % interval's half-width over the median (`None`: run every
    /// round).
    pub precision: Option<f64>,
    /// Which runs are traced.
    pub trace: Trace,
    /// Run once before the experiment (`sh -c`).
    pub setup: Option<String>,
    /// Run once after the experiment, also when it failed.
    pub teardown: Option<String>,
    /// The factors, in the order affinity, irq, partition, bitrate, load, setup.
    pub factors: Vec<Factor>,
    /// A process under test that runs through each run.
    pub workload: Option<Workload>,
    /// What a run measures.
    pub measures: Measures,
    /// The baseline's levels: each cell is compared with the cell that has these
    /// levels of these factors and its own of the others. By default the first
    /// level of every factor: one baseline, the first cell. A baseline that names
    /// some of the factors gives one per combination of the others (`partition =
    /// "off"`: each partitioned cell against the unpartitioned one under the same
    /// load).
    pub baseline: Vec<BaselineLevel>,
}

/// A factor's level in the baseline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BaselineLevel {
    /// The index of the factor in [`Recipe::factors`].
    pub factor: usize,
    /// Its level.
    pub level: Level,
}

/// A process under test, started before each run and ended after it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Workload {
    /// Its command line (`sh -c`).
    pub command: String,
}

/// The kinds of factor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FactorKind {
    /// The placement of the processes under test.
    Affinity,
    /// IRQ affinity.
    Irq,
    /// Core partitioning.
    Partition,
    /// The TCP client's target bitrate.
    Bitrate,
    /// A load.
    Load,
    /// Free setup and teardown commands.
    Setup,
}

impl FactorKind {
    /// The factor's name in a recipe and in labels.
    pub fn name(self) -> &'static str {
        match self {
            FactorKind::Affinity => "affinity",
            FactorKind::Irq => "irq",
            FactorKind::Partition => "partition",
            FactorKind::Bitrate => "bitrate",
            FactorKind::Load => "load",
            FactorKind::Setup => "setup",
        }
    }
}

/// One factor and its levels.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Factor {
    /// Which.
    pub kind: FactorKind,
    /// Its levels, in the recipe's order.
    pub levels: Vec<Level>,
}

/// One level of a factor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// An affinity level.
    Affinity(Affinity),
    /// An IRQ affinity level.
    Irq(IrqLevel),
    /// A partition level.
    Partition(Partition),
    /// A TCP bitrate level: iperf3's `-b` (`1G`), or `unlimited`.
    Bitrate(String),
    /// A load level.
    Load(Load),
    /// A setup level.
    Setup(SetupLevel),
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Level::Affinity(l) => l.fmt(f),
            Level::Irq(l) => l.fmt(f),
            Level::Partition(l) => l.fmt(f),
            Level::Bitrate(l) => l.fmt(f),
            Level::Load(l) => l.fmt(f),
            Level::Setup(l) => l.fmt(f),
        }
    }
}

/// What one cell sets: a level of every factor (the defaults for the factors the
/// recipe does not name).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Settings {
    /// Placements; `None`: every process unpinned (or on its measure's CPUs).
    pub affinity: Option<Affinity>,
    /// IRQ affinity.
    pub irq: IrqLevel,
    /// Core partitioning.
    pub partition: Partition,
    /// The TCP client's `-b`, overriding `measure.tcp`'s; `unlimited` is none.
    pub bitrate: Option<String>,
    /// The load.
    pub load: Load,
    /// Setup and teardown commands.
    pub setup: Option<SetupLevel>,
}

/// One cell: a combination of levels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cell {
    /// Its index, in the cross product's order (the last factor changing fastest).
    pub index: usize,
    /// `affinity=1, load=cpu:2`: the levels of the factors that have several.
    pub label: String,
    /// Each of its levels as `factor=value` (`affinity=1`), one per factor of the recipe:
    /// the words of `label`, for a report that labels cells by the levels that set them
    /// apart.
    pub level_labels: Vec<String>,
    /// Its levels, one per factor of the recipe.
    pub levels: Vec<Level>,
    /// The same as settings.
    pub settings: Settings,
}

impl Recipe {
    /// Parses and checks a recipe; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Recipe, RecipeError> {
        validate::parse(file, text, None)
    }

    /// Parses and checks a recipe, and checks it against `machine`: the CPUs of its
    /// levels and measures online, its IRQs there, its partitions leaving a CPU for
    /// housekeeping. An error names the file, line and column of the value, the value
    /// and what the machine has.
    pub fn parse_on(file: &str, text: &str, machine: &HostFacts) -> Result<Recipe, RecipeError> {
        validate::parse(file, text, Some(machine))
    }

    /// The cells: the cross product of the factors' levels, the last factor
    /// changing fastest. A recipe without factors has one cell, `default`.
    pub fn cells(&self) -> Vec<Cell> {
        let mut combos: Vec<Vec<Level>> = vec![Vec::new()];
        for factor in &self.factors {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    factor.levels.iter().map(move |l| {
                        let mut c = c.clone();
                        c.push(l.clone());
                        c
                    })
                })
                .collect();
        }
        let varying: Vec<bool> = self.factors.iter().map(|f| f.levels.len() > 1).collect();
        let any_varies = varying.contains(&true);
        combos
            .into_iter()
            .enumerate()
            .map(|(index, levels)| {
                let level_labels: Vec<String> = self
                    .factors
                    .iter()
                    .zip(&levels)
                    .map(|(f, l)| format!("{}={l}", f.kind.name()))
                    .collect();
                let parts: Vec<&str> = level_labels
                    .iter()
                    .zip(&varying)
                    .filter(|(_, &v)| v || !any_varies)
                    .map(|(l, _)| l.as_str())
                    .collect();
                let label = if parts.is_empty() {
                    "default".to_string()
                } else {
                    parts.join(", ")
                };
                Cell {
                    index,
                    label,
                    level_labels,
                    settings: settings(&levels),
                    levels,
                }
            })
            .collect()
    }

    /// Each cell's baseline cell, by cell index; a cell that is its own baseline is
    /// not compared.
    pub fn baselines(&self) -> Vec<usize> {
        let cells = self.cells();
        cells
            .iter()
            .map(|c| {
                let mut want = c.levels.clone();
                for b in &self.baseline {
                    want[b.factor] = b.level.clone();
                }
                cells
                    .iter()
                    .position(|x| x.levels == want)
                    .unwrap_or(c.index)
            })
            .collect()
    }

    /// The run plan with `seed`.
    pub fn plan(&self, seed: u64) -> Plan {
        plan(self, seed)
    }

    /// The metrics a run reports.
    pub fn metrics(&self) -> Vec<Metric> {
        self.measures.metrics()
    }
}

fn settings(levels: &[Level]) -> Settings {
    let mut s = Settings {
        affinity: None,
        irq: IrqLevel::Unchanged,
        partition: Partition::Off,
        bitrate: None,
        load: Load::None,
        setup: None,
    };
    for l in levels {
        match l {
            Level::Affinity(a) => s.affinity = Some(a.clone()),
            Level::Irq(i) => s.irq = i.clone(),
            Level::Partition(p) => s.partition = p.clone(),
            Level::Bitrate(b) => s.bitrate = Some(b.clone()),
            Level::Load(l) => s.load = l.clone(),
            Level::Setup(x) => s.setup = Some(x.clone()),
        }
    }
    s
}

/// A recipe that cannot be used, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct RecipeError {
    /// The recipe file.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What is wrong, and what was expected.
    pub message: String,
}
