//! Environment checks: a hypervisor or a container under the machine, steal time.

use super::{Facts, Family, Finding, FixKind, Severity};

pub(super) fn check(f: &Facts, out: &mut Vec<Finding>) {
    if let Ok(Some(h)) = crate::env::Hypervisor::read(f.root) {
        let what = match &h.name {
            Some(n) => format!("this is a virtual machine under {n}"),
            None => "this is a virtual machine (the CPU's hypervisor flag; nothing names the \
                     hypervisor)"
                .to_string(),
        };
        out.push(
            Finding::new(
                "env.hypervisor",
                Family::Environment,
                Severity::Medium,
                what,
            )
            .evidence(&h.source, &h.value)
            .why(
                "the host may stop a vCPU for its own work at any moment, for milliseconds, and \
                     nothing inside the guest can prevent or see it except as lost time",
            )
            .fix(
                FixKind::Host,
                "run on bare metal, or pin each vCPU to a host CPU isolated on the host \
                     (and disable halt polling limits there)",
                "jitterlab audit (the noise probe's longest gap)",
            )
            .effect(2_000_000),
        );
    }
    let container = crate::env::Container::read(f.root);
    if let Some(kind) = &container.kind {
        use crate::env::container::Weight;
        let signs: Vec<&str> = container
            .of(Weight::Sign)
            .chain(container.of(Weight::Hint))
            .map(|c| c.path.as_str())
            .collect();
        let mut x = Finding::new(
            "env.container",
            Family::Environment,
            Severity::Info,
            format!(
                "this runs in a container ({kind}), as {} show{}",
                signs.join(", "),
                if signs.len() == 1 { "s" } else { "" }
            ),
        )
        .why(
            "the host's settings (boot options, IRQs, cpusets) decide, and the audit sees only \
             part of them",
        );
        for c in &container.clues {
            x = x.evidence(&c.path, &c.value);
        }
        out.push(x);
    }
    if let Ok(steal) = crate::env::steal_ticks(f.root) {
        let on_rt: u64 = steal
            .iter()
            .filter(|(c, _)| f.rt.contains(*c))
            .map(|(_, s)| s)
            .sum();
        if on_rt > 0 {
            out.push(
                Finding::new(
                    "env.steal",
                    Family::Environment,
                    Severity::Low,
                    format!("the hypervisor took {on_rt} clock ticks from the RT CPUs since boot"),
                )
                .cpus(&f.rt)
                .evidence(
                    "/proc/stat",
                    format!("steal ticks on CPU {}: {on_rt}", f.rt),
                )
                .why("steal time is time the vCPU wanted to run and the host ran something else")
                .fix(
                    FixKind::Host,
                    "give the VM dedicated host CPUs",
                    "jitterlab audit (steal over the window)",
                ),
            );
        }
    }
}
