//! `jitterlab show` and its sub-views.

use std::io::{self, Write};

use jitterlab_cpuset::CpuSet;
use jitterlab_host::cgroups::Cgroups;
use jitterlab_host::cpus::{CpuMap, IsolationReason};
use jitterlab_host::irqs::{Counter, IrqMap};
use jitterlab_host::overview::Overview;
use jitterlab_host::tasks::{Task, TaskKind};
use jitterlab_host::workqueues::Workqueues;
use jitterlab_host::TaskList;

use crate::units::{cpu_time, khz, names, opt, rate};
use crate::{Render, Style, Table};

fn set(s: Option<&CpuSet>) -> String {
    match s {
        Some(s) if s.is_empty() => "(none)".to_string(),
        Some(s) => s.to_string(),
        None => "-".to_string(),
    }
}

fn isolation(reasons: &[IsolationReason]) -> String {
    if reasons.is_empty() {
        return "-".to_string();
    }
    let names: Vec<&str> = reasons
        .iter()
        .map(|r| match r {
            IsolationReason::Isolcpus => "isolcpus",
            IsolationReason::SchedDomain => "no-sched-domain",
            IsolationReason::NohzFull => "nohz_full",
            IsolationReason::RcuNocbs => "rcu_nocbs",
            IsolationReason::CpusetPartition => "cpuset",
        })
        .collect();
    names.join(",")
}

fn kind(k: TaskKind) -> &'static str {
    match k {
        TaskKind::User => "user",
        TaskKind::UserManaged => "user/managed",
        TaskKind::KthreadMovable => "kthread",
        TaskKind::KthreadPerCpu => "kthread/per-cpu",
        TaskKind::KthreadManaged => "kthread/managed",
    }
}

impl Render for Overview {
    const SCHEMA: &'static str = "jitterlab.show";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        writeln!(
            out,
            "{} CPUs shown, online {}, isolated {}; default IRQ affinity {}; {} threads in {} processes",
            self.cpus.len(),
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
                    p.comm,
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
                .map(|i| format!("{} {}", i.irq, i.name))
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
                .map(|t| format!("{}[{}]", t.comm, t.tid))
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
                    TaskKind::KthreadPerCpu => t.comm.clone(),
                    _ => format!("{} (movable)", t.comm),
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
            "CPU",
            "ONLINE",
            "CORE",
            "SMT",
            "PKG",
            "NODE",
            "GOVERNOR",
            "FREQ",
            "IDLE STATES",
            "ISOLATED",
        ])
        .right(&[0, 2, 4, 5]);
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

fn counts_cells(counts: &[u64], rates: Option<&Vec<f64>>) -> Vec<String> {
    match rates {
        Some(r) => r.iter().map(|&x| rate(x)).collect(),
        None => counts.iter().map(u64::to_string).collect(),
    }
}

fn counter_table(cpus: &[u32], rows: &[Counter], with_desc: bool) -> Table {
    let mut headers = vec!["NAME".to_string()];
    headers.extend(cpus.iter().map(|c| format!("CPU{c}")));
    if with_desc {
        headers.push("DESCRIPTION".into());
    }
    let right: Vec<usize> = (1..=cpus.len()).collect();
    let mut t = Table::new(headers).right(&right);
    for row in rows {
        let mut cells = vec![row.name.clone()];
        if row.per_cpu {
            cells.extend(counts_cells(&row.counts, row.rates.as_ref()));
        } else {
            // A machine-wide total (ERR, MIS): one figure, under the first CPU.
            cells.extend(
                counts_cells(&row.counts, row.rates.as_ref())
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
        let mut headers: Vec<String> = [
            "IRQ",
            "ACTIONS",
            "CHIP",
            "HWIRQ",
            "TYPE",
            "AFFINITY",
            "EFFECTIVE",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let first_count = headers.len();
        headers.extend(self.cpus.iter().map(|c| format!("CPU{c}")));
        let right: Vec<usize> = std::iter::once(0)
            .chain(first_count..first_count + self.cpus.len())
            .collect();
        let mut t = Table::new(headers).right(&right);
        if self.irqs.is_empty() {
            writeln!(out, "no device IRQ matches")?;
        }
        for irq in &self.irqs {
            let effective = set(irq.effective.as_ref());
            let outside = irq.pending_move;
            let mut cells = vec![
                irq.irq.to_string(),
                if irq.actions.is_empty() {
                    "-".into()
                } else {
                    irq.actions.join(",")
                },
                irq.chip.clone(),
                opt(irq.hwirq.as_deref()),
                opt(irq.trigger.as_deref()),
                set(irq.affinity.as_ref()),
                if outside {
                    style.warn(&format!("{effective}*"))
                } else {
                    effective
                },
            ];
            cells.extend(counts_cells(&irq.counts, irq.rates.as_ref()));
            t.row(cells);
        }
        if !t.is_empty() {
            t.write(out, style)?;
        }
        if self.irqs.iter().any(|i| i.pending_move) {
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

/// Longest command line shown in text; JSON has it whole.
const MAX_COMMAND: usize = 72;

fn task_row(t: &Task, threads: bool) -> Vec<String> {
    let mut cells = vec![t.pid.to_string()];
    if threads {
        cells.push(t.tid.to_string());
    }
    let cmdline = t.cmdline.as_ref().map(|c| c.replace(char::is_control, " "));
    let name = match (&cmdline, threads) {
        (Some(c), false) if c.chars().count() > MAX_COMMAND => {
            format!("{}...", c.chars().take(MAX_COMMAND - 3).collect::<String>())
        }
        (Some(c), false) if !c.is_empty() => c.clone(),
        _ if t.kind.is_kthread() => format!("[{}]", t.comm),
        _ => t.comm.clone(),
    };
    cells.extend([
        t.policy.short().to_string(),
        if t.policy.is_realtime() {
            t.rt_priority.to_string()
        } else {
            "-".into()
        },
        if t.policy.is_realtime() {
            "-".into()
        } else {
            t.nice.to_string()
        },
        t.state.to_string(),
        t.allowed.to_string(),
        t.last_cpu.to_string(),
        opt(t.cpuset.as_deref()),
        cpu_time(t.cpu_time_ns),
        kind(t.kind).to_string(),
        name,
    ]);
    cells
}

impl Render for TaskList {
    const SCHEMA: &'static str = "jitterlab.show.tasks";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let mut headers = vec!["PID"];
        if self.threads {
            headers.push("TID");
        }
        headers.extend([
            "POL",
            "RTPRIO",
            "NI",
            "S",
            "ALLOWED",
            "LAST",
            "CPUSET",
            "TIME",
            "KIND",
            if self.threads { "COMM" } else { "COMMAND" },
        ]);
        let right: Vec<usize> = if self.threads {
            vec![0, 1, 3, 4, 7]
        } else {
            vec![0, 2, 3, 6]
        };
        let mut t = Table::new(headers).right(&right);
        for task in &self.tasks {
            t.row(task_row(task, self.threads));
        }
        t.write(out, style)?;
        if let (Some(pid), Some(groups)) = (self.pid, &self.mask_groups) {
            if groups.len() > 1 {
                writeln!(out)?;
                writeln!(
                    out,
                    "{}",
                    style.warn(&format!(
                        "warning: the threads of process {pid} do not share one CPU mask:"
                    ))
                )?;
                for g in groups {
                    let tids: Vec<String> = g.tids.iter().map(u32::to_string).collect();
                    writeln!(
                        out,
                        "  {:<12} {} thread(s): {}",
                        g.allowed.to_string(),
                        g.tids.len(),
                        names(&tids, 12)
                    )?;
                }
                writeln!(
                    out,
                    "  `taskset -p` changes one thread only; `jitterlab pin CPUS -p {pid}` moves them all."
                )?;
            }
        }
        Ok(())
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
            "WORKQUEUE",
            "PER-CPU",
            "CPUMASK",
            "SCOPE",
            "STRICT",
            "MAX_ACTIVE",
            "NICE",
        ])
        .right(&[5, 6]);
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
                "CPUSET",
                "CPUS",
                "EFFECTIVE",
                "EXCLUSIVE",
                "MEMS",
                "PARTITION",
                "THREADS",
            ])
            .right(&[6]);
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
                "CPUSET",
                "CPUS",
                "EFFECTIVE",
                "MEMS",
                "CPU_EXCL",
                "MEM_EXCL",
                "LOAD_BALANCE",
                "TASKS",
            ])
            .right(&[7]);
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
