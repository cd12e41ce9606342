//! Streaming analyses of kernel traces, Tracealyzer-style.
//!
//! The data flow is one pass:
//!
//! ```text
//! EventSource ──▶ Machine (scheduler/IRQ state) ──▶ derived intervals ──▶ analyses (folds) ──▶ AnalyzeReport
//! ```
//!
//! - [`Machine`] is the one state machine: per CPU the current task, the IRQ stack, the
//!   softirq in progress and who raised each pending softirq; per task its state and pending
//!   wake-up with the waker's context. It emits [`RunSlice`]s, [`Wake`]s, [`IrqSpan`]s,
//!   [`SoftirqSpan`]s, [`Migration`]s, [`Anomaly`]s ... to a [`Sink`].
//! - The analyses ([`analysis`]) are sinks that fold those intervals into the sections of a
//!   serde [`AnalyzeReport`]: summary, CPUs, tasks, IRQs, IRQ -> task and softirq -> task
//!   chains, and the blame of the worst and the marked wake-ups. Every figure is an integer
//!   in ns; renderers convert units.
//! - A [`Filter`] (time window, CPUs, process) chooses what the analyses fold, behind the
//!   machine: the state is always computed from every event.
//! - [`migrations`] lists the sched_migrate_task events of given threads in given time
//!   windows, straight from the events.
//! - [`noise_account`](mod@noise_account) accounts for the noise probe's window from a
//!   trace of its CPU: what took the CPU in each of its gaps, and the gaps nothing in the
//!   trace explains.
//! - [`engine::pass`] is the one pass over an opened trace: every event once, to a raw
//!   consumer and to the machine, whose intervals go to every sink at once. [`analyze_trace`]
//!   and every other command that reads a trace ride it; [`analyze`] runs the analyses over
//!   any [`jitterlab_trace::EventSource`].
//!
//! This crate does **not** open files, parse text or touch the host: it takes an opened
//! trace or events from any [`jitterlab_trace::EventSource`] and returns models. Memory grows with the number of
//! CPUs, tasks and IRQs, never with the number of events.
//!
//! ```
//! use jitterlab_analyze::{Collect, Machine, MachineOptions};
//! use jitterlab_trace::{Comm, Event, EventKind, Flags, TaskState, Wakeup};
//!
//! let ev = |ts, pid, kind| Event { ts, cpu: 0, pid, flags: Flags(0), preempt_count: 0, kind };
//! let wake = Wakeup { comm: Comm::new("rt"), pid: 7, prio: 9, target_cpu: 0 };
//! let switch = EventKind::SchedSwitch {
//!     prev_comm: Comm::new("swapper/0"), prev_pid: 0, prev_prio: 120, prev_state: TaskState(0),
//!     next_comm: Comm::new("rt"), next_pid: 7, next_prio: 9,
//! };
//! let mut m = Machine::new(MachineOptions::default());
//! let mut out = Collect::default();
//! m.feed(&ev(1_000, 0, EventKind::SchedWaking(wake)), &mut out);
//! m.feed(&ev(6_000, 0, switch), &mut out);
//! m.finish(&mut out);
//! assert_eq!(out.wakes[0].latency(), 5_000);
//! ```
#![deny(missing_docs)]

pub mod analysis;
mod background;
mod driver;
pub mod engine;
mod filter;
pub use jitterlab_trace::hash;
mod intervals;
mod migrations;
mod model;
pub mod noise_account;
mod pattern;
mod sink;
mod state;
mod stats;

pub use driver::{analyze, analyze_trace, AnalyzeReport, Options, Report, Section, Source};
pub use filter::{parse_seconds_ns, EventFilter, Filter, Filtered};
pub use migrations::{migrations, MigrationEvent, MigrationFold};
pub use model::{
    Anomaly, AnomalyKind, Blind, ChainSource, FuncCall, Gap, HandlerKind, HandlerSpan, IrqSpan,
    Marker, Migration, RunSlice, SliceEnd, SliceStart, SoftirqSpan, TaskId, Wake, Waker,
};
pub use noise_account::{noise_account, NoiseAccount, NoiseFold, NoiseKind, ProbeGap};
pub use pattern::Pattern;
pub use sink::{Collect, Sink};
pub use state::{AnomalyCount, Counts, CpuInfo, Machine, MachineOptions, TaskInfo};
pub use stats::{Bucket, Buckets, DurationStats, Stats, BUCKET_BOUNDS};

pub use jitterlab_trace::SOFTIRQ_NAMES;

/// The name of softirq vector `vec`, or its number.
pub fn softirq_name(vec: u32) -> String {
    SOFTIRQ_NAMES
        .get(vec as usize)
        .map_or_else(|| format!("vec{vec}"), |s| s.to_string())
}
