//! `jitterlab report`: the same capture as .dat and as the kernel's text gives the same
//! counts; filters, JSON lines, errors and a closed pipe.

use crate::util::{data, json_data, run, stderr, stdout};

/// `report --stats --json` of a file: (counts by short event name, total, per-CPU events).
fn stats(file: &str) -> (std::collections::BTreeMap<String, u64>, u64, Vec<u64>) {
    let o = run(&["report", file, "--stats", "--json"]);
    let d = json_data(&o, "jitterlab.report.stats");
    let by = d["by_event"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap();
            let short = name.rsplit(':').next().unwrap().to_string();
            (short, e["count"].as_u64().unwrap())
        })
        .collect();
    let cpus = d["per_cpu"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["events"].as_u64().unwrap())
        .collect();
    (by, d["total"].as_u64().unwrap(), cpus)
}

#[test]
fn dat_and_kernel_text_of_one_capture_count_alike() {
    let dat = stats(&data("cyclictest-idle.v7.dat"));
    let text = stats(&data("text/cyclictest-idle.ftrace.txt"));
    let report = stats(&data("text/cyclictest-idle.report.txt"));
    assert_eq!(dat, text);
    assert_eq!(dat, report);
    // The kernel's header says 8324 entries for this capture.
    assert_eq!(dat.1, 8324);
    assert_eq!(dat.2.iter().sum::<u64>(), 8324);
}

#[test]
fn filters_and_json_lines() {
    let file = data("cyclictest-idle.v7.dat");
    let o = run(&[
        "report",
        &file,
        "--cpu",
        "1",
        "--event",
        "sched_sw*",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() > 1000);
    let mut last = 0;
    for l in &lines {
        assert_eq!(l["event"], "sched_switch");
        assert_eq!(l["cpu"], 1);
        let ts = l["ts"].as_u64().unwrap();
        assert!(ts >= last, "in time order");
        last = ts;
    }
    // The first switch of the capture, field by field.
    let o = run(&["report", &file, "--event", "sched_switch", "--json"]);
    let first: serde_json::Value =
        serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(first["prev_comm"], "memfd:sealed-91");
    assert_eq!(first["prev_pid"], 1809);
    assert_eq!(first["prev_state"], "S");
    assert_eq!(first["next_pid"], 0);
    // A time window and a pid: text lines, all inside.
    let o = run(&[
        "report", &file, "--from", "976.3484", "--to", "976.3486", "--pid", "11384",
    ]);
    let text = stdout(&o);
    assert!(!text.is_empty());
    for line in text.lines() {
        assert!(line.contains("-11384 "), "{line}");
        let ts: f64 = line
            .split("]")
            .nth(1)
            .unwrap()
            .trim()
            .split(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((976.3484..=976.3486).contains(&ts), "{line}");
    }
}

#[test]
fn bad_files_are_named_with_their_offset_and_a_closed_pipe_is_fine() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(data("cyclictest-idle.v7.dat")).unwrap();
    let cut = dir.path().join("cut.dat");
    std::fs::write(&cut, &whole[..50_000]).unwrap();
    let o = run(&["report", cut.to_str().unwrap(), "--stats"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("cut.dat") && e.contains("byte offset"), "{e}");
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, "hello\n").unwrap();
    let o = run(&["report", junk.to_str().unwrap()]);
    assert!(
        stderr(&o).contains("expected a trace-cmd .dat file"),
        "{}",
        stderr(&o)
    );

    // `report FILE | head -1`: exit 0, no message.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args(["report", &data("cyclictest-idle.v7.dat")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A text trace is streamed from its file; one that cannot be read twice (a pipe) is read
/// once, whole: both give the same counts, and analyze (two passes: tgids, then events)
/// works on a pipe too.
#[test]
fn a_text_trace_from_a_pipe_reads_like_the_file() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let file = data("text/disk-irq-stress-6000.ftrace.txt");
    let bytes = std::fs::read(&file).unwrap();
    let piped = |args: &[&str]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let feed = bytes.clone();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&feed);
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        out
    };
    let direct = json_data(
        &run(&["report", &file, "--stats", "--json"]),
        "jitterlab.report.stats",
    );
    let from_pipe = json_data(
        &piped(&["report", "/dev/stdin", "--stats", "--json"]),
        "jitterlab.report.stats",
    );
    assert!(direct["total"].as_u64().unwrap() > 1000);
    for k in ["total", "by_event", "per_cpu", "first_ts", "last_ts"] {
        assert_eq!(direct[k], from_pipe[k], "{k}");
    }
    let a = json_data(
        &run(&["analyze", &file, "--json", "--section", "summary"]),
        "jitterlab.analyze",
    );
    let b = json_data(
        &piped(&["analyze", "/dev/stdin", "--json", "--section", "summary"]),
        "jitterlab.analyze",
    );
    assert_eq!(a["summary"], b["summary"]);
}

#[test]
fn lost_events_a_format_does_not_record_are_unknown_not_none() {
    // perf script prints nothing where perf lost samples: no count is not zero.
    let perf = data("perf/sleep-loop.perf.txt");
    let o = run(&["report", &perf, "--stats"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("lost events: unknown"), "{text}");
    let d = json_data(
        &run(&["report", &perf, "--stats", "--json"]),
        "jitterlab.report.stats",
    );
    assert_eq!(d["lost_recorded"], false);
    let o = run(&["analyze", &perf]);
    assert!(
        stdout(&o).contains("lost events: unknown"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains("lost events: none"));
    let d = json_data(&run(&["analyze", &perf, "--json"]), "jitterlab.analyze");
    assert_eq!(d["summary"]["lost_recorded"], false);

    // A .dat records them: none lost is none.
    let dat = data("cyclictest-idle.v7.dat");
    let d = json_data(
        &run(&["report", &dat, "--stats", "--json"]),
        "jitterlab.report.stats",
    );
    assert_eq!(d["lost_recorded"], true);
    let o = run(&["analyze", &dat]);
    assert!(stdout(&o).contains("lost events: none"), "{}", stdout(&o));
}
