//! The cpuset part of a plan: cgroup v1 sets (cset's shield) or a cgroup v2
//! isolated partition, with the checks only the cpuset tree can answer.

use jitterlab_cpuset::CpuSet;

use crate::cgroups::Cgroups;
use crate::error::Result;
use crate::partition::plan::{check, write, Check};
use crate::partition::step::{Action, CpusetMove, Target, Undo};
use crate::partition::{HOUSEKEEPING_SET, ISOLATED_SET};
use crate::root::Root;

/// The cgroup v1 steps, and where the sets are.
pub(super) struct V1 {
    pub steps: Vec<Action>,
    pub isolated_dir: String,
    pub isolated_cgroup: String,
    pub cpuset_move: CpusetMove,
}

/// cgroup v1: an exclusive housekeeping set with load balancing, an isolated set
/// without, and load balancing off in the root set (which keeps only the
/// threads that cannot leave it).
pub(super) fn cgroup1_steps(
    cgroups: &Cgroups,
    cpus: &CpuSet,
    housekeeping: &CpuSet,
    checks: &mut Vec<Check>,
    warnings: &mut Vec<String>,
) -> Result<V1> {
    let mount = cgroups.cpuset_mount.clone().unwrap_or_default();
    let p = if cgroups.cpuset_noprefix {
        ""
    } else {
        "cpuset."
    };
    let top = cgroups.cpusets.first();
    let mems = top
        .and_then(|c| c.effective_mems.as_ref().or(c.mems.as_ref()))
        .map(|m| m.to_string())
        .unwrap_or_else(|| "0".into());
    // The cgroup at the mount point: `/`, or a container's subtree.
    let top_path = top.map_or("/", |c| c.path.as_str());
    let child = |name: &str| format!("{}/{name}", top_path.trim_end_matches('/'));
    let leftovers: Vec<&str> = cgroups
        .cpusets
        .iter()
        .map(|c| c.path.as_str())
        .filter(|p| *p == child(HOUSEKEEPING_SET) || *p == child(ISOLATED_SET))
        .collect();
    checks.push(check(
        "no leftover cpusets",
        leftovers.is_empty(),
        if leftovers.is_empty() {
            format!("no /{HOUSEKEEPING_SET} or /{ISOLATED_SET} in {mount}")
        } else {
            format!(
                "{} left from an earlier partition whose journal is gone: move their tasks \
                 to {mount}/tasks and rmdir them",
                leftovers.join(", ")
            )
        },
    ));
    // Siblings spanning our CPUs make exclusive sets impossible (the kernel says EINVAL).
    let overlapping: Vec<String> = cgroups
        .cpusets
        .iter()
        .filter(|c| {
            c.path != top_path
                && c.path.rsplit_once('/').map(|(p, _)| p) == Some(top_path.trim_end_matches('/'))
        })
        .filter(|c| !leftovers.contains(&c.path.as_str()))
        .filter(|c| c.cpus.as_ref().is_some_and(|s| !s.is_empty()))
        .map(|c| {
            format!(
                "{} ({})",
                c.path,
                c.cpus.as_ref().map(|s| s.to_string()).unwrap_or_default()
            )
        })
        .collect();
    let exclusive = overlapping.is_empty();
    if !exclusive {
        warnings.push(format!(
            "other top-level cpusets exist ({}): the jitterlab sets are not made cpu_exclusive, \
             and a load-balanced cpuset that spans CPU {cpus} keeps it in a scheduler domain",
            overlapping.join(", ")
        ));
    }
    let mut steps = Vec::new();
    let hk_dir = format!("{mount}/{HOUSEKEEPING_SET}");
    let iso_dir = format!("{mount}/{ISOLATED_SET}");
    let root_tasks = format!("{mount}/tasks");
    for (dir, set, balance) in [(&hk_dir, housekeeping, true), (&iso_dir, cpus, false)] {
        steps.push(Action::Mkdir {
            path: dir.clone(),
            evacuate_to: root_tasks.clone(),
        });
        let mut file = |name: &str, new: String| {
            steps.push(write(
                format!("{dir}/{p}{name}"),
                String::new(),
                new,
                Target::Cpuset,
                Undo::WithDirectory,
            ))
        };
        file("cpus", set.to_string());
        file("mems", mems.clone());
        if exclusive {
            file("cpu_exclusive", "1".into());
        }
        if !balance {
            file("sched_load_balance", "0".into());
        }
    }
    let balance_on = top.and_then(|c| c.sched_load_balance) != Some(false);
    if balance_on {
        steps.push(write(
            format!("{mount}/{p}sched_load_balance"),
            "1".into(),
            "0".into(),
            Target::Cpuset,
            Undo::Restore,
        ));
    }
    Ok(V1 {
        steps,
        isolated_dir: iso_dir,
        isolated_cgroup: child(ISOLATED_SET),
        cpuset_move: CpusetMove {
            from: top_path.to_string(),
            to: child(HOUSEKEEPING_SET),
            from_tasks: root_tasks,
            to_tasks: format!("{hk_dir}/tasks"),
        },
    })
}

/// cgroup v2: a child of the root with the CPUs, made an `isolated` partition.
/// The kernel then takes the CPUs away from every other cgroup.
pub(super) fn cgroup2_steps(
    root: &Root,
    cgroups: &Cgroups,
    cpus: &CpuSet,
    steps: &mut Vec<Action>,
    checks: &mut Vec<Check>,
    warnings: &mut Vec<String>,
) -> Result<(String, String)> {
    let mount = cgroups.cpuset_mount.clone().unwrap_or_default();
    let dir = format!("{mount}/{ISOLATED_SET}");
    let top_path = cgroups.cpusets.first().map_or("/", |c| c.path.as_str());
    let cgroup = format!("{}/{ISOLATED_SET}", top_path.trim_end_matches('/'));
    let leftover = cgroups.cpusets.iter().any(|c| c.path == cgroup);
    checks.push(check(
        "no leftover cgroup",
        !leftover,
        if leftover {
            format!("{dir} is left from an earlier partition whose journal is gone: rmdir it")
        } else {
            format!("no {dir}")
        },
    ));
    let claimed: Vec<String> = cgroups
        .cpusets
        .iter()
        .filter(|c| c.path != top_path && c.path != cgroup)
        .filter(|c| {
            let partition = c
                .partition
                .as_deref()
                .is_some_and(|p| p.starts_with("root") || p.starts_with("isolated"));
            let exclusive = c
                .cpus_exclusive
                .as_ref()
                .is_some_and(|s| s.intersects(cpus));
            (partition
                && c.effective_cpus
                    .as_ref()
                    .is_some_and(|s| s.intersects(cpus)))
                || exclusive
        })
        .map(|c| c.path.clone())
        .collect();
    checks.push(check(
        "CPUs not in another partition",
        claimed.is_empty(),
        if claimed.is_empty() {
            format!("no other partition claims CPU {cpus}")
        } else {
            format!("CPU {cpus} belongs to partition(s) {}", claimed.join(", "))
        },
    ));
    let explicit: Vec<String> = cgroups
        .cpusets
        .iter()
        .filter(|c| {
            c.path != top_path
                && c.path.rsplit_once('/').map(|(p, _)| p) == Some(top_path.trim_end_matches('/'))
        })
        .filter(|c| c.cpus.as_ref().is_some_and(|s| s.intersects(cpus)))
        .map(|c| c.path.clone())
        .collect();
    if !explicit.is_empty() {
        warnings.push(format!(
            "cgroup(s) {} list CPU {cpus} in cpuset.cpus: older kernels then refuse the \
             partition (isolate reads cpuset.cpus.partition back and rolls back if invalid)",
            explicit.join(", ")
        ));
    }
    let control = root
        .read_line_opt(format!("{mount}/cgroup.subtree_control"))?
        .unwrap_or_default();
    if !control.split_whitespace().any(|c| c == "cpuset") {
        steps.push(write(
            format!("{mount}/cgroup.subtree_control"),
            control,
            "+cpuset".into(),
            Target::Cpuset,
            Undo::Write("-cpuset".into()),
        ));
    }
    steps.push(Action::Mkdir {
        path: dir.clone(),
        evacuate_to: format!("{mount}/cgroup.procs"),
    });
    steps.push(write(
        format!("{dir}/cpuset.cpus"),
        String::new(),
        cpus.to_string(),
        Target::Cpuset,
        Undo::WithDirectory,
    ));
    steps.push(Action::Write {
        path: format!("{dir}/cpuset.cpus.partition"),
        old: "member".into(),
        new: "isolated".into(),
        target: Target::Cpuset,
        undo: Undo::Write("member".into()),
        expect: Some("isolated".into()),
    });
    Ok((dir, cgroup))
}
