//! `jitterlab analyze`: sections in text and JSON, focus, errors.

use crate::util::{data, json_data, run, stderr, stdout};

#[test]
fn analyze_text_has_every_section_with_units() {
    let o = run(&["analyze", &data("cyclictest-idle.v7.dat"), "--top", "20"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for heading in [
        "== Summary ==",
        "== CPUs ==",
        "== Tasks ==",
        "== IRQs ==",
        "== IRQ -> task chains ==",
    ] {
        assert!(out.contains(heading), "{heading} missing:\n{out}");
    }
    assert!(out.contains("8324 events on 2 CPUs"), "{out}");
    assert!(out.contains("implicit_switch_in"), "{out}");
    // The cyclictest thread's wake-ups, with units, in the latency table.
    let line = out
        .lines()
        .find(|l| l.contains("cyclictest") && l.contains("1001"))
        .expect("the cyclictest wake-up row");
    assert!(line.contains(" us"), "{line}");
    assert!(out.contains("36 virtio1-req.0"), "{out}");
}

#[test]
fn analyze_json_and_focus() {
    let file = data("text/disk-irq-stress-6000.ftrace.txt");
    let o = run(&[
        "analyze",
        &file,
        "--json",
        "--section",
        "irqs",
        "--irq",
        "36",
        "--task",
        "dd",
    ]);
    let d = json_data(&o, "jitterlab.analyze");
    assert!(d.get("summary").is_none() && d.get("tasks").is_none());
    let chains = d["irqs"]["chains"].as_array().unwrap();
    assert!(!chains.is_empty());
    for c in chains {
        assert_eq!(
            (c["irq"].as_u64(), c["comm"].as_str()),
            (Some(36), Some("dd"))
        );
        assert!(c["latency"]["p50_ns"].as_u64().unwrap() > 0);
    }
    assert_eq!(d["irqs"]["focus_irq"], "36");
    let text = stdout(&run(&[
        "analyze",
        &file,
        "--section",
        "irqs",
        "--irq",
        "virtio*",
        "--task",
        "dd",
    ]));
    assert!(
        text.contains("irq_handler_exit -> switch-in:"),
        "a histogram: {text}"
    );
}

#[test]
fn analyze_errors() {
    let o = run(&[
        "analyze",
        &data("cyclictest-idle.v7.dat"),
        "--section",
        "bogus",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown section"), "{}", stderr(&o));
    let o = run(&["analyze", "Cargo.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("Cargo.toml"), "{}", stderr(&o));
}

#[test]
fn analyze_functions_compare() {
    let a = data("text/fgraph-ehci-softirq.txt");
    let b = data("text/fgraph-smi-abstime.txt");
    let o = run(&[
        "analyze",
        &a,
        "--section",
        "functions",
        "--compare",
        &b,
        "--json",
    ]);
    let d = json_data(&o, "jitterlab.analyze");
    assert_eq!(d["functions"]["functions"][0]["name"], "schedule");
    let changes = d["functions"]["comparison"]["changes"].as_array().unwrap();
    assert!(!changes.is_empty());
    // Without --section, a trace with no function_graph calls has no functions section.
    let o = run(&["analyze", &data("cyclictest-idle.v7.dat"), "--json"]);
    assert!(json_data(&o, "jitterlab.analyze")
        .get("functions")
        .is_none());
}

/// `jitterlab analyze FILE ARGS.. --json`: the whole document, checked against the schema.
fn analyze_doc(file: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["analyze", file, "--json"];
    all.extend_from_slice(args);
    let o = run(&all);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    let errors = schema_errors(&doc);
    assert!(errors.is_empty(), "{file} {args:?}: {errors:#?}");
    doc
}

/// `data` of [`analyze_doc`].
fn analyze_json(file: &str, args: &[&str]) -> serde_json::Value {
    let doc = analyze_doc(file, args);
    assert_eq!(doc["schema"], "jitterlab.analyze");
    doc["data"].clone()
}

/// The errors of `doc` against docs/schema/jitterlab.analyze.v1.json.
fn schema_errors(doc: &serde_json::Value) -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/schema/jitterlab.analyze.v1.json"
    );
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON schema");
    validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

/// cyclictest-idle's kernel text with the TGID column the `record-tgid` option adds:
/// cyclictest's measuring thread 11385 in process 11384, every other task its own process.
fn with_tgid_column(dir: &std::path::Path) -> String {
    let text = std::fs::read_to_string(data("text/cyclictest-idle.ftrace.txt")).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with('#') {
            out.push_str(&line.replace("TASK-PID     CPU#", "TASK-PID     TGID     CPU#"));
        } else {
            let open = line.find(" [").expect("the CPU column");
            let head = &line[..open];
            let tid: i32 = head.rsplit_once('-').unwrap().1.trim().parse().unwrap();
            let tgid = match tid {
                0 => "-------".to_string(),
                11385 => "11384".to_string(),
                t => t.to_string(),
            };
            out.push_str(&format!("{head} ({tgid:>7}){}", &line[open..]));
        }
        out.push('\n');
    }
    let path = dir.join("cyclictest-idle.tgid.txt");
    std::fs::write(&path, out).unwrap();
    path.display().to_string()
}

#[test]
fn analyze_json_matches_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let tgid = with_tgid_column(dir.path());
    let dat = data("cyclictest-idle.v7.dat");
    let disk = data("text/disk-irq-stress-6000.ftrace.txt");
    let graph = data("text/fgraph-ehci-softirq.txt");
    let other = data("text/fgraph-smi-abstime.txt");
    let runs: [(&str, &[&str]); 6] = [
        (&dat, &[]),
        (&disk, &["--worst", "10"]),
        (&disk, &["--cpu", "1", "--from", "995.16", "--to", "995.18"]),
        (&tgid, &["--pid", "11384"]),
        (&graph, &["--compare", &other]),
        (
            &data("text/cyclictest-idle.report.txt"),
            &["--section", "irqs,blame"],
        ),
    ];
    let mut seen = std::collections::BTreeSet::new();
    for (file, args) in runs {
        let d = analyze_json(file, args);
        seen.extend(d.as_object().unwrap().keys().cloned());
    }
    // Every section and the filter were validated at least once.
    for key in [
        "source",
        "top",
        "filter",
        "summary",
        "cpus",
        "tasks",
        "irqs",
        "blame",
        "functions",
    ] {
        assert!(seen.contains(key), "{key} never checked: {seen:?}");
    }

    // The schema is not vacuous: a missing field and a wrong value are both caught.
    let mut broken = analyze_doc(&dat, &["--cpu", "1"]);
    broken["data"]["cpus"]["cpus"][0]
        .as_object_mut()
        .unwrap()
        .remove("busy_ns");
    broken["data"]["tasks"]["group_by"] = "pid".into();
    let errors = schema_errors(&broken);
    assert_eq!(errors.len(), 2, "{errors:#?}");
    let mut broken = analyze_doc(&disk, &[]);
    broken["data"]["irqs"]["chains"][0]["latency"]["p99_ns"] = (-1).into();
    broken["schema"] = "jitterlab.latency".into();
    assert_eq!(schema_errors(&broken).len(), 2);
}

/// Per-CPU rows of the CPU section, by CPU.
fn cpu_rows(d: &serde_json::Value) -> Vec<serde_json::Value> {
    d["cpus"]["cpus"].as_array().unwrap().clone()
}

/// Task run time by tid.
fn run_ns_by_tid(d: &serde_json::Value) -> std::collections::BTreeMap<i64, u64> {
    d["tasks"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["tid"].as_i64().unwrap(), t["run_ns"].as_u64().unwrap()))
        .collect()
}

#[test]
fn analyze_cpu_filter_keeps_one_cpus_intervals_whole() {
    let file = data("cyclictest-idle.v7.dat");
    let sections = "cpus,tasks,irqs";
    let all = analyze_json(&file, &["--section", sections]);
    let one = analyze_json(&file, &["--section", sections, "--cpu", "1"]);
    let zero = analyze_json(&file, &["--section", sections, "--cpu", "0"]);
    assert_eq!(one["filter"]["cpus"], "1");
    assert!(all.get("filter").is_none());
    // Only CPU 1's row, the same as unfiltered: the state before and around is the same.
    let rows = cpu_rows(&one);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0], cpu_rows(&all)[1]);
    assert!(rows[0]["busy_ns"].as_u64().unwrap() > 0);
    // Every task ran only there; run time per task splits exactly between the CPUs.
    for t in one["tasks"]["tasks"].as_array().unwrap() {
        for c in t["cpus"].as_array().unwrap() {
            assert_eq!(c["cpu"], 1, "{t}");
        }
    }
    let (a, z, o) = (
        run_ns_by_tid(&all),
        run_ns_by_tid(&zero),
        run_ns_by_tid(&one),
    );
    assert!(!o.is_empty() && !z.is_empty());
    for (tid, ns) in &a {
        let split = z.get(tid).copied().unwrap_or(0) + o.get(tid).copied().unwrap_or(0);
        assert_eq!(split, *ns, "tid {tid}");
    }
    // Wake-ups split by the CPU they were switched in on.
    let wakes = |d: &serde_json::Value| d["tasks"]["wakeups"]["count"].as_u64().unwrap_or(0);
    assert_eq!(wakes(&zero) + wakes(&one), wakes(&all));
    assert!(wakes(&one) > wakes(&zero));
    for i in one["irqs"]["irqs"].as_array().unwrap() {
        for c in i["cpus"].as_array().unwrap() {
            assert_eq!(c["cpu"], 1);
        }
    }
    // The summary is of the whole trace.
    let s = analyze_json(&file, &["--section", "summary", "--cpu", "1"]);
    let whole = analyze_json(&file, &["--section", "summary"]);
    assert_eq!(s["summary"], whole["summary"]);
    let o = run(&["analyze", &file, "--cpu", "1-x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--cpu: invalid CPU list"),
        "{}",
        stderr(&o)
    );
}

/// ns as `--from`/`--to` take them: seconds with 9 decimals.
fn secs(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

#[test]
fn analyze_time_window_halves_add_up_to_the_whole() {
    let file = data("cyclictest-idle.v7.dat");
    let sections = ["--section", "summary,cpus,tasks,irqs"];
    let all = analyze_json(&file, &sections);
    let (start, end) = (
        all["summary"]["start_ns"].as_u64().unwrap(),
        all["summary"]["end_ns"].as_u64().unwrap(),
    );
    let mid = start + (end - start) / 2;
    let (to_mid, after_mid) = (secs(mid), secs(mid + 1));
    let first = analyze_json(&file, &[&sections[..], &["--to", &to_mid]].concat());
    let second = analyze_json(&file, &[&sections[..], &["--from", &after_mid]].concat());
    assert_eq!(first["filter"]["to_ns"], mid);
    assert_eq!(second["filter"]["from_ns"], mid + 1);
    assert_eq!(second["cpus"]["origin_ns"], mid + 1);
    for (i, whole) in cpu_rows(&all).iter().enumerate() {
        let (a, b) = (&cpu_rows(&first)[i], &cpu_rows(&second)[i]);
        for r in [a, b] {
            // Inside a window too, busy + idle + unknown = span.
            let sum = ["busy_ns", "idle_ns", "unknown_ns"]
                .map(|k| r[k].as_u64().unwrap())
                .iter()
                .sum::<u64>();
            assert_eq!(sum, r["span_ns"].as_u64().unwrap(), "{r}");
        }
        for key in ["span_ns", "busy_ns", "idle_ns", "hardirq_ns", "softirq_ns"] {
            let (w, x, y) = (
                whole[key].as_u64().unwrap(),
                a[key].as_u64().unwrap(),
                b[key].as_u64().unwrap(),
            );
            // The halves leave out only the nanosecond between them.
            assert!(
                x + y <= w && w - (x + y) <= 1,
                "CPU {i} {key}: {x} + {y} vs {w}"
            );
        }
        assert!(a["busy_ns"].as_u64().unwrap() > 0 && b["busy_ns"].as_u64().unwrap() > 0);
    }
    // Wake-ups by their switch-in: each in exactly one half.
    let wakes = |d: &serde_json::Value| d["tasks"]["wakeups"]["count"].as_u64().unwrap();
    assert_eq!(wakes(&first) + wakes(&second), wakes(&all));
    assert!(wakes(&first) > 0 && wakes(&second) > 0);
    // Task run time splits the same way.
    let (a, x, y) = (
        run_ns_by_tid(&all),
        run_ns_by_tid(&first),
        run_ns_by_tid(&second),
    );
    for (tid, ns) in &a {
        let split = x.get(tid).copied().unwrap_or(0) + y.get(tid).copied().unwrap_or(0);
        assert!(
            split <= *ns && ns - split <= 2,
            "tid {tid}: {split} vs {ns}"
        );
    }
    let o = run(&["analyze", &file, "--from", "977", "--to", "976.5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--to"), "{}", stderr(&o));
    let o = run(&["analyze", &file, "--from", "soon"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("expected seconds"), "{}", stderr(&o));
}

#[test]
fn analyze_pid_filter_takes_a_process_when_tgids_are_known() {
    // A .dat has no thread group ids: --pid is the one task.
    let file = data("cyclictest-idle.v7.dat");
    let all = analyze_json(&file, &["--section", "tasks"]);
    assert_eq!(all["tasks"]["group_by"], "comm");
    let d = analyze_json(&file, &["--section", "tasks,irqs,blame", "--pid", "11385"]);
    let tids: Vec<i64> = run_ns_by_tid(&d).into_keys().collect();
    assert_eq!(tids, [11385]);
    assert_eq!(d["filter"]["pid"], 11385);
    for s in d["blame"]["spikes"].as_array().unwrap() {
        assert_eq!(s["tid"], 11385);
    }
    assert!(!d["blame"]["spikes"].as_array().unwrap().is_empty());
    for c in d["irqs"]["chains"].as_array().unwrap() {
        assert_eq!(c["tid"], 11385);
    }
    // The same capture as text with a TGID column: the threads group by process, and
    // --pid takes both of cyclictest's threads.
    let dir = tempfile::tempdir().unwrap();
    let text = with_tgid_column(dir.path());
    let all = analyze_json(&text, &["--section", "tasks"]);
    assert_eq!(all["tasks"]["group_by"], "tgid");
    let group = all["tasks"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["tgid"] == 11384)
        .expect("cyclictest's process");
    assert_eq!(group["threads"], serde_json::json!([11384, 11385]));
    let d = analyze_json(&text, &["--section", "tasks", "--pid", "11384"]);
    let rows = run_ns_by_tid(&d);
    assert_eq!(rows.keys().copied().collect::<Vec<_>>(), [11384, 11385]);
    let whole = run_ns_by_tid(&all);
    for (tid, ns) in &rows {
        assert_eq!(whole[tid], *ns, "tid {tid}: rows are chosen, not cut");
    }
    assert_eq!(d["tasks"]["groups"].as_array().unwrap().len(), 1);
}

#[test]
fn compare_with_a_trace_without_calls_says_so() {
    let graph = data("text/fgraph-ehci-softirq.txt");
    let plain = data("text/disk-irq-stress-6000.ftrace.txt");
    let d = analyze_json(&graph, &["--section", "functions", "--compare", &plain]);
    assert!(d["functions"]["comparison"].is_null());
    let w = d["warnings"].as_array().expect("a warning");
    assert!(
        w[0].as_str()
            .unwrap()
            .contains("has no function_graph calls"),
        "{w:?}"
    );
    let d = analyze_json(&plain, &["--compare", &graph]);
    assert!(d["warnings"][0]
        .as_str()
        .unwrap()
        .contains("this trace has no function_graph calls"));
}

/// Issue 13: lost counts past 2^64 saturate and say so, as in `report --stats` (D10); an
/// empty trace is analyzed as one with no events (D7).
#[test]
fn analyze_hostile_text_inputs() {
    let wrap = data("text/lost-count-wrap.ftrace.txt");
    let o = run(&["analyze", &wrap, "--section", "summary"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("lost events: CPU 0: >= 18446744073709551615"),
        "{}",
        stdout(&o)
    );
    let d = json_data(
        &run(&["analyze", &wrap, "--section", "summary", "--json"]),
        "jitterlab.analyze",
    );
    assert_eq!(d["summary"]["lost_per_cpu"][0].as_u64(), Some(u64::MAX));
    for f in ["text/empty-ftrace-trace.txt", "text/empty-report.txt"] {
        let o = run(&["analyze", &data(f)]);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
    }
}

/// Issue 13, D2: `analyze` reads one buffer of a multi-buffer .dat — the top buffer when it
/// holds events, or `--buffer NAME` — and names the others on stderr.
#[test]
fn analyze_reads_one_buffer_and_names_the_others() {
    let file = data("instances.v7.dat");
    let o = run(&["analyze", &file, "--section", "summary", "--json"]);
    let top = json_data(&o, "jitterlab.analyze");
    assert_eq!(top["summary"]["events"], 7, "{top}");
    assert!(
        stderr(&o).contains(
            "not read: buffer jlab_small (404 events, 2043 lost), buffer jlab_big (2056 events)"
        ),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "analyze",
        &file,
        "--section",
        "summary",
        "--json",
        "--buffer",
        "jlab_small",
    ]);
    let small = json_data(&o, "jitterlab.analyze");
    // 404 records and 2 loss notices (734 and 1309 events lost).
    assert_eq!(small["summary"]["events"], 404 + 2, "{small}");
    assert_eq!(
        small["summary"]["lost_per_cpu"],
        serde_json::json!([734, 1309])
    );
    assert_eq!(stderr(&o), "");
    let o = run(&["analyze", &file, "--buffer", "nope"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Issue 18: the progress line goes to stderr only: not when stderr is not a terminal
/// (as here), nor with `--quiet`; forced with `JITTERLAB_PROGRESS=always`, it is on
/// stderr and the `--json` output on stdout is untouched (and names its producer).
#[test]
fn progress_is_on_stderr_only_and_never_in_the_output() {
    use std::process::Command;
    let file = data("cyclictest-idle.v7.dat");
    let plain = run(&["analyze", &file, "--json"]);
    assert!(!stderr(&plain).contains("analyzing"), "{}", stderr(&plain));
    let quiet = run(&["analyze", &file, "--json", "-q"]);
    assert_eq!(stdout(&quiet), stdout(&plain));
    let forced = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args(["analyze", &file, "--json"])
        .env("JITTERLAB_PROGRESS", "always")
        .output()
        .unwrap();
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert!(
        stderr(&forced).contains("analyzing cyclictest-idle.v7.dat"),
        "{}",
        stderr(&forced)
    );
    assert_eq!(stdout(&forced), stdout(&plain));
    let data = json_data(&forced, "jitterlab.analyze");
    assert!(data.is_object());
    let v: serde_json::Value = serde_json::from_slice(&forced.stdout).unwrap();
    assert_eq!(
        v["producer"],
        format!("jitterlab {}", env!("CARGO_PKG_VERSION"))
    );
}

/// The LTTng kernel trace of a 4-CPU ARM board (crates/trace/tests/data/lttng), checked
/// by hand against `babeltrace2 --clock-seconds` of the same folder:
///
/// ```text
/// [1412670965.999895339] irq_handler_exit: { cpu_id = 0 }, { irq = 194, ret = 1 }
/// [1412670965.999904339] softirq_entry: { cpu_id = 0 }, { vec = 3 }
/// [1412670965.999931239] sched_wakeup: { cpu_id = 0 }, { comm = "sshd", tid = 403, prio = 120, ... }
/// [1412670965.999945239] softirq_exit: { cpu_id = 0 }, { vec = 3 }
/// [1412670965.999962639] sched_switch: { cpu_id = 0 }, { prev_comm = "swapper/0", ..., next_comm = "sshd", next_tid = 403, next_prio = 20 }
/// ```
///
/// eth0's IRQ ends, its NET_RX softirq wakes sshd, sshd runs 67.3 us after the IRQ's exit:
/// the worst eth0 -> sshd chain. sshd's thread group and eth0's name come from the state
/// dump (`lttng_statedump_process_state`: tid 403, pid 403; `lttng_statedump_interrupt`).
#[test]
fn analyze_of_an_lttng_trace_matches_its_events_by_hand() {
    let d = analyze_json(&data("lttng/kernel-irq-sched"), &[]);
    assert_eq!(d["source"]["format"], "LTTng CTF 1.8 (kernel, 4 streams)");
    assert_eq!(d["summary"]["events"], 31556);
    let chain = d["irqs"]["chains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["irq"] == 194 && c["comm"] == "sshd")
        .expect("an eth0 -> sshd chain");
    assert_eq!(chain["irq_name"], "eth0");
    assert_eq!(chain["tid"], 403);
    assert_eq!(
        chain["latency"]["max_ns"],
        1_412_670_965_999_962_639u64 - 1_412_670_965_999_895_339
    );
    assert_eq!(chain["latency"]["max_at_ns"], 1_412_670_965_999_895_339u64);
    assert_eq!(
        chain["via_softirq"], chain["count"],
        "every eth0 -> sshd wake-up is in NET_RX"
    );
    let tasks = d["tasks"]["tasks"].as_array().unwrap();
    let sshd = tasks.iter().find(|t| t["tid"] == 403).expect("sshd-403");
    assert_eq!(
        (&sshd["comm"], &sshd["tgid"]),
        (&"sshd".into(), &403.into())
    );
    // Every task is named (a task that never switched by its state-dump name).
    let unnamed: Vec<_> = tasks
        .iter()
        .filter(|t| {
            t["comm"]
                .as_str()
                .is_none_or(|c| c.is_empty() || c.starts_with('<'))
        })
        .collect();
    assert!(unnamed.is_empty(), "{unnamed:?}");
    // Priorities on the kernel's scale: a nice-0 task at 120 (LTTng recorded 20).
    assert_eq!(sshd["prio"], 120);
}
