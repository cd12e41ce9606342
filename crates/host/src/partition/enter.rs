//! Getting into a partition: a command started by `jitterlab run`, or one thread
//! of a process whose other threads stay on the housekeeping CPUs (the latency
//! probe with its load generators).

use std::ffi::OsString;
use std::path::Path;

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::cgroups::Cgroups;
use crate::cmdline::Cmdline;
use crate::error::{Error, Result};
use crate::partition::journal::{Journal, RunRecord};
use crate::partition::{Method, ISOLATED_SET};
use crate::pin::Sched;
use crate::root::Root;

/// Where a command is put.
#[derive(Clone, Debug, Serialize)]
pub struct Placement {
    /// The CPUs it gets.
    pub cpus: CpuSet,
    /// The partition's method, when jitterlab made it.
    pub method: Option<Method>,
    /// The cgroup it joined, if any.
    pub cgroup: Option<String>,
    /// How, in words.
    pub how: String,
}

/// `jitterlab run`: checks every argument first — a command is given, its scheduling
/// ([`Sched::validate`]) is one that can be set — and only then puts this process into
/// the partition ([`enter_partition`]) and records the run ([`register_run`]). A bad
/// request is [`Error::Invalid`] with nothing changed. What is left to the caller is
/// [`crate::exec_pinned`] with the same `argv`, `cpus` and `sched`.
pub fn enter_for_run(
    root: &Root,
    state_dir: &Path,
    cpus: &CpuSet,
    argv: &[OsString],
    sched: Option<&Sched>,
) -> Result<Placement> {
    if argv.is_empty() {
        return Err(Error::Invalid("no command to run".into()));
    }
    if let Some(s) = sched {
        s.validate()?;
    }
    let placement = enter_partition(root, state_dir, cpus)?;
    let argv: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    register_run(state_dir, cpus, &argv)?;
    Ok(placement)
}

/// Puts this process where it may run on `cpus`: into the isolated cpuset of the
/// partition journalled in `state_dir` (the process's later threads and children
/// follow), or nowhere for the affinity method and for CPUs isolated at boot.
/// Fails, changing nothing, when `cpus` are not isolated.
pub fn enter_partition(root: &Root, state_dir: &Path, cpus: &CpuSet) -> Result<Placement> {
    let pid = std::process::id();
    if let Some(rec) = Journal::read(state_dir)? {
        let h = &rec.header;
        if !cpus.is_subset(&h.cpus) {
            return Err(Error::Invalid(format!(
                "CPU {} is not in the partition (isolated: {})",
                cpus.difference(&h.cpus),
                h.cpus
            )));
        }
        if !rec.complete {
            return Err(Error::Invalid(format!(
                "the partition in {} was not completely applied (isolate was interrupted); \
                 run `jitterlab revert`",
                rec.path.display()
            )));
        }
        return match (&h.isolated_dir, h.method) {
            (Some(dir), Method::Cgroup1 | Method::Cgroup2) => {
                root.write(format!("{dir}/cgroup.procs"), &pid.to_string())?;
                Ok(Placement {
                    cpus: cpus.clone(),
                    method: Some(h.method),
                    cgroup: h.isolated_cgroup.clone(),
                    how: format!(
                        "in cpuset {} of the partition",
                        h.isolated_cgroup.as_deref().unwrap_or(dir)
                    ),
                })
            }
            _ => Ok(Placement {
                cpus: cpus.clone(),
                method: Some(h.method),
                cgroup: None,
                how: "pinned (method affinity: the other tasks were moved off)".into(),
            }),
        };
    }
    // Not made by jitterlab: an isolated v2 partition, or isolcpus at boot.
    let cgroups = Cgroups::read(root)?;
    if cgroups.cpuset_version == Some(2) {
        if let Some(c) = cgroups.cpusets.iter().find(|c| {
            c.partition.as_deref() == Some("isolated")
                && c.effective_cpus.as_ref().is_some_and(|e| cpus.is_subset(e))
        }) {
            let mount = cgroups.cpuset_mount.clone().unwrap_or_default();
            root.write(format!("{mount}{}/cgroup.procs", c.path), &pid.to_string())?;
            return Ok(Placement {
                cpus: cpus.clone(),
                method: None,
                cgroup: Some(c.path.clone()),
                how: format!("in the isolated partition {}", c.path),
            });
        }
    }
    let possible = root.read_cpu_list("/sys/devices/system/cpu/possible")?;
    let boot = Cmdline::read(root)?
        .isolation(&possible)
        .unwrap_or_default();
    let isolated = root
        .read_cpu_list_opt("/sys/devices/system/cpu/isolated")?
        .unwrap_or_default()
        .union(&boot.isolcpus.unwrap_or_default());
    if !cpus.is_empty() && cpus.is_subset(&isolated) {
        return Ok(Placement {
            cpus: cpus.clone(),
            method: None,
            cgroup: None,
            how: "pinned (isolated at boot: isolcpus)".into(),
        });
    }
    Err(Error::Invalid(format!(
        "CPU {cpus} is not isolated: no partition journal in {} and not isolated at boot; \
         run `jitterlab isolate {cpus}` first, or `jitterlab pin {cpus} -- CMD` to pin \
         without a partition",
        state_dir.display()
    )))
}

/// Records a command started by `jitterlab run` in the partition's state
/// directory, so that `verify` knows it as the user's (a no-op without a journal).
pub fn register_run(state_dir: &Path, cpus: &CpuSet, argv: &[String]) -> Result<()> {
    if !Journal::exists(state_dir) {
        return Ok(());
    }
    let root = Root::live();
    let pid = std::process::id();
    Journal::add_run(
        state_dir,
        &RunRecord {
            pid,
            start_ticks: crate::tasks::read_start_ticks(&root, pid, pid).unwrap_or(0),
            cpus: cpus.clone(),
            argv: argv.to_vec(),
        },
    )
}

/// Puts the calling thread into the isolated cpuset that holds `cpu`, so that it
/// may pin itself there while the other threads of its process stay on the
/// housekeeping CPUs. Only cgroup v1 moves single threads between cpusets; on
/// v2 this is an error that says what to do instead. `Ok(false)` when no
/// jitterlab partition holds `cpu`.
pub fn enter_cpu(cpu: u32) -> Result<bool> {
    let root = Root::live();
    let cgroups = Cgroups::read(&root)?;
    let Some(set) = cgroups.cpusets.iter().find(|c| {
        c.path.ends_with(&format!("/{ISOLATED_SET}"))
            && c.effective_cpus
                .as_ref()
                .or(c.cpus.as_ref())
                .is_some_and(|s| s.contains(cpu))
    }) else {
        return Ok(false);
    };
    if cgroups.cpuset_version != Some(1) {
        return Err(Error::Invalid(format!(
            "CPU {cpu} is in the cgroup v2 partition {}, which takes whole processes: start \
             the program inside it with `jitterlab run --cpus {cpu} -- ...` (its threads then \
             cannot use the housekeeping CPUs)",
            set.path
        )));
    }
    let mount = cgroups.cpuset_mount.clone().unwrap_or_default();
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    root.write(format!("{mount}{}/tasks", set.path), &tid.to_string())?;
    Ok(true)
}
