//! `jitterlab load`: the generators alone or around a command, on the CPUs
//! asked, ended by the duration, the command or a signal. Unprivileged: the
//! loads run SCHED_OTHER and change nothing on the host.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{json_data, run, stderr, stdout};

#[test]
fn a_timed_load_reports_its_work_and_rate() {
    let o = run(&[
        "load",
        "cpu:2",
        "io:1",
        "--cpus",
        "0",
        "--duration",
        "300ms",
        "--json",
    ]);
    let d = json_data(&o, "jitterlab.load");
    assert_eq!(d["cpus"], "0");
    assert_eq!(d["stopped_by"], "duration");
    let wall = d["wall_ns"].as_f64().unwrap();
    assert!(wall >= 300e6, "{wall}");
    let loads = d["loads"].as_array().unwrap();
    assert_eq!(loads.len(), 2);
    assert_eq!(loads[0]["spec"]["cpu"], 2);
    assert_eq!(loads[1]["spec"]["io"], 1);
    for l in loads {
        let ops = l["ops"].as_f64().unwrap();
        assert!(ops > 0.0, "{l}");
        // The rate is the count over the run's wall time.
        let rate = l["ops_per_s"].as_f64().unwrap();
        assert!(
            (rate - ops / (wall / 1e9)).abs() < 1e-6 * rate.max(1.0),
            "{l}"
        );
    }
}

#[test]
fn the_command_runs_with_no_signal_blocked_and_its_status_is_the_status() {
    // The CLI blocks SIGINT and SIGTERM in itself to end cleanly; the command must
    // not inherit that (it would ignore Ctrl-C).
    let o = run(&[
        "load",
        "cpu:1",
        "--",
        "sh",
        "-c",
        "grep SigBlk /proc/self/status; exit 7",
    ]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "SigBlk:\t0000000000000000");
    // The summary goes to stderr: stdout is the command's.
    let err = stderr(&o);
    assert!(err.contains("ended by command"), "{err}");
    assert!(err.contains("exit status: 7"), "{err}");

    let o = run(&["load", "cpu:1", "--", "/nonexistent/command"]);
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    let o = run(&["load", "cpu:x", "--duration", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn the_duration_ends_a_longer_command() {
    let started = Instant::now();
    let o = run(&[
        "load",
        "cpu:1",
        "--duration",
        "200ms",
        "--json",
        "--",
        "sleep",
        "30",
    ]);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(o.status.success(), "{}", stderr(&o));
    // The report is JSON on stderr when a command runs.
    let v: serde_json::Value = serde_json::from_slice(&o.stderr).expect("JSON on stderr");
    assert_eq!(v["data"]["stopped_by"], "duration");
    assert_eq!(v["data"]["command"], serde_json::json!(["sleep", "30"]));
    assert_eq!(v["data"]["command_exit"], "signal: 15 (SIGTERM)");
}

#[test]
fn the_generators_run_on_the_cpus_asked_and_stop_on_sigint() {
    let child = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        // The duration only ends a test that failed before its SIGINT.
        .args([
            "load",
            "cpu:3",
            "--cpus",
            "0",
            "--duration",
            "60s",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    // Wait for the three generator threads, then read where they may run.
    let deadline = Instant::now() + Duration::from_secs(10);
    let allowed = loop {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
            let dir = entry.unwrap().path();
            let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
            if comm.trim() == "jl-load-cpu" {
                let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
                let line = status
                    .lines()
                    .find(|l| l.starts_with("Cpus_allowed_list:"))
                    .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string());
                found.push(line.unwrap_or_default());
            }
        }
        if found.len() == 3 && found.iter().all(|c| c == "0") || Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(allowed, ["0", "0", "0"]);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d = json_data(&o, "jitterlab.load");
    assert_eq!(d["stopped_by"], "signal");
    assert!(d["loads"][0]["ops"].as_u64().unwrap() > 0);
}

/// A `cmd:` load's chatter (stress-ng's warnings) stays off the terminal; a command
/// that ends before the load does says why in the report, with its last line.
#[test]
fn a_load_commands_chatter_stays_off_the_terminal() {
    let o = run(&[
        "load",
        "cmd:echo \"stress-ng: warn: [1] chatter-$((40+2))\" >&2; echo stdout-$((40+2)); exec sleep 30",
        "--duration",
        "300ms",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("chatter-42"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("stdout-42"), "{}", stdout(&o));

    let o = run(&[
        "load",
        "cmd:echo \"stress-ng: error: failed-$((1+2))\" >&2; exit 3",
        "--duration",
        "1s",
        "--json",
    ]);
    let d = json_data(&o, "jitterlab.load");
    let exit = d["loads"][0]["exit"].as_str().unwrap_or_default();
    assert!(
        exit.contains("exited by itself before the end: exit status: 3"),
        "{exit}"
    );
    assert!(exit.ends_with(": stress-ng: error: failed-3"), "{exit}");
}
