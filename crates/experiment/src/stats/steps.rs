//! Level shifts ("steps") in a run's per-interval series, as the multicast pinning
//! study saw in unpinned multicast throughput.
//!
//! A step is a change of level of at least `min_shift` (5 %, measured against the
//! lower of the two levels, so that a rise and the fall back count alike) with the
//! new level held for at least `min_hold_ns` (2 s). The search:
//!
//! 1. the series is smoothed by a running median over ±`min_hold` (in points): an
//!    excursion shorter than `min_hold` (a blip) vanishes, a level held longer keeps
//!    its edges;
//! 2. the smoothed series is cut into segments of at least `min_hold` by optimal
//!    partitioning (least squares, a penalty per cut that a shift of half
//!    `min_shift` over `min_hold` pays for);
//! 3. each boundary is moved to where the raw values fit the two levels best
//!    (again after step 4);
//! 4. neighbouring segments are merged, the closest first, until every boundary
//!    separates levels whose shift (the Hodges-Lehmann estimate over the raw
//!    values: the median of the differences of all pairs) is at least `min_shift`
//!    within three standard errors (at most a fifth of `min_shift`), whose values
//!    differ by a Mann-Whitney test with p below `max_p`, and that are held: from
//!    each third of one segment to the other the shift goes the same way, at least
//!    half as far, and three standard errors from none.
//!
//! The series is taken as regular: the interval is the median gap between
//! timestamps, and a series longer than [`MAX_POINTS`] is averaged into that many
//! bins first.

use serde::{Deserialize, Serialize};

use super::median;
use super::rank::mann_whitney;

/// The most points the search works on; longer series are binned.
pub const MAX_POINTS: usize = 2000;

/// What counts as a step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepConfig {
    /// The smallest level shift, as a fraction of the lower level (0.05).
    pub min_shift: f64,
    /// How long both levels must be held, ns (2 s).
    pub min_hold_ns: u64,
    /// The largest Mann-Whitney p-value of the two levels' values (0.001).
    pub max_p: f64,
}

impl Default for StepConfig {
    fn default() -> StepConfig {
        StepConfig {
            min_shift: 0.05,
            min_hold_ns: 2_000_000_000,
            max_p: 0.001,
        }
    }
}

/// One level shift.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// When the new level starts: the timestamp of its first interval, ns.
    pub t_ns: u64,
    /// The level before: the median of the segment before.
    pub before: f64,
    /// The level after: the median of the segment after.
    pub after: f64,
    /// `after / before - 1`.
    pub change: f64,
    /// How long the new level lasted (to the next step or the end), ns.
    pub held_ns: u64,
    /// The Mann-Whitney p-value of the two segments' values.
    pub p: f64,
}

/// The steps of a series: `t_ns[i]` is the start of interval `i` (increasing),
/// `values[i]` its value. Points whose value is not finite are left out.
pub fn find_steps(t_ns: &[u64], values: &[f64], config: &StepConfig) -> Vec<Step> {
    let (mut t, mut v): (Vec<u64>, Vec<f64>) = t_ns
        .iter()
        .zip(values)
        .filter(|(_, v)| v.is_finite())
        .map(|(&t, &v)| (t, v))
        .unzip();
    if v.len() < 4 {
        return Vec::new();
    }
    if v.len() > MAX_POINTS {
        (t, v) = bin(&t, &v, v.len().div_ceil(MAX_POINTS));
    }
    let mut gaps: Vec<f64> = t
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]) as f64)
        .collect();
    gaps.retain(|&g| g > 0.0);
    let dt = median(&gaps);
    let level = median(&v).abs();
    if gaps.is_empty() || dt.is_nan() || level == 0.0 || level.is_nan() {
        return Vec::new();
    }
    let m = ((config.min_hold_ns as f64 / dt).ceil() as usize).max(2);
    let n = v.len();
    if n < 2 * m {
        return Vec::new();
    }
    // Work in units of the series' level, so the squares stay small.
    let rel: Vec<f64> = v.iter().map(|x| x / level).collect();
    let smooth = running_median(&rel, m);
    let penalty = (config.min_shift / 2.0).powi(2) * m as f64;
    let mut bounds = partition(&smooth, m, penalty);
    let sigma = noise_sigma(&rel);
    refine(&rel, &mut bounds, m, sigma);
    loop {
        // The weakest boundary that fails, if any.
        let mut weakest: Option<(usize, f64)> = None;
        for k in 1..bounds.len() - 1 {
            let (left, right) = (
                &rel[bounds[k - 1]..bounds[k]],
                &rel[bounds[k]..bounds[k + 1]],
            );
            let (shift, ok) = judge(left, right, sigma, config);
            if !ok && weakest.is_none_or(|(_, s)| shift < s) {
                weakest = Some((k, shift));
            }
        }
        match weakest {
            Some((k, _)) => {
                bounds.remove(k);
            }
            None => break,
        }
    }
    refine(&rel, &mut bounds, m, sigma);
    (1..bounds.len() - 1)
        .map(|k| {
            let (a, b, c) = (bounds[k - 1], bounds[k], bounds[k + 1]);
            let before = median(&v[a..b]);
            let after = median(&v[b..c]);
            let end = t[c - 1] + dt as u64;
            Step {
                t_ns: t[b],
                before,
                after,
                change: after / before - 1.0,
                held_ns: end - t[b],
                p: mann_whitney(&v[a..b], &v[b..c]).map_or(1.0, |u| u.p),
            }
        })
        .collect()
}

/// Whether two neighbouring segments are different levels: their relative shift,
/// and whether it passes: at least `min_shift` within three standard errors (at
/// most a fifth of `min_shift`), and a Mann-Whitney p below `max_p`. Each level
/// must be held through its segment: from each third of `left` to `right`, and
/// from `left` to each third of `right`, the shift goes the same way, at least
/// half as far, and three standard errors from none (a blip that fills part of a
/// segment does not).
fn judge<'a>(left: &'a [f64], right: &'a [f64], sigma: f64, config: &StepConfig) -> (f64, bool) {
    let Some((whole, se)) = shift(left, right, sigma) else {
        return (0.0, false);
    };
    let tolerance = (3.0 * se).min(config.min_shift / 5.0);
    let big = whole.abs() + tolerance >= config.min_shift;
    let thirds = |v: &'a [f64]| {
        let k = v.len() / 3;
        [&v[..k], &v[k..v.len() - k], &v[v.len() - k..]]
    };
    let held = (thirds(left).into_iter().map(|l| (l, right)))
        .chain(thirds(right).into_iter().map(|r| (left, r)))
        .all(|(a, b)| {
            shift(a, b, sigma).is_some_and(|(s, se)| {
                s * whole > 0.0 && s.abs() >= whole.abs() / 2.0 && s.abs() >= 3.0 * se
            })
        });
    let p = mann_whitney(left, right).map_or(1.0, |u| u.p);
    (whole.abs(), big && held && p < config.max_p)
}

/// The shift from level `left` to level `right` relative to the lower one
/// (signed), and its standard error; `None` when a level is not above 0.
fn shift(left: &[f64], right: &[f64], sigma: f64) -> Option<(f64, f64)> {
    let low = median(left).min(median(right));
    if low <= 0.0 || low.is_nan() || left.is_empty() || right.is_empty() {
        return None;
    }
    // The Hodges-Lehmann estimate of the shift (the median of the differences of
    // all pairs): as robust as medians, and nearly as precise as means.
    let mut diffs: Vec<f64> = Vec::with_capacity(left.len() * right.len());
    for x in right {
        diffs.extend(left.iter().map(|y| x - y));
    }
    // Its standard error for (nearly) normal values: sqrt(pi / 3) sigma
    // sqrt(1/n1 + 1/n2).
    let se = 1.0233 * sigma * (1.0 / left.len() as f64 + 1.0 / right.len() as f64).sqrt();
    Some((median(&diffs) / low, se / low))
}

/// Moves each boundary, within `m` points and keeping segments of at least `m`,
/// to where the raw values fit the two levels best (least absolute deviations from
/// the two segments' medians; a value more than 4 `sigma` beyond both levels, an
/// outlier, fits neither): the smoothed series places an edge only to within its
/// noise.
fn refine(v: &[f64], bounds: &mut [usize], m: usize, sigma: f64) {
    for k in 1..bounds.len() - 1 {
        let (a, b, c) = (bounds[k - 1], bounds[k], bounds[k + 1]);
        let (ml, mr) = (median(&v[a..b]), median(&v[b..c]));
        let (lo, hi) = ((a + m).max(b.saturating_sub(m)), (c - m).min(b + m));
        let range = ml.min(mr) - 4.0 * sigma..=ml.max(mr) + 4.0 * sigma;
        // cost(j) - cost(lo) = sum over lo <= i < j of (|x - ml| - |x - mr|)
        let (mut best, mut at, mut acc) = (0.0, lo, 0.0);
        for (j, x) in v.iter().enumerate().take(hi).skip(lo) {
            if range.contains(x) {
                acc += (x - ml).abs() - (x - mr).abs();
            }
            if acc < best {
                (best, at) = (acc, j + 1);
            }
        }
        bounds[k] = at;
    }
}

/// The noise of a series around its levels: the median absolute first
/// difference, scaled to a normal standard deviation (steps barely move it).
fn noise_sigma(v: &[f64]) -> f64 {
    let d: Vec<f64> = v.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    median(&d) / (0.6745 * std::f64::consts::SQRT_2)
}

/// The running median over `i - h ..= i + h`, the window cut at the ends.
fn running_median(v: &[f64], h: usize) -> Vec<f64> {
    let mut window = Vec::with_capacity(2 * h + 1);
    (0..v.len())
        .map(|i| {
            window.clear();
            window.extend_from_slice(&v[i.saturating_sub(h)..(i + h + 1).min(v.len())]);
            window.sort_by(f64::total_cmp);
            let n = window.len();
            if n % 2 == 1 {
                window[n / 2]
            } else {
                (window[n / 2 - 1] + window[n / 2]) / 2.0
            }
        })
        .collect()
}

/// The least-squares segmentation of `v` into segments of at least `m` points
/// with `penalty` per segment (optimal partitioning, O(n^2)); returns the
/// boundaries, 0 first and `v.len()` last.
fn partition(v: &[f64], m: usize, penalty: f64) -> Vec<usize> {
    let n = v.len();
    let mut s1 = vec![0.0; n + 1];
    let mut s2 = vec![0.0; n + 1];
    for (i, x) in v.iter().enumerate() {
        s1[i + 1] = s1[i] + x;
        s2[i + 1] = s2[i] + x * x;
    }
    let cost = |i: usize, j: usize| {
        let (s, q, k) = (s1[j] - s1[i], s2[j] - s2[i], (j - i) as f64);
        (q - s * s / k).max(0.0)
    };
    let mut best = vec![f64::INFINITY; n + 1];
    let mut from = vec![0usize; n + 1];
    best[0] = 0.0;
    for j in m..=n {
        // The last segment is i..j: i = 0, or i >= m with a reachable best[i].
        let mut pick = (f64::INFINITY, 0);
        for i in std::iter::once(0).chain(m..=j - m) {
            if !best[i].is_finite() {
                continue;
            }
            let c = best[i] + cost(i, j) + penalty;
            if c < pick.0 {
                pick = (c, i);
            }
        }
        best[j] = pick.0;
        from[j] = pick.1;
    }
    let mut bounds = vec![n];
    let mut j = n;
    while j > 0 {
        j = from[j];
        bounds.push(j);
    }
    bounds.reverse();
    bounds
}

/// Averages consecutive points into bins of `k`; a bin's time is its first point's.
fn bin(t: &[u64], v: &[f64], k: usize) -> (Vec<u64>, Vec<f64>) {
    t.chunks(k)
        .zip(v.chunks(k))
        .map(|(t, v)| (t[0], v.iter().sum::<f64>() / v.len() as f64))
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_finds_a_clean_step_and_respects_min_length() {
        let mut v = vec![1.0; 30];
        v.extend(vec![1.1; 30]);
        assert_eq!(partition(&v, 10, 0.01), [0, 30, 60]);
        // A 5-point blip cannot be a segment of 10.
        let mut b = vec![1.0; 40];
        b[20..25].iter_mut().for_each(|x| *x = 2.0);
        let bounds = partition(&running_median(&b, 10), 10, 0.01);
        assert_eq!(bounds, [0, 40]);
    }

    #[test]
    fn running_median_keeps_edges_and_drops_spikes() {
        let mut v = vec![1.0; 10];
        v.extend(vec![2.0; 10]);
        v[3] = 9.0;
        let s = running_median(&v, 2);
        assert_eq!(s[3], 1.0);
        assert_eq!(&s[8..12], &[1.0, 1.0, 2.0, 2.0]);
    }
}
