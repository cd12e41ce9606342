//! tracefs lookup and the `latency --break` trip wire, on made-up trees.

use std::fs;

use jitterlab_host::tracefs::{find, Breaker};

use crate::fake::Tree;

const MOUNTINFO: &str = "22 1 0:21 / /sys rw - sysfs sysfs rw\n\
    30 22 0:12 / /sys/kernel/debug/tracing rw - tracefs tracefs rw\n\
    31 22 0:12 / /sys/kernel/tracing rw - tracefs tracefs rw\n";

fn traced_tree() -> Tree {
    let t = Tree::new();
    t.file("/proc/self/mountinfo", MOUNTINFO)
        .file("/sys/kernel/tracing/trace_marker", "")
        .file("/sys/kernel/tracing/tracing_on", "1\n")
        .file("/sys/kernel/tracing/instances/rec/trace_marker", "")
        .file("/sys/kernel/tracing/instances/rec/tracing_on", "1\n")
        .file("/sys/kernel/tracing/instances/idle/trace_marker", "")
        .file("/sys/kernel/tracing/instances/idle/tracing_on", "0\n");
    t
}

#[test]
fn the_documented_mount_point_is_preferred() {
    let t = traced_tree();
    assert_eq!(
        find(&t.root()).unwrap().as_deref(),
        Some("/sys/kernel/tracing")
    );
    let bare = Tree::new();
    bare.file(
        "/proc/self/mountinfo",
        "22 1 0:21 / /sys rw - sysfs sysfs rw\n",
    );
    assert_eq!(find(&bare.root()).unwrap(), None);
}

#[test]
fn the_breaker_marks_and_stops_every_tracing_buffer_once() {
    let t = traced_tree();
    let root = t.root();
    let b = Breaker::arm(&root, "/sys/kernel/tracing", 50).unwrap();
    assert_eq!(
        b.buffers(),
        ["top", "instances/rec"],
        "idle instances are left alone"
    );
    assert!(!b.fired());
    assert!(b.fire(73_456, 1));
    assert!(!b.fire(99_000, 0), "only the first spike acts");
    let read = |p: &str| fs::read_to_string(root.path(p)).unwrap();
    for dir in ["/sys/kernel/tracing", "/sys/kernel/tracing/instances/rec"] {
        assert_eq!(
            read(&format!("{dir}/trace_marker")),
            "jitterlab: latency 73 us > 50 us on cpu 1 (73456 ns)\n"
        );
        assert_eq!(read(&format!("{dir}/tracing_on")), "0\n");
    }
    assert_eq!(read("/sys/kernel/tracing/instances/idle/tracing_on"), "0\n");
    assert_eq!(read("/sys/kernel/tracing/instances/idle/trace_marker"), "");
}

#[test]
fn arming_without_the_files_names_the_file() {
    let t = Tree::new();
    t.file("/sys/kernel/tracing/tracing_on", "1\n");
    let e = Breaker::arm(&t.root(), "/sys/kernel/tracing", 50).unwrap_err();
    assert!(e.to_string().contains("trace_marker"), "{e}");
}

/// The live tracefs, or why the test cannot run.
fn live_tracefs() -> Option<jitterlab_host::testing::HostLock> {
    if !jitterlab_host::testing::is_root()
        || !std::path::Path::new("/sys/kernel/tracing/instances").exists()
    {
        jitterlab_host::testing::skip("needs root and tracefs at /sys/kernel/tracing");
        return None;
    }
    Some(jitterlab_host::testing::host_lock().expect("host lock"))
}

/// The top-level tracefs files a session must leave as they were.
fn top_state() -> Vec<String> {
    [
        "tracing_on",
        "buffer_size_kb",
        "set_event",
        "saved_cmdlines_size",
    ]
    .iter()
    .map(|f| fs::read_to_string(format!("/sys/kernel/tracing/{f}")).unwrap())
    .collect()
}

#[test]
fn a_session_records_in_its_own_instance_and_leaves_nothing_behind() {
    use jitterlab_host::tracefs::{Session, SessionConfig};
    use std::io::Read;
    let Some(_lock) = live_tracefs() else { return };
    let root = jitterlab_host::Root::live();
    let before = top_state();
    let config = SessionConfig {
        events: vec!["sched:sched_switch".into(), "irq".into()],
        buffer_kb: Some(64),
        saved_cmdlines: Some(1024),
        ..SessionConfig::default()
    };
    let session = Session::start(&root, &config).unwrap();
    let dir = session.dir().to_string();
    assert!(dir.starts_with("/sys/kernel/tracing/instances/jitterlab-"));
    let kb: u64 = fs::read_to_string(format!("{dir}/buffer_size_kb"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!((64..128).contains(&kb), "rounded up to whole pages: {kb}");
    let set_event = fs::read_to_string(format!("{dir}/set_event")).unwrap();
    assert!(set_event.contains("sched:sched_switch"), "{set_event}");
    assert!(set_event.contains("irq:irq_handler_entry"), "{set_event}");
    assert!(session.tracing().unwrap());
    // Make switches happen, then read raw pages from every CPU.
    for _ in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    session.set_tracing(false).unwrap();
    let mut bytes = 0;
    for &cpu in session.cpus() {
        let mut pipe = session.raw_pipe(cpu).unwrap();
        let mut page = vec![0u8; 4096];
        loop {
            match pipe.read(&mut page) {
                Ok(0) => break,
                Ok(n) => bytes += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("cpu {cpu}: {e}"),
            }
        }
        let stats = session.buffer_stats(cpu).unwrap();
        assert_eq!(stats.overrun, 0);
    }
    assert!(bytes >= 4096, "at least one page of sched_switch events");
    let h = session.headers().unwrap();
    assert!(String::from_utf8_lossy(&h.header_page).contains("commit"));
    assert!(h
        .event_formats
        .iter()
        .any(|(s, e)| s == "sched" && e.len() == 1));
    assert!(h
        .event_formats
        .iter()
        .any(|(s, e)| s == "irq" && e.iter().any(|(n, _)| n == "softirq_entry")));
    assert!(h.ftrace_formats.iter().any(|(n, _)| n == "print"));
    assert!(!h.clock.is_empty());
    assert_eq!(h.page_size % 4096, 0);
    session.close().unwrap();
    assert!(
        !std::path::Path::new(&dir).exists(),
        "the instance is removed"
    );
    assert_eq!(before, top_state(), "the top level is as it was");
}

#[test]
fn a_bad_event_is_refused_and_the_instance_removed() {
    use jitterlab_host::tracefs::{Session, SessionConfig};
    let Some(_lock) = live_tracefs() else { return };
    let root = jitterlab_host::Root::live();
    for (event, expected) in [
        ("sched:no_such_event", "no event"),
        ("sched:../x", "expected SYSTEM:EVENT"),
    ] {
        let e = Session::start(
            &root,
            &SessionConfig {
                events: vec![event.into()],
                ..SessionConfig::default()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains(expected), "{e}");
    }
    let left: Vec<_> = fs::read_dir("/sys/kernel/tracing/instances")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with(&format!("jitterlab-{}", std::process::id()))
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
