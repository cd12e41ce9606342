//! The latency probe's live line on a terminal: each CPU's latest and worst latency, the
//! time elapsed and what is left.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jitterlab_latency::{Live, Stop};

/// Draws the line on stderr every 250 ms until `done` is set; then clears it.
pub fn latency_progress(live: Vec<Arc<Live>>, stop: Stop, done: Arc<AtomicBool>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut err = io::stderr();
        while !done.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(250));
            let mut line = String::new();
            for l in &live {
                line.push_str(&format!(
                    "CPU{} {:.1}/{:.1}us  ",
                    l.cpu,
                    l.last_ns.load(Relaxed) as f64 / 1e3,
                    l.max_ns.load(Relaxed) as f64 / 1e3
                ));
            }
            let elapsed = start.elapsed().as_secs_f64();
            let left = match stop {
                Stop::DurationNs(d) => format!("{:.0}s left", (d as f64 / 1e9 - elapsed).max(0.0)),
                Stop::Loops(n) => {
                    let done_loops = live
                        .iter()
                        .map(|l| l.samples.load(Relaxed))
                        .min()
                        .unwrap_or(0);
                    format!("{done_loops}/{n} loops")
                }
            };
            let _ = write!(err, "\r\x1b[K{line}(last/worst)  {elapsed:.0}s, {left}");
            let _ = err.flush();
        }
        let _ = write!(err, "\r\x1b[K");
    })
}
