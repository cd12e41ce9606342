//! The run plan: which cell runs when, as a pure function of the recipe and a
//! seed.

use serde::{Deserialize, Serialize};

use super::Recipe;
use crate::rng::Rng;

/// The order of the runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Every round runs each cell once, in a fresh random order (seeded and
    /// recorded): slow changes of the machine spread over all cells alike.
    /// `random` is another name for it.
    #[default]
    #[serde(alias = "random")]
    Interleaved,
    /// All rounds of the first cell, then all of the next (hyperfine's order).
    Sequential,
    /// Rounds in the cells' order and reversed, alternately (A B, B A, A B, ...):
    /// a linear drift cancels out over each pair of rounds.
    Abba,
}

/// Which runs are traced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trace {
    /// The first measured run of each cell.
    #[default]
    First,
    /// Every measured run.
    All,
    /// None.
    None,
}

/// One run of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlannedRun {
    /// Its place in the experiment, from 0.
    pub seq: usize,
    /// The cell it runs.
    pub cell: usize,
    /// The round: of the measured rounds from 0, or of the warm-up runs for a
    /// warm-up run.
    pub round: u32,
    /// A warm-up run, discarded by the statistics.
    pub warmup: bool,
    /// Whether it is traced.
    pub trace: bool,
}

/// Every run of an experiment, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The seed of the order (and of the statistics).
    pub seed: u64,
    /// The order.
    pub order: Order,
    /// The runs.
    pub runs: Vec<PlannedRun>,
}

/// The plan of `recipe` with `seed`: the recipe's warm-up runs of each cell
/// first (for `sequential`, before each cell's block), then its rounds in its
/// order.
pub fn plan(recipe: &Recipe, seed: u64) -> Plan {
    let cells = recipe.cells().len();
    let mut runs = Vec::new();
    let mut push = |cell: usize, round: u32, warmup: bool| {
        let trace = !warmup
            && match recipe.trace {
                Trace::First => round == 0,
                Trace::All => true,
                Trace::None => false,
            };
        runs.push(PlannedRun {
            seq: runs.len(),
            cell,
            round,
            warmup,
            trace,
        });
    };
    let mut rng = Rng::derive(seed, &[0x006f_7264_6572]); // "order"
    let natural: Vec<usize> = (0..cells).collect();
    let round_order = |round: u32, rng: &mut Rng| -> Vec<usize> {
        let mut o = natural.clone();
        match recipe.order {
            Order::Interleaved => rng.shuffle(&mut o),
            Order::Abba if round % 2 == 1 => o.reverse(),
            _ => {}
        }
        o
    };
    match recipe.order {
        Order::Sequential => {
            for cell in 0..cells {
                for w in 0..recipe.warmup {
                    push(cell, w, true);
                }
                for r in 0..recipe.rounds {
                    push(cell, r, false);
                }
            }
        }
        Order::Interleaved | Order::Abba => {
            for w in 0..recipe.warmup {
                for cell in round_order(w, &mut rng) {
                    push(cell, w, true);
                }
            }
            for r in 0..recipe.rounds {
                for cell in round_order(r, &mut rng) {
                    push(cell, r, false);
                }
            }
        }
    }
    Plan {
        seed,
        order: recipe.order,
        runs,
    }
}
