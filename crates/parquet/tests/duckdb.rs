//! DuckDB reads the export of the committed traces and, in SQL, reproduces `analyze
//! --json`'s per-task run time, wake-up count and max latency, IRQ counts and chain
//! counts; summing the histogram buckets of two latency runs in SQL gives the percentiles
//! of the merged HDR histogram, and per host the p99.9 of all its runs; three "hosts"
//! are one dataset; each buffer of a multi-buffer trace is a run of its own; the same
//! file name exported on two days is two runs; a latency run joins the trace recorded
//! around it (committed together) by host and wall-clock time; the audits of four hosts
//! (static audits of the host crate's fixture trees and a measured one of this VM,
//! committed) give docs/fleet.md's audit findings by host. The SQL is in
//! `duckdb_check.py`, run with python3 and the `duckdb` package (`pip install duckdb`).
//! Then `engines_check.py` reads the same dataset with pyarrow (`read_table` and
//! `dataset`) and Apache Spark (pyspark, `local[2]`, a JRE 17), without settings, and
//! checks they see every table's rows, host and run as DuckDB does, and runs every
//! DuckDB query and Python block of docs/fleet.md as written on it. Without the
//! packages the test skips, and fails under JITTERLAB_REQUIRE_LIVE=1.

use std::path::Path;
use std::process::Command;

mod common;

use common::{data, trace_file};
use jitterlab_analyze::{analyze_trace, Options};
use jitterlab_host::testing::skip;
use jitterlab_parquet::{export_result, export_trace, Origin};
use jitterlab_trace::Trace;
use serde_json::{json, Value};

fn origin(host: &str, run: &str) -> Origin {
    Origin {
        host: host.into(),
        run_id: run.into(),
        kernel: Some("6.18.44".into()),
        start_wall_ns: Some(1_790_000_000_000_000_000),
    }
}

/// What `analyze --json` says, in the shape the script compares.
fn expected(report: &Value) -> Value {
    let tasks: Vec<Value> = report["tasks"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            json!({
                "tid": t["tid"], "first_ns": t["first_ns"], "run_ns": t["run_ns"],
                "wakeups": t["wakeups"]["count"].as_u64().unwrap_or(0),
                "max_latency": t["wakeups"]["max_ns"],
            })
        })
        .collect();
    let irqs = &report["irqs"];
    json!({
        "tasks": tasks,
        "irqs": irqs["irqs"].as_array().unwrap().iter()
            .map(|r| json!({"irq": r["irq"], "count": r["count"]})).collect::<Vec<_>>(),
        "softirqs": irqs["softirqs"].as_array().unwrap().iter()
            .map(|r| json!({"vec": r["vec"], "count": r["count"]})).collect::<Vec<_>>(),
        "chains": irqs["chains"].as_array().unwrap().iter()
            .map(|r| json!({"irq": r["irq"], "tid": r["tid"], "count": r["count"],
                            "exit_unknown": r["exit_unknown"]}))
            .collect::<Vec<_>>(),
        "softirq_chains": irqs["softirq_chains"].as_array().unwrap().iter()
            .map(|r| json!({"vec": r["vec"], "tid": r["tid"], "count": r["count"]}))
            .collect::<Vec<_>>(),
    })
}

/// A second latency run from the first: the same buckets with more samples in some
/// (a valid HDR histogram), its percentiles computed as the latency crate does.
fn second_run(a: &Value) -> Value {
    let mut b = a.clone();
    for cpu in b["data"]["cpus"].as_array_mut().unwrap() {
        let mut n = 0;
        for (i, bucket) in cpu["buckets"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            let c = bucket["count"].as_u64().unwrap() * (1 + i as u64 % 3);
            bucket["count"] = json!(c);
            n += c;
        }
        cpu["samples"] = json!(n);
    }
    b
}

/// The histogram of CPU `cpu` (of every CPU when `None`) of `runs` merged, and the
/// least and greatest sample.
fn hist_of(runs: &[&Value], cpu: Option<u64>) -> (hdrhistogram::Histogram<u64>, u64, u64) {
    let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    let (mut lo, mut hi) = (u64::MAX, 0);
    for run in runs {
        for c in run["data"]["cpus"].as_array().unwrap() {
            if cpu.is_some_and(|cpu| c["cpu"] != cpu) {
                continue;
            }
            lo = lo.min(c["min_ns"].as_u64().unwrap());
            hi = hi.max(c["max_ns"].as_u64().unwrap());
            let mut one = hdrhistogram::Histogram::<u64>::new(3).unwrap();
            for b in c["buckets"].as_array().unwrap() {
                one.record_n(b["le_ns"].as_u64().unwrap(), b["count"].as_u64().unwrap())
                    .unwrap();
            }
            // What CpuStats::merge does.
            h.add(&one).unwrap();
        }
    }
    (h, lo, hi)
}

const QUANTILES: [f64; 5] = [0.5, 0.9, 0.99, 0.999, 0.9999];

fn percentiles(runs: &[&Value], cpu: u64) -> Vec<u64> {
    let (h, lo, hi) = hist_of(runs, Some(cpu));
    QUANTILES
        .iter()
        .map(|&q| h.value_at_quantile(q).clamp(lo, hi))
        .collect()
}

/// The p99.9 of every CPU of `runs` merged: what docs/fleet.md's per-host query gives.
fn p99_9_of_all(runs: &[&Value]) -> u64 {
    let (h, _, _) = hist_of(runs, None);
    h.value_at_quantile(0.999)
}

/// Exports the trace at `path` (its buffer `buffer`, else the default) for each of
/// `hosts` with the run id an export mints for it, as `file`; what the DuckDB check
/// compares (the run, the hosts, the buffer, what `analyze` says of it).
fn export_minted(
    out: &Path,
    path: &Path,
    file: &str,
    buffer: Option<&str>,
    hosts: &[&str],
    start_wall_ns: Option<i64>,
) -> Value {
    let trace = Trace::open_buffer(path, false, buffer).unwrap();
    let mut run = None;
    for host in hosts {
        let mut o = jitterlab_parquet::origin_of_trace(
            &trace,
            path,
            &jitterlab_parquet::OriginOptions {
                host: Some((*host).into()),
                ..Default::default()
            },
        )
        .unwrap();
        if start_wall_ns.is_some() {
            o.start_wall_ns = start_wall_ns;
        }
        assert!(o.run_id.starts_with("trace-"), "{}", o.run_id);
        export_trace(&trace, file, &o, out).unwrap();
        run = Some(o.run_id);
    }
    let report = analyze_trace(&trace, Options::default(), None).unwrap();
    let report = serde_json::to_value(&report).unwrap();
    json!({"run": run, "hosts": hosts, "buffer": buffer.unwrap_or("top"),
           "file": file, "expected": expected(&report)})
}

/// A static audit of a fixture tree of the host crate, as `audit --json` writes it, with
/// the start time given (the fixture trees are the same every run, the clock is not).
fn static_audit(tree: &str, start_wall_ns: u64) -> Value {
    let root = jitterlab_host::Root::at(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../host/tests/fixtures/{tree}")),
    );
    let req = jitterlab_audit::AuditRequest {
        cpus: None,
        mode: jitterlab_audit::Mode::Static,
        compare: None,
        keep_traces: None,
    };
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut r = jitterlab_audit::audit(&root, &req, &cancel, |_| {}).unwrap();
    r.start_wall_ns = start_wall_ns;
    json!({"schema": "jitterlab.audit", "version": 1, "data": r})
}

/// Exports the audits of four hosts (one with an older audit too) and returns what the
/// fleet query must say of each host's latest audit: its verdict, findings per severity,
/// the ids of the high ones; and the measured audit's latency and noise rows.
fn export_audits(tmp: &Path, out: &Path) -> Value {
    let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/test/fixtures");
    let quick: Value =
        serde_json::from_slice(&std::fs::read(web.join("audit-quick.json")).unwrap()).unwrap();
    let day = 86_400_000_000_000u64;
    let t0 = 1_790_000_000_000_000_000u64;
    // (host, file, audit); rt16-board's host name is the one its tree records. The run
    // ids are minted: `audit-` and the audit's start.
    let audits = [
        (Some("board1"), "audit-old", static_audit("audit-rt16", t0)),
        (
            Some("board1"),
            "audit-new",
            static_audit("audit-vm2", t0 + day),
        ),
        (None, "audit-1", static_audit("audit-rt16", t0 + day)),
        (
            Some("board3"),
            "audit-1",
            static_audit("audit-irqbalance", t0 + day),
        ),
        (Some("vm"), "audit-quick", quick),
    ];
    // The measured audit's idle phase kept its trace beside the JSON: a committed trace
    // stands in for it, exported too, so that the audit's rows join its tables.
    std::fs::create_dir_all(tmp.join("audit-traces")).unwrap();
    let kept = tmp.join("audit-traces/idle.dat");
    std::fs::copy(data("cyclictest-idle.v7.dat"), &kept).unwrap();
    let trace = Trace::open(&kept, false).unwrap();
    let kept_origin = jitterlab_parquet::origin_of_trace(
        &trace,
        &kept,
        &jitterlab_parquet::OriginOptions {
            host: Some("vm".into()),
            ..Default::default()
        },
    )
    .unwrap();
    export_trace(&trace, "audit-traces/idle.dat", &kept_origin, out).unwrap();
    let mut latest = serde_json::Map::new();
    for (host, run, a) in &audits {
        let p = tmp.join(format!("{run}.json"));
        std::fs::write(&p, serde_json::to_vec(a).unwrap()).unwrap();
        let opts = jitterlab_parquet::OriginOptions {
            host: host.map(String::from),
            ..Default::default()
        };
        let origin = jitterlab_parquet::origin_of_result(a, &p, &opts).unwrap();
        export_result(&p, a, &origin, out).unwrap();
        let d = &a["data"];
        let findings = d["findings"].as_array().unwrap();
        let count = |sev: &str| findings.iter().filter(|f| f["severity"] == sev).count();
        let mut high: Vec<&str> = findings
            .iter()
            .filter(|f| f["severity"] == "high")
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        high.sort();
        high.dedup();
        // The later audit of a host replaces the earlier in the query.
        latest.insert(
            origin.host.clone(),
            json!({"run": origin.run_id, "verdict": d["verdict"], "high": count("high"),
                   "medium": count("medium"), "low": count("low"), "high_ids": high,
                   "findings": findings.len()}),
        );
    }
    assert!(
        latest.contains_key("rt16-board"),
        "the host the tree records"
    );
    let m = &audits[4].2["data"]["measured"];
    json!({
        "kept_trace_run": kept_origin.run_id,
        "latest": latest,
        "latency_rows": m["latency"].as_array().unwrap().iter()
            .map(|p| p["cpus"].as_array().unwrap().len()).sum::<usize>(),
        "max_ns": m["latency"].as_array().unwrap().iter()
            .flat_map(|p| p["cpus"].as_array().unwrap().iter().map(|c| c["max_ns"].as_u64().unwrap()))
            .max(),
        "noise_ns": m["noise"].as_array().unwrap().iter()
            .map(|n| n["noise_ns"].as_u64().unwrap()).sum::<u64>(),
    })
}

#[test]
fn duckdb_reproduces_analyze_and_merges_histograms() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("fleet");
    let mut traces = Vec::new();
    for (name, buffer, hosts) in [
        ("disk-irq-stress.v7.dat", None, &["h1", "h2", "h3"][..]),
        ("veth-iperf3.v6.dat.zst", None, &["h1"][..]),
        ("exits.v6.dat.zst", None, &["h2"][..]),
        // A multi-buffer trace: each buffer exported is a run of its own.
        ("instances.v7.dat", None, &["h2"][..]),
        ("instances.v7.dat", Some("jlab_small"), &["h2"][..]),
        ("instances.v7.dat", Some("jlab_big"), &["h2"][..]),
    ] {
        let path = trace_file(tmp.path(), name);
        let file = path.display().to_string();
        traces.push(export_minted(&out, &path, &file, buffer, hosts, None));
    }
    // Two days of docs/fleet.md's loop on host h3: `runs/h3.dat` recorded again over
    // the first day's and exported again; each day is a run of its own.
    std::fs::create_dir_all(tmp.path().join("runs")).unwrap();
    let runs_h3 = tmp.path().join("runs/h3.dat");
    let day = 86_400_000_000_000i64;
    let mut days = Vec::new();
    for (i, name) in ["cyclictest-idle.v7.dat", "veth-iperf3.v6.dat.zst"]
        .iter()
        .enumerate()
    {
        std::fs::copy(trace_file(tmp.path(), name), &runs_h3).unwrap();
        // These traces record no clock pair: the day is the origin's.
        let start = 1_790_000_000_000_000_000 + i as i64 * day;
        let t = export_minted(&out, &runs_h3, "runs/h3.dat", None, &["h3"], Some(start));
        days.push(t["run"].clone());
        traces.push(t);
    }
    assert_ne!(days[0], days[1]);
    // A latency run and the trace recorded around it (host `vm`, which both name), and
    // the same trace as host h1's: the run joins the trace of its host whose wall-clock
    // window overlaps its own.
    let recorded = trace_file(tmp.path(), "latency-recorded.dat.zst");
    let t = export_minted(&out, &recorded, "latency-recorded.dat", None, &["vm"], None);
    let trace_run = t["run"].clone();
    traces.push(t);
    traces.push(export_minted(
        &out,
        &recorded,
        "latency-recorded.dat",
        None,
        &["h1"],
        None,
    ));
    let lat_path = tmp.path().join("latency-recorded.json");
    let lat_bytes =
        zstd::decode_all(&std::fs::read(data("latency-recorded.json.zst")).unwrap()[..]).unwrap();
    std::fs::write(&lat_path, &lat_bytes).unwrap();
    let lat: Value = serde_json::from_slice(&lat_bytes).unwrap();
    let lat_origin =
        jitterlab_parquet::origin_of_result(&lat, &lat_path, &Default::default()).unwrap();
    assert_eq!(lat_origin.host, "vm", "the latency result names its host");
    export_result(&lat_path, &lat, &lat_origin, &out).unwrap();
    let cpus = lat["data"]["cpus"].as_array().unwrap();
    let recorded_join = json!({
        "host": "vm", "latency_run": lat_origin.run_id, "trace_run": trace_run,
        "worst_ns": cpus.iter().map(|c| c["max_ns"].as_u64().unwrap()).max(),
        "p99_9_ns": cpus.iter().map(|c| c["p99_9_ns"].as_u64().unwrap()).max(),
    });
    // Two latency runs, and what merging their histograms gives.
    let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/test/fixtures");
    let a: Value =
        serde_json::from_slice(&std::fs::read(web.join("latency-2cpu.json")).unwrap()).unwrap();
    let b = second_run(&a);
    for (run, v) in [("lat-a", &a), ("lat-b", &b)] {
        let p = tmp.path().join(format!("{run}.json"));
        export_result(&p, v, &origin("h1", run), &out).unwrap();
    }
    let mut latency = Vec::new();
    for cpu in [0u64, 1] {
        latency.push(json!({
            "cpu": cpu,
            "a": percentiles(&[&a], cpu),
            "merged": percentiles(&[&a, &b], cpu),
        }));
        // The single run's percentiles are the latency crate's own.
        let c = a["data"]["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["cpu"] == cpu)
            .unwrap();
        let own: Vec<u64> = ["p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "p99_99_ns"]
            .iter()
            .map(|k| c[*k].as_u64().unwrap())
            .collect();
        assert_eq!(percentiles(&[&a], cpu), own, "cpu {cpu}");
    }
    // An experiment.
    let exp_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../render/tests/fixtures/experiment.json");
    let exp: Value = serde_json::from_slice(&std::fs::read(&exp_path).unwrap()).unwrap();
    export_result(&exp_path, &exp, &origin("vm2", "synthetic"), &out).unwrap();
    let audits = export_audits(tmp.path(), &out);
    let p99_9_by_host = json!({
        "h1": p99_9_of_all(&[&a, &b]),
        "vm": p99_9_of_all(&[&lat]),
    });
    let expected = json!({
        "traces": traces,
        "days": days,
        "recorded_join": recorded_join,
        "p99_9_by_host": p99_9_by_host,
        "audits": audits,
        "latency": latency,
        "quantiles": QUANTILES,
        "verdicts": exp["data"]["stats"].as_array().unwrap().iter()
            .map(|s| s["comparisons"].as_array().unwrap().len()).sum::<usize>(),
    });
    let exp_file = tmp.path().join("expected.json");
    std::fs::write(&exp_file, serde_json::to_vec_pretty(&expected).unwrap()).unwrap();

    if !have(&["python3", "-c", "import duckdb"]) {
        skip("python3 with the duckdb package is not installed (pip install duckdb)");
        return;
    }
    check("duckdb_check.py", &[&out, &exp_file]);

    // The same dataset through pyarrow (read_table and dataset) and Spark, as they come.
    if !have(&["python3", "-c", "import pyarrow, pyspark"]) || !have(&["java", "-version"]) {
        skip("python3 with pyarrow and pyspark, or java, is not installed (pip install pyarrow pyspark; a JRE 17)");
        return;
    }
    check("engines_check.py", &[&out]);
}

/// Whether `argv` runs and succeeds (a package or a program is there).
fn have(argv: &[&str]) -> bool {
    Command::new(argv[0])
        .args(&argv[1..])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs the Python check `script` of this directory with `args`; it must succeed.
fn check(script: &str, args: &[&Path]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(script);
    let o = Command::new("python3")
        .arg(&path)
        .args(args)
        .output()
        .unwrap();
    print!("{}", String::from_utf8_lossy(&o.stdout));
    assert!(
        o.status.success(),
        "{script} failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}
