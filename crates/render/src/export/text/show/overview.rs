//! The per-CPU overview of `jitterlab show`.

use std::io::{self, Write};

use jitterlab_host::overview::Overview;
use jitterlab_host::tasks::TaskKind;

use super::{isolation, set};
use crate::units::{escape, names, opt};
use crate::{Render, Style};

impl Render for Overview {
    const SCHEMA: &'static str = "jitterlab.show";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        writeln!(
            out,
            "{} CPU{} shown, online {}, isolated {}; default IRQ affinity {}; {} threads in {} processes",
            self.cpus.len(),
            if self.cpus.len() == 1 { "" } else { "s" },
            set(Some(&self.online)),
            set(Some(&self.isolated)),
            set(self.default_irq_affinity.as_ref()),
            self.threads,
            self.processes
        )?;
        if let Some(pid) = self.irqbalance {
            writeln!(
                out,
                "{}",
                style.warn(&format!(
                    "warning: irqbalance is running (pid {pid}); it rewrites IRQ affinities"
                ))
            )?;
        }
        for p in &self.split_masks {
            let groups: Vec<String> = p
                .groups
                .iter()
                .map(|g| format!("{} thread(s) on {}", g.tids.len(), g.allowed))
                .collect();
            writeln!(
                out,
                "{}",
                style.warn(&format!(
                    "warning: the threads of {}[{}] do not share one CPU mask: {} (see: jitterlab show tasks -p {})",
                    escape(&p.comm),
                    p.pid,
                    groups.join(", "),
                    p.pid
                ))
            )?;
        }
        for c in &self.cpus {
            writeln!(out)?;
            let head = format!("CPU {}", c.cpu);
            let status = if !c.online {
                style.bad("offline")
            } else if c.isolated {
                style.good(&format!("online, isolated ({})", isolation(&c.isolation)))
            } else if c.isolation.is_empty() {
                "online".to_string()
            } else {
                format!("online ({})", isolation(&c.isolation))
            };
            writeln!(
                out,
                "{}  {status}  core {}  package {}  node {}  SMT siblings {}",
                style.bold(&head),
                opt(c.core_id),
                opt(c.package_id),
                opt(c.node),
                set(c.smt_siblings.as_ref())
            )?;
            let irqs: Vec<String> = c
                .irqs
                .iter()
                .map(|i| format!("{} {}", i.irq, escape(&i.name)))
                .collect();
            writeln!(
                out,
                "  IRQs here     {:>4}  {}",
                c.irqs.len(),
                names(&irqs, 8)
            )?;
            let ran: Vec<String> = c
                .last_ran
                .iter()
                .map(|t| format!("{}[{}]", escape(&t.comm), t.tid))
                .collect();
            writeln!(
                out,
                "  last ran here {:>4}  {}",
                c.last_ran.len(),
                names(&ran, 6)
            )?;
            writeln!(
                out,
                "  may run here  {:>4}  ({} only here)",
                c.allowed, c.bound
            )?;
            let kt: Vec<String> = c
                .kthreads
                .iter()
                .map(|t| match t.kind {
                    TaskKind::KthreadPerCpu => escape(&t.comm),
                    _ => format!("{} (movable)", escape(&t.comm)),
                })
                .collect();
            writeln!(
                out,
                "  kthreads bound{:>4}  {}",
                c.kthreads.len(),
                names(&kt, 8)
            )?;
        }
        Ok(())
    }
}
