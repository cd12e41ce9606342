//! Load generators start, do work, stop, and leave nothing behind.

use std::time::Duration;

use jitterlab_cpuset::CpuSet;
use jitterlab_latency::load::{start, LoadSpec};

/// The tests count this process's threads by name: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            std::fs::read_to_string(e.path().join("comm"))
                .map(|c| c.trim() == name)
                .unwrap_or(false)
        })
        .count()
}

fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks existence.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// The processes running `sleep 30`.
fn sleeps_30() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|pid: &u32| {
            std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .map(|c| c.starts_with("sleep\u{0}30"))
                .unwrap_or(false)
        })
        .collect()
}

#[test]
fn generators_load_and_clean_up() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cpus = CpuSet::from_iter([0]);
    // `sleep 30`s that ran before (another test's) are not this command's.
    let before = sleeps_30();
    let loads = start(
        &[
            LoadSpec::Cpu(4),
            LoadSpec::Io(2),
            LoadSpec::Mem(1),
            LoadSpec::Cmd("sleep 30 & sleep 30".into()),
        ],
        &cpus,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(threads_named("jl-load-cpu"), 4);
    assert_eq!(threads_named("jl-load-io"), 2);
    assert_eq!(threads_named("jl-load-mem"), 1);
    let dir = loads.io_dir().unwrap().to_path_buf();
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        2,
        "one file per io thread"
    );
    // The command runs in its own process group: both sleeps are in it.
    let group: Vec<u32> = sleeps_30()
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert!(group.len() >= 2, "{group:?}");

    let results = loads.stop();
    assert_eq!(results.len(), 4);
    for r in &results[..3] {
        assert!(r.ops > 0, "{r:?} did some work");
    }
    assert!(
        results[3].exit.as_deref().unwrap().contains("ended"),
        "{:?}",
        results[3]
    );
    assert_eq!(
        threads_named("jl-load-cpu") + threads_named("jl-load-io") + threads_named("jl-load-mem"),
        0
    );
    assert!(!dir.exists(), "io files removed");
    // Killed processes finish exiting on their own time: a loaded VM took more than
    // 50 ms once. Each must be gone (or a zombie) within 5 s.
    let ended = |pid: u32| {
        !alive(pid)
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| s.contains(") Z ") || s.contains(") X "))
                .unwrap_or(true)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    for pid in group {
        while !ended(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(ended(pid), "sleep {pid} ended: {state}");
    }
}

#[test]
fn dropping_stops_them_too() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    {
        let _loads = start(&[LoadSpec::Cpu(2)], &CpuSet::from_iter([0])).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(threads_named("jl-load-cpu"), 2);
    }
    assert_eq!(threads_named("jl-load-cpu"), 0);
}

/// A command's chatter (stress-ng's warnings) is kept, not printed: both its streams go
/// to the result's output, its last `OUTPUT_LIMIT` bytes; only a command that ends before
/// it is stopped is a failure, which quotes its last line.
#[test]
fn a_commands_output_is_kept_and_only_an_early_end_fails() {
    use jitterlab_latency::load::OUTPUT_LIMIT;
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cpus = CpuSet::from_iter([0]);
    let run = |cmd: &str| {
        let loads = start(&[LoadSpec::Cmd(cmd.into())], &cpus).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        loads.stop().remove(0)
    };
    let r = run("echo to stdout; echo 'stress-ng: warn: [1] chatter' >&2; exec sleep 30");
    let out = String::from_utf8_lossy(&r.output);
    assert_eq!(out, "to stdout\nstress-ng: warn: [1] chatter\n");
    assert_eq!(r.failure, None, "{r:?}");
    assert!(
        r.exit.as_deref().unwrap().contains("ended at the end"),
        "{r:?}"
    );

    // It has ended when stopped: it says so in a file just before it exits.
    let dir = tempfile::tempdir().unwrap();
    let done = dir.path().join("done");
    let loads = start(
        &[LoadSpec::Cmd(format!(
            "echo 'stress-ng: error: no stressor named cpux' >&2; touch {}; exit 3",
            done.display()
        ))],
        &cpus,
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !done.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let r = loads.stop().remove(0);
    let why = r.failure.as_deref().expect("a failure");
    assert!(why.contains("exited by itself before the end"), "{why}");
    assert!(why.contains("exit status: 3"), "{why}");
    assert!(
        why.ends_with(": stress-ng: error: no stressor named cpux"),
        "{why}"
    );
    assert_eq!(r.exit.as_deref(), Some(why), "the report says it too");

    // Only the last OUTPUT_LIMIT bytes are kept.
    let r = run("head -c 200000 /dev/zero | tr '\\0' x; echo; echo last; exec sleep 30");
    assert_eq!(r.output.len() as u64, OUTPUT_LIMIT);
    assert!(r.output.ends_with(b"xx\nlast\n"));
    // The threads print nothing.
    let loads = start(&[LoadSpec::Cpu(1)], &cpus).unwrap();
    let r = loads.stop().remove(0);
    assert!(r.output.is_empty() && r.failure.is_none(), "{r:?}");
}
