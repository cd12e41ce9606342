//! Helpers shared by the CLI tests.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The fixture tree captured from a 2-CPU VM (crates/host/tests/fixtures/capture.sh).
pub fn vm2() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../host/tests/fixtures/vm2")
}

/// A trace in the trace crate's test data (crates/trace/tests/data, see its README).
pub fn data(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../trace/tests/data")
        .join(name)
        .display()
        .to_string()
}

/// Runs jitterlab with `args`.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run jitterlab")
}

/// Runs jitterlab against the fixture tree.
pub fn run_vm2(args: &[&str]) -> Output {
    let root = vm2();
    let mut all = vec!["--root", root.to_str().unwrap()];
    all.extend_from_slice(args);
    run(&all)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf-8 stderr")
}

/// Parses the JSON envelope and checks its schema name; returns `data`.
pub fn json_data(o: &Output, schema: &str) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    json_envelope(o, schema)
}

/// Like [`json_data`], whatever the exit status (for runs that exit 3 with a report).
pub fn json_envelope(o: &Output, schema: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    assert_eq!(v["schema"], schema);
    assert_eq!(v["version"], 1);
    v["data"].clone()
}

/// Serializes the tests that change host state (IRQ affinity, tracefs) across test
/// threads and test binaries: an exclusive flock held until dropped.
pub fn host_lock() -> jitterlab_host::testing::HostLock {
    jitterlab_host::testing::host_lock().expect("the host lock")
}

pub use jitterlab_host::testing::{is_root, skip};
