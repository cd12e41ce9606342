//! `jitterlab audit`, static, on the audit fixture trees of the host crate: this VM
//! untuned (audit-vm2) and a made-up tuned 16-CPU machine whose isolation options
//! disagree (audit-rt16); and the comparison of the two.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use jitterlab_audit::{audit, AuditReport, AuditRequest, Mode};
use jitterlab_host::Root;

use crate::{both, check, text, workspace};

fn static_audit(tree: &str, cpus: Option<&str>) -> AuditReport {
    let root = Root::at(workspace(&format!("host/tests/fixtures/{tree}")));
    let req = AuditRequest {
        cpus: cpus.map(|c| jitterlab_cpuset::CpuSet::parse_list(c).unwrap()),
        mode: Mode::Static,
        compare: None,
        keep_traces: None,
    };
    let mut r = audit(&root, &req, &Arc::new(AtomicBool::new(false)), |_| {}).unwrap();
    r.wall_ns = 0; // the only figure that changes from run to run
    r
}

#[test]
fn audit_vm2() {
    both("audit-vm2", &static_audit("audit-vm2", None));
}

#[test]
fn audit_rt16() {
    both("audit-rt16", &static_audit("audit-rt16", None));
}

#[test]
fn audit_compared() {
    let old = static_audit("audit-vm2", Some("1"));
    let old_json = crate::json(&old);
    let mut now = static_audit("audit-irqbalance", Some("1"));
    now.compare = Some(jitterlab_audit::compare("before.json", &old_json, &now).unwrap());
    let t = text(&now);
    let tail = &t[t.find("compared with").unwrap()..];
    check("audit-compare.text", tail);
}
