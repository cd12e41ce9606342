//! `isolate` (plan and apply), `verify`, `revert`, `run` and `advise` on a copy of the
//! 2-CPU VM tree, changed only through the host crate's fake system.

use std::path::Path;

use jitterlab_cpuset::CpuSet;
use jitterlab_host::partition::{
    advise, apply, build_plan, revert, verify, Exclude, FakeSystem, Flow, Header, Journal, Method,
    MethodChoice, Placement, Request, VerifyRequest,
};
use jitterlab_host::Root;

use crate::{check, json, text, vm2, workspace};

fn list(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

/// Copies a directory tree.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

/// The text with the temporary directory's path replaced by `[TREE]`.
fn redact(s: String, dir: &Path) -> String {
    s.replace(&dir.display().to_string(), "[TREE]")
}

fn request(state_dir: &Path) -> Request {
    Request {
        cpus: list("1"),
        method: MethodChoice::Auto,
        excludes: vec![Exclude::parse("qemu*").unwrap()],
        move_init: false,
        stop_irqbalance: false,
        sysctl: false,
        idle_latency_us: None,
        state_dir: state_dir.to_path_buf(),
        privileged: true,
    }
}

#[test]
fn plan_apply_verify_revert() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("vm2");
    copy_tree(&workspace("host/tests/fixtures/vm2"), &tree);
    let root = Root::at(&tree);
    let state = dir.path().join("run/jitterlab");
    let both = |name: &str, text_: String, json_: String| {
        check(&format!("{name}.text"), &redact(text_, dir.path()));
        check(&format!("{name}.json"), &redact(json_, dir.path()));
    };

    let plan = build_plan(&root, &request(&state)).unwrap();
    both("isolate_plan", text(&plan), json(&plan));

    let vreq = VerifyRequest {
        cpus: Some(list("1")),
        interval: std::time::Duration::ZERO,
        state_dir: state.clone(),
    };
    let before = verify(&root, &vreq).unwrap();
    both("verify_before", text(&before), json(&before));

    assert!(plan.ok(), "{:?}", plan.checks);
    let mut fake = FakeSystem::new(root.clone()).unwrap();
    fake.refuse_irqs = vec![36];
    let mut journal = Journal::create(&state, &Header::for_plan(&root, &plan).unwrap()).unwrap();
    let mut applied = apply(&mut fake, &plan, &mut journal, &mut |_| Flow::Continue);
    // Times measured while applying: fixed.
    applied.elapsed_ns = 56_000_000;
    for (i, r) in applied.results.iter_mut().enumerate() {
        r.took_ns = 1_000 * (i as u64 + 1);
    }
    both("isolate_apply", text(&applied), json(&applied));

    let after = verify(&root, &VerifyRequest { cpus: None, ..vreq }).unwrap();
    both("verify_after", text(&after), json(&after));

    let mut reverted = revert(&mut fake, &state).unwrap();
    // This test's pid and the time taken: fixed.
    if let Some(r) = reverted.as_mut() {
        r.isolated_by = 4242;
        r.elapsed_ns = 148_000_000;
    }
    both("revert", text(&reverted), json(&reverted));
    let nothing = revert(&mut fake, &state).unwrap();
    both("revert_nothing", text(&nothing), json(&nothing));
}

#[test]
fn advice() {
    let a = advise(&vm2(), &list("1")).unwrap();
    crate::both("advise", &a);
}

#[test]
fn run_placement() {
    crate::both(
        "run",
        &Placement {
            cpus: list("1"),
            method: Some(Method::Cgroup1),
            cgroup: Some("/sys/fs/cgroup/cpuset/jitterlab.isolated".into()),
            how: "in cpuset jitterlab.isolated".into(),
        },
    );
}
