//! `jitterlab export --parquet`: the hive layout, the envelope, the host and run options
//! and their errors, on committed test data. (The tables' contents are checked against
//! `analyze` in SQL by crates/parquet/tests/duckdb.rs.)

use std::path::Path;

use crate::util::{data, json_data, run, stderr, stdout};

fn parquet_files(dir: &Path) -> Vec<String> {
    fn walk(d: &Path, root: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn latency_json() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../web/test/fixtures/latency-2cpu.json")
        .display()
        .to_string()
}

#[test]
fn export_writes_hive_tables_and_says_what() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let trace = data("disk-irq-stress.v7.dat");
    let o = run(&[
        "export",
        "--parquet",
        &d,
        "--host",
        "board7",
        "--run",
        "r1",
        &trace,
        "--json",
    ]);
    let exp = json_data(&o, "jitterlab.export");
    let files = &exp["exports"][0]["files"];
    let tables: Vec<&str> = files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["table"].as_str().unwrap())
        .collect();
    for t in [
        "sched_slice",
        "wakeup",
        "irq",
        "softirq",
        "thread",
        "cpu",
        "trace",
    ] {
        assert!(tables.contains(&t), "no {t} table: {tables:?}");
    }
    let written = parquet_files(dir.path());
    for t in &tables {
        let want = format!("{t}/host=board7/run=r1/part.parquet");
        assert!(written.contains(&want), "{want} not in {written:?}");
    }
    assert_eq!(written.len(), tables.len(), "{written:?}");
    assert_eq!(exp["exports"][0]["host"], "board7");
    assert_eq!(exp["exports"][0]["trace_id"], "r1");

    // A latency result needs a host (it records none), and goes beside the trace.
    let lat = latency_json();
    let o = run(&["export", "--parquet", &d, &lat]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("host"), "{}", stderr(&o));
    let o = run(&["export", "--parquet", &d, "--host", "board8", &lat]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("board8"), "{}", stdout(&o));
    assert!(parquet_files(dir.path())
        .iter()
        .any(|f| f.starts_with("latency_histogram/host=board8/run=latency-2cpu/")));

    // --run names one input's run.
    let o = run(&["export", "--parquet", &d, "--run", "x", &trace, &lat]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // A file that is neither a trace nor a result.
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "hello\n").unwrap();
    let o = run(&["export", "--parquet", &d, &bad.display().to_string()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("bad.txt"), "{}", stderr(&o));
}
