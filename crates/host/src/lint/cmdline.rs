//! Kernel command line checks: the isolation options agree with each other and with
//! the RT CPUs; the tick skew, the lockup watchdogs.

use jitterlab_cpuset::CpuSet;

use super::{Facts, Family, Finding, FixKind, Severity};

const CMDLINE: &str = "/proc/cmdline";

fn show(s: &Option<CpuSet>) -> String {
    s.as_ref()
        .map_or("(not given)".to_string(), |s| s.to_string())
}

pub(super) fn check(f: &Facts, out: &mut Vec<Finding>) {
    let rt = &f.rt;
    let b = &f.boot;
    let audit = f.reboot_check();
    let advise = format!("jitterlab advise {rt} prints the whole line");
    let covers = |s: &Option<CpuSet>| s.as_ref().is_some_and(|s| rt.is_subset(s));
    let missing = |s: &Option<CpuSet>| match s {
        Some(s) => rt.difference(s),
        None => rt.clone(),
    };
    // The three options each name a set; a CPU in one and not the others is half isolated.
    let given: Vec<(&str, &CpuSet)> = [
        ("isolcpus", &b.isolcpus),
        ("nohz_full", &b.nohz_full),
        ("rcu_nocbs", &b.rcu_nocbs),
    ]
    .into_iter()
    .filter_map(|(k, s)| s.as_ref().map(|s| (k, s)))
    .collect();
    if given.len() >= 2 && given.iter().any(|(_, s)| *s != given[0].1) {
        let all = given.iter().fold(CpuSet::new(), |a, (_, s)| a.union(s));
        let mut x = Finding::new(
            "cmdline.disagree",
            Family::Cmdline,
            Severity::Medium,
            format!(
                "the isolation options name different CPUs: {}",
                given
                    .iter()
                    .map(|(k, s)| format!("{k}={s}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        )
        .cpus(&all.intersection(rt))
        .why(
            "a CPU in one set and not the others is half isolated: kept from the scheduler but \
             ticking, or tickless but running RCU callbacks",
        )
        .fix(
            FixKind::Boot,
            format!("isolcpus=managed_irq,domain,{rt} nohz_full={rt} rcu_nocbs={rt} ({advise})"),
            &audit,
        );
        for (k, s) in &given {
            x = x.evidence(CMDLINE, format!("{k}={s}"));
        }
        out.push(x);
    }
    if !covers(&b.isolcpus) {
        out.push(
            Finding::new(
                "cmdline.isolcpus",
                Family::Cmdline,
                Severity::Low,
                format!("CPU {} not in isolcpus", missing(&b.isolcpus)),
            )
            .cpus(&missing(&b.isolcpus))
            .evidence(CMDLINE, format!("isolcpus={}", show(&b.isolcpus)))
            .why(
                "only isolcpus keeps managed IRQs and the kernel's own unbound work off a CPU from \
                 boot on; a run-time partition (jitterlab isolate) does the rest",
            )
            .fix(FixKind::Boot, format!("isolcpus=managed_irq,domain,{rt}"), &audit),
        );
    } else if !b.isolcpus_flags.iter().any(|x| x == "managed_irq") {
        out.push(
            Finding::new(
                "cmdline.managed_irq",
                Family::Cmdline,
                Severity::Medium,
                "isolcpus is given without managed_irq",
            )
            .cpus(rt)
            .evidence(
                CMDLINE,
                format!(
                    "isolcpus={},{}",
                    b.isolcpus_flags.join(","),
                    show(&b.isolcpus)
                ),
            )
            .why(
                "managed IRQs (the queues of NVMe and virtio block devices) refuse affinity \
                 writes, and only isolcpus=managed_irq keeps them off the isolated CPUs",
            )
            .fix(
                FixKind::Boot,
                format!("isolcpus=managed_irq,domain,{rt}"),
                &audit,
            ),
        );
    }
    let nohz_ok = f.config.as_ref().is_none_or(|c| c.enabled("NO_HZ_FULL"));
    if nohz_ok && !covers(&b.nohz_full) {
        out.push(
            Finding::new(
                "cmdline.nohz_full",
                Family::Cmdline,
                Severity::Low,
                format!("CPU {} not in nohz_full", missing(&b.nohz_full)),
            )
            .cpus(&missing(&b.nohz_full))
            .evidence(CMDLINE, format!("nohz_full={}", show(&b.nohz_full)))
            .why("the tick keeps interrupting a CPU that runs a single real-time task")
            .fix(FixKind::Boot, format!("nohz_full={rt}"), &audit)
            .effect(5_000),
        );
    }
    let nocb_ok = f.config.as_ref().is_none_or(|c| c.enabled("RCU_NOCB_CPU"));
    // nohz_full implies rcu_nocbs for its CPUs.
    let offloaded = b
        .rcu_nocbs
        .clone()
        .unwrap_or_default()
        .union(&b.nohz_full.clone().unwrap_or_default());
    if nocb_ok && !rt.is_subset(&offloaded) {
        out.push(
            Finding::new(
                "cmdline.rcu_nocbs",
                Family::Cmdline,
                Severity::Low,
                format!("CPU {} not in rcu_nocbs", rt.difference(&offloaded)),
            )
            .cpus(&rt.difference(&offloaded))
            .evidence(CMDLINE, format!("rcu_nocbs={}", show(&b.rcu_nocbs)))
            .why("RCU callbacks run in softirq on the CPU that queued them, in bursts")
            .fix(FixKind::Boot, format!("rcu_nocbs={rt}"), &audit)
            .effect(20_000),
        );
    }
    if let Some(aff) = b.irqaffinity.as_ref().filter(|a| a.intersects(rt)) {
        out.push(
            Finding::new(
                "cmdline.irqaffinity",
                Family::Cmdline,
                Severity::Medium,
                format!(
                    "irqaffinity={aff} lets IRQs onto CPU {}",
                    aff.intersection(rt)
                ),
            )
            .cpus(&aff.intersection(rt))
            .evidence(CMDLINE, format!("irqaffinity={aff}"))
            .why("every IRQ set up at boot may be delivered to the RT CPUs in it")
            .fix(
                FixKind::Boot,
                format!("irqaffinity={}", f.housekeeping),
                &audit,
            ),
        );
    }
    if let Some(v) = f.cmdline.get("kthread_cpus") {
        let possible = f.online.clone();
        if let Ok(k) = CpuSet::parse_list(&v) {
            let k = k.intersection(&possible);
            if k.intersects(rt) {
                out.push(
                    Finding::new(
                        "cmdline.kthread_cpus",
                        Family::Cmdline,
                        Severity::Medium,
                        format!(
                            "kthread_cpus={v} lets kernel threads onto CPU {}",
                            k.intersection(rt)
                        ),
                    )
                    .cpus(&k.intersection(rt))
                    .evidence(CMDLINE, format!("kthread_cpus={v}"))
                    .why("unbound kernel threads started at boot may run on the RT CPUs in it")
                    .fix(
                        FixKind::Boot,
                        format!("kthread_cpus={}", f.housekeeping),
                        &audit,
                    ),
                );
            }
        }
    }
    if f.cmdline.get("skew_tick").as_deref() != Some("1") && f.online.len() > 1 {
        out.push(
            Finding::new(
                "cmdline.skew_tick",
                Family::Cmdline,
                Severity::Low,
                "the CPUs' ticks fire at the same moment (no skew_tick=1)",
            )
            .evidence(CMDLINE, "no skew_tick=1")
            .why("ticks in step contend for the same timer and RCU locks at once")
            .fix(FixKind::Boot, "skew_tick=1", &audit),
        );
    }
    // The soft lockup watchdog: a per-CPU hrtimer and a stopper thread on every CPU
    // of watchdog_cpumask.
    let watchdog = f.num("/proc/sys/kernel/watchdog").unwrap_or(0) != 0
        || f.num("/proc/sys/kernel/soft_watchdog").unwrap_or(0) != 0;
    let wmask = f
        .line("/proc/sys/kernel/watchdog_cpumask")
        .and_then(|m| CpuSet::parse_list(&m).ok());
    if watchdog && !f.cmdline.has("nosoftlockup") && wmask.as_ref().is_none_or(|m| m.intersects(rt))
    {
        out.push(
            Finding::new(
                "cmdline.softlockup",
                Family::Cmdline,
                Severity::Low,
                "the soft lockup watchdog runs on the RT CPUs",
            )
            .cpus(rt)
            .evidence("/proc/sys/kernel/watchdog", "1")
            .evidence(
                "/proc/sys/kernel/watchdog_cpumask",
                wmask.map_or("-".to_string(), |m| m.to_string()),
            )
            .why("it wakes a per-CPU timer and stopper thread every few seconds on each CPU it watches")
            .fix(
                FixKind::Sysctl,
                format!("sysctl -w kernel.watchdog_cpumask={} (or boot with nosoftlockup)", f.housekeeping),
                f.verify(),
            )
            .effect(10_000),
        );
    }
    if f.num("/proc/sys/kernel/nmi_watchdog").unwrap_or(0) != 0 {
        out.push(
            Finding::new(
                "cmdline.nmi_watchdog",
                Family::Cmdline,
                Severity::Low,
                "the NMI watchdog is on",
            )
            .evidence("/proc/sys/kernel/nmi_watchdog", "1")
            .why("it takes a non-maskable interrupt on every CPU periodically, which nothing can defer")
            .fix(FixKind::Sysctl, "sysctl -w kernel.nmi_watchdog=0 (or boot with nmi_watchdog=0)", f.verify())
            .effect(5_000),
        );
    }
}
