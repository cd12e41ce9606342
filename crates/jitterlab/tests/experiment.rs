//! `jitterlab experiment` on this machine, end to end, with short runs: a recipe whose
//! cells isolate CPU 1 and move an IRQ leaves the machine exactly as before; so does
//! Ctrl-C in the middle of a partitioned run; a SIGKILLed experiment is undone by the
//! next one; a saved experiment compares with itself offline. A test that fails
//! still leaves the machine as it found it (a guard reverts the journal and writes
//! the snapshot back). The recipe commands need no root.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use jitterlab_cpuset::CpuSet;
use jitterlab_host::partition::{Journal, Snapshot};
use jitterlab_host::Root;

use crate::util::{self, host_lock, json_data, run, skip, stderr, stdout, Restore, CPUSET};

/// The guard of this file's tests: `experiment --state-dir STATE`, whose partition
/// journal is `STATE/experiment/partition`.
fn guard() -> Restore {
    Restore::new("experiment/partition")
}

fn irq_record(guard: &Restore) -> PathBuf {
    guard.state.path().join("experiment").join("irq.json")
}

fn live_ok(name: &str) -> bool {
    util::live_ok(name, "its cells isolate CPU 1 of this machine")
}

fn assert_as_before(guard: &Restore, what: &str) {
    let now = Snapshot::read(&Root::live()).unwrap();
    let diff = guard.before.diff(&now);
    assert!(diff.is_empty(), "{what}: {diff:?}");
    assert!(!Path::new(&format!("{CPUSET}/jitterlab.isolated")).exists());
    assert!(!Path::new(&format!("{CPUSET}/jitterlab.housekeeping")).exists());
    assert!(!Journal::exists(&guard.dir()), "{what}: journal left");
    assert!(!irq_record(guard).exists(), "{what}: IRQ record left");
}

/// An IRQ whose affinity this machine lets us write (not the managed virtio block
/// queue), with its mask now.
fn movable_irq() -> Option<(u32, CpuSet)> {
    let root = Root::live();
    for n in root.list_numeric("/proc/irq").ok()? {
        let file = format!("/proc/irq/{n}/smp_affinity_list");
        let Ok(Some(mask)) = root.read_cpu_list_opt(&file) else {
            continue;
        };
        if !mask.contains(0) || !mask.contains(1) {
            continue;
        }
        // Try it: write the same mask back.
        if root.write(&file, &mask.to_string()).is_ok() {
            return Some((n, mask));
        }
    }
    None
}

/// `experiment RECIPE --state-dir STATE -o OUT --json -`, which must succeed: its data.
fn run_saved(recipe: &str, guard: &Restore, out: &Path) -> serde_json::Value {
    let o = run(&[
        "experiment",
        recipe,
        "--state-dir",
        &guard.state_arg(),
        "-o",
        &out.display().to_string(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    json_data(&o, "jitterlab.experiment")
}

fn write_recipe(dir: &Path, text: &str) -> String {
    let path = dir.join("recipe.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A recipe whose measure is a command printing a number, over partition off/on:1 and
/// an IRQ on CPU 0 or unchanged.
fn recipe(irq: u32, rounds: u32, duration: &str, measure: &str) -> String {
    format!(
        r#"
name = "restore-check"
rounds = {rounds}
duration = "{duration}"
warmup = 0
order = "interleaved"
trace = "none"
seed = 7

[factors]
partition = ["off", "on:1"]
irq = ["unchanged", "{irq}=0"]

[[measure.command]]
name = "value"
command = "{measure}"
regex = "value: ([0-9]+)"
unit = "x"
better = "lower"
"#
    )
}

#[test]
fn experiment_restores_the_machine() {
    if !live_ok("experiment_restores_the_machine") {
        return;
    }
    let _lock = host_lock();
    let guard = guard();
    let Some((irq, mask)) = movable_irq() else {
        panic!("no IRQ of this machine takes an affinity write");
    };
    let dir = tempfile::tempdir().unwrap();
    // The command reports the CPUs it may use: 1 where CPU 1 is isolated (it runs on
    // the housekeeping CPU 0 then), 2 otherwise.
    let r = write_recipe(dir.path(), &recipe(irq, 3, "100ms", "echo value: $(nproc)"));
    let out = dir.path().join("saved");
    let data = run_saved(&r, &guard, &out);
    let runs = data["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12, "4 cells x 3 rounds");
    for run in runs {
        assert!(run["error"].is_null(), "{run}");
        let cell = run["cell"].as_u64().unwrap() as usize;
        let label = data["cells"][cell]["label"].as_str().unwrap();
        // Cells are partition (off, on:1) x irq: 0-1 off, 2-3 on.
        let want = if label.contains("on:1") { 1.0 } else { 2.0 };
        assert_eq!(run["values"]["value"].as_f64(), Some(want), "{label}");
    }
    assert_as_before(&guard, "after the experiment");
    let root = Root::live();
    assert_eq!(
        root.read_cpu_list(format!("/proc/irq/{irq}/smp_affinity_list"))
            .unwrap(),
        mask
    );
    // The directory holds what --compare needs, and compares with itself: no real
    // difference anywhere.
    for f in ["recipe.toml", "runs.json", "result.json", "machine.json"] {
        assert!(out.join(f).exists(), "{f} not saved");
    }
    let s = out.display().to_string();
    let o = run(&["experiment", "--compare", &s, &s, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let data = json_data(&o, "jitterlab.experiment");
    assert_eq!(data["cells"].as_array().unwrap().len(), 8, "4 cells twice");
    for c in data["stats"][0]["comparisons"].as_array().unwrap() {
        assert_eq!(c["verdict"]["verdict"], "no_real_difference", "{c}");
    }
}

/// Starts an experiment whose runs last long enough to be caught inside a
/// partitioned run, and waits until one is.
fn start_and_wait_for_partition(guard: &mut Restore, dir: &Path) -> u32 {
    let r = write_recipe(
        dir,
        r#"
name = "interrupted"
rounds = 3
duration = "2s"
warmup = 0
order = "sequential"
trace = "none"

[factors]
partition = ["on:1"]

[[measure.command]]
name = "value"
command = "sleep 2; echo value: 1"
regex = "value: ([0-9]+)"
unit = "x"
better = "lower"
"#,
    );
    let child = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args(["experiment", &r, "--state-dir", &guard.state_arg()])
        // Its scratch directory inside the test's: a killed run cannot remove it.
        .env("TMPDIR", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    guard.children.push(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !Journal::read(&guard.dir())
        .ok()
        .flatten()
        .is_some_and(|r| r.complete)
    {
        assert!(Instant::now() < deadline, "the partition was never applied");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(Path::new(&format!("{CPUSET}/jitterlab.isolated")).exists());
    pid
}

#[test]
fn experiment_ctrl_c_restores() {
    if !live_ok("experiment_ctrl_c_restores") {
        return;
    }
    let _lock = host_lock();
    let mut guard = guard();
    let dir = tempfile::tempdir().unwrap();
    let pid = start_and_wait_for_partition(&mut guard, dir.path());
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let child = guard.children.pop().unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
    assert_as_before(&guard, "after Ctrl-C");
}

#[test]
fn experiment_after_a_crash_is_undone_by_the_next() {
    if !live_ok("experiment_after_a_crash_is_undone_by_the_next") {
        return;
    }
    let _lock = host_lock();
    let mut guard = guard();
    let dir = tempfile::tempdir().unwrap();
    let pid = start_and_wait_for_partition(&mut guard, dir.path());
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let mut child = guard.children.pop().unwrap();
    let _ = child.wait();
    // Whatever the measure had started ends with it: the partition is still there.
    assert!(Journal::exists(&guard.dir()));
    let r = write_recipe(
        dir.path(),
        r#"
name = "next"
rounds = 2
duration = "10ms"
warmup = 0
trace = "none"

[[measure.command]]
name = "value"
command = "echo value: 1"
regex = "value: ([0-9]+)"
unit = "x"
better = "lower"
"#,
    );
    let o = run(&["experiment", &r, "--state-dir", &guard.state_arg()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("reverted the partition of CPU 1"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("value"), "{}", stdout(&o));
    assert_as_before(&guard, "after the next experiment");
}

/// Whether tracefs and iperf3 are here for the traced test.
fn traced_ok(name: &str) -> bool {
    if !live_ok(name) {
        return false;
    }
    if !Path::new("/sys/kernel/tracing/events").exists() {
        skip(format_args!("{name}: needs tracefs at /sys/kernel/tracing"));
        return false;
    }
    if Command::new("iperf3").arg("--version").output().is_err() {
        skip(format_args!(
            "{name}: needs iperf3 (apt-get install iperf3)"
        ));
        return false;
    }
    true
}

#[test]
fn experiment_traced_runs_explain_the_wake_ups() {
    if !traced_ok("experiment_traced_runs_explain_the_wake_ups") {
        return;
    }
    let _lock = host_lock();
    let guard = guard();
    let dir = tempfile::tempdir().unwrap();
    // iperf3 over veth with the client on CPU 0, the server on the other CPU, and the
    // latency probe on CPU 1 beside it; every run traced.
    let r = write_recipe(
        dir.path(),
        r#"
name = "traced"
rounds = 2
duration = "1s"
warmup = 0
trace = "all"
seed = 1

[factors]
affinity = ["not-irq-cpu"]

[measure.tcp]
client_cpus = "0"
bitrate = "200M"

[measure.latency]
cpus = "1"
interval = "1ms"
"#,
    );
    let out = dir.path().join("saved");
    let data = run_saved(&r, &guard, &out);
    let explanations = data["explanations"].as_array().unwrap();
    assert_eq!(explanations.len(), 2, "one per traced run");
    for e in explanations {
        let threads = e["threads"].as_array().unwrap();
        let role = |r: &str| threads.iter().find(|t| t["role"] == r);
        let server = role("server").unwrap_or_else(|| panic!("no server thread: {e}"));
        assert!(role("client").is_some(), "no client thread: {e}");
        // The server was placed on the CPU that does not run its softirq: CPU 1 (the
        // forked child may run a moment on its parent's CPU before it pins itself and
        // becomes iperf3).
        let on = |cpu: u64| {
            server["cpus"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["cpu"].as_u64() == Some(cpu))
                .map(|c| c["run_ns"].as_u64().unwrap())
                .sum::<u64>()
        };
        let total = server["run_ns"].as_u64().unwrap();
        assert!(on(1) * 100 >= total * 95, "{server}");
        // What woke it: NET_RX raised by the client's sends, with no hardirq.
        let tid = server["tid"].as_i64().unwrap();
        let chain = e["chains"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["tid"].as_i64() == Some(tid) && c["source"] == "softirq NET_RX")
            .unwrap_or_else(|| panic!("no NET_RX -> server chain: {e}"));
        assert!(chain["count"].as_u64() > Some(0));
        // ... and it ran on the client's CPU, 0: the CPU `irq-cpu` names.
        assert_eq!(chain["source_cpus"][0], 0, "{chain}");
        assert!(chain["p50_ns"].as_u64() <= chain["max_ns"].as_u64());
        // The probe's threads and its worst wake-up, blamed.
        assert!(
            threads
                .iter()
                .any(|t| t["comm"].as_str().unwrap().starts_with("jitterlab-probe")),
            "no probe thread: {e}"
        );
        let spikes = e["spikes"].as_array().unwrap();
        assert_eq!(spikes.len(), 1, "{e}");
        assert_eq!(spikes[0]["cpu"], 1);
        // The trace is kept with its report.
        let trace = out.join(e["trace"].as_str().unwrap());
        assert!(trace.exists(), "{}", trace.display());
        assert!(trace.with_extension("dat.html").exists());
    }
    let causes: u64 = data["spike_causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["spikes"].as_u64().unwrap())
        .sum();
    assert_eq!(causes, 2);
    let left: Vec<String> = std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("jl-exp-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "namespaces left: {left:?}");
    assert_as_before(&guard, "after the traced experiment");
}

/// A `break` stops the flight recorder at the spike and blames it, and turns the
/// top-level buffer off as it does for `latency --break`; the experiment turns the top
/// level back on after the run, as it found it.
#[test]
fn experiment_break_leaves_the_top_level_tracing() {
    if !traced_ok("experiment_break_leaves_the_top_level_tracing") {
        return;
    }
    let _lock = host_lock();
    let guard = guard();
    let top = "/sys/kernel/tracing/tracing_on";
    let before = std::fs::read_to_string(top).unwrap();
    std::fs::write(top, "1").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let r = write_recipe(
        dir.path(),
        r#"
name = "break"
rounds = 2
duration = "1s"
warmup = 0
trace = "all"

[measure.latency]
cpus = "1"
interval = "1ms"
break = "1us"
"#,
    );
    let out = dir.path().join("saved");
    let data = run_saved(&r, &guard, &out);
    let now = std::fs::read_to_string(top).unwrap();
    std::fs::write(top, before.trim()).unwrap();
    assert_eq!(now.trim(), "1", "the top level left off after the break");
    // The break stopped the trace at its spike, which is blamed as the one marked.
    let spikes = data["explanations"][0]["spikes"].as_array().unwrap();
    assert!(
        spikes.iter().any(|s| s["marked"] == true),
        "no marked spike: {spikes:?}"
    );
    assert_as_before(&guard, "after the experiment with a break");
}

/// `precision`: a steady measure is known to 1 % after the minimum 5 rounds of 20, and
/// the experiment stops there and says so. Changes nothing on the host.
#[test]
fn experiment_stops_once_precise_enough() {
    // It changes nothing, but compares the machine with a snapshot at its end: no
    // other test may move IRQs meanwhile.
    let _lock = host_lock();
    let dir = tempfile::tempdir().unwrap();
    let r = write_recipe(
        dir.path(),
        r#"
name = "steady"
rounds = 20
duration = "10ms"
warmup = 0
trace = "none"
seed = 5
precision = "1%"

[factors]
setup = [{ name = "a" }, { name = "b" }]

[[measure.command]]
name = "value"
command = "echo value: 42"
regex = "value: ([0-9]+)"
unit = "x"
better = "lower"
"#,
    );
    let state = dir.path().join("state");
    let o = run(&[
        "experiment",
        &r,
        "--state-dir",
        &state.display().to_string(),
        "--json",
    ]);
    if !o.status.success() && stderr(&o).contains("Permission denied") {
        skip("experiment_stops_once_precise_enough: cannot read the machine's snapshot");
        return;
    }
    let data = json_data(&o, "jitterlab.experiment");
    assert_eq!(data["stopped_early"], 5, "{}", stderr(&o));
    assert_eq!(
        data["runs"].as_array().unwrap().len(),
        10,
        "2 cells x 5 rounds"
    );
    let o = run(&[
        "experiment",
        &r,
        "--state-dir",
        &state.display().to_string(),
    ]);
    assert!(
        stdout(&o).contains("stopped after 5 rounds"),
        "{}",
        stdout(&o)
    );
}

/// A `cmd:` load's chatter (stress-ng prints warnings on stderr) stays off the terminal:
/// it is the run's raw output `load.out`; a load command that ends before its run does
/// fails the run, with its last line. Changes nothing on the host.
#[test]
fn experiment_keeps_a_load_commands_chatter_off_the_terminal() {
    let _lock = host_lock();
    let dir = tempfile::tempdir().unwrap();
    let r = write_recipe(
        dir.path(),
        r#"
name = "chatter"
rounds = 2
duration = "300ms"
warmup = 0
trace = "none"
seed = 1

[factors]
load = [
  "cmd:echo \"stress-ng: warn: [1] chatter-$((40+2))\" >&2; echo stdout-$((40+2)); exec sleep 60",
  "cmd:echo \"stress-ng: error: failed-$((1+2))\" >&2; exit 3",
]

[[measure.command]]
name = "value"
command = "echo value: 42"
regex = "value: ([0-9]+)"
unit = "x"
better = "lower"
"#,
    );
    let out = dir.path().join("out");
    let o = run(&[
        "experiment",
        &r,
        "--state-dir",
        &dir.path().join("state").display().to_string(),
        "-o",
        &out.display().to_string(),
        "--json",
    ]);
    if !o.status.success() && stderr(&o).contains("Permission denied") {
        skip("experiment_keeps_a_load_commands_chatter_off_the_terminal: cannot read the machine's snapshot");
        return;
    }
    let err = stderr(&o);
    assert!(!err.contains("chatter-42"), "on the terminal: {err}");
    assert!(!stdout(&o).contains("stdout-42"), "on stdout");
    let data = json_data(&o, "jitterlab.experiment");
    let runs = data["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "{err}");
    for run in runs {
        let seq = run["seq"].as_u64().unwrap();
        let raw = out.join(format!("runs/{seq:03}/load.out"));
        if run["cell"] == 0 {
            assert!(run["error"].is_null(), "{run}");
            let kept = std::fs::read_to_string(&raw).unwrap_or_default();
            assert!(
                kept.contains("stress-ng: warn: [1] chatter-42"),
                "{}: {kept:?}",
                raw.display()
            );
            assert!(kept.contains("stdout-42"), "{kept:?}");
        } else {
            // Ended before the run did: the run was not measured under its load.
            let e = run["error"].as_str().unwrap_or_default();
            assert!(e.contains("exit status: 3"), "{run}");
            assert!(e.ends_with("stress-ng: error: failed-3"), "{run}");
        }
    }
}

/// What the kernel logs during a run is kept with the run and told as a warning of its
/// cell: the recipe's command writes a warning of its own to the kernel log (which
/// needs root) in every run of the second cell.
#[test]
fn experiment_tells_what_the_kernel_logged_during_its_runs() {
    let _lock = host_lock();
    if !jitterlab_host::testing::is_root() {
        skip(
            "experiment_tells_what_the_kernel_logged_during_its_runs: writing /dev/kmsg needs root",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("jitterlab-test-kmsg-{}", std::process::id());
    let flag = dir.path().join("warns").display().to_string();
    let r = write_recipe(
        dir.path(),
        &format!(
            r#"
name = "kmsg"
rounds = 3
duration = "100ms"
warmup = 0
trace = "none"
seed = 1

[[factors.setup]]
name = "quiet"

[[factors.setup]]
name = "warns"
setup = "touch {flag}"
teardown = "rm -f {flag}"

[[measure.command]]
name = "value"
command = "if [ -e {flag} ]; then echo '<4>{tag}' > /dev/kmsg; fi; echo value: 1"
regex = "value: ([0-9]+)"
unit = "x"
better = "lower"
"#
        ),
    );
    let out = dir.path().join("out");
    let json = dir.path().join("result.json");
    let o = run(&[
        "experiment",
        &r,
        "--state-dir",
        &dir.path().join("state").display().to_string(),
        "-o",
        &out.display().to_string(),
        &format!("--json={}", json.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let envelope: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let data = &envelope["data"];
    for run in data["runs"].as_array().unwrap() {
        let ours: Vec<&str> = run["context"]["kernel_messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["text"].as_str())
            .filter(|t| t.starts_with(&tag))
            .collect();
        if run["cell"] == 1 {
            assert_eq!(ours, [tag.as_str()], "{run}");
        } else {
            assert!(ours.is_empty(), "{run}");
        }
    }
    let warning = data["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "kernel_messages" && w["cell"] == 1)
        .unwrap_or_else(|| panic!("no warning: {}", data["warnings"]));
    assert_eq!((&warning["runs"], &warning["of"]), (&3.into(), &3.into()));
    // The text report says it.
    let text = stdout(&o);
    assert!(
        text.contains("kernel: ") && text.contains(&format!("\"{tag}\"")),
        "{text}"
    );
}

/// An earlier experiment's directory is never written over: `-o` a directory that holds
/// anything is refused before anything runs (the recipe's setup did not run).
#[test]
fn experiment_refuses_a_directory_that_holds_an_earlier_one() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("setup-ran");
    // Factors that change nothing on the host, were the check broken.
    let text = format!(
        r#"
name = "earlier-dir"
rounds = 2
duration = "100ms"
trace = "none"
setup = "touch {}"

[[factors.setup]]
name = "a"
[[factors.setup]]
name = "b"

[[measure.command]]
name = "value"
command = "echo value: 1"
regex = "value: ([0-9]+)"
unit = "x"
better = "lower"
"#,
        marker.display()
    );
    let r = write_recipe(dir.path(), &text);
    let out = dir.path().join("saved");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("result.json"), b"{\"earlier\": true}").unwrap();
    let state = tempfile::tempdir().unwrap();
    let o = run(&[
        "experiment",
        &r,
        "--state-dir",
        &state.path().display().to_string(),
        "-o",
        &out.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not empty"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("earlier experiment (result.json)"),
        "{}",
        stderr(&o)
    );
    assert!(!marker.exists(), "the setup ran");
    assert_eq!(
        std::fs::read(out.join("result.json")).unwrap(),
        b"{\"earlier\": true}"
    );
}

/// A recipe of crates/experiment/tests/fixtures.
fn fixture_recipe(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../experiment/tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A recipe this machine cannot run is refused before anything runs (the reproducers of
/// crates/experiment/tests/fixtures, a partition of every online CPU, an IRQ no machine
/// has): exit 2, the error names the file, line and column, the value and what the
/// machine has; the recipe's `setup` never ran, no output or state directory was made.
#[test]
fn experiment_refuses_a_recipe_the_machine_cannot_run() {
    // Nothing should change; should the check let a recipe through, the guard undoes
    // what its runs did.
    let _lock = host_lock();
    let guard = guard();
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("setup-ran");
    let out = tmp.path().join("out");
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let online = CpuSet::parse_list(online.trim()).unwrap();
    // The recipe with a setup that leaves the marker, on the line after its name.
    let with_setup = |text: &str| -> String {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let at = lines.iter().position(|l| l.starts_with("name =")).unwrap();
        lines.insert(at + 1, format!("setup = \"touch {}\"", marker.display()));
        lines.join("\n") + "\n"
    };
    let command = "[[measure.command]]\nname = \"v\"\ncommand = \"echo v: 1\"\nregex = \"v: ([0-9]+)\"\nunit = \"x\"\nbetter = \"lower\"\n";
    let bad_irq = fixture_recipe("bad-irq-partition.toml");
    let cases = [
        (
            with_setup(&fixture_recipe("latency-cpus-99.toml")),
            "18:8",
            format!("latency cpus \"99\": CPU 99 is not online (online: {online})"),
        ),
        (
            with_setup(&bad_irq),
            "6:8",
            "irq: \"[\" is neither an IRQ number nor a glob over IRQ names: \
             Pattern syntax error near position 0: invalid range pattern"
                .to_string(),
        ),
        (
            with_setup(&bad_irq.replace("\"[=0\", ", "")),
            "6:8",
            "irq: IRQ -1: expected an IRQ number (0 or more) or a glob over IRQ names \
             (virtio1-input.0, eth0-*)"
                .to_string(),
        ),
        (
            with_setup(&bad_irq.replace("irq = [\"[=0\", \"-1=0\"]\n", "")),
            "6:14",
            format!("partition on:99: CPU 99 is not online (online: {online})"),
        ),
        (
            with_setup(&format!(
                "name = \"x\"\n[factors]\npartition = [\"off\", \"on:{online}\"]\n{command}"
            )),
            "4:21",
            format!(
                "partition on:{online}: no CPU is left for housekeeping (online: {online}); \
                 isolate fewer CPUs"
            ),
        ),
        (
            with_setup(&format!(
                "name = \"x\"\n[factors]\nirq = [\"unchanged\", \"4294967295=0\"]\n{command}"
            )),
            "4:21",
            "irq 4294967295=0: no IRQ 4294967295 on this machine (jitterlab show irqs lists them)"
                .to_string(),
        ),
    ];
    for (text, at, message) in cases {
        let recipe = write_recipe(tmp.path(), &text);
        let o = run(&[
            "experiment",
            &recipe,
            "--state-dir",
            &guard.state_arg(),
            "-o",
            &out.display().to_string(),
            "--rounds",
            "2",
            "--warmup",
            "0",
            "--duration",
            "10ms",
        ]);
        assert_eq!(o.status.code(), Some(2), "{text}\n{}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!("jitterlab: {recipe}:{at}: {message}\n"),
            "{text}"
        );
        assert_eq!(stdout(&o), "");
        assert!(!marker.exists(), "the setup ran: {text}");
        assert!(!out.exists(), "an output directory was made: {text}");
        assert!(
            !guard.state.path().join("experiment").exists(),
            "a state directory was made: {text}"
        );
    }
    // The same recipe that the machine can run does run its setup (the marker can appear).
    let ok = with_setup(&format!(
        "name = \"x\"\nrounds = 2\nwarmup = 0\nduration = \"10ms\"\ntrace = \"none\"\n{command}"
    ));
    let recipe = write_recipe(tmp.path(), &ok);
    let o = run(&["experiment", &recipe, "--state-dir", &guard.state_arg()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(marker.exists(), "the setup of a good recipe did not run");
}

/// Every comparison of an experiment's data called a real difference: (metric, cell).
fn real_differences(data: &serde_json::Value) -> Vec<(String, u64)> {
    let mut real = Vec::new();
    for s in data["stats"].as_array().unwrap() {
        for c in s["comparisons"].as_array().unwrap() {
            if c["verdict"]["verdict"] == "real" {
                real.push((
                    s["metric"]["name"].as_str().unwrap_or("?").to_string(),
                    c["cell"].as_u64().unwrap_or(0),
                ));
            }
        }
    }
    real
}

/// A/A on this machine: the documented recipe `a-a.toml` (two identical cells, the
/// latency probe on CPU 1) with 20 seeds calls at most one of them a real difference on
/// any metric (a false-positive rate of at most 5 %). Changes nothing on the host.
#[test]
fn experiment_a_a_is_no_real_difference_in_19_of_20() {
    if !live_ok("experiment_a_a_is_no_real_difference_in_19_of_20") {
        return;
    }
    let _lock = host_lock();
    let dir = tempfile::tempdir().unwrap();
    let recipe = write_recipe(dir.path(), &fixture_recipe("a-a.toml"));
    let state = dir.path().join("state").display().to_string();
    let mut called = Vec::new();
    for seed in 1..=20u32 {
        let o = run(&[
            "experiment",
            &recipe,
            "--state-dir",
            &state,
            "--seed",
            &seed.to_string(),
            "--json",
        ]);
        assert!(o.status.success(), "seed {seed}: {}", stderr(&o));
        let data = json_data(&o, "jitterlab.experiment");
        let real = real_differences(&data);
        eprintln!("A/A seed {seed}: real {real:?}");
        if !real.is_empty() {
            called.push((seed, real));
        }
    }
    assert!(
        called.len() <= 1,
        "{} of 20 A/A experiments called real: {called:?}",
        called.len()
    );
}

/// An A/A experiment whose measure is the time a fixed piece of shell work takes on
/// CPU 1, with a foreign busy loop on CPU 1 (a thread of this test, which the
/// experiment did not start) beside the second cell's runs, each `every`th time it
/// runs: the experiment's data and how many runs the loop ran beside.
fn a_a_beside_a_loop(every: u32, seed: u32) -> (serde_json::Value, u64) {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    // The second cell's setup writes `u` into a FIFO, its teardown `d`: the loop runs
    // between. The thread that reads it blocks until a byte comes, so that it costs the
    // runs between the busy ones nothing (polling a flag file every 2 ms cost them 4.5
    // ms of CPU in a 68 ms run, which with the host's own agent came to 0.13 CPUs of
    // foreign work and failed the test).
    let fifo = dir.path().join("busy");
    let path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path it is given.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0, "mkfifo");
    // Opened for reading and writing: neither end blocks on opening, and the reads never
    // see an end of file when a writer closes.
    let mut pipe = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let r = write_recipe(
        dir.path(),
        &format!(
            r#"
name = "a-a-beside-a-loop"
rounds = 8
duration = "10ms"
warmup = 0
order = "interleaved"
trace = "none"
seed = {seed}

[factors]
setup = [{{ name = "a" }}, {{ name = "b", setup = "printf u > {fifo}", teardown = "printf d > {fifo}" }}]

[[measure.command]]
name = "work"
command = "taskset -c 1 sh -c 's=$(date +%s%N); i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done; echo work: $((($(date +%s%N)-s)/1000))'"
regex = "work: ([0-9]+)"
unit = "us"
better = "lower"
"#,
            fifo = fifo.display()
        ),
    );
    let looped = Arc::new(AtomicU32::new(0));
    let watcher = {
        let looped = looped.clone();
        let mut pipe = pipe.try_clone().unwrap();
        std::thread::Builder::new()
            .name("jl-foreign-loop".into())
            .spawn(move || {
                jitterlab_host::sched::set_affinity(0, &CpuSet::from_iter([1])).unwrap();
                let mut byte = [0u8];
                // Whether a byte is waiting, without blocking.
                let ready = |fd| {
                    let mut p = libc::pollfd {
                        fd,
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: poll reads and writes the one pollfd it is given.
                    unsafe { libc::poll(&mut p, 1, 0) == 1 }
                };
                let mut raised = 0u32;
                loop {
                    pipe.read_exact(&mut byte).unwrap();
                    match byte[0] {
                        b'q' => return,
                        b'u' => {}
                        _ => continue,
                    }
                    raised += 1;
                    if (raised - 1) % every != 0 {
                        continue;
                    }
                    looped.fetch_add(1, Ordering::Relaxed);
                    // Until the teardown's byte; bounded, whatever happens.
                    let end = Instant::now() + Duration::from_secs(5);
                    while Instant::now() < end && !ready(pipe.as_raw_fd()) {
                        let spin = Instant::now() + Duration::from_micros(200);
                        while Instant::now() < spin {
                            std::hint::spin_loop();
                        }
                    }
                }
            })
            .unwrap()
    };
    let o = run(&[
        "experiment",
        &r,
        "--state-dir",
        &dir.path().join("state").display().to_string(),
        "--json",
    ]);
    pipe.write_all(b"q").unwrap();
    watcher.join().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let data = json_data(&o, "jitterlab.experiment");
    let looped = looped.load(Ordering::Relaxed) as u64;
    eprintln!(
        "the loop ran beside {looped} runs; warnings {}",
        data["warnings"]
    );
    for run in data["runs"].as_array().unwrap() {
        eprintln!(
            "cell {} round {}: work {} us, foreign {} ns ({:.3} CPUs; top {})",
            run["cell"],
            run["round"],
            run["values"]["work"],
            run["context"]["foreign_ns"],
            foreign_share(run),
            run["context"]["foreign_top"]
        );
    }
    (data, looped)
}

/// Checks the accounting of each run against what the loop did: the foreign work was
/// more than a tenth of a CPU, the loop's own more than a tenth, in the second cell's
/// runs the loop ran beside (the 1st, `every`+1st... in the order they ran), and the
/// loop's next to nothing in every other; the second cell's busy runs are flagged,
/// naming the loop. The host may make other runs busy too (its steal, or its own agent,
/// pid 1, which has been seen to take 5.4 ms of a 63 ms run), never by the loop.
fn check_busy(data: &serde_json::Value, every: u64, looped: u64) {
    let runs = beside_loop(data, every);
    for (r, loop_ran) in &runs {
        let (all, the_loop) = (foreign_share(r), loop_share(r));
        if *loop_ran {
            assert!(all > 0.10 && the_loop > 0.10, "{r}");
        } else {
            assert!(the_loop < 0.02, "{r}");
            if all > 0.10 {
                eprintln!(
                    "NOTE: a run the loop did not run beside was busy with other work: {}",
                    r["context"]["foreign_top"]
                );
            }
        }
    }
    assert_eq!(runs.iter().filter(|(_, l)| *l).count() as u64, looped);
    for w in data["warnings"].as_array().unwrap() {
        if w["kind"] != "busy_runs" {
            continue;
        }
        if w["cell"] == 1 {
            assert!(w["runs"].as_u64().unwrap() >= looped, "{w}");
            assert_eq!(w["of"], 8);
            assert_eq!(w["top"], "jl-foreign-loop", "{w}");
        } else {
            // Busy by the host's steal or its own work alone.
            assert_ne!(w["top"], "jl-foreign-loop", "{w}");
        }
    }
    assert!(
        data["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["kind"] == "busy_runs" && w["cell"] == 1),
        "{}",
        data["warnings"]
    );
}

/// The CPUs the loop itself took beside a run (its entries in the run's foreign
/// processes, named after the test's thread).
fn loop_share(r: &serde_json::Value) -> f64 {
    let ns: f64 = r["context"]["foreign_top"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["comm"] == "jl-foreign-loop")
        .map(|t| t["cpu_ns"].as_f64().unwrap())
        .sum();
    ns / r["context"]["wall_ns"].as_f64().unwrap()
}

/// The CPUs of foreign work beside a run: its foreign CPU time over its wall time.
fn foreign_share(r: &serde_json::Value) -> f64 {
    r["context"]["foreign_ns"].as_f64().unwrap() / r["context"]["wall_ns"].as_f64().unwrap()
}

/// Each run, and whether the loop ran beside it: the second cell's 1st, `every`+1st...
/// runs in the order they ran.
fn beside_loop(data: &serde_json::Value, every: u64) -> Vec<(&serde_json::Value, bool)> {
    let runs = data["runs"].as_array().unwrap();
    let mut second: Vec<&serde_json::Value> = runs.iter().filter(|r| r["cell"] == 1).collect();
    second.sort_by_key(|r| r["seq"].as_u64());
    runs.iter()
        .map(|r| {
            let i = second.iter().position(|x| x["seq"] == r["seq"]);
            (r, i.is_some_and(|i| i as u64 % every == 0))
        })
        .collect()
}

/// On a machine busy with other work, which may come and go: the runs beside the loop
/// counted more than a tenth of a CPU of foreign work whatever else ran, and the second
/// cell's busy runs are flagged with a process named. (The other runs may be busy or
/// quiet, as the other work was.)
fn check_busy_beside_other_work(data: &serde_json::Value, every: u64, looped: u64) {
    let runs = beside_loop(data, every);
    for (r, loop_ran) in &runs {
        if *loop_ran {
            assert!(foreign_share(r) > 0.10, "{r}");
        }
    }
    assert_eq!(runs.iter().filter(|(_, l)| *l).count() as u64, looped);
    let w = data["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "busy_runs" && w["cell"] == 1)
        .unwrap_or_else(|| panic!("{}", data["warnings"]));
    assert!(w["runs"].as_u64().unwrap() >= looped, "{w}");
    assert!(w["top"].as_str().is_some_and(|t| !t.is_empty()), "{w}");
}

/// CPUs this machine spends on work other than this test process, over half a second
/// (/proc/stat's busy and steal time of every CPU, less the process's own CPU time): a
/// test whose premise is a quiet machine asks it first.
fn foreign_load_now() -> f64 {
    let root = jitterlab_host::Root::live();
    let machine = || -> u64 {
        jitterlab_host::usage::cpu_times(&root)
            .unwrap()
            .iter()
            .map(|c| c.busy_ns + c.steal_ns)
            .sum()
    };
    let own = || -> u64 {
        // SAFETY: getrusage fills the struct it is given.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) }, 0);
        let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
        ns(u.ru_utime) + ns(u.ru_stime)
    };
    let (m0, o0, t0) = (machine(), own(), Instant::now());
    std::thread::sleep(Duration::from_millis(500));
    let (m1, o1) = (machine(), own());
    (m1 - m0).saturating_sub(o1 - o0) as f64 / t0.elapsed().as_nanos() as f64
}

/// A foreign busy loop on the measured CPU beside the second cell's runs of an A/A
/// experiment, in every other round: those runs are flagged as busy, with the loop
/// named, only the quiet runs are compared, and nothing is called real. Beside every
/// run of the cell, where it doubles the work's time (a real difference on the
/// numbers alone), the backgrounds are unequal and the difference is still not called
/// real, for that reason. Changes nothing on the host.
#[test]
fn experiment_flags_a_foreign_busy_loop_and_calls_nothing_real_for_it() {
    if !live_ok("experiment_flags_a_foreign_busy_loop_and_calls_nothing_real_for_it") {
        return;
    }
    let _lock = host_lock();
    // The test's premise is a machine where the loop is the only foreign work. Beside
    // other work (the suite run beside `stress-ng --cpu 4`, or this binary's other
    // tests' commands, which come and go), any run may be busy whatever the loop does:
    // then only what holds on a busy machine is checked, and said.
    let before = foreign_load_now();
    if before > 0.10 {
        eprintln!(
            "NOTE: the machine was busy before the test ({before:.2} CPUs of foreign work): \
             checking only the runs beside the loop"
        );
        let (data, looped) = a_a_beside_a_loop(2, 3);
        assert_eq!(looped, 4, "every other of the second cell's 8 runs");
        check_busy_beside_other_work(&data, 2, looped);
        return;
    }
    let (data, looped) = a_a_beside_a_loop(2, 3);
    assert_eq!(looped, 4, "every other of the second cell's 8 runs");
    check_busy(&data, 2, looped);
    // Compared on the quiet runs alone (or, should the host's steal leave too few, not
    // compared): never as if the backgrounds were equal.
    let c = &data["stats"][0]["comparisons"][0];
    let kind = c["background"]["kind"].as_str().unwrap();
    assert!(kind == "quiet_runs_only" || kind == "unequal", "{c}");
    if kind == "quiet_runs_only" {
        assert!(c["background"]["cell_runs"].as_u64().unwrap() <= 4, "{c}");
    }
    assert_eq!(real_differences(&data), vec![]);

    let (data, looped) = a_a_beside_a_loop(1, 4);
    assert_eq!(looped, 8, "every run of the second cell");
    check_busy(&data, 1, looped);
    let c = &data["stats"][0]["comparisons"][0];
    // The loop took about half the CPU from the work: on the numbers alone a real
    // difference.
    let ratio = c["ratio"]["value"].as_f64().unwrap();
    assert!(ratio > 1.5, "{c}");
    assert!(c["test"]["p"].as_f64().unwrap() < 0.01, "{c}");
    assert_eq!(c["background"]["kind"], "unequal", "{c}");
    assert_eq!(c["verdict"]["verdict"], "no_real_difference", "{c}");
    assert!(
        c["verdict"]["reasons"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("unequal_background")),
        "{c}"
    );
}
