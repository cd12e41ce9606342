//! Signs that the runs of a cell are not samples of one steady thing: drift across
//! rounds, and a first run slower than all the rest.

use serde::Serialize;

use super::rank::spearman;
use super::{median, Direction};

/// A trend of a cell's run values over the rounds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Drift {
    /// Spearman's rank correlation of value and round index (-1 ..= 1).
    pub rho: f64,
    /// Its two-sided p-value (normal approximation, z = rho sqrt(n - 1)).
    pub p: f64,
}

/// The drift of `values` over `rounds` (the measured round of each run), when
/// Spearman's correlation is significant at `alpha`; `None` with fewer than 5 runs.
pub fn drift(rounds: &[f64], values: &[f64], alpha: f64) -> Option<Drift> {
    if values.len() < 5 {
        return None;
    }
    let (rho, p) = spearman(rounds, values)?;
    (p < alpha).then_some(Drift { rho, p })
}

/// A first run worse than every other run of its cell.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SlowFirst {
    /// The first run's value.
    pub first: f64,
    /// The worst of the other runs.
    pub others_worst: f64,
    /// The median of the other runs.
    pub others_median: f64,
}

/// Whether the first of `values` (in the order they were run) is worse, by
/// `direction`, than every other by more than `margin` times their median; needs
/// at least 3 other runs.
pub fn slow_first(values: &[f64], direction: Direction, margin: f64) -> Option<SlowFirst> {
    let (&first, others) = values.split_first()?;
    if others.len() < 3 {
        return None;
    }
    let med = median(others);
    let slack = margin * med.abs();
    let (worst, beyond) = match direction {
        Direction::LowerIsBetter => {
            let w = others.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (w, first > w + slack)
        }
        Direction::HigherIsBetter => {
            let w = others.iter().copied().fold(f64::INFINITY, f64::min);
            (w, first < w - slack)
        }
    };
    beyond.then_some(SlowFirst {
        first,
        others_worst: worst,
        others_median: med,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trend_is_drift_and_noise_is_not() {
        let rounds: Vec<f64> = (0..10).map(f64::from).collect();
        let up: Vec<f64> = (0..10).map(|i| 100.0 + f64::from(i)).collect();
        let d = drift(&rounds, &up, 0.01).unwrap();
        assert_eq!(d.rho, 1.0);
        let flat = [5.0, 3.0, 6.0, 2.0, 4.0, 7.0, 1.0, 8.0, 3.5, 4.5];
        assert_eq!(drift(&rounds, &flat, 0.01), None);
    }

    #[test]
    fn slow_first_run_by_direction() {
        let lat = [130.0, 100.0, 102.0, 99.0, 101.0];
        assert!(slow_first(&lat, Direction::LowerIsBetter, 0.05).is_some());
        assert!(slow_first(&lat, Direction::HigherIsBetter, 0.05).is_none());
        let tput = [70.0, 100.0, 102.0, 99.0, 101.0];
        assert_eq!(
            slow_first(&tput, Direction::HigherIsBetter, 0.05),
            Some(SlowFirst {
                first: 70.0,
                others_worst: 99.0,
                others_median: 100.5
            })
        );
        // Within the margin of the others' range: no warning.
        assert!(slow_first(&[103.0, 100.0, 102.0, 99.0], Direction::LowerIsBetter, 0.05).is_none());
    }
}
