//! Scheduler and memory checks: RT throttling, timer migration, workqueue masks,
//! kernel and user threads allowed on the RT CPUs, vmstat work, transparent huge
//! pages, NUMA balancing, swap, the real-time and locked-memory limits, cpusets.

use super::{Facts, Family, Finding, FixKind, Severity};
use crate::error::Result;
use crate::tasks::{read_tasks, TaskKind, TaskQuery};

const WQ: &str = "/sys/devices/virtual/workqueue/cpumask";

/// A sysctl check: its id, file and key, the value a real-time machine wants, and
/// what the finding says.
struct Sysctl<'a> {
    id: &'a str,
    path: &'a str,
    key: &'a str,
    good: &'a str,
    severity: Severity,
    what: &'a str,
    why: &'a str,
}

fn sysctl(f: &Facts, out: &mut Vec<Finding>, s: Sysctl, bad: impl Fn(i64) -> bool) {
    let Sysctl {
        id,
        path,
        key,
        good,
        severity,
        what,
        why,
    } = s;
    if let Some(v) = f.num(path).filter(|&v| bad(v)) {
        out.push(
            Finding::new(
                id,
                Family::Scheduler,
                severity,
                format!("{what} ({key} = {v})"),
            )
            .evidence(path, v.to_string())
            .why(why)
            .fix(
                FixKind::Sysctl,
                format!("sysctl -w {key}={good} (and {key} = {good} in /etc/sysctl.d/90-rt.conf)"),
                format!("sysctl {key}"),
            ),
        );
    }
}

pub(super) fn check(f: &Facts, out: &mut Vec<Finding>) -> Result<()> {
    let rt = &f.rt;
    sysctl(
        f,
        out,
        Sysctl {
            id: "sched.rt_runtime",
            path: "/proc/sys/kernel/sched_rt_runtime_us",
            key: "kernel.sched_rt_runtime_us",
            good: "-1",
            severity: Severity::Low,
            what: "real-time tasks are throttled",
            why: "a SCHED_FIFO task that spins is stopped for the rest of each period once it used its \
         share, which shows as a gap of tens of milliseconds",
        },
        |v| v >= 0,
    );
    sysctl(
        f,
        out,
        Sysctl {
            id: "sched.timer_migration",
            path: "/proc/sys/kernel/timer_migration",
            key: "kernel.timer_migration",
            good: "0",
            severity: Severity::Low,
            what: "timers may migrate between CPUs",
            why: "timers of idle CPUs are handed to busy ones, which may be the RT CPUs",
        },
        |v| v != 0,
    );
    sysctl(
        f,
        out,
        Sysctl {
            id: "mem.stat_interval",
            path: "/proc/sys/vm/stat_interval",
            key: "vm.stat_interval",
            good: "10",
            severity: Severity::Low,
            what: "vmstat counters are folded every second",
            why: "the vmstat_update work item runs on every CPU with counters to fold, the RT CPUs included",
        },
        |v| v < 10,
    );
    sysctl(
        f,
        out,
        Sysctl {
            id: "mem.numa_balancing",
            path: "/proc/sys/kernel/numa_balancing",
            key: "kernel.numa_balancing",
            good: "0",
            severity: Severity::Low,
            what: "automatic NUMA balancing is on",
            why: "it unmaps pages to sample them, so the application takes page faults at random moments",
        },
        |v| v != 0,
    );
    if let Some(thp) = f.line("/sys/kernel/mm/transparent_hugepage/enabled") {
        if thp.contains("[always]") {
            out.push(
                Finding::new(
                    "mem.thp",
                    Family::Scheduler,
                    Severity::Low,
                    "transparent huge pages are always on",
                )
                .evidence("/sys/kernel/mm/transparent_hugepage/enabled", &thp)
                .why("khugepaged and compaction stall page faults and take locks the application may wait on")
                .fix(
                    FixKind::Shell,
                    "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (or boot with transparent_hugepage=madvise)",
                    "cat /sys/kernel/mm/transparent_hugepage/enabled",
                ),
            );
        }
    }
    if let Some(swaps) = f.root.read_opt("/proc/swaps").ok().flatten() {
        let active: Vec<&str> = swaps
            .lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .collect();
        if !active.is_empty() {
            out.push(
                Finding::new(
                    "mem.swap",
                    Family::Scheduler,
                    Severity::Low,
                    format!("swap is on ({} area(s))", active.len()),
                )
                .evidence("/proc/swaps", active[0])
                .why("a page of the application swapped out costs a disk read when touched again")
                .fix(
                    FixKind::Shell,
                    "swapoff -a, or lock the application's memory (mlockall; jitterlab latency does)",
                    "cat /proc/swaps",
                ),
            );
        }
    }
    limits(f, out);
    // Workqueues: unbound work runs on the CPUs of this mask.
    if let Ok(Some(mask)) = f.root.read_cpu_mask_opt(WQ) {
        let here = mask.intersection(rt);
        if !here.is_empty() {
            out.push(
                Finding::new(
                    "sched.workqueue",
                    Family::Scheduler,
                    Severity::Medium,
                    format!("unbound workqueues may run on CPU {here}"),
                )
                .cpus(&here)
                .evidence(WQ, mask.to_string())
                .why("kworker threads doing writeback, crypto or other deferred work then preempt or share the RT CPUs")
                .fix(FixKind::Jitterlab, f.isolate(), f.verify()),
            );
        }
    }
    // Threads allowed on the RT CPUs.
    let tasks = match read_tasks(f.root, TaskQuery::all_threads()) {
        Ok(t) => t,
        Err(_) => return Ok(()),
    };
    let mut kthreads = Vec::new();
    let mut users = Vec::new();
    let mut init = Vec::new();
    for t in &tasks {
        // Per-CPU kernel threads never move; kernel-managed ones follow the workqueue
        // mask (sched.workqueue).
        if !t.allowed.intersects(rt)
            || matches!(t.kind, TaskKind::KthreadPerCpu | TaskKind::KthreadManaged)
        {
            continue;
        }
        // The application: user threads pinned to RT CPUs only.
        if !t.kind.is_kthread() && t.allowed.is_subset(rt) {
            continue;
        }
        let item = format!(
            "{} (pid {} tid {}, CPUs {})",
            t.comm, t.pid, t.tid, t.allowed
        );
        if t.kind.is_kthread() {
            kthreads.push(item);
        } else if t.pid == 1 {
            init.push(item);
        } else {
            users.push(item);
        }
    }
    let cpuset_isolated = crate::cgroups::Cgroups::read(f.root)
        .map(|c| c.isolated_cpus())
        .unwrap_or_default();
    for (id, items, what, why) in [
        (
            "sched.kthreads",
            kthreads,
            "kernel threads",
            "kernel threads that are not bound to a CPU may be placed on the RT CPUs and preempt the application",
        ),
        (
            "sched.user_threads",
            users,
            "user threads",
            "the scheduler may place any of them on the RT CPUs, where they take turns with the application",
        ),
        (
            "sched.init_threads",
            init,
            "threads of PID 1",
            "init's threads may run there; jitterlab isolate leaves PID 1 alone unless asked \
             (on a container host or a sandbox it is the controller)",
        ),
    ] {
        if items.is_empty() {
            continue;
        }
        let fix = if id == "sched.init_threads" {
            format!("{} --move-init", f.isolate())
        } else {
            f.isolate()
        };
        let mut x = Finding::new(
            id,
            Family::Scheduler,
            Severity::Medium,
            format!("{} {what} may run on CPU {rt}", items.len()),
        )
        .cpus(rt)
        .why(why)
        .fix(FixKind::Jitterlab, fix, f.verify());
        for i in items.iter().take(3) {
            x = x.evidence("/proc/PID/task/TID/status", format!("Cpus_allowed_list of {i}"));
        }
        out.push(x);
    }
    // Load balancing: neither isolcpus nor an isolated cpuset takes the RT CPUs out.
    let isolated = f
        .root
        .read_cpu_list_opt("/sys/devices/system/cpu/isolated")
        .ok()
        .flatten()
        .unwrap_or_default()
        .union(&cpuset_isolated);
    let balanced = rt.difference(&isolated);
    if !balanced.is_empty() {
        out.push(
            Finding::new(
                "sched.partition",
                Family::Scheduler,
                Severity::Medium,
                format!("CPU {balanced} are in no isolated partition: the scheduler balances load onto them"),
            )
            .cpus(&balanced)
            .evidence(
                "/sys/devices/system/cpu/isolated",
                if isolated.is_empty() { "(empty)".to_string() } else { isolated.to_string() },
            )
            .why("without a partition any task may be moved there, and the application may be moved away")
            .fix(FixKind::Jitterlab, f.isolate(), f.verify()),
        );
    }
    Ok(())
}

/// RLIMIT_RTPRIO and RLIMIT_MEMLOCK as /proc/self/limits gives them: what an
/// unprivileged real-time application may ask for.
fn limits(f: &Facts, out: &mut Vec<Finding>) {
    let Some(text) = f.root.read_opt("/proc/self/limits").ok().flatten() else {
        return;
    };
    let soft = |name: &str| -> Option<String> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        line[name.len()..]
            .split_whitespace()
            .next()
            .map(str::to_string)
    };
    if let Some(v) = soft("Max realtime priority").filter(|v| v == "0") {
        out.push(
            Finding::new(
                "limits.rtprio",
                Family::Scheduler,
                Severity::Info,
                "an unprivileged process may not use real-time priorities (RLIMIT_RTPRIO 0)",
            )
            .evidence("/proc/self/limits", format!("Max realtime priority {v}"))
            .why("the application gets EPERM asking for SCHED_FIFO unless it runs as root or with CAP_SYS_NICE")
            .fix(
                FixKind::Config,
                "@realtime - rtprio 98 in /etc/security/limits.d/99-realtime.conf, and the user in group realtime",
                "ulimit -r",
            ),
        );
    }
    if let Some(v) = soft("Max locked memory").filter(|v| v != "unlimited") {
        out.push(
            Finding::new(
                "limits.memlock",
                Family::Scheduler,
                Severity::Info,
                format!("an unprivileged process may lock only {v} bytes of memory"),
            )
            .evidence("/proc/self/limits", format!("Max locked memory {v}"))
            .why(
                "mlockall fails for a larger application, which then takes page faults at run time",
            )
            .fix(
                FixKind::Config,
                "@realtime - memlock unlimited in /etc/security/limits.d/99-realtime.conf",
                "ulimit -l",
            ),
        );
    }
}
