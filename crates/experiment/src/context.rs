//! What else the machine did during a run: the CPU time of everything outside the
//! experiment (foreign processes, kernel threads), the host's steal, the experiment's
//! own tools, the processes under test, and the interrupts and softirqs per CPU.
//!
//! The runner measures it around each run (`/proc/stat`, every task's `stat`,
//! `/proc/interrupts`, `/proc/softirqs`); [`crate::ExperimentReport::new`] uses it to
//! flag runs measured beside foreign work ([`RunContext::busy`]) and never to call real a
//! difference measured under unequal background. This module only holds and reads the
//! figures; it measures nothing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::recipe::Role;

/// A run's machine context.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunContext {
    /// The run's wall time, ns (from the first reading to the last).
    pub wall_ns: u64,
    /// Per online CPU.
    pub cpus: Vec<CpuContext>,
    /// CPU time of user-space processes outside the experiment, ns (every task that
    /// is neither jitterlab nor one it started; a process that both started and ended
    /// during the run is not seen).
    pub foreign_ns: u64,
    /// The time those processes' threads were runnable but waited for a CPU, ns: with
    /// `foreign_ns`, what they wanted of the CPUs, whatever share they got (0 in a
    /// result from before it was kept).
    #[serde(default)]
    pub foreign_wait_ns: u64,
    /// CPU time of kernel threads (kworkers, ksoftirqd, rcu...), ns: partly the
    /// experiment's own work (network softirqs, writing a trace), so it is shown but
    /// does not flag a run.
    pub kernel_ns: u64,
    /// CPU time of the experiment's own tools, ns: jitterlab's threads (the latency
    /// probe, the trace recorder, load generators) and the load processes it started.
    pub tools_ns: u64,
    /// CPU time of the processes under test (the workload, the measures' commands,
    /// the network workloads' tools), ns.
    pub tested_ns: u64,
    /// The foreign processes that wanted the most of the CPUs (CPU time and wait), most
    /// first (at most 5).
    pub foreign_top: Vec<TaskTime>,
    /// The unit the kernel counts `/proc/stat`'s times in (the user-space clock tick,
    /// 10 ms on most machines), ns: each CPU's steal is known to within one. 0 when
    /// not known (a result from before it was kept).
    #[serde(default)]
    pub stat_tick_ns: u64,
    /// The processes under test by role, with their CPU time, waits and migrations (a
    /// tcp server, an mcast receiver...).
    pub roles: Vec<RoleTime>,
    /// Pairs of roles and how often they shared a CPU.
    #[serde(default)]
    pub shared: Vec<SharedCpu>,
    /// What the kernel logged at warning level or worse during the run (at most
    /// [`KERNEL_MESSAGES`]): a workqueue stall, RT throttling, a soft lockup.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_messages: Vec<KernelMessage>,
}

/// The most kernel messages kept per run.
pub const KERNEL_MESSAGES: usize = 20;

/// One record of the kernel log.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelMessage {
    /// Its level: 0 (emergency) .. 4 (warning).
    pub level: u8,
    /// Logged by the kernel itself (a process may write to the log too).
    pub kernel: bool,
    /// When, µs since boot.
    pub ts_us: u64,
    /// The message.
    pub text: String,
}

/// One CPU during a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuContext {
    /// The CPU.
    pub cpu: u32,
    /// Time not idle (user, nice, system, irq, softirq), ns.
    pub busy_ns: u64,
    /// Of which hardirq time, ns (0 without IRQ time accounting).
    pub irq_ns: u64,
    /// Of which softirq time, ns.
    pub softirq_ns: u64,
    /// Time the host ran something else on this vCPU (steal), ns.
    pub steal_ns: u64,
    /// Foreign processes' CPU time counted where each last ran (approximate: a
    /// process that moved is counted on its last CPU), ns.
    pub foreign_ns: u64,
    /// Local timer interrupts (`LOC`).
    pub local_timer: u64,
    /// Device interrupts (the numbered rows of `/proc/interrupts`).
    pub device_irqs: u64,
    /// Other architecture interrupts (rescheduling, function calls, TLB shootdowns...).
    pub other_irqs: u64,
    /// Softirqs run, by vector (`NET_RX`, `TIMER`, ...), those that ran only.
    pub softirqs: BTreeMap<String, u64>,
}

/// A process's CPU time during a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskTime {
    /// Its name.
    pub comm: String,
    /// Its process id.
    pub pid: i32,
    /// CPU time, ns.
    pub cpu_ns: u64,
    /// Time runnable but waiting for a CPU, ns.
    #[serde(default)]
    pub wait_ns: u64,
}

/// A process (or a thread of jitterlab's own) under test, by role, as the scheduler
/// saw it during the run (sampled every 20 ms from its `sched` and `schedstat`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoleTime {
    /// Its role.
    pub role: Role,
    /// Its name.
    pub comm: String,
    /// Its process id (a thread id for the built-in workloads' threads).
    pub pid: i32,
    /// A thread of jitterlab's own process (the built-in mcast workload's), not a
    /// process.
    #[serde(default)]
    pub thread: bool,
    /// The CPUs it was allowed (a list: `1`, `0-1`).
    pub allowed: String,
    /// Time it ran, ns (all its threads).
    pub cpu_ns: u64,
    /// Time it was runnable but waited for a CPU (the run queue), ns.
    pub wait_ns: u64,
    /// Moves between CPUs.
    pub migrations: u64,
    /// Times it gave up the CPU itself (waited for data, slept).
    pub voluntary_switches: u64,
    /// Times it was preempted.
    pub involuntary_switches: u64,
    /// Where it was seen running or last ran, per sample: (CPU, samples), most first.
    pub cpus: Vec<(u32, u32)>,
}

/// Two roles that were seen on one CPU: the fraction of the samples in which both were
/// (a sender and its receiver, a server and its client).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedCpu {
    /// One role.
    pub a: Role,
    /// The other.
    pub b: Role,
    /// Samples in which both were last on the same CPU, of all samples with both.
    pub fraction: f64,
    /// The samples with both.
    pub samples: u32,
}

/// A run is measured beside foreign work when the foreign processes used more than this
/// much of one CPU over the run (0.10: 10 % of a CPU).
pub const BUSY_CPUS: f64 = 0.10;

/// ... or when the host took more than this fraction of the run's CPU time (steal).
pub const STEAL_FRACTION: f64 = 0.05;

impl RunContext {
    /// The foreign processes' CPU time over the wall time: how many CPUs they kept busy
    /// on average (1.0 = one CPU the whole run).
    pub fn foreign_cpus(&self) -> f64 {
        ratio(self.foreign_ns, self.wall_ns)
    }

    /// The steal over all CPUs' time: the fraction of the run's CPU time the host took.
    pub fn steal_fraction(&self) -> f64 {
        self.steal_fraction_less(0)
    }

    /// The least steal the run can have had, as a fraction of its CPU time: the
    /// steal less one tick per CPU, since each CPU's count of ticks may have gained
    /// one between the two readings. In a run of 100 ms on two CPUs one tick of 10 ms
    /// is 5 % by itself.
    pub fn steal_fraction_at_least(&self) -> f64 {
        self.steal_fraction_less(self.stat_tick_ns)
    }

    /// The steal less `per_cpu` ns on each CPU, over all CPUs' time.
    fn steal_fraction_less(&self, per_cpu: u64) -> f64 {
        let cpus = self.cpus.len().max(1) as u64;
        let steal: u64 = self.cpus.iter().map(|c| c.steal_ns).sum();
        ratio(
            steal.saturating_sub(cpus.saturating_mul(per_cpu)),
            self.wall_ns.saturating_mul(cpus),
        )
    }

    /// Whether the run was measured beside foreign work or under the host's steal
    /// ([`BUSY_CPUS`], [`STEAL_FRACTION`], the latter by the least steal the ticks
    /// allow: [`Self::steal_fraction_at_least`]).
    pub fn busy(&self) -> bool {
        self.foreign_cpus() > BUSY_CPUS || self.steal_fraction_at_least() > STEAL_FRACTION
    }

    /// What the foreign processes wanted of the CPUs: their CPU time and their time
    /// waiting for one, over the wall time (a busy loop wants 1.0 whatever it gets).
    /// A run's placement and loads decide the share foreign work gets
    /// ([`Self::foreign_cpus`]); its demand is the background's own.
    pub fn foreign_demand(&self) -> f64 {
        ratio(
            self.foreign_ns.saturating_add(self.foreign_wait_ns),
            self.wall_ns,
        )
    }

    /// The foreign processes that wanted most of the CPUs (CPU time and wait), by
    /// name, most first: those that wanted more than [`BUSY_CPUS`].
    pub fn foreign_demanding(&self) -> Vec<&str> {
        let mut v: Vec<&TaskTime> = self
            .foreign_top
            .iter()
            .filter(|t| ratio(t.cpu_ns.saturating_add(t.wait_ns), self.wall_ns) > BUSY_CPUS)
            .collect();
        v.sort_by_key(|t| std::cmp::Reverse(t.cpu_ns.saturating_add(t.wait_ns)));
        v.into_iter().map(|t| t.comm.as_str()).collect()
    }

    /// A role's CPU time over the wall time (1.0 = one CPU the whole run).
    pub fn role_cpus(&self, role: Role) -> Option<f64> {
        let ns: u64 = self
            .roles
            .iter()
            .filter(|r| r.role == role)
            .map(|r| r.cpu_ns)
            .sum();
        self.roles
            .iter()
            .any(|r| r.role == role)
            .then(|| ratio(ns, self.wall_ns))
    }

    /// The context of one CPU.
    pub fn cpu(&self, cpu: u32) -> Option<&CpuContext> {
        self.cpus.iter().find(|c| c.cpu == cpu)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foreign_busy_loop_or_the_hosts_steal_makes_a_run_busy() {
        let quiet = RunContext {
            wall_ns: 1_000_000_000,
            cpus: vec![
                CpuContext {
                    cpu: 0,
                    steal_ns: 1_000_000,
                    ..CpuContext::default()
                },
                CpuContext {
                    cpu: 1,
                    ..CpuContext::default()
                },
            ],
            foreign_ns: 20_000_000,
            kernel_ns: 300_000_000,
            ..RunContext::default()
        };
        assert!(!quiet.busy(), "kernel threads do not count");
        assert!((quiet.foreign_cpus() - 0.02).abs() < 1e-9);
        let looped = RunContext {
            foreign_ns: 990_000_000,
            ..quiet.clone()
        };
        assert!(looped.busy());
        let mut stolen = quiet.clone();
        stolen.cpus[1].steal_ns = 150_000_000;
        assert!((stolen.steal_fraction() - 0.0755).abs() < 1e-9);
        assert!(stolen.busy());
        // One 10 ms tick of steal in a run of 100 ms: 5 % by itself, and it may have
        // been any steal from 0 to 2 % of the CPUs' time: not busy. Two ticks on one
        // CPU and one on the other: at least 5.5 %, busy.
        let short = RunContext {
            wall_ns: 100_000_000,
            foreign_ns: 0,
            stat_tick_ns: 10_000_000,
            ..quiet.clone()
        };
        let mut tick = short.clone();
        tick.cpus[0].steal_ns = 10_000_000;
        assert!((tick.steal_fraction() - 0.05).abs() < 1e-9);
        assert_eq!(tick.steal_fraction_at_least(), 0.0);
        assert!(!tick.busy());
        let mut ticks = short.clone();
        ticks.cpus[0].steal_ns = 20_000_000;
        ticks.cpus[1].steal_ns = 10_000_000;
        ticks.cpus[0].steal_ns += 1_000_000;
        assert!((ticks.steal_fraction_at_least() - 0.055).abs() < 1e-9);
        assert!(ticks.busy());
    }
}
