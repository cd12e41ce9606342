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
