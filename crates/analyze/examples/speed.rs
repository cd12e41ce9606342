//! Analysis speed (a development aid): reading a .dat alone, reading plus the full
//! analysis, and the analysis alone over the file's events replayed N times.
//!
//! `cargo run --release -p jitterlab-analyze --example speed -- FILE.dat [REPEAT]`

use std::time::{Duration, Instant};

use jitterlab_analyze::analysis::Analyses;
use jitterlab_analyze::{analyze, Machine, MachineOptions, Options};
use jitterlab_trace::{dat::DatFile, EventSource};

fn best(n: usize, mut f: impl FnMut() -> u64) -> (Duration, u64) {
    let mut min = Duration::MAX;
    let mut count = 0;
    for _ in 0..n {
        let t = Instant::now();
        count = f();
        min = min.min(t.elapsed());
    }
    (min, count)
}

fn rate(d: Duration, n: u64) -> String {
    format!(
        "{:.2?} ({:.1} M events/s)",
        d,
        n as f64 / d.as_secs_f64() / 1e6
    )
}

fn main() {
    let path = std::env::args().nth(1).expect("a .dat file");
    let repeat: u64 = std::env::args()
        .nth(2)
        .map_or(100, |s| s.parse().expect("a number"));
    let (read, n) = best(7, || {
        let dat = DatFile::open(&path).unwrap();
        let mut ev = dat.events(0).unwrap();
        let mut n = 0;
        while ev.next_event().unwrap().is_some() {
            n += 1;
        }
        n
    });
    println!("read only:       {}", rate(read, n));
    let (open, _) = best(7, || {
        let dat = DatFile::open(&path).unwrap();
        let mut ev = dat.events(0).unwrap();
        u64::from(ev.next_event().unwrap().is_some())
    });
    println!("  of which open + first event: {open:.2?}");
    let (all, n) = best(7, || {
        let dat = DatFile::open(&path).unwrap();
        let mut ev = dat.events(0).unwrap();
        analyze(&mut ev, &Options::default())
            .unwrap()
            .summary
            .unwrap()
            .events
    });
    println!("read + analyze:  {}", rate(all, n));

    let dat = DatFile::open(&path).unwrap();
    let mut ev = dat.events(0).unwrap();
    let mut base = Vec::new();
    while let Some(e) = ev.next_event().unwrap() {
        base.push(e);
    }
    let span = base.last().unwrap().ts - base[0].ts + 1_000_000;
    let options = Options::default();
    let (alone, n) = best(3, || {
        let mut m = Machine::new(MachineOptions::default());
        let mut a = Analyses::new(&options);
        for k in 0..repeat {
            for e in &base {
                let mut e = e.clone();
                e.ts += k * span;
                m.feed(&e, &mut a);
            }
        }
        m.finish(&mut a);
        let r = a.report(&m, ev.meta(), ev.stats(), &options);
        r.summary.unwrap().events
    });
    println!("analysis alone:  {} over {repeat} replays", rate(alone, n));
}
