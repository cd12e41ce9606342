//! /proc/interrupts and /proc/softirqs: never panic; rows keep one count per column.
#![no_main]

use jitterlab_host::irqs::{parse_interrupts, parse_softirqs};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = std::path::Path::new("/proc/interrupts");
    if let Ok((cpus, irqs, counters)) = parse_interrupts(path, text) {
        assert!(irqs.iter().all(|i| i.counts.len() == cpus.len()));
        assert!(counters.iter().all(|c| !c.per_cpu || c.counts.len() == cpus.len()));
    }
    if let Ok((cpus, rows)) = parse_softirqs(path, text) {
        assert!(rows.iter().all(|r| r.counts.len() == cpus.len()));
    }
});
