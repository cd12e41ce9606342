//! The running system, read and changed through a root path.
//!
//! This crate reads where everything runs — CPUs and their isolation
//! ([`CpuMap`]), IRQs and their affinity ([`IrqMap`]), processes, threads and
//! kernel threads ([`read_tasks`]), workqueue masks ([`Workqueues`]) and the
//! cpuset hierarchy ([`Cgroups`]) — and changes it: thread affinity
//! ([`pin_process`], [`exec_pinned`]) and IRQ affinity ([`set_irq_affinity`],
//! [`set_default_affinity`]).
//!
//! Two modules are half the crate:
//!
//! - [`partition`]: core partitioning (`jitterlab isolate`, `verify`, `revert`,
//!   `advise`, `run`): the plan of every write and thread move, applied step by step
//!   through a [`partition::System`] (the live machine, or a fake for tests) with a
//!   crash-safe journal, reverted from that journal alone, judged per CPU by
//!   [`partition::verify`], and the boot-time alternative from [`partition::advise`].
//! - [`tracefs`]: where tracefs is mounted (and mounting it), a recording session in an
//!   instance of its own whose changes are restored on drop, the recorder behind
//!   `jitterlab record` (one thread per CPU streaming `trace_pipe_raw` pages into a
//!   spool), and the [`tracefs::Breaker`] that `latency --break` fires. It hands out
//!   raw ring-buffer pages and the format files; decoding them and writing the .dat
//!   file is the trace crate's.
//!
//! Every file is read through a [`Root`], so the same code runs on the live
//! host (`Root::live()`) and on a fixture tree copied from another machine:
//!
//! ```
//! use jitterlab_host::{irqs::parse_interrupts, Root};
//! let text = "           CPU0       CPU1\n 36:          0      30791  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\nLOC:       7126       8872   Local timer interrupts\nERR:          0\n";
//! let (cpus, irqs, counters) = parse_interrupts("/proc/interrupts".as_ref(), text)?;
//! assert_eq!(cpus, [0, 1]);
//! assert_eq!(irqs[0].actions().collect::<Vec<_>>(), ["virtio1-req.0"]);
//! assert_eq!(irqs[0].counts, [0, 30791]);
//! assert_eq!(counters[1].name, "ERR");
//! assert!(!counters[1].per_cpu);
//! # Ok::<(), jitterlab_host::Error>(())
//! ```
//!
//! It never parses traces and never formats output for people: result models
//! are plain `Serialize` structs that jitterlab-render renders. A result that decides
//! how its command ends says so with a `status()`: a [`Status`], which the models of
//! the crates above share.

#![deny(missing_docs)]

pub mod cgroups;
pub mod child;
pub mod cmdline;
pub mod cpus;
pub mod env;
mod error;
pub mod filter;
pub mod irqs;
pub mod kmsg;
pub mod lint;
pub mod overview;
pub mod partition;
pub mod pin;
mod root;
pub mod sched;
mod status;
pub mod tasks;
#[doc(hidden)]
pub mod testing;
pub mod tracefs;
pub mod usage;
pub mod window;
pub mod workqueues;

pub use cgroups::Cgroups;
pub use cpus::CpuMap;
pub use error::{Error, Result};
pub use filter::{Filter, TaskList};
pub use irqs::{set_default_affinity, set_irq_affinity, IrqMap};
pub use overview::Overview;
pub use pin::{exec_pinned, exec_status, pin_process};
pub use root::{read_file_bounded, running_as_root, Root, KALLSYMS_LIMIT, READ_LIMIT};
pub use status::Status;
pub use tasks::{read_tasks, Task, TaskQuery};
pub use workqueues::Workqueues;
