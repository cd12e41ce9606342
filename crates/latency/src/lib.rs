//! The wake-up latency probe.
//!
//! One thread per measured CPU, pinned there and real-time, sleeps on an
//! absolute `clock_nanosleep(TIMER_ABSTIME)` timer of CLOCK_MONOTONIC, as
//! cyclictest does; each wake-up's latency is the actual wake-up time minus the
//! programmed one, in ns. Latencies go into an exact HDR histogram per CPU
//! (3 significant digits, no overflow) with exact min, max, mean and standard
//! deviation; a wake-up more than one interval late counts the periods it
//! skipped (cyclictest skips them silently).
//!
//! ```
//! use jitterlab_latency::stats::CpuStats;
//! let mut s = CpuStats::new(0, 100_000);
//! for ns in [4_000, 5_000, 250_000] {
//!     s.record(ns);
//! }
//! let sum = s.summary();
//! assert_eq!((sum.samples, sum.max_ns, sum.deadline_misses), (3, 250_000, 1));
//! ```
//!
//! What it touches on the host, all through the live system:
//!
//! - its own threads: affinity, scheduling policy and priority, `mlockall`; a
//!   measuring thread whose CPU its cpuset excludes joins the isolated cpuset of a
//!   `jitterlab isolate` partition (cgroup v1, one thread; see
//!   `jitterlab_host::partition::enter_cpu`);
//! - `/dev/cpu_dma_latency`, held open at 0 during a run unless the config says not to;
//! - with a spike threshold, `/sys/devices/system/cpu/online` (to place the spike
//!   watcher off the measured CPUs) and `/proc/interrupts` and `/proc/softirqs`,
//!   read every half interval by that watcher ([`spikes`]);
//! - with `break_ns` (`--break`), tracefs: the `trace_marker` and `tracing_on` files of
//!   the top-level buffer and of every instance that is tracing are opened before the
//!   run, and the measuring thread that sees the first sample above the limit writes a
//!   marker and turns tracing off (`jitterlab_host::tracefs::Breaker`);
//! - the load generators ([`load`]): threads of its own, O_SYNC files in a temporary
//!   directory under `$TMPDIR` or /var/tmp (removed afterwards), and `sh -c COMMAND`
//!   in a process group of its own, ended with SIGTERM, then SIGKILL.
//!
//! It does not read the environment of a report (kernel, preemption model, steal time
//! from /proc/stat: the caller passes them in, read with `jitterlab_host::env`), parse
//! traces, or render anything: text, JSON and the SVG plot are drawn by
//! jitterlab-render ([`plot`] only computes the bins).

#![deny(missing_docs)]

pub mod clock;
pub mod config;
mod dma;
pub mod load;
pub mod noise_probe;
pub mod plot;
pub mod probe;
pub mod report;
pub mod request;
pub mod spikes;
pub mod stats;

pub use config::{Config, Stop};
pub use noise_probe::{run_noise, NoiseConfig, NoiseMarkers, NoiseResult};
pub use probe::{run, BreakHit, Live, Run};
pub use report::{CyclictestHistogram, LatencyReport};
pub use request::{measure, Measured, Request};

/// A probe failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A request that cannot be honoured, found before any thread started.
    #[error("{0}")]
    Invalid(String),
    /// A probe thread could not be set up (affinity, policy, spawn).
    #[error("probe setup failed: {0}")]
    Setup(String),
    /// Reading the machine around the run failed.
    #[error(transparent)]
    Host(#[from] jitterlab_host::Error),
}
