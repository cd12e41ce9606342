//! Kernel checks: preemption model, tick, RCU callbacks, high-resolution timers,
//! clocksource.

use super::{Facts, Family, Finding, FixKind, Severity};

const VERSION: &str = "/proc/version";
const CLOCKSOURCE: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
const AVAILABLE: &str = "/sys/devices/system/clocksource/clocksource0/available_clocksource";

pub(super) fn check(f: &Facts, out: &mut Vec<Finding>) {
    let version = f.line(VERSION).unwrap_or_default();
    let realtime = f.line("/sys/kernel/realtime");
    let rt = realtime.as_deref() == Some("1")
        || version.contains("PREEMPT_RT")
        || f.config.as_ref().is_some_and(|c| c.enabled("PREEMPT_RT"));
    let audit = f.reboot_check();
    if !version.is_empty() && !rt {
        let mut x = Finding::new(
            "kernel.preempt_rt",
            Family::Kernel,
            Severity::Medium,
            "the kernel is not PREEMPT_RT",
        )
        .evidence(VERSION, &version)
        .why(
            "without PREEMPT_RT, interrupt handlers, softirqs and spinlock sections run with \
             preemption off, and a wake-up waits for the longest of them (hundreds of \
             microseconds, more under load)",
        )
        .fix(
            FixKind::Kernel,
            "boot a PREEMPT_RT kernel (CONFIG_PREEMPT_RT=y; Debian: apt install \
             linux-image-rt-amd64; Fedora/RHEL: kernel-rt)",
            &audit,
        )
        .effect(500_000);
        if let Some((src, v)) = f.config_value("PREEMPT_RT") {
            x = x.evidence(&src, v);
        }
        out.push(x);
        // PREEMPT_DYNAMIC booted as none or voluntary: kernel code is not preempted at all.
        let dynamic = version.contains("PREEMPT_DYNAMIC");
        let asked = f.cmdline.get("preempt").map(|v| v.into_owned());
        let default_none = f
            .config
            .as_ref()
            .is_some_and(|c| c.enabled("PREEMPT_NONE") || c.enabled("PREEMPT_VOLUNTARY"));
        let mode = match asked.as_deref() {
            Some(m) => Some(m.to_string()),
            None if default_none => Some(
                if f.config.as_ref().is_some_and(|c| c.enabled("PREEMPT_NONE")) {
                    "none (the build's default)".to_string()
                } else {
                    "voluntary (the build's default)".to_string()
                },
            ),
            None => None,
        };
        if dynamic
            && mode
                .as_deref()
                .is_some_and(|m| !m.starts_with("full") && !m.starts_with("lazy"))
        {
            let mut x = Finding::new(
                "kernel.preempt_mode",
                Family::Kernel,
                Severity::Medium,
                format!(
                    "the kernel runs without kernel preemption: preempt={}",
                    mode.unwrap_or_default()
                ),
            )
            .evidence(
                "/proc/cmdline",
                asked.map_or("no preempt= option".into(), |m| format!("preempt={m}")),
            )
            .why(
                "a task woken while another runs kernel code waits until that code returns or \
                 yields, which can take milliseconds",
            )
            .fix(FixKind::Boot, "preempt=full", &audit)
            .effect(1_000_000);
            if let Some((src, v)) = f.config_value("PREEMPT_NONE") {
                x = x.evidence(&src, v);
            }
            out.push(x);
        }
    }
    if let Some(c) = &f.config {
        let hz = c.value("HZ").unwrap_or("-").to_string();
        if c.enabled("HZ_PERIODIC") {
            out.push(
                Finding::new(
                    "kernel.periodic_tick",
                    Family::Kernel,
                    Severity::Low,
                    format!("the tick never stops, even on idle CPUs (HZ {hz})"),
                )
                .evidence(&c.source, "CONFIG_HZ_PERIODIC=y")
                .why("every CPU takes a timer interrupt HZ times a second whatever it runs")
                .fix(
                    FixKind::Kernel,
                    "a kernel built with CONFIG_NO_HZ_FULL=y",
                    &audit,
                ),
            );
        }
        if !c.enabled("NO_HZ_FULL") {
            out.push(
                Finding::new(
                    "kernel.no_hz_full",
                    Family::Kernel,
                    Severity::Low,
                    format!(
                        "the kernel cannot stop the tick on a busy CPU (no NO_HZ_FULL; HZ {hz})"
                    ),
                )
                .evidence(
                    &c.source,
                    format!(
                        "CONFIG_NO_HZ_FULL={}",
                        c.value("NO_HZ_FULL").unwrap_or("is not set")
                    ),
                )
                .why(format!(
                    "the RT CPUs take {hz} tick interrupts a second while they run, each a few \
                     microseconds stolen from the application"
                ))
                .fix(
                    FixKind::Kernel,
                    "a kernel built with CONFIG_NO_HZ_FULL=y, booted with nohz_full",
                    &audit,
                )
                .effect(5_000),
            );
        }
        if !c.enabled("RCU_NOCB_CPU") {
            out.push(
                Finding::new(
                    "kernel.rcu_nocb",
                    Family::Kernel,
                    Severity::Low,
                    "the kernel cannot move RCU callbacks off a CPU (no RCU_NOCB_CPU)",
                )
                .evidence(&c.source, "CONFIG_RCU_NOCB_CPU is not set")
                .why("RCU callbacks then run in softirq on the RT CPUs, in bursts after a grace period")
                .fix(FixKind::Kernel, "a kernel built with CONFIG_RCU_NOCB_CPU=y, booted with rcu_nocbs", &audit)
                .effect(20_000),
            );
        }
        if !c.enabled("HIGH_RES_TIMERS") {
            out.push(
                Finding::new(
                    "kernel.high_res_timers",
                    Family::Kernel,
                    Severity::High,
                    format!("timers fire on the tick only (no HIGH_RES_TIMERS; HZ {hz})"),
                )
                .evidence(&c.source, "CONFIG_HIGH_RES_TIMERS is not set")
                .why("a periodic task wakes up to one tick late, milliseconds at HZ 250")
                .fix(
                    FixKind::Kernel,
                    "a kernel built with CONFIG_HIGH_RES_TIMERS=y",
                    &audit,
                )
                .effect(4_000_000),
            );
        }
    }
    if let Some(cs) = f.line(CLOCKSOURCE) {
        let available = f.line(AVAILABLE).unwrap_or_default();
        let tsc_there = available.split_whitespace().any(|a| a == "tsc");
        if cs != "tsc" && tsc_there {
            out.push(
                Finding::new(
                    "kernel.clocksource",
                    Family::Kernel,
                    Severity::Medium,
                    format!("the clocksource is {cs}, not the TSC"),
                )
                .evidence(CLOCKSOURCE, &cs)
                .evidence(AVAILABLE, &available)
                .why(format!(
                    "reading {cs} is slower than the TSC (a microsecond for hpet or acpi_pm), and \
                     every timestamp and timer pays it"
                ))
                .fix(FixKind::Boot, "clocksource=tsc tsc=reliable", &audit)
                .effect(2_000),
            );
        } else if cs == "tsc" && !f.cmdline.has("tsc") {
            let cpuinfo = f
                .root
                .read_opt("/proc/cpuinfo")
                .ok()
                .flatten()
                .unwrap_or_default();
            let flags = cpuinfo
                .lines()
                .find(|l| l.starts_with("flags"))
                .unwrap_or("");
            let has = |w: &str| flags.split_whitespace().any(|x| x == w);
            if has("constant_tsc") && has("nonstop_tsc") {
                out.push(
                    Finding::new(
                        "kernel.tsc_reliable",
                        Family::Kernel,
                        Severity::Low,
                        "the TSC is invariant but the kernel still watches it",
                    )
                    .evidence(CLOCKSOURCE, &cs)
                    .evidence("/proc/cpuinfo", "flags: constant_tsc nonstop_tsc")
                    .evidence("/proc/cmdline", "no tsc= option")
                    .why(
                        "the clocksource watchdog reads a slow clock from a timer every half \
                         second and may switch away from the TSC under load",
                    )
                    .fix(FixKind::Boot, "tsc=reliable", &audit),
                );
            }
        }
    }
}
