//! The jitterlab command line, end to end: every view against the fixture tree
//! captured from a 2-CPU VM, exit codes, and live pin and irq runs that restore
//! what they change.

mod analyze;
mod audit;
mod audit_schema;
mod convert;
mod errors;
mod experiment;
mod export;
mod irq;
mod latency;
mod live;
mod load;
mod outputs;
mod partition;
mod pftrace;
mod record;
mod report;
mod show;
mod util;
