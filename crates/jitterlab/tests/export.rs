//! `jitterlab export --parquet`: the hive layout, the envelope, the host and run options
//! and their errors, on committed test data; an audit's file goes under the host name it
//! records. (The tables' contents are checked against
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

#[test]
fn export_takes_an_audit_under_the_host_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/tests/fixtures");
    // A static audit of a tree that records its host name, and of one that does not.
    let audit = |tree: &str| {
        let o = run(&[
            "--root",
            fixtures.join(tree).to_str().unwrap(),
            "audit",
            "--static",
            "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let file = dir.path().join(format!("{tree}.json"));
        std::fs::write(&file, &o.stdout).unwrap();
        file.display().to_string()
    };
    let rt16 = audit("audit-rt16");
    let o = run(&["export", "--parquet", &d, &rt16, "--json"]);
    let exp = json_data(&o, "jitterlab.export");
    assert_eq!(exp["exports"][0]["host"], "rt16-board");
    assert_eq!(exp["exports"][0]["kernel"], "6.18.0-rt");
    let written = parquet_files(dir.path());
    for t in ["audit_cpu", "audit_finding", "audit_latency", "audit_noise"] {
        let want = format!("{t}/host=rt16-board/run=audit-rt16/part.parquet");
        assert!(written.contains(&want), "{want} not in {written:?}");
    }
    let findings = &exp["exports"][0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["table"] == "audit_finding")
        .unwrap()["rows"];
    assert!(findings.as_u64().unwrap() > 0, "{findings}");

    // No host name in the tree: --host gives it.
    let vm2 = audit("audit-vm2");
    let o = run(&["export", "--parquet", &d, &vm2]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--host"), "{}", stderr(&o));
    let o = run(&["export", "--parquet", &d, "--host", "vm2", &vm2]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(parquet_files(dir.path())
        .iter()
        .any(|f| f.starts_with("audit_finding/host=vm2/run=audit-vm2/")));
}
