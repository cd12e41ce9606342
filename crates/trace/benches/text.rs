//! Reading speed of the ftrace text reader on the kernel's text of a real capture.
//!
//!     cargo bench -p jitterlab-trace --bench text -- [FILE.ftrace.txt[.zst] ...]
//!
//! Without arguments it reads the test fixture `tests/data/disk-irq-stress.ftrace.txt.zst`
//! (decompressed in memory before the clock starts). Each file is read five times; every
//! run's time and the best are printed. Compare with `trace-cmd report` on the same
//! events: `time trace-cmd report tests/data/disk-irq-stress.v7.dat > /dev/null`.

use std::time::{Duration, Instant};

use jitterlab_trace::text::{FtraceReader, TextOptions};
use jitterlab_trace::EventSource;

const RUNS: usize = 5;

fn main() {
    let mut files: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if files.is_empty() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
        files = vec![format!("{dir}/disk-irq-stress.ftrace.txt.zst")];
    }
    for f in files {
        let raw = std::fs::read(&f).unwrap_or_else(|e| panic!("{f}: {e}"));
        let bytes = if f.ends_with(".zst") {
            zstd::decode_all(&raw[..]).expect("zstd")
        } else {
            raw
        };
        println!("{f}: {} bytes of text", bytes.len());
        let mut best = Duration::MAX;
        let mut events = 0u64;
        for _ in 0..RUNS {
            let t = Instant::now();
            let mut r = FtraceReader::new(&bytes[..], TextOptions::default()).expect("opens");
            let mut n = 0u64;
            while r.next_event().expect("event").is_some() {
                n += 1;
            }
            let elapsed = t.elapsed();
            println!("  {n} events in {elapsed:.2?}");
            best = best.min(elapsed);
            events = n;
        }
        let secs = best.as_secs_f64();
        println!(
            "  best of {RUNS}: {best:.2?} ({:.1} M events/s, {:.0} MB/s)",
            events as f64 / secs / 1e6,
            bytes.len() as f64 / secs / 1e6
        );
    }
}
