//! What was measured, as findings: a pure function of the [`Measured`] model and the
//! static findings, so that every finding is tested on fake measurements without a
//! host (the host-side run is [`crate::run`]).

use jitterlab_analyze::noise_account::{GapCause, NoiseAccount, NoiseKind};
use jitterlab_cpuset::CpuSet;
use jitterlab_host::lint::{Family, Finding, FixKind, Severity};
use jitterlab_latency::noise_probe::NoiseResult;
use jitterlab_latency::stats::{OverTime, Summary};

use crate::model::{LatencyPhase, Measured, NoiseHalf, NoisePhase};

/// A measured latency above this is a `high` finding (the CPU is unfit), ns.
pub const UNFIT_LATENCY_NS: u64 = 1_000_000;
/// Above this, `medium` (tune), ns.
pub const TUNE_LATENCY_NS: u64 = 100_000;

/// The findings of what was measured, added to the static ones: the worst latency,
/// the noise (with what the trace of its window shows), host stalls and device
/// interrupts per RT CPU, the throttling as evidence of `sched.rt_runtime`, and each
/// latency phase's blamed spike, linked to the findings its cause points at (which it
/// takes its fix from).
pub fn add_measured(findings: &mut Vec<Finding>, m: &Measured) {
    let measured = measured_findings(m, findings);
    findings.extend(measured);
    link_throttle(m, findings);
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

/// What a cause means, for the spike's finding; `load` is the phase's.
fn cause_why(cause: &str, verdict: &str, vm: bool, load: &str) -> String {
    match cause {
        // The audit's cpu:N load runs on every CPU, and is no busy loop: its threads loop
        // usleep(1), and the CPU idles between their wake-ups.
        "idle" if load.starts_with("cpu:") => format!(
            "the CPU was still waking from idle (idle-state exit or the wake-up IPI): the \
             {} load runs there, but its threads sleep in usleep(1) between wake-ups, and \
             the CPU idles between them",
            load.split(' ').next().unwrap_or(load)
        ),
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

/// The severity of a latency or a noise gap: above [`UNFIT_LATENCY_NS`] high, above
/// [`TUNE_LATENCY_NS`] medium, above `low` low, else info.
fn severity_of(ns: u64, low: u64) -> Severity {
    if ns > UNFIT_LATENCY_NS {
        Severity::High
    } else if ns > TUNE_LATENCY_NS {
        Severity::Medium
    } else if ns > low {
        Severity::Low
    } else {
        Severity::Info
    }
}

/// Below this a wake-up or a gap is no finding's worry (info), ns.
const LOW_NS: u64 = 20_000;

/// The worst wake-up of each half of a probe run from its latency over time: the
/// buckets whose middle lies before half the run's length (`wall_ns`), then the rest.
pub fn latency_halves(over: &OverTime, wall_ns: u64) -> [u64; 2] {
    let half = wall_ns / 2;
    let mut max = [0, 0];
    for (i, &worst) in over.worst_ns.iter().enumerate() {
        let middle = i as u64 * over.bucket_ns + over.bucket_ns / 2;
        let h = usize::from(middle >= half);
        max[h] = max[h].max(worst);
    }
    max
}

/// The noise probe's window in two halves, each counted alone from every gap the
/// probe kept, leaving out `except` (gaps accounted for elsewhere: the throttling's);
/// empty when the probe counted more gaps than it kept.
pub fn noise_halves(n: &NoiseResult, except: &[u64]) -> Vec<NoiseHalf> {
    let g = &n.gaps;
    if g.all.len() as u64 != g.count {
        return Vec::new();
    }
    let mid = g.window_ns / 2;
    let mut halves = vec![
        NoiseHalf {
            window_ns: mid,
            ..NoiseHalf::default()
        },
        NoiseHalf {
            window_ns: g.window_ns - mid,
            ..NoiseHalf::default()
        },
    ];
    for gap in g.all.iter().filter(|x| !except.contains(&x.at_ns)) {
        let h = &mut halves[usize::from(gap.at_ns >= mid)];
        h.noise_ns += gap.ns;
        h.gaps += 1;
        h.longest_ns = h.longest_ns.max(gap.ns);
    }
    for h in &mut halves {
        h.available_ppm = if h.window_ns == 0 {
            0
        } else {
            (h.window_ns.saturating_sub(h.noise_ns) as u128 * 1_000_000 / h.window_ns as u128)
                as u64
        };
    }
    halves
}

/// What both halves agree on: the lower severity; and whether one half alone reached
/// more (the figure is noise-bound).
fn agree(a: Severity, b: Severity) -> (Severity, bool) {
    (a.min(b), a != b)
}

/// Links each latency phase's blamed spike into the findings: a `measured.spike`
/// finding per phase, always (info, with the reason, when nothing was blamed), with the
/// spike's cause and verdict, which takes the fix of the finding its cause points at,
/// and the verdict line as evidence of that finding and of the CPU's `measured.latency`.
/// Its severity is at most what both halves of the phase agree on.
fn link_blame(m: &Measured, findings: &mut Vec<Finding>) {
    let vm = findings.iter().any(|f| f.id == "env.hypervisor");
    for phase in &m.latency {
        let Some(b) = &phase.blamed else {
            // The CPU the phase was worst on: the one a blamed spike would be on.
            let Some(worst) = phase.cpus.iter().max_by_key(|s| (s.max_ns, s.cpu)) else {
                continue;
            };
            let cpu = worst.cpu;
            let one: CpuSet = [cpu].into_iter().collect();
            let note = phase
                .blame_note
                .clone()
                .unwrap_or_else(|| "no trace of the phase".into());
            findings.push(
                Finding::new(
                    "measured.spike",
                    Family::Measured,
                    Severity::Info,
                    format!(
                        "the worst wake-up on CPU {cpu} ({}), {}, is not blamed: {note}",
                        phase.load,
                        us(worst.max_ns)
                    ),
                )
                .subject(format!("CPU {cpu}, {}", phase.load))
                .cpus(&one)
                .evidence(
                    &format!("latency probe, {}", phase.load),
                    format!("max {} on CPU {cpu}", us(worst.max_ns)),
                )
                .why("nothing in a trace of the phase says what held the probe off"),
            );
            continue;
        };
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
                f.evidence.push(jitterlab_host::lint::Evidence {
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
            f.evidence.push(jitterlab_host::lint::Evidence {
                path: source.clone(),
                value: line.clone(),
            });
        }
        // One wake-up: as bad as both halves of its phase agree, no worse.
        let agreed = phase
            .halves
            .iter()
            .find(|h| h.cpu == cpu)
            .map_or(b.latency_ns, |h| h.max_ns[0].min(h.max_ns[1]));
        let alone = severity_of(b.latency_ns, LOW_NS);
        let severity = alone.min(severity_of(agreed, LOW_NS));
        let bound = severity < alone;
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
            "{}{}{}",
            cause_why(&b.cause, &b.verdict, vm, &phase.load),
            if linked.is_empty() {
                String::new()
            } else {
                format!(" (see {})", linked.join(", "))
            },
            if bound {
                format!(
                    "; one half of the phase alone came near it, the other stayed within {}: \
                     noise-bound, its severity is that of what both halves reached",
                    us(agreed)
                )
            } else {
                String::new()
            }
        ))
        .effect(b.latency_ns.min(agreed))
        .noise_bound(bound);
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

/// The findings of what was measured, one of each per RT CPU whatever the figures (so
/// that two audits of one machine have the same ids; the severity says how bad): the
/// latency, the noise (and what the trace of its window shows), the device
/// interrupts.
fn measured_findings(m: &Measured, statics: &[Finding]) -> Vec<Finding> {
    let mut out = Vec::new();
    let cpus: Vec<u32> = m.noise.iter().map(|n| n.result.cpu).collect();
    for cpu in cpus {
        let one: CpuSet = [cpu].into_iter().collect();
        out.extend(latency_finding(m, cpu, &one));
        let Some(n) = m.noise.iter().find(|n| n.result.cpu == cpu) else {
            continue;
        };
        out.extend(noise_findings(n, &one, statics));
        out.push(device_irqs(m, cpu, &one));
    }
    out
}

/// The CPU's wake-up latency: its worst case, and what both halves of a phase reached,
/// which its severity rests on.
fn latency_finding(m: &Measured, cpu: u32, one: &CpuSet) -> Option<Finding> {
    // (phase, statistics, the worst of each half)
    let rows: Vec<(&LatencyPhase, &Summary, [u64; 2])> = m
        .latency
        .iter()
        .filter_map(|p| {
            let s = p.cpus.iter().find(|s| s.cpu == cpu)?;
            let h = p
                .halves
                .iter()
                .find(|h| h.cpu == cpu)
                .map_or([s.max_ns, s.max_ns], |h| h.max_ns);
            Some((p, s, h))
        })
        .collect();
    let &(worst, ws, _) = rows.iter().max_by_key(|r| r.1.max_ns)?;
    let &(both, _, bh) = rows.iter().max_by_key(|r| r.2[0].min(r.2[1]))?;
    let agreed = bh[0].min(bh[1]);
    let severity = severity_of(agreed, TUNE_LATENCY_NS);
    let bound = severity_of(ws.max_ns, TUNE_LATENCY_NS) > severity;
    let what = if bound {
        format!(
            "CPU {cpu} woke up as late as {} ({}) in one half of its window only: noise-bound; \
             both halves of a window reached {} ({})",
            us(ws.max_ns),
            worst.load,
            us(agreed),
            both.load
        )
    } else {
        format!(
            "CPU {cpu} woke up as late as {} ({})",
            us(ws.max_ns),
            worst.load
        )
    };
    let mut x = Finding::new("measured.latency", Family::Measured, severity, what)
        .subject(format!("CPU {cpu}"))
        .cpus(one)
        .why(format!(
            "a periodic SCHED_FIFO task on this CPU would miss a deadline shorter than \
             that; {} and above makes it unfit, {} and above needs tuning{}",
            us(UNFIT_LATENCY_NS),
            us(TUNE_LATENCY_NS),
            if bound {
                "; the worst rests on one moment of one half of a window, which on a VM is \
                 the host stopping the vCPU: the severity is that of what both halves reached"
            } else {
                ""
            }
        ))
        .effect(agreed)
        .noise_bound(bound);
    for (p, s, h) in &rows {
        x = x.evidence(
            &format!("latency probe, {}", p.load),
            format!(
                "max {} p99 {} over {} samples; the worst of each half {} and {}",
                us(s.max_ns),
                us(s.p99_ns),
                s.samples,
                us(h[0]),
                us(h[1])
            ),
        );
    }
    if let Some(sp) = &worst.worst_spike {
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
    Some(x)
}

fn noise_findings(phase: &NoisePhase, one: &CpuSet, statics: &[Finding]) -> Vec<Finding> {
    let mut out = Vec::new();
    let vm = statics.iter().any(|f| f.id == "env.hypervisor");
    let n = &phase.result;
    let cpu = n.cpu;
    let longest = n.gaps.longest.first().map_or(0, |g| g.ns);
    let interrupts: u64 = n.interrupts.iter().map(|(_, c)| c).sum();
    let of = |longest: u64, available_ppm: u64| {
        let s = severity_of(longest, LOW_NS);
        if available_ppm < 999_000 {
            s.max(Severity::Medium)
        } else {
            s
        }
    };
    let (severity, bound, agreed) = match phase.halves.as_slice() {
        [a, b] => {
            let (sa, sb) = (
                of(a.longest_ns, a.available_ppm),
                of(b.longest_ns, b.available_ppm),
            );
            let (s, bound) = agree(sa, sb);
            (s, bound, a.longest_ns.min(b.longest_ns))
        }
        _ => (of(longest, n.available_ppm), false, longest),
    };
    let throttled: Vec<&GapCause> = phase.traced.as_ref().map_or_else(Vec::new, throttle_gaps);
    // The window's figures, without the throttling when the halves leave it out.
    let (noise_ns, count, longest, available_ppm) = match phase.halves.as_slice() {
        [a, b] => {
            let noise = a.noise_ns + b.noise_ns;
            let window = (a.window_ns + b.window_ns).max(1);
            (
                noise,
                a.gaps + b.gaps,
                a.longest_ns.max(b.longest_ns),
                (window.saturating_sub(noise) as u128 * 1_000_000 / window as u128) as u64,
            )
        }
        _ => (n.gaps.noise_ns, n.gaps.count, longest, n.available_ppm),
    };
    let throttle_ns: u64 = throttled.iter().map(|g| g.ns).sum();
    let pct = available_ppm as f64 / 10_000.0;
    let mut x = Finding::new(
        "measured.noise",
        Family::Measured,
        severity,
        format!(
            "CPU {cpu} was taken from a spinning task for {} in {} gaps ({pct:.3} % available), the longest {}{}{}",
            us(noise_ns),
            count,
            us(longest),
            if throttled.is_empty() || phase.halves.is_empty() {
                String::new()
            } else {
                format!(", besides the throttling's {}", us(throttle_ns))
            },
            match phase.halves.as_slice() {
                [a, b] if bound => format!(
                    "; noise-bound: the halves' longest {} and {}",
                    us(a.longest_ns),
                    us(b.longest_ns)
                ),
                _ => String::new(),
            }
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
        "a task that never sleeps loses this much{}{}{}{}",
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
        },
        if bound {
            "; the worst rests on one half of the window: the severity is that of what both \
             halves reached"
        } else {
            ""
        },
        if throttled.is_empty() || phase.halves.is_empty() {
            ""
        } else {
            "; the throttling is left out: it stops only a task that runs for most of a \
             second, not a periodic one (see sched.rt_runtime)"
        }
    ))
    .effect(agreed)
    .noise_bound(bound);
    for (i, h) in phase.halves.iter().enumerate() {
        x = x.evidence(
            "noise probe",
            format!(
                "{} half: {} in {} gaps ({:.3} % available), the longest {}",
                if i == 0 { "first" } else { "second" },
                us(h.noise_ns),
                h.gaps,
                h.available_ppm as f64 / 10_000.0,
                us(h.longest_ns)
            ),
        );
    }
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
    out.push(stall_finding(phase, one, vm));
    out
}

/// The device interrupts of `cpu` over every measured window (the latency phases and
/// the noise window), by IRQ; its severity is the rate at least two windows reached.
fn device_irqs(m: &Measured, cpu: u32, one: &CpuSet) -> Finding {
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
    let device = |counts: &[(String, u64)]| -> u64 {
        counts
            .iter()
            .filter(|(l, _)| l.starts_with("IRQ "))
            .map(|(_, c)| c)
            .sum()
    };
    let per_s = |n: u64, ns: u64| n as f64 * 1e9 / ns.max(1) as f64;
    let mut rates: Vec<f64> = windows.iter().map(|w| per_s(device(w.0), w.1)).collect();
    rates.sort_by(|a, b| b.total_cmp(a));
    let highest = rates.first().copied().unwrap_or(0.0);
    // What two windows agree on: the second highest rate (the only one, alone). Any
    // device interrupt on an RT CPU is low; a rate two windows reached may be medium.
    let agreed = rates.get(1).copied().unwrap_or(highest);
    let severity = if agreed >= DEVICE_IRQS_PER_S {
        Severity::Medium
    } else if highest > 0.0 {
        Severity::Low
    } else {
        Severity::Info
    };
    let bound = highest >= DEVICE_IRQS_PER_S && agreed < DEVICE_IRQS_PER_S;
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
    devices.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let total: u64 = devices.iter().map(|d| d.1).sum();
    let list: Vec<String> = devices
        .iter()
        .take(4)
        .map(|(l, c)| format!("{l} x{c}"))
        .collect();
    let x = Finding::new(
        "measured.device_irqs",
        Family::Measured,
        severity,
        format!(
            "device interrupts on CPU {cpu}: {total} in {} of measuring ({:.0}/s){}",
            us(window_ns),
            per_s(total, window_ns),
            if bound {
                format!(
                    ": {highest:.0}/s in one window only, noise-bound; two windows reached {agreed:.0}/s"
                )
            } else {
                String::new()
            }
        ),
    )
    .subject(format!("CPU {cpu}"))
    .cpus(one)
    .evidence(
        "/proc/interrupts over the latency phases and the noise window",
        if list.is_empty() {
            "none".to_string()
        } else {
            list.join(", ")
        },
    )
    .why("each one runs its handler and often a softirq on the RT CPU")
    .noise_bound(bound);
    if total == 0 {
        return x;
    }
    x.fix(
        FixKind::Jitterlab,
        format!(
            "jitterlab isolate {cpu} for the movable ones; managed ones need isolcpus=managed_irq,domain,{cpu}"
        ),
        format!("jitterlab verify {cpu}"),
    )
}

/// From this rate of device interrupts on an RT CPU, per second, they are `medium`.
const DEVICE_IRQS_PER_S: f64 = 100.0;

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

/// The gaps of a noise window that show the scheduler's throttling: the probe, at
/// SCHED_FIFO, held off for longer than [`THROTTLE_GAP_NS`] while other threads ran or
/// the CPU idled (about `period - runtime` of the real-time throttling, or the fair
/// server's reserve). They are among the longest, which the account describes.
pub fn throttle_gaps(a: &NoiseAccount) -> Vec<&GapCause> {
    a.gaps
        .iter()
        .filter(|g| {
            matches!(g.cause, NoiseKind::Thread | NoiseKind::Idle) && g.ns >= THROTTLE_GAP_NS
        })
        .collect()
}

/// A noise window's halves ([`noise_halves`]) without the gaps the throttling made,
/// which are evidence of `sched.rt_runtime`, not noise.
pub fn noise_phase_halves(n: &NoiseResult, traced: Option<&NoiseAccount>) -> Vec<NoiseHalf> {
    let except: Vec<u64> = traced.map_or_else(Vec::new, |a| {
        throttle_gaps(a).iter().map(|g| g.at_ns).collect()
    });
    noise_halves(n, &except)
}

/// The throttling a noise window shows, one line for people.
fn throttle_line(cpu: u32, g: &GapCause) -> String {
    format!(
        "the SCHED_FIFO noise probe on CPU {cpu} was held off for {}: {}",
        us(g.ns),
        if g.cause == NoiseKind::Idle {
            "the CPU stayed idle (throttled)".to_string()
        } else {
            format!("{} ran instead", g.what.join(", "))
        }
    )
}

/// Puts the throttling the noise windows show where it belongs: on `sched.rt_runtime`,
/// the setting that makes it, as evidence (a configuration that matters to a task that
/// never sleeps, not to a periodic one, and no noise of the machine). Without that
/// finding (throttling off) the fair server made it: the CPU's `measured.noise` says so.
fn link_throttle(m: &Measured, findings: &mut [Finding]) {
    for n in &m.noise {
        let Some(a) = &n.traced else { continue };
        let cpu = n.result.cpu;
        for g in throttle_gaps(a) {
            let line = throttle_line(cpu, g);
            let subject = format!("CPU {cpu}");
            let target = match findings.iter().position(|f| f.id == "sched.rt_runtime") {
                Some(i) => Some(i),
                None => findings
                    .iter()
                    .position(|f| f.id == "measured.noise" && f.subject == subject),
            };
            let Some(f) = target.map(|i| &mut findings[i]) else {
                continue;
            };
            f.evidence.push(jitterlab_host::lint::Evidence {
                path: TRACE_SOURCE.into(),
                value: format!(
                    "{line}{}",
                    if f.id == "measured.noise" {
                        " (the fair server's reserve for normal tasks: not counted as noise)"
                    } else {
                        ""
                    }
                ),
            });
            if f.id == "sched.rt_runtime" && !f.what.contains("measured") {
                f.what
                    .push_str(&format!("; measured: {}", held_off(g.ns, cpu)));
            }
        }
    }
}

/// `the noise probe on CPU 1 was held off 51.3 ms`.
fn held_off(ns: u64, cpu: u32) -> String {
    format!(
        "the noise probe on CPU {cpu} was held off {:.1} ms",
        ns as f64 / 1e6
    )
}

/// A gap the trace longer than this, of other threads or idle, is the throttling.
const THROTTLE_GAP_NS: u64 = 10_000_000;

/// The gaps with no event in them: the CPU was taken with nothing in the kernel to
/// show for it. One finding per noise window, always (info when the trace shows no such
/// gap, or when there is no trace); its severity is what the longest silent gap of
/// each half of the window reached.
fn stall_finding(phase: &NoisePhase, one: &CpuSet, vm: bool) -> Finding {
    let (id, what) = if vm {
        ("measured.host_stall", "the host stopped the vCPU")
    } else {
        ("measured.silent_gap", "SMIs or firmware took the CPU")
    };
    let cpu = phase.result.cpu;
    let Some(a) = &phase.traced else {
        let note = phase
            .trace_note
            .clone()
            .unwrap_or_else(|| "no trace of the window".into());
        return Finding::new(
            id,
            Family::Measured,
            Severity::Info,
            format!("the noise gaps on CPU {cpu} cannot be told apart: {note}"),
        )
        .subject(format!("CPU {cpu}"))
        .cpus(one)
        .evidence("noise probe", format!("{} gaps", phase.result.gaps.count))
        .why(
            "only a trace of the window says which gaps had nothing in the kernel to show for them",
        );
    };
    let (count, total) = a.silent();
    let silent: Vec<&GapCause> = a
        .gaps
        .iter()
        .filter(|g| g.cause == NoiseKind::NoEvents)
        .collect();
    if count == 0 {
        return Finding::new(
            id,
            Family::Measured,
            Severity::Info,
            format!(
                "none of the {} noise gaps on CPU {cpu} is without an event in the trace",
                a.gap_count()
            ),
        )
        .subject(format!("CPU {cpu}"))
        .cpus(one)
        .evidence(TRACE_SOURCE, account_line(&phase.result, a))
        .why("every gap had an interrupt, a softirq or a thread to show for it");
    }
    // The longest silent gap among the described ones (the longest gaps), and in each
    // half of the window; a half without one among them agrees on nothing above low.
    let longest = silent.iter().map(|g| g.ns).max().unwrap_or(0);
    let mid = phase.result.gaps.window_ns / 2;
    let half_longest = |second: bool| {
        silent
            .iter()
            .filter(|g| (g.at_ns >= mid) == second)
            .map(|g| g.ns)
            .max()
            .unwrap_or(0)
    };
    let (h0, h1) = (half_longest(false), half_longest(true));
    let floor = |s: Severity| s.max(Severity::Low);
    let whole = floor(severity_of(longest, LOW_NS));
    let (severity, _) = agree(
        floor(severity_of(h0, LOW_NS)),
        floor(severity_of(h1, LOW_NS)),
    );
    let bound = whole > severity;
    let mut x = Finding::new(
        id,
        Family::Measured,
        severity,
        format!(
            "{count} of the {} noise gaps on CPU {} ({} in all{}) have no event in the trace: {what}{}",
            a.gap_count(),
            a.cpu,
            us(total),
            if longest > 0 {
                format!(", the longest {}", us(longest))
            } else {
                String::new()
            },
            if bound && h0.min(h1) == 0 {
                format!(
                    "; all in one half of the window: noise-bound, the other half had none \
                     among the {} longest gaps",
                    a.gaps.len()
                )
            } else if bound {
                format!(
                    "; the longest of one half of the window only: noise-bound, both halves had \
                     one of {}",
                    us(h0.min(h1))
                )
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
    .effect(h0.min(h1).max(total / count))
    .noise_bound(bound);
    for g in silent.iter().take(3) {
        x = x.evidence(TRACE_SOURCE, gap_line("a gap", g));
    }
    if vm {
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
    }
}

#[cfg(test)]
mod tests {
    use jitterlab_analyze::noise_account::NoiseKind;

    use super::*;
    use crate::fake::{blamed, halves, measured, noise, phase, statics, traced};

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
    fn latency_by_what_both_halves_reached() {
        let f = findings_of(&measured(
            vec![phase("idle", 1, 300 * US), phase("cpu:2", 1, 1_500 * US)],
            vec![quiet_noise()],
        ));
        let l = get(&f, "measured.latency").unwrap();
        assert_eq!((l.severity, l.noise_bound), (Severity::High, false));
        assert_eq!(l.subject, "CPU 1");
        assert_eq!(l.effect_ns, Some(1_500 * US));
        assert!(l.what.contains("(cpu:2)"), "{}", l.what);
        // 8.52 ms and 1.15 ms: both halves above 1 ms, unfit either way.
        let f = findings_of(&measured(
            vec![halves("idle", 1, [8_520 * US, 1_150 * US])],
            vec![quiet_noise()],
        ));
        let l = get(&f, "measured.latency").unwrap();
        assert_eq!((l.severity, l.noise_bound), (Severity::High, false));
        assert_eq!(l.effect_ns, Some(1_150 * US));
        // One stall in one half: the severity is what the other half reached too.
        let f = findings_of(&measured(
            vec![
                halves("idle", 1, [8_520 * US, 150 * US]),
                halves("cpu:2", 1, [90 * US, 120 * US]),
            ],
            vec![quiet_noise()],
        ));
        let l = get(&f, "measured.latency").unwrap();
        assert_eq!((l.severity, l.noise_bound), (Severity::Medium, true));
        assert_eq!(l.effect_ns, Some(150 * US));
        assert_eq!(
            l.what,
            "CPU 1 woke up as late as 8520.0 us (idle) in one half of its window only: \
             noise-bound; both halves of a window reached 150.0 us (idle)"
        );
        assert!(l.evidence[0]
            .value
            .ends_with("the worst of each half 8520.0 us and 150.0 us"));
        // A quiet CPU still has its finding, of no concern.
        let f = findings_of(&measured(
            vec![halves("idle", 1, [40 * US, 50 * US])],
            vec![quiet_noise()],
        ));
        let l = get(&f, "measured.latency").unwrap();
        assert_eq!((l.severity, l.noise_bound), (Severity::Info, false));
    }

    #[test]
    fn noise_by_what_both_halves_had() {
        for (gaps, severity, bound, effect) in [
            ([1_200 * US, 1_100 * US], Severity::High, false, 1_100 * US),
            ([5 * US, 1_200 * US], Severity::Info, true, 5 * US),
            ([150 * US, 30 * US], Severity::Low, true, 30 * US),
            ([150 * US, 130 * US], Severity::Medium, false, 130 * US),
            ([5 * US, 6 * US], Severity::Info, false, 5 * US),
        ] {
            let n = noise(1, 1_000 * MS, &[(10 * MS, gaps[0]), (600 * MS, gaps[1])]);
            let f = findings_of(&measured(vec![phase("idle", 1, 20 * US)], vec![n]));
            let x = get(&f, "measured.noise").unwrap();
            assert_eq!(
                (x.severity, x.noise_bound, x.effect_ns),
                (severity, bound, Some(effect)),
                "{gaps:?}: {}",
                x.what
            );
            assert_eq!(x.what.contains("noise-bound"), bound, "{}", x.what);
        }
        // Under 99.9 % available in both halves is medium, with no long gap.
        let many: Vec<(u64, u64)> = (0..100).map(|i| (i * 10 * MS, 30 * US)).collect();
        let f = findings_of(&measured(
            vec![phase("idle", 1, 20 * US)],
            vec![noise(1, 1_000 * MS, &many)],
        ));
        assert_eq!(
            get(&f, "measured.noise").unwrap().severity,
            Severity::Medium
        );
    }

    #[test]
    fn the_halves_of_a_noise_window() {
        let n = noise(
            1,
            1_000 * MS,
            &[(10 * MS, 5 * US), (499 * MS, 7 * US), (500 * MS, 9 * US)],
        );
        let h = noise_halves(&n.result, &[]);
        assert_eq!((h[0].window_ns, h[1].window_ns), (500 * MS, 500 * MS));
        assert_eq!(
            (h[0].gaps, h[0].noise_ns, h[0].longest_ns),
            (2, 12 * US, 7 * US)
        );
        assert_eq!((h[1].gaps, h[1].longest_ns), (1, 9 * US));
        assert_eq!(h[1].available_ppm, 999_982);
        // A gap accounted for elsewhere is left out.
        assert_eq!(noise_halves(&n.result, &[499 * MS])[0].gaps, 1);
        // More gaps than kept: no halves.
        let mut r = n.result.clone();
        r.gaps.count += 1;
        assert!(noise_halves(&r, &[]).is_empty());
    }

    #[test]
    fn the_halves_of_a_latency_run() {
        let over = OverTime {
            bucket_ns: 1_000_000,
            worst_ns: vec![10, 50, 20, 30],
            samples: vec![1, 1, 1, 1],
        };
        assert_eq!(latency_halves(&over, 4_000_000), [50, 30]);
        assert_eq!(latency_halves(&over, 8_000_000), [50, 0]);
    }

    #[test]
    fn device_interrupts_by_the_rate_two_windows_reached() {
        let with_irqs = |n: u64| {
            let mut p = phase("idle", 1, 20 * US);
            p.interrupts[0]
                .counts
                .push(("IRQ 36 virtio1-req.0".into(), n));
            p
        };
        // 250/s in both latency phases.
        let f = findings_of(&measured(
            vec![with_irqs(500), with_irqs(500)],
            vec![quiet_noise()],
        ));
        let d = get(&f, "measured.device_irqs").unwrap();
        assert_eq!(
            (d.severity, d.noise_bound),
            (Severity::Medium, false),
            "{}",
            d.what
        );
        assert!(d.what.contains("1000 in"), "{}", d.what);
        // In one window only.
        let f = findings_of(&measured(
            vec![with_irqs(500), with_irqs(0)],
            vec![quiet_noise()],
        ));
        let d = get(&f, "measured.device_irqs").unwrap();
        assert_eq!(
            (d.severity, d.noise_bound),
            (Severity::Low, true),
            "{}",
            d.what
        );
        // None at all: still there, nothing to fix.
        let f = findings_of(&measured(
            vec![phase("idle", 1, 20 * US)],
            vec![quiet_noise()],
        ));
        let d = get(&f, "measured.device_irqs").unwrap();
        assert_eq!(
            (d.severity, d.fix.is_none()),
            (Severity::Info, true),
            "{}",
            d.what
        );
    }

    #[test]
    fn silent_gaps_are_the_host_on_a_vm_and_smis_on_hardware() {
        let n = traced(
            noise(
                1,
                1_000 * MS,
                &[
                    (10 * MS, 300 * US),
                    (600 * MS, 8 * US),
                    (700 * MS, 200 * US),
                ],
            ),
            &[
                (NoiseKind::NoEvents, &[]),
                (NoiseKind::Vector, &["local_timer"]),
                (NoiseKind::NoEvents, &[]),
            ],
        );
        let m = measured(vec![phase("idle", 1, 20 * US)], vec![n.clone()]);
        let f = findings_of(&m);
        let s = get(&f, "measured.host_stall").unwrap();
        assert_eq!(
            (s.severity, s.noise_bound, s.effect_ns),
            (Severity::Medium, false, Some(250 * US))
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
        // A long silent gap in one half only.
        let mut one_half = n.clone();
        let a = one_half.traced.as_mut().unwrap();
        a.gaps.retain(|g| g.at_ns != 700 * MS);
        a.by_cause[0].gaps = 1;
        let f = findings_of(&measured(vec![phase("idle", 1, 20 * US)], vec![one_half]));
        let s = get(&f, "measured.host_stall").unwrap();
        assert_eq!(
            (s.severity, s.noise_bound),
            (Severity::Low, true),
            "{}",
            s.what
        );
        // Not "both halves had one of 0.0 us": the other half had none to compare.
        assert!(
            s.what
                .ends_with("all in one half of the window: noise-bound, the other half had none among the 2 longest gaps"),
            "{}",
            s.what
        );
        // Untraced: still there, telling why nothing is known.
        let f = findings_of(&measured(
            vec![phase("idle", 1, 20 * US)],
            vec![quiet_noise()],
        ));
        let s = get(&f, "measured.host_stall").unwrap();
        assert_eq!(s.severity, Severity::Info);
        assert!(s.what.contains("tracefs is busy"), "{}", s.what);
    }

    /// The scheduler's throttling stops only a task that runs for most of a second:
    /// it is evidence of `sched.rt_runtime`, the setting that makes it, and no noise of
    /// the machine, whichever half of the window it fell in.
    #[test]
    fn the_throttling_is_evidence_of_the_setting_not_noise() {
        let n = traced(
            noise(
                1,
                1_000 * MS,
                &[(950 * MS, 50 * MS), (10 * MS, 5 * US), (600 * MS, 6 * US)],
            ),
            &[
                (NoiseKind::Thread, &["kworker/1:1-40"]),
                (NoiseKind::Vector, &["local_timer"]),
                (NoiseKind::Vector, &["local_timer"]),
            ],
        );
        assert_eq!(n.halves[1].longest_ns, 6 * US, "{:?}", n.halves);
        let f = findings_of(&measured(vec![phase("idle", 1, 20 * US)], vec![n.clone()]));
        assert!(get(&f, "measured.rt_throttled").is_none());
        let x = get(&f, "measured.noise").unwrap();
        assert_eq!(
            (x.severity, x.noise_bound),
            (Severity::Info, false),
            "{}",
            x.what
        );
        assert!(
            x.what.contains("besides the throttling's 50000.0 us"),
            "{}",
            x.what
        );
        let rt = get(&f, "sched.rt_runtime").unwrap();
        assert_eq!(rt.severity, Severity::Low);
        assert!(
            rt.what
                .ends_with("; measured: the noise probe on CPU 1 was held off 50.0 ms"),
            "{}",
            rt.what
        );
        assert!(rt.evidence.iter().any(|e| e.value
            == "the SCHED_FIFO noise probe on CPU 1 was held off for 50000.0 us: \
                kworker/1:1-40 ran instead"));
        // Throttling off (no sched.rt_runtime finding): the fair server, on the noise.
        let mut f: Vec<Finding> = statics(&one())
            .into_iter()
            .filter(|f| f.id != "sched.rt_runtime")
            .collect();
        add_measured(&mut f, &measured(vec![phase("idle", 1, 20 * US)], vec![n]));
        let x = get(&f, "measured.noise").unwrap();
        assert!(
            x.evidence
                .iter()
                .any(|e| e.value.contains("the fair server's reserve")),
            "{x:?}"
        );
    }

    #[test]
    fn a_blamed_spike_takes_the_fix_of_the_finding_its_cause_points_at() {
        let verdict =
            "rustc-9334 (lower priority: not preemptible there?) ran for 100% of the window";
        let p = blamed(phase("idle", 1, 400 * US), 390 * US, "task", verdict);
        let f = findings_of(&measured(vec![p], vec![quiet_noise()]));
        let s = get(&f, "measured.spike").unwrap();
        assert_eq!(s.subject, "CPU 1, idle");
        assert_eq!((s.severity, s.noise_bound), (Severity::Medium, false));
        assert_eq!(s.fix.as_ref().unwrap().apply, "preempt=full");
        assert!(s.why.contains("see kernel.preempt_mode"), "{}", s.why);
        // The verdict line is evidence of the finding it points at.
        let k = get(&f, "kernel.preempt_mode").unwrap();
        assert!(k
            .evidence
            .iter()
            .any(|e| e.path == "flight recorder blame, idle"));
        // One wake-up is no worse than what both halves of its phase reached.
        let p = blamed(
            halves("idle", 1, [400 * US, 30 * US]),
            390 * US,
            "task",
            verdict,
        );
        let f = findings_of(&measured(vec![p], vec![quiet_noise()]));
        let s = get(&f, "measured.spike").unwrap();
        assert_eq!((s.severity, s.noise_bound), (Severity::Low, true));
        assert_eq!(s.effect_ns, Some(30 * US));
        // Nothing blamed: the phase still has its spike finding, saying why.
        let f = findings_of(&measured(
            vec![phase("idle", 1, 400 * US)],
            vec![quiet_noise()],
        ));
        let s = get(&f, "measured.spike").unwrap();
        assert_eq!(
            (s.severity, s.subject.as_str()),
            (Severity::Info, "CPU 1, idle")
        );
        assert!(s.what.contains("not blamed: tracefs is busy"), "{}", s.what);
    }

    /// A blamed wake-up from idle under the audit's cpu:N load says what idle means there:
    /// the load's threads sleep between their wake-ups.
    #[test]
    fn idle_under_the_load_is_between_its_wake_ups() {
        let verdict = "the CPU stayed idle for 100% of the window: wake-up IPI, idle-state exit \
                       or switch path";
        let p = blamed(
            phase("cpu:2 on CPU 0-1", 1, 150 * US),
            140 * US,
            "idle",
            verdict,
        );
        let f = findings_of(&measured(vec![p], vec![quiet_noise()]));
        let s = get(&f, "measured.spike").unwrap();
        assert!(
            s.why
                .contains("the cpu:2 load runs there, but its threads sleep in usleep(1)"),
            "{}",
            s.why
        );
        let p = blamed(phase("idle", 1, 150 * US), 140 * US, "idle", verdict);
        let f = findings_of(&measured(vec![p], vec![quiet_noise()]));
        assert!(!get(&f, "measured.spike").unwrap().why.contains("usleep"));
    }

    /// Which findings an audit makes depends on what it measured, never on the figures:
    /// a quiet and a noisy measurement of the same phases have the same ids and
    /// subjects (the severities differ).
    #[test]
    fn the_ids_do_not_depend_on_the_figures() {
        let keys = |m: &Measured| {
            let mut k: Vec<(String, String)> = findings_of(m)
                .into_iter()
                .map(|f| (f.id, f.subject))
                .collect();
            k.sort();
            k
        };
        let quiet = measured(
            vec![phase("idle", 1, 30 * US), phase("cpu:2", 1, 40 * US)],
            vec![traced(
                quiet_noise(),
                &[
                    (NoiseKind::Vector, &["local_timer"]),
                    (NoiseKind::Vector, &["local_timer"]),
                ],
            )],
        );
        let mut loud_idle = halves("idle", 1, [8_520 * US, 1_150 * US]);
        loud_idle.interrupts[0]
            .counts
            .push(("IRQ 36 virtio1-req.0".into(), 900));
        let loud = measured(
            vec![
                blamed(
                    loud_idle,
                    2_700 * US,
                    "no_events",
                    "no events for 90% of the window",
                ),
                phase("cpu:2", 1, 5_100 * US),
            ],
            vec![traced(
                noise(1, 1_000 * MS, &[(10 * MS, 2 * MS), (600 * MS, 400 * US)]),
                &[(NoiseKind::NoEvents, &[]), (NoiseKind::Softirq, &["RCU"])],
            )],
        );
        assert_eq!(keys(&quiet), keys(&loud));
        let severities = |m: &Measured| {
            findings_of(m)
                .iter()
                .filter(|f| f.family == Family::Measured)
                .map(|f| f.severity)
                .max()
        };
        assert_eq!(severities(&quiet), Some(Severity::Info));
        assert_eq!(severities(&loud), Some(Severity::High));
    }
}
