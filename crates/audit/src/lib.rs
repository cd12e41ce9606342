//! `jitterlab audit`: is this machine fit for real-time work on the CPUs meant for it,
//! and what exactly to change.
//!
//! [`audit`] puts together the static checks of the host crate
//! ([`jitterlab_host::lint::static_checks`]: the kernel, its command line, CPU and
//! power, IRQs, scheduler and memory, the environment) and, unless the request is
//! static (no root, or `--root`), the measured ones of the latency crate: the wake-up
//! latency probe on the RT CPUs idle and under a load (with its spike ledger), the
//! user-space noise probe on each RT CPU in turn, and the interrupt and softirq rates
//! of each RT CPU over the noise window. From the findings it gives a [`Verdict`] per
//! RT CPU naming the limiting factor, and [`Recommendation`]s ranked by their
//! expected effect, each with the command to apply it and the way to check it.
//! [`compare`] lists what changed between two audits' JSON.
//!
//! The host-side run (`run.rs`) only measures. What was measured becomes findings in a
//! pure function of the [`Measured`] model ([`add_measured`]): one of each measured
//! finding per RT CPU and phase whatever the figures (so two audits of one machine have
//! the same ids), each judged by what both halves of its window reached
//! ([`latency_halves`], [`noise_halves`]) and marked noise-bound when one half alone
//! reached more; then [`judge`], also pure, ranks by severity and by how directly a
//! finding bears on a real-time application ([`bearing`]).
//!
//! ```
//! use jitterlab_audit::{judge, Verdict};
//! use jitterlab_host::lint::{Family, Finding, Severity};
//! let rt = jitterlab_cpuset::CpuSet::parse_list("1").unwrap();
//! let f = vec![Finding::new("env.hypervisor", Family::Environment, Severity::Medium, "a VM")];
//! let (verdicts, recs) = judge(&rt, &f);
//! assert_eq!(verdicts[0].verdict, Verdict::Tune);
//! assert_eq!(verdicts[0].limiting.as_deref(), Some("env.hypervisor"));
//! assert!(recs.is_empty()); // no fix, nothing to recommend
//! ```
//!
//! It renders nothing (jitterlab-render does) and changes nothing on the host beyond
//! its own probe threads, the loads it starts and stops, and /dev/cpu_dma_latency held
//! during the latency runs, as `jitterlab latency` does.

#![deny(missing_docs)]

mod compare;
#[cfg(test)]
mod fake;
mod findings;
mod judge;
mod model;
mod run;

pub use compare::{compare, Comparison, FindingKey, VerdictChange};
pub use findings::{add_measured, latency_halves, noise_halves, TUNE_LATENCY_NS, UNFIT_LATENCY_NS};
pub use judge::{bearing, judge, Recommendation};
pub use model::{
    AuditReport, BlamedSpike, CpuInterrupts, CpuVerdict, LatencyHalves, LatencyPhase, Measured,
    NoiseHalf, NoisePhase, Verdict,
};
pub use run::{audit, AuditRequest, KeepTraces, Mode, QUICK_NS};

/// An audit that could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request cannot be honoured (CPUs offline, all CPUs named).
    #[error("{0}")]
    Invalid(String),
    /// Reading the machine failed.
    #[error(transparent)]
    Host(#[from] jitterlab_host::Error),
    /// A probe failed.
    #[error(transparent)]
    Probe(#[from] jitterlab_latency::Error),
    /// The old audit given to compare with is not one.
    #[error("{0}")]
    Compare(String),
}
