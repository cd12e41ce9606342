//! Core partitioning on this machine, end to end: isolate CPU 1, check that no
//! movable thread or IRQ may still run there (but the command started with
//! `run`), verify, revert, compare with the state before; the same with the
//! isolating process killed halfway (SIGKILL) and cancelled (SIGINT). A test
//! that fails still leaves the machine as it found it: a guard reverts the
//! journal and, failing that, writes the snapshot back. The plan and the views
//! on the fixture tree need no root.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use jitterlab_cpuset::CpuSet;
use jitterlab_host::partition::{Journal, Snapshot};
use jitterlab_host::tasks::TaskKind;
use jitterlab_host::{read_tasks, Root, TaskQuery};

use crate::util::{
    self, host_lock, json_data, json_envelope, run, run_vm2, skip, stderr, stdout, Restore, CPUSET,
};

/// The guard of this file's tests: `isolate --state-dir STATE/jitterlab`.
fn guard() -> Restore {
    Restore::new("jitterlab")
}

fn live_ok(name: &str) -> bool {
    util::live_ok(name, "it isolates CPU 1 of this machine")
}

fn list(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

/// The threads that may still run on CPU 1 and should not: movable, not PID 1,
/// not in the isolated cpuset (started with `run`), and not a process started
/// after isolate by PID 1 (which isolate never touches).
fn movable_on_cpu1(since_ticks: u64) -> Vec<String> {
    let tasks = read_tasks(&Root::live(), TaskQuery::all_threads()).unwrap();
    let procs: HashMap<u32, (u32, u64)> = tasks
        .iter()
        .filter(|t| t.tid == t.pid)
        .map(|t| (t.pid, (t.ppid, t.start_ticks)))
        .collect();
    // Started after isolate, and so were all its ancestors up to PID 1.
    let new_under_init = |pid: u32| {
        let mut p = pid;
        for _ in 0..64 {
            match procs.get(&p) {
                Some(&(ppid, start)) if start >= since_ticks => {
                    if ppid == 1 {
                        return true;
                    }
                    p = ppid;
                }
                _ => return false,
            }
        }
        false
    };
    tasks
        .iter()
        .filter(|t| t.allowed.contains(1) && t.pid != 1)
        .filter(|t| matches!(t.kind, TaskKind::User | TaskKind::KthreadMovable))
        .filter(|t| t.cpuset.as_deref() != Some("/jitterlab.isolated"))
        .filter(|t| !new_under_init(t.pid))
        .map(|t| format!("{} pid {} tid {} CPUs {}", t.comm, t.pid, t.tid, t.allowed))
        .collect()
}

fn irqs_on_cpu1(refused: &[u64]) -> Vec<String> {
    let root = Root::live();
    root.list_numeric("/proc/irq")
        .unwrap()
        .into_iter()
        .filter(|n| !refused.contains(&u64::from(*n)))
        .filter_map(|n| {
            let a = root
                .read_cpu_list_opt(format!("/proc/irq/{n}/smp_affinity_list"))
                .ok()??;
            a.contains(1).then(|| format!("IRQ {n}: {a}"))
        })
        .collect()
}

fn refused_irqs(data: &serde_json::Value) -> Vec<u64> {
    data["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["outcome"] == "refused")
        .filter_map(|r| r["irq"]["irq"].as_u64())
        .collect()
}

fn assert_as_before(guard: &Restore, what: &str) {
    let now = Snapshot::read(&Root::live()).unwrap();
    let diff = guard.before.diff(&now);
    assert!(diff.is_empty(), "{what}: {diff:?}");
    assert!(!Path::new(&format!("{CPUSET}/jitterlab.isolated")).exists());
    assert!(!Path::new(&format!("{CPUSET}/jitterlab.housekeeping")).exists());
    assert!(!Journal::exists(&guard.dir()), "{what}: journal left");
}

#[test]
fn isolate_verify_run_revert() {
    if !live_ok("isolate_verify_run_revert") {
        return;
    }
    let _lock = host_lock();
    let mut guard = guard();
    // A process of ours from before: it must move, and come back.
    let sleeper = Command::new("sleep").arg("120").spawn().unwrap();
    let sleeper_pid = sleeper.id();
    guard.children.push(sleeper);

    let o = run(&["isolate", "1", "--state-dir", &guard.arg(), "--json"]);
    let data = json_data(&o, "jitterlab.isolate");
    assert_eq!(data["applied"], true, "{}", stderr(&o));
    assert_eq!(data["plan"]["cpus"], "1");
    assert!(data["plan"]["excluded"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("PID 1 is left alone unless --move-init"));
    // Managed IRQs (the virtio block queue on the CI VM) refuse, with the remedy.
    let refused = refused_irqs(&data);
    for r in data["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["outcome"] == "refused")
    {
        assert!(
            r["remedy"]
                .as_str()
                .unwrap()
                .contains("isolcpus=managed_irq,domain,1"),
            "{r}"
        );
    }
    let rec = Journal::read(&guard.dir()).unwrap().expect("journal");
    assert!(rec.complete);
    let since = rec.header.start_ticks;

    let root = Root::live();
    assert_eq!(
        root.read_cpu_mask("/proc/irq/default_smp_affinity")
            .unwrap(),
        list("0")
    );
    assert_eq!(
        root.read_cpu_mask("/sys/devices/virtual/workqueue/cpumask")
            .unwrap(),
        list("0")
    );
    assert_eq!(
        root.read_line(format!("{CPUSET}/jitterlab.isolated/cpuset.cpus"))
            .unwrap(),
        "1"
    );
    assert_eq!(
        root.read_line(format!("{CPUSET}/cpuset.sched_load_balance"))
            .unwrap(),
        "0"
    );
    assert_eq!(
        jitterlab_host::sched::get_affinity(sleeper_pid).unwrap(),
        list("0")
    );
    let stray = movable_on_cpu1(since);
    assert!(
        stray.is_empty(),
        "movable threads may still run on CPU 1: {stray:?}"
    );
    let stray = irqs_on_cpu1(&refused);
    assert!(stray.is_empty(), "IRQs may still go to CPU 1: {stray:?}");

    // The application, started inside the partition.
    let app = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args([
            "run",
            "--cpus",
            "1",
            "--state-dir",
            &guard.arg(),
            "--",
            "sleep",
            "60",
        ])
        .spawn()
        .unwrap();
    let app_pid = app.id();
    guard.children.push(app);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(format!("/proc/{app_pid}/comm"))
        .unwrap_or_default()
        .trim()
        != "sleep"
    {
        assert!(Instant::now() < deadline, "run never exec'd its command");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        jitterlab_host::sched::get_affinity(app_pid).unwrap(),
        list("1")
    );
    let cg = std::fs::read_to_string(format!("/proc/{app_pid}/cgroup")).unwrap();
    assert!(cg.contains(":cpuset:/jitterlab.isolated"), "{cg}");
    let stray = movable_on_cpu1(since);
    assert!(stray.is_empty(), "{stray:?}");

    let o = run(&[
        "verify",
        "--state-dir",
        &guard.arg(),
        "--interval",
        "500ms",
        "--json",
    ]);
    let v = json_envelope(&o, "jitterlab.verify");
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(v["cpus"], "1");
    let cpu1 = &v["verdicts"][0];
    assert_ne!(cpu1["verdict"], "not_isolated", "{cpu1:#}");
    let app_seen = cpu1["allowed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["pid"] == app_pid)
        .unwrap();
    assert_eq!(app_seen["class"], "user");
    assert_eq!(v["partition"]["runs"][0]["pid"], app_pid);
    for irq in &refused {
        let f = cpu1["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["what"].as_str().unwrap().contains(&format!("IRQ {irq} ")))
            .unwrap();
        assert!(
            f["what"].as_str().unwrap().contains("managed") || f["level"] == "info",
            "{f}"
        );
    }
    // A second isolate is refused while this one stands.
    let o = run(&["isolate", "1", "--state-dir", &guard.arg()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).contains("run `jitterlab revert` first"),
        "{}",
        stdout(&o)
    );

    let o = run(&["revert", "--state-dir", &guard.arg(), "--json"]);
    let r = json_data(&o, "jitterlab.revert");
    assert_eq!(r["apply_complete"], true);
    assert_eq!(r["differences"].as_array().unwrap().len(), 0, "{r:#}");
    assert_eq!(
        jitterlab_host::sched::get_affinity(sleeper_pid).unwrap(),
        list("0-1")
    );
    // The command started inside went back to the root cpuset with the rest.
    let cg = std::fs::read_to_string(format!("/proc/{app_pid}/cgroup")).unwrap();
    assert!(cg.contains(":cpuset:/\n"), "{cg}");
    assert_as_before(&guard, "after revert");
    let o = run(&["revert", "--state-dir", &guard.arg()]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("nothing to revert"), "{}", stdout(&o));
}

/// Starts `isolate 1` that pauses after `steps` steps; returns when it has.
fn paused_isolate(guard: &Restore, steps: usize) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args(["isolate", "1", "--state-dir", &guard.arg()])
        .env("JITTERLAB_TEST_PAUSE_AFTER_STEPS", steps.to_string())
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(
        line.contains(&format!("paused after {steps} steps")),
        "{line:?}"
    );
    child
}

#[test]
fn killed_halfway_then_reverted() {
    if !live_ok("killed_halfway_then_reverted") {
        return;
    }
    let _lock = host_lock();
    // In the cpuset set-up, among the IRQs, and among the threads.
    for steps in [6, 20, 60] {
        let guard = guard();
        let mut child = paused_isolate(&guard, steps);
        child.kill().unwrap(); // SIGKILL
        let _ = child.wait();
        let rec = Journal::read(&guard.dir()).unwrap().expect("journal");
        assert!(!rec.complete);
        let done = rec.steps.iter().filter(|(_, o)| o.is_some()).count();
        assert_eq!(done, steps);
        assert!(Path::new(&format!("{CPUSET}/jitterlab.housekeeping")).exists());

        let o = run(&["revert", "--state-dir", &guard.arg(), "--json"]);
        let r = json_data(&o, "jitterlab.revert");
        assert_eq!(r["apply_complete"], false);
        assert_eq!(
            r["differences"].as_array().unwrap().len(),
            0,
            "after {steps}: {r:#}"
        );
        assert_as_before(&guard, &format!("killed after {steps} steps"));
    }
}

#[test]
fn ctrl_c_rolls_back() {
    if !live_ok("ctrl_c_rolls_back") {
        return;
    }
    let _lock = host_lock();
    let guard = guard();
    let child = paused_isolate(&guard, 40);
    // SAFETY: kill(2) on our own child.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("ROLLED BACK: cancelled"), "{text}");
    assert!(text.contains("no difference"), "{text}");
    assert_as_before(&guard, "after Ctrl-C");
}

#[test]
fn plan_and_advice_on_the_fixture_tree() {
    // No root needed: a dry run reads, and the fixture is another machine.
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().display().to_string();
    let o = run_vm2(&[
        "isolate",
        "1",
        "--dry-run",
        "--state-dir",
        &dir,
        "--exclude",
        "python*",
    ]);
    let text = stdout(&o);
    assert!(text.contains("method cgroup1"), "{text}");
    assert!(
        text.contains("/sys/fs/cgroup/cpuset/jitterlab.isolated/cpuset.sched_load_balance  (new)"),
        "{text}"
    );
    assert!(text.contains("/proc/irq/default_smp_affinity"), "{text}");
    assert!(text.contains("3 (CPU 0-1)  1 (CPU 0)"), "{text}");
    assert!(
        text.contains("python3 (pid 8113, 4 threads, CPUs 0-1): --exclude 'python*'"),
        "{text}"
    );
    assert!(text.contains("dry run: nothing changed"), "{text}");
    let o = run_vm2(&["isolate", "1", "--dry-run", "--state-dir", &dir, "--json"]);
    let plan = json_envelope(&o, "jitterlab.isolate.plan");
    assert!(plan["steps"].as_array().unwrap().len() > 30);
    assert_eq!(plan["steps"][0]["action"], "mkdir");
    // Applying needs the live machine.
    let o = run_vm2(&["isolate", "1", "--state-dir", &dir]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("only --dry-run"), "{}", stderr(&o));
    // Bad requests: nothing planned.
    let o = run_vm2(&["isolate", "0-1", "--dry-run", "--state-dir", &dir]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).contains("leaves no online CPU"),
        "{}",
        stdout(&o)
    );
    let o = run_vm2(&["isolate", "1-x", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));

    let o = run_vm2(&["advise", "1"]);
    let text = stdout(&o);
    assert!(o.status.success());
    assert!(
        text.contains("isolcpus=managed_irq,domain,1 nohz_full=1 rcu_nocbs=1 irqaffinity=0"),
        "{text}"
    );
    let a = json_data(&run_vm2(&["advise", "1", "--json"]), "jitterlab.advise");
    assert_eq!(a["housekeeping"], "0");
    assert_eq!(a["params"][1]["param"], "nohz_full=1");

    let v = json_envelope(
        &run_vm2(&[
            "verify",
            "1",
            "--interval",
            "0",
            "--state-dir",
            &dir,
            "--json",
        ]),
        "jitterlab.verify",
    );
    assert_eq!(
        v["verdict"], "not_isolated",
        "the fixture machine is not partitioned"
    );
    let o = run_vm2(&["verify", "1", "--interval", "0s", "--state-dir", &dir]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stdout(&o).contains("CPU 1: NOT ISOLATED"), "{}", stdout(&o));
}

/// Ends the irqbalance processes started since `since_ticks` (ours, and the one
/// revert starts again), however the test ends; dropped before [`Restore`] puts
/// the IRQ masks back.
struct EndIrqbalance {
    since_ticks: u64,
}

impl EndIrqbalance {
    /// Those still running (an exited one waits to be reaped by its parent).
    fn ours(&self) -> Vec<u32> {
        read_tasks(&Root::live(), TaskQuery::default())
            .unwrap_or_default()
            .into_iter()
            .filter(|t| t.comm == "irqbalance" && t.start_ticks >= self.since_ticks)
            .filter(|t| t.state != 'Z' && t.state != 'X')
            .map(|t| t.pid)
            .collect()
    }
}

impl Drop for EndIrqbalance {
    fn drop(&mut self) {
        for pid in self.ours() {
            // SAFETY: kill(2) on an irqbalance this test started.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.ours().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Now, in the clock ticks since boot that start times are counted in.
fn ticks_now() -> u64 {
    let uptime = std::fs::read_to_string("/proc/uptime").unwrap();
    let secs: f64 = uptime.split_whitespace().next().unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (secs * hz) as u64
}

#[test]
fn irqbalance_is_stopped_and_started_again() {
    if !live_ok("irqbalance_is_stopped_and_started_again") {
        return;
    }
    if Command::new("irqbalance")
        .arg("--version")
        .output()
        .is_err()
    {
        skip("irqbalance_is_stopped_and_started_again: needs irqbalance (apt-get install irqbalance)");
        return;
    }
    let _lock = host_lock();
    if jitterlab_host::tasks::find_irqbalance(&Root::live())
        .unwrap()
        .is_some()
    {
        // Required too: .ci/run stops the irqbalance its package starts, and a daemon
        // that runs anyway would move IRQs under every other live test.
        skip("irqbalance_is_stopped_and_started_again: an irqbalance runs already");
        return;
    }
    let mut guard = guard();
    let end = EndIrqbalance {
        since_ticks: ticks_now().saturating_sub(1),
    };
    let ib = Command::new("irqbalance")
        .arg("--foreground")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ib_pid = ib.id();
    guard.children.push(ib);
    let deadline = Instant::now() + Duration::from_secs(10);
    while jitterlab_host::tasks::find_irqbalance(&Root::live()).unwrap() != Some(ib_pid) {
        assert!(Instant::now() < deadline, "irqbalance did not start");
        std::thread::sleep(Duration::from_millis(20));
    }

    // Without --stop-irqbalance, the plan warns that it will undo the IRQ moves.
    let o = run(&["isolate", "1", "--dry-run", "--state-dir", &guard.arg()]);
    assert!(
        stdout(&o).contains(&format!("irqbalance is running (pid {ib_pid})")),
        "{}",
        stdout(&o)
    );
    let o = run(&[
        "isolate",
        "1",
        "--stop-irqbalance",
        "--state-dir",
        &guard.arg(),
        "--json",
    ]);
    let data = json_data(&o, "jitterlab.isolate");
    assert_eq!(data["applied"], true, "{}", stderr(&o));
    assert_eq!(data["plan"]["steps"][0]["action"], "stop_irqbalance");
    assert_eq!(data["results"][0]["outcome"], "done");
    // Stopped (and waited for) before any IRQ moved: our child ended by SIGTERM.
    let status = guard.children.last_mut().unwrap().wait().unwrap();
    {
        use std::os::unix::process::ExitStatusExt;
        assert!(
            status.signal() == Some(libc::SIGTERM) || status.success(),
            "{status}"
        );
    }
    assert_eq!(
        jitterlab_host::tasks::find_irqbalance(&Root::live()).unwrap(),
        None
    );
    // Nothing moves the IRQs back while the partition stands.
    std::thread::sleep(Duration::from_millis(500));
    assert!(irqs_on_cpu1(&refused_irqs(&data)).is_empty());

    let o = run(&["revert", "--state-dir", &guard.arg(), "--json"]);
    let r = json_data(&o, "jitterlab.revert");
    let undo = r["undone"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["seq"] == 0)
        .expect("the irqbalance step undone");
    assert_eq!(undo["outcome"], "restored", "{undo}");
    // Started again with its command line, detached, and with no signal blocked
    // (revert runs with SIGINT and SIGTERM blocked for itself).
    let again = jitterlab_host::tasks::find_irqbalance(&Root::live())
        .unwrap()
        .expect("irqbalance started again");
    assert_ne!(again, ib_pid);
    let cmdline = std::fs::read(format!("/proc/{again}/cmdline")).unwrap();
    assert_eq!(cmdline, b"irqbalance\0--foreground\0");
    let status = std::fs::read_to_string(format!("/proc/{again}/status")).unwrap();
    assert!(status.contains("SigBlk:\t0000000000000000"), "{status}");
    let stat = std::fs::read_to_string(format!("/proc/{again}/stat")).unwrap();
    let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
    let session: u32 = after_comm.split(' ').nth(3).unwrap().parse().unwrap();
    assert_eq!(session, again, "a session of its own");
    drop(end);
}

#[test]
fn move_init_and_idle_latency_are_applied_and_reverted() {
    if !live_ok("move_init_and_idle_latency_are_applied_and_reverted") {
        return;
    }
    let qos = "/sys/devices/system/cpu/cpu1/power/pm_qos_resume_latency_us";
    if !Path::new(qos).exists() {
        skip(format_args!(
            "move_init_and_idle_latency_are_applied_and_reverted: no {qos}"
        ));
        return;
    }
    let _lock = host_lock();
    let guard = guard();
    let init_threads = || -> Vec<(u32, CpuSet)> {
        read_tasks(&Root::live(), TaskQuery::all_threads())
            .unwrap()
            .into_iter()
            .filter(|t| t.pid == 1)
            .map(|t| (t.tid, t.allowed))
            .collect()
    };
    let init_before = init_threads();
    let init_cgroup = std::fs::read_to_string("/proc/1/cgroup").unwrap();
    let qos_before = std::fs::read_to_string(qos).unwrap();

    let o = run(&[
        "isolate",
        "1",
        "--move-init",
        "--idle-latency",
        "0",
        "--state-dir",
        &guard.arg(),
        "--json",
    ]);
    let data = json_data(&o, "jitterlab.isolate");
    assert_eq!(data["applied"], true, "{}", stderr(&o));
    assert_eq!(data["plan"]["move_init"], true);
    assert!(!data["plan"]["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["pid"] == 1));
    // PID 1's threads off CPU 1 (by affinity: it keeps its cgroup); CPU 1 polls.
    for (tid, allowed) in init_threads() {
        assert!(!allowed.contains(1), "PID 1 thread {tid}: {allowed}");
    }
    assert_eq!(
        std::fs::read_to_string("/proc/1/cgroup").unwrap(),
        init_cgroup,
        "PID 1 keeps its cgroups"
    );
    assert_eq!(std::fs::read_to_string(qos).unwrap().trim(), "n/a");

    let o = run(&["revert", "--state-dir", &guard.arg(), "--json"]);
    let r = json_data(&o, "jitterlab.revert");
    assert_eq!(r["differences"].as_array().unwrap().len(), 0, "{r:#}");
    assert_eq!(std::fs::read_to_string(qos).unwrap(), qos_before);
    let now = init_threads();
    for (tid, allowed) in &init_before {
        if let Some((_, a)) = now.iter().find(|(t, _)| t == tid) {
            assert_eq!(a, allowed, "PID 1 thread {tid}");
        }
    }
    assert_as_before(&guard, "after revert of --move-init --idle-latency 0");
}
