//! Issue 31: every command README.md and GUIDE.md show runs as written, and every output
//! they show is what jitterlab prints now (numbers masked).
//!
//! The fenced ```` ```console ```` and ```` ```sh ```` blocks of both pages are read in
//! order. In a console block a line `$ CMD` is a command and the lines after it, up to the
//! next `$ ` or the fence, what it printed: those lines must appear, in order, among the
//! lines the command really printed (stdout, then stderr; the pages show outputs "trimmed
//! to the telling lines"), each compared with its numbers masked ([`pages::mask`]) and `...`
//! matching anything within a line. In an sh block every line is run (other tools' too),
//! but for the few
//! that cannot run on the reference VM ([`NOT_RUN`], whose `jitterlab` parts are still
//! parsed with `--help`); the handful of placeholders a reader replaces with their own
//! (a pid, their application) are replaced by [`SUBSTITUTE`].
//!
//! Each command runs in `bash -c` in a scratch directory of its page that holds the files
//! the pages name ([`provide`], from the committed test data), with `PATH` starting with
//! the directory of the binary under test, `HOME` a fresh directory holding
//! `~/.cargo/bin/jitterlab` as `cargo install` leaves it, and `NO_COLOR=1`; the status
//! must be 0 (3 where it is the command's answer: `audit`, `verify`, `latency --break` or
//! `--fail-above`), and a command still running after its time is killed and fails.
//! Commands that change the machine or read tracefs need root: the test takes the host
//! lock, snapshots the machine first and restores it after (also when it fails); without
//! root they are skipped with a visible `skip` (a failure under
//! `JITTERLAB_REQUIRE_LIVE=1`), the others still run.

#[allow(dead_code)] // the helpers the other test binaries use
mod util;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use util::repo;

#[path = "docs_run/pages.rs"]
mod pages;
use pages::{blocks, compare, jitterlab_parts, steps};

/// The pages whose blocks are run.
const PAGES: [&str; 2] = ["README.md", "GUIDE.md"];

/// Lines of the pages that are not run here, each with why: a line starting with the
/// first string. Their `jitterlab` parts are parsed (with `--help`). An entry that no
/// line of the pages starts with any more is stale, and fails the test.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "cargo install --locked --path crates/jitterlab",
        "it builds and installs the binary CI has built; docs.rs's \
         readme_setup_commands_are_the_ones_ci_runs checks the line, and `jitterlab audit` \
         runs in the audit block of GUIDE.md",
    ),
    (
        "cargo test --workspace --locked",
        "this test is part of that run (CI runs it, .ci/run)",
    ),
    (
        "lttng ",
        "LTTng records through lttng-modules, which the reference VM's kernel lacks; the \
         `jitterlab analyze` of the session's folder after them runs on a committed LTTng \
         trace (crates/trace/tests/data/lttng)",
    ),
    (
        "duckdb -c ",
        "the duckdb command-line tool is not packaged for the VM; crates/parquet/tests/duckdb.rs \
         runs such queries over an export through duckdb's Python package",
    ),
];

/// Placeholders a reader replaces with their own, and what the test runs instead: in a
/// line containing the first string, the second is replaced by the third. `$PID` and
/// `$TID` are a process the test starts (two threads, sleeping) and its second thread.
const SUBSTITUTE: &[(&str, &str, &str, &str)] = &[
    (
        "-p 12910",
        "12910",
        "$PID",
        "a process of the reader's; here one the test started, since pin must never move \
         a process the test did not start",
    ),
    (
        "--tid 12911",
        "12911",
        "$TID",
        "one of that process's threads",
    ),
    (
        "./rt-app",
        "./rt-app --flag",
        "sleep 1",
        "the reader's real-time application (rt-app, or their own); here a command that \
         sleeps, so that nothing spins at SCHED_FIFO 80",
    ),
    (
        "./rt-app",
        "./rt-app",
        "sleep 1",
        "the same, without arguments",
    ),
];

/// The files the pages name, as the test provides them in each page's scratch directory
/// (a command of the page may make them again): the name and the committed file it is
/// a copy of (`.zst` decompressed), relative to the repository.
const PROVIDED: &[(&str, &str)] = &[
    // A recording named as the guide's examples name it: its times 976.3..977.4, the
    // cyclictest pid 11384.
    (
        "trace.dat",
        "crates/trace/tests/data/cyclictest-idle.v7.dat",
    ),
    (
        "trace.v7.dat",
        "crates/trace/tests/data/cyclictest-idle.v7.dat",
    ),
    (
        "trace.v6.dat",
        "crates/trace/tests/data/cyclictest-idle.v6.dat.zst",
    ),
    (
        "disk-irq-stress.v7.dat",
        "crates/trace/tests/data/disk-irq-stress.v7.dat",
    ),
    (
        "veth-iperf3.dat",
        "crates/trace/tests/data/veth-iperf3.v6.dat.zst",
    ),
    (
        "veth-iperf3-stress.dat",
        "crates/trace/tests/data/veth-iperf3-stress.v6.dat.zst",
    ),
    // What `record -o idle.dat` makes (as root); the other side of `view idle.dat stress.dat`.
    ("idle.dat", "crates/trace/tests/data/veth-iperf3.v6.dat.zst"),
    (
        "stress.dat",
        "crates/trace/tests/data/veth-iperf3-stress.v6.dat.zst",
    ),
    // What `latency --json=run.json` makes (as root).
    (
        "run.json",
        "crates/trace/tests/data/latency-recorded.json.zst",
    ),
    (
        "experiment.json",
        "crates/render/tests/fixtures/experiment.json",
    ),
    (
        "graph-before.txt",
        "crates/trace/tests/data/text/fgraph-ehci-softirq.txt",
    ),
    (
        "graph-after.txt",
        "crates/trace/tests/data/text/fgraph-smi-abstime.txt",
    ),
    ("smoke.toml", "crates/jitterlab/tests/docs/smoke.toml"),
    // README.md runs it from the repository, as its set-up does.
    (
        "crates/jitterlab/tests/docs/smoke.toml",
        "crates/jitterlab/tests/docs/smoke.toml",
    ),
    // `lttng destroy` leaves the session's folder in ~/lttng-traces/jl-DATE-TIME/.
    (
        "~/lttng-traces/jl-20261129-101500",
        "crates/trace/tests/data/lttng/kernel-irq-sched",
    ),
];

/// Checks after a page ran, in its environment: what its one-liners for completions and
/// man pages promise (the file in bash-completion's folder, `man` finding a page).
const AFTER: &[(&str, &str)] = &[
    (
        "README.md",
        "test -s ~/.local/share/bash-completion/completions/jitterlab && man -w jitterlab-latency",
    ),
    (
        "GUIDE.md",
        "test -s ~/.local/share/bash-completion/completions/jitterlab \
         && test -s ~/.zfunc/_jitterlab && test -s ~/.config/fish/completions/jitterlab.fish \
         && man -w jitterlab-latency",
    ),
];

/// How long one command may run before it is killed and the test fails.
const TIMEOUT: Duration = Duration::from_secs(150);

/// Whether a command line needs root: one of its `jitterlab` commands changes the
/// machine (or measures on it, or records), or it reads tracefs.
fn needs_root(cmd: &str) -> bool {
    cmd.contains("/sys/kernel/tracing")
        || jitterlab_parts(cmd).iter().any(|args| {
            let has = |flag: &str| args.iter().any(|a| a == flag);
            match args.first().map(String::as_str) {
                // `--dry-run` too: its checks ask for root.
                Some("isolate") => true,
                // `--compare` too: it reads what the runs before it saved.
                Some("experiment") => !(has("--list") || has("--show")),
                Some(
                    "run" | "verify" | "revert" | "irq" | "pin" | "record" | "latency" | "load"
                    | "audit",
                ) => true,
                _ => false,
            }
        })
}

/// Whether status 3 is the command's answer rather than a failure.
fn three_is_an_answer(cmd: &str) -> bool {
    cmd.contains("jitterlab audit")
        || cmd.contains("jitterlab verify")
        || (cmd.contains("jitterlab latency")
            && (cmd.contains("--break") || cmd.contains("--fail-above")))
}

/// The command as the test runs it, after [`SUBSTITUTE`].
fn substituted(cmd: &str) -> String {
    let mut out = cmd.to_string();
    for (when, from, to, _) in SUBSTITUTE {
        if out.contains(when) {
            out = out.replace(from, to);
        }
    }
    out
}

/// Copies the committed `from` (a `.zst` decompressed, a directory recursively) to `to`.
fn copy_in(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            copy_in(&e.path(), &to.join(e.file_name()));
        }
    } else if from.extension().is_some_and(|e| e == "zst") {
        let bytes = zstd::decode_all(std::fs::File::open(from).unwrap()).unwrap();
        std::fs::write(to, bytes).unwrap();
    } else {
        std::fs::copy(from, to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    }
}

/// The scratch directory and home of one page, with [`PROVIDED`] in them.
struct Scratch {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
}

fn provide() -> Scratch {
    let root = repo();
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    for (name, from) in PROVIDED {
        let to = match name.strip_prefix("~/") {
            Some(rest) => home.path().join(rest),
            None => dir.path().join(name),
        };
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        copy_in(&root.join(from), &to);
    }
    // Where `cargo install` puts the binary: man finds ~/.cargo/share/man beside it.
    let bin = home.path().join(".cargo/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_jitterlab"), bin.join("jitterlab")).unwrap();
    Scratch { dir, home }
}

/// What a command did.
struct Ran {
    status: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
    timed_out: bool,
}

/// Runs `cmd` with `bash -c` in `scratch`, in a process group of its own that is ended
/// (SIGTERM, then SIGKILL) when bash has ended, so that nothing it started in the
/// background outlives it; killed past [`TIMEOUT`].
fn run_line(cmd: &str, scratch: &Scratch, vars: &[(&str, String)]) -> Ran {
    use std::os::unix::process::CommandExt;
    let bin = Path::new(env!("CARGO_BIN_EXE_jitterlab")).parent().unwrap();
    let path = format!(
        "{}:{}:{}",
        bin.display(),
        scratch.home.path().join(".cargo/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out_dir = tempfile::tempdir().unwrap();
    let (o, e) = (out_dir.path().join("out"), out_dir.path().join("err"));
    let start = Instant::now();
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(cmd)
        .current_dir(scratch.dir.path())
        .env("PATH", path)
        .env("HOME", scratch.home.path())
        .env("NO_COLOR", "1")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env_remove("JITTERLAB_PROGRESS")
        .env_remove("MANPATH")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap())
        .process_group(0);
    for (k, v) in vars {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("bash");
    let pgid = child.id() as i32;
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > TIMEOUT {
            timed_out = true;
            // SAFETY: a signal to the process group this test started.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = start.elapsed();
    end_group(pgid);
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).to_string();
    Ran {
        status: status.code(),
        stdout: read(&o),
        stderr: read(&e),
        took,
        timed_out,
    }
}

/// Ends what is left of a process group the test started: SIGTERM (a recorder writes
/// its file and restores tracefs), then SIGKILL after 5 s.
fn end_group(pgid: i32) {
    // SAFETY: signals to the process group this test started (0: does it exist).
    if unsafe { libc::killpg(pgid, 0) } != 0 {
        return;
    }
    unsafe { libc::killpg(pgid, libc::SIGTERM) };
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if unsafe { libc::killpg(pgid, 0) } != 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
}

/// Puts the machine back after the pages' root commands: the partition journalled in
/// /run/jitterlab (where the pages' `isolate` keeps it) reverted, jitterlab's cpusets
/// removed, and every IRQ mask, control file and thread's CPUs as in the snapshot; the
/// process the test started for `pin` ended; tracefs' `tracing_on`, which `latency
/// --break` turns off, as it was, and the instances of recorders the test killed removed.
struct Restore {
    before: jitterlab_host::partition::Snapshot,
    target: Option<std::process::Child>,
    tracing_on: Option<String>,
    instances: Vec<std::ffi::OsString>,
}

const TRACEFS: &str = "/sys/kernel/tracing";

/// The names of tracefs' instances.
fn instances() -> Vec<std::ffi::OsString> {
    std::fs::read_dir(format!("{TRACEFS}/instances"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

impl Restore {
    fn new(target: std::process::Child) -> Restore {
        Restore {
            before: jitterlab_host::partition::Snapshot::read(&jitterlab_host::Root::live())
                .expect("snapshot"),
            target: Some(target),
            tracing_on: std::fs::read_to_string(format!("{TRACEFS}/tracing_on")).ok(),
            instances: instances(),
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if let Some(c) = &mut self.target {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(on) = &self.tracing_on {
            let _ = std::fs::write(format!("{TRACEFS}/tracing_on"), on.trim());
        }
        for name in instances() {
            if !self.instances.contains(&name) && name.to_string_lossy().starts_with("jitterlab-") {
                let _ = std::fs::remove_dir(Path::new(TRACEFS).join("instances").join(&name));
            }
        }
        jitterlab_host::testing::restore(
            &self.before,
            Some(Path::new("/run/jitterlab")),
            &["jitterlab.isolated", "jitterlab.housekeeping"],
        );
    }
}

/// Starts the process `pin -p` moves: two threads, sleeping; its pid and second thread.
/// The caller's [`Restore`] ends it.
fn pin_target() -> (std::process::Child, String, String) {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import threading, time\nthreading.Thread(target=time.sleep, args=(600,)).start()\ntime.sleep(600)",
        ])
        .stdin(Stdio::null())
        .spawn()
        .expect("python3");
    let pid = child.id().to_string();
    match second_thread(&pid) {
        Some(tid) => (child, pid, tid),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the process for pin -p started no second thread");
        }
    }
}

/// A thread of process `pid` other than its main one, waited for up to 10 s.
fn second_thread(pid: &str) -> Option<String> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        let tid = std::fs::read_dir(format!("/proc/{pid}/task"))
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .find(|t| t != pid);
        if tid.is_some() {
            return tid;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// The pages' commands run as written, and their shown outputs are what they print.
#[test]
fn every_command_of_readme_and_guide_runs_as_shown() {
    let started = Instant::now();
    let root = repo();
    let live = util::is_root() && Path::new("/sys/kernel/tracing/trace").exists();
    let _lock = live.then(util::host_lock);
    let mut restore = None;
    let mut vars = Vec::new();
    if live {
        assert!(
            !jitterlab_host::partition::Journal::exists(Path::new("/run/jitterlab")),
            "a partition is in place (/run/jitterlab): revert it before this test"
        );
        let (target, pid, tid) = pin_target();
        vars.push(("PID", pid));
        vars.push(("TID", tid));
        restore = Some(Restore::new(target));
    }
    let mut problems = Vec::new();
    let mut used_not_run = vec![0; NOT_RUN.len()];
    let mut used_subst = vec![0; SUBSTITUTE.len()];
    let (mut consoles, mut console_commands) = (0, 0);
    let (mut ran, mut compared, mut skipped, mut parsed) = (0, 0, 0, 0);
    let mut report = Vec::new();
    for page in PAGES {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        let (steps, c) = steps(&text);
        // Counted apart from `steps`: no block may be left unread.
        let fences = text
            .lines()
            .filter(|l| l.trim_start() == "```console")
            .count();
        assert_eq!(c, fences, "{page}: console blocks read");
        let dollar_lines = blocks(&text)
            .iter()
            .filter(|b| b.lang == "console")
            .flat_map(|b| b.lines.iter())
            .filter(|(_, l)| l.starts_with("$ "))
            .count();
        assert_eq!(
            steps.iter().filter(|s| s.console).count(),
            dollar_lines,
            "{page}: console commands read"
        );
        consoles += c;
        console_commands += dollar_lines;
        let scratch = provide();
        for step in &steps {
            let at = format!("{page}:{}", step.line);
            if let Some(k) = NOT_RUN
                .iter()
                .position(|(p, _)| step.command.starts_with(p))
            {
                used_not_run[k] += 1;
                assert!(
                    !step.console,
                    "{at}: a console command cannot be left unrun"
                );
                for args in jitterlab_parts(&step.command) {
                    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
                    args.push("--help");
                    let o = util::run(&args);
                    parsed += 1;
                    if !o.status.success() {
                        problems.push(format!(
                            "{at}: jitterlab {} is refused: {}",
                            args.join(" "),
                            util::stderr(&o)
                        ));
                    }
                }
                continue;
            }
            let cmd = substituted(&step.command);
            for (k, (when, ..)) in SUBSTITUTE.iter().enumerate() {
                if step.command.contains(when) {
                    used_subst[k] += 1;
                }
            }
            if needs_root(&cmd) && !live {
                skipped += 1;
                continue;
            }
            let r = run_line(&cmd, &scratch, &vars);
            ran += 1;
            let line = format!(
                "{at}: {:.1} s, status {:?}: {cmd}",
                r.took.as_secs_f64(),
                r.status
            );
            // As it goes, for `--nocapture`; all of them again at the end.
            eprintln!("{line}");
            report.push(line);
            let ok = match r.status {
                Some(0) => true,
                Some(3) => three_is_an_answer(&cmd),
                _ => false,
            };
            let real = format!("{}{}", r.stdout, r.stderr);
            if r.timed_out {
                problems.push(format!("{at}: `{cmd}` still ran after {TIMEOUT:?}: killed"));
            } else if !ok {
                problems.push(format!("{at}: `{cmd}` exited with {:?}:\n{real}", r.status));
            } else if step.console {
                compared += 1;
                if let Err(e) = compare(&step.shown, &real) {
                    problems.push(format!("{at}: `{cmd}`: {e}\n  real output:\n{real}"));
                }
            }
        }
        for (p, check) in AFTER {
            if *p == page {
                let r = run_line(check, &scratch, &vars);
                if r.status != Some(0) {
                    problems.push(format!(
                        "{page}: after its commands, `{check}` failed: {}{}",
                        r.stdout, r.stderr
                    ));
                }
            }
        }
    }
    drop(restore);
    for (k, n) in used_not_run.iter().enumerate() {
        if *n == 0 {
            problems.push(format!(
                "NOT_RUN is stale: no line starts with {:?}",
                NOT_RUN[k].0
            ));
        }
    }
    for (k, n) in used_subst.iter().enumerate() {
        if *n == 0 {
            problems.push(format!(
                "SUBSTITUTE is stale: no line holds {:?}",
                SUBSTITUTE[k].0
            ));
        }
    }
    if !live && skipped > 0 {
        util::skip(format_args!(
            "every_command_of_readme_and_guide_runs_as_shown: {skipped} commands need root \
             and tracefs (the others ran)"
        ));
    }
    eprintln!(
        "docs_run: {consoles} console blocks; {ran} commands run ({compared} outputs \
         compared), {skipped} skipped without root, {} not runnable here ({parsed} \
         jitterlab parts parsed), in {:.0} s\n{}",
        used_not_run.iter().sum::<usize>(),
        started.elapsed().as_secs_f64(),
        report.join("\n")
    );
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(consoles >= 12, "only {consoles} console blocks");
    // As root every console command ran and its output was compared.
    if live {
        assert_eq!(compared, console_commands, "console commands compared");
    }
    assert!(ran + skipped >= 60, "only {} commands", ran + skipped);
}
