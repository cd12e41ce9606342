//! IRQs: /proc/interrupts, /proc/softirqs, /proc/irq/N and /sys/kernel/irq/N.
//!
//! `parse` holds the text parsers of the /proc tables, `set` the affinity
//! writes; this file the model and its reading.

mod parse;
mod set;

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::root::Root;

use parse::parse_header;
pub use parse::{parse_interrupts, parse_softirqs};
pub use set::{
    set_default_affinity, set_irq_affinity, DefaultChange, IrqChange, IrqOutcome, IrqSetReport,
};

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
        let (cpus, mut irqs, counters) = read_interrupts(root)?;
        for irq in &mut irqs {
            read_irq_files(root, irq)?;
        }
        let default_affinity = root.read_cpu_mask_opt("/proc/irq/default_smp_affinity")?;
        let (softirq_cpus, softirqs) = read_softirqs(root)?.unwrap_or_default();
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
    /// Samples the IRQ map twice, `seconds` apart, and returns the per-CPU rates over
    /// the window ([`IrqMap::since`]). `seconds` must be above 0 and at most 3600.
    pub fn sample(root: &Root, seconds: f64) -> Result<IrqMap> {
        let window = crate::seconds::interval("--interval", seconds, false)?;
        let before = IrqMap::read(root)?;
        let start = std::time::Instant::now();
        std::thread::sleep(window);
        let after = IrqMap::read(root)?;
        Ok(after.since(&before, start.elapsed().as_nanos() as u64))
    }

    /// The IRQs `spec` names: an IRQ number, or a glob over IRQ numbers and action
    /// names (`virtio3-*`, `eth0`) as [`Irq::matches`] reads it. No match is an
    /// invalid request.
    pub fn select(&self, spec: &str) -> Result<Vec<&Irq>> {
        if let Ok(n) = spec.parse::<u32>() {
            return match self.irq(n) {
                Some(i) => Ok(vec![i]),
                None => Err(Error::Invalid(format!("no IRQ {n} in /proc/interrupts"))),
            };
        }
        let pattern = glob::Pattern::new(spec).map_err(|e| {
            Error::Invalid(format!("{spec:?} is neither an IRQ number nor a glob: {e}"))
        })?;
        let found: Vec<&Irq> = self.irqs.iter().filter(|i| i.matches(&pattern)).collect();
        if found.is_empty() {
            return Err(Error::Invalid(format!("no IRQ name matches {spec:?}")));
        }
        Ok(found)
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

/// Reads and parses /proc/interrupts, its CPU columns checked against the machine's.
fn read_interrupts(root: &Root) -> Result<(Vec<u32>, Vec<Irq>, Vec<Counter>)> {
    let file = "/proc/interrupts";
    let path = root.path(file);
    let text = root.read(file)?;
    // The columns are checked before the rows are read: every row holds a count per
    // column, so a header of 100,000 made-up CPUs would make each row 800 KB.
    check_columns(
        root,
        &path,
        &parse_header(&path, text.lines().next().unwrap_or(""))?,
    )?;
    parse_interrupts(&path, &text)
}

/// Reads and parses /proc/softirqs (`None` when absent), its columns checked.
fn read_softirqs(root: &Root) -> Result<Option<(Vec<u32>, Vec<Counter>)>> {
    let file = "/proc/softirqs";
    let Some(text) = root.read_opt(file)? else {
        return Ok(None);
    };
    let path = root.path(file);
    check_columns(
        root,
        &path,
        &parse_header(&path, text.lines().next().unwrap_or(""))?,
    )?;
    Ok(Some(parse_softirqs(&path, &text)?))
}

/// The kernel prints a column per online CPU: a column of a CPU the machine does not
/// have (not in `/sys/devices/system/cpu/possible`, when that is readable) is an error
/// on line 1. (Possible rather than online: a CPU may go offline between the reads.)
fn check_columns(root: &Root, path: &std::path::Path, cpus: &[u32]) -> Result<()> {
    let Some(possible) = root.read_cpu_list_opt("/sys/devices/system/cpu/possible")? else {
        return Ok(());
    };
    match cpus.iter().find(|&&c| !possible.contains(c)) {
        Some(c) => Err(Error::parse(
            path,
            1,
            format!("columns of CPUs this machine has (possible: {possible})"),
            &format!("CPU{c}"),
        )),
        None => Ok(()),
    }
}

/// Fills in what /proc/irq/N and /sys/kernel/irq/N say of an IRQ.
fn read_irq_files(root: &Root, irq: &mut Irq) -> Result<()> {
    let n = irq.irq;
    let sys = format!("/sys/kernel/irq/{n}");
    if let Some(chip) = root.read_opt(format!("{sys}/chip_name"))? {
        irq.chip = chip.trim().to_string();
        irq.hwirq = root.read_line_opt(format!("{sys}/hwirq"))?;
        irq.trigger = root.read_line_opt(format!("{sys}/type"))?;
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
        Some(text) => Some(CpuSet::parse_mask(&text).map_err(|cause| Error::CpuSet {
            path: root.path(format!("{dir}/affinity_hint")),
            cause,
        })?)
        .filter(|s| !s.is_empty()),
        None => None,
    };
    irq.node = root.read_num_opt(format!("{dir}/node"))?;
    irq.pending_move = match (&irq.effective, &irq.affinity) {
        (Some(e), Some(a)) => !e.is_empty() && !e.is_subset(a),
        _ => false,
    };
    Ok(())
}

/// Per-CPU interrupt and softirq counts, cheap to read often: what the latency probe's
/// spike ledger diffs around a spike. Rows are labelled `IRQ 36 virtio1-req.0`, `LOC`,
/// `softirq TIMER`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuCounters {
    /// The CPUs the columns stand for.
    pub cpus: Vec<u32>,
    /// Label and one count per CPU of [`CpuCounters::cpus`].
    pub rows: Vec<(String, Vec<u64>)>,
}

impl CpuCounters {
    /// Reads /proc/interrupts and /proc/softirqs.
    pub fn read(root: &Root) -> Result<CpuCounters> {
        let (cpus, irqs, counters) = read_interrupts(root)?;
        let mut rows: Vec<(String, Vec<u64>)> = irqs
            .into_iter()
            .map(|i| (format!("IRQ {} {}", i.irq, i.label()), i.counts))
            .collect();
        rows.extend(
            counters
                .into_iter()
                .filter(|c| c.per_cpu)
                .map(|c| (c.name, c.counts)),
        );
        if let Some((soft_cpus, soft)) = read_softirqs(root)? {
            for row in soft {
                // Align the softirq columns with the interrupt columns.
                let counts = cpus
                    .iter()
                    .map(|c| {
                        soft_cpus
                            .iter()
                            .position(|s| s == c)
                            .and_then(|i| row.counts.get(i))
                            .copied()
                            .unwrap_or(0)
                    })
                    .collect();
                rows.push((format!("softirq {}", row.name), counts));
            }
        }
        Ok(CpuCounters { cpus, rows })
    }

    /// The rows that grew on `cpu` from `earlier` to `self`, largest change first. A row
    /// missing from `earlier` (an IRQ requested since) counts from zero; a counter that
    /// went backwards (an IRQ freed and reused) counts from zero too.
    pub fn delta_on(&self, earlier: &CpuCounters, cpu: u32) -> Vec<(String, u64)> {
        let Some(col) = self.cpus.iter().position(|&c| c == cpu) else {
            return Vec::new();
        };
        let then_col = earlier.cpus.iter().position(|&c| c == cpu);
        let mut out: Vec<(String, u64)> = self
            .rows
            .iter()
            .filter_map(|(label, counts)| {
                let now = *counts.get(col)?;
                let then = then_col
                    .and_then(|tc| {
                        earlier
                            .rows
                            .iter()
                            .find(|(l, _)| l == label)
                            .and_then(|(_, c)| c.get(tc))
                    })
                    .copied()
                    .unwrap_or(0);
                let d = if now >= then { now - then } else { now };
                (d > 0).then(|| (label.clone(), d))
            })
            .collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out
    }
}
