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
//! It reads and writes nothing of the host but its own threads' scheduling and
//! /dev/cpu_dma_latency; rendering is the report crate's.

#![deny(missing_docs)]

pub mod clock;
pub mod config;
mod dma;
pub mod load;
pub mod plot;
pub mod probe;
pub mod report;
pub mod request;
pub mod spikes;
pub mod stats;

pub use config::{parse_duration_ns, Config, Stop};
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
