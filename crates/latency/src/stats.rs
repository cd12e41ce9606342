//! Per-CPU statistics: an exact HDR histogram plus exact sums.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Significant digits the histogram keeps: values are exact to 1 part in 1000.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// The latencies of one CPU, updated sample by sample.
#[derive(Clone, Debug)]
pub struct CpuStats {
    /// The CPU.
    pub cpu: u32,
    hist: Histogram<u64>,
    samples: u64,
    sum: u128,
    sum_sq: u128,
    min: u64,
    max: u64,
    missed: u64,
    deadline_misses: u64,
    deadline_ns: u64,
    over_time: OverTime,
}

/// The worst latency and the samples per stretch of the run, in at most
/// [`OverTime::MAX_BUCKETS`] buckets of equal width from the run's start (the width
/// doubles, merging pairs, as the run goes on): latency over time at a fixed cost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OverTime {
    /// The width of a bucket, ns.
    pub bucket_ns: u64,
    /// The worst latency of each bucket, ns (0 with no sample).
    pub worst_ns: Vec<u64>,
    /// Samples in each bucket.
    pub samples: Vec<u64>,
}

impl OverTime {
    /// Buckets kept, at most.
    pub const MAX_BUCKETS: usize = 1024;
    /// The first width, ns.
    pub const BASE_NS: u64 = 1_000_000;

    fn new() -> OverTime {
        OverTime {
            bucket_ns: Self::BASE_NS,
            worst_ns: Vec::new(),
            samples: Vec::new(),
        }
    }

    /// Counts a sample of `latency_ns` at `at_ns` from the run's start.
    pub fn record(&mut self, at_ns: u64, latency_ns: u64) {
        while at_ns / self.bucket_ns >= Self::MAX_BUCKETS as u64 {
            self.bucket_ns *= 2;
            self.worst_ns = self
                .worst_ns
                .chunks(2)
                .map(|p| p.iter().copied().max().unwrap_or(0))
                .collect();
            self.samples = self.samples.chunks(2).map(|p| p.iter().sum()).collect();
        }
        let i = (at_ns / self.bucket_ns) as usize;
        if self.worst_ns.len() <= i {
            self.worst_ns.resize(i + 1, 0);
            self.samples.resize(i + 1, 0);
        }
        self.worst_ns[i] = self.worst_ns[i].max(latency_ns);
        self.samples[i] += 1;
    }
}

/// The summary of one CPU's run; all latencies in ns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// The CPU.
    pub cpu: u32,
    /// Wake-ups measured.
    pub samples: u64,
    /// Smallest latency (exact).
    pub min_ns: u64,
    /// Mean latency (exact).
    pub avg_ns: f64,
    /// Standard deviation (exact, population).
    pub stddev_ns: f64,
    /// Median (histogram, 3 significant digits).
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p99_9_ns: u64,
    /// 99.99th percentile.
    pub p99_99_ns: u64,
    /// Largest latency (exact).
    pub max_ns: u64,
    /// Periods skipped because a wake-up came more than one interval late.
    pub missed_periods: u64,
    /// Wake-ups later than the deadline.
    pub deadline_misses: u64,
}

pub use jitterlab_units::Bucket;

impl CpuStats {
    /// Empty statistics for `cpu`, counting deadline misses above `deadline_ns`.
    pub fn new(cpu: u32, deadline_ns: u64) -> CpuStats {
        let mut hist =
            Histogram::new(SIGNIFICANT_DIGITS).expect("3 significant digits is a valid precision");
        hist.auto(true);
        CpuStats {
            cpu,
            hist,
            samples: 0,
            sum: 0,
            sum_sq: 0,
            min: u64::MAX,
            max: 0,
            missed: 0,
            deadline_misses: 0,
            deadline_ns,
            over_time: OverTime::new(),
        }
    }

    /// Records one wake-up latency, `at_ns` after the run's start (also into the
    /// latency over time).
    pub fn record_at(&mut self, at_ns: u64, latency_ns: u64) {
        self.record(latency_ns);
        self.over_time.record(at_ns, latency_ns.min(u64::MAX / 4));
    }

    /// The latency over time recorded by [`CpuStats::record_at`].
    pub fn over_time(&self) -> &OverTime {
        &self.over_time
    }

    /// Records one wake-up latency.
    pub fn record(&mut self, latency_ns: u64) {
        // `record` resizes the histogram as needed (`saturating_record` would clamp
        // to the current range instead); clamp absurd values rather than lose them.
        let v = latency_ns.min(u64::MAX / 4);
        if self.hist.record(v).is_err() {
            self.hist.saturating_record(v);
        }
        self.samples += 1;
        self.sum += u128::from(v);
        self.sum_sq += u128::from(v) * u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        if v > self.deadline_ns {
            self.deadline_misses += 1;
        }
    }

    /// Counts periods skipped by a late wake-up.
    pub fn add_missed(&mut self, periods: u64) {
        self.missed += periods;
    }

    /// Wake-ups recorded.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The largest latency so far (0 before any sample).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Merges another CPU's statistics into these (for an all-CPU summary).
    pub fn merge(&mut self, other: &CpuStats) {
        // Both histograms auto-resize, so adding cannot fail.
        let _ = self.hist.add(&other.hist);
        self.samples += other.samples;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.missed += other.missed;
        self.deadline_misses += other.deadline_misses;
    }

    /// The summary.
    pub fn summary(&self) -> Summary {
        let n = self.samples;
        let (avg, stddev) = if n == 0 {
            (0.0, 0.0)
        } else {
            let mean = self.sum as f64 / n as f64;
            let var = (self.sum_sq as f64 / n as f64 - mean * mean).max(0.0);
            (mean, var.sqrt())
        };
        // A percentile is its bucket's highest equivalent value, which may lie
        // a little past the exact extremes: keep it inside them.
        let q = |p: f64| {
            if n == 0 {
                0
            } else {
                self.hist.value_at_quantile(p).clamp(self.min, self.max)
            }
        };
        Summary {
            cpu: self.cpu,
            samples: n,
            min_ns: if n == 0 { 0 } else { self.min },
            avg_ns: avg,
            stddev_ns: stddev,
            p50_ns: q(0.5),
            p90_ns: q(0.9),
            p99_ns: q(0.99),
            p99_9_ns: q(0.999),
            p99_99_ns: q(0.9999),
            max_ns: self.max,
            missed_periods: self.missed,
            deadline_misses: self.deadline_misses,
        }
    }

    /// The non-empty buckets of the histogram, ascending.
    pub fn buckets(&self) -> Vec<Bucket> {
        self.hist
            .iter_recorded()
            .map(|v| Bucket {
                le_ns: Some(self.hist.highest_equivalent(v.value_iterated_to())),
                count: v.count_at_value(),
            })
            .collect()
    }

    /// Counts per 1 us bucket from 0 to `rows - 1` us, and the samples at or
    /// above `rows` us (cyclictest's `-h` histogram and its overflows).
    /// A bucket of the HDR histogram that straddles a microsecond boundary is
    /// put in the microsecond of its lowest value.
    pub fn per_microsecond(&self, rows: usize) -> (Vec<u64>, u64) {
        let mut counts = vec![0u64; rows];
        let mut overflow = 0;
        for v in self.hist.iter_recorded() {
            let low = self.hist.lowest_equivalent(v.value_iterated_to());
            let us = (low / 1000) as usize;
            match counts.get_mut(us) {
                Some(c) => *c += v.count_at_value(),
                None => overflow += v.count_at_value(),
            }
        }
        (counts, overflow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_time_keeps_the_worst_of_each_stretch_in_bounded_buckets() {
        let mut s = CpuStats::new(0, u64::MAX);
        // 10 s of 1 ms samples: 10,000 samples, one 500 us spike at 7.3 s.
        for i in 0..10_000u64 {
            let lat = if i == 7_300 { 500_000 } else { 5_000 + i % 7 };
            s.record_at(i * 1_000_000, lat);
        }
        let o = s.over_time();
        assert!(o.worst_ns.len() <= OverTime::MAX_BUCKETS);
        assert_eq!(o.samples.iter().sum::<u64>(), 10_000);
        assert_eq!(
            o.bucket_ns, 16_000_000,
            "1 ms doubled until 10 s fit 1024 buckets"
        );
        let spike = (7_300_000_000 / o.bucket_ns) as usize;
        assert_eq!(o.worst_ns[spike], 500_000);
        assert!(o
            .worst_ns
            .iter()
            .enumerate()
            .all(|(i, &w)| i == spike || w < 5_010));
    }

    #[test]
    fn exact_moments_and_percentiles() {
        let mut s = CpuStats::new(3, 50_000);
        for v in 1..=1000u64 {
            s.record(v * 1000); // 1 us .. 1000 us
        }
        let m = s.summary();
        assert_eq!(m.cpu, 3);
        assert_eq!(m.samples, 1000);
        assert_eq!(m.min_ns, 1000);
        assert_eq!(m.max_ns, 1_000_000);
        assert!((m.avg_ns - 500_500.0).abs() < 1e-6);
        // Population stddev of 1..=1000 us is 288.675 us.
        assert!((m.stddev_ns - 288_675.13).abs() < 1.0, "{}", m.stddev_ns);
        // Percentiles within 3 significant digits.
        let close = |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 * 1e-3;
        assert!(close(m.p50_ns, 500_000), "{}", m.p50_ns);
        assert!(close(m.p90_ns, 900_000), "{}", m.p90_ns);
        assert!(close(m.p99_ns, 990_000), "{}", m.p99_ns);
        assert!(close(m.p99_9_ns, 999_000), "{}", m.p99_9_ns);
        assert_eq!(m.deadline_misses, 950, "above 50 us");
        assert!(m.p99_99_ns <= m.max_ns && m.p50_ns >= m.min_ns);
        let total: u64 = s.buckets().iter().map(|b| b.count).sum();
        assert_eq!(total, 1000, "histogram total equals samples");
    }

    #[test]
    fn huge_values_do_not_overflow() {
        let mut s = CpuStats::new(0, 1);
        s.record(7);
        s.record(3_600_000_000_000); // an hour
        s.record(u64::MAX);
        let m = s.summary();
        assert_eq!(m.samples, 3);
        assert_eq!(m.min_ns, 7);
        assert_eq!(s.buckets().iter().map(|b| b.count).sum::<u64>(), 3);
    }

    #[test]
    fn microsecond_rows_and_overflow() {
        let mut s = CpuStats::new(0, u64::MAX);
        for v in [0, 999, 1000, 1999, 2500, 150_000] {
            s.record(v);
        }
        let (rows, over) = s.per_microsecond(100);
        assert_eq!(rows[0], 2);
        assert_eq!(rows[1], 2);
        assert_eq!(rows[2], 1);
        assert_eq!(over, 1);
        assert_eq!(rows.iter().sum::<u64>() + over, 6);
    }

    #[test]
    fn merge_adds_up() {
        let mut a = CpuStats::new(0, 10);
        let mut b = CpuStats::new(1, 10);
        a.record(5);
        b.record(20);
        b.add_missed(2);
        a.merge(&b);
        let m = a.summary();
        assert_eq!(
            (
                m.samples,
                m.min_ns,
                m.max_ns,
                m.missed_periods,
                m.deadline_misses
            ),
            (2, 5, 20, 2, 1)
        );
    }

    #[test]
    fn empty_summary_is_zero() {
        let m = CpuStats::new(0, 10).summary();
        assert_eq!((m.samples, m.min_ns, m.max_ns, m.p99_ns), (0, 0, 0, 0));
    }
}
