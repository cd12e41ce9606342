//! Writing IRQ affinity and reading it back.

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::irqs::Irq;
use crate::root::Root;
use crate::Status;

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

/// What [`restore_effective`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PutBack {
    /// The IRQ was seen on `cpu` before its mask was widened back: it fired while
    /// pinned. Widened to a mask holding `cpu`, the kernel then keeps it there.
    pub moved: bool,
    /// The effective CPUs read after the mask was widened back, `None` when unreadable.
    pub effective: Option<CpuSet>,
}

/// Puts `irq`'s effective CPU back on `cpu` under its mask `mask` (which holds `cpu`).
/// The kernel keeps an IRQ on its CPU when a new mask still holds it, so a mask
/// narrowed and widened back leaves the IRQ where the narrow one put it: this pins it
/// to `cpu`, waits up to `wait` for the move (an edge IRQ moves when it next fires: one
/// that does not fire within `wait` stays where it was), then writes `mask` back.
pub fn restore_effective(
    root: &Root,
    irq: u32,
    cpu: u32,
    mask: &CpuSet,
    wait: std::time::Duration,
) -> Result<PutBack> {
    let dir = format!("/proc/irq/{irq}");
    let effective = || root.read_cpu_list_opt(format!("{dir}/effective_affinity_list"));
    let pin = CpuSet::from_iter([cpu]);
    root.write(format!("{dir}/smp_affinity_list"), &pin.to_string())?;
    let start = std::time::Instant::now();
    let mut moved = effective()?.as_ref() == Some(&pin);
    while !moved && start.elapsed() < wait {
        std::thread::sleep(std::time::Duration::from_millis(10));
        moved = effective()?.as_ref() == Some(&pin);
    }
    // The mask goes back whether the IRQ moved or not: the mask is what was asked.
    root.write(format!("{dir}/smp_affinity_list"), &mask.to_string())?;
    Ok(PutBack {
        moved,
        effective: effective()?,
    })
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
        Some(libc::EACCES) => format!("{e}: IRQ affinity is root's to change: run as root (sudo)"),
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

    /// How `irq set` ends: [`Status::Failed`] when an IRQ did not end up with the
    /// requested mask (refused, altered or unknown: [`IrqSetReport::failures`]), else
    /// [`Status::Ok`] (applied, subset, pending and inactive are masks the kernel took).
    pub fn status(&self) -> Status {
        Status::failed_if(self.failures() > 0)
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

    /// `irq set` fails (status 1) when an IRQ was refused, altered or its masks could
    /// not be read back; the outcomes where the kernel took the mask do not.
    #[test]
    fn status_of_irq_set() {
        let change = |irq: u32, outcome: IrqOutcome| IrqChange {
            irq,
            label: format!("irq{irq}"),
            requested: CpuSet::first_n(1),
            old_affinity: None,
            new_affinity: None,
            old_effective: None,
            new_effective: None,
            outcome,
            error: None,
        };
        let report = |outcomes: &[IrqOutcome]| IrqSetReport {
            changes: (0..)
                .zip(outcomes)
                .map(|(irq, &o)| change(irq, o))
                .collect(),
            irqbalance: None,
        };
        use IrqOutcome::*;
        let taken = [Applied, Subset, Pending, Inactive];
        assert_eq!(report(&taken).status(), Status::Ok);
        for bad in [Refused, Altered, Unknown] {
            assert_eq!(report(&[bad]).status(), Status::Failed, "{bad:?}");
            let mut some = taken.to_vec();
            some.push(bad);
            assert_eq!(
                report(&some).status(),
                Status::Failed,
                "{bad:?} among others"
            );
        }
    }

    /// On a tree whose IRQ never moves (nothing fires in a fixture), the mask goes back
    /// and the effective CPU read back says it did not move.
    #[test]
    fn restore_effective_puts_the_mask_back_and_says_where_the_irq_is() {
        let dir = tempfile::tempdir().unwrap();
        let irq = dir.path().join("proc/irq/38");
        std::fs::create_dir_all(&irq).unwrap();
        std::fs::write(irq.join("smp_affinity_list"), "0-1\n").unwrap();
        std::fs::write(irq.join("effective_affinity_list"), "0\n").unwrap();
        let root = Root::at(dir.path());
        let mask = CpuSet::parse_list("0-1").unwrap();
        let wait = std::time::Duration::from_millis(30);
        let after = restore_effective(&root, 38, 1, &mask, wait).unwrap();
        assert!(!after.moved);
        assert_eq!(after.effective, Some(CpuSet::parse_list("0").unwrap()));
        let written = std::fs::read_to_string(irq.join("smp_affinity_list")).unwrap();
        assert_eq!(written.trim(), "0-1");
    }
}
