//! The progress counter (`Trace::set_progress`, `DatFile::set_progress`): one pass over a
//! trace adds what `Trace::progress_total` said it would, whatever reads it (events,
//! counts, a copy), and nothing is added before a counter is set.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use jitterlab_trace::dat::{copy_to_v6, Spool};
use jitterlab_trace::Trace;

use super::util::*;

/// Reads every event of `trace` and returns the counter's final value.
fn events_pass(trace: &mut Trace) -> u64 {
    let read = Arc::new(AtomicU64::new(0));
    trace.set_progress(Arc::clone(&read));
    let mut events = trace.events().unwrap();
    let mut n = 0u64;
    while events.next_event().unwrap().is_some() {
        n += 1;
    }
    assert!(n > 0);
    read.load(Ordering::Relaxed)
}

/// Within four bytes per CPU: the chunk count word of compressed data, which some
/// writers' sizes leave out.
fn close(done: u64, total: u64, cpus: u64) {
    assert!(
        done <= total + 4 * cpus && done + 4 * cpus >= total,
        "{done} bytes read of {total}"
    );
}

#[test]
fn a_pass_over_a_dat_adds_up_to_its_total() {
    for name in [
        "cyclictest-idle.v7.dat",
        "disk-irq-stress.v7.dat",
        "instances.v7zlib.dat",
    ] {
        let path = data_dir().join(name);
        let mut trace = Trace::open(&path, false).unwrap();
        let total = trace.progress_total(false).unwrap();
        let every = trace.progress_total(true).unwrap();
        assert!(total > 0 && every >= total, "{name}");
        close(events_pass(&mut trace), total, 2);

        // Counting and copying read every buffer.
        let Trace::Dat(dat) = &mut trace else {
            panic!("{name}: a .dat")
        };
        let read = Arc::new(AtomicU64::new(0));
        dat.set_progress(Arc::clone(&read));
        for b in 0..dat.buffers().len() {
            dat.count_events(b).unwrap();
        }
        close(
            read.load(Ordering::Relaxed),
            every,
            2 * dat.buffers().len() as u64,
        );
        read.store(0, Ordering::Relaxed);
        let out = tempfile::tempdir().unwrap();
        copy_to_v6(dat, &out.path().join("copy.dat"), Spool::Memory).unwrap();
        close(
            read.load(Ordering::Relaxed),
            every,
            2 * dat.buffers().len() as u64,
        );
    }
}

#[test]
fn a_pass_over_a_text_file_adds_its_size() {
    let dir = data_dir().join("text");
    for name in [
        "cyclictest-idle.ftrace.txt",
        "disk-irq-stress-6000.report.txt",
    ] {
        let mut trace = Trace::open(dir.join(name), false).unwrap();
        let total = trace.progress_total(false).unwrap();
        assert_eq!(total, std::fs::metadata(dir.join(name)).unwrap().len());
        // The thread groups are read in a pass of their own, not counted.
        let _ = trace.tgids();
        assert_eq!(events_pass(&mut trace), total, "{name}");
    }
}

#[test]
fn only_the_passes_after_the_counter_is_set_count() {
    let mut trace = Trace::open(data_dir().join("cyclictest-idle.v7.dat"), false).unwrap();
    let mut events = trace.events().unwrap();
    while events.next_event().unwrap().is_some() {}
    drop(events);
    let total = trace.progress_total(false).unwrap();
    close(events_pass(&mut trace), total, 2);
}

#[test]
fn a_small_text_held_in_memory_has_no_total() {
    let trace = Trace::open(data_dir().join("text/fgraph-report.txt"), false).unwrap();
    assert_eq!(trace.progress_total(false), None);
}
