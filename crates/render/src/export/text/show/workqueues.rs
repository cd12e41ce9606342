//! `show workqueues`: the unbound workqueue cpumask and each workqueue's affinity.

use std::io::{self, Write};

use jitterlab_host::workqueues::Workqueues;

use super::set;
use crate::units::opt;
use crate::{Col, Render, Style, Table};

impl Render for Workqueues {
    const SCHEMA: &'static str = "jitterlab.show.workqueues";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        writeln!(
            out,
            "unbound cpumask {}  requested {}  isolated {}",
            set(self.cpumask.as_ref()),
            set(self.cpumask_requested.as_ref()),
            set(self.cpumask_isolated.as_ref())
        )?;
        writeln!(out)?;
        let mut t = Table::new([
            Col::left("WORKQUEUE"),
            Col::left("PER-CPU"),
            Col::left("CPUMASK"),
            Col::left("SCOPE"),
            Col::left("STRICT"),
            Col::right("MAX_ACTIVE"),
            Col::right("NICE"),
        ]);
        for q in &self.queues {
            let yes_no = |b: Option<bool>| opt(b.map(|b| if b { "yes" } else { "no" }));
            t.row([
                q.name.clone(),
                yes_no(q.per_cpu),
                set(q.cpumask.as_ref()),
                opt(q.affinity_scope.as_deref()),
                yes_no(q.affinity_strict),
                opt(q.max_active),
                opt(q.nice),
            ]);
        }
        t.write(out, style)
    }
}
