//! Results of `pin` and `irq`: what changed, old -> new.

use std::io::{self, Write};

use jitterlab_host::irqs::{DefaultChange, IrqOutcome, IrqSetReport};
use jitterlab_host::pin::{PinReport, ThreadOutcome};

use crate::units::opt;
use crate::{Col, Render, Style, Table};

fn irqbalance_warning(out: &mut dyn Write, style: &Style, pid: Option<u32>) -> io::Result<()> {
    match pid {
        Some(pid) => writeln!(
            out,
            "{}",
            style.warn(&format!(
                "warning: irqbalance is running (pid {pid}) and will rewrite these affinities; \
                 stop it (systemctl stop irqbalance) or ban the IRQs (IRQBALANCE_BANNED_CPULIST)"
            ))
        ),
        None => Ok(()),
    }
}

impl Render for PinReport {
    const SCHEMA: &'static str = "jitterlab.pin";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let mut t = Table::new([
            Col::right("TID"),
            Col::left("COMM"),
            Col::left("OLD"),
            Col::left(""),
            Col::left("NEW"),
            Col::left("RESULT"),
        ]);
        for th in &self.threads {
            let result = match th.outcome {
                ThreadOutcome::Moved => style.good("moved"),
                ThreadOutcome::Exited => style.dim("exited meanwhile"),
                ThreadOutcome::Failed => style.bad(&format!(
                    "FAILED: {}",
                    th.error.as_deref().unwrap_or("unknown error")
                )),
            };
            t.row([
                th.tid.to_string(),
                th.comm.clone(),
                opt(th.old.as_ref()),
                "->".to_string(),
                opt(th.new.as_ref()),
                result,
            ]);
        }
        t.write(out, style)?;
        let moved = self
            .threads
            .iter()
            .filter(|t| t.outcome == ThreadOutcome::Moved)
            .count();
        writeln!(
            out,
            "process {}: {moved} of {} thread(s) now on CPUs {}{}",
            self.pid,
            self.threads.len(),
            self.cpus,
            match self.failures() {
                0 => String::new(),
                n => style.bad(&format!(", {n} failed")),
            }
        )
    }
}

impl Render for IrqSetReport {
    const SCHEMA: &'static str = "jitterlab.irq.set";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let mut t = Table::new([
            Col::right("IRQ"),
            Col::left("NAME"),
            Col::left("AFFINITY OLD -> NEW"),
            Col::left("EFFECTIVE OLD -> NEW"),
            Col::left("RESULT"),
        ]);
        for c in &self.changes {
            let result = match c.outcome {
                IrqOutcome::Applied => style.good("applied"),
                IrqOutcome::Subset => style.good(&format!(
                    "applied; the kernel delivers to CPU {} of {}",
                    opt(c.new_effective.as_ref()),
                    c.requested
                )),
                IrqOutcome::Pending => style.warn(
                    "accepted; effective affinity not yet inside the request (moves when the IRQ next fires)",
                ),
                IrqOutcome::Inactive => {
                    style.good("applied; the IRQ is not active yet (the mask applies when it is)")
                }
                IrqOutcome::Altered => style.bad("ALTERED: the kernel stored another mask"),
                IrqOutcome::Unknown => style.bad(&format!(
                    "UNKNOWN: {}",
                    c.error.as_deref().unwrap_or("the masks could not be read back")
                )),
                IrqOutcome::Refused => {
                    style.bad(&format!("REFUSED: {}", c.error.as_deref().unwrap_or("")))
                }
            };
            t.row([
                c.irq.to_string(),
                c.label.clone(),
                format!(
                    "{} -> {}",
                    opt(c.old_affinity.as_ref()),
                    opt(c.new_affinity.as_ref())
                ),
                format!(
                    "{} -> {}",
                    opt(c.old_effective.as_ref()),
                    opt(c.new_effective.as_ref())
                ),
                result,
            ]);
        }
        t.write(out, style)?;
        irqbalance_warning(out, style, self.irqbalance)
    }
}

impl Render for DefaultChange {
    const SCHEMA: &'static str = "jitterlab.irq.default";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        writeln!(
            out,
            "default IRQ affinity: {} -> {} (mask {} -> {}); applies to IRQs set up from now on",
            self.old,
            self.new,
            self.old.to_mask_string(),
            self.new.to_mask_string()
        )?;
        irqbalance_warning(out, style, self.irqbalance)
    }
}
