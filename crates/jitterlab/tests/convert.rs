//! `jitterlab convert`: .dat v6 <-> v7 copies that trace-cmd reads alike, and Chrome
//! trace-event JSON whose structure ui.perfetto.dev and chrome://tracing accept: named
//! tracks, well-nested slices, every flow arrow paired and bound to a slice, and the same
//! counts as `jitterlab analyze` of the same trace.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::util::{data, host_lock, is_root, json_data, run, skip, stderr};

fn tmpdir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("jitterlab-convert-{tag}-"))
        .tempdir()
        .expect("tempdir")
}

/// Integer nanoseconds from the JSON's microseconds with three decimals.
fn ns(v: &Value) -> i64 {
    let us = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    (us * 1000.0).round() as i64
}

/// Checks what the viewers need and returns the document's events.
fn check_chrome_json(path: &Path) -> Vec<Value> {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).expect("valid JSON");
    assert_eq!(doc["displayTimeUnit"], "ns");
    let events = doc["traceEvents"].as_array().expect("traceEvents").clone();
    let mut process_names = HashSet::new();
    let mut thread_names = HashSet::new();
    let mut used = HashSet::new();
    // Slices per track, as (start, end) in ns.
    let mut slices: HashMap<(u64, u64), Vec<(i64, i64)>> = HashMap::new();
    for e in &events {
        let ph = e["ph"].as_str().expect("ph");
        let pid = e["pid"].as_u64().expect("integer pid");
        let tid = e["tid"].as_u64().expect("integer tid");
        assert!(e["name"].is_string(), "{e}");
        match ph {
            "M" => match e["name"].as_str() {
                Some("process_name") => {
                    assert!(e["args"]["name"].is_string());
                    process_names.insert(pid);
                }
                Some("thread_name") => {
                    assert!(e["args"]["name"].is_string());
                    thread_names.insert((pid, tid));
                }
                Some("process_sort_index" | "thread_sort_index") => {
                    assert!(e["args"]["sort_index"].is_u64())
                }
                other => panic!("unexpected metadata {other:?}"),
            },
            "X" | "s" | "f" | "i" => {
                assert!(ns(&e["ts"]) >= 0);
                used.insert((pid, tid));
                if ph == "X" {
                    let dur = ns(&e["dur"]);
                    assert!(dur >= 0, "{e}");
                    let start = ns(&e["ts"]);
                    slices
                        .entry((pid, tid))
                        .or_default()
                        .push((start, start + dur));
                }
                if ph == "s" || ph == "f" {
                    assert!(e["id"].is_u64() && e["cat"] == "wakeup", "{e}");
                }
                if ph == "i" {
                    assert!(matches!(e["s"].as_str(), Some("t" | "p" | "g")), "{e}");
                }
            }
            other => panic!("unexpected phase {other:?} in {e}"),
        }
    }
    for (pid, tid) in &used {
        assert!(process_names.contains(pid), "pid {pid} has no process_name");
        assert!(
            thread_names.contains(&(*pid, *tid)),
            "tid {tid} has no thread_name"
        );
    }
    // Slices on one track nest: each one lies inside the enclosing one or after it.
    for (track, list) in &mut slices {
        list.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
        let mut stack: Vec<i64> = Vec::new();
        for &(s, e) in list.iter() {
            while stack.last().is_some_and(|&end| end <= s) {
                stack.pop();
            }
            if let Some(&end) = stack.last() {
                assert!(
                    e <= end,
                    "track {track:?}: slice {s}..{e} overlaps one ending {end}"
                );
            }
            stack.push(e);
        }
    }
    // Flows pair up, forward in time, and bind to a slice at both ends.
    let mut flows: BTreeMap<u64, (Option<&Value>, Option<&Value>)> = BTreeMap::new();
    for e in &events {
        match e["ph"].as_str() {
            Some("s") => flows.entry(e["id"].as_u64().unwrap()).or_default().0 = Some(e),
            Some("f") => flows.entry(e["id"].as_u64().unwrap()).or_default().1 = Some(e),
            _ => {}
        }
    }
    let encloses = |e: &Value| {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let ts = ns(&e["ts"]);
        slices
            .get(&key)
            .is_some_and(|l| l.iter().any(|&(s, end)| s <= ts && ts <= end))
    };
    let mut bound = 0;
    for (id, pair) in &flows {
        let (Some(s), Some(f)) = pair else {
            panic!("flow {id} is not a start/finish pair");
        };
        assert!(ns(&s["ts"]) <= ns(&f["ts"]), "flow {id} goes back in time");
        assert_eq!(f["bp"], "e");
        if encloses(s) && encloses(f) {
            bound += 1;
        }
    }
    // A waking on a CPU whose state the trace does not know yet has no slice to start from.
    assert!(
        bound * 100 >= flows.len() * 95,
        "only {bound} of {} flows bind to slices",
        flows.len()
    );
    events
}

fn convert_to_json(input: &str, dir: &Path) -> (Vec<Value>, Value) {
    let out = dir.join("trace.json");
    let o = run(&["convert", input, out.to_str().unwrap(), "--json"]);
    let summary = json_data(&o, "jitterlab.convert");
    assert!(out.exists());
    assert_eq!(summary["bytes"], std::fs::metadata(&out).unwrap().len());
    (check_chrome_json(&out), summary)
}

fn analyze(input: &str) -> Value {
    json_data(
        &run(&["analyze", input, "--json", "--section", "irqs,tasks"]),
        "jitterlab.analyze",
    )
}

#[test]
fn perfetto_json_of_a_text_trace_has_the_analyze_counts() {
    let dir = tmpdir("text");
    let input = data("text/disk-irq-stress-6000.ftrace.txt");
    let (events, summary) = convert_to_json(&input, dir.path());
    let perfetto = &summary["perfetto"];
    assert_eq!(perfetto["cpus"], 2);
    let report = analyze(&input);

    // IRQ slices per IRQ = analyze's handler counts; named as analyze names them.
    let mut irq_slices: BTreeMap<u64, u64> = BTreeMap::new();
    for e in events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "irq")
    {
        *irq_slices
            .entry(e["args"]["irq"].as_u64().unwrap())
            .or_default() += 1;
    }
    let irqs = report["irqs"]["irqs"].as_array().unwrap();
    assert!(!irqs.is_empty());
    for irq in irqs {
        let n = irq["irq"].as_u64().unwrap();
        assert_eq!(
            irq_slices.get(&n).copied().unwrap_or(0),
            irq["count"].as_u64().unwrap()
        );
        let name = format!("irq {n} {}", irq["name"].as_str().unwrap());
        assert!(events.iter().any(|e| e["name"] == name.as_str()), "{name}");
    }
    assert_eq!(perfetto["irq_slices"], irq_slices.values().sum::<u64>());

    // Run time per task = the sum of its task slices.
    let mut run_ns: HashMap<i64, i64> = HashMap::new();
    for e in events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "task")
    {
        *run_ns
            .entry(e["args"]["tid"].as_i64().unwrap())
            .or_default() += ns(&e["dur"]);
    }
    let tasks = report["tasks"]["tasks"].as_array().unwrap();
    let mut compared = 0;
    for t in tasks {
        let tid = t["tid"].as_i64().unwrap();
        if tid == 0 {
            continue;
        }
        assert_eq!(
            run_ns.get(&tid).copied().unwrap_or(0),
            t["run_ns"].as_i64().unwrap(),
            "run time of tid {tid}"
        );
        compared += 1;
    }
    assert!(compared > 10, "only {compared} tasks compared");

    // One arrow per wake-up analyze counts (inferred switch-ins included).
    let wakeups: u64 = tasks
        .iter()
        .map(|t| t["wakeups"]["count"].as_u64().unwrap_or(0))
        .sum();
    let flows = events.iter().filter(|e| e["ph"] == "s").count() as u64;
    assert_eq!(flows, perfetto["wakeups"].as_u64().unwrap());
    assert!(flows > 100);
    assert_eq!(flows, wakeups);
}

#[test]
fn perfetto_json_of_a_dat_names_the_tracks_and_the_markers() {
    let dir = tmpdir("dat");
    let (events, summary) = convert_to_json(&data("instances.v7.dat"), dir.path());
    assert!(summary["perfetto"]["markers"].as_u64().unwrap() > 0);
    let markers: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "i" && e["cat"] == "marker")
        .collect();
    assert_eq!(
        markers.len() as u64,
        summary["perfetto"]["markers"].as_u64().unwrap()
    );
    let cpus: Vec<_> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(cpus.iter().all(|c| c.starts_with("CPU ")), "{cpus:?}");

    let (events, _) = convert_to_json(&data("cyclictest-idle.v7.dat"), dir.path());
    assert!(events
        .iter()
        .any(|e| e["ph"] == "X" && e["cat"] == "softirq"));
    assert!(events
        .iter()
        .any(|e| e["ph"] == "X" && e["name"] == "cyclictest"));
}

/// `trace-cmd report FILE` without its first line (the file name), or `None` when
/// trace-cmd is absent or cannot read the file (the Debian build has no zlib).
fn trace_cmd_report(file: &Path) -> Option<String> {
    let out = Command::new("trace-cmd")
        .arg("report")
        .arg(file)
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("trace-cmd cannot read {}", file.display());
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Some(text.lines().skip(1).collect::<Vec<_>>().join("\n"))
}

fn stats(file: &Path) -> Value {
    let mut v = json_data(
        &run(&["report", file.to_str().unwrap(), "--stats", "--json"]),
        "jitterlab.report.stats",
    );
    // Everything but the file's own name and format must agree; a v6 file lists every
    // CPU, a v7 file only those with data.
    for k in ["file", "format"] {
        v.as_object_mut().unwrap().remove(k);
    }
    v["per_cpu"]
        .as_array_mut()
        .unwrap()
        .retain(|c| c["events"] != 0 || c["lost"] != 0);
    for b in v["buffers"].as_array_mut().unwrap() {
        b["per_cpu"]
            .as_array_mut()
            .unwrap()
            .retain(|c| c["events"] != 0 || c["lost"] != 0);
    }
    v
}

/// v7 -> v6 -> v7: every copy has the same events, in our reader and in trace-cmd's.
fn round_trip(src: &Path, dir: &Path) {
    let v6 = dir.join("copy.v6.dat");
    let v7 = dir.join("copy.v7.dat");
    let zlib = dir.join("copy.zlib.dat");
    let o = run(&[
        "convert",
        src.to_str().unwrap(),
        v6.to_str().unwrap(),
        "--format",
        "v6",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Default: the other version than the input's.
    let o = run(&[
        "convert",
        v6.to_str().unwrap(),
        v7.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(
        json_data(&o, "jitterlab.convert")["output_format"],
        "trace-cmd .dat v7 (zstd)"
    );
    let o = run(&[
        "convert",
        v7.to_str().unwrap(),
        zlib.to_str().unwrap(),
        "--format",
        "v7",
        "--compression",
        "zlib",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let want = stats(src);
    for copy in [&v6, &v7, &zlib] {
        assert_eq!(stats(copy), want, "{}", copy.display());
    }
    // trace-cmd reads the zstd and uncompressed copies (this build has no zlib): they
    // print exactly what the original prints.
    match trace_cmd_report(&v6) {
        Some(reference) => {
            assert_eq!(
                trace_cmd_report(&v7).as_ref(),
                Some(&reference),
                "trace-cmd report of v7"
            );
            if let Some(original) = trace_cmd_report(src) {
                assert!(
                    original == reference,
                    "trace-cmd report of the v6 copy differs"
                );
            }
        }
        None => skip("no trace-cmd: copies compared with our reader only"),
    }
}

#[test]
fn dat_copies_between_versions_read_alike() {
    let dir = tmpdir("dat-copy");
    round_trip(Path::new(&data("cyclictest-idle.v7.dat")), dir.path());
    round_trip(Path::new(&data("instances.v7zlib.dat")), dir.path());
    // Nothing left behind but the outputs.
    let mut left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["copy.v6.dat", "copy.v7.dat", "copy.zlib.dat"]);
}

#[test]
fn bad_conversions_fail_cleanly_and_leave_no_file() {
    let dir = tmpdir("bad");
    let text = data("text/disk-irq-stress-6000.ftrace.txt");
    let out = dir.path().join("x.dat");
    let o = run(&["convert", &text, out.to_str().unwrap(), "--format", "v6"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("text trace has no ring-buffer pages"),
        "{}",
        stderr(&o)
    );
    let o = run(&["convert", &text, dir.path().join("x.out").to_str().unwrap()]);
    assert!(
        stderr(&o).contains("cannot tell the output format"),
        "{}",
        stderr(&o)
    );
    // A truncated .dat: the reader's error, no partial output.
    let whole = std::fs::read(data("cyclictest-idle.v7.dat")).unwrap();
    let cut = dir.path().join("cut.dat");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let o = run(&["convert", cut.to_str().unwrap(), out.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cut.dat"), "{}", stderr(&o));
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["cut.dat"]);
}

/// record -> read -> write -> trace-cmd report, on this machine.
#[test]
fn a_recording_survives_conversion_both_ways() {
    if !is_root() || !Path::new("/sys/kernel/tracing/events").exists() {
        skip("recording needs root and tracefs at /sys/kernel/tracing");
        return;
    }
    let _lock = host_lock();
    let dir = tmpdir("record");
    let rec = dir.path().join("rec.dat");
    let o = run(&[
        "record",
        "--preset",
        "sched",
        "-o",
        rec.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "for i in 1 2 3 4 5 6 7 8; do sleep 0.01; done",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stats(&rec);
    assert!(s["total"].as_u64().unwrap() > 50, "{s}");
    round_trip(&rec, dir.path());
    let (events, _) = convert_to_json(rec.to_str().unwrap(), dir.path());
    assert!(events
        .iter()
        .any(|e| e["ph"] == "X" && e["name"] == "sleep"));
}

/// `--cpu` and `--from`/`--to` keep a part of the trace, cut as analyze cuts it.
#[test]
fn perfetto_json_of_a_window_holds_only_that_window() {
    let dir = tmpdir("window");
    let input = data("text/disk-irq-stress-6000.ftrace.txt");
    let out = dir.path().join("w.json");
    let (from, to) = ("995.170000", "995.180000");
    let o = run(&[
        "convert",
        &input,
        out.to_str().unwrap(),
        "--cpu",
        "1",
        "--from",
        from,
        "--to",
        to,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let events = check_chrome_json(&out);
    let (lo, hi) = (995_170_000_000i64, 995_180_000_000i64);
    let mut slices = 0;
    // An arrow into the window starts where its waking was, maybe before or elsewhere.
    for e in events.iter().filter(|e| e["ph"] != "M" && e["ph"] != "s") {
        // CPU 1's tracks only: pid = CPU + 1.
        assert_eq!(e["pid"], 2, "{e}");
        let ts = ns(&e["ts"]);
        assert!(ts >= lo && ts <= hi, "{e}");
        if e["ph"] == "X" {
            assert!(ts + ns(&e["dur"]) <= hi, "{e}");
            slices += 1;
        }
    }
    assert!(slices > 10, "{slices} slices in the window");
    // Busy time of the window = analyze's for the same window.
    let busy: i64 = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "task")
        .map(|e| ns(&e["dur"]))
        .sum();
    let report = json_data(
        &run(&[
            "analyze",
            &input,
            "--json",
            "--section",
            "cpus",
            "--cpu",
            "1",
            "--from",
            from,
            "--to",
            to,
        ]),
        "jitterlab.analyze",
    );
    assert_eq!(busy, report["cpus"]["cpus"][0]["busy_ns"].as_i64().unwrap());
    // A .dat copy is whole: the window is refused.
    let o = run(&[
        "convert",
        &data("cyclictest-idle.v7.dat"),
        "x.dat",
        "--cpu",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `convert` over a device node, a FIFO and a symlink: written through, never replaced
/// (it once renamed its temporary file over `/dev/null` when run as root).
#[test]
fn special_outputs_are_written_through_never_replaced() {
    use std::os::unix::fs::{symlink, FileTypeExt};
    let dir = tmpdir("special");
    let input = data("cyclictest-idle.v7.dat");
    let mk = |path: &Path, mode: libc::mode_t, dev: libc::dev_t| {
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        unsafe { libc::mknod(c.as_ptr(), mode, dev) == 0 }
    };
    // A FIFO, read meanwhile: the JSON arrives whole through it.
    let fifo = dir.path().join("fifo");
    assert!(mk(&fifo, libc::S_IFIFO | 0o600, 0));
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let o = run(&[
        "convert",
        &input,
        fifo.to_str().unwrap(),
        "--format",
        "perfetto",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // (Checked before joining: a FIFO replaced by a file would leave the reader waiting.)
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    let got = reader.join().unwrap();
    let json: Value = serde_json::from_slice(&got).expect("the whole JSON through the FIFO");
    assert!(json["traceEvents"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));

    // A symlink to a regular file: the link stays, its target is replaced.
    let real = dir.path().join("real.dat");
    std::fs::write(&real, b"old").unwrap();
    let link = dir.path().join("link.dat");
    symlink(&real, &link).unwrap();
    let o = run(&["convert", &input, link.to_str().unwrap(), "--format", "v6"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read(&real)
        .unwrap()
        .starts_with(b"\x17\x08\x44tracing"));

    // A null device of our own (as root): still a device after the conversion.
    if !is_root() {
        skip("making a device node needs root");
        return;
    }
    let null = dir.path().join("null");
    assert!(mk(&null, libc::S_IFCHR | 0o666, libc::makedev(1, 3)));
    let o = run(&["convert", &input, null.to_str().unwrap(), "--format", "v6"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::metadata(&null)
        .unwrap()
        .file_type()
        .is_char_device());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 4, "no temporary file left: {left:?}");
}

#[test]
fn a_perfetto_export_that_holds_nothing_says_so() {
    let dir = tmpdir("nothing");
    let out = dir.path().join("calls.json");
    let o = run(&[
        "convert",
        &data("text/fgraph-smi-abstime.txt"),
        out.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let d = json_data(&o, "jitterlab.convert");
    assert_eq!(d["perfetto"]["task_slices"], 0);
    assert!(d["warnings"][0]
        .as_str()
        .unwrap()
        .contains("nothing was exported"));
    // A trace with tasks has no warning.
    let o = run(&[
        "convert",
        &data("text/fgraph-report.txt"),
        out.to_str().unwrap(),
        "--json",
    ]);
    assert!(json_data(&o, "jitterlab.convert")["warnings"].is_null());
}

/// Issue 13, D2: Perfetto JSON of a multi-buffer .dat is drawn from one buffer, named on
/// stderr with the others; `--buffer` picks it. A .dat copy keeps every buffer.
#[test]
fn perfetto_of_a_multi_buffer_dat_names_the_buffers_not_drawn() {
    let dir = tmpdir("buffers");
    let file = data("instances.v7.dat");
    let out = dir.path().join("top.json").display().to_string();
    let o = run(&["convert", &file, &out, "--json"]);
    let top = json_data(&o, "jitterlab.convert");
    assert!(
        stderr(&o).contains(
            "not read: buffer jlab_small (404 events, 2043 lost), buffer jlab_big (2056 events)"
        ),
        "{}",
        stderr(&o)
    );
    let out = dir.path().join("big.json").display().to_string();
    let o = run(&["convert", &file, &out, "--json", "--buffer", "jlab_big"]);
    let big = json_data(&o, "jitterlab.convert");
    assert_eq!(stderr(&o), "");
    assert!(
        big["perfetto"]["irq_slices"].as_u64().unwrap()
            > top["perfetto"]["irq_slices"].as_u64().unwrap(),
        "{big} {top}"
    );
    // The copy has every buffer: no warning.
    let out = dir.path().join("copy.dat").display().to_string();
    let o = run(&["convert", &file, &out, "--format", "v6"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    // ... so a buffer to copy makes no sense.
    let o = run(&[
        "convert", &file, &out, "--format", "v6", "--buffer", "jlab_big",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--buffer applies to Perfetto output only"),
        "{}",
        stderr(&o)
    );
}

/// An LTTng trace folder converted to .dat (v6, v7 by name and by --format) analyzes as
/// the folder does: the same JSON apart from the source format.
#[test]
fn lttng_folder_to_dat_analyzes_as_the_folder() {
    let dir = tmpdir("lttng");
    let folder = data("lttng/kernel-irq-sched");
    let analyze = |input: &str| {
        let mut d = json_data(&run(&["analyze", "--json", input]), "jitterlab.analyze");
        let format = d["source"]["format"].as_str().unwrap().to_string();
        d["source"]["format"] = Value::Null;
        (format, d)
    };
    let (format, want) = analyze(&folder);
    assert_eq!(format, "LTTng CTF 1.8 (kernel, 4 streams)");
    for (name, args, out_format) in [
        ("by-name.dat", &[][..], "trace-cmd .dat v7 (zstd)"),
        ("v6.dat", &["--format", "v6"][..], "trace-cmd .dat v6"),
        (
            "v7.dat",
            &["--format", "v7", "--compression", "zlib"][..],
            "trace-cmd .dat v7 (zlib)",
        ),
    ] {
        let out = dir.path().join(name);
        let out = out.to_str().unwrap();
        let mut cmd = vec!["convert", &folder, out, "--json"];
        cmd.extend_from_slice(args);
        let summary = json_data(&run(&cmd), "jitterlab.convert");
        assert_eq!(
            summary["output_format"],
            format!("{out_format}: 31556 events of 541 LTTng event classes (system lttng)")
        );
        assert!(summary.get("warnings").is_none(), "{summary}");
        let (format, got) = analyze(out);
        assert_eq!(format, out_format);
        assert_eq!(got, want, "{name}");
    }
}
