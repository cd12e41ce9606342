//! Progress of long work on stderr, drawn with indicatif, one API for every command:
//! bytes done of the total, the rate and the time left (`analyze`, `report --stats`,
//! `convert`, `view`, `export`: [`Progress::bytes`]); the time of a run of known length
//! (`record --duration`: [`Progress::time`]); steps, counted or named (`experiment`'s
//! runs, `audit`'s probes: [`Progress::steps`]).
//!
//! The work never talks to indicatif: it adds what it has done to a shared counter (an
//! `Arc<AtomicU64>`: the trace readers take one through `Trace::set_progress`), and a
//! thread of this module reads it ten times a second and redraws the line. So the reader
//! pays one relaxed atomic addition per page, chunk or 256 KiB of text it reads, and
//! nothing at all when progress is off.
//!
//! Progress is drawn only when stderr is a terminal and `--quiet` was not given
//! (`JITTERLAB_PROGRESS=always` draws it anyway, for measuring its cost;
//! `JITTERLAB_PROGRESS=never` never does). It is on stderr, so it is never in a
//! command's output, `--json` included, and the line is cleared when the work ends.
//!
//! ```ignore
//! let progress = Progress::bytes("reading trace.dat", trace.progress_total(false));
//! trace.set_progress(progress.counter());
//! let report = analyze_trace(&trace, options, None)?;
//! progress.finish();
//! ```

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod live;
pub use live::latency_progress;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use jitterlab_trace::Trace;

/// Progress of one pass over `trace`'s events, labelled `what` ("analyzing
/// trace.dat"): of its chosen buffer, or of every buffer with `every_buffer` (as
/// `report --stats` and a .dat copy read them). When the line is drawn, the trace's
/// readers add the bytes they pass to it; else the trace is left as it was.
pub fn reading(trace: &mut Trace, what: impl Into<String>, every_buffer: bool) -> Progress {
    reading_all(vec![trace], what, every_buffer)
}

/// [`reading`] of several traces read one after the other (`view A B`), on one line:
/// their bytes in all; hidden when there is none.
pub fn reading_all(
    traces: Vec<&mut Trace>,
    what: impl Into<String>,
    every_buffer: bool,
) -> Progress {
    if traces.is_empty() {
        return Progress::hidden();
    }
    let total = traces
        .iter()
        .map(|t| t.progress_total(every_buffer))
        .sum::<Option<u64>>();
    let progress = Progress::bytes(what, total);
    if progress.is_drawn() {
        for trace in traces {
            trace.set_progress(progress.counter());
        }
    }
    progress
}

/// `path`'s file name, for a label.
pub fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(100);

/// Whether progress is drawn in this process, decided once by [`init`].
static ENABLED: OnceLock<Draw> = OnceLock::new();

/// Where progress goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Draw {
    /// Nowhere.
    Off,
    /// To stderr, a terminal.
    Terminal,
    /// To stderr whatever it is (`JITTERLAB_PROGRESS=always`).
    Forced,
}

/// Decides, once per process, whether progress is drawn: with `quiet` (the global
/// `--quiet`) never; else when stderr is a terminal (not `TERM=dumb`). The environment
/// variable `JITTERLAB_PROGRESS` overrides both: `always` or `never` (`auto`: as said).
/// Called by `cmd::run` before any command; a later call changes nothing.
pub fn init(quiet: bool) {
    let _ = ENABLED.set(decide(quiet));
}

fn decide(quiet: bool) -> Draw {
    match std::env::var("JITTERLAB_PROGRESS").as_deref() {
        Ok("always") => return Draw::Forced,
        Ok("never") => return Draw::Off,
        _ => {}
    }
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    if quiet || dumb || !std::io::stderr().is_terminal() {
        Draw::Off
    } else {
        Draw::Terminal
    }
}

/// What the counter counts.
#[derive(Clone, Copy)]
enum Unit {
    Bytes,
    /// Milliseconds of a run of known length.
    Time,
    /// Steps of the work (the runs of an experiment), each named in the message.
    Steps,
}

/// One progress line on stderr, fed by a counter; hidden (and costing nothing but the
/// counter) when progress is off. Cleared by [`Progress::finish`] or when dropped (an
/// error's message then starts on a clean line).
pub struct Progress {
    counter: Arc<AtomicU64>,
    shared: Option<Arc<Shared>>,
    poller: Option<JoinHandle<()>>,
}

/// What the poller thread and the owner share.
struct Shared {
    bar: ProgressBar,
    stop: AtomicBool,
    /// The total, or `u64::MAX` when unknown.
    total: AtomicU64,
}

// `add`, `set`, `set_total` and `set_label` are for work that counts by itself (`export`).
#[allow(dead_code)]
impl Progress {
    /// Progress of work on `total` bytes (`None`: the total is not known, as for a pipe:
    /// a spinner with the bytes done and the rate), labelled `what` ("analyzing
    /// trace.dat"). The work adds the bytes it has done to [`Progress::counter`] (or
    /// through [`Progress::add`] and [`Progress::set`]).
    pub fn bytes(what: impl Into<String>, total: Option<u64>) -> Progress {
        Progress::start(what.into(), total, Unit::Bytes)
    }

    /// Progress of a run of known length (`record --duration`): the elapsed time of
    /// `total`, counted by the line itself from now on; when the time is up and the work
    /// goes on (saving), the line says so.
    pub fn time(what: impl Into<String>, total: Duration) -> Progress {
        let ms = u64::try_from(total.as_millis()).unwrap_or(u64::MAX);
        Progress::start(what.into(), Some(ms), Unit::Time)
    }

    /// Progress of work in steps, labelled `what` ("experiment"): of `total` steps (a
    /// bar with `3/12`) or of steps not counted ahead (`None`: a spinner and the time
    /// spent); [`Progress::step`] names each as it starts.
    pub fn steps(what: impl Into<String>, total: Option<u64>) -> Progress {
        let p = Progress::start(what.into(), total, Unit::Steps);
        if let Some(s) = &p.shared {
            s.bar.set_message("starting");
        }
        p
    }

    /// Step `n` (counted from 0) starts, named `what` ("run 3: pinned (warm-up)").
    pub fn step(&self, n: u64, what: impl Into<String>) {
        self.counter.store(n, Ordering::Relaxed);
        if let Some(s) = &self.shared {
            s.bar.set_message(what.into());
            s.bar.set_position(n);
        }
    }

    /// No line at all, whatever [`init`] decided (the counter still counts).
    pub fn hidden() -> Progress {
        Progress {
            counter: Arc::new(AtomicU64::new(0)),
            shared: None,
            poller: None,
        }
    }

    fn start(what: String, total: Option<u64>, unit: Unit) -> Progress {
        let draw = ENABLED.get().copied().unwrap_or(Draw::Off);
        let target = match draw {
            Draw::Off => return Progress::hidden(),
            Draw::Terminal => ProgressDrawTarget::stderr_with_hz(10),
            Draw::Forced => {
                // Buffered, as indicatif's own stderr target: one write per redraw.
                let term = console::Term::buffered_stderr();
                ProgressDrawTarget::term_like_with_hz(Box::new(term), 10)
            }
        };
        let bar = ProgressBar::with_draw_target(total, target)
            .with_style(style(unit, total.is_some()))
            .with_prefix(what);
        let shared = Arc::new(Shared {
            bar,
            stop: AtomicBool::new(false),
            total: AtomicU64::new(total.unwrap_or(u64::MAX)),
        });
        let counter = Arc::new(AtomicU64::new(0));
        let poller = {
            let (shared, counter) = (Arc::clone(&shared), Arc::clone(&counter));
            std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || poll(&shared, &counter, unit))
                .ok()
        };
        Progress {
            counter,
            shared: Some(shared),
            poller,
        }
    }

    /// The counter the work adds to: bytes done (hand it to `Trace::set_progress`).
    pub fn counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.counter)
    }

    /// Adds `n` bytes done.
    pub fn add(&self, n: u64) {
        self.counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Sets the bytes done to `n`.
    pub fn set(&self, n: u64) {
        self.counter.store(n, Ordering::Relaxed);
    }

    /// Changes the total (`None`: unknown) for what follows, as when a second phase of
    /// the work starts (with [`Progress::set`] back to 0 and [`Progress::set_label`]).
    pub fn set_total(&self, total: Option<u64>) {
        if let Some(s) = &self.shared {
            s.total.store(total.unwrap_or(u64::MAX), Ordering::Relaxed);
            match total {
                Some(t) => s.bar.set_length(t),
                None => s.bar.unset_length(),
            }
            s.bar.set_style(style(Unit::Bytes, total.is_some()));
        }
    }

    /// Changes the label.
    pub fn set_label(&self, what: impl Into<String>) {
        if let Some(s) = &self.shared {
            s.bar.set_prefix(what.into());
        }
    }

    /// Whether a line is drawn.
    pub fn is_drawn(&self) -> bool {
        self.shared.is_some()
    }

    /// Ends the line and clears it.
    pub fn finish(self) {
        drop(self);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(s) = &self.shared {
            s.stop.store(true, Ordering::Relaxed);
            if let Some(t) = self.poller.take() {
                t.thread().unpark();
                let _ = t.join();
            }
            s.bar.finish_and_clear();
        }
    }
}

/// The poller: the counter into the bar, ten times a second, until stopped.
fn poll(shared: &Shared, counter: &AtomicU64, unit: Unit) {
    let start = Instant::now();
    while !shared.stop.load(Ordering::Relaxed) {
        let total = shared.total.load(Ordering::Relaxed);
        match unit {
            Unit::Bytes | Unit::Steps => shared
                .bar
                .set_position(counter.load(Ordering::Relaxed).min(total)),
            Unit::Time => {
                let ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
                shared.bar.set_position(ms.min(total));
                let done = ms >= total;
                shared.bar.set_message(if done {
                    "time is up; saving".to_string()
                } else {
                    format!("{:.0} s of {:.0} s", ms as f64 / 1e3, total as f64 / 1e3)
                });
            }
        }
        std::thread::park_timeout(TICK);
    }
}

/// The line's look: `analyzing trace.dat [=====>    ] 120.4 MiB/301.2 MiB 85.0 MiB/s, 2s left`.
fn style(unit: Unit, known: bool) -> ProgressStyle {
    ProgressStyle::with_template(template(unit, known))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

fn template(unit: Unit, known: bool) -> &'static str {
    match (unit, known) {
        (Unit::Bytes, true) => {
            "{prefix} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec}, {eta} left"
        }
        (Unit::Bytes, false) => "{spinner} {prefix} {binary_bytes} {binary_bytes_per_sec}",
        (Unit::Time, _) => "{prefix} [{bar:30}] {msg}",
        (Unit::Steps, true) => "{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed})",
        (Unit::Steps, false) => "{spinner} {prefix}: {msg} ({elapsed})",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_progress_still_counts() {
        let p = Progress::hidden();
        p.add(10);
        p.counter().fetch_add(5, Ordering::Relaxed);
        assert_eq!(p.counter().load(Ordering::Relaxed), 15);
        p.set(3);
        assert_eq!(p.counter().load(Ordering::Relaxed), 3);
        p.step(7, "run 8");
        assert_eq!(p.counter().load(Ordering::Relaxed), 7);
        assert!(!p.is_drawn());
        p.finish();
    }

    #[test]
    fn every_template_parses() {
        for (unit, known) in [
            (Unit::Bytes, true),
            (Unit::Bytes, false),
            (Unit::Time, true),
            (Unit::Steps, true),
            (Unit::Steps, false),
        ] {
            let t = template(unit, known);
            assert!(ProgressStyle::with_template(t).is_ok(), "{t}");
        }
    }
}
