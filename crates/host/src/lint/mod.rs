//! The lint of a machine for real-time work (`jitterlab audit`'s static checks): what
//! stands between this machine and a real-time deadline on the CPUs meant for it, read
//! from /proc, /sys and the kernel configuration through a [`Root`], so that every
//! check runs on a fixture tree.
//!
//! [`static_checks`] is a pure function of the files below the root and of the
//! real-time CPUs: it returns [`Finding`]s, each with an id, a [`Severity`], the
//! evidence (the file and the value read), why it matters in one sentence and the
//! [`Fix`] (a boot parameter, a sysctl, a jitterlab command ...), and says which
//! checks could not be made without root. One file per family of checks: `kernel`,
//! `cmdline`, `power` (CPU frequency, idle, SMT), `irqs`, `sched` (scheduler and
//! memory), `environment` (hypervisor, container, steal time).
//!
//! It measures nothing and changes nothing; the measured checks (the probe, the noise
//! probe, interrupt rates) and the verdicts are the audit crate's.

mod cmdline;
mod environment;
mod irqs;
mod kernel;
mod power;
mod sched;

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::cmdline::{BootIsolation, Cmdline};
use crate::error::{Error, Result};
use crate::partition::KernelConfig;
use crate::root::Root;

/// How much a finding stands in the way of real-time work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Context, changes no verdict.
    Info,
    /// Worth tuning; adds microseconds at worst.
    Low,
    /// Adds tens of microseconds or more, or lets other work onto the RT CPUs.
    Medium,
    /// The RT CPUs cannot meet a deadline until it is fixed.
    High,
}

/// The family of checks a finding comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Preemption model, tick, RCU, timers, clocksource.
    Kernel,
    /// The isolation options of the kernel command line.
    Cmdline,
    /// Frequency, idle states, SMT.
    Power,
    /// IRQ affinity, managed IRQs, irqbalance.
    Irqs,
    /// Scheduler, workqueues, threads, memory, limits, cpusets.
    Scheduler,
    /// Hypervisor, container, steal time.
    Environment,
    /// What the audit measured (latency, noise, interrupt rates).
    Measured,
}

/// What kind of change a fix is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FixKind {
    /// A kernel command line parameter (a reboot).
    Boot,
    /// A sysctl (`sysctl -w`, and a file in /etc/sysctl.d to keep it).
    Sysctl,
    /// A jitterlab command.
    Jitterlab,
    /// A write to a /sys file, or another shell command.
    Shell,
    /// Another kernel (a build or a package).
    Kernel,
    /// Outside this machine (the hypervisor, the hardware).
    Host,
    /// A configuration file.
    Config,
}

/// How to remove a finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// What kind of change.
    pub kind: FixKind,
    /// The exact parameter, sysctl or command.
    pub apply: String,
    /// Whether it takes a reboot.
    pub needs_reboot: bool,
    /// How to check it after (`jitterlab verify`, `jitterlab audit`).
    pub check: String,
}

/// A file read and what was in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// The host path (`/proc/cmdline`).
    pub path: String,
    /// The value read (trimmed, at most 200 characters), or what was not there.
    pub value: String,
}

/// One thing found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// A stable id (`kernel.preempt_rt`, `irqs.on_rt_cpu`); with `subject`, the key
    /// two audits are compared by.
    pub id: String,
    /// What it is about when an id can fire more than once (`IRQ 36`), else empty.
    pub subject: String,
    /// Its family.
    pub family: Family,
    /// How bad.
    pub severity: Severity,
    /// The RT CPUs it concerns; absent: the machine (all of them).
    pub cpus: Option<CpuSet>,
    /// What was found, in a line.
    pub what: String,
    /// The files read and their values.
    pub evidence: Vec<Evidence>,
    /// Why it matters, in one sentence.
    pub why: String,
    /// How to remove it (none: nothing to do on this machine).
    pub fix: Option<Fix>,
    /// Whether the fix needs a reboot (false without a fix).
    pub needs_reboot: bool,
    /// The worst latency it may add, ns, where it can be told (an idle state's exit
    /// latency, a measured gap); the ranking of recommendations uses it.
    pub effect_ns: Option<u64>,
    /// A measured finding whose worst figure rests on one moment: one half of the
    /// measured window reached it and the other did not (on a VM, the host stopping the
    /// vCPU once). Its severity and effect are what both halves agree on; `what` gives
    /// both figures. False for every static finding.
    pub noise_bound: bool,
}

impl Finding {
    /// A finding without evidence, fix or CPUs yet.
    pub fn new(id: &str, family: Family, severity: Severity, what: impl Into<String>) -> Finding {
        Finding {
            id: id.to_string(),
            subject: String::new(),
            family,
            severity,
            cpus: None,
            what: what.into(),
            evidence: Vec::new(),
            why: String::new(),
            fix: None,
            needs_reboot: false,
            effect_ns: None,
            noise_bound: false,
        }
    }

    /// With what it is about.
    pub fn subject(mut self, s: impl Into<String>) -> Finding {
        self.subject = s.into();
        self
    }

    /// With the RT CPUs it concerns.
    pub fn cpus(mut self, cpus: &CpuSet) -> Finding {
        self.cpus = Some(cpus.clone());
        self
    }

    /// With a file and its value.
    pub fn evidence(mut self, path: &str, value: impl AsRef<str>) -> Finding {
        let v = value.as_ref().trim();
        let value = match v.char_indices().nth(200) {
            Some((i, _)) => format!("{}...", &v[..i]),
            None => v.to_string(),
        };
        self.evidence.push(Evidence {
            path: path.to_string(),
            value,
        });
        self
    }

    /// With why it matters.
    pub fn why(mut self, why: impl Into<String>) -> Finding {
        self.why = why.into();
        self
    }

    /// With its fix and the way to check it.
    pub fn fix(
        mut self,
        kind: FixKind,
        apply: impl Into<String>,
        check: impl Into<String>,
    ) -> Finding {
        let needs_reboot = matches!(kind, FixKind::Boot | FixKind::Kernel);
        self.fix = Some(Fix {
            kind,
            apply: apply.into(),
            needs_reboot,
            check: check.into(),
        });
        self.needs_reboot = needs_reboot;
        self
    }

    /// With the worst latency it may add.
    pub fn effect(mut self, ns: u64) -> Finding {
        self.effect_ns = Some(ns);
        self
    }

    /// Noise-bound or not (see [`Finding::noise_bound`]).
    pub fn noise_bound(mut self, bound: bool) -> Finding {
        self.noise_bound = bound;
        self
    }
}

/// The static part of an audit.
#[derive(Clone, Debug, Serialize)]
pub struct StaticAudit {
    /// The CPUs meant for real-time work.
    pub rt_cpus: CpuSet,
    /// The other online CPUs.
    pub housekeeping: CpuSet,
    /// Where the kernel configuration was read, if anywhere.
    pub kernel_config: Option<String>,
    /// What was found, in the order of the families.
    pub findings: Vec<Finding>,
    /// The checks that were made in part or not at all because the audit did not
    /// run as root, each in a line.
    pub needs_root: Vec<String>,
}

/// What every family of checks reads once.
pub(crate) struct Facts<'a> {
    pub root: &'a Root,
    pub rt: CpuSet,
    pub housekeeping: CpuSet,
    pub online: CpuSet,
    pub cmdline: Cmdline,
    pub boot: BootIsolation,
    pub config: Option<KernelConfig>,
    pub is_root: bool,
}

impl Facts<'_> {
    /// A one-line file, trimmed, or `None` when absent or unreadable.
    pub fn line(&self, path: &str) -> Option<String> {
        self.root.read_line_opt(path).ok().flatten()
    }

    /// A one-line number.
    pub fn num(&self, path: &str) -> Option<i64> {
        self.line(path).and_then(|s| s.parse().ok())
    }

    /// The kernel configuration's evidence line for `CONFIG_<name>`.
    pub fn config_value(&self, name: &str) -> Option<(String, String)> {
        let c = self.config.as_ref()?;
        let v = c.value(name).unwrap_or("is not set").to_string();
        Some((c.source.clone(), format!("CONFIG_{name}={v}")))
    }

    /// `jitterlab isolate` of the RT CPUs.
    pub fn isolate(&self) -> String {
        format!("jitterlab isolate {}", self.rt)
    }

    /// `jitterlab verify` of the RT CPUs.
    pub fn verify(&self) -> String {
        format!("jitterlab verify {}", self.rt)
    }

    /// After a reboot: /proc/cmdline, then the audit again.
    pub fn reboot_check(&self) -> String {
        format!("after the reboot: jitterlab audit --cpus {}", self.rt)
    }
}

/// The CPUs an audit looks at when the user names none: the isolated ones (boot
/// `isolcpus`, or an isolated cpuset partition), else the last online CPU.
pub fn default_rt_cpus(root: &Root) -> Result<CpuSet> {
    let online = crate::cpus::online(root)?;
    let mut isolated = root
        .read_cpu_list_opt("/sys/devices/system/cpu/isolated")?
        .unwrap_or_default();
    if let Ok(cg) = crate::cgroups::Cgroups::read(root) {
        isolated = isolated.union(&cg.isolated_cpus());
    }
    let isolated = isolated.intersection(&online);
    if !isolated.is_empty() && isolated != online {
        return Ok(isolated);
    }
    Ok(online.iter().last().into_iter().collect())
}

/// Runs every static check of the machine below `root` for the RT CPUs `rt`
/// (online, and not all of them). A file a check needs that is absent or unreadable
/// makes that check silent, never an error; `/proc/cmdline` and the CPU lists are
/// needed.
pub fn static_checks(root: &Root, rt: &CpuSet) -> Result<StaticAudit> {
    let online = crate::cpus::online(root)?;
    crate::cpus::check_online(root, rt)?;
    let housekeeping = online.difference(rt);
    if housekeeping.is_empty() {
        return Err(Error::Invalid(format!(
            "the RT CPUs {rt} are all the online CPUs: an audit needs one left for everything else"
        )));
    }
    let possible = root.read_cpu_list("/sys/devices/system/cpu/possible")?;
    let cmdline = Cmdline::read(root)?;
    let boot = cmdline.isolation(&possible)?;
    let config = KernelConfig::read(root).ok().flatten();
    let facts = Facts {
        root,
        rt: rt.clone(),
        housekeeping: housekeeping.clone(),
        online,
        cmdline,
        boot,
        config,
        is_root: root.is_live() && crate::running_as_root(),
    };
    let mut findings = Vec::new();
    let mut needs_root = Vec::new();
    kernel::check(&facts, &mut findings);
    cmdline::check(&facts, &mut findings);
    power::check(&facts, &mut findings, &mut needs_root);
    irqs::check(&facts, &mut findings, &mut needs_root)?;
    sched::check(&facts, &mut findings)?;
    environment::check(&facts, &mut findings);
    if facts.root.is_live() && !facts.is_root {
        needs_root.push(
            "the measured checks (latency probe idle and loaded, noise probe, interrupt rates) need root"
                .into(),
        );
    }
    Ok(StaticAudit {
        rt_cpus: rt.clone(),
        housekeeping,
        kernel_config: facts.config.as_ref().map(|c| c.source.clone()),
        findings,
        needs_root,
    })
}
