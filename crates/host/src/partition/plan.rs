//! Building a partition plan: preflight checks and every change, read through a
//! [`Root`] so that fixture trees of other machines plan as the live host does.

use std::path::PathBuf;

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::cgroups::Cgroups;
use crate::error::Result;
use crate::irqs::IrqMap;
use crate::partition::cpusets;
use crate::partition::journal::Journal;
use crate::partition::snapshot::{IRQ_DEFAULT, SYSCTLS, WQ_DIR};
use crate::partition::step::{Action, CpusetMove, Irqbalance, Step, Target, Undo};
use crate::partition::tasks::{Exclude, Rules};
use crate::partition::{Method, MethodChoice};
use crate::root::Root;
use crate::tasks::{find_irqbalance, read_tasks, Task, TaskKind, TaskQuery};
use crate::workqueues::Workqueues;
use crate::Status;

/// What to isolate, and how.
#[derive(Clone, Debug)]
pub struct Request {
    /// The CPUs to isolate.
    pub cpus: CpuSet,
    /// `--method`.
    pub method: MethodChoice,
    /// `--exclude`: processes and names left where they are (PID 1 too, unless
    /// `move_init`).
    pub excludes: Vec<Exclude>,
    /// `--move-init`: PID 1's threads move too, by affinity only (it stays in its
    /// cgroup), as the core-partitioning talk's `taskset -p 1 1` does.
    pub move_init: bool,
    /// `--stop-irqbalance`.
    pub stop_irqbalance: bool,
    /// `--sysctl`: timer migration off, a longer vmstat interval, the lockup
    /// watchdog on the housekeeping CPUs.
    pub sysctl: bool,
    /// `--idle-latency US`: the isolated CPUs' PM QoS resume latency limit, so
    /// they skip idle states slower to leave (0: poll, as `idle=poll` on them alone).
    pub idle_latency_us: Option<u32>,
    /// Where the journal goes.
    pub state_dir: PathBuf,
    /// Whether the caller may apply the plan (root); a failed check otherwise.
    pub privileged: bool,
}

/// The plan: checks, then every change in order.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The CPUs to isolate.
    pub cpus: CpuSet,
    /// The online CPUs left for everything else.
    pub housekeeping: CpuSet,
    /// How tasks are kept off `cpus`.
    pub method: Method,
    /// Where the journal goes.
    pub state_dir: String,
    /// Preflight checks; the plan is applied only when all pass.
    pub checks: Vec<Check>,
    /// What the user should know before applying.
    pub warnings: Vec<String>,
    /// Every change, in order.
    pub steps: Vec<Step>,
    /// Processes left alone, with why.
    pub excluded: Vec<Excluded>,
    /// Threads on the isolated CPUs that cannot be moved, with why.
    pub unmovable: Vec<Unmovable>,
    /// A running irqbalance.
    pub irqbalance: Option<u32>,
    /// The host path of the isolated cpuset (cgroup methods).
    pub isolated_dir: Option<String>,
    /// Its cgroup path.
    pub isolated_cgroup: Option<String>,
    /// cgroup v1: how user tasks of the root cpuset move to the housekeeping set.
    pub cpuset_move: Option<CpusetMove>,
    /// Whether PID 1's threads move (`--move-init`).
    pub move_init: bool,
    /// The `--exclude` patterns, for threads that appear while applying.
    #[serde(skip)]
    pub excludes: Vec<Exclude>,
}

/// A preflight check.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// What is checked.
    pub name: String,
    /// Whether it passed.
    pub ok: bool,
    /// What was found.
    pub detail: String,
}

/// A process left where it is.
#[derive(Clone, Debug, Serialize)]
pub struct Excluded {
    /// Its pid.
    pub pid: u32,
    /// Its name.
    pub comm: String,
    /// How many of its threads.
    pub threads: usize,
    /// Its (main thread's) CPUs.
    pub allowed: CpuSet,
    /// Why.
    pub reason: String,
}

/// A thread that stays on an isolated CPU because it cannot move.
#[derive(Clone, Debug, Serialize)]
pub struct Unmovable {
    /// Its process.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// Its name.
    pub comm: String,
    /// Its kind.
    pub kind: TaskKind,
    /// Its CPUs.
    pub allowed: CpuSet,
    /// Why it cannot move.
    pub reason: String,
}

impl Plan {
    /// Whether every check passed.
    pub fn ok(&self) -> bool {
        self.checks.iter().all(|c| c.ok)
    }

    /// How `isolate --dry-run` (or an `isolate` refused by its checks) ends:
    /// [`Status::Ok`] when every check passed, else [`Status::Invalid`] (nothing was
    /// changed; the failed checks say why).
    pub fn status(&self) -> Status {
        if self.ok() {
            Status::Ok
        } else {
            Status::Invalid
        }
    }

    /// How threads are moved (also those that appear while the plan is applied).
    pub(crate) fn rules(&self) -> Rules<'_> {
        Rules {
            isolated: &self.cpus,
            housekeeping: &self.housekeeping,
            excludes: &self.excludes,
            move_init: self.move_init,
            cpuset: self.cpuset_move.clone(),
        }
    }
}

pub(super) fn check(name: &str, ok: bool, detail: impl Into<String>) -> Check {
    Check {
        name: name.to_string(),
        ok,
        detail: detail.into(),
    }
}

/// Builds the plan for `req` from what `root` shows.
pub fn build_plan(root: &Root, req: &Request) -> Result<Plan> {
    let cpus = &req.cpus;
    let possible = root.read_cpu_list("/sys/devices/system/cpu/possible")?;
    let online = root.read_cpu_list("/sys/devices/system/cpu/online")?;
    let housekeeping = online.difference(cpus);
    let cgroups = Cgroups::read(root)?;
    let mut checks = Vec::new();
    let mut warnings = Vec::new();

    let absent = cpus.difference(&possible);
    let offline = cpus.difference(&online).difference(&absent);
    checks.push(check(
        "CPUs online",
        !cpus.is_empty() && absent.is_empty() && offline.is_empty(),
        match (cpus.is_empty(), absent.is_empty(), offline.is_empty()) {
            (true, _, _) => "no CPU given".to_string(),
            (_, false, _) => format!("CPU {absent} does not exist (this machine has {possible})"),
            (_, _, false) => format!("CPU {offline} is offline (online: {online})"),
            _ => format!("CPU {cpus} online"),
        },
    ));
    checks.push(check(
        "housekeeping CPU left",
        !housekeeping.is_empty(),
        if housekeeping.is_empty() {
            format!("isolating {cpus} leaves no online CPU for everything else")
        } else {
            format!("CPU {housekeeping} keeps everything else")
        },
    ));
    checks.push(check(
        "root",
        req.privileged,
        if req.privileged {
            "running as root"
        } else {
            "not root: the plan can be shown but not applied"
        },
    ));
    let journal = Journal::path_in(&req.state_dir);
    let journal_there = Journal::exists(&req.state_dir);
    checks.push(check(
        "no partition applied",
        !journal_there,
        if journal_there {
            format!("{} exists: run `jitterlab revert` first", journal.display())
        } else {
            format!("no journal in {}", req.state_dir.display())
        },
    ));

    let (method, method_check) = choose_method(&cgroups, req.method);
    checks.push(method_check);
    let irqbalance = find_irqbalance(root)?;
    let mut steps: Vec<Action> = Vec::new();
    if let Some(pid) = irqbalance {
        if req.stop_irqbalance {
            steps.push(Action::StopIrqbalance(irqbalance_of(root, pid)?));
        } else {
            warnings.push(format!(
                "irqbalance is running (pid {pid}) and will move IRQs back onto CPU {cpus}; \
                 add --stop-irqbalance (revert starts it again) or ban the CPUs \
                 (IRQBALANCE_BANNED_CPULIST={cpus})"
            ));
        }
    }

    let mut isolated_dir = None;
    let mut isolated_cgroup = None;
    let mut cpuset_move = None;
    match method {
        Method::Cgroup1 => {
            let v1 =
                cpusets::cgroup1_steps(&cgroups, cpus, &housekeeping, &mut checks, &mut warnings)?;
            steps.extend(v1.steps);
            isolated_dir = Some(v1.isolated_dir);
            isolated_cgroup = Some(v1.isolated_cgroup);
            cpuset_move = Some(v1.cpuset_move);
        }
        Method::Cgroup2 => {
            let (dir, cgroup) = cpusets::cgroup2_steps(
                root,
                &cgroups,
                cpus,
                &mut steps,
                &mut checks,
                &mut warnings,
            )?;
            isolated_dir = Some(dir);
            isolated_cgroup = Some(cgroup);
        }
        Method::Affinity => warnings.push(
            "method affinity: tasks are moved with sched_setaffinity only; a process may widen \
             its own affinity again, and new children of excluded processes start on every CPU"
                .into(),
        ),
    }
    if req.sysctl {
        sysctl_steps(root, cpus, &housekeeping, &mut steps)?;
    }
    if let Some(us) = req.idle_latency_us {
        idle_steps(root, cpus, us, &mut steps, &mut warnings)?;
    }
    workqueue_steps(root, cpus, &housekeeping, &mut steps)?;
    irq_steps(root, cpus, &housekeeping, &mut steps)?;

    let tasks = read_tasks(root, TaskQuery::all_threads())?;
    let rules = Rules {
        isolated: cpus,
        housekeeping: &housekeeping,
        excludes: &req.excludes,
        move_init: req.move_init,
        cpuset: cpuset_move.clone(),
    };
    let sorted = rules.sort(&tasks);
    steps.extend(sorted.moves.into_iter().map(Action::Task));
    warn_about_tasks(&tasks, cpus, &mut warnings);

    Ok(Plan {
        cpus: cpus.clone(),
        housekeeping,
        method,
        state_dir: req.state_dir.display().to_string(),
        checks,
        warnings,
        steps: steps
            .into_iter()
            .enumerate()
            .map(|(seq, action)| Step { seq, action })
            .collect(),
        excluded: sorted.excluded,
        unmovable: sorted.unmovable,
        irqbalance,
        isolated_dir,
        isolated_cgroup,
        cpuset_move,
        move_init: req.move_init,
        excludes: req.excludes.clone(),
    })
}

fn choose_method(cgroups: &Cgroups, choice: MethodChoice) -> (Method, Check) {
    let have = match cgroups.cpuset_version {
        Some(2) => Some(Method::Cgroup2),
        Some(1) => Some(Method::Cgroup1),
        _ => None,
    };
    let where_ = match (&cgroups.cpuset_mount, cgroups.cpuset_version) {
        (Some(m), Some(v)) => format!("the cpuset controller is on cgroup v{v} at {m}"),
        _ => "no cpuset controller is mounted".to_string(),
    };
    match choice {
        MethodChoice::Auto => {
            let m = have.unwrap_or(Method::Affinity);
            (m, check("method", true, format!("{} ({where_})", m.name())))
        }
        MethodChoice::Only(Method::Affinity) => (
            Method::Affinity,
            check("method", true, "affinity (sched_setaffinity only)"),
        ),
        MethodChoice::Only(m) => {
            let ok = have == Some(m);
            (
                m,
                check(
                    "method",
                    ok,
                    if ok {
                        format!("{} ({where_})", m.name())
                    } else {
                        format!("{} is not available: {where_}", m.name())
                    },
                ),
            )
        }
    }
}

fn irqbalance_of(root: &Root, pid: u32) -> Result<Irqbalance> {
    let start_ticks = crate::tasks::read_start_ticks(root, pid, pid).unwrap_or_default();
    let argv = root
        .read_bytes(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let unit = root
        .read_opt(format!("/proc/{pid}/cgroup"))?
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.rsplit('/').next())
        .find(|last| last.ends_with(".service"))
        .map(str::to_string);
    Ok(Irqbalance {
        pid,
        start_ticks,
        argv,
        unit,
    })
}

pub(super) fn write(path: String, old: String, new: String, target: Target, undo: Undo) -> Action {
    Action::Write {
        path,
        old,
        new,
        target,
        undo,
        expect: None,
    }
}

fn sysctl_steps(
    root: &Root,
    cpus: &CpuSet,
    housekeeping: &CpuSet,
    steps: &mut Vec<Action>,
) -> Result<()> {
    for (name, path) in SYSCTLS {
        let Some(old) = root.read_line_opt(path)? else {
            continue;
        };
        let new = match name {
            "kernel.timer_migration" => "0".to_string(),
            "vm.stat_interval" if old.parse::<u64>().is_ok_and(|v| v >= 10) => continue,
            "vm.stat_interval" => "10".to_string(),
            _ => match CpuSet::parse_list(&old) {
                Ok(set) if set.intersects(cpus) => {
                    let kept = set.difference(cpus);
                    if kept.is_empty() {
                        housekeeping.clone()
                    } else {
                        kept
                    }
                    .to_string()
                }
                _ => continue,
            },
        };
        if new != old {
            steps.push(write(
                path.to_string(),
                old,
                new,
                Target::Sysctl {
                    name: name.to_string(),
                },
                Undo::Restore,
            ));
        }
    }
    Ok(())
}

/// The file of a CPU's PM QoS resume latency limit.
pub(crate) fn idle_latency_path(cpu: u32) -> String {
    format!("/sys/devices/system/cpu/cpu{cpu}/power/pm_qos_resume_latency_us")
}

/// A limit of `us` microseconds in that file's language: `n/a` is 0 us (`0` would be
/// no limit).
pub(crate) fn idle_limit_text(us: u32) -> String {
    if us == 0 {
        "n/a".to_string()
    } else {
        us.to_string()
    }
}

/// The limit that file holds, in microseconds (`0`: none, `n/a`: 0 us).
pub(crate) fn idle_limit_us(text: Option<&str>) -> Option<u64> {
    match text.map(str::trim) {
        Some("n/a") => Some(0),
        Some(t) => t.parse().ok().filter(|&us| us > 0),
        None => None,
    }
}

/// `--idle-latency US`: each isolated CPU's resume latency limit. The cpuidle
/// governors (menu, teo, haltpoll) then pick no state slower to leave; at 0 the
/// CPU polls. Unlike `/dev/cpu_dma_latency` it is per CPU and needs no process
/// holding a file open, and unlike a state's `disable` the haltpoll governor of
/// KVM guests honours it.
fn idle_steps(
    root: &Root,
    cpus: &CpuSet,
    us: u32,
    steps: &mut Vec<Action>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let new = idle_limit_text(us);
    for cpu in cpus.iter() {
        let path = idle_latency_path(cpu);
        match root.read_line_opt(&path)? {
            Some(old) if old == new => {}
            Some(old) => steps.push(write(
                path,
                old,
                new.clone(),
                Target::IdleLatency { cpu },
                Undo::Restore,
            )),
            None => warnings.push(format!(
                "--idle-latency: CPU {cpu} has no {path} (a kernel without CPU PM QoS); \
                 its idle states are left as they are"
            )),
        }
    }
    Ok(())
}

/// The mask without the isolated CPUs (the housekeeping CPUs when that is empty), or
/// `None` when the mask has no isolated CPU.
fn without(set: &CpuSet, cpus: &CpuSet, housekeeping: &CpuSet) -> Option<CpuSet> {
    if !set.intersects(cpus) {
        return None;
    }
    let kept = set.difference(cpus);
    Some(if kept.is_empty() {
        housekeeping.clone()
    } else {
        kept
    })
}

fn workqueue_steps(
    root: &Root,
    cpus: &CpuSet,
    housekeeping: &CpuSet,
    steps: &mut Vec<Action>,
) -> Result<()> {
    let wq = Workqueues::read(root)?;
    let mut mask = |path: String, set: Option<&CpuSet>, target: Target| -> Result<()> {
        if let Some(new) = set.and_then(|s| without(s, cpus, housekeeping)) {
            let old = root.read_line(&path)?;
            steps.push(write(
                path,
                old,
                new.to_mask_string(),
                target,
                Undo::Restore,
            ));
        }
        Ok(())
    };
    mask(
        format!("{WQ_DIR}/cpumask"),
        wq.cpumask.as_ref(),
        Target::WorkqueueMask,
    )?;
    for q in &wq.queues {
        mask(
            format!("{WQ_DIR}/{}/cpumask", q.name),
            q.cpumask.as_ref(),
            Target::Workqueue {
                name: q.name.clone(),
            },
        )?;
    }
    Ok(())
}

fn irq_steps(
    root: &Root,
    cpus: &CpuSet,
    housekeeping: &CpuSet,
    steps: &mut Vec<Action>,
) -> Result<()> {
    if let Some(old) = root.read_line_opt(IRQ_DEFAULT)? {
        if let Some(new) = CpuSet::parse_mask(&old)
            .ok()
            .and_then(|s| without(&s, cpus, housekeeping))
        {
            steps.push(write(
                IRQ_DEFAULT.into(),
                old,
                new.to_mask_string(),
                Target::IrqDefault,
                Undo::Restore,
            ));
        }
    }
    // Labels from /proc/interrupts; /proc/irq also lists IRQs without a handler.
    let map = IrqMap::read(root).ok();
    for irq in root.list_numeric("/proc/irq")? {
        let path = format!("/proc/irq/{irq}/smp_affinity_list");
        let Some(old) = root.read_cpu_list_opt(&path)? else {
            continue;
        };
        if let Some(new) = without(&old, cpus, housekeeping) {
            let label = map
                .as_ref()
                .and_then(|m| m.irq(irq))
                .map(|i| i.label())
                .unwrap_or_default();
            steps.push(write(
                path,
                old.to_string(),
                new.to_string(),
                Target::Irq { irq, label },
                Undo::Restore,
            ));
        }
    }
    Ok(())
}

/// Real-time threads and user threads pinned to the isolated CPUs are about to
/// lose them: say so, with their names.
fn warn_about_tasks(tasks: &[Task], cpus: &CpuSet, warnings: &mut Vec<String>) {
    let pinned: Vec<String> = tasks
        .iter()
        .filter(|t| t.kind == TaskKind::User && t.pid != 1 && t.allowed.is_subset(cpus))
        .map(|t| format!("{} (tid {})", t.comm, t.tid))
        .collect();
    if !pinned.is_empty() {
        warnings.push(format!(
            "{} user thread(s) are pinned to CPU {cpus} and will move to the housekeeping \
             CPUs: {}; exclude them (--exclude PID) or restart them with `jitterlab run`",
            pinned.len(),
            shorten(&pinned, 6)
        ));
    }
}

/// At most `max` names, then how many more.
pub(crate) fn shorten(items: &[String], max: usize) -> String {
    let shown = items[..items.len().min(max)].join(", ");
    if items.len() > max {
        format!("{shown} and {} more", items.len() - max)
    } else {
        shown
    }
}
