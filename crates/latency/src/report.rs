//! The result model of a latency run: what `--json` writes and the renderers show.

use jitterlab_host::env::Environment;
use jitterlab_host::Status;
use serde::Serialize;

use crate::config::Config;
use crate::probe::Run;
use crate::stats::{Bucket, OverTime, Summary};

/// A whole run: environment, configuration, per-CPU results, verdicts.
#[derive(Clone, Debug, Serialize)]
pub struct LatencyReport {
    /// The machine it ran on.
    pub environment: Environment,
    /// What was asked.
    pub config: Config,
    /// Per CPU: the summary and the histogram buckets.
    pub cpus: Vec<CpuResult>,
    /// When the measurement started, wall-clock ns since 1970-01-01 UTC (what an export
    /// of it names its run and its rows' start by); `None` for a report not measured here.
    pub start_wall_ns: Option<u64>,
    /// Wall time of the measurement, ns.
    pub wall_ns: u64,
    /// Whether memory was locked.
    pub mlocked: bool,
    /// Whether /dev/cpu_dma_latency was held at 0.
    pub dma_latency_held: bool,
    /// Whether the run was ended early.
    pub cancelled: bool,
    /// Steal time gained per CPU during the run, in clock ticks.
    pub steal_ticks: Vec<(u32, u64)>,
    /// Conditions that make the figures less trustworthy or less comparable.
    pub warnings: Vec<String>,
    /// `--fail-above`, ns.
    pub fail_above_ns: Option<u64>,
    /// Whether a sample exceeded `--fail-above`.
    pub failed: bool,
    /// The CPUs the load generators ran on (none when there was no load).
    pub load_cpus: Option<jitterlab_cpuset::CpuSet>,
    /// What each load generator did.
    pub loads: Vec<crate::load::LoadResult>,
    /// The spike ledger (`null` without `--spike-threshold`).
    pub spikes: Option<crate::spikes::Ledger>,
    /// `--break`, ns.
    pub break_ns: Option<u64>,
    /// The sample that ended the run under `--break`.
    pub break_hit: Option<crate::probe::BreakHit>,
    /// The trace buffers `--break` marked and stopped (`top`, `instances/NAME`).
    pub break_buffers: Vec<String>,
}

/// One CPU's results.
#[derive(Clone, Debug, Serialize)]
pub struct CpuResult {
    /// The statistics.
    #[serde(flatten)]
    pub summary: Summary,
    /// Non-empty HDR buckets, ascending.
    pub buckets: Vec<Bucket>,
    /// The worst latency per stretch of the run.
    pub over_time: OverTime,
}

impl LatencyReport {
    /// How `latency` ends: [`Status::Limit`] when a sample exceeded `--fail-above` or
    /// `--break` ended the run, else [`Status::Ok`].
    pub fn status(&self) -> Status {
        Status::limit_if(self.failed || self.break_hit.is_some())
    }

    /// Builds the report from a finished run. `steal_before` and `steal_after`
    /// are /proc/stat steal ticks per CPU around the run.
    pub fn build(
        environment: Environment,
        config: Config,
        run: &Run,
        fail_above_ns: Option<u64>,
        steal_before: &[(u32, u64)],
        steal_after: &[(u32, u64)],
    ) -> LatencyReport {
        let cpus: Vec<CpuResult> = run
            .cpus
            .iter()
            .map(|s| CpuResult {
                summary: s.summary(),
                buckets: s.buckets(),
                over_time: s.over_time().clone(),
            })
            .collect();
        let steal_ticks: Vec<(u32, u64)> = steal_after
            .iter()
            .filter(|(cpu, _)| config.cpus.contains(*cpu))
            .map(|&(cpu, after)| {
                let before = steal_before
                    .iter()
                    .find(|(c, _)| *c == cpu)
                    .map_or(after, |b| b.1);
                (cpu, after.saturating_sub(before))
            })
            .collect();
        let mut warnings = run.warnings.clone();
        if let Some(v) = &environment.virtualization {
            warnings.push(format!(
                "this is a virtual machine ({v}): the host can stall it for milliseconds; judge by averages and percentiles, not the maximum"
            ));
        }
        let stolen: u64 = steal_ticks.iter().map(|s| s.1).sum();
        if stolen > 0 {
            warnings.push(format!(
                "the hypervisor stole {stolen} clock ticks from the measured CPUs during the run"
            ));
        }
        if !environment.preempt_rt {
            warnings.push(format!(
                "the kernel is not PREEMPT_RT ({}): expect longer worst cases than on an RT kernel",
                environment.preemption
            ));
        }
        if !config.policy.is_realtime() {
            warnings.push(
                "the probe runs SCHED_OTHER: timer slack (50 us by default) and the fair scheduler add to every wake-up"
                    .to_string(),
            );
        }
        let failed =
            fail_above_ns.is_some_and(|limit| cpus.iter().any(|c| c.summary.max_ns > limit));
        if let Some(l) = run.ledger.as_ref().filter(|l| l.dropped > 0) {
            warnings.push(format!(
                "{} spikes were not kept in the ledger (too many, or the watcher fell behind)",
                l.dropped
            ));
        }
        LatencyReport {
            environment,
            break_ns: config.break_ns,
            config,
            cpus,
            start_wall_ns: None,
            wall_ns: run.wall_ns,
            mlocked: run.mlocked,
            dma_latency_held: run.dma_latency_held,
            cancelled: run.cancelled,
            steal_ticks,
            warnings,
            fail_above_ns,
            failed,
            load_cpus: None,
            loads: Vec::new(),
            spikes: run.ledger.clone(),
            break_hit: run.break_hit,
            break_buffers: run.break_buffers.clone(),
        }
    }
}

/// cyclictest's `-h` histogram of a run: 1 us rows per CPU and the overflows,
/// with latencies truncated to whole microseconds as cyclictest computes them.
#[derive(Clone, Debug, Serialize)]
pub struct CyclictestHistogram {
    /// Rows: `rows[us][thread]` = samples with that whole-microsecond latency.
    pub rows: Vec<Vec<u64>>,
    /// Per thread: samples at or above the last row.
    pub overflows: Vec<u64>,
    /// Per thread: minimum, us.
    pub min_us: Vec<u64>,
    /// Per thread: mean, us (truncated).
    pub avg_us: Vec<u64>,
    /// Per thread: maximum, us.
    pub max_us: Vec<u64>,
}

impl CyclictestHistogram {
    /// Builds it with `rows` rows (cyclictest's `-h ROWS`).
    pub fn build(run: &Run, rows: usize) -> CyclictestHistogram {
        let per_cpu: Vec<(Vec<u64>, u64)> =
            run.cpus.iter().map(|s| s.per_microsecond(rows)).collect();
        let summaries: Vec<Summary> = run.cpus.iter().map(|s| s.summary()).collect();
        CyclictestHistogram {
            rows: (0..rows)
                .map(|r| per_cpu.iter().map(|(c, _)| c[r]).collect())
                .collect(),
            overflows: per_cpu.iter().map(|(_, o)| *o).collect(),
            min_us: summaries.iter().map(|s| s.min_ns / 1000).collect(),
            avg_us: summaries
                .iter()
                .map(|s| (s.avg_ns / 1000.0) as u64)
                .collect(),
            max_us: summaries.iter().map(|s| s.max_ns / 1000).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::BreakHit;
    use crate::stats::CpuStats;
    use crate::Stop;
    use jitterlab_cpuset::CpuSet;
    use jitterlab_host::tasks::Policy;

    /// A report of 100 samples of `latency_ns` on CPU 0, with `--fail-above`.
    fn report(latency_ns: u64, fail_above_ns: Option<u64>) -> LatencyReport {
        let mut stats = CpuStats::new(0, 1_000_000);
        for i in 0..100 {
            stats.record_at(i * 1_000_000, latency_ns);
        }
        let run = Run {
            cpus: vec![stats],
            mlocked: true,
            dma_latency_held: true,
            cancelled: false,
            wall_ns: 100_000_000,
            warnings: vec![],
            ledger: None,
            break_hit: None,
            break_buffers: vec![],
        };
        let environment = Environment {
            hostname: None,
            kernel_release: "6.1".into(),
            kernel_version: "#1".into(),
            preemption: "PREEMPT_RT".into(),
            preempt_rt: true,
            cmdline: String::new(),
            isolated_cpus: CpuSet::new(),
            nohz_full: None,
            clocksource: None,
            virtualization: None,
            cpuidle_driver: None,
            cpuidle_governor: None,
            cpufreq_governors: vec![],
        };
        let config = Config {
            cpus: CpuSet::first_n(1),
            policy: Policy::Fifo,
            priority: 95,
            interval_ns: 1_000_000,
            stop: Stop::Loops(100),
            deadline_ns: 1_000_000,
            dma_latency: true,
            force: false,
            spike_threshold_ns: None,
            break_ns: None,
        };
        LatencyReport::build(environment, config, &run, fail_above_ns, &[], &[])
    }

    /// `latency` hits its limit (status 3) on a sample over `--fail-above` or a run
    /// ended by `--break`.
    #[test]
    fn status_of_latency() {
        assert_eq!(report(20_000, None).status(), Status::Ok);
        assert_eq!(report(20_000, Some(50_000)).status(), Status::Ok);
        assert_eq!(
            report(20_000, Some(20_000)).status(),
            Status::Ok,
            "at the limit"
        );
        assert_eq!(report(20_000, Some(19_000)).status(), Status::Limit);
        let mut broken = report(20_000, None);
        broken.break_hit = Some(BreakHit {
            cpu: 0,
            latency_ns: 20_000,
            sample: 3,
            traced: false,
        });
        assert_eq!(broken.status(), Status::Limit);
    }
}
