//! Helpers shared by the CLI tests.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The repository root (the workspace), two levels above this crate.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository")
}

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

/// A copy of the fixture tree in a temporary directory, to change one file of.
pub fn vm2_copy() -> tempfile::TempDir {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for e in std::fs::read_dir(from).expect("read fixture dir") {
            let e = e.expect("entry");
            let target = to.join(e.file_name());
            let kind = e.file_type().expect("file type");
            if kind.is_dir() {
                copy(&e.path(), &target);
            } else if kind.is_symlink() {
                let link = std::fs::read_link(e.path()).expect("read link");
                std::os::unix::fs::symlink(link, &target).expect("symlink");
            } else {
                std::fs::copy(e.path(), &target).expect("copy fixture file");
            }
        }
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    copy(&vm2(), dir.path());
    dir
}

/// Runs jitterlab with `args`, killed (and the test failed) if it has not ended in
/// ten seconds: for inputs that used to block.
pub fn run_within_10s(args: &[&str]) -> Output {
    use std::time::{Duration, Instant};
    let mut child = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run jitterlab");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("jitterlab {args:?} did not end within 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Where cgroup v1's cpuset controller is mounted on the CI VM.
pub const CPUSET: &str = "/sys/fs/cgroup/cpuset";

/// Puts the machine back however a test that partitions it ends: the partition journal
/// in [`Restore::dir`] reverted, then, for whatever still differs from the snapshot taken
/// first, the old values written back and jitterlab's cpusets removed; the children the
/// test started are killed first.
pub struct Restore {
    /// The state directory the test's commands get.
    pub state: tempfile::TempDir,
    /// The machine before the test.
    pub before: jitterlab_host::partition::Snapshot,
    /// Processes the test started.
    pub children: Vec<std::process::Child>,
    journal: PathBuf,
}

impl Restore {
    /// A guard whose partition journal is `journal` under its state directory
    /// (`jitterlab` for `isolate --state-dir STATE/jitterlab`, `experiment/partition` for
    /// `experiment --state-dir STATE`).
    pub fn new(journal: &str) -> Restore {
        Restore {
            state: tempfile::tempdir().expect("state dir"),
            before: jitterlab_host::partition::Snapshot::read(&jitterlab_host::Root::live())
                .expect("snapshot"),
            children: Vec::new(),
            journal: PathBuf::from(journal),
        }
    }

    /// The directory of the partition journal.
    pub fn dir(&self) -> PathBuf {
        self.state.path().join(&self.journal)
    }

    /// [`Restore::dir`] as an argument.
    pub fn arg(&self) -> String {
        self.dir().display().to_string()
    }

    /// The state directory as an argument.
    pub fn state_arg(&self) -> String {
        self.state.path().display().to_string()
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        jitterlab_host::testing::restore(
            &self.before,
            Some(&self.dir()),
            &["jitterlab.isolated", "jitterlab.housekeeping"],
        );
    }
}

/// Whether this machine can run the partitioning tests: root, CPUs 0 and 1 online.
pub fn live_ok(name: &str, why: &str) -> bool {
    if !is_root() {
        skip(format_args!("{name}: needs root ({why})"));
        return false;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let set = jitterlab_cpuset::CpuSet::parse_list(online.trim());
    if !set.is_ok_and(|s| s.contains(0) && s.contains(1)) {
        skip(format_args!("{name}: needs CPUs 0 and 1 online"));
        return false;
    }
    true
}
