//! CPUs: topology, frequency, idle states and isolation, from sysfs and /proc/cmdline.

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::cmdline::{BootIsolation, Cmdline};
use crate::error::Result;
use crate::root::Root;

const CPU_DIR: &str = "/sys/devices/system/cpu";

/// Every CPU the kernel knows of, and the machine-wide isolation state.
#[derive(Clone, Debug, Serialize)]
pub struct CpuMap {
    /// CPUs that could ever be brought online.
    pub possible: CpuSet,
    /// CPUs physically present.
    pub present: CpuSet,
    /// CPUs online now.
    pub online: CpuSet,
    /// `/sys/devices/system/cpu/isolated`: CPUs out of the scheduler's domains
    /// (isolcpus=domain, or an isolated cpuset partition on recent kernels).
    pub isolated: CpuSet,
    /// `/sys/devices/system/cpu/nohz_full`; `None` when the kernel lacks NO_HZ_FULL.
    pub nohz_full: Option<CpuSet>,
    /// The isolation options on the kernel command line.
    pub boot: BootIsolation,
    /// The kernel command line.
    pub cmdline: String,
    /// The cpuidle driver (`intel_idle`, `haltpoll`, ...), if cpuidle is on.
    pub cpuidle_driver: Option<String>,
    /// The cpuidle governor (`menu`, `teo`, `haltpoll`, ...).
    pub cpuidle_governor: Option<String>,
    /// Each possible CPU.
    pub cpus: Vec<Cpu>,
    /// What could not be understood but did not stop the reading (a malformed
    /// isolation option on the command line).
    pub warnings: Vec<String>,
}

/// One CPU.
#[derive(Clone, Debug, Serialize)]
pub struct Cpu {
    /// The CPU number.
    pub cpu: u32,
    /// Whether it is online.
    pub online: bool,
    /// Core number within the package.
    pub core_id: Option<u32>,
    /// Package (socket) number.
    pub package_id: Option<u32>,
    /// Die number within the package.
    pub die_id: Option<u32>,
    /// SMT siblings: the CPUs of the same core, this one included.
    pub smt_siblings: Option<CpuSet>,
    /// The CPUs of the same package.
    pub package_cpus: Option<CpuSet>,
    /// NUMA node.
    pub node: Option<u32>,
    /// Relative capacity (1024 = the biggest core) on asymmetric machines.
    pub capacity: Option<u32>,
    /// Frequency scaling, when cpufreq is present.
    pub freq: Option<CpuFreq>,
    /// cpuidle states, shallowest first.
    pub idle_states: Vec<IdleState>,
    /// Why this CPU counts as isolated; empty when it does not.
    pub isolation: Vec<IsolationReason>,
}

/// A reason a CPU is isolated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IsolationReason {
    /// `isolcpus=` on the command line.
    Isolcpus,
    /// Listed in `/sys/devices/system/cpu/isolated`.
    SchedDomain,
    /// `nohz_full`: the tick stops when one task runs.
    NohzFull,
    /// `rcu_nocbs`: RCU callbacks run elsewhere.
    RcuNocbs,
    /// In a cpuset partition (v2 `isolated`, or v1 without load balancing).
    CpusetPartition,
}

impl IsolationReason {
    /// Whether this reason alone keeps general work off the CPU. `rcu_nocbs`
    /// does not: it is often given for every CPU (a common firmware workaround).
    pub fn isolates(self) -> bool {
        self != IsolationReason::RcuNocbs
    }
}

/// cpufreq state of one CPU.
#[derive(Clone, Debug, Serialize)]
pub struct CpuFreq {
    /// `scaling_driver`.
    pub driver: Option<String>,
    /// `scaling_governor`.
    pub governor: Option<String>,
    /// Current frequency in kHz.
    pub cur_khz: Option<u64>,
    /// Lowest allowed frequency in kHz.
    pub min_khz: Option<u64>,
    /// Highest allowed frequency in kHz.
    pub max_khz: Option<u64>,
}

/// One cpuidle state of one CPU.
#[derive(Clone, Debug, Serialize)]
pub struct IdleState {
    /// `state0`, `state1`, ...
    pub state: String,
    /// Short name (`POLL`, `C1`, `haltpoll`).
    pub name: String,
    /// Description.
    pub desc: String,
    /// Exit latency in microseconds, as the kernel gives it.
    pub latency_us: u64,
    /// Target residency in microseconds.
    pub residency_us: u64,
    /// Whether the state is disabled for this CPU.
    pub disabled: bool,
    /// Times entered.
    pub usage: u64,
    /// Time spent in the state, in microseconds.
    pub time_us: u64,
}

impl CpuMap {
    /// Reads the CPU map. `cpuset_isolated` are the CPUs of isolated cpuset
    /// partitions (see [`crate::cgroups::Cgroups::isolated_cpus`]).
    pub fn read(root: &Root, cpuset_isolated: &CpuSet) -> Result<CpuMap> {
        let possible = root.read_cpu_list(format!("{CPU_DIR}/possible"))?;
        let present = root.read_cpu_list(format!("{CPU_DIR}/present"))?;
        let online = root.read_cpu_list(format!("{CPU_DIR}/online"))?;
        let isolated = root
            .read_cpu_list_opt(format!("{CPU_DIR}/isolated"))?
            .unwrap_or_default();
        let nohz_full = root.read_cpu_list_opt(format!("{CPU_DIR}/nohz_full"))?;
        let cmdline = Cmdline::read(root)?;
        let mut warnings = Vec::new();
        let boot = cmdline.isolation(&possible).unwrap_or_else(|e| {
            warnings.push(format!("{e}; boot isolation options ignored"));
            BootIsolation::default()
        });
        let (cpuidle_driver, cpuidle_governor) = cpuidle(root)?;
        let nodes = read_nodes(root)?;
        let mut cpus = Vec::new();
        for cpu in possible.iter() {
            let mut c = read_cpu(root, cpu, online.contains(cpu))?;
            c.node = nodes.iter().find(|(_, s)| s.contains(cpu)).map(|(n, _)| *n);
            let mut reasons = Vec::new();
            if boot.isolcpus.as_ref().is_some_and(|s| s.contains(cpu)) {
                reasons.push(IsolationReason::Isolcpus);
            }
            if isolated.contains(cpu) {
                reasons.push(IsolationReason::SchedDomain);
            }
            let nohz = nohz_full.as_ref().or(boot.nohz_full.as_ref());
            if nohz.is_some_and(|s| s.contains(cpu)) {
                reasons.push(IsolationReason::NohzFull);
            }
            if boot.rcu_nocbs.as_ref().is_some_and(|s| s.contains(cpu)) {
                reasons.push(IsolationReason::RcuNocbs);
            }
            if cpuset_isolated.contains(cpu) {
                reasons.push(IsolationReason::CpusetPartition);
            }
            c.isolation = reasons;
            cpus.push(c);
        }
        Ok(CpuMap {
            possible,
            present,
            online,
            isolated,
            nohz_full,
            boot,
            cmdline: cmdline.raw,
            cpuidle_driver,
            cpuidle_governor,
            cpus,
            warnings,
        })
    }

    /// The CPU with number `cpu`.
    pub fn cpu(&self, cpu: u32) -> Option<&Cpu> {
        self.cpus.iter().find(|c| c.cpu == cpu)
    }

    /// Checks that every CPU of `set` exists and is online, naming those that are not.
    pub fn check_online(&self, set: &CpuSet) -> Result<()> {
        check_sets(&self.possible, &self.online, set)
    }
}

/// Checks that every CPU of `set` exists and is online, reading only the
/// possible and online sets (what `pin` and `irq` need before they act).
pub fn check_online(root: &Root, set: &CpuSet) -> Result<()> {
    let possible = root.read_cpu_list(format!("{CPU_DIR}/possible"))?;
    let online = root.read_cpu_list(format!("{CPU_DIR}/online"))?;
    check_sets(&possible, &online, set)
}

/// Checks that every CPU of `set` exists, online or not (what `show --cpu` needs: an
/// offline CPU is shown as such, a CPU the machine lacks is an error, not an empty view).
pub fn check_exist(root: &Root, set: &CpuSet) -> Result<()> {
    let possible = root.read_cpu_list(format!("{CPU_DIR}/possible"))?;
    check_sets(&possible, &possible, set)
}

fn check_sets(possible: &CpuSet, online: &CpuSet, set: &CpuSet) -> Result<()> {
    if set.is_empty() {
        return Err(crate::Error::Invalid("the CPU list is empty".into()));
    }
    let absent = set.difference(possible);
    if !absent.is_empty() {
        return Err(crate::Error::Invalid(format!(
            "CPU {absent} does not exist (this machine has CPUs {possible})"
        )));
    }
    let offline = set.difference(online);
    if !offline.is_empty() {
        return Err(crate::Error::Invalid(format!(
            "CPU {offline} is offline (online: {online})"
        )));
    }
    Ok(())
}

/// The cpuidle driver and governor (`None` when cpuidle is off).
pub fn cpuidle(root: &Root) -> Result<(Option<String>, Option<String>)> {
    let read = |f: &str| -> Result<Option<String>> {
        Ok(root
            .read_line_opt(format!("{CPU_DIR}/cpuidle/{f}"))?
            .filter(|s| !s.is_empty() && s != "none"))
    };
    let governor = match read("current_governor")? {
        Some(g) => Some(g),
        None => read("current_governor_ro")?,
    };
    Ok((read("current_driver")?, governor))
}

fn read_nodes(root: &Root) -> Result<Vec<(u32, CpuSet)>> {
    let mut nodes = Vec::new();
    for name in root.list_dir("/sys/devices/system/node")? {
        let Some(n) = name.strip_prefix("node").and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Some(set) =
            root.read_cpu_list_opt(format!("/sys/devices/system/node/{name}/cpulist"))?
        {
            nodes.push((n, set));
        }
    }
    Ok(nodes)
}

/// A CPU's cpuidle states, shallowest first (none without cpuidle).
pub fn read_idle_states(root: &Root, cpu: u32) -> Result<Vec<IdleState>> {
    let dir = format!("{CPU_DIR}/cpu{cpu}");
    let text = |f: &str| root.read_line_opt(format!("{dir}/{f}"));
    let mut idle_states = Vec::new();
    for state in root.list_dir(format!("{dir}/cpuidle"))? {
        if !state.starts_with("state") {
            continue;
        }
        let sdir = format!("{dir}/cpuidle/{state}");
        let num = |f: &str| -> Result<u64> {
            Ok(root
                .read_num_opt::<u64>(format!("{sdir}/{f}"))?
                .unwrap_or(0))
        };
        idle_states.push(IdleState {
            name: text(&format!("cpuidle/{state}/name"))?.unwrap_or_default(),
            desc: text(&format!("cpuidle/{state}/desc"))?.unwrap_or_default(),
            latency_us: num("latency")?,
            residency_us: num("residency")?,
            disabled: root
                .read_flag_opt(format!("{sdir}/disable"))?
                .unwrap_or(false),
            usage: num("usage")?,
            time_us: num("time")?,
            state,
        });
    }
    idle_states.sort_by_key(|s| s.state[5..].parse::<u32>().unwrap_or(u32::MAX));
    Ok(idle_states)
}

fn read_cpu(root: &Root, cpu: u32, online: bool) -> Result<Cpu> {
    let dir = format!("{CPU_DIR}/cpu{cpu}");
    // Printed with %d: -1 (ARM32 uniprocessor MPIDR) means unknown.
    let topo = |f: &str| -> Result<Option<u32>> {
        let file = format!("{dir}/topology/{f}");
        match root.read_num_opt::<i64>(&file)? {
            None | Some(-1) => Ok(None),
            Some(v) => u32::try_from(v).map(Some).map_err(|_| {
                crate::Error::parse(
                    root.path(&file),
                    1,
                    "a number from -1 to 4294967295",
                    &v.to_string(),
                )
            }),
        }
    };
    let text = |f: &str| root.read_line_opt(format!("{dir}/{f}"));
    let freq = if root.exists(format!("{dir}/cpufreq")) {
        let khz = |f: &str| root.read_num_opt::<u64>(format!("{dir}/cpufreq/{f}"));
        Some(CpuFreq {
            driver: text("cpufreq/scaling_driver")?,
            governor: text("cpufreq/scaling_governor")?,
            cur_khz: khz("scaling_cur_freq")?,
            min_khz: khz("scaling_min_freq")?,
            max_khz: khz("scaling_max_freq")?,
        })
    } else {
        None
    };
    let idle_states = read_idle_states(root, cpu)?;
    Ok(Cpu {
        cpu,
        online,
        core_id: topo("core_id")?,
        package_id: topo("physical_package_id")?,
        die_id: topo("die_id")?,
        smt_siblings: root.read_cpu_list_opt(format!("{dir}/topology/thread_siblings_list"))?,
        package_cpus: match root.read_cpu_list_opt(format!("{dir}/topology/package_cpus_list"))? {
            Some(set) => Some(set),
            None => root.read_cpu_list_opt(format!("{dir}/topology/core_siblings_list"))?,
        },
        node: None,
        capacity: root.read_num_opt(format!("{dir}/cpu_capacity"))?,
        freq,
        idle_states,
        isolation: Vec::new(),
    })
}

/// The online CPUs.
pub fn online(root: &Root) -> Result<CpuSet> {
    root.read_cpu_list(format!("{CPU_DIR}/online"))
}
