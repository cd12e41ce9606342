//! The result model of an audit: what `--json` writes.

use jitterlab_analyze::NoiseAccount;
use jitterlab_cpuset::CpuSet;
pub use jitterlab_experiment::explain::BlamedSpike;
use jitterlab_host::lint::Finding;
use jitterlab_host::Status;
use jitterlab_latency::noise_probe::NoiseResult;
use jitterlab_latency::spikes::Spike;
use jitterlab_latency::stats::Summary;
use serde::Serialize;

use crate::judge::Recommendation;

/// Whether an RT CPU is fit for real-time work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Nothing of medium or high severity concerns it.
    Ready,
    /// Findings of medium severity: it works, with the latency they add.
    Tune,
    /// A finding of high severity: it cannot meet a deadline until that is fixed.
    Unfit,
}

impl Verdict {
    /// The word printed and written.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Ready => "ready",
            Verdict::Tune => "tune",
            Verdict::Unfit => "unfit",
        }
    }
}

/// The verdict on one RT CPU.
#[derive(Clone, Debug, Serialize)]
pub struct CpuVerdict {
    /// The CPU.
    pub cpu: u32,
    /// The verdict.
    pub verdict: Verdict,
    /// The id of the finding that limits it most (highest severity, then largest
    /// effect); absent when ready.
    pub limiting: Option<String>,
    /// That finding's line.
    pub limiting_what: Option<String>,
    /// How many findings of high, medium and low severity concern it.
    pub high: u32,
    /// Medium.
    pub medium: u32,
    /// Low.
    pub low: u32,
}

/// One latency run on the RT CPUs.
#[derive(Clone, Debug, Serialize)]
pub struct LatencyPhase {
    /// `idle`, or the load (`cpu:N` on CPUs ...).
    pub load: String,
    /// The run's length, ns.
    pub wall_ns: u64,
    /// Per RT CPU, the statistics.
    pub cpus: Vec<Summary>,
    /// The worst spike the ledger caught, with the interrupts of its window.
    pub worst_spike: Option<Spike>,
    /// Steal ticks per CPU gained during the run.
    pub steal_ticks: Vec<(u32, u64)>,
    /// Per RT CPU, the interrupts and softirqs of the run (/proc/interrupts and
    /// /proc/softirqs before and after), largest first.
    pub interrupts: Vec<CpuInterrupts>,
    /// The probe's worst wake-up in the flight recorder's trace of the run (sched and
    /// irq events), blamed by `analyze`'s blame: its `cause` (`task`, `interrupts`,
    /// `no_events`, `idle`, `spread`) and verdict line.
    pub blamed: Option<BlamedSpike>,
    /// Why there is no blamed spike (tracefs missing or busy, no probe wake-up in the
    /// trace), when there is none.
    pub blame_note: Option<String>,
    /// The flight recorder's trace of the phase, when kept (`--html`, `--keep-traces`):
    /// its path as the report names it, relative to the page beside which it was kept.
    pub trace: Option<String>,
    /// Per RT CPU, the worst wake-up of each half of the phase's window: a worst case
    /// both halves reach is the machine's, one that a half alone reaches is one moment
    /// (on a VM, the host stopping the vCPU), and the findings say so.
    pub halves: Vec<LatencyHalves>,
}

/// One RT CPU's worst wake-up in each half of a latency phase.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LatencyHalves {
    /// The CPU.
    pub cpu: u32,
    /// The worst wake-up of the first half of the window, then of the second, ns.
    pub max_ns: [u64; 2],
}

/// The noise probe's window cut in two halves, each counted alone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NoiseHalf {
    /// The half's length, ns.
    pub window_ns: u64,
    /// The time in gaps that began in it, ns.
    pub noise_ns: u64,
    /// How many gaps began in it.
    pub gaps: u64,
    /// Its longest gap, ns.
    pub longest_ns: u64,
    /// The share of the half the probe had, parts per million.
    pub available_ppm: u64,
}

/// The interrupts and softirqs one CPU took over a measured window.
#[derive(Clone, Debug, Serialize)]
pub struct CpuInterrupts {
    /// The CPU.
    pub cpu: u32,
    /// `IRQ 36 virtio1-req.0`, `LOC`, `softirq TIMER` and how many, largest first.
    pub counts: Vec<(String, u64)>,
}

/// The noise probe on one RT CPU, and its window as a trace of the CPU saw it.
#[derive(Clone, Debug, Serialize)]
pub struct NoisePhase {
    /// What the probe measured.
    #[serde(flatten)]
    pub result: NoiseResult,
    /// The window accounted for from the trace: the time interrupt handlers, vectors,
    /// timers, softirqs, threads and idle took, and what each of the longest gaps was;
    /// a gap with no event in it is time the kernel has nothing to show for (on a VM the
    /// host stopping the vCPU).
    pub traced: Option<NoiseAccount>,
    /// Why there is no account (tracefs missing or busy, the markers not in the trace).
    pub trace_note: Option<String>,
    /// The trace, when kept, as for [`LatencyPhase::trace`].
    pub trace: Option<String>,
    /// The window's two halves, each counted alone ([`crate::noise_halves`]); empty
    /// when the probe kept too many gaps to split them.
    pub halves: Vec<NoiseHalf>,
}

/// What the audit measured.
#[derive(Clone, Debug, Serialize)]
pub struct Measured {
    /// The wake-up latency probe, idle then loaded.
    pub latency: Vec<LatencyPhase>,
    /// The noise probe on each RT CPU, one after the other.
    pub noise: Vec<NoisePhase>,
}

/// A whole audit.
#[derive(Clone, Debug, Serialize)]
pub struct AuditReport {
    /// The CPUs meant for real-time work.
    pub rt_cpus: CpuSet,
    /// Where they came from: `--cpus`, `isolated`, `last CPU`.
    pub rt_cpus_from: String,
    /// The other online CPUs.
    pub housekeeping: CpuSet,
    /// `static` (no measurement), `quick` or `full`.
    pub mode: String,
    /// The kernel release.
    pub kernel: String,
    /// The machine's host name (`/proc/sys/kernel/hostname`), when it can be read: what
    /// `jitterlab export` files the audit under.
    pub hostname: Option<String>,
    /// When the audit started, wall-clock ns since 1970-01-01 UTC.
    pub start_wall_ns: u64,
    /// Where the kernel configuration was read.
    pub kernel_config: Option<String>,
    /// The verdict on the machine: the worst of the RT CPUs'.
    pub verdict: Verdict,
    /// Per RT CPU.
    pub verdicts: Vec<CpuVerdict>,
    /// What should change, most effective first.
    pub recommendations: Vec<Recommendation>,
    /// Every finding, static then measured.
    pub findings: Vec<Finding>,
    /// What was measured (absent for a static audit).
    pub measured: Option<Measured>,
    /// The checks not made, or made in part, for want of root.
    pub needs_root: Vec<String>,
    /// How long the audit took, ns.
    pub wall_ns: u64,
    /// What changed since the audit given with `--compare`.
    pub compare: Option<crate::Comparison>,
}

impl AuditReport {
    /// How `audit` ends: [`Status::Limit`] when an RT CPU is unfit (for CI gates), else
    /// [`Status::Ok`].
    pub fn status(&self) -> Status {
        Status::limit_if(self.verdict == Verdict::Unfit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `audit` hits its limit (status 3, for CI gates) when an RT CPU is unfit.
    #[test]
    fn status_of_audit() {
        let report = |verdict: Verdict| AuditReport {
            rt_cpus: CpuSet::first_n(1),
            rt_cpus_from: "--cpus".into(),
            housekeeping: CpuSet::new(),
            mode: "static".into(),
            kernel: "6.1".into(),
            hostname: None,
            start_wall_ns: 0,
            kernel_config: None,
            verdict,
            verdicts: vec![],
            recommendations: vec![],
            findings: vec![],
            measured: None,
            needs_root: vec![],
            wall_ns: 0,
            compare: None,
        };
        assert_eq!(report(Verdict::Ready).status(), Status::Ok);
        assert_eq!(report(Verdict::Tune).status(), Status::Ok);
        assert_eq!(report(Verdict::Unfit).status(), Status::Limit);
    }
}
