//! `show cgroups`: the cgroup layout and the cpusets, v1 or v2.

use std::io::{self, Write};

use jitterlab_host::cgroups::Cgroups;

use super::set;
use crate::units::opt;
use crate::{Col, Render, Style, Table};

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
