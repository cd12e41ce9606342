//! What was measured, as findings: a pure function of the [`Measured`] model and the
//! static findings, so that every finding is tested on fake measurements without a
//! host (the host-side run is [`crate::run`]).

use jitterlab_analyze::noise::{GapCause, NoiseAccount, NoiseKind};
use jitterlab_cpuset::CpuSet;
use jitterlab_host::audit::{Family, Finding, FixKind, Severity};
use jitterlab_latency::noise::NoiseResult;

use crate::model::{Measured, NoisePhase};

/// A measured latency above this is a `high` finding (the CPU is unfit), ns.
pub const UNFIT_LATENCY_NS: u64 = 1_000_000;
/// Above this, `medium` (tune), ns.
pub const TUNE_LATENCY_NS: u64 = 100_000;

/// The findings of what was measured, added to the static ones: the worst latency,
/// the noise (with what the trace of its window shows), host stalls and throttling per
/// RT CPU, and each latency phase's blamed spike, linked to the findings its cause
/// points at (which it takes its fix from).
pub fn add_measured(findings: &mut Vec<Finding>, m: &Measured) {
    let measured = measured_findings(m, findings);
    findings.extend(measured);
    link_blame(m, findings);
}

/// The finding a blamed spike's cause points at, by id, in the order tried: the spike's
/// verdict line goes into its evidence, and the spike's own finding takes its fix, so
/// that the recommendation applying it names the spike too.
fn related(cause: &str, verdict: &str) -> &'static [&'static str] {
    match cause {
        "no_events" => &["env.hypervisor"],
        "task" if verdict.contains("lower priority") => {
            &["kernel.preempt_mode", "kernel.preempt_rt"]
        }
        "task" => &["sched.partition", "sched.workqueue"],
        "interrupts" => &["irqs.on_rt_cpu", "irqs.managed", "cmdline.managed_irq"],
        "idle" => &["power.idle_states"],
        _ => &["kernel.preempt_rt"],
    }
}

/// What a cause means, for the spike's finding.
fn cause_why(cause: &str, verdict: &str, vm: bool) -> String {
    match cause {
        "no_events" if vm => "nothing ran on the CPU for most of the window, not even an interrupt: the host stalled the vCPU (hypervisor suspected)"
            .into(),
        "no_events" => "nothing ran on the CPU for most of the window, not even an interrupt: an SMI or a section with interrupts off"
            .into(),
        "task" if verdict.contains("lower priority") => "a lower-priority task held the CPU: on a kernel without PREEMPT_RT (or preempt=full) its kernel code is not preemptible"
            .into(),
        "task" => "another task ran on the RT CPU ahead of the probe".into(),
        "interrupts" => "interrupt handlers and softirqs ran on the RT CPU through the window".into(),
        "idle" => "the CPU was still waking from idle (idle-state exit or the wake-up IPI)".into(),
        _ => "no single cause took half of the window".into(),
    }
}

/// Links each latency phase's blamed spike into the findings: a `measured.spike`
/// finding per phase with the spike's cause and verdict, which takes the fix of the
/// finding its cause points at, and the verdict line as evidence of that finding and
/// of the CPU's `measured.latency`.
fn link_blame(m: &Measured, findings: &mut Vec<Finding>) {
    let vm = findings.iter().any(|f| f.id == "env.hypervisor");
    for phase in &m.latency {
        let Some(b) = &phase.blamed else { continue };
        let cpu = b.cpu;
        let one: CpuSet = [cpu].into_iter().collect();
        let source = format!("flight recorder blame, {}", phase.load);
        let line = format!(
            "{} wake-up {} ms into the trace: {} ({})",
            us(b.latency_ns),
            b.t_ns / 1_000_000,
            b.verdict,
            b.cause
        );
        let concerns = |f: &Finding| f.cpus.as_ref().is_none_or(|c| c.contains(cpu));
        let mut fix = None;
        let mut linked = Vec::new();
        for id in related(&b.cause, &b.verdict) {
            if let Some(f) = findings.iter_mut().find(|f| f.id == *id && concerns(f)) {
                f.evidence.push(jitterlab_host::audit::Evidence {
                    path: source.clone(),
                    value: line.clone(),
                });
                linked.push(f.id.clone());
                if fix.is_none() {
                    fix = f.fix.clone();
                }
            }
        }
        let subject = format!("CPU {cpu}");
        if let Some(f) = findings
            .iter_mut()
            .find(|f| f.id == "measured.latency" && f.subject == subject)
        {
            f.evidence.push(jitterlab_host::audit::Evidence {
                path: source.clone(),
                value: line.clone(),
            });
        }
        let severity = if b.latency_ns > UNFIT_LATENCY_NS {
            Severity::High
        } else if b.latency_ns > TUNE_LATENCY_NS {
            Severity::Medium
        } else if b.latency_ns > 20_000 {
            Severity::Low
        } else {
            Severity::Info
        };
        let mut x = Finding::new(
            "measured.spike",
            Family::Measured,
            severity,
            format!(
                "the worst wake-up on CPU {cpu} ({}), {}, blamed on {}: {}",
                phase.load,
                us(b.latency_ns),
                b.cause,
                b.verdict
            ),
        )
        .subject(format!("CPU {cpu}, {}", phase.load))
        .cpus(&one)
        .evidence(&source, &line)
        .why(format!(
            "{}{}",
            cause_why(&b.cause, &b.verdict, vm),
            if linked.is_empty() {
                String::new()
            } else {
                format!(" (see {})", linked.join(", "))
            }
        ))
        .effect(b.latency_ns);
        // The probe measures from the timer's expiry, the trace from the waking: a
        // timer that fired late (the vCPU stopped, interrupts off) is the probe's worst
        // but no wake-up of the trace.
        let probe_max = phase
            .cpus
            .iter()
            .find(|s| s.cpu == cpu)
            .map_or(0, |s| s.max_ns);
        if probe_max > 2 * b.latency_ns {
            x.why.push_str(&format!(
                "; the probe's worst in this phase, {}, is no wake-up of the trace: the delay came before the \
                 waking (its timer's interrupt held back: the host stopping the vCPU, or \
                 interrupts off), and blame covers the waking to the switch-in",
                us(probe_max)
            ));
            x = x.evidence(
                &format!("latency probe, {}", phase.load),
                format!("max {} on CPU {cpu}", us(probe_max)),
            );
        }
        if let Some(fx) = fix {
            x = x.fix(fx.kind, fx.apply, fx.check);
        }
        findings.push(x);
    }
}

fn us(ns: u64) -> String {
    format!("{:.1} us", ns as f64 / 1000.0)
}

/// The findings of what was measured: the worst latency per RT CPU, its noise, and
/// device interrupts in the noise window.
fn measured_findings(m: &Measured, statics: &[Finding]) -> Vec<Finding> {
    let mut out = Vec::new();
    let cpus: Vec<u32> = m.noise.iter().map(|n| n.result.cpu).collect();
    for cpu in cpus {
        let one: CpuSet = [cpu].into_iter().collect();
        // Latency: the worst of the phases.
        let worst = m
            .latency
            .iter()
            .filter_map(|p| p.cpus.iter().find(|s| s.cpu == cpu).map(|s| (p, s)))
            .max_by_key(|(_, s)| s.max_ns);
        if let Some((phase, s)) = worst {
            let severity = if s.max_ns > UNFIT_LATENCY_NS {
                Some(Severity::High)
            } else if s.max_ns > TUNE_LATENCY_NS {
                Some(Severity::Medium)
            } else {
                None
            };
            if let Some(severity) = severity {
                let mut x = Finding::new(
                    "measured.latency",
                    Family::Measured,
                    severity,
                    format!(
                        "CPU {cpu} woke up as late as {} ({})",
                        us(s.max_ns),
                        phase.load
                    ),
                )
                .subject(format!("CPU {cpu}"))
                .cpus(&one)
                .why(format!(
                    "a periodic SCHED_FIFO task on this CPU would miss a deadline shorter than \
                     that; {} and above makes it unfit, {} and above needs tuning",
                    us(UNFIT_LATENCY_NS),
                    us(TUNE_LATENCY_NS)
                ))
                .effect(s.max_ns);
                for p in &m.latency {
                    if let Some(s) = p.cpus.iter().find(|s| s.cpu == cpu) {
                        x = x.evidence(
                            &format!("latency probe, {}", p.load),
                            format!(
                                "max {} p99 {} over {} samples",
                                us(s.max_ns),
                                us(s.p99_ns),
                                s.samples
                            ),
                        );
                    }
                }
                if let Some(sp) = &phase.worst_spike {
                    let irqs: Vec<String> = sp
                        .interrupts
                        .iter()
                        .take(4)
                        .map(|d| format!("{} x{}", d.name, d.count))
                        .collect();
                    x = x.evidence(
                        "spike ledger",
                        format!(
                            "{} at {} ns on CPU {}; interrupts in its window: {}",
                            us(sp.latency_ns),
                            sp.t_ns,
                            sp.cpu,
                            if irqs.is_empty() {
                                "none".into()
                            } else {
                                irqs.join(", ")
                            }
                        ),
                    );
                }
                out.push(x);
            }
        }
        let Some(n) = m.noise.iter().find(|n| n.result.cpu == cpu) else {
            continue;
        };
        out.extend(noise_findings(n, &one, statics));
        out.extend(device_irqs(m, cpu, &one));
    }
    out
}

fn noise_findings(phase: &NoisePhase, one: &CpuSet, statics: &[Finding]) -> Vec<Finding> {
    let mut out = Vec::new();
    let vm = statics.iter().any(|f| f.id == "env.hypervisor");
    let n = &phase.result;
    let cpu = n.cpu;
    let longest = n.gaps.longest.first().map_or(0, |g| g.ns);
    let interrupts: u64 = n.interrupts.iter().map(|(_, c)| c).sum();
    let severity = if longest > UNFIT_LATENCY_NS {
        Some(Severity::High)
    } else if longest > TUNE_LATENCY_NS || n.available_ppm < 999_000 {
        Some(Severity::Medium)
    } else if longest > 20_000 {
        Some(Severity::Low)
    } else {
        None
    };
    if let Some(severity) = severity {
        let pct = n.available_ppm as f64 / 10_000.0;
        let mut x = Finding::new(
            "measured.noise",
            Family::Measured,
            severity,
            format!(
                "CPU {cpu} was taken from a spinning task for {} in {} gaps ({pct:.3} % available), the longest {}",
                us(n.gaps.noise_ns),
                n.gaps.count,
                us(longest)
            ),
        )
        .subject(format!("CPU {cpu}"))
        .cpus(one)
        .evidence(
            "noise probe",
            format!(
                "window {}, threshold {}, {} gaps, {} interrupts and softirqs on the CPU",
                us(n.gaps.window_ns),
                us(n.threshold_ns),
                n.gaps.count,
                interrupts
            ),
        )
        .why(format!(
            "a task that never sleeps loses this much{}{}",
            match n.preemptions {
                Some(p) if p > 0 => format!(
                    "; {p} of the gaps were other threads run there (the scheduler gives starved \
                     normal tasks time even under SCHED_FIFO), the rest interrupts{}",
                    if vm { " and the host stopping the vCPU" } else { "" }
                ),
                _ => String::new(),
            },
            if vm && n.gaps.count > interrupts + n.preemptions.unwrap_or(0) {
                "; more gaps than interrupts and preemptions: the host stopped the vCPU"
            } else {
                ""
            }
        ))
        .effect(longest);
        if let (Some(p), Some(own)) = (n.preemptions, n.own_runtime_ns) {
            x = x.evidence(
                "/proc/thread-self/status, schedstat",
                format!(
                    "the probe was preempted {p} times and ran {} of the window",
                    us(own)
                ),
            );
        }
        if let Some(top) = n.interrupts.first() {
            x = x.evidence(
                "/proc/interrupts",
                format!("most in the window: {} x{}", top.0, top.1),
            );
        }
        if let Some(a) = &phase.traced {
            x = x.evidence(TRACE_SOURCE, account_line(n, a));
            if let Some(g) = a.gaps.first() {
                x = x.evidence(TRACE_SOURCE, gap_line("the longest gap", g));
            }
        }
        out.push(x);
    }
    if let Some(a) = &phase.traced {
        out.extend(throttle_finding(n, a, one, statics));
        out.extend(stall_finding(a, one, vm));
    }
    out
}

/// The device interrupts of `cpu` over every measured window (the latency phases and
/// the noise window), by IRQ.
fn device_irqs(m: &Measured, cpu: u32, one: &CpuSet) -> Option<Finding> {
    let mut windows: Vec<(&[(String, u64)], u64)> = m
        .latency
        .iter()
        .flat_map(|p| {
            p.interrupts
                .iter()
                .filter(|c| c.cpu == cpu)
                .map(|c| (c.counts.as_slice(), p.wall_ns))
        })
        .collect();
    windows.extend(
        m.noise
            .iter()
            .filter(|n| n.result.cpu == cpu)
            .map(|n| (n.result.interrupts.as_slice(), n.result.gaps.window_ns)),
    );
    let window_ns: u64 = windows.iter().map(|w| w.1).sum();
    let mut devices: Vec<(&str, u64)> = Vec::new();
    for (label, count) in windows
        .iter()
        .flat_map(|w| w.0.iter())
        .filter(|(l, _)| l.starts_with("IRQ "))
    {
        match devices.iter_mut().find(|d| d.0 == label) {
            Some(d) => d.1 += count,
            None => devices.push((label, *count)),
        }
    }
    if devices.is_empty() {
        return None;
    }
    devices.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let total: u64 = devices.iter().map(|d| d.1).sum();
    let per_s = total as f64 * 1e9 / window_ns.max(1) as f64;
    let list: Vec<String> = devices
        .iter()
        .take(4)
        .map(|(l, c)| format!("{l} x{c}"))
        .collect();
    Some(
        Finding::new(
            "measured.device_irqs",
            Family::Measured,
            if per_s >= 100.0 {
                Severity::Medium
            } else {
                Severity::Low
            },
            format!(
                "device interrupts on CPU {cpu}: {total} in {} of measuring ({per_s:.0}/s)",
                us(window_ns)
            ),
        )
        .subject(format!("CPU {cpu}"))
        .cpus(one)
        .evidence(
            "/proc/interrupts over the latency phases and the noise window",
            list.join(", "),
        )
        .why("each one runs its handler and often a softirq on the RT CPU")
        .fix(
            FixKind::Jitterlab,
            format!(
                "jitterlab isolate {cpu} for the movable ones; managed ones need isolcpus=managed_irq,domain,{cpu}"
            ),
            format!("jitterlab verify {cpu}"),
        ),
    )
}

/// Where the noise accounts come from, in evidence.
const TRACE_SOURCE: &str = "trace of the noise window (sched, irq, irq_vectors)";

/// The window's noise against what the trace shows of it.
fn account_line(n: &NoiseResult, a: &NoiseAccount) -> String {
    let mut parts: Vec<String> = [
        ("IRQ handlers", a.irq_ns),
        ("vectors", a.vector_ns),
        ("timers", a.timer_ns),
        ("softirqs", a.softirq_ns),
        ("threads", a.thread_ns),
        ("idle", a.idle_ns),
    ]
    .iter()
    .filter(|(_, ns)| *ns > 0)
    .map(|(what, ns)| format!("{what} {}", us(*ns)))
    .collect();
    if parts.is_empty() {
        parts.push("nothing".into());
    }
    format!(
        "the probe lost {}; the trace shows {} away from it ({}){}{}",
        us(n.gaps.noise_ns),
        us(a.traced_ns),
        parts.join(", "),
        if n.gaps.noise_ns > a.traced_ns {
            format!(
                "; {} untraced (interrupt entry and exit, the host)",
                us(n.gaps.noise_ns - a.traced_ns)
            )
        } else {
            String::new()
        },
        if a.lost_events {
            "; the trace lost events in the window"
        } else {
            ""
        }
    )
}

fn gap_line(what: &str, g: &GapCause) -> String {
    format!(
        "{what}, {} at {} ms: {}",
        us(g.ns),
        g.at_ns / 1_000_000,
        if g.cause == NoiseKind::NoEvents {
            "no event in the trace".to_string()
        } else {
            format!(
                "{} ({}, {} traced)",
                g.what.join(", "),
                g.cause.name(),
                us(g.traced_ns)
            )
        }
    )
}

/// A gap where the probe, at SCHED_FIFO, did not run for longer than the real-time
/// throttling's reserve lasts would show the throttling: other threads or idle for
/// about `period - runtime`.
fn throttle_finding(
    n: &NoiseResult,
    a: &NoiseAccount,
    one: &CpuSet,
    statics: &[Finding],
) -> Option<Finding> {
    let g = a.gaps.iter().find(|g| {
        matches!(g.cause, NoiseKind::Thread | NoiseKind::Idle) && g.ns >= THROTTLE_GAP_NS
    })?;
    let rt = statics.iter().find(|f| f.id == "sched.rt_runtime");
    let mut x = Finding::new(
        "measured.rt_throttled",
        Family::Measured,
        Severity::High,
        format!(
            "the SCHED_FIFO noise probe on CPU {} was held off for {}: {}",
            n.cpu,
            us(g.ns),
            if g.cause == NoiseKind::Idle {
                "the CPU stayed idle (throttled)".to_string()
            } else {
                format!("{} ran instead", g.what.join(", "))
            }
        ),
    )
    .subject(format!("CPU {}", n.cpu))
    .cpus(one)
    .evidence(TRACE_SOURCE, gap_line("the gap", g))
    .why(
        "a real-time task that runs for long is stopped so that others get the CPU: the \
         scheduler's real-time throttling (sched_rt_runtime_us below its period) or the \
         fair server",
    )
    .effect(g.ns);
    if let Some(f) = rt {
        x = x.evidence(
            "see sched.rt_runtime",
            f.evidence
                .first()
                .map_or_else(String::new, |e| format!("{} = {}", e.path, e.value)),
        );
        if let Some(fx) = &f.fix {
            x = x.fix(fx.kind, fx.apply.clone(), fx.check.clone());
        }
    }
    Some(x)
}

/// A gap the trace longer than this, of other threads or idle, is the throttling.
const THROTTLE_GAP_NS: u64 = 10_000_000;

/// The gaps with no event in them: the CPU was taken with nothing in the kernel to
/// show for it.
fn stall_finding(a: &NoiseAccount, one: &CpuSet, vm: bool) -> Option<Finding> {
    let (count, total) = a.silent();
    let silent: Vec<&GapCause> = a
        .gaps
        .iter()
        .filter(|g| g.cause == NoiseKind::NoEvents)
        .collect();
    if count == 0 {
        return None;
    }
    // The longest silent gap among the described ones (the longest gaps); else the
    // silent gaps are all shorter than those.
    let longest = silent.iter().map(|g| g.ns).max().unwrap_or(0);
    let severity = if longest > UNFIT_LATENCY_NS {
        Severity::High
    } else if longest > TUNE_LATENCY_NS {
        Severity::Medium
    } else {
        Severity::Low
    };
    let what = if vm {
        "the host stopped the vCPU"
    } else {
        "SMIs or firmware took the CPU"
    };
    let mut x = Finding::new(
        if vm {
            "measured.host_stall"
        } else {
            "measured.silent_gap"
        },
        Family::Measured,
        severity,
        format!(
            "{count} of the {} noise gaps on CPU {} ({} in all{}) have no event in the trace: {what}",
            a.gap_count(),
            a.cpu,
            us(total),
            if longest > 0 {
                format!(", the longest {}", us(longest))
            } else {
                String::new()
            }
        ),
    )
    .subject(format!("CPU {}", a.cpu))
    .cpus(one)
    .why(if vm {
        "nothing ran in the guest, not even an interrupt, while the probe's clock jumped: the \
         hypervisor ran something else on the physical CPU, which no setting inside the VM \
         removes"
    } else {
        "nothing ran in the kernel, not even an interrupt, while the probe's clock jumped: \
         system management interrupts or firmware, invisible to the kernel"
    })
    .effect(longest.max(total / count));
    for g in silent.iter().take(3) {
        x = x.evidence(TRACE_SOURCE, gap_line("a gap", g));
    }
    Some(if vm {
        x.fix(
            FixKind::Host,
            "give the VM dedicated host CPUs: pin each vCPU to its own host CPU (virsh vcpupin, \
             or QEMU's thread affinity), isolate those CPUs on the host and keep the host's \
             own work and other guests off them",
            format!(
                "jitterlab audit --cpus {} (measured.host_stall gone)",
                a.cpu
            ),
        )
    } else {
        x.fix(
            FixKind::Host,
            "in the firmware, turn off what raises SMIs (power management, legacy USB \
             emulation, error reporting) as the board vendor's real-time guide lists",
            format!(
                "jitterlab audit --cpus {} (measured.silent_gap gone)",
                a.cpu
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use jitterlab_analyze::noise::NoiseKind;

    use super::*;
    use crate::fake::{blamed, measured, noise, phase, statics, traced};

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn one() -> CpuSet {
        [1].into_iter().collect()
    }

    /// The findings of `m` added to this VM's static ones.
    fn findings_of(m: &Measured) -> Vec<Finding> {
        let mut f = statics(&one());
        add_measured(&mut f, m);
        f
    }

    fn get<'a>(f: &'a [Finding], id: &str) -> Option<&'a Finding> {
        f.iter().find(|x| x.id == id)
    }

    fn quiet_noise() -> NoisePhase {
        noise(1, 1_000 * MS, &[(10 * MS, 5 * US), (600 * MS, 6 * US)])
    }

    #[test]
    fn latency_by_its_worst_phase() {
        let f = findings_of(&measured(
            vec![
                phase("idle", 1, 300 * US),
                phase("cpu:2", 1, 1_500 * MS / 1000),
            ],
            vec![quiet_noise()],
        ));
        let l = get(&f, "measured.latency").unwrap();
        assert_eq!(l.severity, Severity::High);
        assert_eq!(l.subject, "CPU 1");
        assert_eq!(l.effect_ns, Some(1_500 * US));
        assert!(l.what.contains("(cpu:2)"), "{}", l.what);
        let f = findings_of(&measured(
            vec![phase("idle", 1, 300 * US)],
            vec![quiet_noise()],
        ));
        assert_eq!(
            get(&f, "measured.latency").unwrap().severity,
            Severity::Medium
        );
    }

    #[test]
    fn noise_by_its_longest_gap() {
        for (gap, severity) in [
            (1_200 * US, Severity::High),
            (150 * US, Severity::Medium),
            (30 * US, Severity::Low),
        ] {
            let n = noise(1, 1_000 * MS, &[(10 * MS, 5 * US), (600 * MS, gap)]);
            let f = findings_of(&measured(vec![phase("idle", 1, 20 * US)], vec![n]));
            let x = get(&f, "measured.noise").unwrap();
            assert_eq!((x.severity, x.effect_ns), (severity, Some(gap)), "{gap}");
        }
    }

    #[test]
    fn device_interrupts_by_their_rate() {
        let mut p = phase("idle", 1, 20 * US);
        p.interrupts[0]
            .counts
            .push(("IRQ 36 virtio1-req.0".into(), 500));
        let f = findings_of(&measured(vec![p.clone()], vec![quiet_noise()]));
        let d = get(&f, "measured.device_irqs").unwrap();
        assert_eq!(d.severity, Severity::Medium, "{}", d.what);
        assert!(d.what.contains("500 in"), "{}", d.what);
        p.interrupts[0].counts[1].1 = 20;
        let f = findings_of(&measured(vec![p], vec![quiet_noise()]));
        assert_eq!(
            get(&f, "measured.device_irqs").unwrap().severity,
            Severity::Low
        );
    }

    #[test]
    fn silent_gaps_are_the_host_on_a_vm_and_smis_on_hardware() {
        let n = traced(
            noise(1, 1_000 * MS, &[(10 * MS, 300 * US), (600 * MS, 8 * US)]),
            &[
                (NoiseKind::NoEvents, &[]),
                (NoiseKind::Vector, &["local_timer"]),
            ],
        );
        let m = measured(vec![phase("idle", 1, 20 * US)], vec![n]);
        let f = findings_of(&m);
        let s = get(&f, "measured.host_stall").unwrap();
        assert_eq!(
            (s.severity, s.effect_ns),
            (Severity::Medium, Some(300 * US))
        );
        assert_eq!(s.fix.as_ref().unwrap().kind, FixKind::Host);
        // On hardware (no env.hypervisor): SMIs or firmware.
        let mut f: Vec<Finding> = statics(&one())
            .into_iter()
            .filter(|f| f.id != "env.hypervisor")
            .collect();
        add_measured(&mut f, &m);
        assert!(get(&f, "measured.host_stall").is_none());
        assert!(get(&f, "measured.silent_gap")
            .unwrap()
            .what
            .contains("SMIs"));
    }

    #[test]
    fn a_long_gap_of_other_threads_is_the_throttling() {
        let n = traced(
            noise(1, 1_000 * MS, &[(950 * MS, 50 * MS), (10 * MS, 5 * US)]),
            &[
                (NoiseKind::Thread, &["kworker/1:1-40"]),
                (NoiseKind::Vector, &["local_timer"]),
            ],
        );
        let f = findings_of(&measured(vec![phase("idle", 1, 20 * US)], vec![n]));
        let t = get(&f, "measured.rt_throttled").unwrap();
        assert_eq!(t.severity, Severity::High);
        assert!(t.what.contains("kworker/1:1-40 ran instead"), "{}", t.what);
        // It takes the sysctl's fix.
        assert_eq!(
            t.fix.as_ref().unwrap().apply,
            "sysctl -w kernel.sched_rt_runtime_us=-1"
        );
    }

    #[test]
    fn a_blamed_spike_takes_the_fix_of_the_finding_its_cause_points_at() {
        let p = blamed(
            phase("idle", 1, 400 * US),
            390 * US,
            "task",
            "rustc-9334 (lower priority: not preemptible there?) ran for 100% of the window",
        );
        let f = findings_of(&measured(vec![p], vec![quiet_noise()]));
        let s = get(&f, "measured.spike").unwrap();
        assert_eq!(s.subject, "CPU 1, idle");
        assert_eq!(s.severity, Severity::Medium);
        assert_eq!(s.fix.as_ref().unwrap().apply, "preempt=full");
        assert!(s.why.contains("see kernel.preempt_mode"), "{}", s.why);
        // The verdict line is evidence of the finding it points at.
        let k = get(&f, "kernel.preempt_mode").unwrap();
        assert!(k
            .evidence
            .iter()
            .any(|e| e.path == "flight recorder blame, idle"));
    }
}
