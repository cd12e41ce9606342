//! What changed between two audits: findings gone, findings new, verdicts changed.

use serde::Serialize;
use serde_json::Value;

use crate::model::AuditReport;
use crate::Error;

/// A finding as two audits are compared by: its id and subject.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FindingKey {
    /// The id.
    pub id: String,
    /// What it is about (`IRQ 36`), or empty.
    pub subject: String,
    /// Its severity (`low`, `medium`, `high`, `info`).
    pub severity: String,
    /// Its line.
    pub what: String,
}

/// A verdict that changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VerdictChange {
    /// The CPU.
    pub cpu: u32,
    /// Before (absent: not an RT CPU then).
    pub before: Option<String>,
    /// Now (absent: not an RT CPU now).
    pub now: Option<String>,
}

/// The difference between an old audit and this one.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The old audit's file.
    pub old: String,
    /// Findings of the old audit this one no longer has.
    pub gone: Vec<FindingKey>,
    /// Findings this one has and the old did not.
    pub new: Vec<FindingKey>,
    /// How many findings both have.
    pub kept: usize,
    /// Verdicts that changed.
    pub verdicts: Vec<VerdictChange>,
}

fn keys(findings: &Value) -> Vec<FindingKey> {
    findings
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| {
                    let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    FindingKey {
                        id: s("id"),
                        subject: s("subject"),
                        severity: s("severity"),
                        what: s("what"),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

fn verdicts(v: &Value) -> Vec<(u32, String)> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| {
                    Some((
                        u32::try_from(c.get("cpu")?.as_u64()?).ok()?,
                        c.get("verdict")?.as_str()?.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Compares the audit `now` with `old`, the text of a `jitterlab audit --json` file
/// (`old_name` names it in the result).
pub fn compare(old_name: &str, old: &str, now: &AuditReport) -> Result<Comparison, Error> {
    let old: Value = serde_json::from_str(old)
        .map_err(|e| Error::Compare(format!("{old_name}: not JSON: {e}")))?;
    if old.get("schema").and_then(Value::as_str) != Some("jitterlab.audit") {
        return Err(Error::Compare(format!(
            "{old_name}: not a jitterlab audit (its schema is not jitterlab.audit)"
        )));
    }
    // Its version and shape, before any finding is compared: a result of another
    // version, or without its findings, would make every finding look new.
    match old.get("version").and_then(Value::as_u64) {
        Some(1) => {}
        v => {
            return Err(Error::Compare(format!(
                "{old_name}: \"version\": {}; this jitterlab compares jitterlab.audit version 1",
                v.map_or_else(|| "missing".to_string(), |v| v.to_string())
            )))
        }
    }
    let data = &old["data"];
    for field in ["findings", "verdicts"] {
        if !data.get(field).is_some_and(Value::is_array) {
            return Err(Error::Compare(format!(
                "{old_name}: \"data.{field}\": missing or not an array; expected a result of `jitterlab audit --json`"
            )));
        }
    }
    let now_json = serde_json::to_value(now).map_err(|e| Error::Compare(e.to_string()))?;
    let (before, after) = (keys(&data["findings"]), keys(&now_json["findings"]));
    let same = |a: &FindingKey, b: &FindingKey| a.id == b.id && a.subject == b.subject;
    let gone: Vec<FindingKey> = before
        .iter()
        .filter(|b| !after.iter().any(|a| same(a, b)))
        .cloned()
        .collect();
    let new: Vec<FindingKey> = after
        .iter()
        .filter(|a| !before.iter().any(|b| same(a, b)))
        .cloned()
        .collect();
    let kept = after.len() - new.len();
    let (vb, va) = (verdicts(&data["verdicts"]), verdicts(&now_json["verdicts"]));
    let mut cpus: Vec<u32> = vb.iter().chain(&va).map(|v| v.0).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let find = |v: &[(u32, String)], c: u32| v.iter().find(|x| x.0 == c).map(|x| x.1.clone());
    let verdicts = cpus
        .into_iter()
        .filter_map(|c| {
            let (b, a) = (find(&vb, c), find(&va, c));
            (b != a).then_some(VerdictChange {
                cpu: c,
                before: b,
                now: a,
            })
        })
        .collect();
    Ok(Comparison {
        old: old_name.to_string(),
        gone,
        new,
        kept,
        verdicts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Verdict;

    fn now() -> AuditReport {
        AuditReport {
            rt_cpus: jitterlab_cpuset::CpuSet::parse_list("1").unwrap(),
            rt_cpus_from: "--cpus".into(),
            housekeeping: jitterlab_cpuset::CpuSet::parse_list("0").unwrap(),
            mode: "static".into(),
            kernel: "6.18".into(),
            hostname: None,
            start_wall_ns: 0,
            kernel_config: None,
            verdict: Verdict::Ready,
            verdicts: Vec::new(),
            recommendations: Vec::new(),
            findings: Vec::new(),
            measured: None,
            needs_root: Vec::new(),
            wall_ns: 0,
            compare: None,
        }
    }

    #[test]
    fn an_old_audit_of_another_version_or_without_findings_is_refused() {
        let ok = r#"{"schema": "jitterlab.audit", "version": 1, "data": {"findings": [], "verdicts": []}}"#;
        assert!(compare("old.json", ok, &now()).is_ok());
        for (text, says) in [
            (
                r#"{"schema": "jitterlab.audit", "version": 2, "data": {"findings": [], "verdicts": []}}"#,
                "\"version\": 2",
            ),
            (
                r#"{"schema": "jitterlab.audit", "data": {"findings": [], "verdicts": []}}"#,
                "\"version\": missing",
            ),
            (
                r#"{"schema": "jitterlab.audit", "version": 1, "data": null}"#,
                "\"data.findings\"",
            ),
            (
                r#"{"schema": "jitterlab.audit", "version": 1, "data": {"findings": []}}"#,
                "\"data.verdicts\"",
            ),
            (
                r#"{"schema": "jitterlab.latency", "version": 1, "data": {}}"#,
                "not a jitterlab audit",
            ),
        ] {
            let e = compare("old.json", text, &now()).unwrap_err().to_string();
            assert!(e.contains("old.json") && e.contains(says), "{text}: {e}");
        }
    }
}
