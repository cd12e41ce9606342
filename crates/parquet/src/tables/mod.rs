//! The tables, one file each: what a row is, its columns, and how a row is pushed.

pub mod anomaly;
pub mod audit;
pub mod chain;
pub mod cpu;
pub mod experiment;
pub mod irq;
pub mod latency;
pub mod lost;
pub mod marker;
pub mod migration;
pub mod sched_slice;
pub mod softirq;
pub mod thread;
pub mod trace_info;
pub mod wakeup;
