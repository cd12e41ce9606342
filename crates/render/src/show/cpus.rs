//! `show cpus`, `show workqueues` and `show cgroups`: the machine's partitioning state.

use std::io::{self, Write};

use jitterlab_host::cgroups::Cgroups;
use jitterlab_host::cpus::CpuMap;
use jitterlab_host::workqueues::Workqueues;

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

impl Render for Cgroups {
    const SCHEMA: &'static str = "jitterlab.show.cgroups";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let layout = match self.layout {
            jitterlab_host::cgroups::Layout::V1 => "cgroup v1",
            jitterlab_host::cgroups::Layout::V2 => "cgroup v2 (unified)",
            jitterlab_host::cgroups::Layout::Hybrid => "hybrid (v1 controllers and cgroup2)",
            jitterlab_host::cgroups::Layout::None => "no cgroup file system mounted",
        };
        writeln!(out, "layout: {layout}")?;
        if let Some(v2) = &self.v2_mount {
            writeln!(out, "cgroup2 mounted at {v2}")?;
        }
        match (self.cpuset_version, &self.cpuset_mount) {
            (Some(v), Some(m)) => writeln!(out, "cpuset controller: v{v} at {m}")?,
            _ => writeln!(out, "{}", style.warn("cpuset controller: not mounted"))?,
        }
        writeln!(out)?;
        if self.cpuset_version == Some(2) {
            let mut t = Table::new([
                Col::left("CPUSET"),
                Col::left("CPUS"),
                Col::left("EFFECTIVE"),
                Col::left("EXCLUSIVE"),
                Col::left("MEMS"),
                Col::left("PARTITION"),
                Col::right("THREADS"),
            ]);
            for c in &self.cpusets {
                t.row([
                    c.path.clone(),
                    set(c.cpus.as_ref()),
                    set(c.effective_cpus.as_ref()),
                    set(c.cpus_exclusive.as_ref()),
                    set(c.effective_mems.as_ref().or(c.mems.as_ref())),
                    opt(c.partition.as_deref()),
                    c.tasks.to_string(),
                ]);
            }
            t.write(out, style)
        } else {
            let mut t = Table::new([
                Col::left("CPUSET"),
                Col::left("CPUS"),
                Col::left("EFFECTIVE"),
                Col::left("MEMS"),
                Col::left("CPU_EXCL"),
                Col::left("MEM_EXCL"),
                Col::left("LOAD_BALANCE"),
                Col::right("TASKS"),
            ]);
            let flag = |b: Option<bool>| opt(b.map(u8::from));
            for c in &self.cpusets {
                t.row([
                    c.path.clone(),
                    set(c.cpus.as_ref()),
                    set(c.effective_cpus.as_ref()),
                    set(c.mems.as_ref()),
                    flag(c.cpu_exclusive),
                    flag(c.mem_exclusive),
                    flag(c.sched_load_balance),
                    c.tasks.to_string(),
                ]);
            }
            t.write(out, style)
        }
    }
}
