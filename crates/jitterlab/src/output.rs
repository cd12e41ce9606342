//! Where and how results are written.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use jitterlab_render::{render, Format, Render, Style};

use crate::cli::Color;

/// Picks text or JSON, and colour for text.
pub fn format(json: bool, color: Color) -> Format {
    if json {
        return Format::Json;
    }
    let color = match color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    Format::Text(Style { color })
}

/// Writes a result to stdout.
pub fn emit<T: Render>(value: &T, format: Format) -> anyhow::Result<()> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    render(value, format, &mut out)?;
    out.flush()?;
    Ok(())
}

/// Whether an error is a closed stdout (`jitterlab show | head`), which is not a failure.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Shows, on stderr, each CPU's latest and worst latency and the time elapsed
/// and left, until `done` is set; then clears the line.
pub fn progress(
    live: Vec<Arc<jitterlab_latency::Live>>,
    stop: jitterlab_latency::Stop,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    use std::sync::atomic::Ordering::Relaxed;
    std::thread::spawn(move || {
        let start = std::time::Instant::now();
        let mut err = io::stderr();
        while !done.load(Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(250));
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
                jitterlab_latency::Stop::DurationNs(d) => {
                    format!("{:.0}s left", (d as f64 / 1e9 - elapsed).max(0.0))
                }
                jitterlab_latency::Stop::Loops(n) => {
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

/// Blocks SIGINT and SIGTERM in this thread (and so in the probe threads it
/// starts) and sets the returned flag when one arrives, ending the run
/// cleanly with its results.
pub fn cancel_on_signals() -> Arc<AtomicBool> {
    let cancel = Arc::new(AtomicBool::new(false));
    // SAFETY: plain signal-set manipulation on a zeroed sigset_t.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let flag = Arc::clone(&cancel);
    std::thread::spawn(move || {
        let mut sig = 0;
        // SAFETY: set is a valid, initialised sigset_t.
        if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
            flag.store(true, Ordering::Relaxed);
        }
    });
    cancel
}
