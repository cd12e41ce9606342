//! `jitterlab export --parquet`: the hive layout, the envelope, the host and run options
//! and their errors, on committed test data; an audit's file goes under the host name it
//! records. (The tables' contents are checked against
//! `analyze` in SQL by crates/parquet/tests/duckdb.rs.)

use std::path::Path;

use crate::util::{data, json_data, run, stderr};

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
    crate::util::repo()
        .join("web/test/fixtures/latency-2cpu.json")
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
        let want = format!("{t}/host=board7/run_id=r1/part.parquet");
        assert!(written.contains(&want), "{want} not in {written:?}");
    }
    assert_eq!(written.len(), tables.len(), "{written:?}");
    assert_eq!(exp["exports"][0]["host"], "board7");
    assert_eq!(exp["exports"][0]["run_id"], "r1");

    // A latency result needs a host (it records none), and goes beside the trace.
    let lat = latency_json();
    let o = run(&["export", "--parquet", &d, &lat]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("host"), "{}", stderr(&o));
    let o = run(&[
        "export",
        "--parquet",
        &d,
        "--host",
        "board8",
        &lat,
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Its run id is minted: the kind and the file's content hash.
    let exp = json_data(&o, "jitterlab.export");
    let id = exp["exports"][0]["run_id"].as_str().unwrap().to_string();
    assert!(
        id.starts_with("latency-") && id.len() == "latency-".len() + 8,
        "{id}"
    );
    assert!(parquet_files(dir.path())
        .iter()
        .any(|f| f.starts_with(&format!("latency_histogram/host=board8/run_id={id}/"))));

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
    // The run id says when the audit started (UTC) and ends in the content hash.
    let id = exp["exports"][0]["run_id"].as_str().unwrap().to_string();
    let start: Vec<&str> = id.split('-').collect();
    assert!(
        start.len() == 3 && start[0] == "audit" && start[1].len() == 16 && start[1].ends_with('Z'),
        "{id}"
    );
    let written = parquet_files(dir.path());
    for t in ["audit_cpu", "audit_finding"] {
        let want = format!("{t}/host=rt16-board/run_id={id}/part.parquet");
        assert!(written.contains(&want), "{want} not in {written:?}");
    }
    // A static audit measured nothing: no file of the measured tables.
    assert!(
        !written
            .iter()
            .any(|f| f.starts_with("audit_latency/") || f.starts_with("audit_noise/")),
        "{written:?}"
    );
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
        .any(|f| f.starts_with("audit_finding/host=vm2/run_id=audit-")));
}

/// Rows written before are never replaced unless asked: two inputs of one partition are
/// refused before anything is written, a host and run the dataset holds are refused, and
/// `--replace` writes them again without leaving a table of the earlier export. Two
/// recordings of one file name (day 1 and day 2 of `runs/$h.dat`) get run ids of their
/// own and are both kept.
#[test]
fn an_export_never_replaces_earlier_rows_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("fleet");
    let d = ds.display().to_string();
    // Two traces of the same file name (and host).
    for (sub, trace) in [
        ("d1", "cyclictest-idle.v7.dat"),
        ("d2", "disk-irq-stress.v7.dat"),
    ] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        std::fs::copy(data(trace), dir.path().join(sub).join("trace.dat")).unwrap();
    }
    let t1 = dir.path().join("d1/trace.dat").display().to_string();
    let t2 = dir.path().join("d2/trace.dat").display().to_string();
    {
        let o = run(&[
            "export",
            "--parquet",
            &d,
            "--host",
            "b1",
            &t1,
            &t2,
            "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let both = json_data(&o, "jitterlab.export");
        let ids: Vec<&str> = both["exports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["run_id"].as_str().unwrap())
            .collect();
        assert!(
            ids[0] != ids[1] && ids.iter().all(|i| i.starts_with("trace-")),
            "{ids:?}"
        );
        // The same file again: the same run id, refused.
        let o = run(&["export", "--parquet", &d, "--host", "b1", &t1]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("already holds host=b1 run_id={}", ids[0])),
            "{}",
            stderr(&o)
        );
    }
    std::fs::remove_dir_all(&ds).unwrap();
    // Two inputs of one partition (a file and its copy): refused before anything is
    // written.
    let copy = dir.path().join("d1/again.dat");
    std::fs::copy(&t1, &copy).unwrap();
    let o = run(&[
        "export",
        "--parquet",
        &d,
        "--host",
        "b1",
        &t1,
        &copy.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("host=b1 run_id=trace-") && stderr(&o).contains(&t1),
        "{}",
        stderr(&o)
    );
    assert!(!ds.exists(), "nothing written");

    let o = run(&[
        "export",
        "--parquet",
        &d,
        "--host",
        "b1",
        "--run",
        "trace",
        &t1,
        "--json",
    ]);
    let first = json_data(&o, "jitterlab.export");
    let rows = |e: &serde_json::Value| -> u64 {
        e["exports"][0]["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rows"].as_u64().unwrap())
            .sum()
    };
    let before = parquet_files(&ds);
    let sizes = |files: &[String]| -> Vec<u64> {
        files
            .iter()
            .map(|f| std::fs::metadata(ds.join(f)).unwrap().len())
            .collect()
    };
    let before_sizes = sizes(&before);
    // The same host and run again (another trace): refused, the dataset as it was.
    let o = run(&[
        "export",
        "--parquet",
        &d,
        "--host",
        "b1",
        "--run",
        "trace",
        &t2,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("already holds host=b1 run_id=trace"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("--replace"), "{}", stderr(&o));
    assert_eq!(parquet_files(&ds), before);
    assert_eq!(sizes(&before), before_sizes);
    // Another run of the same host: kept beside it.
    let o = run(&[
        "export",
        "--parquet",
        &d,
        "--host",
        "b1",
        "--run",
        "day2",
        &t2,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(parquet_files(&ds).len(), 2 * before.len());
    // --replace: written again, the earlier rows gone.
    let o = run(&[
        "export",
        "--parquet",
        &d,
        "--host",
        "b1",
        "--run",
        "trace",
        &t2,
        "--replace",
        "--json",
    ]);
    let again = json_data(&o, "jitterlab.export");
    assert_ne!(rows(&first), rows(&again));
    assert_eq!(parquet_files(&ds).len(), 2 * before.len());
    assert!(parquet_files(&ds).iter().all(|f| !f.contains(".tmp")));
}

/// Host and run names are stored as given, or refused; never rewritten into a name that
/// another could have.
#[test]
fn names_that_cannot_be_partitions_are_refused_not_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("fleet").display().to_string();
    let trace = data("cyclictest-idle.v7.dat");
    for (flag, name) in [
        ("--host", "Rack1/Board 1"),
        ("--host", "../escape"),
        ("--run", "a=b"),
        ("--run", ""),
    ] {
        let host = if flag == "--host" { name } else { "ok" };
        let run_id = if flag == "--run" { name } else { "r" };
        let o = run(&[
            "export",
            "--parquet",
            &d,
            "--host",
            host,
            "--run",
            run_id,
            &trace,
        ]);
        assert_eq!(o.status.code(), Some(2), "{flag} {name:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("cannot be stored as it is"),
            "{}",
            stderr(&o)
        );
    }
    assert!(!dir.path().join("fleet").exists());
    assert!(!dir.path().join("escape").exists());
    // As given: dots, dashes and capitals kept.
    let o = run(&["export", "--parquet", &d, "--host", "Rack1-Board.1", &trace]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir
        .path()
        .join("fleet/sched_slice/host=Rack1-Board.1")
        .is_dir());
}

/// A result file is checked before export uses it: an unknown version, a missing or
/// null `data`, a field of the wrong type are errors naming the file and the field.
#[test]
fn a_result_of_another_version_or_shape_is_refused_by_export_and_view() {
    let dir = tempfile::tempdir().unwrap();
    let good: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(latency_json()).unwrap()).unwrap();
    let mut v2 = good.clone();
    v2["version"] = 2.into();
    let mut null = good.clone();
    null["data"] = serde_json::Value::Null;
    let mut no_data = good.clone();
    no_data.as_object_mut().unwrap().remove("data");
    let mut bad_cpus = good.clone();
    bad_cpus["data"]["cpus"] = "0-1".into();
    for (name, json, says) in [
        ("v2.json", v2, "\"version\": jitterlab.latency version 2"),
        ("null.json", null, "\"data\": missing or null"),
        ("nodata.json", no_data, "\"data\": missing or null"),
        ("cpus.json", bad_cpus, "\"data.cpus\": expected an array"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
        let p = path.display().to_string();
        let out = dir.path().join("fleet").display().to_string();
        let html = dir.path().join("x.html").display().to_string();
        for args in [
            vec!["export", "--parquet", &out, "--host", "h", &p],
            vec!["view", &p, "-o", &html],
        ] {
            let o = run(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains(&p) && stderr(&o).contains(says),
                "{args:?}: {}",
                stderr(&o)
            );
        }
        assert!(!dir.path().join("fleet").exists());
        assert!(!dir.path().join("x.html").exists());
    }
}

/// A multi-buffer .dat: the buffers not exported are named on stderr, as `analyze` names
/// them, and `--buffer` chooses the one exported (issue "Never lose what the user gave":
/// nothing left out in silence).
#[test]
fn export_names_the_buffers_it_leaves_out_and_takes_buffer() {
    let trace = data("instances.v7.dat");
    let rows = |extra: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        let mut args = vec!["export", "--parquet", &d, "--host", "h", &trace, "--json"];
        args.extend_from_slice(extra);
        let o = run(&args);
        let exp = json_data(&o, "jitterlab.export");
        (stderr(&o), exp["exports"][0]["events"].as_u64().unwrap())
    };
    let (err, top) = rows(&[]);
    assert!(
        err.contains("not read: buffer jlab_small") && err.contains("jlab_big"),
        "{err}"
    );
    let (err, big) = rows(&["--buffer", "jlab_big"]);
    assert!(!err.contains("not read"), "the buffer chosen: {err}");
    assert!(big > top, "jlab_big holds more events: {big} against {top}");
    let o = run(&["export", "--parquet", "/tmp", &trace, "--buffer", "nope"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn export_refuses_names_an_engine_would_type_and_an_older_layout() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("fleet");
    let ds = d.display().to_string();
    let trace = data("disk-irq-stress.v7.dat");
    // A date as the run id would be a DATE column in DuckDB, Spark and Polars.
    for (flag, value) in [("--run", "2025-11-28"), ("--host", "42"), ("--run", "NaN")] {
        let o = run(&["export", "--parquet", &ds, flag, value, &trace]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(value) && stderr(&o).contains(flag),
            "{flag} {value}: {}",
            stderr(&o)
        );
        assert!(!d.exists(), "{flag} {value}: something was written");
    }
    let o = run(&[
        "export",
        "--parquet",
        &ds,
        "--run",
        "trace-2025-11-28",
        &trace,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A dataset of schema 2 (`run=`) beside it would read as two layouts: refused,
    // nothing written.
    let old = d.join("wakeup/host=old/run=trace");
    std::fs::create_dir_all(&old).unwrap();
    let before = parquet_files(&d);
    let o = run(&["export", "--parquet", &ds, "--run", "trace-2", &trace]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("schema 2") && stderr(&o).contains("run=trace"),
        "{}",
        stderr(&o)
    );
    assert_eq!(parquet_files(&d), before);
}
