//! The kernel command line of a boot-time partition, checked against the running
//! kernel's configuration and command line.

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::cmdline::Cmdline;
use crate::error::{Error, Result};
use crate::partition::kconfig::KernelConfig;
use crate::root::Root;

/// Boot options for a partition.
#[derive(Clone, Debug, Serialize)]
pub struct Advice {
    /// The CPUs to isolate.
    pub cpus: CpuSet,
    /// The CPUs left for everything else.
    pub housekeeping: CpuSet,
    /// Each option, with what it does.
    pub params: Vec<BootParam>,
    /// The options to add, joined (those this kernel supports).
    pub cmdline: String,
    /// The running kernel's command line.
    pub current: String,
    /// Where the kernel configuration was read, if anywhere.
    pub kernel_config: Option<String>,
    /// How to make the options permanent.
    pub how: Vec<String>,
    /// What a run-time `jitterlab isolate` does instead, and what only a boot option does.
    pub runtime: Vec<String>,
    /// Conflicts and unsupported options.
    pub warnings: Vec<String>,
}

/// One boot option.
#[derive(Clone, Debug, Serialize)]
pub struct BootParam {
    /// `nohz_full=1`.
    pub param: String,
    /// What it does.
    pub what: String,
    /// The kernel configuration it needs (`CONFIG_NO_HZ_FULL`).
    pub needs: Option<String>,
    /// Whether this kernel has it; `None` when its configuration is not readable.
    pub supported: Option<bool>,
    /// Whether the running kernel was booted with it already (for these CPUs).
    pub present: bool,
    /// Recommended but not needed for the partition itself.
    pub optional: bool,
}

/// The boot options that isolate `cpus` on the machine `root` shows.
pub fn advise(root: &Root, cpus: &CpuSet) -> Result<Advice> {
    let possible = root.read_cpu_list("/sys/devices/system/cpu/possible")?;
    let online = root.read_cpu_list("/sys/devices/system/cpu/online")?;
    crate::cpus::check_online(root, cpus)?;
    let housekeeping = online.difference(cpus);
    if housekeeping.is_empty() {
        return Err(Error::Invalid(format!(
            "isolating CPU {cpus} leaves no online CPU for everything else"
        )));
    }
    let cmdline = Cmdline::read(root)?;
    let boot = cmdline.isolation(&possible).unwrap_or_default();
    let config = KernelConfig::read(root)?;
    let covers = |s: &Option<CpuSet>| s.as_ref().is_some_and(|s| cpus.is_subset(s));
    let has_flags = ["managed_irq", "domain"]
        .iter()
        .all(|f| boot.isolcpus_flags.iter().any(|g| g == f));
    let specs: [(String, &str, Option<&str>, bool, bool); 7] = [
        (
            format!("isolcpus=managed_irq,domain,{cpus}"),
            "takes the CPUs out of the scheduler's load balancing and out of every task's \
             default affinity (domain), and keeps managed IRQs — device queue interrupts that \
             refuse smp_affinity writes, such as a virtio block or NVMe queue — off them while \
             another CPU of their mask is online (managed_irq)",
            Some("CPU_ISOLATION"),
            covers(&boot.isolcpus) && has_flags,
            false,
        ),
        (
            format!("nohz_full={cpus}"),
            "stops the periodic tick (the LOC interrupts verify counts) on a CPU that runs a \
             single task; implies rcu_nocbs for the CPUs",
            Some("NO_HZ_FULL"),
            covers(&boot.nohz_full),
            false,
        ),
        (
            format!("rcu_nocbs={cpus}"),
            "runs the RCU callbacks of the CPUs in rcuo kthreads on the housekeeping CPUs",
            Some("RCU_NOCB_CPU"),
            covers(&boot.rcu_nocbs),
            false,
        ),
        (
            format!("irqaffinity={housekeeping}"),
            "the affinity of every IRQ from boot on, before user space could move it (what \
             isolate writes to default_smp_affinity and to each IRQ)",
            None,
            boot.irqaffinity.as_ref() == Some(&housekeeping),
            false,
        ),
        (
            "rcu_nocb_poll".into(),
            "the offloaded RCU kthreads poll for callbacks instead of being woken by the \
             isolated CPUs",
            Some("RCU_NOCB_CPU"),
            cmdline.has("rcu_nocb_poll"),
            true,
        ),
        (
            "skew_tick=1".into(),
            "offsets the CPUs' ticks so that they do not contend for the same locks at once",
            None,
            cmdline.get("skew_tick").as_deref() == Some("1"),
            true,
        ),
        (
            "threadirqs".into(),
            "device IRQ handlers run in irq/N-name threads that can be given priorities and \
             moved like other threads",
            Some("IRQ_FORCED_THREADING"),
            boot.threadirqs,
            true,
        ),
    ];
    let mut warnings = Vec::new();
    let params: Vec<BootParam> = specs
        .into_iter()
        .map(|(param, what, needs, present, optional)| {
            let supported = match (needs, &config) {
                (None, _) => Some(true),
                (Some(n), Some(c)) => Some(c.enabled(n)),
                (Some(_), None) => None,
            };
            if supported == Some(false) {
                warnings.push(format!(
                    "this kernel is built without CONFIG_{}: {} would be ignored; a kernel \
                     built with it is needed",
                    needs.unwrap_or_default(),
                    param.split('=').next().unwrap_or(&param)
                ));
            }
            BootParam {
                param,
                what: what.to_string(),
                needs: needs.map(|n| format!("CONFIG_{n}")),
                supported,
                present,
                optional,
            }
        })
        .collect();
    for (key, old) in [
        ("isolcpus", &boot.isolcpus),
        ("nohz_full", &boot.nohz_full),
        ("rcu_nocbs", &boot.rcu_nocbs),
    ] {
        if let Some(old) = old.as_ref().filter(|o| *o != cpus) {
            warnings.push(format!(
                "the kernel was booted with {key}={old}: the option above replaces it"
            ));
        }
    }
    if config.is_none() {
        warnings.push(
            "the kernel configuration is not readable (/proc/config.gz, /boot/config-*): \
             support for each option is not checked"
                .into(),
        );
    }
    let line = params
        .iter()
        .filter(|p| p.supported != Some(false))
        .map(|p| p.param.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    Ok(Advice {
        how: vec![
            format!(
                "GRUB: add to GRUB_CMDLINE_LINUX in /etc/default/grub, then `update-grub` \
                 (Debian, Ubuntu) or `grub2-mkconfig -o /boot/grub2/grub.cfg` (Fedora, RHEL)"
            ),
            format!("or: grubby --update-kernel=ALL --args=\"{line}\""),
            format!(
                "or: tuned's cpu-partitioning profile with isolated_cores={cpus} in \
                 /etc/tuned/cpu-partitioning-variables.conf writes most of them"
            ),
            "then reboot, and check with `jitterlab verify` (it reads /proc/cmdline)".into(),
        ],
        runtime: vec![
            format!(
                "`jitterlab isolate {cpus}` does at run time what isolcpus=domain and \
                 irqaffinity do: moves tasks, kernel threads, IRQs and workqueues off, and \
                 takes the CPUs out of load balancing (cpusets), reversibly"
            ),
            "only boot options stop the tick (nohz_full), offload RCU callbacks (rcu_nocbs) and \
             move managed IRQs (isolcpus=managed_irq)"
                .into(),
        ],
        cpus: cpus.clone(),
        housekeeping,
        params,
        cmdline: line,
        current: cmdline.raw,
        kernel_config: config.map(|c| c.source),
        warnings,
    })
}
