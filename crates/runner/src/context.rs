//! A run's machine context ([`RunContext`]): two readings of the machine, at the start
//! of the measurement and at its end — every CPU's times in `/proc/stat`, every
//! thread's CPU time, the interrupt and softirq counts — and the difference, split into
//! jitterlab's own tools, the processes under test, kernel threads and everything else.

use std::collections::BTreeMap;
use std::time::Instant;

use jitterlab_experiment::context::{
    CpuContext, KernelMessage, RunContext, TaskTime, KERNEL_MESSAGES,
};
use jitterlab_host::irqs::CpuCounters;
use jitterlab_host::kmsg::{self, KernelLog};
use jitterlab_host::usage::{cpu_times, CpuTimes, ThreadTimes};
use jitterlab_host::Root;

use crate::error::Result;
use crate::watch::Roles;

/// One reading.
pub struct Reading {
    at: Instant,
    cpus: Vec<CpuTimes>,
    threads: ThreadTimes,
    counters: CpuCounters,
    /// jitterlab's own CPU time (its threads, those that ended too), ns.
    own_ns: u64,
    /// Its reaped children's, ns.
    children_ns: u64,
}

impl Reading {
    /// Reads the machine now.
    pub fn take(root: &Root) -> Result<Reading> {
        let (own_ns, children_ns) = own_times()?;
        Ok(Reading {
            at: Instant::now(),
            cpus: cpu_times(root)?,
            threads: ThreadTimes::read(root)?,
            counters: CpuCounters::read(root)?,
            own_ns,
            children_ns,
        })
    }
}

/// This process's CPU time, and that of its children it has reaped, ns.
fn own_times() -> Result<(u64, u64)> {
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    let mut own = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    let mut children = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the structs it is given.
    let (a, b) = unsafe {
        (
            libc::getrusage(libc::RUSAGE_SELF, own.as_mut_ptr()),
            libc::getrusage(libc::RUSAGE_CHILDREN, children.as_mut_ptr()),
        )
    };
    if a != 0 || b != 0 {
        return Err(crate::error::Error::workload(
            "reading jitterlab's CPU time",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: filled by getrusage above.
    let (own, children) = unsafe { (own.assume_init(), children.assume_init()) };
    Ok((
        ns(own.ru_utime) + ns(own.ru_stime),
        ns(children.ru_utime) + ns(children.ru_stime),
    ))
}

/// What happened between `before` and `after`. jitterlab's own threads are its
/// tools, but for those `roles` names as under test (the built-in workloads'); its
/// descendant processes are under test (the workload, the measures' commands, iperf3),
/// but for the load processes `roles` names as tools.
pub fn context(before: &Reading, after: &Reading, roles: &Roles) -> RunContext {
    let me = std::process::id();
    let (role_times, shared) = roles.finish();
    let tools = roles.tools();
    // jitterlab's own threads under test (the built-in workloads' threads).
    let tested_threads: Vec<u32> = role_times
        .iter()
        .filter(|r| r.thread)
        .filter_map(|r| u32::try_from(r.pid).ok())
        .collect();
    let mut ctx = RunContext {
        wall_ns: after.at.duration_since(before.at).as_nanos() as u64,
        roles: role_times,
        shared,
        stat_tick_ns: jitterlab_host::usage::tick_ns(),
        ..RunContext::default()
    };
    let mut foreign: BTreeMap<u32, (String, u64, u64)> = BTreeMap::new();
    let mut foreign_on: BTreeMap<u32, u64> = BTreeMap::new();
    for (t, ns, wait) in after.threads.run_and_wait_since(&before.threads) {
        if ns == 0 && wait == 0 {
            continue;
        }
        let ours = after.threads.descends_from(t.pid, me);
        if t.kthread {
            ctx.kernel_ns += ns;
        } else if t.pid == me {
            // Counted below from the process's own time, with the threads that ended.
        } else if ours {
            if tools.iter().any(|&p| after.threads.descends_from(t.pid, p)) {
                ctx.tools_ns += ns;
            } else {
                ctx.tested_ns += ns;
            }
        } else {
            ctx.foreign_ns += ns;
            ctx.foreign_wait_ns += wait;
            let e = foreign
                .entry(t.pid)
                .or_insert_with(|| (t.comm.clone(), 0, 0));
            e.1 += ns;
            e.2 += wait;
            *foreign_on.entry(t.last_cpu).or_default() += ns;
        }
    }
    // jitterlab's own threads, those that ended too: its tools, but for the built-in
    // workloads' threads (their time from the role samples); the children it reaped
    // (commands, iperf3) were under test.
    let own = after.own_ns.saturating_sub(before.own_ns);
    let tested_threads_ns: u64 = ctx
        .roles
        .iter()
        .filter(|r| u32::try_from(r.pid).is_ok_and(|p| tested_threads.contains(&p)))
        .map(|r| r.cpu_ns)
        .sum();
    ctx.tested_ns += tested_threads_ns + after.children_ns.saturating_sub(before.children_ns);
    ctx.tools_ns += own.saturating_sub(tested_threads_ns);
    let mut top: Vec<TaskTime> = foreign
        .into_iter()
        .map(|(pid, (comm, cpu_ns, wait_ns))| TaskTime {
            comm,
            pid: i32::try_from(pid).unwrap_or(i32::MAX),
            cpu_ns,
            wait_ns,
        })
        .collect();
    // Most wanted first (CPU time and wait: a loop the cell's own load starves is
    // still the background), then most used.
    top.sort_by(|a, b| {
        (b.cpu_ns + b.wait_ns)
            .cmp(&(a.cpu_ns + a.wait_ns))
            .then(b.cpu_ns.cmp(&a.cpu_ns))
            .then(a.pid.cmp(&b.pid))
    });
    top.truncate(5);
    ctx.foreign_top = top;
    for now in &after.cpus {
        let then = before
            .cpus
            .iter()
            .find(|c| c.cpu == now.cpu)
            .copied()
            .unwrap_or(CpuTimes {
                cpu: now.cpu,
                ..CpuTimes::default()
            });
        let mut c = CpuContext {
            cpu: now.cpu,
            busy_ns: now.busy_ns.saturating_sub(then.busy_ns),
            irq_ns: now.irq_ns.saturating_sub(then.irq_ns),
            softirq_ns: now.softirq_ns.saturating_sub(then.softirq_ns),
            steal_ns: now.steal_ns.saturating_sub(then.steal_ns),
            foreign_ns: foreign_on.get(&now.cpu).copied().unwrap_or(0),
            ..CpuContext::default()
        };
        for (label, n) in after.counters.delta_on(&before.counters, now.cpu) {
            if label == "LOC" {
                c.local_timer += n;
            } else if label.starts_with("IRQ ") {
                c.device_irqs += n;
            } else if let Some(v) = label.strip_prefix("softirq ") {
                *c.softirqs.entry(v.to_string()).or_default() += n;
            } else {
                c.other_irqs += n;
            }
        }
        ctx.cpus.push(c);
    }
    ctx
}

/// What the kernel logged at warning level or worse since `log` was last read (at
/// most [`KERNEL_MESSAGES`]).
pub fn kernel_messages(log: &mut KernelLog) -> Vec<KernelMessage> {
    log.read_new(kmsg::WARNING, KERNEL_MESSAGES)
        .into_iter()
        .map(|m| KernelMessage {
            level: m.level,
            kernel: m.facility == 0,
            ts_us: m.ts_us,
            text: m.text,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A busy loop this test starts but the experiment does not know is foreign; one
    /// of jitterlab's own threads, ended before the second reading, is a tool.
    #[test]
    fn a_foreign_busy_loop_is_foreign_and_our_threads_are_tools() {
        let root = Root::live();
        let roles = Roles::default();
        // Through a shell that exits at once, so that its parent is not this process.
        let out = Command::new("sh")
            .args([
                "-c",
                "timeout 2 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!",
            ])
            .output()
            .unwrap();
        let pid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        let before = Reading::take(&root).unwrap();
        // Spins 300 ms and says how much CPU it had (on a busy machine, less).
        let spin = std::thread::spawn(|| {
            let t = Instant::now();
            let mut x = 0u64;
            while t.elapsed().as_millis() < 300 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_gettime fills the timespec it is given.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        });
        std::thread::sleep(std::time::Duration::from_millis(600));
        let spun = spin.join().unwrap();
        let after = Reading::take(&root).unwrap();
        let ctx = context(&before, &after, &roles);
        // SIGTERM, which timeout passes on to the loop: a SIGKILL would end timeout alone
        // and leave the loop spinning, orphaned, for good (it spun for half an hour
        // beside later measurements before it was found).
        // SAFETY: a process of our own making.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        // The loop itself (timeout's child), known while timeout was its parent.
        let spinners: Vec<u32> = after
            .threads
            .threads
            .values()
            .filter(|t| t.pid != pid && after.threads.descends_from(t.pid, pid))
            .map(|t| t.pid)
            .collect();
        assert!(!spinners.is_empty(), "no loop under timeout {pid}");
        let gone = Instant::now() + std::time::Duration::from_secs(3);
        let alive = |p: &u32| {
            std::path::Path::new(&format!("/proc/{p}")).exists()
                && !jitterlab_host::tasks::is_zombie(&root, *p)
        };
        while spinners.iter().any(alive) && Instant::now() < gone {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let left: Vec<&u32> = spinners.iter().filter(|p| alive(p)).collect();
        assert!(left.is_empty(), "the loop outlived the test: {left:?}");
        // The loop's own time (timeout's child), as the readings saw it: all foreign.
        let looped: u64 = after
            .threads
            .since(&before.threads)
            .iter()
            .filter(|(t, _)| after.threads.descends_from(t.pid, pid))
            .map(|(_, ns)| ns)
            .sum();
        assert!(looped > 0, "the loop never ran");
        assert!(ctx.foreign_ns >= looped, "{ctx:?}");
        // The spinning thread ended before the second reading: still a tool's time
        // (rusage counts in µs, the thread's clock in ns).
        assert!(ctx.tools_ns + 1_000_000 >= spun, "{spun} ns spun: {ctx:?}");
        assert_eq!(ctx.cpus.len(), after.cpus.len());
        assert!(ctx.cpus.iter().map(|c| c.local_timer).sum::<u64>() > 0);
    }
}
