//! `jitterlab latency` end to end: outputs, the cyclictest file, exit statuses.

use std::process::Output;

use crate::util::{is_root, json_data, json_envelope, run, skip, stderr, stdout};

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
    let o = probe_cpu0(&["--loops", "50", "--fail-above", "0us"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("FAILED: a latency exceeded 0ns"),
        "{}",
        stdout(&o)
    );
    let o = probe_cpu0(&["--loops", "50", "--fail-above", "10s"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn fifo_probe_summary() {
    if !is_root() {
        skip("SCHED_FIFO needs root");
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
        &["latency", "--interval", "0us"],
        "--interval must be above 0",
    );
    usage(&["latency", "--interval", "5us"], "add --force");
    usage(
        &["latency", "--interval=-3ms"],
        "expected a number and a unit",
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

#[test]
fn every_spike_is_in_the_ledger_with_its_timer_interrupt() {
    // A 0 ns threshold makes every sample a spike; each wake-up of the probe is a local
    // timer (LOC) interrupt on its CPU, so each spike's window must count one.
    let o = probe_cpu0(&[
        "--interval",
        "2ms",
        "--loops",
        "100",
        "--spike-threshold",
        "0ns",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let d = json_data(&o, "jitterlab.latency");
    let ledger = &d["spikes"];
    assert_eq!(ledger["threshold_ns"], 0);
    let spikes = ledger["spikes"].as_array().unwrap();
    let dropped = ledger["dropped"].as_u64().unwrap();
    assert_eq!(
        spikes.len() as u64 + dropped,
        100,
        "every sample is a spike"
    );
    assert_eq!(dropped, 0);
    let mut last_t = 0;
    for (i, s) in spikes.iter().enumerate() {
        assert_eq!(s["cpu"], 0);
        assert_eq!(s["sample"], i as u64 + 1);
        let t = s["t_ns"].as_u64().unwrap();
        assert!(t >= last_t, "in time order");
        if let Some(w) = s["window_ns"].as_u64() {
            // From a read before the previous wake-up to one after this wake-up (the
            // first sample's previous "wake-up" is its thread's start: not in the JSON).
            assert!(
                i == 0 || w >= t - last_t,
                "the window covers the period: {w} < {}",
                t - last_t
            );
            assert!(
                s["interrupts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|d| d["name"] == "LOC" && d["count"].as_u64().unwrap() >= 1),
                "spike {i}: {s}"
            );
        }
        last_t = t;
    }
    // The watcher is not real-time: on a loaded machine it may miss the read before a
    // spike's period. Most spikes are still bracketed.
    let bracketed = spikes.iter().filter(|s| s["window_ns"].is_u64()).count();
    assert!(
        bracketed >= 50,
        "only {bracketed} of 100 spikes are bracketed by two counter reads"
    );
    // Without the option there is no ledger.
    let o = probe_cpu0(&["--loops", "5", "--json"]);
    assert!(json_data(&o, "jitterlab.latency")["spikes"].is_null());
}

/// A tracefs instance made for one test, removed on drop, with the top-level
/// `tracing_on` restored.
struct Instance {
    dir: std::path::PathBuf,
    top_on: String,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::write("/sys/kernel/tracing/tracing_on", &self.top_on);
        // rmdir answers EBUSY while any process (a trace-cmd extract elsewhere) has a
        // file of the instance open: retry for a while.
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

#[test]
fn break_marks_the_trace_and_turns_tracing_off() {
    if !is_root() || !std::path::Path::new("/sys/kernel/tracing/trace_marker").exists() {
        skip("--break needs root and tracefs at /sys/kernel/tracing");
        return;
    }
    let _lock = crate::util::host_lock();
    let top_on = std::fs::read_to_string("/sys/kernel/tracing/tracing_on").unwrap();
    let dir = std::path::PathBuf::from(format!(
        "/sys/kernel/tracing/instances/jl-break-test-{}",
        std::process::id()
    ));
    std::fs::create_dir(&dir).unwrap();
    let instance = Instance {
        dir: dir.clone(),
        top_on,
    };
    std::fs::write(dir.join("tracing_on"), "1").unwrap();
    // Any wake-up is later than 1 ns... and later than 1 us on this VM; 0 would be refused.
    let o = probe_cpu0(&["--duration", "20s", "--break", "1us", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "a break is a limit hit: {}",
        stderr(&o)
    );
    let d = json_envelope(&o, "jitterlab.latency");
    assert_matches_schema(&serde_json::from_slice(&o.stdout).unwrap());
    let hit = &d["break_hit"];
    assert_eq!(hit["cpu"], 0);
    assert_eq!(hit["traced"], true);
    assert!(hit["latency_ns"].as_u64().unwrap() > 1000);
    assert!(
        d["wall_ns"].as_u64().unwrap() < 10_000_000_000,
        "ended early"
    );
    let name = format!("instances/{}", dir.file_name().unwrap().to_str().unwrap());
    assert!(d["break_buffers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b == name.as_str()));
    assert_eq!(
        std::fs::read_to_string(dir.join("tracing_on"))
            .unwrap()
            .trim(),
        "0"
    );
    let trace = std::fs::read_to_string(dir.join("trace")).unwrap();
    let us = hit["latency_ns"].as_u64().unwrap() / 1000;
    let marker = format!("jitterlab: latency {us} us > 1 us on cpu 0");
    assert!(trace.contains(&marker), "{marker:?} not in\n{trace}");
    drop(instance);
    assert!(!dir.exists());
    let o = probe_cpu0(&["--loops", "5", "--break", "0us"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Validates a whole `--json` document against docs/schema/jitterlab.latency.v1.json.
fn assert_matches_schema(doc: &serde_json::Value) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/schema/jitterlab.latency.v1.json"
    );
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON schema");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn the_json_file_matches_its_schema_and_the_plot_its_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let (json, svg) = (dir.path().join("run.json"), dir.path().join("run.svg"));
    let html = dir.path().join("run.html");
    let o = probe_cpu0(&[
        "--interval",
        "1ms",
        "--loops",
        "300",
        "--spike-threshold",
        "1us",
        "--load",
        "cpu:2",
        "--load-cpus",
        "0",
        &format!("--json={}", json.display()),
        "--plot",
        svg.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_matches_schema(&doc);
    // Latency over time holds every sample; the HTML report embeds the same result.
    let over = &doc["data"]["cpus"][0]["over_time"];
    let in_time: u64 = over["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(in_time, 300);
    let page = std::fs::read_to_string(&html).unwrap();
    let meta = page
        .split("id=\"jl-meta\">")
        .nth(1)
        .and_then(|m| m.split("</script>").next())
        .expect("the report's meta element");
    let meta: serde_json::Value = serde_json::from_str(meta).unwrap();
    assert_eq!(
        meta["report"], doc,
        "the page's result is the --json file's"
    );
    assert!(!doc["data"]["spikes"]["spikes"]
        .as_array()
        .unwrap()
        .is_empty());
    // The schema is not vacuous: a report missing a field or with a wrong type fails.
    let mut broken = doc.clone();
    broken["data"]["cpus"][0]
        .as_object_mut()
        .unwrap()
        .remove("p99_ns");
    broken["data"]["config"]["policy"] = "sometimes".into();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/schema/jitterlab.latency.v1.json"
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        jsonschema::validator_for(&schema)
            .unwrap()
            .iter_errors(&broken)
            .count(),
        2
    );

    // The SVG is well-formed, has one panel per CPU, and its bars hold every sample.
    let text = std::fs::read_to_string(&svg).unwrap();
    let xml = roxmltree::Document::parse(&text).expect("well-formed SVG");
    assert_eq!(xml.root_element().tag_name().name(), "svg");
    let panel_titles: Vec<&str> = xml
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .filter(|t| t.starts_with("CPU "))
        .collect();
    assert_eq!(panel_titles.len(), 1, "{panel_titles:?}");
    assert!(panel_titles[0].starts_with("CPU 0: 300 samples"));
    let in_bars: u64 = xml
        .descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter_map(|n| n.text()?.strip_suffix(" samples")?.rsplit(": ").next())
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    assert_eq!(in_bars, 300);
    assert!(text.contains("deadline 1.00 ms"));
}
