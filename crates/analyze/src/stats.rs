//! Duration statistics: exact count, total, min, max (and when the max happened), mean;
//! percentiles from an HDR histogram of 2 significant digits (within 1%), allocated on the
//! first value and grown only to the largest value recorded.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Accumulates durations in ns.
#[derive(Clone, Debug, Default)]
pub struct DurationStats {
    count: u64,
    total: u128,
    min: u64,
    max: u64,
    max_at: u64,
    hist: Option<Box<Histogram<u32>>>,
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
        let h = self.hist.get_or_insert_with(|| {
            // 2 significant digits never fails; auto-resize is on with `new`.
            Box::new(
                Histogram::new(2).unwrap_or_else(|_| unreachable!("2 significant digits is valid")),
            )
        });
        // Values the histogram cannot hold (beyond its range) still count in min/max/avg.
        let _ = h.record(v.max(1));
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
        match &self.hist {
            Some(h) if self.count > 0 => h.value_at_quantile(q).clamp(self.min, self.max),
            _ => 0,
        }
    }

    /// The summary; `None` when nothing was recorded.
    pub fn summary(&self) -> Option<Stats> {
        if self.count == 0 {
            return None;
        }
        Some(Stats {
            count: self.count,
            total_ns: self.total(),
            min_ns: self.min,
            avg_ns: u64::try_from(self.total / u128::from(self.count)).unwrap_or(u64::MAX),
            p50_ns: self.quantile(0.5),
            p99_ns: self.quantile(0.99),
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
