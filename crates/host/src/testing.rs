//! Support for tests that change global host state (IRQ affinity, tracefs, cpusets,
//! workqueue masks): one lock shared by every test thread and test binary.
//! And [`skip`], the one way a live test skips: a failure under `JITTERLAB_REQUIRE_LIVE=1`.

use std::fs::File;

/// An exclusive `flock` on a file in the temporary directory, held until dropped.
/// Every test that changes global host state takes it first, so that cargo's parallel
/// test threads and binaries never change the same state at once.
#[derive(Debug)]
pub struct HostLock {
    _file: File,
}

/// Waits for and takes the host lock.
pub fn host_lock() -> std::io::Result<HostLock> {
    let f = File::create(std::env::temp_dir().join("jitterlab-tests.lock"))?;
    // SAFETY: flock on an open descriptor.
    let r = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_EX) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(HostLock { _file: f })
}

/// Waits until the real-time scheduler's budget on every CPU is whole again: one
/// throttling period (`sched_rt_period_us`, 1 s by default) and a little more.
/// SCHED_FIFO threads may run `sched_rt_runtime_us` of each period on a CPU (950 of
/// 1000 ms by default); a test that measured with a real-time loop just before may
/// have used most of it, and a loop measured now would be throttled in the middle,
/// a gap the test did not make. After an idle period, a window of less than the
/// runtime is never throttled, whatever the periods' phase.
pub fn wait_for_rt_budget() {
    let period = std::fs::read_to_string("/proc/sys/kernel/sched_rt_period_us")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .map_or(
            std::time::Duration::from_secs(1),
            std::time::Duration::from_micros,
        );
    std::thread::sleep(period + std::time::Duration::from_millis(100));
}

/// Whether this process runs as root ([`crate::running_as_root`]).
pub fn is_root() -> bool {
    crate::running_as_root()
}

/// The environment variable that turns a live test's skip into a failure: CI sets
/// it to `1` (.ci/run), so that a green run proves every live test ran.
pub const REQUIRE_LIVE: &str = "JITTERLAB_REQUIRE_LIVE";

/// Whether `JITTERLAB_REQUIRE_LIVE=1`: live tests may not skip.
pub fn live_required() -> bool {
    std::env::var_os(REQUIRE_LIVE).is_some_and(|v| v == "1")
}

/// A live test (or a part of one) that cannot run here: root, tracefs, a peer
/// program or the hardware it needs is missing. Prints `skipped: WHY` for the
/// caller to return (or go on without that part); under `JITTERLAB_REQUIRE_LIVE=1`
/// panics with `JITTERLAB_REQUIRE_LIVE=1 but WHY` instead, at the caller's line.
///
/// The line goes straight to the terminal's standard error, past the test harness's
/// capture of `eprintln!`, so that `cargo test` shows every skip among its results, not
/// only a test that passed: `skipped (live test): WHY, at FILE:LINE`.
///
/// The line is also added to the run's skip log ([`skip_log`]), and when the test
/// binary exits it prints every skip of the `cargo test` run so far: the last of these
/// summaries, after the last binary that skipped, lists them all.
#[track_caller]
pub fn skip(why: impl std::fmt::Display) {
    use std::io::Write;
    if live_required() {
        panic!("{REQUIRE_LIVE}=1 but {why}");
    }
    let at = std::panic::Location::caller();
    let line = format!("skipped (live test): {why}, at {}:{}", at.file(), at.line());
    // Not eprintln!: the harness captures it and shows it only for a test that failed.
    let _ = writeln!(std::io::stderr().lock(), "{line}");
    if let Some(log) = skip_log() {
        let logged = log
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                    .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()))
            });
        if logged.is_ok() {
            static AT_EXIT: std::sync::Once = std::sync::Once::new();
            // SAFETY: registers a function without arguments to run at exit.
            AT_EXIT.call_once(|| unsafe {
                libc::atexit(skips_at_exit);
            });
        }
    }
}

/// The environment variable that names the skip log instead of [`skip_log`]'s
/// default (a test of the summary sets it).
pub const SKIP_LOG: &str = "JITTERLAB_SKIP_LOG";

/// Where the skips of this `cargo test` run are logged, a line each: `$JITTERLAB_SKIP_LOG`,
/// else `jitterlab-skips/PID-START.log` in the temporary directory, named after the
/// `cargo` process that runs the test binaries (this process when no cargo started it)
/// and its start time, so that two runs never share a log.
pub fn skip_log() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os(SKIP_LOG) {
        return Some(p.into());
    }
    let parent = std::os::unix::process::parent_id();
    let comm = std::fs::read_to_string(format!("/proc/{parent}/comm")).unwrap_or_default();
    let run = if comm.trim() == "cargo" {
        parent
    } else {
        std::process::id()
    };
    // The start time, field 22 of /proc/PID/stat: the 20th after the command's ')'.
    let stat = std::fs::read_to_string(format!("/proc/{run}/stat")).ok()?;
    let start = stat
        .rsplit_once(") ")?
        .1
        .split_whitespace()
        .nth(19)?
        .to_string();
    Some(
        std::env::temp_dir()
            .join("jitterlab-skips")
            .join(format!("{run}-{start}.log")),
    )
}

/// At the exit of a test binary that skipped: every skip of the run so far, and how to
/// get a run without one.
extern "C" fn skips_at_exit() {
    use std::io::Write;
    let Some(text) = skip_log().and_then(|l| std::fs::read_to_string(l).ok()) else {
        return;
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    let mut out = format!(
        "\nlive tests skipped in this test run so far: {} (the last such list is the whole run's)\n",
        lines.len()
    );
    for l in &lines {
        out.push_str(&format!("  {l}\n"));
    }
    out.push_str(
        "  to run them all: as root, with the peers .ci/run installs \
         (JITTERLAB_REQUIRE_LIVE=1 makes a skip a failure)\n",
    );
    let _ = std::io::stderr().lock().write_all(out.as_bytes());
}

/// The last resort of a test or benchmark that changed the host: the partition
/// journalled in `state_dir` (if any) reverted, the tasks of the cgroup v1 cpusets
/// `sets` (names under `/sys/fs/cgroup/cpuset`) moved to the root set and the sets
/// removed, then every control file and IRQ mask that differs from `before`
/// written back, and every movable thread whose CPUs differ given them back (an
/// IRQ thread's CPUs follow its IRQ, a cpuset move resets them, and `isolate
/// --move-init` moves PID 1's). What could not be put back is printed.
pub fn restore(
    before: &crate::partition::Snapshot,
    state_dir: Option<&std::path::Path>,
    sets: &[&str],
) {
    const CPUSET: &str = "/sys/fs/cgroup/cpuset";
    let mut sys = crate::partition::LiveSystem::new();
    if let Some(dir) = state_dir.filter(|d| crate::partition::Journal::exists(d)) {
        if let Err(e) = crate::partition::revert(&mut sys, dir) {
            eprintln!("restore: revert of {}: {e}", dir.display());
        }
    }
    let root = crate::Root::live();
    for set in sets {
        let dir = format!("{CPUSET}/{set}");
        let to = format!("{CPUSET}/tasks");
        // Tasks forked meanwhile keep a set busy: revert's evacuation, a few times over.
        let mut outcome = crate::partition::UndoOutcome::Unchanged;
        for _ in 0..4 {
            outcome = crate::partition::revert::remove_cgroup(&mut sys, &dir, &to);
            if !matches!(outcome, crate::partition::UndoOutcome::Failed { .. }) {
                break;
            }
        }
        if let crate::partition::UndoOutcome::Failed { error } = outcome {
            eprintln!("restore: could not remove the cpuset {dir}: {error}");
        }
    }
    for (path, value) in &before.files {
        if root.read_line(path).ok().as_deref() != Some(value) {
            let _ = root.write(path, value);
        }
    }
    for irq in &before.irqs {
        if let Some(a) = &irq.affinity {
            let path = format!("/proc/irq/{}/smp_affinity_list", irq.irq);
            if root.read_cpu_list(&path).ok().as_ref() != Some(a) {
                let _ = root.write(&path, &a.to_string());
            }
        }
    }
    for t in before.tasks.iter().filter(|t| t.kind.is_movable()) {
        if crate::sched::get_affinity(t.tid).is_ok_and(|now| now != t.allowed)
            && crate::tasks::read_start_ticks(&root, t.pid, t.tid) == Some(t.start_ticks)
        {
            let _ = crate::sched::set_affinity(t.tid, &t.allowed);
        }
    }
}

/// A global allocator that counts the live heap bytes of a test binary and their peak,
/// for the memory tests (`crates/*/tests/memory.rs`):
///
/// ```ignore
/// #[global_allocator]
/// static ALLOC: CountingAlloc = CountingAlloc::new();
/// let peak = ALLOC.peak_of(|| { /* read something */ });
/// ```
///
/// A `realloc` counts the old and new blocks as both live, as a copying realloc has them,
/// so figures lean high.
pub struct CountingAlloc {
    current: std::sync::atomic::AtomicUsize,
    peak: std::sync::atomic::AtomicUsize,
}

impl CountingAlloc {
    /// Nothing counted yet.
    pub const fn new() -> CountingAlloc {
        CountingAlloc {
            current: std::sync::atomic::AtomicUsize::new(0),
            peak: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    fn grew(&self, n: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        let now = self.current.fetch_add(n, Relaxed) + n;
        self.peak.fetch_max(now, Relaxed);
    }

    /// Runs `f` and returns the peak of live heap bytes it added on top of what was live
    /// before (an input built beforehand is not counted).
    pub fn peak_of(&self, f: impl FnOnce()) -> usize {
        use std::sync::atomic::Ordering::Relaxed;
        let base = self.current.load(Relaxed);
        self.peak.store(base, Relaxed);
        f();
        self.peak.load(Relaxed).saturating_sub(base)
    }
}

impl Default for CountingAlloc {
    fn default() -> CountingAlloc {
        CountingAlloc::new()
    }
}

// SAFETY: every call is passed to the system allocator unchanged; only counters change.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = std::alloc::System.alloc(layout);
        if !p.is_null() {
            self.grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = std::alloc::System.alloc_zeroed(layout);
        if !p.is_null() {
            self.grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(ptr, layout);
        self.current
            .fetch_sub(layout.size(), std::sync::atomic::Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let p = std::alloc::System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            self.grew(new_size);
            self.current
                .fetch_sub(layout.size(), std::sync::atomic::Ordering::Relaxed);
        }
        p
    }
}

/// `size` bytes of a fixed-seed xorshift: the same noise on every run, for the tests
/// that feed readers garbage.
pub fn noise(size: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    let mut v = Vec::with_capacity(size + 8);
    while v.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(size);
    v
}

/// /proc/interrupts as a kernel prints it (`show_interrupts`: a count in `"%10u "`) for
/// `irqs` MSI-X IRQs on CPUs `0..cpus`, with x86's named rows (ERR and MIS one count
/// each): a large file of the real shape, for the tests that check the bounds leave it
/// alone.
pub fn real_interrupts(irqs: usize, cpus: usize) -> String {
    use std::fmt::Write;
    let mut t = String::from("    ");
    for c in 0..cpus {
        let _ = write!(t, "{:<11}", format!("CPU{c}"));
    }
    t.push('\n');
    for i in 0..irqs {
        let _ = write!(t, "{:>5}:", i + 24);
        for c in 0..cpus {
            let _ = write!(t, "{:>10} ", (i * 7 + c * 13) % 100_000);
        }
        let _ = writeln!(
            t,
            " PCI-MSIX-0000:{:02x}:00.0 {i}-edge      nvme{}q{}",
            i / 64 % 256,
            i / 64,
            i % 64
        );
    }
    for (name, desc) in [
        ("NMI", "Non-maskable interrupts"),
        ("LOC", "Local timer interrupts"),
        ("RES", "Rescheduling interrupts"),
        ("CAL", "Function call interrupts"),
    ] {
        let _ = write!(t, "{name:>5}:");
        for c in 0..cpus {
            let _ = write!(t, "{:>10} ", c * 1000);
        }
        let _ = writeln!(t, "  {desc}");
    }
    let _ = writeln!(t, "{:>5}: {:>10}\n{:>5}: {:>10}", "ERR", 0, "MIS", 0);
    t
}

/// /proc/softirqs as a kernel prints it (`" %10u"` a count) for CPUs `0..cpus`.
pub fn real_softirqs(cpus: usize) -> String {
    use std::fmt::Write;
    let mut t = String::from("                ");
    for c in 0..cpus {
        let _ = write!(t, "{:<11}", format!("CPU{c}"));
    }
    t.push('\n');
    for name in [
        "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER",
        "RCU",
    ] {
        let _ = write!(t, "{name:>12}:");
        for c in 0..cpus {
            let _ = write!(t, " {:>10}", c * 17);
        }
        t.push('\n');
    }
    t
}
