//! `show cpus`: topology, frequency, idle states and isolation of each CPU.

use std::io::{self, Write};

use jitterlab_host::cpus::CpuMap;

use super::{isolation, set};
use crate::units::{khz, opt};
use crate::{Col, Render, Style, Table};

impl Render for CpuMap {
    const SCHEMA: &'static str = "jitterlab.show.cpus";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        writeln!(
            out,
            "possible {}  present {}  online {}  isolated {}  nohz_full {}",
            set(Some(&self.possible)),
            set(Some(&self.present)),
            set(Some(&self.online)),
            set(Some(&self.isolated)),
            self.nohz_full
                .as_ref()
                .map_or("(not in this kernel)".to_string(), |s| set(Some(s)))
        )?;
        let b = &self.boot;
        writeln!(
            out,
            "boot: isolcpus {}{}  nohz_full {}  rcu_nocbs {}  irqaffinity {}  threadirqs {}",
            set(b.isolcpus.as_ref()),
            if b.isolcpus.is_some() {
                format!(" ({})", b.isolcpus_flags.join(","))
            } else {
                String::new()
            },
            set(b.nohz_full.as_ref()),
            set(b.rcu_nocbs.as_ref()),
            set(b.irqaffinity.as_ref()),
            if b.threadirqs { "yes" } else { "no" }
        )?;
        for w in &self.warnings {
            writeln!(out, "{}", style.warn(&format!("warning: {w}")))?;
        }
        writeln!(
            out,
            "cpuidle: driver {}  governor {}",
            opt(self.cpuidle_driver.as_deref()),
            opt(self.cpuidle_governor.as_deref())
        )?;
        writeln!(out)?;
        let mut t = Table::new([
            Col::right("CPU"),
            Col::left("ONLINE"),
            Col::right("CORE"),
            Col::left("SMT"),
            Col::right("PKG"),
            Col::right("NODE"),
            Col::left("GOVERNOR"),
            Col::left("FREQ"),
            Col::left("IDLE STATES"),
            Col::left("ISOLATED"),
        ]);
        for c in &self.cpus {
            let states: Vec<String> = c
                .idle_states
                .iter()
                .map(|s| {
                    let text = format!("{}({}us)", s.name, s.latency_us);
                    if s.disabled {
                        format!("{text}[off]")
                    } else {
                        text
                    }
                })
                .collect();
            let iso = isolation(&c.isolation);
            t.row([
                c.cpu.to_string(),
                if c.online {
                    "yes".into()
                } else {
                    style.bad("no")
                },
                opt(c.core_id),
                set(c.smt_siblings.as_ref()),
                opt(c.package_id),
                opt(c.node),
                opt(c.freq.as_ref().and_then(|f| f.governor.as_deref())),
                opt(c.freq.as_ref().and_then(|f| f.cur_khz).map(khz)),
                if states.is_empty() {
                    "-".into()
                } else {
                    states.join(" ")
                },
                if c.isolation.is_empty() {
                    iso
                } else {
                    style.good(&iso)
                },
            ]);
        }
        t.write(out, style)
    }
}
