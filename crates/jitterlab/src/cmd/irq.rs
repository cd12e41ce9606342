//! `jitterlab irq`.

use jitterlab_host::irqs::{IrqOutcome, IrqSetReport};
use jitterlab_host::tasks::find_irqbalance;
use jitterlab_host::{set_default_affinity, set_irq_affinity, Error, IrqMap, Root};

use crate::cli::{Color, Irq, IrqAction};
use crate::output::{emit, format};
use crate::{EXIT_FAILED, EXIT_OK};

pub fn run(root: &Root, args: Irq, color: Color) -> anyhow::Result<u8> {
    match args.action {
        IrqAction::Set { irq, cpus, json } => {
            let cpus = super::online_cpus(root, &cpus)?;
            let map = IrqMap::read(root)?;
            let targets: Vec<_> = match irq.parse::<u32>() {
                Ok(n) => match map.irq(n) {
                    Some(i) => vec![i],
                    None => {
                        return Err(Error::Invalid(format!("no IRQ {n} in /proc/interrupts")).into())
                    }
                },
                Err(_) => {
                    let pattern = glob::Pattern::new(&irq).map_err(|e| {
                        Error::Invalid(format!("{irq:?} is neither an IRQ number nor a glob: {e}"))
                    })?;
                    map.irqs.iter().filter(|i| i.matches(&pattern)).collect()
                }
            };
            if targets.is_empty() {
                return Err(Error::Invalid(format!("no IRQ name matches {irq:?}")).into());
            }
            let changes = targets
                .into_iter()
                .map(|target| set_irq_affinity(root, target, &cpus))
                .collect();
            let report = IrqSetReport {
                changes,
                irqbalance: find_irqbalance(root)?,
            };
            emit(&report, format(json, color))?;
            let refused = report
                .changes
                .iter()
                .any(|c| c.outcome == IrqOutcome::Refused);
            Ok(if refused { EXIT_FAILED } else { EXIT_OK })
        }
        IrqAction::Default { cpus, json } => {
            let cpus = super::online_cpus(root, &cpus)?;
            let mut change = set_default_affinity(root, &cpus)?;
            change.irqbalance = find_irqbalance(root)?;
            emit(&change, format(json, color))?;
            Ok(EXIT_OK)
        }
    }
}
