//! `jitterlab record` on this machine: the file opens in trace-cmd and in our reader with
//! the same events, tracefs is left as found, and a flight recorder stops at a
//! `latency --break` spike; the clock pair puts a recording's events at their wall-clock
//! time.

use std::path::Path;
use std::process::Command;

use jitterlab_trace::dat::DatFile;
use jitterlab_trace::EventSource;

use crate::util::{host_lock, is_root, json_data, run, skip, stderr};

const TOP: &str = "/sys/kernel/tracing";

/// Whether the live tracefs can be used; prints why not.
fn can_trace() -> bool {
    if !is_root() || !Path::new(TOP).join("instances").exists() {
        skip(format_args!("recording needs root and tracefs at {TOP}"));
        return false;
    }
    true
}

/// The top-level tracefs files a recording must not change.
fn top_state() -> Vec<String> {
    [
        "tracing_on",
        "buffer_size_kb",
        "set_event",
        "saved_cmdlines_size",
        "current_tracer",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(Path::new(TOP).join(f)).unwrap_or_default())
    .collect()
}

/// Our instances (`jitterlab-PID`) present in tracefs.
fn our_instances() -> Vec<String> {
    std::fs::read_dir(Path::new(TOP).join("instances"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                // Sessions name their instance jitterlab-PID.
                .filter(|n| {
                    n.strip_prefix("jitterlab-")
                        .is_some_and(|pid| pid.parse::<u32>().is_ok())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `trace-cmd report FILE` line counts per event name, or `None` without trace-cmd.
fn trace_cmd_counts(file: &Path) -> Option<std::collections::BTreeMap<String, u64>> {
    let out = Command::new("trace-cmd")
        .arg("report")
        .arg(file)
        .output()
        .ok()?;
    assert!(out.status.success(), "trace-cmd report failed");
    let mut counts = std::collections::BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines().skip(1) {
        // "  comm-pid [001]  5443.373456: name:   fields"
        let Some(after) = line.split("]").nth(1) else {
            continue;
        };
        let Some(name) = after.split(':').nth(1) else {
            continue;
        };
        *counts.entry(name.trim().to_string()).or_insert(0) += 1;
    }
    Some(counts)
}

#[test]
fn a_recording_opens_in_trace_cmd_and_in_our_reader_alike() {
    if !can_trace() {
        return;
    }
    let _lock = host_lock();
    let before = top_state();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.dat");
    let o = run(&[
        "record",
        "-e",
        "sched:sched_switch",
        "-e",
        "sched:sched_wakeup",
        "--preset",
        "irq",
        "-o",
        file.to_str().unwrap(),
        "--json",
        "--",
        "sh",
        "-c",
        "for i in 1 2 3 4 5 6 7 8; do sleep 0.01; done",
    ]);
    let d = json_data(&o, "jitterlab.record");
    assert_eq!(d["stopped_by"], "command");
    assert_eq!(d["command_exit"], "exit status: 0");
    assert!(d["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == "irq:softirq_entry"));
    for cpu in d["cpus"].as_array().unwrap() {
        assert_eq!(cpu["dropped"], 0, "{cpu}");
        assert_eq!(cpu["overrun"], 0, "{cpu}");
    }
    assert_eq!(before, top_state(), "the top level is as it was");
    assert!(our_instances().is_empty(), "{:?}", our_instances());

    let dat = DatFile::open(&file).unwrap();
    let counts = dat.count_events(0).unwrap();
    let ours = |name: &str| {
        counts
            .by_event
            .iter()
            .find(|c| c.name.ends_with(&format!(":{name}")))
            .map_or(0, |c| c.count)
    };
    // Eight sleeps of the shell's children: at least 8 switches away from them.
    assert!(ours("sched_switch") >= 8, "{counts:?}");
    assert_eq!(
        counts.per_cpu.iter().map(|c| c.events).sum::<u64>(),
        counts.total
    );
    match trace_cmd_counts(&file) {
        Some(theirs) => {
            for (name, n) in &theirs {
                assert_eq!(ours(name), *n, "{name}: ours vs trace-cmd report");
            }
            assert_eq!(theirs.values().sum::<u64>(), counts.total);
        }
        None => skip("trace-cmd not installed: compared with our reader only"),
    }
}

#[test]
fn a_flight_recorder_ends_at_the_latency_break() {
    if !can_trace() {
        return;
    }
    let _lock = host_lock();
    let top_on = std::fs::read_to_string(Path::new(TOP).join("tracing_on")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("spike.dat");
    let rec = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args([
            "record",
            "--flight-recorder",
            "--duration",
            "120s",
            "--json",
            "-o",
            file.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for its instance to trace: a new instance traces from its mkdir on, before
    // the session turns it off to set it up; tracing with its events enabled is the
    // session's last step, and a break arms only buffers that trace.
    let tracing = || {
        our_instances().iter().any(|name| {
            let dir = Path::new(TOP).join("instances").join(name);
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
            read("tracing_on").trim() == "1" && !read("set_event").trim().is_empty()
        })
    };
    let t0 = std::time::Instant::now();
    while !tracing() && t0.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(tracing(), "the recorder did not start within 60 s");
    let o = run(&[
        "latency",
        "--cpus",
        "0",
        "--policy",
        "other",
        "--no-dma-latency",
        "--duration",
        "10s",
        "--break",
        "1us",
    ]);
    // Restore the top-level switch the break turned off, whatever happens next.
    std::fs::write(Path::new(TOP).join("tracing_on"), &top_on).unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = rec.wait_with_output().unwrap();
    assert!(out.status.success());
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["data"]["stopped_by"], "tracing off");
    assert_eq!(summary["data"]["flight_recorder"], true);
    assert!(our_instances().is_empty());
    // The file ends near the marker: it holds the print event.
    let dat = DatFile::open(&file).unwrap();
    let counts = dat.count_events(0).unwrap();
    assert!(
        counts
            .by_event
            .iter()
            .any(|c| c.name.as_ref() == "ftrace:print" && c.count >= 1),
        "{:?}",
        counts.by_event
    );
    if let Some(theirs) = trace_cmd_counts(&file) {
        assert!(theirs.get("print").copied().unwrap_or(0) >= 1, "{theirs:?}");
    }
}

/// A tracefs instance made by a test, removed (with its events off) when dropped, also
/// when the test fails.
struct TestInstance {
    dir: std::path::PathBuf,
    reader: Option<std::process::Child>,
}

impl Drop for TestInstance {
    fn drop(&mut self) {
        if let Some(mut r) = self.reader.take() {
            let _ = r.kill();
            let _ = r.wait();
        }
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        let _ = std::fs::write(self.dir.join("events/enable"), "0");
        // rmdir can answer EBUSY while the reader's file is being closed.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// The overrun counts of an instance's per-CPU stats.
fn overruns(dir: &Path) -> u64 {
    (0..64)
        .map_while(|c| std::fs::read_to_string(dir.join(format!("per_cpu/cpu{c}/stats"))).ok())
        .map(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("overrun: "))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum()
}

/// The ftrace latency hunt's first mistake, measured: `cat trace_pipe` (text formatted in
/// the kernel, by a reader at normal priority) and `jitterlab record` trace the same events with the
/// same ring-buffer size, at the same time, during a context-switch storm. cat loses
/// events to overruns; record loses none. (Each reader's own counts only: the two
/// windows differ, so their totals are not compared.)
#[test]
fn record_loses_no_events_where_cat_trace_pipe_does() {
    if !can_trace() {
        return;
    }
    if Command::new("stress-ng").arg("--version").output().is_err() {
        skip("stress-ng is not installed");
        return;
    }
    let _lock = host_lock();
    let events = ["sched_switch", "sched_waking", "sched_wakeup"];
    let buffer_kb = "2048";
    let dir = Path::new(TOP)
        .join("instances")
        .join(format!("jltest-cat-{}", std::process::id()));
    std::fs::create_dir(&dir).expect("create a tracefs instance");
    let mut cat = TestInstance {
        dir: dir.clone(),
        reader: None,
    };
    std::fs::write(dir.join("buffer_size_kb"), buffer_kb).unwrap();
    for e in events {
        std::fs::write(dir.join(format!("events/sched/{e}/enable")), "1").unwrap();
    }
    let tmp = tempfile::tempdir().unwrap();
    let text = tmp.path().join("cat.txt");
    cat.reader = Some(
        Command::new("cat")
            .arg(dir.join("trace_pipe"))
            .stdout(std::fs::File::create(&text).unwrap())
            .spawn()
            .expect("cat"),
    );
    let dat = tmp.path().join("rec.dat");
    let mut args = vec!["record", "--json", "--buffer-kb", buffer_kb, "-o"];
    args.push(dat.to_str().unwrap());
    let names: Vec<String> = events.iter().map(|e| format!("sched:{e}")).collect();
    for n in &names {
        args.extend(["-e", n.as_str()]);
    }
    args.extend([
        "--",
        "stress-ng",
        "--switch",
        "2",
        "--timeout",
        "1",
        "--quiet",
    ]);
    let summary = json_data(&run(&args), "jitterlab.record");
    std::fs::write(dir.join("tracing_on"), "0").unwrap();
    // Let cat drain what is left, then stop it.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let cat_lost = overruns(&dir);
    drop(cat);
    let cat_read = std::fs::read_to_string(&text)
        .unwrap()
        .lines()
        .filter(|l| l.contains("sched_"))
        .count() as u64;

    let lost: u64 = summary["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            ["overrun", "dropped", "commit_overrun"]
                .iter()
                .map(|k| c[k].as_u64().unwrap())
                .sum::<u64>()
        })
        .sum();
    let file = DatFile::open(&dat).unwrap();
    let counts = file.count_events(0).unwrap();
    let recorded = counts.total;
    eprintln!(
        "cat trace_pipe: {cat_read} read, {cat_lost} overrun; record: {recorded} events, {lost} lost"
    );
    assert!(
        cat_lost * 100 > (cat_read + cat_lost),
        "the workload did not outrun cat (it lost {cat_lost} of {}): the comparison says nothing",
        cat_read + cat_lost
    );
    assert_eq!(lost, 0, "record lost events: {summary}");
    for c in &counts.per_cpu {
        assert_eq!(c.lost_markers, 0, "cpu {}: pages with missed events", c.cpu);
    }
    // Invariants of one run only: cat's window is longer than the recording's (its
    // instance is on before `record` starts and after it ends), so on a busy machine it
    // may read more events in all; the two counts are not compared.
    assert!(recorded > 0, "record read nothing");
}

#[test]
fn a_recording_keeps_the_thread_groups() {
    if !can_trace() {
        return;
    }
    let _lock = host_lock();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("threads.dat");
    let pid_file = dir.path().join("pid");
    // A process of four threads that each sleep and work a little; it writes its pid.
    let o = run(&[
        "record",
        "--preset",
        "sched",
        "-o",
        file.to_str().unwrap(),
        "--json",
        "--",
        "python3",
        "-c",
        "import os, sys, threading, time\n\
         open(sys.argv[1], 'w').write(str(os.getpid()))\n\
         def work():\n    time.sleep(0.02); sum(range(20000))\n\
         ts = [threading.Thread(target=work) for _ in range(3)]\n\
         [t.start() for t in ts]; work(); [t.join() for t in ts]",
        pid_file.to_str().unwrap(),
    ]);
    let d = json_data(&o, "jitterlab.record");
    assert_eq!(d["command_exit"], "exit status: 0", "{}", stderr(&o));

    // The .dat keeps the kernel's saved_tgids: the python process and its threads.
    let dat = DatFile::open(&file).unwrap();
    let tgids = &dat.info().tgids;
    let names = dat.cmdlines();
    // The process's own pid: pids wrap (at 32768 on the CI VM), and saved_tgids keeps
    // the entries of earlier processes whose pids the threads now reuse.
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(names.get(&pid).map(|c| c.as_str()), Some("python3"));
    let threads = tgids.iter().filter(|(_, g)| *g == pid).count();
    assert!(
        threads >= 4,
        "python3 {pid}: {threads} threads in {tgids:?}"
    );

    // analyze --pid takes all of them, and trace-cmd reads the file with the option.
    let o = run(&[
        "analyze",
        file.to_str().unwrap(),
        "--section",
        "tasks",
        "--pid",
        &pid.to_string(),
        "--json",
    ]);
    let d = json_data(&o, "jitterlab.analyze");
    let tids: Vec<i64> = d["tasks"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tid"].as_i64().unwrap())
        .collect();
    assert!(tids.len() >= 4, "analyze --pid {pid}: {tids:?}");
    match Command::new("trace-cmd").arg("report").arg(&file).output() {
        Ok(out) => {
            assert!(out.status.success());
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.to_lowercase().contains("unknown"), "{err}");
        }
        Err(_) => skip("trace-cmd is not installed"),
    }
}

#[test]
fn a_recordings_clock_pair_gives_its_events_their_wall_clock_time() {
    if !can_trace() {
        return;
    }
    let _lock = host_lock();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wall.dat");
    let marks = dir.path().join("marks");
    // The command writes a marker into the recorder's instance (jitterlab-PID, PID its
    // parent's) between two CLOCK_REALTIME readings.
    let script = format!(
        "sleep 0.05; t0=$(date +%s%N); echo wall-check > {TOP}/instances/jitterlab-$PPID/trace_marker; \
         t1=$(date +%s%N); echo $t0 $t1 > {}; sleep 0.05",
        marks.display()
    );
    let before = std::time::SystemTime::now();
    let o = run(&[
        "record",
        "--preset",
        "sched",
        "-o",
        file.to_str().unwrap(),
        "--json",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    json_data(&o, "jitterlab.record");
    let text = std::fs::read_to_string(&marks).unwrap();
    let [t0, t1]: [i64; 2] = text
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect::<Vec<_>>()
        .try_into()
        .unwrap();
    let dat = DatFile::open(&file).unwrap();
    assert_eq!(dat.info().clock.as_deref(), Some("mono"), "the trace clock");
    let pair = dat.info().clocks.expect("the clock pair");
    let since_epoch = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64
    };
    // The pair is read as the recording starts: after the test started it, before the
    // command wrote its marker.
    assert!(since_epoch(before) <= pair.realtime_ns as i64 && (pair.realtime_ns as i64) < t0);
    let wall = |ts: u64| ts as i64 + pair.wall_offset_ns();
    let mut events = dat.events(dat.chosen_buffer()).unwrap();
    let (mut first, mut marker) = (None, None);
    while let Some(e) = events.next_event().unwrap() {
        first.get_or_insert(e.ts);
        if let jitterlab_trace::EventKind::Print { text, .. } = &e.kind {
            if text.contains("wall-check") {
                marker = Some(e.ts);
            }
        }
    }
    // No event is older than the recording's start (1 ms: NTP may slew CLOCK_REALTIME by
    // at most 0.5 ms a second against CLOCK_MONOTONIC).
    const SLACK: i64 = 1_000_000;
    let first = wall(first.expect("events"));
    assert!(
        first >= pair.realtime_ns as i64 - SLACK,
        "the first event is {} us before the start",
        (pair.realtime_ns as i64 - first) / 1000
    );
    // The marker is at the wall-clock time it was written, between the readings around
    // it (however long a host stall made them apart).
    let m = wall(marker.expect("the marker in the trace"));
    assert!(
        t0 - SLACK <= m && m <= t1 + SLACK,
        "the marker at {m}, written between {t0} and {t1}: {} us off",
        if m < t0 {
            (m - t0) / 1000
        } else {
            (m - t1) / 1000
        }
    );
}
