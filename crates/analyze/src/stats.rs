//! Duration statistics: exact count, total, min, max (and when the max happened), mean;
//! percentiles from an HDR histogram of 2 significant digits (within 1%), allocated on the
//! first value and grown only to the largest value recorded.

use hdrhistogram::Histogram;
use serde::Serialize;

/// The bins of an HDR histogram of 2 significant digits from 1 (what `Histogram::new(2)`
/// keeps): 256 sub-buckets per power of two, the lower half used only in the first.
const HALF_MAGNITUDE: u32 = 7;
/// `value | SUB_MASK` caps the leading zeros of a value of the first bucket.
const SUB_MASK: u64 = (1 << (HALF_MAGNITUDE + 1)) - 1;
/// 64 less the bits of the first bucket.
const ZEROS_BASE: u32 = 64 - HALF_MAGNITUDE - 1;

/// The bin of `v`, as `Histogram::new(2)` indexes it.
#[inline]
fn bin(v: u64) -> usize {
    let bucket = ZEROS_BASE - (v | SUB_MASK).leading_zeros();
    let sub = (v >> bucket) as usize;
    ((bucket as usize + 1) << HALF_MAGNITUDE) + sub - (1 << HALF_MAGNITUDE)
}

/// The lowest value of bin `i` (the inverse of [`bin`]).
fn bin_value(i: usize) -> u64 {
    let half = 1usize << HALF_MAGNITUDE;
    let (bucket, sub) = match (i >> HALF_MAGNITUDE).checked_sub(1) {
        Some(b) => (b, (i & (half - 1)) + half),
        None => (0, i & (half - 1)),
    };
    (sub as u64) << bucket
}

/// Accumulates durations in ns.
///
/// The values are counted in the bins of an HDR histogram of 2 significant digits, a
/// plain array indexed as `hdrhistogram` does; the histogram itself is built from those
/// counts only when a percentile is asked. Recording into `Histogram::record` cost ~65
/// Ir a value (its resize and min/max checks), this ~10: 4 M values a 2.9 M-event trace.
#[derive(Clone, Debug, Default)]
pub struct DurationStats {
    count: u64,
    total: u128,
    min: u64,
    max: u64,
    max_at: u64,
    /// Values per HDR bin, up to the bin of the largest.
    bins: Vec<u32>,
}

/// The summary of a [`DurationStats`]: every figure in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Values recorded.
    pub count: u64,
    /// Their sum, ns.
    pub total_ns: u64,
    /// Smallest, ns.
    pub min_ns: u64,
    /// Mean, ns (rounded down).
    pub avg_ns: u64,
    /// Median, ns (within 1%).
    pub p50_ns: u64,
    /// 99th percentile, ns (within 1%).
    pub p99_ns: u64,
    /// Largest, ns.
    pub max_ns: u64,
    /// When the largest happened (the timestamp given with it), ns.
    pub max_at_ns: u64,
}

impl DurationStats {
    /// Records `v` ns, which happened at `at` ns.
    #[inline]
    pub fn record(&mut self, v: u64, at: u64) {
        if self.count == 0 || v < self.min {
            self.min = v;
        }
        if self.count == 0 || v > self.max {
            self.max = v;
            self.max_at = at;
        }
        self.count += 1;
        self.total += u128::from(v);
        let i = bin(v.max(1));
        if self.bins.len() <= i {
            self.bins.resize(i + 1, 0);
        }
        self.bins[i] = self.bins[i].saturating_add(1);
    }

    /// The HDR histogram of the values recorded (`None`: none).
    fn histogram(&self) -> Option<Histogram<u32>> {
        if self.count == 0 {
            return None;
        }
        // 2 significant digits never fails; auto-resize is on with `new`, and every u64
        // fits then.
        let mut h = Histogram::new(2).ok()?;
        for (i, &n) in self.bins.iter().enumerate() {
            if n > 0 {
                h.record_n(bin_value(i), n).ok()?;
            }
        }
        Some(h)
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of the values, ns.
    pub fn total(&self) -> u64 {
        u64::try_from(self.total).unwrap_or(u64::MAX)
    }

    /// The value at quantile `q` (0..=1), clamped to the exact min and max.
    pub fn quantile(&self, q: f64) -> u64 {
        self.histogram()
            .map_or(0, |h| h.value_at_quantile(q).clamp(self.min, self.max))
    }

    /// The summary; `None` when nothing was recorded.
    pub fn summary(&self) -> Option<Stats> {
        let h = self.histogram()?;
        let quantile = |q| h.value_at_quantile(q).clamp(self.min, self.max);
        Some(Stats {
            count: self.count,
            total_ns: self.total(),
            min_ns: self.min,
            avg_ns: u64::try_from(self.total / u128::from(self.count)).unwrap_or(u64::MAX),
            p50_ns: quantile(0.5),
            p99_ns: quantile(0.99),
            max_ns: self.max,
            max_at_ns: self.max_at,
        })
    }
}

/// Upper bounds of the [`Buckets`] histogram, ns: 1-2-5 steps from 1 us to 5 s.
pub const BUCKET_BOUNDS: [u64; 20] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    5_000_000_000,
];

/// A histogram with 1-2-5 bucket bounds, exact counts.
#[derive(Clone, Debug, Default)]
pub struct Buckets {
    counts: [u64; BUCKET_BOUNDS.len() + 1],
}

pub use jitterlab_units::Bucket;

impl Buckets {
    /// Counts `v` ns.
    pub fn record(&mut self, v: u64) {
        let i = BUCKET_BOUNDS.partition_point(|&b| b < v);
        self.counts[i] += 1;
    }

    /// The buckets from the first non-empty to the last non-empty one.
    pub fn to_vec(&self) -> Vec<Bucket> {
        let first = self.counts.iter().position(|&n| n > 0);
        let last = self.counts.iter().rposition(|&n| n > 0);
        let (Some(first), Some(last)) = (first, last) else {
            return Vec::new();
        };
        (first..=last)
            .map(|i| Bucket {
                le_ns: BUCKET_BOUNDS.get(i).copied(),
                count: self.counts[i],
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_are_exact_at_the_ends() {
        let mut s = DurationStats::default();
        assert!(s.summary().is_none());
        for (i, v) in [5_000u64, 1_000, 9_000, 3_000].iter().enumerate() {
            s.record(*v, i as u64 * 10);
        }
        let st = s.summary().unwrap();
        assert_eq!(
            (st.count, st.min_ns, st.max_ns, st.max_at_ns),
            (4, 1_000, 9_000, 20)
        );
        assert_eq!(st.avg_ns, 4_500);
        assert_eq!(st.total_ns, 18_000);
        assert!((2_950..=3_050).contains(&st.p50_ns), "{}", st.p50_ns);
        assert_eq!(st.p99_ns, 9_000);
    }

    #[test]
    fn bins_are_the_histograms() {
        let h = Histogram::<u32>::new(2).unwrap();
        let mut values: Vec<u64> = (0..5_000).collect();
        values.extend((0..64).flat_map(|b| {
            let p = 1u64 << b;
            [p - 1, p, p + 1, p.saturating_mul(3) / 2]
        }));
        values.extend([u64::MAX - 1, u64::MAX, 123_456_789, 987_654_321_012]);
        for v in values {
            let i = bin(v);
            assert_eq!(bin_value(i), h.lowest_equivalent(v), "{v}");
            assert_eq!(bin(bin_value(i)), i, "{v}");
        }
        assert_eq!(bin(u64::MAX), 57 * 128 - 1 + 128);
    }

    #[test]
    fn percentiles_are_the_histograms() {
        let mut s = DurationStats::default();
        let mut h = Histogram::<u32>::new(2).unwrap();
        let mut x = 12_345u64;
        for i in 0..20_000u64 {
            // xorshift: values over many powers of two, and some zeros.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = if i % 97 == 0 { 0 } else { x >> (x % 50) };
            s.record(v, i);
            h.record(v.max(1)).unwrap();
        }
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(
                s.quantile(q),
                h.value_at_quantile(q).clamp(s.min, s.max),
                "{q}"
            );
        }
        let st = s.summary().unwrap();
        assert_eq!((st.p50_ns, st.p99_ns), (s.quantile(0.5), s.quantile(0.99)));
    }

    #[test]
    fn buckets() {
        let mut b = Buckets::default();
        for v in [900, 1_000, 1_001, 4_000, 6_000_000_000] {
            b.record(v);
        }
        let v = b.to_vec();
        assert_eq!(
            v[0],
            Bucket {
                le_ns: Some(1_000),
                count: 2
            }
        );
        assert_eq!(
            v[1],
            Bucket {
                le_ns: Some(2_000),
                count: 1
            }
        );
        assert_eq!(
            v[2],
            Bucket {
                le_ns: Some(5_000),
                count: 1
            }
        );
        assert_eq!(
            v.last(),
            Some(&Bucket {
                le_ns: None,
                count: 1
            })
        );
        assert_eq!(v.len(), BUCKET_BOUNDS.len() + 1);
    }
}
