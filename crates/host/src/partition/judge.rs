//! Judging what verify sampled: who the threads are, and what each IRQ, counter
//! and thread means for an isolated CPU.

use std::collections::HashMap;

use jitterlab_cpuset::CpuSet;

use crate::error::Result;
use crate::irqs::IrqMap;
use crate::partition::advise::advise;
use crate::partition::journal::{Recorded, RunRecord};
use crate::partition::verify::{Count, CpuIsolation, IrqSeen, Level, Observation, TaskSeen};
use crate::root::Root;
use crate::tasks::{parse_stat, Task, TaskKind};

pub(super) fn finding(level: Level, what: String, fix: Option<String>) -> Observation {
    Observation { level, what, fix }
}

/// Per thread (tid, start time), per isolated CPU: times run and CPU time, ns.
pub(super) type Ran = HashMap<(u32, u64), HashMap<u32, (u64, u64)>>;

/// One thread at one moment: last CPU, and how much it ran so far.
#[derive(Clone, Copy)]
pub(super) struct Sample {
    pub cpu: u32,
    pub runtime_ns: u64,
    pub runs: u64,
}

/// Reads every thread's last CPU and run counters (`schedstat`: run time in ns and
/// times scheduled; `stat` times at tick resolution when it is missing).
pub(super) fn sample_threads(root: &Root) -> HashMap<(u32, u64), Sample> {
    let mut out = HashMap::new();
    let ns_per_tick = 1_000_000_000 / crate::tasks::clock_ticks().max(1);
    for pid in root.list_numeric("/proc").unwrap_or_default() {
        for tid in root
            .list_numeric(format!("/proc/{pid}/task"))
            .unwrap_or_default()
        {
            let dir = format!("/proc/{pid}/task/{tid}");
            let Ok(text) = root.read(format!("{dir}/stat")) else {
                continue;
            };
            let Ok(stat) = parse_stat(&root.path(format!("{dir}/stat")), &text) else {
                continue;
            };
            let sched: Vec<u64> = root
                .read(format!("{dir}/schedstat"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect();
            let (runtime_ns, runs) = match sched.as_slice() {
                [run, _, count, ..] => (*run, *count),
                _ => ((stat.utime + stat.stime) * ns_per_tick, 0),
            };
            out.insert(
                (tid, stat.start_ticks),
                Sample {
                    cpu: stat.processor,
                    runtime_ns,
                    runs,
                },
            );
        }
    }
    out
}

/// Who the tasks are: the user's, excluded, or started by excluded processes.
pub(super) struct Context {
    isolated_cgroup: Option<String>,
    excluded: Vec<u32>,
    /// Processes started with `jitterlab run` or descended from one.
    users: Vec<u32>,
    /// Processes descended from an excluded one, started after isolate.
    excluded_children: Vec<u32>,
    cpus: CpuSet,
}

impl Context {
    pub(super) fn new(
        rec: Option<&Recorded>,
        runs: &[RunRecord],
        tasks: &[Task],
        cpus: &CpuSet,
    ) -> Context {
        let excluded: Vec<u32> = rec
            .map(|r| r.header.excluded_pids.clone())
            .unwrap_or_else(|| vec![1]);
        let since_ticks = rec.map(|r| r.header.start_ticks);
        let procs: HashMap<u32, &Task> = tasks
            .iter()
            .filter(|t| t.tid == t.pid)
            .map(|t| (t.pid, t))
            .collect();
        let run_pids: Vec<u32> = runs
            .iter()
            .filter(|r| {
                procs
                    .get(&r.pid)
                    .is_some_and(|t| t.start_ticks == r.start_ticks)
            })
            .map(|r| r.pid)
            .collect();
        let descends = |pid: u32, from: &dyn Fn(u32) -> bool| -> bool {
            let mut p = pid;
            for _ in 0..64 {
                if from(p) {
                    return true;
                }
                match procs.get(&p) {
                    Some(t) if t.ppid != 0 && t.ppid != p => p = t.ppid,
                    _ => return false,
                }
            }
            false
        };
        let users = procs
            .keys()
            .copied()
            .filter(|&p| descends(p, &|q| run_pids.contains(&q)))
            .collect();
        let excluded_children = procs
            .values()
            .filter(|t| since_ticks.is_some_and(|s| t.start_ticks >= s))
            .filter(|t| !excluded.contains(&t.pid))
            .filter(|t| {
                // Every ancestor up to an excluded one started after isolate.
                let mut p = t.ppid;
                for _ in 0..64 {
                    if excluded.contains(&p) {
                        return true;
                    }
                    match procs.get(&p) {
                        Some(a) if since_ticks.is_some_and(|s| a.start_ticks >= s) => p = a.ppid,
                        _ => return false,
                    }
                }
                false
            })
            .map(|t| t.pid)
            .collect();
        Context {
            isolated_cgroup: rec.and_then(|r| r.header.isolated_cgroup.clone()),
            excluded,
            users,
            excluded_children,
            cpus: cpus.clone(),
        }
    }

    /// Whose a thread is, and how bad it is that it may run on an isolated CPU.
    fn classify(&self, t: &Task) -> (&'static str, Level) {
        let user_pinned = t.allowed.is_subset(&self.cpus) && !t.kind.is_kthread();
        if self.users.contains(&t.pid)
            || (self.isolated_cgroup.is_some() && t.cpuset == self.isolated_cgroup)
            || user_pinned
        {
            ("user", Level::Info)
        } else if self.excluded.contains(&t.pid) {
            ("excluded", Level::Warn)
        } else if self.excluded_children.contains(&t.pid) {
            ("excluded_child", Level::Warn)
        } else if !t.kind.is_movable() {
            ("kernel", Level::Info)
        } else {
            ("other", Level::Fail)
        }
    }
}

pub(super) fn judge_irqs(
    v: &mut CpuIsolation,
    window: &IrqMap,
    refused: &[u32],
    cpus: &CpuSet,
    housekeeping: &CpuSet,
) {
    let cpu = v.cpu;
    let col = window.cpus.iter().position(|&c| c == cpu);
    let mut pending: Vec<(String, u64)> = Vec::new();
    for irq in &window.irqs {
        let count = col.and_then(|i| irq.counts.get(i)).copied().unwrap_or(0);
        let allowed = irq.affinity().is_some_and(|a| a.contains(cpu));
        let delivered = irq.effective().is_some_and(|e| e.contains(cpu));
        if !allowed && !delivered && count == 0 {
            continue;
        }
        let was_refused = refused.contains(&irq.irq);
        let name = format!("IRQ {} {}", irq.irq, irq.label());
        let counted = if count > 0 {
            format!(", {count} here in the window")
        } else {
            String::new()
        };
        let list = |s: Option<&CpuSet>| s.map_or("-".to_string(), |s| s.to_string());
        let (level, what, fix) = if was_refused && (delivered || count > 0) {
            (
                Level::Warn,
                format!(
                    "{name} is delivered here: a managed IRQ the kernel would not move{counted}"
                ),
                Some(format!(
                    "boot with isolcpus=managed_irq,domain,{cpus} (jitterlab advise {cpus})"
                )),
            )
        } else if was_refused {
            (
                Level::Info,
                format!(
                    "{name} may be delivered here (managed, effective CPU {})",
                    list(irq.effective())
                ),
                None,
            )
        } else if allowed {
            (
                Level::Fail,
                format!("{name} may be delivered here (smp_affinity_list {}){counted}", list(irq.affinity())),
                Some(format!("jitterlab irq set {} {housekeeping}; if refused it is managed: isolcpus=managed_irq", irq.irq)),
            )
        } else if delivered {
            pending.push((name.clone(), count));
            (Level::Info, String::new(), None)
        } else {
            (
                Level::Info,
                format!("{name} fired here before it moved{counted}"),
                None,
            )
        };
        if !what.is_empty() {
            v.findings.push(finding(level, what, fix));
        }
        v.irqs.push(IrqSeen {
            irq: irq.irq,
            label: irq.label(),
            affinity: irq.affinity().cloned(),
            effective: irq.effective().cloned(),
            count,
            refused: was_refused,
        });
    }
    if !pending.is_empty() {
        // Configured elsewhere; an edge IRQ's delivery moves when it next fires.
        let fired = pending.iter().any(|(_, n)| *n > 0);
        let items: Vec<String> = pending
            .iter()
            .map(|(name, n)| {
                if *n > 0 {
                    format!("{name} (x{n})")
                } else {
                    name.clone()
                }
            })
            .collect();
        v.findings.push(finding(
            if fired { Level::Warn } else { Level::Info },
            format!(
                "{} IRQ(s) configured elsewhere are still delivered here until they next fire: {}",
                items.len(),
                crate::partition::plan::shorten(&items, 8)
            ),
            None,
        ));
    }
}

pub(super) fn judge_counters(v: &mut CpuIsolation, window: &IrqMap, nohz_full: &Option<CpuSet>) {
    let secs = window.window.map_or(0.0, |w| w.interval_ns as f64 / 1e9);
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let cpu = v.cpu;
    let col = window.cpus.iter().position(|&c| c == cpu);
    for irq in &window.irqs {
        if let Some(&n) = col.and_then(|i| irq.counts.get(i)).filter(|&&n| n > 0) {
            v.interrupts.push(Count {
                name: format!("IRQ {} {}", irq.irq, irq.label()),
                count: n,
                per_s: per_s(n),
            });
        }
    }
    let mut ipis = Vec::new();
    for c in window.counters.iter().filter(|c| c.per_cpu) {
        let Some(&n) = col.and_then(|i| c.counts.get(i)).filter(|&&n| n > 0) else {
            continue;
        };
        v.interrupts.push(Count {
            name: c.name.clone(),
            count: n,
            per_s: per_s(n),
        });
        if c.name == "LOC" {
            let nohz = nohz_full.as_ref().is_some_and(|s| s.contains(cpu));
            v.findings.push(finding(
                Level::Warn,
                format!(
                    "local timer interrupts: {n} ({:.0}/s), the tick and the timers of what runs here",
                    per_s(n)
                ),
                (!nohz).then(|| format!("nohz_full={cpu} at boot stops the tick under a single task")),
            ));
        } else {
            ipis.push(format!("{} {n}", c.name));
        }
    }
    if !ipis.is_empty() {
        v.findings.push(finding(
            Level::Warn,
            format!(
                "interrupts from other CPUs and the kernel: {}",
                ipis.join(", ")
            ),
            None,
        ));
    }
    let scol = window.softirq_cpus.iter().position(|&c| c == cpu);
    let mut soft = Vec::new();
    for s in &window.softirqs {
        if let Some(&n) = scol.and_then(|i| s.counts.get(i)).filter(|&&n| n > 0) {
            soft.push(format!("{} {n}", s.name));
            v.softirqs.push(Count {
                name: s.name.clone(),
                count: n,
                per_s: per_s(n),
            });
        }
    }
    if !soft.is_empty() {
        v.findings.push(finding(
            Level::Warn,
            format!("softirqs: {}", soft.join(", ")),
            None,
        ));
    }
}

pub(super) fn judge_tasks(v: &mut CpuIsolation, ctx: &Context, tasks: &[Task], ran: &Ran) {
    let cpu = v.cpu;
    let mut kthreads = Vec::new();
    let mut by_class: HashMap<&str, Vec<String>> = HashMap::new();
    for t in tasks {
        let bound_here = t.kind == TaskKind::KthreadPerCpu;
        let (class, level) = ctx.classify(t);
        let here = ran
            .get(&(t.tid, t.start_ticks))
            .and_then(|m| m.get(&cpu))
            .copied();
        let seen = |runs: u64, runtime_ns: u64| TaskSeen {
            pid: t.pid,
            tid: t.tid,
            comm: t.comm.clone(),
            kind: t.kind,
            allowed: t.allowed.clone(),
            runs,
            runtime_ns,
            class: class.to_string(),
        };
        if let Some((runs, runtime)) = here {
            v.ran.push(seen(runs, runtime));
            if bound_here || class == "kernel" {
                kthreads.push(format!("{} x{runs}", t.comm));
            } else if class != "user" {
                by_class
                    .entry(class)
                    .or_default()
                    .push(format!("{} (pid {}) ran x{runs}", t.comm, t.pid));
            }
        }
        if t.allowed.contains(cpu) && !bound_here {
            v.allowed.push(seen(0, 0));
            if level > Level::Info && here.is_none() {
                by_class.entry(class).or_default().push(format!(
                    "{} (pid {} tid {}, CPUs {})",
                    t.comm, t.pid, t.tid, t.allowed
                ));
            }
        }
    }
    let mut add = |class: &str, level: Level, what: &str, fix: Option<String>| {
        if let Some(items) = by_class.get(class) {
            v.findings.push(finding(
                level,
                format!("{what}: {}", crate::partition::plan::shorten(items, 8)),
                fix,
            ));
        }
    };
    add(
        "other",
        Level::Fail,
        "threads that may run here and are not the application's",
        Some(format!(
            "jitterlab isolate moves them; started later, start them elsewhere or with `jitterlab run --cpus {cpu}`"
        )),
    );
    add(
        "excluded",
        Level::Warn,
        "excluded processes (--exclude, PID 1) may run here",
        None,
    );
    add(
        "excluded_child",
        Level::Warn,
        "started after isolate by an excluded process, so not moved",
        Some("start work through a moved shell, or run isolate again".into()),
    );
    if !kthreads.is_empty() {
        v.findings.push(finding(
            Level::Warn,
            format!(
                "kernel threads ran here: {}",
                crate::partition::plan::shorten(&kthreads, 8)
            ),
            Some("per-CPU work: ksoftirqd (softirqs), kworker/N (per-CPU work items, vmstat: --sysctl), rcu (rcu_nocbs)".into()),
        ));
    }
}

/// Findings about the machine: the journal's state, irqbalance, boot options.
pub(super) fn machine_findings(
    root: &Root,
    rec: Option<&Recorded>,
    cpus: &CpuSet,
) -> Result<Vec<Observation>> {
    let mut out = Vec::new();
    if let Some(r) = rec {
        if !r.complete {
            out.push(finding(
                Level::Fail,
                format!(
                    "the partition in {} was not completely applied (isolate was interrupted)",
                    r.path.display()
                ),
                Some("jitterlab revert, then jitterlab isolate again".into()),
            ));
        }
        if !cpus.is_subset(&r.header.cpus) {
            out.push(finding(
                Level::Info,
                format!(
                    "the partition isolates CPU {}, not all of {cpus}",
                    r.header.cpus
                ),
                None,
            ));
        }
    }
    if let Some(pid) = crate::tasks::find_irqbalance(root)? {
        out.push(finding(
            Level::Warn,
            format!("irqbalance is running (pid {pid}) and moves IRQs back"),
            Some("jitterlab isolate --stop-irqbalance".into()),
        ));
    }
    if let Ok(advice) = advise(root, cpus) {
        for p in advice.params.iter().filter(|p| !p.optional && !p.present) {
            let unsupported = p.supported == Some(false);
            out.push(finding(
                Level::Warn,
                format!(
                    "boot option missing: {}{}",
                    p.param,
                    if unsupported {
                        format!(
                            " (and this kernel lacks {})",
                            p.needs.as_deref().unwrap_or("support")
                        )
                    } else {
                        String::new()
                    }
                ),
                Some(format!("jitterlab advise {cpus}")),
            ));
        }
    }
    Ok(out)
}

/// The idle states the CPU entered during the window that take longer to leave
/// than its resume latency limit allows (without one: any above 0 us, a halt,
/// whose wake-up in a VM also waits for the host): each adds latency to the
/// wake-up of whatever runs here next.
pub(super) fn judge_idle(
    v: &mut CpuIsolation,
    before: &[crate::cpus::IdleState],
    after: &[crate::cpus::IdleState],
    limit_us: Option<u64>,
    partition: bool,
) {
    let allowed = limit_us.unwrap_or(0);
    let entered: Vec<String> = after
        .iter()
        .filter(|s| s.latency_us > allowed)
        .filter_map(|s| {
            let was = before.iter().find(|b| b.state == s.state)?.usage;
            let n = s.usage.saturating_sub(was);
            (n > 0).then(|| format!("{} x{n}, exit latency {} us", s.name, s.latency_us))
        })
        .collect();
    if entered.is_empty() {
        return;
    }
    let cpu = v.cpu;
    v.findings.push(finding(
        Level::Info,
        format!(
            "idle: the CPU went into idle states slow to leave ({}){}; a wake-up from them comes later",
            entered.join("; "),
            limit_us.map_or(String::new(), |us| format!(" despite its resume latency limit of {us} us")),
        ),
        Some(format!(
            "keep it polling: {}--idle-latency 0 (jitterlab isolate {cpu} --idle-latency 0), or an \
             application that holds /dev/cpu_dma_latency at 0 (cyclictest and jitterlab latency do)",
            if partition { "revert, then isolate again with " } else { "isolate with " }
        )),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpus::IdleState;

    fn state(n: u32, name: &str, latency_us: u64, usage: u64) -> IdleState {
        IdleState {
            state: format!("state{n}"),
            name: name.into(),
            desc: String::new(),
            latency_us,
            residency_us: 0,
            disabled: false,
            usage,
            time_us: 0,
        }
    }

    fn verdict() -> CpuIsolation {
        CpuIsolation::new(1)
    }

    #[test]
    fn idle_limits_in_the_files_language() {
        use crate::partition::plan::{idle_limit_text, idle_limit_us};
        assert_eq!(idle_limit_us(Some("0")), None);
        assert_eq!(idle_limit_us(Some("n/a")), Some(0));
        assert_eq!(idle_limit_us(Some("20\n")), Some(20));
        assert_eq!(idle_limit_us(None), None);
        assert_eq!(idle_limit_us(Some("junk")), None);
        for us in [0, 1, 20] {
            assert_eq!(
                idle_limit_us(Some(&idle_limit_text(us))),
                Some(u64::from(us))
            );
        }
    }

    #[test]
    fn only_slow_states_entered_in_the_window_count() {
        let before = [
            state(0, "POLL", 0, 100),
            state(1, "C1", 2, 50),
            state(2, "C6", 90, 7),
        ];
        // Polled a lot, halted in C1 ten times, never went to C6.
        let after = [
            state(0, "POLL", 0, 900),
            state(1, "C1", 2, 60),
            state(2, "C6", 90, 7),
        ];
        let mut v = verdict();
        judge_idle(&mut v, &before, &after, None, true);
        assert_eq!(v.findings.len(), 1);
        let f = &v.findings[0];
        assert_eq!(f.level, Level::Info);
        assert!(f.what.contains("C1 x10, exit latency 2 us"), "{}", f.what);
        assert!(
            !f.what.contains("POLL") && !f.what.contains("C6"),
            "{}",
            f.what
        );
        assert!(f
            .fix
            .as_deref()
            .unwrap()
            .contains("revert, then isolate again"));

        // Within a 5 us limit C1 is allowed; C6 entered despite it is reported.
        let after = [
            state(0, "POLL", 0, 900),
            state(1, "C1", 2, 60),
            state(2, "C6", 90, 9),
        ];
        let mut v = verdict();
        judge_idle(&mut v, &before, &after, Some(5), false);
        let what = &v.findings[0].what;
        assert!(what.contains("C6 x2") && !what.contains("C1"), "{what}");
        assert!(what.contains("limit of 5 us"), "{what}");

        // Nothing slow entered: nothing to say.
        let mut v = verdict();
        judge_idle(&mut v, &before, &before, None, false);
        assert!(v.findings.is_empty());
    }
}
