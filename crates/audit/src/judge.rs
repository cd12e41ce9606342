//! Verdicts per RT CPU and ranked recommendations, from the findings alone.

use jitterlab_cpuset::CpuSet;
use jitterlab_host::audit::{Finding, FixKind, Severity};
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

fn weight(f: &Finding) -> (Severity, u64) {
    (f.severity, f.effect_ns.unwrap_or(0))
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

/// The verdict on each RT CPU, and the recommendations: the fixes of every finding
/// above `info`, one per distinct change (every boot option in one, since they take
/// one reboot; every IRQ move in `jitterlab isolate`), ranked: changes made on this
/// machine before those outside it (the hypervisor), then by the most severe finding
/// each removes, its largest effect, and how many findings.
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
            let found = recs.iter_mut().find(|r| r.kind == FixKind::Boot);
            match found {
                Some(r) => {
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
                None => recs.push(Recommendation {
                    rank: 0,
                    apply: params,
                    kind,
                    needs_reboot: true,
                    check,
                    severity: f.severity,
                    effect_ns: f.effect_ns,
                    resolves: vec![name],
                    cpus: f.cpus.clone(),
                }),
            }
            continue;
        }
        match recs.iter_mut().find(|r| r.apply == apply) {
            Some(r) => {
                r.severity = r.severity.max(f.severity);
                r.effect_ns = r.effect_ns.max(f.effect_ns);
                r.resolves.push(name);
                r.cpus = match (&r.cpus, &f.cpus) {
                    (Some(a), Some(b)) => Some(a.union(b)),
                    _ => None,
                };
            }
            None => recs.push(Recommendation {
                rank: 0,
                apply,
                kind,
                needs_reboot,
                check,
                severity: f.severity,
                effect_ns: f.effect_ns,
                resolves: vec![name],
                cpus: f.cpus.clone(),
            }),
        }
    }
    // What can be done on this machine first; then the most severe, the largest
    // effect, the most findings removed.
    let here = |r: &Recommendation| r.kind != FixKind::Host;
    recs.sort_by(|a, b| {
        (
            here(b),
            b.severity,
            b.effect_ns.unwrap_or(0),
            b.resolves.len(),
        )
            .cmp(&(
                here(a),
                a.severity,
                a.effect_ns.unwrap_or(0),
                a.resolves.len(),
            ))
    });
    for (i, r) in recs.iter_mut().enumerate() {
        r.rank = i as u32 + 1;
    }
    (verdicts, recs)
}

#[cfg(test)]
mod tests {
    use jitterlab_host::audit::Family;

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
