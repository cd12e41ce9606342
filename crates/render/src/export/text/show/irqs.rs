//! `show irqs`.

use std::io::{self, Write};

use jitterlab_host::irqs::{Counter, IrqMap};

use super::set;
use crate::units::{opt, rate};
use crate::{Col, Render, Style, Table};

fn counts_cells(counts: &[u64], rates: Option<&[f64]>) -> Vec<String> {
    match rates {
        Some(r) => r.iter().map(|&x| rate(x)).collect(),
        None => counts.iter().map(u64::to_string).collect(),
    }
}

fn counter_table(cpus: &[u32], rows: &[Counter], with_desc: bool) -> Table {
    let mut cols = vec![Col::left("NAME")];
    cols.extend(cpus.iter().map(|c| Col::right(format!("CPU{c}"))));
    if with_desc {
        cols.push(Col::left("DESCRIPTION"));
    }
    let mut t = Table::new(cols);
    for row in rows {
        let mut cells = vec![row.name.clone()];
        if row.per_cpu {
            cells.extend(counts_cells(&row.counts, row.rates.as_deref()));
        } else {
            // A machine-wide total (ERR, MIS): one figure, under the first CPU.
            cells.extend(
                counts_cells(&row.counts, row.rates.as_deref())
                    .into_iter()
                    .take(1),
            );
            cells.extend(std::iter::repeat_n(
                String::new(),
                cpus.len().saturating_sub(1),
            ));
        }
        if with_desc {
            let desc = match (row.per_cpu, row.description.is_empty()) {
                (true, _) => row.description.clone(),
                (false, true) => "total of all CPUs".to_string(),
                (false, false) => format!("{} (total of all CPUs)", row.description),
            };
            cells.push(desc);
        }
        t.row(cells);
    }
    t
}

impl Render for IrqMap {
    const SCHEMA: &'static str = "jitterlab.show.irqs";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        if let Some(w) = &self.window {
            writeln!(
                out,
                "rates per second over {}",
                crate::units::duration_ns(w.interval_ns)
            )?;
        }
        writeln!(
            out,
            "default affinity (new IRQs): {}",
            set(self.default_affinity.as_ref())
        )?;
        writeln!(out)?;
        let mut cols = vec![
            Col::right("IRQ"),
            Col::left("ACTIONS"),
            Col::left("CHIP"),
            Col::left("HWIRQ"),
            Col::left("TYPE"),
            Col::left("AFFINITY"),
            Col::left("EFFECTIVE"),
        ];
        cols.extend(self.cpus.iter().map(|c| Col::right(format!("CPU{c}"))));
        let mut t = Table::new(cols);
        if self.irqs.is_empty() {
            writeln!(out, "no device IRQ matches")?;
        }
        for irq in &self.irqs {
            let effective = set(irq.effective());
            let outside = irq.pending_move();
            let actions: Vec<&str> = irq.actions().collect();
            let mut cells = vec![
                irq.irq.to_string(),
                if actions.is_empty() {
                    "-".into()
                } else {
                    actions.join(",")
                },
                irq.chip().to_string(),
                opt(irq.hwirq()),
                opt(irq.trigger()),
                set(irq.affinity()),
                if outside {
                    style.warn(&format!("{effective}*"))
                } else {
                    effective
                },
            ];
            cells.extend(counts_cells(&irq.counts, irq.rates.as_deref()));
            t.row(cells);
        }
        if !t.is_empty() {
            t.write(out, style)?;
        }
        if self.irqs.iter().any(|i| i.pending_move()) {
            writeln!(
                out,
                "* effective affinity outside the configured one: the IRQ moves when it next fires"
            )?;
        }
        if !self.counters.is_empty() {
            writeln!(out)?;
            counter_table(&self.cpus, &self.counters, true).write(out, style)?;
        }
        if !self.softirqs.is_empty() {
            writeln!(out)?;
            writeln!(out, "{}", style.bold("softirqs"))?;
            counter_table(&self.softirq_cpus, &self.softirqs, false).write(out, style)?;
        }
        Ok(())
    }
}
