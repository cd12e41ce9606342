//! Golden tests of the commands' output: the built binary run on fixture inputs, its
//! exit status, stdout and stderr compared with the insta snapshots in
//! `tests/snapshots/` (review changes with `cargo insta review`, or rerun with
//! `INSTA_UPDATE=always` and read the diff).
//!
//! `show` and its views, `advise`, `isolate --dry-run`, `verify` and the recipe checks
//! of `experiment` read the tree captured from a 2-CPU VM (`--root
//! crates/host/tests/fixtures/vm2`); `report`, `analyze` and `convert` read the
//! committed traces of the trace crate, run from their folder so that file names print
//! without a path. Nothing here changes the host.
//! Commands that measure or change the live machine (latency, load, record, pin, irq,
//! run, revert) are covered by the renderer goldens of crates/render.

use std::path::{Path, PathBuf};
use std::process::Command;

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The fixture tree captured from a 2-CPU VM.
fn vm2() -> PathBuf {
    manifest().join("../host/tests/fixtures/vm2")
}

/// The trace crate's test data.
fn data() -> PathBuf {
    manifest().join("../trace/tests/data")
}

/// Runs jitterlab in `dir` with `args` and snapshots what it printed as `<name>.snap`.
/// `tmp`, when given, prints as `[TMP]`.
fn golden(name: &str, dir: &Path, args: &[&str], tmp: Option<&Path>) {
    snapshot(name, &printed(dir, args, tmp));
}

/// What jitterlab printed, run in `dir` with `args`, with its exit status.
fn printed(dir: &Path, args: &[&str], tmp: Option<&Path>) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run jitterlab");
    let shown: Vec<String> = args
        .iter()
        .map(|a| {
            if *a == vm2().to_str().unwrap() {
                "[VM2]".to_string()
            } else {
                a.to_string()
            }
        })
        .collect();
    let mut text = format!(
        "$ jitterlab {}\nexit status: {}\n--- stdout\n{}",
        shown.join(" "),
        o.status.code().map_or("signal".into(), |c| c.to_string()),
        String::from_utf8_lossy(&o.stdout)
    );
    if !o.stderr.is_empty() {
        text.push_str("--- stderr\n");
        text.push_str(&String::from_utf8_lossy(&o.stderr));
    }
    if let Some(tmp) = tmp {
        text = text.replace(&tmp.display().to_string(), "[TMP]");
    }
    text
}

/// Compares `text` with `tests/snapshots/<name>.snap`.
fn snapshot(name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(manifest().join("tests/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, text));
}

/// `text` with the size `view` prints after a file name, `(156.0 KiB)`, and in its JSON
/// (`"bytes": 159696,`) as `[SIZE]`: it changes with the viewer's code.
fn without_sizes(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(".html (") {
        let from = at + ".html (".len();
        out.push_str(&rest[..from]);
        let close = rest[from..].find(')').map_or(rest.len(), |c| from + c);
        out.push_str("[SIZE]");
        rest = &rest[close..];
    }
    out.push_str(rest);
    out.lines()
        .map(|l| match l.split_once("\"bytes\": ") {
            Some((head, _)) => format!("{head}\"bytes\": [SIZE],"),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn view() {
    let tmp = tempfile::tempdir().unwrap();
    let out = |n: &str| tmp.path().join(n).display().to_string();
    let d = data();
    let t = Some(tmp.path());
    std::fs::write(
        tmp.path().join("show.json"),
        r#"{"schema": "jitterlab.show", "version": 1, "data": {}}"#,
    )
    .unwrap();
    let mut text = Vec::new();
    for args in [
        &["view", "disk-irq-stress.v7.dat", "-o", &out("d.html")][..],
        &[
            "view",
            "disk-irq-stress.v7.dat",
            "-o",
            &out("d.html"),
            "--max-slices",
            "1000",
        ],
        &[
            "view",
            "disk-irq-stress.v7.dat",
            "-o",
            &out("d.html"),
            "--json",
        ],
        &[
            "view",
            "disk-irq-stress.v7.dat",
            "-o",
            "disk-irq-stress.v7.dat",
        ],
        &[
            "view",
            "instances.v7.dat",
            "-o",
            &out("i.html"),
            "--cpu",
            "0",
        ],
        &["view", &out("show.json")],
        // Two traces on one compare page; its output never replaces B either.
        &[
            "view",
            "disk-irq-stress.v7.dat",
            "cyclictest-idle.v7.dat",
            "-o",
            &out("c.html"),
        ],
        &[
            "view",
            "disk-irq-stress.v7.dat",
            "cyclictest-idle.v7.dat",
            "-o",
            &out("c.html"),
            "--json",
        ],
        &[
            "view",
            "disk-irq-stress.v7.dat",
            "cyclictest-idle.v7.dat",
            "-o",
            "cyclictest-idle.v7.dat",
        ],
        &[
            "analyze",
            "cyclictest-idle.v7.dat",
            "--section",
            "summary",
            "--html",
            &out("c.html"),
        ],
    ] {
        text.push(without_sizes(&printed(&d, args, t)));
    }
    snapshot("view", &text.join("\n"));
}

/// Runs jitterlab against the VM tree.
fn on_vm2(name: &str, args: &[&str], tmp: Option<&Path>) {
    let root = vm2();
    let mut all = vec!["--root", root.to_str().unwrap()];
    all.extend_from_slice(args);
    golden(name, &manifest(), &all, tmp);
}

#[test]
fn show_views() {
    on_vm2("show", &["show"], None);
    on_vm2("show_json", &["show", "--json"], None);
    on_vm2("show_cpus", &["show", "cpus"], None);
    on_vm2(
        "show_cpus_filtered",
        &["show", "cpus", "--cpu", "1", "--name", "POLL"],
        None,
    );
    on_vm2("show_irqs", &["show", "irqs"], None);
    on_vm2("show_tasks", &["show", "tasks"], None);
    on_vm2("show_tasks_threads", &["show", "tasks", "--threads"], None);
    on_vm2("show_tasks_pid", &["show", "tasks", "--pid", "8113"], None);
    on_vm2("show_workqueues", &["show", "workqueues"], None);
    on_vm2("show_cgroups", &["show", "cgroups"], None);
}

#[test]
fn partition_without_changing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let state = state.to_str().unwrap();
    on_vm2("advise", &["advise", "1"], None);
    on_vm2(
        "isolate_dry_run",
        &["isolate", "1", "--dry-run", "--state-dir", state],
        Some(tmp.path()),
    );
    on_vm2(
        "verify",
        &["verify", "1", "--interval", "0s", "--state-dir", state],
        Some(tmp.path()),
    );
}

#[test]
fn report() {
    let d = data();
    golden(
        "report_ftrace_misc",
        &d,
        &["report", "text/ftrace-misc.txt"],
        None,
    );
    golden(
        "report_ftrace_misc_json",
        &d,
        &["report", "text/ftrace-misc.txt", "--json"],
        None,
    );
    // Every buffer, merged, each line after its buffer's name: the top buffer's lines
    // and jlab_big's first ones; a loss of jlab_small.
    golden(
        "report_instances",
        &d,
        &["report", "instances.v7.dat", "--to", "4290.5120"],
        None,
    );
    golden(
        "report_instances_loss",
        &d,
        &[
            "report",
            "instances.v7.dat",
            "--from",
            "4290.7797",
            "--to",
            "4290.7806",
        ],
        None,
    );
    golden(
        "report_disk_irq_stress_window",
        &d,
        &[
            "report",
            "disk-irq-stress.v7.dat",
            "--cpu",
            "1",
            "--from",
            "995.1467",
            "--to",
            "995.1490",
        ],
        None,
    );
    golden(
        "report_stats",
        &d,
        &["report", "--stats", "disk-irq-stress.v7.dat"],
        None,
    );
    golden(
        "report_stats_text",
        &d,
        &["report", "--stats", "text/ftrace-misc.txt"],
        None,
    );
}

#[test]
fn analyze() {
    let d = data();
    golden(
        "analyze_cyclictest_idle",
        &d,
        &["analyze", "cyclictest-idle.v7.dat"],
        None,
    );
    golden(
        "analyze_disk_irq_stress",
        &d,
        &["analyze", "disk-irq-stress.v7.dat"],
        None,
    );
    golden(
        "analyze_instances",
        &d,
        &["analyze", "instances.v7.dat"],
        None,
    );
    golden(
        "analyze_irq_chains",
        &d,
        &[
            "analyze",
            "disk-irq-stress.v7.dat",
            "--section",
            "irqs",
            "--irq",
            "36",
            "--top",
            "5",
        ],
        None,
    );
    golden(
        "analyze_function_graph",
        &d,
        &["analyze", "text/fgraph-report.txt"],
        None,
    );
}

#[test]
fn convert() {
    let tmp = tempfile::tempdir().unwrap();
    let out = |n: &str| tmp.path().join(n).display().to_string();
    let d = data();
    golden(
        "convert_perfetto",
        &d,
        &[
            "convert",
            "disk-irq-stress.v7.dat",
            &out("disk-irq-stress.json"),
            "--format",
            "perfetto",
        ],
        Some(tmp.path()),
    );
    golden(
        "convert_v6",
        &d,
        &[
            "convert",
            "instances.v7.dat",
            &out("instances.v6.dat"),
            "--format",
            "v6",
        ],
        Some(tmp.path()),
    );
}

/// Recipes the VM tree's machine cannot run (crates/experiment/tests/fixtures) are
/// refused with their line and column before anything runs; one it can run gets as far
/// as `--root`, which an experiment cannot take.
#[test]
fn experiment_checks_recipes_against_the_machine() {
    let dir = manifest().join("../experiment/tests/fixtures");
    let root = vm2();
    let root = root.to_str().unwrap();
    let text: Vec<String> = [
        &["--root", root, "experiment", "bad-irq-partition.toml"][..],
        &["--root", root, "experiment", "latency-cpus-99.toml"],
        &["--root", root, "experiment", "--recipe", "partition"],
    ]
    .iter()
    .map(|args| printed(&dir, args, None))
    .collect();
    snapshot("experiment_refused", &text.join("\n"));
}

/// An LTTng kernel trace folder (crates/trace/tests/data/lttng): the counts per CPU and
/// event, the first events as report prints them, and analyze's IRQ sections.
#[test]
fn lttng() {
    let d = data();
    let mut text = Vec::new();
    for args in [
        &["report", "lttng/kernel-irq-sched", "--stats"][..],
        &[
            "report",
            "lttng/kernel-irq-sched",
            "--cpu",
            "0",
            "--to",
            "1412670961.22",
        ],
        &[
            "analyze",
            "lttng/kernel-irq-sched",
            "--section",
            "irqs",
            "--top",
            "5",
        ],
    ] {
        text.push(printed(&d, args, None));
    }
    snapshot("lttng", &text.join("\n"));
}
