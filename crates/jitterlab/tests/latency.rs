//! `jitterlab latency` end to end: outputs, the cyclictest file, exit statuses.

use std::process::Output;

use crate::util::{is_root, json_data, run, stderr, stdout};

/// `jitterlab latency` on CPU 0 as SCHED_OTHER without /dev/cpu_dma_latency,
/// so that the test needs no privilege, with `args` added.
fn probe_cpu0(args: &[&str]) -> Output {
    let mut all = vec![
        "latency",
        "--cpus",
        "0",
        "--policy",
        "other",
        "--no-dma-latency",
    ];
    all.extend_from_slice(args);
    run(&all)
}

#[test]
fn json_histogram_and_cyclictest_file_agree() {
    let dir = tempfile::tempdir().unwrap();
    let hist = dir.path().join("hist.txt");
    let o = probe_cpu0(&[
        "--interval",
        "1ms",
        "--loops",
        "300",
        "--json",
        "-",
        "--histogram-cyclictest",
        hist.to_str().unwrap(),
        "--histogram-rows",
        "200",
    ]);
    let d = json_data(&o, "jitterlab.latency");
    let cpu = &d["cpus"][0];
    assert_eq!(cpu["cpu"], 0);
    assert_eq!(cpu["samples"], 300);
    let buckets: u64 = cpu["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(buckets, 300);
    assert_eq!(d["config"]["interval_ns"], 1_000_000);
    assert_eq!(d["config"]["stop"]["loops"], 300);
    assert!(d["environment"]["kernel_release"].as_str().unwrap().len() > 1);
    assert!(d["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("SCHED_OTHER")));

    // Parse the cyclictest file back: rows 0..200, Total + Overflows = samples.
    let text = std::fs::read_to_string(&hist).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "# Histogram");
    let rows: Vec<(u64, u64)> = lines[1..201]
        .iter()
        .map(|l| {
            let (us, n) = l.split_once(' ').unwrap();
            (us.parse().unwrap(), n.parse().unwrap())
        })
        .collect();
    assert_eq!(rows[0].0, 0);
    assert_eq!(rows[199].0, 199);
    let in_rows: u64 = rows.iter().map(|r| r.1).sum();
    let field = |prefix: &str| -> u64 {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    assert_eq!(field("# Total:"), in_rows);
    assert_eq!(in_rows + field("# Histogram Overflows:"), 300);
    assert_eq!(
        field("# Max Latencies:"),
        cpu["max_ns"].as_u64().unwrap() / 1000
    );
    assert_eq!(
        field("# Min Latencies:"),
        cpu["min_ns"].as_u64().unwrap() / 1000
    );
    assert!(lines.iter().any(|l| l.starts_with("# Thread 0:")));
}

#[test]
fn fail_above_exits_3() {
    let o = probe_cpu0(&["--loops", "50", "--fail-above", "0"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("FAILED: a latency exceeded 0ns"),
        "{}",
        stdout(&o)
    );
    let o = probe_cpu0(&["--loops", "50", "--fail-above", "10000000"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn fifo_probe_summary() {
    if !is_root() {
        eprintln!("skipped: SCHED_FIFO needs root");
        return;
    }
    let o = run(&[
        "latency",
        "--cpus",
        "0",
        "--interval",
        "500us",
        "--loops",
        "400",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with("CPUs 0, fifo priority 95, interval 500us, deadline 500us, 400 loops;"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("0 "))
        .unwrap();
    assert_eq!(row.split_whitespace().nth(1), Some("400"), "{text}");
}

#[test]
fn bad_input_is_refused_before_any_thread_starts() {
    let usage = |args: &[&str], message: &str| {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(message), "{args:?}: {}", stderr(&o));
    };
    usage(
        &["latency", "--interval", "0"],
        "--interval must be above 0",
    );
    usage(&["latency", "--interval", "5us"], "add --force");
    usage(
        &["latency", "--interval=-3ms"],
        "expected a number with a unit",
    );
    usage(
        &["latency", "--priority", "100"],
        "out of range for policy fifo: 1-99",
    );
    usage(&["latency", "--cpus", "4000"], "CPU 4000 is not online");
    usage(&["latency", "--loops", "0"], "--loops must be at least 1");
    usage(
        &["latency", "--loops", "5", "--duration", "1s"],
        "cannot be used with",
    );
}

#[test]
fn with_load_on_another_cpu() {
    let o = probe_cpu0(&[
        "--loops",
        "100",
        "--load",
        "cpu:4",
        "--load",
        "cmd:sleep 30",
        "--load-cpus",
        "0",
        "--json",
        "-",
    ]);
    let d = json_data(&o, "jitterlab.latency");
    assert_eq!(d["load_cpus"], "0");
    let loads = d["loads"].as_array().unwrap();
    assert_eq!(loads[0]["spec"]["cpu"], 4);
    assert!(loads[0]["ops"].as_u64().unwrap() > 0);
    assert!(loads[1]["exit"].as_str().unwrap().contains("ended"));
    let o = run(&["latency", "--load", "gpu:1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown load \"gpu\""),
        "{}",
        stderr(&o)
    );
    let o = run(&["latency", "--load", "cpu:1", "--load-cpus", "4000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("CPU 4000 does not exist"),
        "{}",
        stderr(&o)
    );
}
