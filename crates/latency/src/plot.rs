//! The data of `--plot`: each CPU's latencies in logarithmic bins, ready to draw.
//!
//! Bins are computed here from the report's HDR buckets (so a plot can be remade from a
//! saved JSON report); the report crate only draws them.

use serde::Serialize;

use crate::report::LatencyReport;

/// Bins per decade of latency.
pub const BINS_PER_DECADE: u32 = 10;

/// One bin: `count` samples with latency in `[lo_ns, hi_ns)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Bin {
    /// Lower bound, ns.
    pub lo_ns: u64,
    /// Upper bound, ns.
    pub hi_ns: u64,
    /// Samples in it.
    pub count: u64,
}

/// One CPU's series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    /// The CPU.
    pub cpu: u32,
    /// Samples.
    pub samples: u64,
    /// Non-empty bins, ascending.
    pub bins: Vec<Bin>,
    /// Minimum, ns.
    pub min_ns: u64,
    /// Mean, ns.
    pub avg_ns: f64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.99th percentile, ns.
    pub p99_99_ns: u64,
    /// Maximum, ns.
    pub max_ns: u64,
}

/// Everything a latency plot shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyPlot {
    /// One line naming the machine and the run.
    pub title: String,
    /// The load and the warnings that matter for reading it.
    pub subtitle: String,
    /// Per CPU.
    pub series: Vec<Series>,
    /// The deadline, ns (drawn as a line).
    pub deadline_ns: u64,
    /// The x range, ns: whole decades that hold every sample.
    pub x_lo_ns: u64,
    /// Upper end of the x range, ns.
    pub x_hi_ns: u64,
    /// The largest bin count (for the y range).
    pub y_max: u64,
}

/// The bin index of `ns`: `floor(log10(ns) * BINS_PER_DECADE)`, with 0 ns in bin 0 (1 ns).
fn bin_of(ns: u64) -> i64 {
    let v = (ns.max(1) as f64).log10() * f64::from(BINS_PER_DECADE);
    // Guard against 10^k landing a hair under its bin.
    (v + 1e-9).floor() as i64
}

fn bin_lo(index: i64) -> u64 {
    10f64
        .powf(index as f64 / f64::from(BINS_PER_DECADE))
        .round() as u64
}

impl LatencyPlot {
    /// Bins every CPU of `report`.
    pub fn build(report: &LatencyReport) -> LatencyPlot {
        let series: Vec<Series> = report
            .cpus
            .iter()
            .map(|c| {
                let mut bins: Vec<Bin> = Vec::new();
                let mut current: Option<(i64, u64)> = None;
                for b in &c.buckets {
                    let idx = bin_of(b.le_ns.unwrap_or(u64::MAX));
                    match current.as_mut() {
                        Some((i, n)) if *i == idx => *n += b.count,
                        _ => {
                            if let Some((i, n)) = current.take() {
                                bins.push(Bin {
                                    lo_ns: bin_lo(i),
                                    hi_ns: bin_lo(i + 1),
                                    count: n,
                                });
                            }
                            current = Some((idx, b.count));
                        }
                    }
                }
                if let Some((i, n)) = current {
                    bins.push(Bin {
                        lo_ns: bin_lo(i),
                        hi_ns: bin_lo(i + 1),
                        count: n,
                    });
                }
                let s = &c.summary;
                Series {
                    cpu: s.cpu,
                    samples: s.samples,
                    bins,
                    min_ns: s.min_ns,
                    avg_ns: s.avg_ns,
                    p99_ns: s.p99_ns,
                    p99_99_ns: s.p99_99_ns,
                    max_ns: s.max_ns,
                }
            })
            .collect();
        let lo = series
            .iter()
            .filter_map(|s| s.bins.first())
            .map(|b| b.lo_ns)
            .min()
            .unwrap_or(1_000);
        let hi = series
            .iter()
            .filter_map(|s| s.bins.last())
            .map(|b| b.hi_ns)
            .max()
            .unwrap_or(1_000_000)
            .max(report.config.deadline_ns.saturating_add(1));
        let decade_floor = |v: u64| 10u64.pow((v.max(1) as f64).log10().floor() as u32);
        let decade_ceil = |v: u64| 10u64.pow((v.max(1) as f64).log10().ceil() as u32);
        let c = &report.config;
        let env = &report.environment;
        let mut subtitle = match &report.load_cpus {
            Some(cpus) => format!(
                "load on CPUs {cpus}: {}",
                report
                    .loads
                    .iter()
                    .map(|l| l.spec.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => "no load".to_string(),
        };
        if let Some(v) = &env.virtualization {
            subtitle.push_str(&format!("; virtual machine ({v})"));
        }
        LatencyPlot {
            title: format!(
                "Wake-up latency: Linux {} ({}), {} priority {}, interval {}",
                env.kernel_release,
                env.preemption,
                format!("{:?}", c.policy).to_lowercase(),
                c.priority,
                jitterlab_units::format_ns(c.interval_ns),
            ),
            subtitle,
            y_max: series
                .iter()
                .flat_map(|s| s.bins.iter().map(|b| b.count))
                .max()
                .unwrap_or(1),
            series,
            deadline_ns: c.deadline_ns,
            x_lo_ns: decade_floor(lo),
            x_hi_ns: decade_ceil(hi).max(decade_floor(lo) * 10),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_a_tenth_of_a_decade() {
        assert_eq!(bin_of(1_000), 30);
        assert_eq!(bin_of(999), 29);
        assert_eq!(bin_of(0), 0);
        assert_eq!(bin_lo(30), 1_000);
        assert_eq!(bin_lo(31), 1_259);
        assert_eq!(bin_lo(40), 10_000);
    }
}
