//! `jitterlab audit` on this machine: a quick audit of CPU 1 names the managed virtio
//! block IRQ with the isolcpus=managed_irq fix, the kernel that is not PREEMPT_RT and
//! the hypervisor, and measures; after `jitterlab isolate 1` a second audit has lost the
//! IRQ and task findings of CPU 1 and `--compare` lists them. A guard reverts the
//! partition however the test ends. The static audit of the fixture tree needs no root.

use std::path::Path;

use jitterlab_host::partition::Snapshot;
use jitterlab_host::Root;
use serde_json::Value;

use crate::util::{host_lock, is_root, run, skip, stderr};

/// Reverts the partition and writes back anything that still differs.
struct Restore {
    state: tempfile::TempDir,
    before: Snapshot,
}

impl Drop for Restore {
    fn drop(&mut self) {
        jitterlab_host::testing::restore(
            &self.before,
            Some(&self.state.path().join("jitterlab")),
            &["jitterlab.isolated", "jitterlab.housekeeping"],
        );
    }
}

fn data(path: &Path) -> Value {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(v["schema"], "jitterlab.audit");
    v["data"].clone()
}

fn has(findings: &Value, id: &str) -> bool {
    findings.as_array().unwrap().iter().any(|f| f["id"] == id)
}

#[test]
fn static_audit_of_the_fixture_tree() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../host/tests/fixtures/audit-vm2");
    let out = run(&["--root", root.to_str().unwrap(), "audit", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = &v["data"];
    assert_eq!(
        (d["mode"].as_str(), d["verdict"].as_str()),
        (Some("static"), Some("tune"))
    );
    assert!(d["measured"].is_null());
    assert!(has(&d["findings"], "irqs.managed"));
}

/// Without `--verbose` the audit is a screen that ends with its verdict's meaning and
/// exit status; `--verbose` adds every finding with its evidence and ends the same way.
#[test]
fn audit_prints_a_screen_and_the_rest_with_verbose() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../host/tests/fixtures/audit-vm2");
    let text = |extra: &[&str]| {
        let mut args = vec!["--root", root.to_str().unwrap(), "audit"];
        args.extend(extra);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let (short, long) = (text(&[]), text(&["--verbose"]));
    assert!(short.lines().count() <= 40, "{short}");
    assert!(!short.contains("\nfindings\n"), "{short}");
    assert!(long.contains("\nfindings\n") && long.lines().count() > 100);
    for t in [&short, &long] {
        let tail: Vec<&str> = t.lines().rev().take(4).collect();
        assert!(
            tail.iter()
                .any(|l| l.contains("Exit status 0 (3 when an RT CPU is unfit)")),
            "{tail:?}"
        );
    }
    assert!(short.contains("jitterlab audit --verbose"), "{short}");
}

#[test]
fn audit_then_isolate_then_compare() {
    let _lock = host_lock();
    if !is_root() {
        return skip(
            "audit_then_isolate_then_compare: needs root (it measures and isolates CPU 1)",
        );
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if online.trim() == "0" {
        return skip("needs two online CPUs");
    }
    let restore = Restore {
        state: tempfile::tempdir().unwrap(),
        before: Snapshot::read(&Root::live()).unwrap(),
    };
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (
        dir.path().join("before.json"),
        dir.path().join("after.json"),
    );
    let t0 = std::time::Instant::now();
    let out = run(&[
        "audit",
        "--quick",
        "--cpus",
        "1",
        &format!("--json={}", before.display()),
        "--html",
        dir.path().join("audit.html").to_str().unwrap(),
    ]);
    let took = t0.elapsed();
    eprintln!("audit --quick took {took:?}");
    assert!(matches!(out.status.code(), Some(0 | 3)), "{}", stderr(&out));
    assert!(took.as_secs() < 60, "{took:?}");
    let d = data(&before);
    assert_eq!(d["mode"], "quick");
    // Measured: both latency phases on CPU 1 and the noise probe of CPU 1.
    assert_eq!(d["measured"]["latency"].as_array().unwrap().len(), 2);
    assert_eq!(d["measured"]["noise"][0]["cpu"], 1);
    // The flight recorder's trace of each phase, its worst probe wake-up blamed: a cause
    // and a verdict line, and a measured.spike finding naming them.
    let phases = d["measured"]["latency"].as_array().unwrap();
    assert_eq!(phases[0]["load"], "idle");
    let causes = ["task", "interrupts", "no_events", "idle", "spread"];
    let mut blamed = 0;
    for p in phases {
        let b = &p["blamed"];
        if b.is_null() {
            // Why not, said (a probe wake-up before its priority was the trace's worst).
            assert!(p["blame_note"].is_string(), "{p}");
            continue;
        }
        blamed += 1;
        assert!(causes.contains(&b["cause"].as_str().unwrap()), "{b}");
        assert!(!b["verdict"].as_str().unwrap().is_empty(), "{b}");
        assert_eq!(b["cpu"], 1);
        let subject = format!("CPU 1, {}", p["load"].as_str().unwrap());
        let f = d["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == "measured.spike" && f["subject"] == subject.as_str())
            .unwrap_or_else(|| panic!("no measured.spike for {subject}: {}", d["findings"]));
        assert!(f["what"]
            .as_str()
            .unwrap()
            .contains(b["verdict"].as_str().unwrap()));
    }
    assert!(blamed > 0, "no phase blamed: {phases:?}");
    let interrupts = std::fs::read_to_string("/proc/interrupts").unwrap();
    let managed = interrupts
        .lines()
        .find(|l| l.trim_end().ends_with("virtio1-req.0"));
    if let Some(line) = managed {
        let irq = line.split(':').next().unwrap().trim().to_string();
        let f = d["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == "irqs.managed" && f["subject"] == format!("IRQ {irq}"));
        // On CPU 1 unless it was delivered elsewhere when the audit ran.
        let eff =
            std::fs::read_to_string(format!("/proc/irq/{irq}/effective_affinity_list")).unwrap();
        if eff.trim() == "1" {
            let f = f.unwrap_or_else(|| panic!("IRQ {irq} not named: {}", d["findings"]));
            assert_eq!(f["fix"]["apply"], "isolcpus=managed_irq,domain,1");
            assert_eq!(f["needs_reboot"], true);
        }
    }
    let version = std::fs::read_to_string("/proc/version").unwrap();
    assert_eq!(
        has(&d["findings"], "kernel.preempt_rt"),
        !version.contains("PREEMPT_RT")
    );
    // The noise window as the trace of CPU 1 saw it: every gap accounted for, the
    // traced handlers inside the gaps.
    let noise = &d["measured"]["noise"][0];
    let account = &noise["traced"];
    assert!(account.is_object(), "no account: {}", noise["trace_note"]);
    let by_cause: u64 = account["by_cause"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["ns"].as_u64().unwrap())
        .sum();
    assert_eq!(by_cause, noise["noise_ns"].as_u64().unwrap());
    let (traced, inside) = (
        account["traced_ns"].as_u64().unwrap(),
        account["traced_in_gaps_ns"].as_u64().unwrap(),
    );
    assert!(inside * 10 >= traced * 9, "{inside} of {traced} ns in gaps");
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    if cpuinfo.contains(" hypervisor") {
        assert!(has(&d["findings"], "env.hypervisor"));
        // The host stalls: gaps of the noise probe with no event in the trace of the
        // CPU (a VM's host exits alone make hundreds a second here).
        assert!(
            has(&d["findings"], "measured.host_stall"),
            "no host stall named: {}",
            account["by_cause"]
        );
    }
    // The traces were kept beside the page, each with its own report, and the JSON
    // names them relative to the page.
    for (phase, file) in [
        (&phases[0], "audit-traces/idle.dat"),
        (&phases[1], "audit-traces/loaded.dat"),
        (noise, "audit-traces/noise-cpu1.dat"),
    ] {
        assert_eq!(phase["trace"], file, "{phase}");
        assert!(dir.path().join(file).is_file(), "{file}");
        assert!(
            dir.path().join(format!("{file}.html")).is_file(),
            "{file}.html"
        );
    }
    assert!(has(&d["findings"], "sched.user_threads"));

    let state = restore.state.path().join("jitterlab");
    let out = run(&["isolate", "1", "--state-dir", state.to_str().unwrap()]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let out = run(&[
        "audit",
        "--quick",
        "--cpus",
        "1",
        "--compare",
        before.to_str().unwrap(),
        &format!("--json={}", after.display()),
    ]);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{}", stderr(&out));
    let a = data(&after);
    for id in [
        "irqs.on_rt_cpu",
        "sched.user_threads",
        "sched.workqueue",
        "sched.partition",
    ] {
        assert!(
            !has(&a["findings"], id),
            "{id} still there after isolate: {}",
            a["findings"]
        );
    }
    let gone: Vec<String> = a["compare"]["gone"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["id"].as_str().unwrap().to_string())
        .collect();
    for id in ["sched.user_threads", "sched.workqueue", "sched.partition"] {
        assert!(
            gone.iter().any(|g| g == id),
            "{id} not listed as gone: {gone:?}"
        );
    }
    if has(&d["findings"], "irqs.on_rt_cpu") {
        assert!(gone.iter().any(|g| g == "irqs.on_rt_cpu"), "{gone:?}");
    }
    let out = run(&["revert", "--state-dir", state.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    drop(restore);
}

/// The finding ids of an audit, sorted, each once.
fn ids(d: &Value) -> Vec<String> {
    let mut v: Vec<String> = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The measured findings by id and subject, sorted.
fn measured_keys(d: &Value) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["family"] == "measured")
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                f["subject"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Two quick audits of this machine a few seconds apart make the same findings. Not a
/// race between them: an audit makes its measured findings from what it measured (one
/// of each per RT CPU and phase, `info` when there is nothing to worry about), never
/// from the figures, which a VM's host moves from run to run; the static ones read the
/// machine, which the host lock keeps still. Each finding that rests on one half of its
/// window says so.
#[test]
fn two_quick_audits_make_the_same_findings() {
    let _lock = host_lock();
    if !is_root() {
        return skip("two_quick_audits_make_the_same_findings: needs root (it measures CPU 1)");
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if online.trim() == "0" {
        return skip("needs two online CPUs");
    }
    let dir = tempfile::tempdir().unwrap();
    let audit = |name: &str| {
        let path = dir.path().join(name);
        let out = run(&[
            "audit",
            "--quick",
            "--cpus",
            "1",
            &format!("--json={}", path.display()),
        ]);
        assert!(matches!(out.status.code(), Some(0 | 3)), "{}", stderr(&out));
        data(&path)
    };
    let first = audit("first.json");
    std::thread::sleep(std::time::Duration::from_secs(3));
    let second = audit("second.json");
    assert_eq!(ids(&first), ids(&second));
    assert_eq!(measured_keys(&first), measured_keys(&second));
    for d in [&first, &second] {
        let keys = measured_keys(d);
        let count = |id: &str| keys.iter().filter(|k| k.0 == id).count();
        assert_eq!(
            (
                count("measured.latency"),
                count("measured.noise"),
                count("measured.device_irqs"),
                count("measured.host_stall") + count("measured.silent_gap"),
                count("measured.spike"),
            ),
            (1, 1, 1, 1, 2),
            "{keys:?}"
        );
        for f in d["findings"].as_array().unwrap() {
            if f["noise_bound"] == true {
                assert_eq!(f["family"], "measured", "{f}");
                let said = f["what"].as_str().unwrap().contains("noise-bound")
                    || f["why"].as_str().unwrap().contains("noise-bound");
                assert!(said, "a noise-bound finding that does not say so: {f}");
            }
        }
    }
}
