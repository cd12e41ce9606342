//! /proc/PID/stat, status and cgroup: never panic.
#![no_main]

use jitterlab_host::tasks::{cpuset_of, parse_allowed, parse_stat, parse_tgid};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = std::path::Path::new("/proc/1/stat");
    let _ = parse_stat(path, text);
    let _ = parse_allowed(path, text);
    let _ = parse_tgid(path, text);
    let _ = cpuset_of(text);
});
