//! `jitterlab irq`: IRQ affinity.

use clap::{Args, Subcommand};
use jitterlab_host::irqs::IrqSetReport;
use jitterlab_host::tasks::find_irqbalance;
use jitterlab_host::{set_default_affinity, set_irq_affinity, IrqMap, Root};

use crate::cli::{Color, JsonOut};
use crate::exit::{Exit, Result};
use crate::output::emit;

/// `jitterlab irq`.
#[derive(Args, Debug)]
pub struct IrqArgs {
    /// The action.
    #[command(subcommand)]
    pub action: IrqAction,
}

/// What to do with IRQs.
#[derive(Subcommand, Debug)]
pub enum IrqAction {
    /// Write smp_affinity_list of the IRQs given, read back the effective affinity.
    #[command(
        after_help = "Exit status: 0 when every IRQ took the mask (applied, subset, pending, inactive), 1 when one was refused, altered or unknown (the others are still done), 2 on a bad request (nothing changed)."
    )]
    Set {
        /// An IRQ number, or a glob over IRQ names (virtio3-*, eth0).
        #[arg(value_name = "IRQ|GLOB")]
        irq: String,
        /// The CPUs (list form).
        #[arg(value_name = "CPUS")]
        cpus: String,
        #[command(flatten)]
        json: JsonOut,
    },
    /// Write /proc/irq/default_smp_affinity, the affinity of IRQs set up from now on.
    Default {
        /// The CPUs (list form).
        #[arg(value_name = "CPUS")]
        cpus: String,
        #[command(flatten)]
        json: JsonOut,
    },
}

pub fn run(root: &Root, args: IrqArgs, color: Color) -> Result {
    match args.action {
        IrqAction::Set { irq, cpus, json } => {
            let cpus = super::online_cpus(root, &cpus)?;
            let map = IrqMap::read(root)?;
            let changes = map
                .select(&irq)?
                .into_iter()
                .map(|target| set_irq_affinity(root, target, &cpus))
                .collect();
            let report = IrqSetReport {
                changes,
                irqbalance: find_irqbalance(root)?,
            };
            emit(&report, &json, color)?;
            Ok(report.status().into())
        }
        IrqAction::Default { cpus, json } => {
            let cpus = super::online_cpus(root, &cpus)?;
            let mut change = set_default_affinity(root, &cpus)?;
            change.irqbalance = find_irqbalance(root)?;
            emit(&change, &json, color)?;
            Ok(Exit::Ok)
        }
    }
}
