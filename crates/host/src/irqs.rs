//! IRQs: /proc/interrupts, /proc/softirqs, /proc/irq/N and /sys/kernel/irq/N.

use std::path::Path;

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::root::Root;

/// Every IRQ with its affinity and counts, the per-CPU system interrupt counters
/// and the softirq counts.
#[derive(Clone, Debug, Serialize)]
pub struct IrqMap {
    /// The CPUs that the count columns stand for (the online CPUs when read).
    pub cpus: Vec<u32>,
    /// Device IRQs, by number.
    pub irqs: Vec<Irq>,
    /// The rows with a name instead of a number (LOC, RES, CAL, TLB, ERR, ...).
    pub counters: Vec<Counter>,
    /// `/proc/irq/default_smp_affinity`: the affinity new IRQs get.
    pub default_affinity: Option<CpuSet>,
    /// The CPUs that the softirq columns stand for.
    pub softirq_cpus: Vec<u32>,
    /// `/proc/softirqs`.
    pub softirqs: Vec<Counter>,
    /// Set when the counts are the change over a window (`show irqs --interval`).
    pub window: Option<Window>,
}

/// A sampling window: counts are differences between two reads.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Window {
    /// Length of the window in nanoseconds.
    pub interval_ns: u64,
}

/// One device IRQ.
#[derive(Clone, Debug, Serialize)]
pub struct Irq {
    /// The Linux IRQ number.
    pub irq: u32,
    /// Interrupts handled, per CPU of [`IrqMap::cpus`].
    pub counts: Vec<u64>,
    /// Per second over the window, per CPU (only with a window).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rates: Option<Vec<f64>>,
    /// The interrupt controller (`IO-APIC`, `PCI-MSIX-0000:00:02.0`).
    pub chip: String,
    /// The controller's number for it.
    pub hwirq: Option<String>,
    /// `edge` or `level`.
    pub trigger: Option<String>,
    /// The handlers' names (device names), in the order the kernel lists them.
    pub actions: Vec<String>,
    /// `smp_affinity_list`: the CPUs it may be delivered to.
    pub affinity: Option<CpuSet>,
    /// `effective_affinity_list`: the CPUs it is actually delivered to.
    pub effective: Option<CpuSet>,
    /// `affinity_hint` set by the driver, when not empty.
    pub affinity_hint: Option<CpuSet>,
    /// NUMA node of the device.
    pub node: Option<i32>,
    /// The effective affinity is outside the configured one: the IRQ moves when
    /// it next fires (an edge IRQ whose affinity was just changed).
    pub pending_move: bool,
}

/// A named counter row: LOC, RES, ... in /proc/interrupts, or a softirq.
#[derive(Clone, Debug, Serialize)]
pub struct Counter {
    /// `LOC`, `NET_RX`, ...
    pub name: String,
    /// What the kernel calls it (`Local timer interrupts`).
    pub description: String,
    /// Per CPU, or a single machine-wide total (ERR, MIS) when `per_cpu` is false.
    pub counts: Vec<u64>,
    /// Whether `counts` has one value per CPU.
    pub per_cpu: bool,
    /// Per second over the window (only with a window).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rates: Option<Vec<f64>>,
}

impl Irq {
    /// The name to show: the actions, or the chip when there is none.
    pub fn label(&self) -> String {
        if self.actions.is_empty() {
            self.chip.clone()
        } else {
            self.actions.join(",")
        }
    }

    /// Sum over CPUs.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Whether the IRQ's label or any action matches `pattern`.
    pub fn matches(&self, pattern: &glob::Pattern) -> bool {
        self.actions.iter().any(|a| pattern.matches(a))
            || pattern.matches(&self.label())
            || pattern.matches(&self.irq.to_string())
    }

    /// The CPUs this IRQ is (or would be) delivered to: the effective affinity
    /// where the kernel reports it, else the configured one.
    pub fn delivered_to(&self) -> Option<&CpuSet> {
        self.effective.as_ref().or(self.affinity.as_ref())
    }
}

impl IrqMap {
    /// Reads all of it.
    pub fn read(root: &Root) -> Result<IrqMap> {
        let path = root.path("/proc/interrupts");
        let (cpus, mut irqs, counters) = parse_interrupts(&path, &root.read("/proc/interrupts")?)?;
        for irq in &mut irqs {
            read_irq_files(root, irq)?;
        }
        let default_affinity = match root.read_opt("/proc/irq/default_smp_affinity")? {
            Some(text) => Some(CpuSet::parse_mask(&text).map_err(|source| Error::CpuSet {
                path: root.path("/proc/irq/default_smp_affinity"),
                cause: source,
            })?),
            None => None,
        };
        let (softirq_cpus, softirqs) = match root.read_opt("/proc/softirqs")? {
            Some(text) => parse_softirqs(&root.path("/proc/softirqs"), &text)?,
            None => (Vec::new(), Vec::new()),
        };
        Ok(IrqMap {
            cpus,
            irqs,
            counters,
            default_affinity,
            softirq_cpus,
            softirqs,
            window: None,
        })
    }

    /// The IRQ numbered `irq`.
    pub fn irq(&self, irq: u32) -> Option<&Irq> {
        self.irqs.iter().find(|i| i.irq == irq)
    }

    /// The change from `earlier` to `self` over `interval_ns`: counts become
    /// differences and rates per second are filled in. A counter that went
    /// backwards (an IRQ freed and reallocated) counts from zero.
    pub fn since(&self, earlier: &IrqMap, interval_ns: u64) -> IrqMap {
        let secs = (interval_ns as f64 / 1e9).max(1e-9);
        let rates = |c: &[u64]| Some(c.iter().map(|&n| n as f64 / secs).collect());
        let diff = |now: &[u64], then: Option<&[u64]>| -> Vec<u64> {
            now.iter()
                .enumerate()
                .map(|(i, &n)| {
                    let t = then.and_then(|t| t.get(i)).copied().unwrap_or(0);
                    if n >= t {
                        n - t
                    } else {
                        n
                    }
                })
                .collect()
        };
        let mut out = self.clone();
        for irq in &mut out.irqs {
            let then = earlier.irq(irq.irq).map(|i| i.counts.as_slice());
            irq.counts = diff(&irq.counts, then);
            irq.rates = rates(&irq.counts);
        }
        let counter_diff = |rows: &mut Vec<Counter>, before: &[Counter]| {
            for row in rows.iter_mut() {
                let then = before
                    .iter()
                    .find(|b| b.name == row.name)
                    .map(|b| b.counts.as_slice());
                row.counts = diff(&row.counts, then);
                row.rates = rates(&row.counts);
            }
        };
        counter_diff(&mut out.counters, &earlier.counters);
        counter_diff(&mut out.softirqs, &earlier.softirqs);
        out.window = Some(Window { interval_ns });
        out
    }
}

/// Parses the CPU header of /proc/interrupts or /proc/softirqs: `CPU0 CPU1 ...`.
fn parse_header(path: &Path, line: &str) -> Result<Vec<u32>> {
    let cpus: Option<Vec<u32>> = line
        .split_whitespace()
        .map(|t| t.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect();
    match cpus {
        Some(c) if !c.is_empty() => Ok(c),
        _ => Err(Error::parse(
            path,
            1,
            "a header of CPU columns (CPU0 CPU1 ...)",
            line,
        )),
    }
}

/// Splits `label: n n n rest` into the label, up to `max` counts and the rest.
fn split_row<'a>(
    path: &Path,
    lineno: usize,
    line: &'a str,
    max: usize,
) -> Result<(&'a str, Vec<u64>, &'a str)> {
    let Some((label, mut rest)) = line.split_once(':') else {
        return Err(Error::parse(path, lineno, "a row 'LABEL: counts...'", line));
    };
    let mut counts = Vec::with_capacity(max);
    while counts.len() < max {
        let trimmed = rest.trim_start();
        let end = trimmed
            .find(|c: char| c.is_whitespace())
            .unwrap_or(trimmed.len());
        match trimmed[..end].parse::<u64>() {
            Ok(n) if end > 0 => {
                counts.push(n);
                rest = &trimmed[end..];
            }
            _ => break,
        }
    }
    Ok((label.trim(), counts, rest.trim()))
}

type Interrupts = (Vec<u32>, Vec<Irq>, Vec<Counter>);

/// Parses /proc/interrupts text.
pub fn parse_interrupts(path: &Path, text: &str) -> Result<Interrupts> {
    let mut lines = text.lines();
    let cpus = parse_header(path, lines.next().unwrap_or(""))?;
    let n = cpus.len();
    let mut irqs = Vec::new();
    let mut counters = Vec::new();
    for (i, line) in lines.enumerate() {
        let lineno = i + 2;
        if line.trim().is_empty() {
            continue;
        }
        let (label, mut counts, rest) = split_row(path, lineno, line, n)?;
        if let Ok(number) = label.parse::<u32>() {
            counts.resize(n, 0);
            let (chip, hwirq, trigger, actions) = split_description(rest);
            irqs.push(Irq {
                irq: number,
                counts,
                rates: None,
                chip,
                hwirq,
                trigger,
                actions,
                affinity: None,
                effective: None,
                affinity_hint: None,
                node: None,
                pending_move: false,
            });
        } else {
            if label.is_empty() || counts.is_empty() {
                return Err(Error::parse(
                    path,
                    lineno,
                    "a name and at least one count",
                    line,
                ));
            }
            // ERR and MIS (x86), Err (ARM): one machine-wide count, no description.
            let per_cpu = !(counts.len() == 1 && n > 1 && rest.is_empty());
            if per_cpu {
                counts.resize(n, 0);
            }
            counters.push(Counter {
                name: label.to_string(),
                description: rest.to_string(),
                counts,
                per_cpu,
                rates: None,
            });
        }
    }
    Ok((cpus, irqs, counters))
}

/// Splits the text after the counts of a numbered row into chip, hwirq, flow
/// or trigger, and actions. Layouts differ by architecture:
///
/// - x86: `IO-APIC   5-edge      ACPI:Ged` (hwirq and flow joined by `-`)
/// - ARM: `GICv3  27 Level     arch_timer`, `Tegra PCIe MSI   0 Edge      eth0`
///
/// The chip name may hold spaces; it ends where the hwirq starts. Actions are
/// separated by `, `. /sys/kernel/irq/N, when present, overrides all of this.
fn split_description(rest: &str) -> (String, Option<String>, Option<String>, Vec<String>) {
    let tokens: Vec<&str> = rest.split_whitespace().collect();
    let is_num = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let x86 = |t: &str| {
        t.split_once('-')
            .is_some_and(|(h, f)| is_num(h) && !f.is_empty())
    };
    let arm = |i: usize| {
        is_num(tokens[i])
            && tokens
                .get(i + 1)
                .is_some_and(|t| t.eq_ignore_ascii_case("level") || t.eq_ignore_ascii_case("edge"))
    };
    let Some(k) = (1..tokens.len()).find(|&i| x86(tokens[i]) || arm(i)) else {
        // Not a layout we know: keep the text as the chip, claim no actions.
        return (tokens.join(" "), None, None, Vec::new());
    };
    let chip = tokens[..k].join(" ");
    let (hwirq, trigger, first_action) = match tokens[k].split_once('-') {
        Some((h, f)) if x86(tokens[k]) => (h.to_string(), f.to_lowercase(), k + 1),
        _ => (tokens[k].to_string(), tokens[k + 1].to_lowercase(), k + 2),
    };
    let actions = tokens[first_action.min(tokens.len())..]
        .join(" ")
        .split(", ")
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty())
        .collect();
    (chip, Some(hwirq), Some(trigger), actions)
}

/// Fills in what /proc/irq/N and /sys/kernel/irq/N say of an IRQ.
fn read_irq_files(root: &Root, irq: &mut Irq) -> Result<()> {
    let n = irq.irq;
    let sys = format!("/sys/kernel/irq/{n}");
    if let Some(chip) = root.read_opt(format!("{sys}/chip_name"))? {
        irq.chip = chip.trim().to_string();
        irq.hwirq = root
            .read_opt(format!("{sys}/hwirq"))?
            .map(|s| s.trim().to_string());
        irq.trigger = root
            .read_opt(format!("{sys}/type"))?
            .map(|s| s.trim().to_string());
        if let Some(actions) = root.read_opt(format!("{sys}/actions"))? {
            irq.actions = actions
                .trim()
                .split(',')
                .filter(|a| !a.is_empty())
                .map(str::to_string)
                .collect();
        }
    }
    let dir = format!("/proc/irq/{n}");
    irq.affinity = root.read_cpu_list_opt(format!("{dir}/smp_affinity_list"))?;
    irq.effective = root.read_cpu_list_opt(format!("{dir}/effective_affinity_list"))?;
    irq.affinity_hint = match root.read_opt(format!("{dir}/affinity_hint"))? {
        Some(text) => CpuSet::parse_mask(&text).ok().filter(|s| !s.is_empty()),
        None => None,
    };
    irq.node = root.read_num_opt(format!("{dir}/node"))?;
    irq.pending_move = match (&irq.effective, &irq.affinity) {
        (Some(e), Some(a)) => !e.is_empty() && !e.is_subset(a),
        _ => false,
    };
    Ok(())
}

/// Parses /proc/softirqs text.
pub fn parse_softirqs(path: &Path, text: &str) -> Result<(Vec<u32>, Vec<Counter>)> {
    let mut lines = text.lines();
    let cpus = parse_header(path, lines.next().unwrap_or(""))?;
    let mut rows = Vec::new();
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (name, mut counts, rest) = split_row(path, i + 2, line, cpus.len())?;
        if !rest.is_empty() || counts.is_empty() {
            return Err(Error::parse(
                path,
                i + 2,
                "a softirq name and one count per CPU",
                line,
            ));
        }
        counts.resize(cpus.len(), 0);
        rows.push(Counter {
            name: name.to_string(),
            description: String::new(),
            counts,
            per_cpu: true,
            rates: None,
        });
    }
    Ok((cpus, rows))
}

/// What happened when an IRQ's affinity was written.
#[derive(Clone, Debug, Serialize)]
pub struct IrqChange {
    /// The IRQ.
    pub irq: u32,
    /// Its name.
    pub label: String,
    /// The CPUs asked for.
    pub requested: CpuSet,
    /// `smp_affinity_list` before.
    pub old_affinity: Option<CpuSet>,
    /// `smp_affinity_list` after, read back.
    pub new_affinity: Option<CpuSet>,
    /// `effective_affinity_list` before.
    pub old_effective: Option<CpuSet>,
    /// `effective_affinity_list` after, read back.
    pub new_effective: Option<CpuSet>,
    /// The verdict.
    pub outcome: IrqOutcome,
    /// The kernel's refusal, when it refused.
    pub error: Option<String>,
}

/// The verdict on one IRQ affinity write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IrqOutcome {
    /// Delivered only to the requested CPUs now.
    Applied,
    /// Accepted; the kernel delivers to a subset of the requested CPUs (usual on x86,
    /// which targets one CPU of the mask).
    Subset,
    /// Accepted, but the effective affinity is still outside the request: an edge
    /// IRQ moves when it next fires.
    Pending,
    /// Accepted; the IRQ is not active (no effective CPU), the mask applies when it is.
    Inactive,
    /// Accepted, but the kernel stored another mask than the one requested.
    Altered,
    /// The kernel refused the write (a managed IRQ answers EIO; some answer EPERM).
    Refused,
    /// The masks could not be read back: the result is not known.
    Unknown,
}

/// The verdict from what was read back after a successful write.
fn verdict(
    requested: &CpuSet,
    affinity: Option<&CpuSet>,
    effective: Option<&CpuSet>,
) -> IrqOutcome {
    match (affinity, effective) {
        (None, _) => IrqOutcome::Unknown,
        (Some(a), _) if a != requested => IrqOutcome::Altered,
        // No effective_affinity_list on this kernel: the configured mask is all we know.
        (Some(_), None) => IrqOutcome::Applied,
        (Some(_), Some(e)) if e.is_empty() => IrqOutcome::Inactive,
        (Some(_), Some(e)) if e == requested => IrqOutcome::Applied,
        (Some(_), Some(e)) if e.is_subset(requested) => IrqOutcome::Subset,
        (Some(_), Some(_)) => IrqOutcome::Pending,
    }
}

/// Writes `smp_affinity_list` of `irq` and reads both masks back.
///
/// Never fails: a refusal by the kernel or a mask that cannot be read back is
/// part of the change record, so the caller reports it and goes on with the
/// other IRQs.
pub fn set_irq_affinity(root: &Root, irq: &Irq, cpus: &CpuSet) -> IrqChange {
    let dir = format!("/proc/irq/{}", irq.irq);
    let read = |f: &str| root.read_cpu_list_opt(format!("{dir}/{f}"));
    let old_affinity = read("smp_affinity_list");
    let old_effective = read("effective_affinity_list");
    let write = root.write(format!("{dir}/smp_affinity_list"), &cpus.to_string());
    let new_affinity = read("smp_affinity_list");
    let new_effective = read("effective_affinity_list");
    let read_back = match (&new_affinity, &new_effective) {
        (Ok(a), Ok(e)) => Some((a.as_ref(), e.as_ref())),
        _ => None,
    };
    let outcome = match (&write, read_back) {
        (Err(_), _) => IrqOutcome::Refused,
        (Ok(()), None) => IrqOutcome::Unknown,
        (Ok(()), Some((a, e))) => verdict(cpus, a, e),
    };
    let mut errors: Vec<String> = write.err().iter().map(describe_refusal).collect();
    let mut keep = |r: Result<Option<CpuSet>>| match r {
        Ok(set) => set,
        Err(e) => {
            errors.push(e.to_string());
            None
        }
    };
    let (old_affinity, old_effective) = (keep(old_affinity), keep(old_effective));
    let (new_affinity, new_effective) = (keep(new_affinity), keep(new_effective));
    IrqChange {
        irq: irq.irq,
        label: irq.label(),
        requested: cpus.clone(),
        old_affinity,
        new_affinity,
        old_effective,
        new_effective,
        outcome,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
    }
}

fn describe_refusal(e: &Error) -> String {
    match e.raw_os_error() {
        Some(libc::EIO) => "EIO: the kernel manages this IRQ's affinity (managed IRQ); \
                            it follows the CPUs its queue serves, or isolcpus=managed_irq at boot"
            .to_string(),
        Some(libc::EPERM) => "EPERM: the kernel does not allow this IRQ's affinity to be \
                              changed (per-CPU or managed interrupt)"
            .to_string(),
        Some(libc::EINVAL) => "EINVAL: the kernel rejected the CPU list for this IRQ \
                               (no online CPU in it that the IRQ's controller can target)"
            .to_string(),
        _ => e.to_string(),
    }
}

/// The result of `irq set`: one change per IRQ matched.
#[derive(Clone, Debug, Serialize)]
pub struct IrqSetReport {
    /// The changes, by IRQ number.
    pub changes: Vec<IrqChange>,
    /// The pid of a running irqbalance, which will undo them.
    pub irqbalance: Option<u32>,
}

impl IrqSetReport {
    /// How many IRQs did not end up with the requested mask (refused,
    /// altered, or unknown).
    pub fn failures(&self) -> usize {
        self.changes
            .iter()
            .filter(|c| {
                matches!(
                    c.outcome,
                    IrqOutcome::Refused | IrqOutcome::Altered | IrqOutcome::Unknown
                )
            })
            .count()
    }
}

/// What happened when the default IRQ affinity was written.
#[derive(Clone, Debug, Serialize)]
pub struct DefaultChange {
    /// The pid of a running irqbalance.
    pub irqbalance: Option<u32>,
    /// Before.
    pub old: CpuSet,
    /// After, read back.
    pub new: CpuSet,
}

/// Writes `/proc/irq/default_smp_affinity` (a hex mask) and reads it back.
pub fn set_default_affinity(root: &Root, cpus: &CpuSet) -> Result<DefaultChange> {
    const PATH: &str = "/proc/irq/default_smp_affinity";
    let old = root.read_cpu_mask(PATH)?;
    root.write(PATH, &cpus.to_mask_string())?;
    let new = root.read_cpu_mask(PATH)?;
    Ok(DefaultChange {
        irqbalance: None,
        old,
        new,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        let l = |s: &str| CpuSet::parse_list(s).unwrap();
        let v = |a: Option<&str>, e: Option<&str>| {
            verdict(&l("0-1"), a.map(l).as_ref(), e.map(l).as_ref())
        };
        assert_eq!(v(None, None), IrqOutcome::Unknown);
        assert_eq!(v(Some("0"), Some("0")), IrqOutcome::Altered);
        assert_eq!(v(Some("0-1"), None), IrqOutcome::Applied);
        assert_eq!(v(Some("0-1"), Some("")), IrqOutcome::Inactive);
        assert_eq!(v(Some("0-1"), Some("0-1")), IrqOutcome::Applied);
        assert_eq!(v(Some("0-1"), Some("1")), IrqOutcome::Subset);
        assert_eq!(v(Some("0-1"), Some("2")), IrqOutcome::Pending);
    }

    #[test]
    fn description_with_several_actions() {
        let (chip, hwirq, trig, actions) =
            split_description("IO-APIC  16-fasteoi   ehci_hcd:usb1, i801_smbus");
        assert_eq!(chip, "IO-APIC");
        assert_eq!(hwirq.as_deref(), Some("16"));
        assert_eq!(trig.as_deref(), Some("fasteoi"));
        assert_eq!(actions, ["ehci_hcd:usb1", "i801_smbus"]);
    }

    #[test]
    fn description_layouts() {
        let d = split_description;
        assert_eq!(
            d("IR-PCI-MSI 327680-edge      xhci_hcd"),
            (
                "IR-PCI-MSI".into(),
                Some("327680".into()),
                Some("edge".into()),
                vec!["xhci_hcd".into()]
            )
        );
        assert_eq!(
            d("GICv3  27 Level     arch_timer"),
            (
                "GICv3".into(),
                Some("27".into()),
                Some("level".into()),
                vec!["arch_timer".into()]
            )
        );
        assert_eq!(
            d("Tegra PCIe MSI   0 Edge      eth0"),
            (
                "Tegra PCIe MSI".into(),
                Some("0".into()),
                Some("edge".into()),
                vec!["eth0".into()]
            )
        );
        let (chip, hwirq, _, actions) = d("IO-APIC   9-fasteoi");
        assert_eq!((chip.as_str(), hwirq.as_deref()), ("IO-APIC", Some("9")));
        assert!(actions.is_empty(), "an IRQ with no handler has no action");
        assert_eq!(d("weird"), ("weird".into(), None, None, vec![]));
    }

    #[test]
    fn arm_err_row_is_machine_wide() {
        let text =
            "      CPU0   CPU1\nIPI0:   10   12   Rescheduling interrupts\nErr:          0\n";
        let (_, _, rows) = parse_interrupts(Path::new("i"), text).unwrap();
        assert!(rows[0].per_cpu);
        assert!(!rows[1].per_cpu);
        assert_eq!(rows[1].name, "Err");
    }

    #[test]
    fn description_of_x86_vector_row() {
        let (chip, _, _, actions) =
            split_description("IR-PCI-MSIX-0000:00:14.0    0-edge      xhci_hcd");
        assert_eq!(chip, "IR-PCI-MSIX-0000:00:14.0");
        assert_eq!(actions, ["xhci_hcd"]);
    }
}
