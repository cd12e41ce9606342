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
            "jitterlab: latency 73 us > 50 us on cpu 1\n"
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
