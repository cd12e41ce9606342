//! The experiment runner: `jitterlab experiment`'s host side.
//!
//! It takes a checked [`Recipe`](jitterlab_experiment::Recipe) and its run plan,
//! and for each run applies the cell's settings (IRQ affinity and partitioning
//! through the partition journal, so that they are undone after the run, on Ctrl-C
//! and, after a crash, by the next run), starts the loads and the workloads, runs
//! the measures (the latency probe, commands, the built-in `tcp` and `mcast`
//! network workloads in private network namespaces), records the traced runs and
//! hands the values back as [`Run`](jitterlab_experiment::Run)s for the
//! statistics of `jitterlab-experiment`.
//!
//! It does not compute statistics (jitterlab-experiment does) nor render anything
//! (jitterlab-render does).

#![deny(missing_docs)]

mod error;
pub mod net;

pub use error::{Error, Result};

/// What one run of one measure gave.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// Its value of each metric (`tcp.throughput`, `mcast.received`, ...), in the
    /// metric's unit.
    pub values: std::collections::BTreeMap<String, f64>,
    /// Its per-interval series.
    pub series: Vec<jitterlab_experiment::Series>,
    /// The processes (or threads) under test, by role, for the trace's explanation:
    /// the thread group ids of processes, the thread ids of built-in threads.
    pub tasks: Vec<(jitterlab_experiment::recipe::Role, u32)>,
    /// Raw outputs to keep in the experiment's directory: a file name and its bytes
    /// (`iperf3-client.json`).
    pub raw: Vec<(String, Vec<u8>)>,
}
