//! `jitterlab revert`: what was undone and what still differs.

use std::io::{self, Write};

use jitterlab_host::partition::{RevertReport, UndoOutcome, UndoResult};

use crate::units::duration_ns;
use crate::{Col, Render, Style, Table};

impl Render for RevertReport {
    const SCHEMA: &'static str = "jitterlab.revert";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        writeln!(
            out,
            "{} the partition of CPU {} (method {}, made by pid {}{}) from {}",
            style.bold("revert"),
            self.cpus,
            self.method.name(),
            self.isolated_by,
            if self.apply_complete {
                ""
            } else {
                "; that apply never finished"
            },
            self.journal
        )?;
        if self.other_boot {
            writeln!(
                out,
                "the journal is from an earlier boot: what it changed is gone; nothing to undo"
            )?;
        }
        let count =
            |f: &dyn Fn(&UndoOutcome) -> bool| self.undone.iter().filter(|u| f(&u.outcome)).count();
        writeln!(
            out,
            "{} steps in {}: {} restored, {} already as before, {} with nothing to undo, {}",
            self.undone.len(),
            duration_ns(self.elapsed_ns),
            count(&|o| *o == UndoOutcome::Restored),
            count(&|o| *o == UndoOutcome::Unchanged),
            count(&|o| matches!(o, UndoOutcome::Skipped { .. })),
            match self.failures() {
                0 => "0 failed".to_string(),
                n => style.bad(&format!("{n} failed")),
            }
        )?;
        let failed: Vec<&UndoResult> = self
            .undone
            .iter()
            .chain(&self.released)
            .filter(|u| matches!(u.outcome, UndoOutcome::Failed { .. }))
            .collect();
        if !failed.is_empty() {
            let mut t = Table::new([Col::right("STEP"), Col::left("WHAT"), Col::left("ERROR")]);
            for u in failed {
                let UndoOutcome::Failed { error } = &u.outcome else {
                    continue;
                };
                t.row([
                    u.seq.map_or("-".into(), |s| (s + 1).to_string()),
                    u.what.clone(),
                    style.bad(error),
                ]);
            }
            t.write(out, style)?;
        }
        if !self.released.is_empty() {
            writeln!(
                out,
                "threads started during the partition, given their parent's CPUs back:"
            )?;
            for r in &self.released {
                writeln!(out, "  {}", r.what)?;
            }
        }
        if self.differences.is_empty() {
            writeln!(
                out,
                "{} IRQ masks, workqueue masks, sysctls, cpusets and thread CPUs are as before isolate",
                style.good("no difference:")
            )?;
        } else {
            writeln!(
                out,
                "{}",
                style.warn(&format!(
                    "{} difference(s) from before isolate:",
                    self.differences.len()
                ))
            )?;
            let mut t = Table::new([Col::left("WHAT"), Col::left("BEFORE"), Col::left("NOW")]);
            for d in &self.differences {
                t.row([d.what.clone(), d.before.clone(), d.after.clone()]);
            }
            t.write(out, style)?;
        }
        if self.journal_removed {
            writeln!(out, "journal removed")
        } else {
            writeln!(
                out,
                "{}",
                style
                    .warn("journal kept: run `jitterlab revert` again once the failures are fixed")
            )
        }
    }
}

/// `revert` with no journal: nothing to do (`data` is null in JSON).
impl Render for Option<RevertReport> {
    const SCHEMA: &'static str = "jitterlab.revert";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        match self {
            Some(r) => r.text(out, style),
            None => writeln!(out, "nothing to revert: no partition journal"),
        }
    }
}
