//! Rank statistics: the Mann-Whitney U test, Holm's correction, Spearman's rank
//! correlation, and the normal distribution they lean on.

use serde::Serialize;

/// How a Mann-Whitney p-value was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UMethod {
    /// The exact distribution of U (no ties, both samples of at most
    /// [`EXACT_MAX`] runs).
    Exact,
    /// The normal approximation with the tie correction of the variance and a
    /// continuity correction of 0.5 (as scipy's `method="asymptotic"`).
    Normal,
}

/// The largest sample for which the exact distribution of U is used.
pub const EXACT_MAX: usize = 50;

/// The result of a two-sided Mann-Whitney U test.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct UTest {
    /// U of the first sample: the number of pairs (a, b) with a > b, ties counted
    /// one half.
    pub u: f64,
    /// The two-sided p-value.
    pub p: f64,
    /// How `p` was computed.
    pub method: UMethod,
}

/// The ranks of `values` (1-based, ties given their average rank) and the tie
/// term sum(t^3 - t) over the groups of tied values.
pub fn ranks(values: &[f64]) -> (Vec<f64>, f64) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i + 1;
        while j < order.len() && values[order[j]] == values[order[i]] {
            j += 1;
        }
        let avg = (i + j + 1) as f64 / 2.0; // ranks i+1 ..= j
        for &k in &order[i..j] {
            ranks[k] = avg;
        }
        let t = (j - i) as f64;
        ties += t * t * t - t;
        i = j;
    }
    (ranks, ties)
}

/// The two-sided Mann-Whitney U test of `a` against `b`.
///
/// Exact when there are no ties and neither sample has more than [`EXACT_MAX`]
/// values: p = 2 P(U >= max(U1, U2)), from the counts of the arrangements of the
/// two samples (the Gaussian binomial coefficients), capped at 1. Otherwise the
/// normal approximation with tie and continuity corrections. Both are scipy's
/// `mannwhitneyu(a, b, alternative="two-sided", method=...)`. `None` when a sample
/// is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<UTest> {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return None;
    }
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let (r, ties) = ranks(&all);
    let r1: f64 = r[..m].iter().sum();
    let u1 = r1 - (m * (m + 1)) as f64 / 2.0;
    let mn = (m * n) as f64;
    let u = u1.max(mn - u1);
    if ties == 0.0 && m <= EXACT_MAX && n <= EXACT_MAX {
        let counts = u_counts(m, n);
        let total: f64 = counts.iter().sum();
        // u is an integer here: no ties.
        let at_least: f64 = counts[u.round() as usize..].iter().sum();
        let p = (2.0 * at_least / total).min(1.0);
        return Some(UTest {
            u: u1,
            p,
            method: UMethod::Exact,
        });
    }
    let nn = (m + n) as f64;
    let var = mn / 12.0 * ((nn + 1.0) - ties / (nn * (nn - 1.0)));
    let p = if var <= 0.0 {
        1.0 // every value equal
    } else {
        let z = (u - mn / 2.0 - 0.5) / var.sqrt();
        (2.0 * normal_sf(z)).min(1.0)
    };
    Some(UTest {
        u: u1,
        p,
        method: UMethod::Normal,
    })
}

/// How many of the C(m+n, m) arrangements of two samples without ties give each
/// U = 0 ..= m n: the coefficients of the Gaussian binomial
/// prod_{k=1..m} (1 - q^(n+k)) / (1 - q^k), computed exactly in integers.
fn u_counts(m: usize, n: usize) -> Vec<f64> {
    let max = m * n;
    let mut c = vec![0i128; max + 1];
    c[0] = 1;
    for k in 1..=m {
        // times (1 - q^(n+k)), truncated at degree m n
        for i in (n + k..=max).rev() {
            c[i] -= c[i - n - k];
        }
        // divided by (1 - q^k), as a power series
        for i in k..=max {
            c[i] += c[i - k];
        }
    }
    c.into_iter().map(|x| x as f64).collect()
}

/// Holm's step-down correction of `p` (one family): the i-th smallest p is
/// multiplied by (m - i + 1), made monotone, capped at 1; returned in the input's
/// order. `None` entries take no part in the family and stay `None`.
pub fn holm(p: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut order: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_some()).collect();
    order.sort_by(|&a, &b| p[a].unwrap_or(1.0).total_cmp(&p[b].unwrap_or(1.0)));
    let m = order.len();
    let mut out = vec![None; p.len()];
    let mut running = 0.0f64;
    for (i, &k) in order.iter().enumerate() {
        let adj = ((m - i) as f64 * p[k].unwrap_or(1.0)).min(1.0);
        running = running.max(adj);
        out[k] = Some(running);
    }
    out
}

/// Spearman's rank correlation of `x` and `y` (equal lengths, ties given average
/// ranks) and its two-sided p-value from the normal approximation
/// z = rho sqrt(n - 1). `None` with fewer than 3 pairs or a constant series.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<(f64, f64)> {
    let n = x.len();
    if n < 3 || y.len() != n {
        return None;
    }
    let (rx, _) = ranks(x);
    let (ry, _) = ranks(y);
    let mean = (n + 1) as f64 / 2.0;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for i in 0..n {
        let (dx, dy) = (rx[i] - mean, ry[i] - mean);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    let rho = sxy / (sxx * syy).sqrt();
    let z = rho.abs() * ((n - 1) as f64).sqrt();
    Some((rho, (2.0 * normal_sf(z)).min(1.0)))
}

/// P(Z > z) for a standard normal Z, to about 1e-14 relative.
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// The complementary error function: a series of positive terms below 2.5 and a
/// continued fraction (modified Lentz) above; erfc(-x) = 2 - erfc(x).
fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    let two_over_sqrt_pi = std::f64::consts::FRAC_2_SQRT_PI;
    if x < 2.5 {
        // erf(x) = 2/sqrt(pi) e^(-x^2) sum 2^k x^(2k+1) / (1 3 5 ... (2k+1))
        let x2 = x * x;
        let mut term = x;
        let mut sum = x;
        let mut k = 0.0;
        while term > sum * 1e-17 {
            k += 1.0;
            term *= 2.0 * x2 / (2.0 * k + 1.0);
            sum += term;
        }
        return 1.0 - two_over_sqrt_pi * (-x2).exp() * sum;
    }
    // erfc(x) = e^(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
    let tiny = 1e-300;
    let mut f = x;
    let mut c = x;
    let mut d = 0.0;
    for k in 1..300 {
        let a = k as f64 / 2.0;
        d = x + a * d;
        d = if d.abs() < tiny { tiny } else { d };
        c = x + a / c;
        c = if c.abs() < tiny { tiny } else { c };
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (-x * x).exp() / (f * std::f64::consts::PI.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u_counts_are_the_arrangements() {
        // m = 2, n = 2: U = 0,1,2,2,3,4 over the 6 arrangements.
        assert_eq!(u_counts(2, 2), [1.0, 1.0, 2.0, 1.0, 1.0]);
        let c = u_counts(10, 10);
        assert_eq!(c.iter().sum::<f64>(), 184_756.0); // C(20, 10)
        assert_eq!(c[0], 1.0);
        assert_eq!(c[1], 1.0);
        assert_eq!(c[2], 2.0);
        let big = u_counts(50, 50);
        assert!((big.iter().sum::<f64>() / 1.008_913_445_455_641_9e29 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn normal_tail_known_values() {
        assert!((normal_sf(0.0) - 0.5).abs() < 1e-15);
        assert!((normal_sf(1.959_963_984_540_054) - 0.025).abs() < 1e-14);
        assert!((normal_sf(3.0) / 1.349_898_031_630_094_6e-3 - 1.0).abs() < 1e-12);
        assert!((normal_sf(-1.0) - 0.841_344_746_068_542_9).abs() < 1e-14);
        assert!((normal_sf(8.0) / 6.220_960_574_271_785e-16 - 1.0).abs() < 1e-10);
    }

    #[test]
    fn ranks_average_ties() {
        let (r, t) = ranks(&[3.0, 1.0, 3.0, 2.0]);
        assert_eq!(r, [3.5, 1.0, 3.5, 2.0]);
        assert_eq!(t, 6.0);
    }
}
