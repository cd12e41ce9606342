//! The statistics of an experiment, on runs: one run is one sample.
//!
//! - per cell and metric, the median with a percentile-bootstrap confidence
//!   interval ([`median_ci`]);
//! - per comparison of a cell with the baseline, the ratio of the medians with its
//!   bootstrap interval ([`ratio_ci`]) and a two-sided Mann-Whitney U test
//!   ([`rank::mann_whitney`]: exact without ties for up to 50 runs a cell, else the
//!   normal approximation with tie correction), the p-values Holm-corrected across
//!   all the comparisons of the experiment ([`rank::holm`]);
//! - the [`Significance`]: a difference is real only when the corrected p is below
//!   `alpha` (0.05) **and** the whole ratio interval lies beyond the noise
//!   threshold (default 2 %: its lower end at least 1.02, or its upper end at most
//!   0.98);
//! - warnings ([`warnings`]): drift across rounds, a slow first run;
//! - level shifts inside a run's per-interval series ([`steps`]).
//!
//! Every random draw comes from [`crate::Rng`] with a stream derived from the
//! experiment's seed, so the same runs and seed give the same numbers.

pub mod rank;
pub mod steps;
pub mod warnings;

use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// Which way a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Latency, lost messages, missed periods: less is better.
    LowerIsBetter,
    /// Throughput, messages per second: more is better.
    HigherIsBetter,
}

impl Direction {
    /// Whether going from `from` to `to` is an improvement.
    pub fn is_better(self, from: f64, to: f64) -> bool {
        match self {
            Direction::LowerIsBetter => to < from,
            Direction::HigherIsBetter => to > from,
        }
    }
}

/// The settings of the statistics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Config {
    /// The noise threshold: a ratio interval must lie wholly above 1 + noise or
    /// below 1 - noise for a difference to be real (0.02).
    pub noise: f64,
    /// The level of the Holm-corrected tests (0.05).
    pub alpha: f64,
    /// The confidence of the intervals (0.95).
    pub confidence: f64,
    /// Bootstrap resamples per interval (2000).
    pub resamples: usize,
    /// Runs a cell needs for a comparison (3).
    pub min_runs: usize,
    /// The seed of the bootstrap streams.
    pub seed: u64,
    /// A cell's runs drift when Spearman's correlation of value and round has a
    /// p-value below this (0.01).
    pub drift_alpha: f64,
    /// A first run is slow when it is worse than every other run of its cell by
    /// more than this fraction of their median (0.05).
    pub first_run_margin: f64,
    /// Level shifts in per-interval series.
    pub steps: steps::StepConfig,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            noise: 0.02,
            alpha: 0.05,
            confidence: 0.95,
            resamples: 2000,
            min_runs: 3,
            seed: 0,
            drift_alpha: 0.01,
            first_run_margin: 0.05,
            steps: steps::StepConfig::default(),
        }
    }
}

/// A point estimate with its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// The estimate.
    pub value: f64,
    /// The lower end of the interval.
    pub low: f64,
    /// The upper end of the interval (infinite, serialized as `null`, when it is
    /// unbounded: a ratio whose baseline resamples reached 0).
    pub high: f64,
}

/// The median of `values` (the mean of the middle two for an even count); NaN
/// when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    sorted_median(&v)
}

fn sorted_median(v: &[f64]) -> f64 {
    let n = v.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The `q` quantile (0 ..= 1) of sorted values by linear interpolation between
/// order statistics (Hyndman and Fan's type 7, numpy's default); NaN when empty.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    let frac = h - lo as f64;
    // Between infinities (a ratio's resamples whose baseline reached 0) the quantile
    // is the infinity, not inf - inf = NaN.
    if frac == 0.0 || sorted[lo] == sorted[hi] {
        return sorted[lo];
    }
    if sorted[hi].is_infinite() {
        return sorted[hi];
    }
    sorted[lo] + frac * (sorted[hi] - sorted[lo])
}

/// The median of one resample of `values` with replacement, in `scratch`.
fn resampled_median(values: &[f64], rng: &mut Rng, scratch: &mut Vec<f64>) -> f64 {
    scratch.clear();
    scratch.extend((0..values.len()).map(|_| values[rng.below(values.len())]));
    scratch.sort_by(f64::total_cmp);
    sorted_median(scratch)
}

/// The percentile interval of bootstrap statistics: the (1 - confidence)/2 and
/// (1 + confidence)/2 quantiles (type 7) of their sorted values.
fn percentile_interval(stats: &mut [f64], confidence: f64) -> (f64, f64) {
    stats.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    (
        quantile_sorted(stats, tail),
        quantile_sorted(stats, 1.0 - tail),
    )
}

/// The median of `values` with its percentile-bootstrap interval: `resamples`
/// resamples of `values` with replacement, each drawing its indices from `rng` in
/// turn, the interval the quantiles of their medians. `None` when empty.
pub fn median_ci(
    values: &[f64],
    confidence: f64,
    resamples: usize,
    rng: &mut Rng,
) -> Option<Estimate> {
    if values.is_empty() {
        return None;
    }
    let mut scratch = Vec::with_capacity(values.len());
    let mut stats: Vec<f64> = (0..resamples.max(1))
        .map(|_| resampled_median(values, rng, &mut scratch))
        .collect();
    let (low, high) = percentile_interval(&mut stats, confidence);
    Some(Estimate {
        value: median(values),
        low,
        high,
    })
}

/// The ratio of the median of `cell` to the median of `base` with its
/// percentile-bootstrap interval: each resample draws `cell`'s values, then
/// `base`'s, independently (the runs of two cells are not paired). `None` when a
/// sample is empty or `base`'s median is not above 0.
pub fn ratio_ci(
    cell: &[f64],
    base: &[f64],
    confidence: f64,
    resamples: usize,
    rng: &mut Rng,
) -> Option<Estimate> {
    if cell.is_empty() || base.is_empty() || median(base) <= 0.0 || median(base).is_nan() {
        return None;
    }
    let mut scratch = Vec::with_capacity(cell.len().max(base.len()));
    let mut stats: Vec<f64> = (0..resamples.max(1))
        .map(|_| {
            let c = resampled_median(cell, rng, &mut scratch);
            let b = resampled_median(base, rng, &mut scratch);
            if b > 0.0 {
                c / b
            } else {
                f64::INFINITY
            }
        })
        .collect();
    let (low, high) = percentile_interval(&mut stats, confidence);
    Some(Estimate {
        value: median(cell) / median(base),
        low,
        high,
    })
}

/// Which way a real difference goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// The cell's median is higher than the baseline's.
    Higher,
    /// The cell's median is lower than the baseline's.
    Lower,
}

/// Why a comparison is not a real difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// A cell has fewer runs than `min_runs`.
    TooFewRuns,
    /// The Holm-corrected p-value is not below `alpha`.
    NotSignificant,
    /// The ratio interval reaches into [1 - noise, 1 + noise].
    WithinNoise,
    /// The baseline's median is 0 (or not a number): there is no ratio.
    NoRatio,
    /// The two cells ran beside unequal foreign work (one's runs beside a busy loop
    /// or under the host's steal, the other's not), and too few runs of each were
    /// measured without it to compare those alone.
    UnequalBackground,
}

/// The verdict of one comparison with the baseline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Significance {
    /// A real difference: significant and wholly beyond the noise threshold.
    Real {
        /// Which way the cell's median moved.
        change: Change,
        /// Whether that is better, by the metric's [`Direction`] (lower latency is
        /// better, "faster"; higher throughput is better).
        better: bool,
    },
    /// No real difference, and the conditions that failed.
    NoRealDifference {
        /// Every condition that failed, in the order of [`Reason`].
        reasons: Vec<Reason>,
    },
}

impl Significance {
    /// Whether the difference is real.
    pub fn is_real(&self) -> bool {
        matches!(self, Significance::Real { .. })
    }

    /// The verdict for a ratio interval and a corrected p-value.
    ///
    /// `ratio` is `None` when there is no ratio (baseline median 0); `p_holm` is
    /// `None` when a cell had too few runs for a test.
    pub fn decide(
        ratio: Option<&Estimate>,
        p_holm: Option<f64>,
        direction: Direction,
        config: &Config,
    ) -> Significance {
        Significance::decide_under(ratio, p_holm, direction, config, false)
    }

    /// [`Significance::decide`], for two cells measured under unequal background when
    /// `unequal`: then never real ([`Reason::UnequalBackground`]).
    pub fn decide_under(
        ratio: Option<&Estimate>,
        p_holm: Option<f64>,
        direction: Direction,
        config: &Config,
        unequal: bool,
    ) -> Significance {
        let mut reasons = Vec::new();
        let Some(p) = p_holm else {
            let mut reasons = vec![Reason::TooFewRuns];
            if unequal {
                reasons.push(Reason::UnequalBackground);
            }
            return Significance::NoRealDifference { reasons };
        };
        if p.is_nan() || p >= config.alpha {
            reasons.push(Reason::NotSignificant);
        }
        let change = match ratio {
            None => {
                reasons.push(Reason::NoRatio);
                None
            }
            Some(r) if r.low >= 1.0 + config.noise => Some(Change::Higher),
            Some(r) if r.high <= 1.0 - config.noise => Some(Change::Lower),
            Some(_) => {
                reasons.push(Reason::WithinNoise);
                None
            }
        };
        if unequal {
            reasons.push(Reason::UnequalBackground);
        }
        match change {
            Some(change) if reasons.is_empty() => Significance::Real {
                change,
                better: match change {
                    Change::Higher => direction == Direction::HigherIsBetter,
                    Change::Lower => direction == Direction::LowerIsBetter,
                },
            },
            _ => Significance::NoRealDifference { reasons },
        }
    }
}

impl std::fmt::Display for Significance {
    /// `better (higher)`, `worse (lower)`, `no real difference (not significant,
    /// within noise)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Significance::Real { change, better } => write!(
                f,
                "{} ({})",
                if *better { "better" } else { "worse" },
                match change {
                    Change::Higher => "higher",
                    Change::Lower => "lower",
                }
            ),
            Significance::NoRealDifference { reasons } => {
                f.write_str("no real difference")?;
                let words: Vec<&str> = reasons
                    .iter()
                    .map(|r| match r {
                        Reason::TooFewRuns => "too few runs",
                        Reason::NotSignificant => "not significant",
                        Reason::WithinNoise => "within noise",
                        Reason::NoRatio => "baseline median 0",
                        Reason::UnequalBackground => "unequal background",
                    })
                    .collect();
                if !words.is_empty() {
                    write!(f, " ({})", words.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

/// One comparison of a cell's runs with the baseline's, before the correction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Compared {
    /// The ratio of medians, cell over baseline, with its interval.
    pub ratio: Option<Estimate>,
    /// The rank test; `None` when a cell has fewer than `min_runs` runs.
    pub test: Option<rank::UTest>,
}

/// Compares `cell`'s run values with `base`'s: the ratio with its interval and
/// the Mann-Whitney test. `rng` is the comparison's own stream.
pub fn compare(cell: &[f64], base: &[f64], config: &Config, rng: &mut Rng) -> Compared {
    let enough = cell.len() >= config.min_runs && base.len() >= config.min_runs;
    Compared {
        ratio: ratio_ci(cell, base, config.confidence, config.resamples, rng),
        test: if enough {
            rank::mann_whitney(cell, base)
        } else {
            None
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resampled ratios whose baseline reached 0 are infinite: the quantiles among them
    /// are infinite, never NaN.
    #[test]
    fn quantiles_between_infinities_are_infinite() {
        let inf = f64::INFINITY;
        let v = [1.0, 2.0, inf, inf, inf];
        assert_eq!(quantile_sorted(&v, 1.0), inf);
        assert_eq!(quantile_sorted(&v, 0.9), inf);
        // Between 2 and an infinity: infinite.
        assert_eq!(quantile_sorted(&v, 0.4), inf);
        assert_eq!(quantile_sorted(&v, 0.2), 1.8);
        assert_eq!(quantile_sorted(&[1.0, 2.0], 0.5), 1.5);
    }

    #[test]
    fn median_and_quantiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        let s = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile_sorted(&s, 0.0), 1.0);
        assert_eq!(quantile_sorted(&s, 0.5), 3.0);
        assert_eq!(quantile_sorted(&s, 0.1), 1.4);
        assert_eq!(quantile_sorted(&s, 1.0), 5.0);
    }

    #[test]
    fn verdict_names_what_failed() {
        let c = Config::default();
        let r = |value, low, high| Estimate { value, low, high };
        let lat = Direction::LowerIsBetter;
        assert_eq!(
            Significance::decide(Some(&r(0.8, 0.7, 0.9)), Some(0.01), lat, &c),
            Significance::Real {
                change: Change::Lower,
                better: true
            }
        );
        assert_eq!(
            Significance::decide(Some(&r(1.2, 1.1, 1.3)), Some(0.01), lat, &c).to_string(),
            "worse (higher)"
        );
        assert_eq!(
            Significance::decide(Some(&r(1.05, 1.01, 1.1)), Some(0.2), lat, &c).to_string(),
            "no real difference (not significant, within noise)"
        );
        assert_eq!(
            Significance::decide(Some(&r(1.05, 1.01, 1.1)), Some(0.01), lat, &c),
            Significance::NoRealDifference {
                reasons: vec![Reason::WithinNoise]
            }
        );
        assert_eq!(
            Significance::decide(Some(&r(1.3, 1.1, 1.5)), Some(0.06), lat, &c),
            Significance::NoRealDifference {
                reasons: vec![Reason::NotSignificant]
            }
        );
        assert_eq!(
            Significance::decide(None, None, lat, &c),
            Significance::NoRealDifference {
                reasons: vec![Reason::TooFewRuns]
            }
        );
    }
}
