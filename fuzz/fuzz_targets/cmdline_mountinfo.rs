//! /proc/cmdline and /proc/self/mountinfo: never panic.
#![no_main]

use jitterlab_host::cgroups::parse_mountinfo;
use jitterlab_host::cmdline::Cmdline;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let c = Cmdline::parse(text);
    let _ = c.isolation(&jitterlab_cpuset::CpuSet::first_n(64));
    let _ = parse_mountinfo(std::path::Path::new("/proc/self/mountinfo"), text);
});
