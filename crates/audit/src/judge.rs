//! Verdicts per RT CPU and ranked recommendations, from the findings alone.

use jitterlab_cpuset::CpuSet;
use jitterlab_host::lint::{Finding, FixKind, Severity};
use serde::Serialize;

use crate::model::{CpuVerdict, Verdict};

/// One change to make.
#[derive(Clone, Debug, Serialize)]
pub struct Recommendation {
    /// 1 is the most effective.
    pub rank: u32,
    /// The command, parameter or sysctl.
    pub apply: String,
    /// What kind of change.
    pub kind: FixKind,
    /// Whether it takes a reboot.
    pub needs_reboot: bool,
    /// How to check it after.
    pub check: String,
    /// The most severe finding it removes.
    pub severity: Severity,
    /// The largest effect of those findings, ns, where known.
    pub effect_ns: Option<u64>,
    /// The findings it removes (`id` or `id subject`).
    pub resolves: Vec<String>,
    /// The RT CPUs those findings concern (absent: the machine).
    pub cpus: Option<CpuSet>,
}

fn concerns(f: &Finding, cpu: u32) -> bool {
    f.cpus.as_ref().is_none_or(|c| c.contains(cpu))
}

/// How directly a finding bears on a real-time application on the RT CPU, highest
/// first: what a periodic real-time task suffered while the audit measured (its wake-up
/// latency, the blamed spike); what else was measured on the RT CPU (device interrupts,
/// noise, the host's stalls); the configuration that may add latency; notes that matter
/// to some workloads only (the throttling stops only a task that spins for most of a
/// second; limits an application may not need; the container; steal time since boot).
pub fn bearing(f: &Finding) -> u8 {
    match f.id.as_str() {
        "measured.latency" | "measured.spike" => 3,
        id if id.starts_with("measured.") => 2,
        "sched.rt_runtime" | "limits.rtprio" | "limits.memlock" | "env.container" | "env.steal" => {
            0
        }
        _ => 1,
    }
}

/// What ranks a finding: its severity, then how directly it bears on a real-time
/// application ([`bearing`]), then its effect.
fn weight(f: &Finding) -> (Severity, u8, u64) {
    (f.severity, bearing(f), f.effect_ns.unwrap_or(0))
}

/// The key a finding's fix is grouped under: moving one IRQ is part of the run-time
/// partition, which moves them all.
fn key(f: &Finding, rt: &CpuSet) -> Option<(String, FixKind, bool, String)> {
    let fix = f.fix.as_ref()?;
    if f.id == "irqs.on_rt_cpu" {
        return Some((
            format!("jitterlab isolate {rt}"),
            FixKind::Jitterlab,
            false,
            format!("jitterlab verify {rt}"),
        ));
    }
    Some((
        fix.apply.clone(),
        fix.kind,
        fix.needs_reboot,
        fix.check.clone(),
    ))
}

/// A boot fix's parameters, without the words after them: all the boot options go
/// into one recommendation (one reboot).
fn boot_params(apply: &str) -> &str {
    apply.split(" (").next().unwrap_or(apply).trim()
}

/// The verdict on each RT CPU (the limiting finding: the most severe, then the one that
/// bears most directly on a real-time application, then the largest effect), and the
/// recommendations: the fixes of every finding above `info`, one per distinct change
/// (every boot option in one, since they take one reboot; every IRQ move in `jitterlab
/// isolate`), ranked: changes made on this machine before those outside it (the
/// hypervisor), then by the most severe finding each removes, how directly the findings
/// it removes bear on a real-time application (what was measured before configuration
/// notes), its largest effect, and how many findings.
pub fn judge(rt: &CpuSet, findings: &[Finding]) -> (Vec<CpuVerdict>, Vec<Recommendation>) {
    let verdicts = rt
        .iter()
        .map(|cpu| {
            let here: Vec<&Finding> = findings.iter().filter(|f| concerns(f, cpu)).collect();
            let count = |s: Severity| here.iter().filter(|f| f.severity == s).count() as u32;
            let (high, medium, low) = (
                count(Severity::High),
                count(Severity::Medium),
                count(Severity::Low),
            );
            let verdict = if high > 0 {
                Verdict::Unfit
            } else if medium > 0 {
                Verdict::Tune
            } else {
                Verdict::Ready
            };
            let limiting = (verdict != Verdict::Ready)
                .then(|| here.iter().copied().max_by_key(|f| weight(f)))
                .flatten();
            CpuVerdict {
                cpu,
                verdict,
                limiting: limiting.map(|f| f.id.clone()),
                limiting_what: limiting.map(|f| f.what.clone()),
                high,
                medium,
                low,
            }
        })
        .collect();
    let mut recs: Vec<Recommendation> = Vec::new();
    // Per recommendation, the highest bearing of the findings it removes.
    let mut bearings: Vec<u8> = Vec::new();
    for f in findings.iter().filter(|f| f.severity > Severity::Info) {
        let Some((apply, kind, needs_reboot, check)) = key(f, rt) else {
            continue;
        };
        let name = if f.subject.is_empty() {
            f.id.clone()
        } else {
            format!("{} {}", f.id, f.subject)
        };
        if kind == FixKind::Boot {
            let params = boot_params(&apply).to_string();
            let found = recs.iter().position(|r| r.kind == FixKind::Boot);
            match found {
                Some(i) => {
                    bearings[i] = bearings[i].max(bearing(f));
                    let r = &mut recs[i];
                    if !r
                        .apply
                        .split(' ')
                        .any(|p| params.split(' ').any(|q| q == p))
                    {
                        r.apply = format!("{} {params}", r.apply);
                    }
                    r.severity = r.severity.max(f.severity);
                    r.effect_ns = r.effect_ns.max(f.effect_ns);
                    r.resolves.push(name);
                    r.cpus = match (&r.cpus, &f.cpus) {
                        (Some(a), Some(b)) => Some(a.union(b)),
                        _ => None,
                    };
                }
                None => {
                    bearings.push(bearing(f));
                    recs.push(Recommendation {
                        rank: 0,
                        apply: params,
                        kind,
                        needs_reboot: true,
                        check,
                        severity: f.severity,
                        effect_ns: f.effect_ns,
                        resolves: vec![name],
                        cpus: f.cpus.clone(),
                    })
                }
            }
            continue;
        }
        match recs.iter().position(|r| r.apply == apply) {
            Some(i) => {
                bearings[i] = bearings[i].max(bearing(f));
                let r = &mut recs[i];
                r.severity = r.severity.max(f.severity);
                r.effect_ns = r.effect_ns.max(f.effect_ns);
                r.resolves.push(name);
                r.cpus = match (&r.cpus, &f.cpus) {
                    (Some(a), Some(b)) => Some(a.union(b)),
                    _ => None,
                };
            }
            None => {
                bearings.push(bearing(f));
                recs.push(Recommendation {
                    rank: 0,
                    apply,
                    kind,
                    needs_reboot,
                    check,
                    severity: f.severity,
                    effect_ns: f.effect_ns,
                    resolves: vec![name],
                    cpus: f.cpus.clone(),
                })
            }
        }
    }
    // What can be done on this machine first; then the most severe, what bears most
    // directly on a real-time application, the largest effect, the most findings
    // removed.
    let here = |r: &Recommendation| r.kind != FixKind::Host;
    let mut ranked: Vec<(Recommendation, u8)> = recs.into_iter().zip(bearings).collect();
    ranked.sort_by(|(a, ab), (b, bb)| {
        (
            here(b),
            b.severity,
            *bb,
            b.effect_ns.unwrap_or(0),
            b.resolves.len(),
        )
            .cmp(&(
                here(a),
                a.severity,
                *ab,
                a.effect_ns.unwrap_or(0),
                a.resolves.len(),
            ))
    });
    let mut recs: Vec<Recommendation> = ranked.into_iter().map(|(r, _)| r).collect();
    for (i, r) in recs.iter_mut().enumerate() {
        r.rank = i as u32 + 1;
    }
    (verdicts, recs)
}

#[cfg(test)]
mod tests {
    use jitterlab_host::lint::Family;

    use super::*;

    fn rt() -> CpuSet {
        [1].into_iter().collect()
    }

    fn f(id: &str, severity: Severity, effect: Option<u64>) -> Finding {
        let x = Finding::new(id, Family::Scheduler, severity, id);
        match effect {
            Some(ns) => x.effect(ns),
            None => x,
        }
    }

    #[test]
    fn the_verdict_is_the_worst_severity_and_names_the_largest_effect() {
        let (v, _) = judge(&rt(), &[]);
        assert_eq!(
            (v[0].verdict, v[0].limiting.as_deref()),
            (Verdict::Ready, None)
        );
        let (v, _) = judge(
            &rt(),
            &[
                f("a", Severity::Medium, Some(5)),
                f("b", Severity::Medium, Some(50)),
                f("c", Severity::Low, Some(500)),
            ],
        );
        assert_eq!(
            (v[0].verdict, v[0].limiting.as_deref()),
            (Verdict::Tune, Some("b"))
        );
        assert_eq!((v[0].high, v[0].medium, v[0].low), (0, 2, 1));
        let (v, _) = judge(&rt(), &[f("a", Severity::High, None)]);
        assert_eq!(v[0].verdict, Verdict::Unfit);
        // A finding of another RT CPU does not concern this one.
        let other: CpuSet = [2].into_iter().collect();
        let (v, _) = judge(&rt(), &[f("a", Severity::High, None).cpus(&other)]);
        assert_eq!(v[0].verdict, Verdict::Ready);
    }

    /// What a real-time application suffered on the CPU ranks above configuration of
    /// the same severity, whatever its effect; notes that matter to some workloads
    /// only come last.
    #[test]
    fn what_the_application_suffered_limits_before_configuration() {
        let measured = |id: &str, severity, effect| {
            let mut x = f(id, severity, Some(effect));
            x.family = Family::Measured;
            x
        };
        let (v, _) = judge(
            &rt(),
            &[
                f("env.hypervisor", Severity::Medium, Some(2_000_000)),
                measured("measured.latency", Severity::Medium, 640_000),
                measured("measured.device_irqs", Severity::Medium, 0),
            ],
        );
        assert_eq!(v[0].limiting.as_deref(), Some("measured.latency"));
        let (v, _) = judge(
            &rt(),
            &[
                f("env.hypervisor", Severity::Medium, Some(2_000_000)),
                measured("measured.device_irqs", Severity::Medium, 0),
            ],
        );
        assert_eq!(v[0].limiting.as_deref(), Some("measured.device_irqs"));
        let (v, _) = judge(
            &rt(),
            &[
                f("sched.rt_runtime", Severity::Low, Some(50_000_000)),
                f("sched.timer_migration", Severity::Low, None),
            ],
        );
        assert_eq!(v[0].limiting, None, "low: ready");
        let (v, _) = judge(
            &rt(),
            &[
                f("sched.rt_runtime", Severity::Medium, Some(50_000_000)),
                f("sched.workqueue", Severity::Medium, None),
            ],
        );
        assert_eq!(v[0].limiting.as_deref(), Some("sched.workqueue"));
        // The fix of what was measured first, then configuration, then notes.
        let (_, recs) = judge(
            &rt(),
            &[
                f("sched.rt_runtime", Severity::Medium, Some(50_000_000)).fix(
                    FixKind::Sysctl,
                    "sysctl -w rt=-1",
                    "sysctl rt",
                ),
                f("sched.workqueue", Severity::Medium, Some(9_000)).fix(
                    FixKind::Jitterlab,
                    "jitterlab isolate 1",
                    "verify",
                ),
                measured("measured.spike", Severity::Medium, 400).fix(
                    FixKind::Boot,
                    "preempt=full",
                    "reboot",
                ),
            ],
        );
        let applies: Vec<&str> = recs.iter().map(|r| r.apply.as_str()).collect();
        assert_eq!(
            applies,
            ["preempt=full", "jitterlab isolate 1", "sysctl -w rt=-1"]
        );
    }

    #[test]
    fn boot_options_go_in_one_recommendation_and_the_host_comes_last() {
        let findings = [
            f("a", Severity::Medium, None).fix(FixKind::Boot, "preempt=full", "reboot"),
            f("b", Severity::Low, None).fix(FixKind::Boot, "skew_tick=1 (the ticks)", "reboot"),
            f("h", Severity::High, Some(9)).fix(FixKind::Host, "bare metal", "audit"),
            f("s", Severity::Low, None).fix(FixKind::Sysctl, "sysctl -w x=0", "sysctl x"),
            f("i", Severity::Info, None).fix(FixKind::Sysctl, "sysctl -w y=0", "sysctl y"),
        ];
        let (_, recs) = judge(&rt(), &findings);
        let applies: Vec<&str> = recs.iter().map(|r| r.apply.as_str()).collect();
        assert_eq!(
            applies,
            ["preempt=full skew_tick=1", "sysctl -w x=0", "bare metal"]
        );
        assert_eq!(recs[0].resolves, ["a", "b"]);
        assert!(recs[0].needs_reboot);
        assert_eq!(recs.iter().map(|r| r.rank).collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn irq_moves_are_one_isolate() {
        let irq = |n: u32| {
            f("irqs.on_rt_cpu", Severity::Medium, None)
                .subject(format!("IRQ {n}"))
                .fix(
                    FixKind::Jitterlab,
                    format!("jitterlab irq set {n} 0"),
                    "verify",
                )
        };
        let (_, recs) = judge(&rt(), &[irq(26), irq(38)]);
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].apply, "jitterlab isolate 1");
        assert_eq!(
            recs[0].resolves,
            ["irqs.on_rt_cpu IRQ 26", "irqs.on_rt_cpu IRQ 38"]
        );
    }
}
