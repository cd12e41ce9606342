//! Processes, threads and kernel threads from /proc/PID and /proc/PID/task/TID.

use std::path::Path;

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::root::Root;

/// `PF_KTHREAD` in the stat flags: a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;
/// `PF_NO_SETAFFINITY`: user space may not change the affinity.
const PF_NO_SETAFFINITY: u64 = 0x0400_0000;

/// A process or a thread.
#[derive(Clone, Debug, Serialize)]
pub struct Task {
    /// Process id (thread group id).
    pub pid: u32,
    /// Thread id; equal to `pid` for the main thread.
    pub tid: u32,
    /// Name (`comm`, at most 15 bytes).
    pub comm: String,
    /// The command line, for processes (empty for kernel threads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cmdline: Option<String>,
    /// Parent process id.
    pub ppid: u32,
    /// State letter as in `ps` (R, S, D, I, T, Z, ...).
    pub state: char,
    /// Scheduling policy.
    pub policy: Policy,
    /// Real-time priority (1-99 for fifo/rr, 0 otherwise).
    pub rt_priority: u32,
    /// Nice value.
    pub nice: i32,
    /// The CPUs it may run on.
    pub allowed: CpuSet,
    /// The CPU it last ran on.
    pub last_cpu: u32,
    /// Its cpuset cgroup path.
    pub cpuset: Option<String>,
    /// User plus system CPU time, in nanoseconds (at clock-tick resolution).
    pub cpu_time_ns: u64,
    /// Threads in its process.
    pub num_threads: u32,
    /// Start time in clock ticks since boot: with the pid, identifies the task
    /// across pid reuse.
    pub start_ticks: u64,
    /// User task or which kind of kernel thread.
    pub kind: TaskKind,
}

/// Scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// SCHED_OTHER (CFS/EEVDF).
    Other,
    /// SCHED_FIFO.
    Fifo,
    /// SCHED_RR.
    Rr,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
    /// SCHED_DEADLINE.
    Deadline,
    /// SCHED_EXT (BPF scheduler).
    Ext,
    /// A policy number this build does not know.
    Unknown,
}

impl Policy {
    /// From the kernel's policy number.
    pub fn from_raw(n: u32) -> Policy {
        match n {
            0 => Policy::Other,
            1 => Policy::Fifo,
            2 => Policy::Rr,
            3 => Policy::Batch,
            5 => Policy::Idle,
            6 => Policy::Deadline,
            7 => Policy::Ext,
            _ => Policy::Unknown,
        }
    }

    /// The kernel's policy number.
    pub fn raw(self) -> i32 {
        match self {
            Policy::Other | Policy::Unknown => 0,
            Policy::Fifo => 1,
            Policy::Rr => 2,
            Policy::Batch => 3,
            Policy::Idle => 5,
            Policy::Deadline => 6,
            Policy::Ext => 7,
        }
    }

    /// Short name as `ps -o policy` prints it (TS, FF, RR, B, IDL, DLN).
    pub fn short(self) -> &'static str {
        match self {
            Policy::Other => "TS",
            Policy::Fifo => "FF",
            Policy::Rr => "RR",
            Policy::Batch => "B",
            Policy::Idle => "IDL",
            Policy::Deadline => "DLN",
            Policy::Ext => "EXT",
            Policy::Unknown => "?",
        }
    }

    /// Whether it is a real-time policy with a 1-99 priority.
    pub fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }
}

/// What kind of task, as far as moving it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// A user-space task: movable.
    User,
    /// A user thread whose affinity the kernel manages and user space may not
    /// set (`PF_NO_SETAFFINITY`: io_uring workers on some kernels).
    UserManaged,
    /// A kernel thread that may be moved (kthreadd, irq/N-name, rcu_*, ...).
    KthreadMovable,
    /// A kernel thread bound by the kernel to one CPU (ksoftirqd/N, migration/N,
    /// cpuhp/N, kworker/N:M): can never move.
    KthreadPerCpu,
    /// A kernel thread whose affinity the kernel manages and user space may not
    /// set (unbound kworkers follow the workqueue cpumask; rescuers).
    KthreadManaged,
}

impl TaskKind {
    /// Whether it is a kernel thread.
    pub fn is_kthread(self) -> bool {
        !matches!(self, TaskKind::User | TaskKind::UserManaged)
    }

    /// Whether `sched_setaffinity` can move it.
    pub fn is_movable(self) -> bool {
        matches!(self, TaskKind::User | TaskKind::KthreadMovable)
    }
}

/// Which tasks to read.
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskQuery {
    /// Every thread rather than one row per process.
    pub threads: bool,
    /// Only this process (with all its threads).
    pub pid: Option<u32>,
}

impl TaskQuery {
    /// Every thread of every process.
    pub fn all_threads() -> TaskQuery {
        TaskQuery {
            threads: true,
            pid: None,
        }
    }

    /// Every thread of one process.
    pub fn threads_of(pid: u32) -> TaskQuery {
        TaskQuery {
            threads: true,
            pid: Some(pid),
        }
    }
}

/// Reads the tasks the query asks for. Tasks that exit while being read are left out.
pub fn read_tasks(root: &Root, query: TaskQuery) -> Result<Vec<Task>> {
    let clk_tck = clock_ticks();
    let pids = match query.pid {
        Some(pid) => {
            // /proc/TID exists for every thread too, listing its whole group.
            let file = format!("/proc/{pid}/status");
            let tgid = match root.read_opt(&file)? {
                Some(status) => parse_tgid(&root.path(&file), &status)?,
                None => return Err(Error::Invalid(format!("no process with pid {pid}"))),
            };
            if let Some(tgid) = tgid.filter(|&t| t != pid) {
                return Err(Error::Invalid(format!(
                    "{pid} is a thread of process {tgid}, not a process: use -p {tgid} --tid {pid}"
                )));
            }
            vec![pid]
        }
        None => root.list_numeric("/proc")?,
    };
    let mut tasks = Vec::with_capacity(pids.len());
    for pid in pids {
        let proc_dir = format!("/proc/{pid}");
        if query.threads || query.pid.is_some() {
            let tids = match root.list_numeric(format!("{proc_dir}/task")) {
                Ok(t) => t,
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e),
            };
            for tid in tids {
                let dir = format!("{proc_dir}/task/{tid}");
                if let Some(task) = skip_gone(read_task(root, pid, tid, &dir, clk_tck))? {
                    tasks.push(task);
                }
            }
        } else if let Some(mut task) = skip_gone(read_task(root, pid, pid, &proc_dir, clk_tck))? {
            if !task.kind.is_kthread() {
                task.cmdline = skip_gone(read_cmdline(root, &proc_dir))?;
            }
            tasks.push(task);
        }
    }
    Ok(tasks)
}

fn skip_gone<T>(r: Result<T>) -> Result<Option<T>> {
    match r {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

fn read_cmdline(root: &Root, dir: &str) -> Result<String> {
    let bytes = root.read_bytes(format!("{dir}/cmdline"))?;
    let args: Vec<String> = bytes
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    Ok(args.join(" "))
}

/// The clock tick rate that /proc times count in.
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

fn read_task(root: &Root, pid: u32, tid: u32, dir: &str, clk_tck: u64) -> Result<Task> {
    let stat_path = root.path(format!("{dir}/stat"));
    let stat_text = root.read(format!("{dir}/stat"))?;
    let stat = parse_stat(&stat_path, &stat_text)?;
    let status_path = root.path(format!("{dir}/status"));
    let status = root.read(format!("{dir}/status"))?;
    let allowed = parse_allowed(&status_path, &status)?;
    let cpuset = root
        .read_opt(format!("{dir}/cgroup"))?
        .and_then(|text| cpuset_of(&text));
    let kind = classify(stat.flags, &stat.comm);
    Ok(Task {
        pid,
        tid,
        comm: stat.comm,
        cmdline: None,
        ppid: stat.ppid,
        state: stat.state,
        policy: Policy::from_raw(stat.policy),
        rt_priority: stat.rt_priority,
        nice: stat.nice,
        allowed,
        last_cpu: stat.processor,
        cpuset,
        cpu_time_ns: (stat.utime + stat.stime).saturating_mul(1_000_000_000 / clk_tck.max(1)),
        num_threads: stat.num_threads,
        start_ticks: stat.start_ticks,
        kind,
    })
}

/// The kind of a task from its PF_* flags and its name.
///
/// Per-CPU kernel threads are told by name (`ksoftirqd/N`, `migration/N`,
/// `cpuhp/N`, `kworker/N:M`), not by a one-CPU mask: an unbound kworker's mask
/// is one CPU too once the workqueue cpumask is.
pub fn classify(flags: u64, comm: &str) -> TaskKind {
    let fixed = flags & PF_NO_SETAFFINITY != 0;
    match (flags & PF_KTHREAD != 0, fixed) {
        (false, false) => TaskKind::User,
        (false, true) => TaskKind::UserManaged,
        (true, false) => TaskKind::KthreadMovable,
        (true, true) if per_cpu_name(comm) => TaskKind::KthreadPerCpu,
        (true, true) => TaskKind::KthreadManaged,
    }
}

fn per_cpu_name(comm: &str) -> bool {
    if let Some(rest) = comm.strip_prefix("kworker/") {
        // kworker/3:1, kworker/3:0H-events_highpri; not kworker/u8:0 or kworker/R-name.
        return rest.starts_with(|c: char| c.is_ascii_digit());
    }
    comm.rsplit_once('/')
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The fields of /proc/PID/stat that jitterlab uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Field 2, without the parentheses.
    pub comm: String,
    /// Field 3.
    pub state: char,
    /// Field 4.
    pub ppid: u32,
    /// Field 9: PF_* flags.
    pub flags: u64,
    /// Field 14, in clock ticks.
    pub utime: u64,
    /// Field 15, in clock ticks.
    pub stime: u64,
    /// Field 19.
    pub nice: i32,
    /// Field 20.
    pub num_threads: u32,
    /// Field 22, clock ticks after boot.
    pub start_ticks: u64,
    /// Field 39: CPU last run on.
    pub processor: u32,
    /// Field 40.
    pub rt_priority: u32,
    /// Field 41.
    pub policy: u32,
}

/// Parses /proc/PID/stat. The name may hold spaces and parentheses; it ends at
/// the last `)`.
pub fn parse_stat(path: &Path, text: &str) -> Result<Stat> {
    let bad = |expected: &str| Error::parse(path, 1, expected, text.trim_end());
    let open = text.find('(').ok_or_else(|| bad("'pid (comm) ...'"))?;
    let close = text.rfind(')').ok_or_else(|| bad("')' closing the name"))?;
    if close < open {
        return Err(bad("'pid (comm) ...'"));
    }
    let comm = text[open + 1..close].to_string();
    let fields: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // fields[0] is field 3 of proc(5).
    let field = |n: usize| -> Result<&str> {
        fields
            .get(n - 3)
            .copied()
            .ok_or_else(|| bad(&format!("at least {n} fields")))
    };
    // Each field as the type the kernel prints it with; a value out of its range is an
    // error naming the field, never truncated.
    fn num<T: std::str::FromStr>(
        path: &Path,
        n: usize,
        name: &str,
        range: &str,
        s: &str,
    ) -> Result<T> {
        s.parse()
            .map_err(|_| Error::parse(path, 1, format!("field {n} ({name}) to be {range}"), s))
    }
    const U32: &str = "a number from 0 to 4294967295";
    const U64: &str = "a number from 0 to 18446744073709551615";
    let state = field(3)?;
    let mut chars = state.chars();
    let state = match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_ascii_alphabetic() => c,
        _ => {
            return Err(Error::parse(
                path,
                1,
                "field 3 (state) to be one letter",
                state,
            ))
        }
    };
    Ok(Stat {
        comm,
        state,
        ppid: num(path, 4, "ppid", U32, field(4)?)?,
        flags: num(path, 9, "flags", U64, field(9)?)?,
        utime: num(path, 14, "utime", U64, field(14)?)?,
        stime: num(path, 15, "stime", U64, field(15)?)?,
        nice: num(path, 19, "nice", "a number from -20 to 19", field(19)?).and_then(|v: i32| {
            if (-20..=19).contains(&v) {
                Ok(v)
            } else {
                Err(Error::parse(
                    path,
                    1,
                    "field 19 (nice) to be a number from -20 to 19",
                    field(19)?,
                ))
            }
        })?,
        num_threads: num(path, 20, "num_threads", U32, field(20)?)?,
        start_ticks: num(path, 22, "starttime", U64, field(22)?)?,
        processor: num(path, 39, "processor", U32, field(39)?)?,
        rt_priority: num(path, 40, "rt_priority", U32, field(40)?)?,
        policy: num(path, 41, "policy", U32, field(41)?)?,
    })
}

/// The `Tgid:` of /proc/PID/status (`None` without the line); a value that is no
/// process id is an error naming the line.
pub fn parse_tgid(path: &Path, status: &str) -> Result<Option<u32>> {
    for (i, line) in status.lines().enumerate() {
        if let Some(v) = line.strip_prefix("Tgid:") {
            return v
                .trim()
                .parse::<u32>()
                .map(Some)
                .map_err(|_| Error::parse(path, i + 1, "a process id after 'Tgid:'", v.trim()));
        }
    }
    Ok(None)
}

/// Finds `Cpus_allowed_list:` in /proc/PID/status.
pub fn parse_allowed(path: &Path, status: &str) -> Result<CpuSet> {
    for (i, line) in status.lines().enumerate() {
        if let Some(list) = line.strip_prefix("Cpus_allowed_list:") {
            return CpuSet::parse_list(list).map_err(|source| Error::CpuSet {
                path: format!("{}:{}", path.display(), i + 1).into(),
                cause: source,
            });
        }
    }
    Err(Error::parse(path, 1, "a 'Cpus_allowed_list:' line", ""))
}

/// The cpuset cgroup in /proc/PID/cgroup: the v1 line whose controllers include
/// cpuset, else the v2 line (`0::/path`).
pub fn cpuset_of(cgroup: &str) -> Option<String> {
    let mut v2 = None;
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == "cpuset") {
            return Some(path.to_string());
        }
        if controllers.is_empty() {
            v2 = Some(path.to_string());
        }
    }
    v2
}

/// The start time (clock ticks after boot) of thread `tid` of process `pid`, `None`
/// when it is gone: with the tid, who a thread is, since tids are reused.
pub fn read_start_ticks(root: &Root, pid: u32, tid: u32) -> Option<u64> {
    let path = format!("/proc/{pid}/task/{tid}/stat");
    let text = root.read(&path).ok()?;
    parse_stat(&root.path(&path), &text)
        .ok()
        .map(|s| s.start_ticks)
}

/// The pid of a running `irqbalance`, which rewrites IRQ affinities every few
/// seconds (an exited one not yet reaped, a zombie, does not count).
pub fn find_irqbalance(root: &Root) -> Result<Option<u32>> {
    for pid in root.list_numeric("/proc")? {
        if let Ok(Some(comm)) = root.read_opt(format!("/proc/{pid}/comm")) {
            if comm.trim() == "irqbalance" && !is_zombie(root, pid) {
                return Ok(Some(pid));
            }
        }
    }
    Ok(None)
}

/// Whether a process has exited and waits to be reaped (state `Z` or `X`); one
/// whose `stat` cannot be read is not taken for one.
pub fn is_zombie(root: &Root, pid: u32) -> bool {
    match root.read_opt(format!("/proc/{pid}/stat")) {
        Ok(Some(stat)) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|s| s == "Z" || s == "X"),
        _ => false,
    }
}

/// Groups of threads that share one affinity mask, largest group first.
pub fn mask_groups(threads: &[Task]) -> Vec<(CpuSet, Vec<u32>)> {
    let mut groups: Vec<(CpuSet, Vec<u32>)> = Vec::new();
    for t in threads {
        match groups.iter_mut().find(|(m, _)| *m == t.allowed) {
            Some((_, tids)) => tids.push(t.tid),
            None => groups.push((t.allowed.clone(), vec![t.tid])),
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.1.len()));
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 25596 497267 0 621 24 145 1808 1023 20 0 13 0 26 38375424 2285 18446744073709551615 1 1 0 0 0 0 0 4096 1256 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

    #[test]
    fn stat_with_parentheses_in_name() {
        let s = parse_stat(Path::new("stat"), STAT).unwrap();
        assert_eq!(s.comm, "a (weird) name");
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.flags, 4194560);
        assert_eq!((s.utime, s.stime), (24, 145));
        assert_eq!(s.nice, 0);
        assert_eq!(s.num_threads, 13);
        assert_eq!(s.start_ticks, 26);
        assert_eq!(s.processor, 1);
        assert_eq!((s.rt_priority, s.policy), (0, 0));
    }

    #[test]
    fn truncated_stat_names_the_field() {
        let e = parse_stat(Path::new("/proc/9/stat"), "9 (x) S 1 2 3").unwrap_err();
        assert!(e.to_string().contains("at least 9 fields"), "{e}");
        assert!(e.to_string().starts_with("/proc/9/stat:1:"), "{e}");
        let e = parse_stat(Path::new("s"), "9 x S").unwrap_err();
        assert!(e.to_string().contains("pid (comm)"), "{e}");
    }

    #[test]
    fn cpuset_line_v1_and_v2() {
        assert_eq!(
            cpuset_of("4:memory:/a\n3:cpuset:/rt\n0::/\n").as_deref(),
            Some("/rt")
        );
        assert_eq!(
            cpuset_of("0::/user.slice\n").as_deref(),
            Some("/user.slice")
        );
        assert_eq!(cpuset_of("3:cpu,cpuset:/x\n").as_deref(), Some("/x"));
    }

    #[test]
    fn kinds_from_flags_and_names() {
        let k = PF_KTHREAD | PF_NO_SETAFFINITY;
        assert_eq!(classify(0x400100, "bash"), TaskKind::User);
        assert_eq!(
            classify(PF_NO_SETAFFINITY, "iou-wrk-77"),
            TaskKind::UserManaged
        );
        assert_eq!(
            classify(PF_KTHREAD, "irq/24-ACPI:Ged"),
            TaskKind::KthreadMovable
        );
        for per_cpu in [
            "ksoftirqd/0",
            "migration/12",
            "cpuhp/1",
            "kworker/3:1",
            "kworker/0:0H-events_highpri",
        ] {
            assert_eq!(classify(k, per_cpu), TaskKind::KthreadPerCpu, "{per_cpu}");
        }
        for managed in [
            "kworker/u8:0-events_unbound",
            "kworker/R-rcu_gp",
            "pool_workqueue_",
        ] {
            assert_eq!(classify(k, managed), TaskKind::KthreadManaged, "{managed}");
        }
    }

    #[test]
    fn allowed_list_from_status() {
        let s = "Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n";
        assert_eq!(parse_allowed(Path::new("s"), s).unwrap().to_string(), "0-1");
        let e = parse_allowed(Path::new("s"), "Cpus_allowed_list:\t0-z\n").unwrap_err();
        assert!(e.to_string().contains("s:1"), "{e}");
        assert!(parse_allowed(Path::new("s"), "Name: x\n").is_err());
    }
}
