//! The facts about a machine that decide how to read a latency figure: kernel,
//! preemption model, clocksource, virtualisation, idle and frequency drivers; and
//! whether this runs in a container ([`container`]).

pub mod container;
pub mod hypervisor;

pub use container::Container;
pub use hypervisor::Hypervisor;

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::cmdline::Cmdline;
use crate::error::Result;
use crate::root::Root;

/// The environment of a measurement.
#[derive(Clone, Debug, Serialize)]
pub struct Environment {
    /// The host name (`/proc/sys/kernel/hostname`), when it can be read: which machine
    /// of a fleet measured (`export --parquet` partitions by it).
    pub hostname: Option<String>,
    /// `uname -r`.
    pub kernel_release: String,
    /// `/proc/version`.
    pub kernel_version: String,
    /// `PREEMPT_RT`, `PREEMPT_DYNAMIC`, `PREEMPT` or `none/voluntary`.
    pub preemption: String,
    /// Whether the kernel is PREEMPT_RT.
    pub preempt_rt: bool,
    /// `/proc/cmdline`.
    pub cmdline: String,
    /// `/sys/devices/system/cpu/isolated`.
    pub isolated_cpus: CpuSet,
    /// `/sys/devices/system/cpu/nohz_full`, when the kernel has it.
    pub nohz_full: Option<CpuSet>,
    /// The current clocksource (`tsc`, `kvm-clock`, `hpet`).
    pub clocksource: Option<String>,
    /// The hypervisor, by name where anything names it, and where that was read
    /// ([`Hypervisor::describe`]: `KVM, CPUID 0x40000000: KVMKVMKVM`), when the machine
    /// is virtual.
    pub virtualization: Option<String>,
    /// cpuidle driver.
    pub cpuidle_driver: Option<String>,
    /// cpuidle governor.
    pub cpuidle_governor: Option<String>,
    /// The distinct cpufreq governors of the online CPUs (empty without cpufreq).
    pub cpufreq_governors: Vec<String>,
}

impl Environment {
    /// Reads it.
    pub fn read(root: &Root) -> Result<Environment> {
        let line = |p: &str| -> Result<Option<String>> {
            Ok(root
                .read_line_opt(p)?
                .filter(|s| !s.is_empty() && s != "none"))
        };
        let version = line("/proc/version")?.unwrap_or_default();
        let rt =
            line("/sys/kernel/realtime")?.as_deref() == Some("1") || version.contains("PREEMPT_RT");
        let preemption = if rt {
            "PREEMPT_RT"
        } else if version.contains("PREEMPT_DYNAMIC") {
            "PREEMPT_DYNAMIC"
        } else if version.contains(" PREEMPT ") {
            "PREEMPT"
        } else {
            "none/voluntary"
        };
        let virtualization = Hypervisor::read(root)?.map(|h| h.describe());
        let online = root.read_cpu_list("/sys/devices/system/cpu/online")?;
        let mut governors: Vec<String> = Vec::new();
        for cpu in online.iter() {
            if let Some(g) = line(&format!(
                "/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
            ))? {
                if !governors.contains(&g) {
                    governors.push(g);
                }
            }
        }
        let (cpuidle_driver, cpuidle_governor) = crate::cpus::cpuidle(root)?;
        Ok(Environment {
            hostname: line("/proc/sys/kernel/hostname")?,
            kernel_release: line("/proc/sys/kernel/osrelease")?.unwrap_or_default(),
            kernel_version: version,
            preemption: preemption.to_string(),
            preempt_rt: rt,
            cmdline: Cmdline::read(root)?.raw,
            isolated_cpus: root
                .read_cpu_list_opt("/sys/devices/system/cpu/isolated")?
                .unwrap_or_default(),
            nohz_full: root.read_cpu_list_opt("/sys/devices/system/cpu/nohz_full")?,
            clocksource: line("/sys/devices/system/clocksource/clocksource0/current_clocksource")?,
            virtualization,
            cpuidle_driver,
            cpuidle_governor,
            cpufreq_governors: governors,
        })
    }
}

/// Steal time per CPU from /proc/stat, in clock ticks (field 8 of a `cpuN` line):
/// time the hypervisor ran something else while this guest wanted the CPU.
pub fn steal_ticks(root: &Root) -> Result<Vec<(u32, u64)>> {
    let text = root.read("/proc/stat")?;
    // In ticks: a "tick" of 1 ns leaves the counts as they are.
    let times = crate::usage::parse_cpu_times(&root.path("/proc/stat"), &text, 1)?;
    Ok(times.into_iter().map(|t| (t.cpu, t.steal_ns)).collect())
}
