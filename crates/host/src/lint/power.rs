//! CPU and power checks: frequency governors and the frequency against the maximum,
//! idle states and their exit latencies, who holds `/dev/cpu_dma_latency`, SMT
//! siblings of the RT CPUs.

use jitterlab_cpuset::CpuSet;

use super::{Facts, Family, Finding, FixKind, Severity};

const CPU: &str = "/sys/devices/system/cpu";

pub(super) fn check(f: &Facts, out: &mut Vec<Finding>, needs_root: &mut Vec<String>) {
    let rt = &f.rt;
    // Governors: the RT CPUs grouped by governor.
    let mut scaling: Vec<(String, CpuSet)> = Vec::new();
    let mut slow: Vec<(u32, u64, u64)> = Vec::new();
    for cpu in rt.iter() {
        let d = format!("{CPU}/cpu{cpu}/cpufreq");
        if let Some(g) = f.line(&format!("{d}/scaling_governor")) {
            if g != "performance" {
                match scaling.iter_mut().find(|(h, _)| *h == g) {
                    Some((_, s)) => s.insert(cpu),
                    None => scaling.push((g, [cpu].into_iter().collect())),
                }
            }
        }
        let cur = f.num(&format!("{d}/scaling_cur_freq"));
        let max = f
            .num(&format!("{d}/cpuinfo_max_freq"))
            .or_else(|| f.num(&format!("{d}/scaling_max_freq")));
        if let (Some(cur), Some(max)) = (cur, max) {
            if max > 0 && cur * 10 < max * 9 {
                slow.push((cpu, cur as u64, max as u64));
            }
        }
    }
    for (g, cpus) in scaling {
        let first = cpus.iter().next().unwrap_or(0);
        out.push(
            Finding::new(
                "power.governor",
                Family::Power,
                Severity::Medium,
                format!("CPU {cpus} scale their frequency (governor {g})"),
            )
            .subject(format!("CPU {cpus}"))
            .cpus(&cpus)
            .evidence(&format!("{CPU}/cpu{first}/cpufreq/scaling_governor"), &g)
            .why("a CPU that slows down when idle runs the next wake-up's handler slowly, and changing speed stalls it")
            .fix(
                FixKind::Shell,
                format!("cpupower -c {cpus} frequency-set -g performance (tuned: governor=performance)"),
                format!("jitterlab audit --cpus {}", f.rt),
            ),
        );
    }
    if !slow.is_empty() {
        let cpus: CpuSet = slow.iter().map(|s| s.0).collect();
        let (c, cur, max) = slow[0];
        out.push(
            Finding::new(
                "power.frequency",
                Family::Power,
                Severity::Low,
                format!("CPU {cpus} run below 90 % of their maximum frequency"),
            )
            .cpus(&cpus)
            .evidence(&format!("{CPU}/cpu{c}/cpufreq/scaling_cur_freq"), format!("{cur} kHz"))
            .evidence(&format!("{CPU}/cpu{c}/cpufreq/cpuinfo_max_freq"), format!("{max} kHz"))
            .why("code runs slower in proportion, and the frequency will change under the application")
            .fix(
                FixKind::Shell,
                format!("cpupower -c {cpus} frequency-set -g performance; check the BIOS power profile"),
                format!("jitterlab audit --cpus {}", f.rt),
            ),
        );
    }
    // Idle states slower to leave than the CPU's resume latency limit allows.
    let holders = dma_latency_holders(f, needs_root);
    for cpu in rt.iter() {
        let Ok(states) = crate::cpus::read_idle_states(f.root, cpu) else {
            continue;
        };
        let limit = f
            .line(&format!("{CPU}/cpu{cpu}/power/pm_qos_resume_latency_us"))
            .and_then(|l| match l.as_str() {
                // The file's language: 0 is no limit, n/a is polling only.
                "0" => None,
                "n/a" => Some(0),
                n => n.parse::<u64>().ok(),
            });
        let allowed = limit.unwrap_or(0);
        let deep: Vec<_> = states
            .iter()
            .filter(|s| !s.disabled && s.latency_us > allowed)
            .collect();
        let Some(worst) = deep.iter().map(|s| s.latency_us).max() else {
            continue;
        };
        let names: Vec<String> = deep
            .iter()
            .map(|s| format!("{} ({} us)", s.name, s.latency_us))
            .collect();
        let mut x = Finding::new(
            "power.idle_states",
            Family::Power,
            if worst > 10 {
                Severity::Medium
            } else {
                Severity::Low
            },
            format!("CPU {cpu} may sleep in {}", names.join(", ")),
        )
        .subject(format!("CPU {cpu}"))
        .cpus(&[cpu].into_iter().collect())
        .evidence(
            &format!("{CPU}/cpu{cpu}/cpuidle/{}/latency", deep[0].state),
            format!("{} us ({})", deep[0].latency_us, deep[0].name),
        )
        .evidence(
            &format!("{CPU}/cpu{cpu}/power/pm_qos_resume_latency_us"),
            limit.map_or("0 (no limit)".into(), |l| l.to_string()),
        )
        .why(
            "a wake-up that finds the CPU in a deep idle state waits for its exit latency first \
             (in a VM a halt also waits for the host to run the vCPU again)",
        )
        .fix(
            FixKind::Jitterlab,
            format!(
                "jitterlab isolate {cpu} --idle-latency 0 (or boot with \
                 processor.max_cstate=1 intel_idle.max_cstate=0; or have the application hold \
                 /dev/cpu_dma_latency at 0)"
            ),
            format!("jitterlab verify {cpu}"),
        )
        .effect(worst.saturating_mul(1000).max(1_000));
        if let Some(h) = &holders {
            x = x.evidence("/dev/cpu_dma_latency", h);
        }
        out.push(x);
    }
    // SMT siblings that are not RT CPUs share the core's pipeline and caches.
    let mut shared = CpuSet::new();
    let mut evidence = Vec::new();
    for cpu in rt.iter() {
        let p = format!("{CPU}/cpu{cpu}/topology/thread_siblings_list");
        if let Ok(Some(sib)) = f.root.read_cpu_list_opt(&p) {
            let others = sib.difference(rt).intersection(&f.online);
            if !others.is_empty() {
                shared = shared.union(&others);
                evidence.push((p, sib.to_string()));
            }
        }
    }
    if !shared.is_empty() {
        let mut x = Finding::new(
            "power.smt",
            Family::Power,
            Severity::Medium,
            format!("the RT CPUs share their cores with CPU {shared} (SMT siblings)"),
        )
        .cpus(rt)
        .why("a hyperthread sibling running other work slows the RT CPU's code by up to half, unpredictably")
        .fix(
            FixKind::Shell,
            format!(
                "echo off > /sys/devices/system/cpu/smt/control (or boot with nosmt), or add \
                 CPU {shared} to the RT CPUs and leave them idle"
            ),
            format!("jitterlab audit --cpus {}", f.rt),
        );
        for (p, v) in evidence.into_iter().take(4) {
            x = x.evidence(&p, v);
        }
        out.push(x);
    }
}

/// Who holds /dev/cpu_dma_latency open (its value is a device's, not a file's, so it
/// is not read): the processes whose fd links point at it. `None` when it cannot be
/// told (another user's fds need root).
fn dma_latency_holders(f: &Facts, needs_root: &mut Vec<String>) -> Option<String> {
    if f.root.is_live() && !f.is_root {
        needs_root.push("who holds /dev/cpu_dma_latency open (other processes' fds)".into());
        return None;
    }
    let mut held = Vec::new();
    for pid in f.root.list_numeric("/proc").unwrap_or_default() {
        let dir = f.root.path(format!("/proc/{pid}/fd"));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if std::fs::read_link(e.path())
                .is_ok_and(|l| l == std::path::Path::new("/dev/cpu_dma_latency"))
            {
                let comm = f.line(&format!("/proc/{pid}/comm")).unwrap_or_default();
                held.push(format!("{comm} (pid {pid})"));
                break;
            }
        }
    }
    Some(if held.is_empty() {
        "held by no process".into()
    } else {
        format!("held by {}", held.join(", "))
    })
}
