//! What a recipe is checked against before anything runs: the facts of the machine
//! it will run on. The runner reads them from the host; this crate only compares.

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use super::levels::{Affinity, IrqLevel, IrqSelector, Partition, Placement};
use super::Level;

/// The machine a recipe is to run on, as far as the recipe can name it: its online
/// CPUs and its IRQs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HostFacts {
    /// The online CPUs.
    pub online: CpuSet,
    /// The IRQs of `/proc/interrupts`, by number.
    pub irqs: Vec<IrqFacts>,
}

/// One IRQ of the machine, as an `irq` level's selector is matched against it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IrqFacts {
    /// Its number.
    pub irq: u32,
    /// Its label and the names of its actions (`virtio1-input.0`).
    pub names: Vec<String>,
}

impl HostFacts {
    /// Every CPU of `cpus` is online; else what is not, and what is.
    pub fn check_cpus(&self, cpus: &CpuSet) -> Result<(), String> {
        let offline = cpus.difference(&self.online);
        if offline.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "CPU {offline} is not online (online: {})",
                self.online
            ))
        }
    }

    /// The IRQs `selector` names here: none is an error.
    pub fn check_irq(&self, selector: &IrqSelector) -> Result<(), String> {
        if self.irqs.iter().any(|i| selector.matches(i.irq, &i.names)) {
            return Ok(());
        }
        Err(match selector {
            IrqSelector::Number(n) => {
                format!("no IRQ {n} on this machine (jitterlab show irqs lists them)")
            }
            IrqSelector::Glob(p) => format!(
                "no IRQ of this machine is named {:?} (jitterlab show irqs lists them)",
                p.as_str()
            ),
        })
    }

    /// A factor's level can be set on this machine: its CPUs online, its IRQs there,
    /// a partition that leaves a CPU for everything else.
    pub fn check_level(&self, level: &Level) -> Result<(), String> {
        match level {
            Level::Affinity(a) => self.check_affinity(a),
            Level::Irq(IrqLevel::Unchanged) => Ok(()),
            Level::Irq(IrqLevel::Set { selector, cpus }) => {
                // The selector parsed when the level did.
                if let Ok(sel) = IrqSelector::parse(selector) {
                    self.check_irq(&sel)?;
                }
                self.check_cpus(cpus)
            }
            Level::Partition(Partition::Off) => Ok(()),
            Level::Partition(Partition::On(cpus)) => {
                self.check_cpus(cpus)?;
                if self.online.difference(cpus).is_empty() {
                    return Err(format!(
                        "no CPU is left for housekeeping (online: {}); isolate fewer CPUs",
                        self.online
                    ));
                }
                Ok(())
            }
            Level::Bitrate(_) | Level::Load(_) | Level::Setup(_) => Ok(()),
        }
    }

    fn check_affinity(&self, a: &Affinity) -> Result<(), String> {
        for pin in &a.pins {
            if let Placement::Cpus(cpus) = &pin.placement {
                self.check_cpus(cpus).map_err(|e| {
                    if a.implicit {
                        e
                    } else {
                        format!("the {}: {e}", pin.role.name())
                    }
                })?;
            }
        }
        Ok(())
    }
}
