//! Where the processes under test run: a cell's placements resolved to CPU sets, and
//! a command started on them.

use std::process::Command;

use jitterlab_cpuset::CpuSet;
use jitterlab_experiment::recipe::{Placement, Role, Settings};

use crate::error::{Error, Result};

/// The CPUs of `role` in a cell: its placement at the cell's `affinity` level when the
/// level names it, else `default` (the measure's `*_cpus`); `None` is unpinned.
/// `irq-cpu` is the CPU of the peer that raises its softirq, which must be pinned.
pub fn cpus_of(
    role: Role,
    settings: &Settings,
    default: impl Fn(Role) -> Option<CpuSet>,
    online: &CpuSet,
) -> Result<Option<CpuSet>> {
    let placement = |r: Role| -> Option<Placement> {
        settings
            .affinity
            .as_ref()
            .and_then(|a| a.pins.iter().find(|p| p.role == r))
            .map(|p| p.placement.clone())
    };
    let plain = |r: Role| -> Option<CpuSet> {
        match placement(r) {
            Some(Placement::Cpus(set)) => Some(set),
            Some(_) => None,
            None => default(r),
        }
    };
    let irq_cpu = || -> Result<CpuSet> {
        let p = role.softirq_peer().ok_or_else(|| {
            Error::Invalid(format!(
                "irq-cpu for the {}: jitterlab finds the softirq CPU of the tcp server and \
                 the mcast receiver only",
                role.name()
            ))
        })?;
        plain(p).ok_or_else(|| {
            Error::Invalid(format!(
                "irq-cpu for the {}: the {} must be pinned (its softirq runs where it runs); \
                 set {}_cpus in the measure",
                role.name(),
                p.name(),
                p.name()
            ))
        })
    };
    let set = match placement(role) {
        Some(Placement::Unpinned) => None,
        Some(Placement::Cpus(set)) => Some(set),
        Some(Placement::IrqCpu) => Some(irq_cpu()?),
        Some(Placement::NotIrqCpu) => {
            let other = online.difference(&irq_cpu()?);
            if other.is_empty() {
                return Err(Error::Invalid(format!(
                    "not-irq-cpu for the {}: no online CPU is left",
                    role.name()
                )));
            }
            Some(other)
        }
        None => default(role),
    };
    if let Some(s) = &set {
        let offline = s.difference(online);
        if !offline.is_empty() {
            return Err(Error::Invalid(format!(
                "the {} on CPU {s}: CPU {offline} is not online (online: {online})",
                role.name()
            )));
        }
    }
    Ok(set)
}

/// Makes `cmd` start on `cpus` (its threads and children inherit them).
pub fn pre_exec_affinity(cmd: &mut Command, cpus: Option<&CpuSet>) {
    use std::os::unix::process::CommandExt;
    let Some(cpus) = cpus else { return };
    let mask = jitterlab_host::sched::mask_words(cpus);
    // SAFETY: sched_setaffinity on the child itself, a plain system call on a mask
    // allocated before the fork.
    unsafe {
        cmd.pre_exec(move || jitterlab_host::sched::set_affinity_words(0, &mask));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_experiment::Recipe;

    fn cells(text: &str) -> Vec<Settings> {
        Recipe::parse("t.toml", text)
            .unwrap()
            .cells()
            .into_iter()
            .map(|c| c.settings)
            .collect()
    }

    #[test]
    fn irq_cpu_is_the_peers_cpu() {
        let s = cells(
            r#"
            name = "t"
            [factors]
            affinity = ["unpinned", "irq-cpu", "not-irq-cpu", "1"]
            [measure.tcp]
            client_cpus = "0"
            "#,
        );
        let online = CpuSet::parse_list("0-3").unwrap();
        let client = |r: Role| (r == Role::Client).then(|| CpuSet::parse_list("0").unwrap());
        let got: Vec<Option<String>> = s
            .iter()
            .map(|s| {
                cpus_of(Role::Server, s, client, &online)
                    .unwrap()
                    .map(|c| c.to_string())
            })
            .collect();
        assert_eq!(
            got,
            [None, Some("0".into()), Some("1-3".into()), Some("1".into())]
        );
        // The client stays on its own CPUs.
        assert_eq!(
            cpus_of(Role::Client, &s[1], client, &online)
                .unwrap()
                .map(|c| c.to_string()),
            Some("0".into())
        );
        // Without a pinned client, irq-cpu cannot be found.
        let err = cpus_of(Role::Server, &s[1], |_| None, &online).unwrap_err();
        assert!(err.to_string().contains("client must be pinned"), "{err}");
        // A CPU that is not online.
        let two = CpuSet::parse_list("0").unwrap();
        let err = cpus_of(Role::Server, &s[3], client, &two).unwrap_err();
        assert!(err.to_string().contains("not online"), "{err}");
    }
}
