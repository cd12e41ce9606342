//! Where the CPU time goes: per CPU from `/proc/stat` (busy, hardirq, softirq, steal),
//! and per thread from every `/proc/PID/task/TID/stat` (user plus system time, the CPU it
//! last ran on, whether it is a kernel thread, its parent). Cheap enough to read around
//! every run of an experiment; two readings make a delta.

use std::collections::HashMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::root::Root;
use crate::tasks::{clock_ticks, parse_stat};

/// `PF_KTHREAD` in the stat flags.
const PF_KTHREAD: u64 = 0x0020_0000;

/// One CPU's line of `/proc/stat`, in nanoseconds (from clock ticks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// The CPU.
    pub cpu: u32,
    /// user + nice + system + irq + softirq.
    pub busy_ns: u64,
    /// irq.
    pub irq_ns: u64,
    /// softirq.
    pub softirq_ns: u64,
    /// idle + iowait.
    pub idle_ns: u64,
    /// steal: the hypervisor ran something else while this vCPU wanted to run.
    pub steal_ns: u64,
}

/// Parses the `cpuN` lines of `/proc/stat` (`path` names it in errors); `tick_ns` is
/// the length of a clock tick.
pub fn parse_cpu_times(path: &Path, text: &str, tick_ns: u64) -> Result<Vec<CpuTimes>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut f = line.split_whitespace();
        let Some(cpu) = f.next().and_then(|c| c.strip_prefix("cpu")) else {
            continue;
        };
        if cpu.is_empty() {
            continue; // the "cpu" total line
        }
        let cpu = cpu.parse::<u32>().map_err(|_| {
            Error::parse(
                path,
                i + 1,
                "a CPU number from 0 to 4294967295 after 'cpu'",
                cpu,
            )
        })?;
        const NAMES: [&str; 8] = [
            "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
        ];
        let mut v = [0u64; 8];
        for (n, slot) in v.iter_mut().enumerate() {
            let field = f.next().ok_or_else(|| {
                Error::parse(path, i + 1, "8 times after the CPU (user to steal)", line)
            })?;
            *slot = field.parse::<u64>().map_err(|_| {
                Error::parse(
                    path,
                    i + 1,
                    format!(
                        "field {} ({}) to be a number from 0 to 18446744073709551615",
                        n + 2,
                        NAMES[n]
                    ),
                    field,
                )
            })?;
        }
        let [user, nice, system, idle, iowait, irq, softirq, steal] =
            v.map(|t| t.saturating_mul(tick_ns));
        out.push(CpuTimes {
            cpu,
            busy_ns: user
                .saturating_add(nice)
                .saturating_add(system)
                .saturating_add(irq)
                .saturating_add(softirq),
            irq_ns: irq,
            softirq_ns: softirq,
            idle_ns: idle.saturating_add(iowait),
            steal_ns: steal,
        });
    }
    Ok(out)
}

/// Reads `/proc/stat`'s CPU lines.
pub fn cpu_times(root: &Root) -> Result<Vec<CpuTimes>> {
    let text = root.read("/proc/stat")?;
    parse_cpu_times(&root.path("/proc/stat"), &text, tick_ns())
}

/// The unit of `/proc/stat`'s and a task's `stat` times (the clock tick), ns.
pub fn tick_ns() -> u64 {
    1_000_000_000 / clock_ticks().max(1)
}

/// One thread's CPU time so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadTime {
    /// Its process.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// Its process's parent.
    pub ppid: u32,
    /// Its name.
    pub comm: String,
    /// A kernel thread.
    pub kthread: bool,
    /// When it started, clock ticks after boot (with the tid, its identity).
    pub start_ticks: u64,
    /// Its time on a CPU, ns: `schedstat`'s run time, else stat's user plus system
    /// time (counted in clock ticks).
    pub cpu_ns: u64,
    /// The CPU it last ran on.
    pub last_cpu: u32,
    /// Its time runnable but waiting for a CPU, ns (`schedstat`'s run-queue wait; 0
    /// where the kernel does not keep it).
    pub wait_ns: u64,
}

/// Every thread of the machine, by (tid, start time).
#[derive(Clone, Debug, Default)]
pub struct ThreadTimes {
    /// The threads.
    pub threads: HashMap<(u32, u64), ThreadTime>,
}

impl ThreadTimes {
    /// Reads every thread's stat and schedstat (threads that end while they are read
    /// are skipped).
    pub fn read(root: &Root) -> Result<ThreadTimes> {
        let tick = tick_ns();
        let mut threads = HashMap::new();
        for pid in root.list_numeric("/proc")? {
            let tids = match root.list_numeric(format!("/proc/{pid}/task")) {
                Ok(t) => t,
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e),
            };
            for tid in tids {
                let file = format!("/proc/{pid}/task/{tid}/stat");
                let text = match root.read_opt(&file)? {
                    Some(t) => t,
                    None => continue,
                };
                let s = parse_stat(&root.path(&file), &text)?;
                // The scheduler's own count, in ns, where the kernel keeps it: stat's
                // user and system times are sampled at the tick (10 ms here), so a
                // thread that ran 1 ms may be charged 10 or nothing, which in a run of
                // 100 ms is the difference between quiet and busy.
                // Its second field, the time spent runnable on a run queue, is what a
                // thread wanted of the CPUs and did not get.
                let schedstat = root.read_opt(format!("/proc/{pid}/task/{tid}/schedstat"))?;
                let field = |k: usize| -> Option<u64> {
                    schedstat
                        .as_deref()?
                        .split_whitespace()
                        .nth(k)?
                        .parse()
                        .ok()
                };
                let cpu_ns = field(0)
                    .unwrap_or_else(|| s.utime.saturating_add(s.stime).saturating_mul(tick));
                let wait_ns = field(1).unwrap_or(0);
                threads.insert(
                    (tid, s.start_ticks),
                    ThreadTime {
                        pid,
                        tid,
                        ppid: s.ppid,
                        comm: s.comm,
                        kthread: s.flags & PF_KTHREAD != 0,
                        start_ticks: s.start_ticks,
                        cpu_ns,
                        last_cpu: s.processor,
                        wait_ns,
                    },
                );
            }
        }
        Ok(ThreadTimes { threads })
    }

    /// The CPU time each thread alive at `self` used since `earlier` (all of it for a
    /// thread that started since), with the thread.
    pub fn since<'a>(&'a self, earlier: &ThreadTimes) -> Vec<(&'a ThreadTime, u64)> {
        self.threads
            .iter()
            .map(|(key, t)| {
                let before = earlier.threads.get(key).map_or(0, |e| e.cpu_ns);
                (t, t.cpu_ns.saturating_sub(before))
            })
            .collect()
    }

    /// The CPU time and the run-queue wait each thread alive at `self` had since
    /// `earlier` (all of it for a thread that started since), with the thread.
    pub fn run_and_wait_since<'a>(
        &'a self,
        earlier: &ThreadTimes,
    ) -> Vec<(&'a ThreadTime, u64, u64)> {
        self.threads
            .iter()
            .map(|(key, t)| {
                let (run, wait) = earlier
                    .threads
                    .get(key)
                    .map_or((0, 0), |e| (e.cpu_ns, e.wait_ns));
                (
                    t,
                    t.cpu_ns.saturating_sub(run),
                    t.wait_ns.saturating_sub(wait),
                )
            })
            .collect()
    }

    /// Whether process `pid` is `ancestor` or descends from it, by the parents known
    /// here (a process whose parent already exited is not traced further).
    pub fn descends_from(&self, pid: u32, ancestor: u32) -> bool {
        let parents: HashMap<u32, u32> = self
            .threads
            .values()
            .filter(|t| t.pid == t.tid)
            .map(|t| (t.pid, t.ppid))
            .collect();
        let mut p = pid;
        for _ in 0..64 {
            if p == ancestor {
                return true;
            }
            match parents.get(&p) {
                Some(&pp) if pp != 0 && pp != p => p = pp,
                _ => return false,
            }
        }
        false
    }
}

/// What the scheduler counted of one thread so far (`/proc/PID/task/TID/sched` and
/// `schedstat`), and where it last ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedSample {
    /// Time on a CPU, ns (schedstat's first field).
    pub run_ns: u64,
    /// Time runnable but waiting for a CPU, ns (schedstat's second field).
    pub wait_ns: u64,
    /// `se.nr_migrations`.
    pub migrations: u64,
    /// `nr_voluntary_switches`.
    pub voluntary: u64,
    /// `nr_involuntary_switches`.
    pub involuntary: u64,
    /// The CPU it last ran on (stat field 39).
    pub last_cpu: u32,
}

/// Parses a thread's `sched` and `schedstat` texts (`dir` names them in errors); a
/// counter `sched` lacks (a kernel without `CONFIG_SCHED_DEBUG`) reads as 0.
pub fn parse_sched(dir: &Path, sched: &str, schedstat: &str) -> Result<SchedSample> {
    let mut s = SchedSample::default();
    for (i, line) in sched.lines().enumerate() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let slot = match key.trim() {
            "se.nr_migrations" => &mut s.migrations,
            "nr_voluntary_switches" => &mut s.voluntary,
            "nr_involuntary_switches" => &mut s.involuntary,
            _ => continue,
        };
        *slot = value.trim().parse().map_err(|_| {
            Error::parse(
                dir.join("sched"),
                i + 1,
                format!("{} to be a number", key.trim()),
                value.trim(),
            )
        })?;
    }
    let mut f = schedstat.split_whitespace();
    for slot in [&mut s.run_ns, &mut s.wait_ns] {
        let v = f.next().ok_or_else(|| {
            Error::parse(
                dir.join("schedstat"),
                1,
                "run and wait times in ns",
                schedstat.trim(),
            )
        })?;
        *slot = v
            .parse()
            .map_err(|_| Error::parse(dir.join("schedstat"), 1, "a time in ns", v))?;
    }
    Ok(s)
}

/// Reads thread `tid` of process `pid`: `None` once it has exited.
pub fn thread_sched(root: &Root, pid: u32, tid: u32) -> Result<Option<SchedSample>> {
    let dir = format!("/proc/{pid}/task/{tid}");
    let (Some(sched), Some(schedstat), Some(stat)) = (
        root.read_opt(format!("{dir}/sched"))?,
        root.read_opt(format!("{dir}/schedstat"))?,
        root.read_opt(format!("{dir}/stat"))?,
    ) else {
        return Ok(None);
    };
    let mut s = parse_sched(&root.path(&dir), &sched, &schedstat)?;
    s.last_cpu = parse_stat(&root.path(format!("{dir}/stat")), &stat)?.processor;
    Ok(Some(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lines_in_ns_and_errors_name_the_field() {
        let text = "cpu  10 0 5 100 1 2 3 4 0 0\ncpu0 6 0 3 50 1 1 2 3 0 0\ncpu1 4 0 2 50 0 1 1 1 0 0\nintr 1\n";
        let t = parse_cpu_times(Path::new("/proc/stat"), text, 10_000_000).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            t[0],
            CpuTimes {
                cpu: 0,
                busy_ns: (6 + 3 + 1 + 2) * 10_000_000,
                irq_ns: 10_000_000,
                softirq_ns: 20_000_000,
                idle_ns: 510_000_000,
                steal_ns: 30_000_000,
            }
        );
        let e = parse_cpu_times(Path::new("/proc/stat"), "cpu0 1 2 x 4 5 6 7 8\n", 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/proc/stat:1:") && e.contains("field 4"), "{e}");
        let e = parse_cpu_times(Path::new("/proc/stat"), "cpu0 1 2 3\n", 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("8 times"), "{e}");
    }

    #[test]
    fn sched_counters_and_their_errors() {
        let sched = "x (1, #threads: 1)\n----\nse.exec_start : 12.5\nse.nr_migrations : 7\nnr_switches : 40\nnr_voluntary_switches : 30\nnr_involuntary_switches : 10\n";
        let s = parse_sched(Path::new("/proc/1/task/1"), sched, "5000 200 40\n").unwrap();
        assert_eq!(
            s,
            SchedSample {
                run_ns: 5000,
                wait_ns: 200,
                migrations: 7,
                voluntary: 30,
                involuntary: 10,
                last_cpu: 0
            }
        );
        let e = parse_sched(Path::new("/p"), "se.nr_migrations : x\n", "1 2 3")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/p/sched:1") && e.contains("se.nr_migrations"),
            "{e}"
        );
        let e = parse_sched(Path::new("/p"), "", "1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/p/schedstat:1"), "{e}");
        // This thread, live: it has run.
        let me = std::process::id();
        let live = thread_sched(&Root::live(), me, me).unwrap().unwrap();
        assert!(live.run_ns > 0);
    }

    /// A thread's time is the scheduler's count in ns where `schedstat` is there, and
    /// stat's user plus system ticks where it is not.
    #[test]
    fn a_threads_time_is_schedstats_ns_else_its_ticks() {
        let dir = tempfile::tempdir().unwrap();
        // utime 3, stime 4 ticks.
        let stat = "{tid} (w) R 1 1 1 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 77 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        for (tid, schedstat) in [(10u32, Some("1234567 89 3\n")), (11, None)] {
            let task = dir.path().join(format!("proc/{tid}/task/{tid}"));
            std::fs::create_dir_all(&task).unwrap();
            std::fs::write(task.join("stat"), stat.replace("{tid}", &tid.to_string())).unwrap();
            if let Some(s) = schedstat {
                std::fs::write(task.join("schedstat"), s).unwrap();
            }
        }
        let t = ThreadTimes::read(&Root::at(dir.path())).unwrap();
        let ns = |tid: u32| t.threads.values().find(|x| x.tid == tid).unwrap().cpu_ns;
        assert_eq!(ns(10), 1_234_567);
        assert_eq!(ns(11), 7 * tick_ns());
    }

    #[test]
    fn this_process_descends_from_itself_and_pid_1_from_no_one() {
        let t = ThreadTimes::read(&Root::live()).unwrap();
        let me = std::process::id();
        assert!(t.descends_from(me, me));
        assert!(!t.descends_from(1, me));
        let mine = t.threads.values().find(|x| x.tid == me).unwrap();
        assert!(!mine.kthread);
    }
}
