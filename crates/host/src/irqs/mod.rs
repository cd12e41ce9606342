//! IRQs: /proc/interrupts, /proc/softirqs, /proc/irq/N and /sys/kernel/irq/N.
//!
//! `parse` holds the text parsers of the /proc tables, `desc` an IRQ's description in
//! one string, `set` the affinity writes; this file the model and its reading.
//!
//! The model is small per IRQ (a machine may have tens of thousands of them, and a
//! `--root` tree's file 300,000): its description is one string, what /proc/irq/N says
//! one allocation only where it says something, and the vectors are allocated once.

mod desc;
mod parse;
mod set;

use std::fmt::Write;

use jitterlab_cpuset::CpuSet;
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;

use desc::{ActionList, Desc};

use crate::error::{Error, Result};
use crate::root::Root;

pub use desc::Actions;
use parse::{header, interrupt_rows, interrupts_of, measure, softirqs_of, Kind, Row, Table};
pub use parse::{parse_interrupts, parse_softirqs, MAX_COUNTS, MAX_IRQ_ROWS};
pub use set::{
    restore_effective, set_default_affinity, set_irq_affinity, DefaultChange, IrqChange,
    IrqOutcome, IrqSetReport, PutBack,
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

/// One device IRQ. Serialized with the fields `irq`, `counts`, `rates` (only with a
/// window), `chip`, `hwirq`, `trigger`, `actions`, `affinity`, `effective`,
/// `affinity_hint`, `node` and `pending_move`, as its accessors give them.
#[derive(Clone)]
pub struct Irq {
    /// The Linux IRQ number.
    pub irq: u32,
    /// Interrupts handled, per CPU of [`IrqMap::cpus`].
    pub counts: Vec<u64>,
    /// Per second over the window, per CPU (only with a window).
    pub rates: Option<Vec<f64>>,
    /// Chip, hwirq, trigger and actions.
    desc: Desc,
    /// What /proc/irq/N says, when it says anything.
    files: Option<Box<IrqFiles>>,
}

/// What /proc/irq/N says of an IRQ.
#[derive(Clone, Debug, Default, PartialEq)]
struct IrqFiles {
    affinity: Option<CpuSet>,
    effective: Option<CpuSet>,
    affinity_hint: Option<CpuSet>,
    node: Option<i32>,
    pending_move: bool,
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
    /// An IRQ as a numbered row of /proc/interrupts gives it.
    fn from_proc(irq: u32, counts: Vec<u64>, desc: Desc) -> Irq {
        Irq {
            irq,
            counts,
            rates: None,
            desc,
            files: None,
        }
    }

    /// An IRQ known only by its number and a name (shown as its chip): what
    /// [`set_irq_affinity`] needs.
    pub fn named(irq: u32, name: &str) -> Irq {
        Irq::from_proc(
            irq,
            Vec::new(),
            Desc::new(name, None, None, "", ActionList::Proc),
        )
    }

    /// The interrupt controller (`IO-APIC`, `PCI-MSIX-0000:00:02.0`).
    pub fn chip(&self) -> &str {
        self.desc.chip()
    }

    /// The controller's number for it.
    pub fn hwirq(&self) -> Option<&str> {
        self.desc.hwirq()
    }

    /// `edge` or `level`.
    pub fn trigger(&self) -> Option<&str> {
        self.desc.trigger()
    }

    /// The handlers' names (device names), in the order the kernel lists them.
    pub fn actions(&self) -> Actions<'_> {
        self.desc.actions()
    }

    /// `smp_affinity_list`: the CPUs it may be delivered to.
    pub fn affinity(&self) -> Option<&CpuSet> {
        self.files.as_ref()?.affinity.as_ref()
    }

    /// `effective_affinity_list`: the CPUs it is actually delivered to.
    pub fn effective(&self) -> Option<&CpuSet> {
        self.files.as_ref()?.effective.as_ref()
    }

    /// `affinity_hint` set by the driver, when not empty.
    pub fn affinity_hint(&self) -> Option<&CpuSet> {
        self.files.as_ref()?.affinity_hint.as_ref()
    }

    /// NUMA node of the device.
    pub fn node(&self) -> Option<i32> {
        self.files.as_ref()?.node
    }

    /// The effective affinity is outside the configured one: the IRQ moves when
    /// it next fires (an edge IRQ whose affinity was just changed).
    pub fn pending_move(&self) -> bool {
        self.files.as_ref().is_some_and(|f| f.pending_move)
    }

    /// The name to show: the actions, or the chip when there is none.
    pub fn label(&self) -> String {
        self.desc.label()
    }

    /// Sum over CPUs.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Whether the IRQ's label or any action matches `pattern`.
    pub fn matches(&self, pattern: &glob::Pattern) -> bool {
        self.actions().any(|a| pattern.matches(a))
            || pattern.matches(&self.label())
            || pattern.matches(&self.irq.to_string())
    }

    /// The CPUs this IRQ is (or would be) delivered to: the effective affinity
    /// where the kernel reports it, else the configured one.
    pub fn delivered_to(&self) -> Option<&CpuSet> {
        self.effective().or(self.affinity())
    }
}

impl Serialize for Irq {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        /// The actions, serialized as a sequence as they are split.
        struct Actions<'a>(&'a Irq);
        impl Serialize for Actions<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.collect_seq(self.0.actions())
            }
        }
        let mut st = s.serialize_struct("Irq", 11 + usize::from(self.rates.is_some()))?;
        st.serialize_field("irq", &self.irq)?;
        st.serialize_field("counts", &self.counts)?;
        match &self.rates {
            Some(rates) => st.serialize_field("rates", rates)?,
            None => st.skip_field("rates")?,
        }
        st.serialize_field("chip", self.chip())?;
        st.serialize_field("hwirq", &self.hwirq())?;
        st.serialize_field("trigger", &self.trigger())?;
        st.serialize_field("actions", &Actions(self))?;
        st.serialize_field("affinity", &self.affinity())?;
        st.serialize_field("effective", &self.effective())?;
        st.serialize_field("affinity_hint", &self.affinity_hint())?;
        st.serialize_field("node", &self.node())?;
        st.serialize_field("pending_move", &self.pending_move())?;
        st.end()
    }
}

impl std::fmt::Debug for Irq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Irq")
            .field("irq", &self.irq)
            .field("counts", &self.counts)
            .field("rates", &self.rates)
            .field("chip", &self.chip())
            .field("hwirq", &self.hwirq())
            .field("trigger", &self.trigger())
            .field("actions", &self.actions().collect::<Vec<_>>())
            .field("affinity", &self.affinity())
            .field("effective", &self.effective())
            .field("affinity_hint", &self.affinity_hint())
            .field("node", &self.node())
            .field("pending_move", &self.pending_move())
            .finish()
    }
}

impl IrqMap {
    /// Reads all of it.
    pub fn read(root: &Root) -> Result<IrqMap> {
        let (path, text, table) = read_interrupts(root)?;
        let (cpus, mut irqs, counters) = interrupts_of(&path, &text, table)?;
        drop(text);
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
    /// Samples the IRQ map twice, `window_ns` apart, and returns the per-CPU rates over
    /// the window ([`IrqMap::since`]). The window is above 0 and at most an hour.
    pub fn sample(root: &Root, window_ns: u64) -> Result<IrqMap> {
        let window = crate::window::interval("--interval", window_ns, false)?;
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

/// Reads /proc/interrupts, its CPU columns checked against the machine's and its rows
/// measured within the bounds ([`MAX_IRQ_ROWS`], [`MAX_COUNTS`]); returns its path, text
/// and measure.
fn read_interrupts(root: &Root) -> Result<(std::path::PathBuf, String, Table)> {
    let file = "/proc/interrupts";
    let path = root.path(file);
    let text = root.read(file)?;
    let table = checked_table(root, &path, &text, Kind::Interrupts)?;
    Ok((path, text, table))
}

/// Reads and parses /proc/softirqs (`None` when absent), its columns checked and its
/// rows measured as those of /proc/interrupts.
fn read_softirqs(root: &Root) -> Result<Option<(Vec<u32>, Vec<Counter>)>> {
    let file = "/proc/softirqs";
    let Some(text) = root.read_opt(file)? else {
        return Ok(None);
    };
    let path = root.path(file);
    let table = checked_table(root, &path, &text, Kind::Softirqs)?;
    Ok(Some(softirqs_of(&path, &text, table)?))
}

/// The header of a table, its columns checked, then its rows measured: both before a
/// row is stored. The columns come first: every row holds a count per column, so a
/// header of 100,000 made-up CPUs would make each row 800 KB (and is an error on line 1,
/// not at the row that crosses [`MAX_COUNTS`]).
fn checked_table(root: &Root, path: &std::path::Path, text: &str, kind: Kind) -> Result<Table> {
    let cpus = header(path, text)?;
    check_columns(root, path, &cpus)?;
    measure(path, text, cpus, kind)
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
        let hwirq = root.read_line_opt(format!("{sys}/hwirq"))?;
        let trigger = root.read_line_opt(format!("{sys}/type"))?;
        let actions = root.read_opt(format!("{sys}/actions"))?;
        // Without an actions file, the actions of /proc/interrupts stay.
        let (actions, list) = match &actions {
            Some(a) => (a.trim(), ActionList::Sys),
            None => irq.desc.action_text(),
        };
        irq.desc = Desc::new(
            chip.trim(),
            hwirq.as_deref(),
            trigger.as_deref(),
            actions,
            list,
        );
    }
    let dir = format!("/proc/irq/{n}");
    let mut files = IrqFiles {
        affinity: root.read_cpu_list_opt(format!("{dir}/smp_affinity_list"))?,
        effective: root.read_cpu_list_opt(format!("{dir}/effective_affinity_list"))?,
        affinity_hint: match root.read_opt(format!("{dir}/affinity_hint"))? {
            Some(text) => Some(CpuSet::parse_mask(&text).map_err(|cause| Error::CpuSet {
                path: root.path(format!("{dir}/affinity_hint")),
                cause,
            })?)
            .filter(|s| !s.is_empty()),
            None => None,
        },
        node: root.read_num_opt(format!("{dir}/node"))?,
        pending_move: false,
    };
    files.pending_move = match (&files.effective, &files.affinity) {
        (Some(e), Some(a)) => !e.is_empty() && !e.is_subset(a),
        _ => false,
    };
    irq.files = (files != IrqFiles::default()).then(|| Box::new(files));
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
        let (path, text, table) = read_interrupts(root)?;
        // Straight from the rows to the labelled counts, no IrqMap in between; the
        // IRQs first, then the named rows.
        // The kernel has 10 softirqs (NR_SOFTIRQS).
        let mut rows: Vec<(String, Vec<u64>)> =
            Vec::with_capacity(table.numbered + table.named + 10);
        let mut named = Vec::new();
        interrupt_rows(&path, &text, &table, |row| match row {
            Row::Irq {
                number,
                counts,
                rest,
            } => {
                let desc = Desc::from_proc(rest);
                let mut label = String::with_capacity(15 + desc.label_len());
                let _ = write!(label, "IRQ {number} ");
                desc.push_label(&mut label);
                rows.push((label, counts));
            }
            Row::Named {
                name,
                counts,
                per_cpu: true,
                ..
            } => named.push((name.to_string(), counts)),
            Row::Named { .. } => {}
        })?;
        drop(text);
        let cpus = table.cpus;
        rows.append(&mut named);
        if let Some((soft_cpus, soft)) = read_softirqs(root)? {
            rows.reserve_exact(soft.len());
            // Align the softirq columns with the interrupt columns: where each CPU of
            // the interrupts is among those of the softirqs (both in ascending order),
            // found once, not per row and column.
            let at: Vec<Option<usize>> = cpus
                .iter()
                .map(|c| soft_cpus.binary_search(c).ok())
                .collect();
            for row in soft {
                let counts = at
                    .iter()
                    .map(|i| i.and_then(|i| row.counts.get(i)).copied().unwrap_or(0))
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
