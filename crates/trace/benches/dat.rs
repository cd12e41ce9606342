//! Reading speed of the .dat reader: the counting path and the decoding path.
//!
//!     cargo bench -p jitterlab-trace --bench dat -- [FILE.dat ...]
//!
//! Without arguments it reads the test fixtures. Compare with
//! `time trace-cmd report FILE.dat > /dev/null`.

use std::time::{Duration, Instant};

use jitterlab_trace::dat::DatFile;
use jitterlab_trace::EventSource;

fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..runs {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed());
        out = Some(v);
    }
    (best, out.expect("at least one run"))
}

fn main() {
    let mut files: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if files.is_empty() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
        files = vec![
            format!("{dir}/cyclictest-idle.v7.dat"),
            format!("{dir}/instances.v7.dat"),
        ];
    }
    for f in files {
        let (open, dat) = best(3, || DatFile::open(&f).expect("opens"));
        println!("{f}: {}, opened in {open:.2?}", dat.meta().format);
        for b in 0..dat.buffers().len() {
            let (t, c) = best(3, || dat.count_events(b).expect("counts"));
            let rate = c.total as f64 / t.as_secs_f64() / 1e6;
            println!(
                "  buffer {b} {:?}: count_events {} events in {t:.2?} ({rate:.1} M/s)",
                c.buffer, c.total
            );
            let (t1, _) = best(3, || {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .build()
                    .expect("pool")
                    .install(|| dat.count_events(b))
            });
            println!("    count_events on 1 thread: {t1:.2?}");
            let (t, n) = best(1, || {
                let mut src = dat.events(b).expect("events");
                let mut n = 0u64;
                while src.next_event().expect("event").is_some() {
                    n += 1;
                }
                n
            });
            let rate = n as f64 / t.as_secs_f64() / 1e6;
            println!("    events() decoded {n} in {t:.2?} ({rate:.1} M/s)");
        }
    }
}
