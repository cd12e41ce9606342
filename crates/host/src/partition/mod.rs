//! Core partitioning: keep general work off some CPUs so a real-time application
//! has them to itself, reversibly.
//!
//! The pieces, in the order a user meets them:
//!
//! - [`build_plan`] reads the machine through a [`Root`](crate::Root) (live or a
//!   fixture tree) and returns a [`Plan`]: the preflight [`Check`]s and every
//!   change as a [`Step`] — a file write with its path, old and new value, a
//!   cpuset directory, or one thread's move with its old and new CPUs.
//! - [`apply`] carries a plan out through a [`System`] (the live machine, or a
//!   fake in tests), writing each step to a [`Journal`] first: the step is
//!   recorded as intended and the journal `fsync`ed before the change is made,
//!   then marked done.
//! - [`revert`] undoes a journal in reverse order — idempotently, also after the
//!   isolating process was killed halfway — and compares the machine with the
//!   [`Snapshot`] taken before the first change.
//! - [`verify`] samples the isolated CPUs and says, per CPU, what still disturbs them.
//! - [`advise`] gives the kernel command line for a boot-time partition.
//! - [`enter_partition`] and [`enter_cpu`] place a process or thread inside the
//!   partition (`jitterlab run`, the latency probe).
//!
//! PID 1 is left alone unless the request says `move_init`: it is excluded from
//! the plan like the entries of tuned's `ps_blacklist` (on a container host or a
//! sandbox it is the controller). With `move_init` its threads move by affinity
//! only, never its cgroup (moving init's cgroup breaks container tools, as the
//! core-partitioning talk warns).

mod advise;
mod apply;
mod cpusets;
mod enter;
mod fake;
mod journal;
mod judge;
mod kconfig;
mod plan;
pub(crate) mod revert;
mod snapshot;
mod step;
mod system;
mod tasks;
mod verify;

use serde::{Deserialize, Serialize};

pub use advise::{advise, Advice, BootParam};
pub use apply::{apply, apply_live, ApplyReport, Flow, StepResult, PAUSE_ENV};
pub use enter::{enter_cpu, enter_for_run, enter_partition, register_run, Placement};
#[doc(hidden)]
pub use fake::FakeSystem;
pub use journal::{Header, Journal, Recorded, RunRecord};
pub use kconfig::KernelConfig;
pub use plan::{build_plan, Check, Excluded, Plan, Request, Unmovable};
pub use revert::{revert, revert_status, RevertReport, UndoOutcome, UndoResult};
pub use snapshot::{Difference, EffectiveMove, Snapshot, TaskState};
pub use step::{Action, CpusetMove, Irqbalance, Outcome, Step, Target, TaskMove, Undo};
pub use system::{LiveSystem, System};
pub use tasks::Exclude;
pub use verify::{
    verify, Count, CpuIsolation, IrqSeen, Isolation, Level, Observation, PartitionInfo, TaskSeen,
    VerifyReport, VerifyRequest,
};

/// Where the journal lives unless `--state-dir` says otherwise: a tmpfs, gone
/// at reboot together with the state it describes.
pub const DEFAULT_STATE_DIR: &str = "/run/jitterlab";

/// The cpuset that holds everything else on cgroup v1.
pub const HOUSEKEEPING_SET: &str = "jitterlab.housekeeping";

/// The cpuset of the isolated CPUs (a v2 `isolated` partition, or a v1 set
/// without load balancing).
pub const ISOLATED_SET: &str = "jitterlab.isolated";

/// How the partition keeps tasks off the isolated CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// A cgroup v2 `isolated` partition (`cpuset.cpus.partition`).
    Cgroup2,
    /// cgroup v1 cpusets: an exclusive housekeeping set and an isolated set
    /// without load balancing, as cset's shield makes.
    Cgroup1,
    /// `sched_setaffinity` only, no cpusets.
    Affinity,
}

/// The `--method` choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodChoice {
    /// cgroup2 where the cpuset controller is on the v2 hierarchy, cgroup1 where it
    /// is on v1, affinity where there is none.
    Auto,
    /// This method, or a failed check.
    Only(Method),
}

impl Method {
    /// The name users type (`--method`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Cgroup2 => "cgroup2",
            Method::Cgroup1 => "cgroup1",
            Method::Affinity => "affinity",
        }
    }
}
