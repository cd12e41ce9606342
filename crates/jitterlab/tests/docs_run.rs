//! Issue 31: every command README.md and GUIDE.md show runs as written, and every output
//! they show is what jitterlab prints now (numbers masked).
//!
//! The fenced ```` ```console ```` and ```` ```sh ```` blocks of both pages are read in
//! order. In a console block a line `$ CMD` is a command and the lines after it, up to the
//! next `$ ` or the fence, what it printed: those lines must appear, in order, among the
//! lines the command really printed (stdout, then stderr; the pages show outputs "trimmed
//! to the telling lines"), each compared with its numbers masked ([`mask`]) and `...`
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

/// One fenced block of a page: its language, the line of its opening fence (1-based) and
/// its lines with their numbers.
#[derive(Debug)]
struct Block {
    lang: String,
    line: usize,
    lines: Vec<(usize, String)>,
}

/// The fenced blocks of a page.
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(rest) = line.trim_start().strip_prefix("```") {
            match open.take() {
                Some(b) => out.push(b),
                None => {
                    open = Some(Block {
                        lang: rest.trim().to_string(),
                        line: i + 1,
                        lines: Vec::new(),
                    })
                }
            }
        } else if let Some(b) = &mut open {
            b.lines.push((i + 1, line.to_string()));
        }
    }
    assert!(open.is_none(), "a fence is not closed");
    out
}

/// A command of a page, with what the page shows it printing (console blocks).
#[derive(Debug, Clone)]
struct Step {
    line: usize,
    command: String,
    console: bool,
    shown: Vec<String>,
}

/// The commands of a page's console and sh blocks, in order, and the number of console
/// blocks.
fn steps(text: &str) -> (Vec<Step>, usize) {
    let mut out = Vec::new();
    let mut consoles = 0;
    for b in blocks(text) {
        match b.lang.as_str() {
            "console" => {
                consoles += 1;
                for (n, line) in &b.lines {
                    if let Some(cmd) = line.strip_prefix("$ ") {
                        out.push(Step {
                            line: *n,
                            command: cmd.to_string(),
                            console: true,
                            shown: Vec::new(),
                        });
                    } else {
                        let step = out
                            .last_mut()
                            .filter(|s: &&mut Step| s.console && s.line > b.line);
                        let step = step.unwrap_or_else(|| {
                            panic!("line {n}: a console block's output before its first `$ `")
                        });
                        if !line.trim().is_empty() {
                            step.shown.push(line.clone());
                        }
                    }
                }
            }
            "sh" => {
                for (n, line) in &b.lines {
                    let t = line.trim();
                    if t.is_empty() || t.starts_with('#') {
                        continue;
                    }
                    out.push(Step {
                        line: *n,
                        command: t.to_string(),
                        console: false,
                        shown: Vec::new(),
                    });
                }
            }
            _ => {}
        }
    }
    (out, consoles)
}

/// A line as it is compared: ANSI escapes dropped; every number (digits with `.` or `,`
/// between them: `5738496`, `1.01`, `600,000`), hexadecimal number (`0x1f`) and commit
/// hash (7 or more hex digits with a digit and a letter) one `#`; a progress bar's fill
/// (`[===>   ]`) `[bar]`; runs of spaces one space, ends trimmed. Units and words stay:
/// `2.41 ms` is `# ms`, `100us` is `#us`, `virtio1-req.0` is `virtio#-req.#`.
fn mask(line: &str) -> String {
    let c: Vec<char> = strip_ansi(line).chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let is_hex = |ch: char| ch.is_ascii_hexdigit();
    let word_start = |i: usize| i == 0 || !c[i - 1].is_ascii_alphanumeric();
    while i < c.len() {
        let ch = c[i];
        // A commit hash or another long hex word.
        if word_start(i) && is_hex(ch) {
            let end = (i..c.len()).find(|&j| !is_hex(c[j])).unwrap_or(c.len());
            let word = &c[i..end];
            let whole = end == c.len() || !c[end].is_ascii_alphanumeric();
            if whole
                && word.len() >= 7
                && word.iter().any(char::is_ascii_digit)
                && word.iter().any(char::is_ascii_alphabetic)
            {
                out.push('#');
                i = end;
                continue;
            }
        }
        if ch == '0' && c.get(i + 1) == Some(&'x') && c.get(i + 2).is_some_and(|&h| is_hex(h)) {
            i += 2;
            while i < c.len() && is_hex(c[i]) {
                i += 1;
            }
            out.push('#');
            continue;
        }
        if ch.is_ascii_digit() {
            while i < c.len()
                && (c[i].is_ascii_digit()
                    || ((c[i] == '.' || c[i] == ',')
                        && c.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                i += 1;
            }
            out.push('#');
            continue;
        }
        if ch == '[' {
            let end = (i + 1..c.len()).find(|&j| !matches!(c[j], '=' | '>' | '-' | ' ' | '#'));
            if let Some(end) = end.filter(|&e| c[e] == ']' && e > i + 2) {
                out.push_str("[bar]");
                i = end + 1;
                continue;
            }
        }
        if ch.is_whitespace() {
            if !out.ends_with(' ') {
                out.push(' ');
            }
            i += 1;
            continue;
        }
        out.push(ch);
        i += 1;
    }
    out.trim().to_string()
}

/// A line without its ANSI escape sequences (`ESC [ ... letter`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(ch);
    }
    out
}

/// Whether the masked line `real` is the masked shown line `shown`, where `...` in it
/// matches anything.
fn line_matches(shown: &str, real: &str) -> bool {
    let parts: Vec<&str> = shown.split("...").map(str::trim).collect();
    if parts.len() == 1 {
        return shown == real;
    }
    let mut rest = real;
    for (k, part) in parts.iter().enumerate() {
        if part.is_empty() {
            continue;
        }
        if k == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if k == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// Where the shown lines are not a subsequence of the real ones: the first shown line
/// that no real line after the previous match matches.
fn compare(shown: &[String], real: &str) -> Result<(), String> {
    let real: Vec<String> = real
        .split(['\n', '\r'])
        .map(mask)
        .filter(|l| !l.is_empty())
        .collect();
    let mut at = 0;
    for s in shown {
        let m = mask(s);
        match (at..real.len()).find(|&j| line_matches(&m, &real[j])) {
            Some(j) => at = j + 1,
            None => {
                return Err(format!(
                    "shown line not found (in order) in the output:\n  shown:  {s}\n  masked: {m}"
                ))
            }
        }
    }
    Ok(())
}

#[test]
fn masked_outputs_compare_as_the_docs_mean() {
    assert_eq!(
        mask("CPU  PAGES  OVERRUN\n"),
        "CPU PAGES OVERRUN",
        "spaces collapse"
    );
    assert_eq!(
        mask("  1     1995  7.6  18.5   5477.7  1.01 s 600,000 0x1f 2.41 ms 100us"),
        "# # # # # # s # # # ms #us"
    );
    assert_eq!(mask("36 virtio1-req.0"), "# virtio#-req.#");
    assert_eq!(
        mask("jitterlab 0.1.0 (commit c03274c)"),
        "jitterlab # (commit #)"
    );
    assert_eq!(
        mask("analyzing big.dat [=====>    ] 1.5 MiB/2 MiB"),
        "analyzing big.dat [bar] # MiB/# MiB"
    );
    assert_eq!(mask("\u{1b}[2Kdone"), "done");
    let block = "```console\n$ jitterlab record --duration 1s -o x.dat\n\
                 x.dat: trace-cmd .dat v6, 5738496 bytes, 1.01 s\n\
                 CPU  PAGES  EVENTS\n  0     38   1200\n```\n";
    let (steps, consoles) = steps(block);
    assert_eq!(consoles, 1);
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].command, "jitterlab record --duration 1s -o x.dat");
    let shown = &steps[0].shown;
    let real = "x.dat: trace-cmd .dat v6, 912 bytes, 2.00 s\nCPU  PAGES    EVENTS\n  \
                0      1      17\n  1      2      3\n";
    // Other numbers and widths, and a row more than shown: the same.
    assert_eq!(compare(shown, real), Ok(()));
    // A word changed: not the same.
    let changed = real.replace("EVENTS", "EVENT");
    assert!(compare(shown, &changed).is_err());
    // The shown lines in another order: not the same.
    let swapped = "CPU PAGES EVENTS\nx.dat: trace-cmd .dat v6, 912 bytes, 2.00 s\n0 1 17\n";
    assert!(compare(shown, swapped).is_err());
    // A shown line lacking in the output.
    assert!(compare(shown, "CPU PAGES EVENTS\n0 1 2\n").is_err());
    // `...` stands for anything within a line, nothing across lines.
    let dots = vec!["IRQs here 10 25 ACPI:Ged, ... 36 virtio1-req.0, ...".to_string()];
    assert_eq!(
        compare(
            &dots,
            "IRQs here  3  25 ACPI:Ged, 26 ttyS0, 36 virtio1-req.0, 38 virtio2-input.0"
        ),
        Ok(())
    );
    assert!(compare(
        &dots,
        "IRQs here 3 25 ACPI:Ged, 26 ttyS0\n36 virtio1-req.0, x"
    )
    .is_err());
    assert!(line_matches("a ... c", "a b c"));
    assert!(!line_matches("a ... c", "a b c d"));
    assert!(line_matches("a ...", "a b c d"));
    assert!(!line_matches("a b", "a b c"));
}

#[test]
fn sh_and_console_lines_are_read_as_commands() {
    let page = "text\n```sh\njitterlab a   # why\n\n# a comment\nlttng start\n```\n\
                ```console\n$ jitterlab b\nout 1\n\n$ jitterlab c\n```\n```toml\nx = 1\n```\n";
    let (steps, consoles) = steps(page);
    let got: Vec<(usize, &str, bool, usize)> = steps
        .iter()
        .map(|s| (s.line, s.command.as_str(), s.console, s.shown.len()))
        .collect();
    assert_eq!(
        got,
        [
            (3, "jitterlab a   # why", false, 0),
            (6, "lttng start", false, 0),
            (9, "jitterlab b", true, 1),
            (12, "jitterlab c", true, 0)
        ]
    );
    assert_eq!(consoles, 1);
    assert_eq!(
        jitterlab_parts("cd x && jitterlab a b # c"),
        [vec!["a", "b"]]
    );
    assert_eq!(
        jitterlab_parts("jitterlab man --dir d && man x | jitterlab y"),
        [vec!["man", "--dir", "d"], vec!["y"]]
    );
}

/// The argument lists of the `jitterlab` commands of a shell line (cut at a shell
/// operator or comment; arguments that hold a quote or `$` are left out).
fn jitterlab_parts(line: &str) -> Vec<Vec<String>> {
    let line = line.split(" #").next().unwrap_or(line);
    let mut out = Vec::new();
    for piece in line.split(['|', ';', '&']) {
        let mut words = piece.split_whitespace();
        if words.next() != Some("jitterlab") {
            continue;
        }
        let args: Vec<String> = words
            .take_while(|w| !w.starts_with('>') && !w.starts_with('<'))
            .filter(|w| !w.contains(['\'', '"', '$']))
            .map(str::to_string)
            .collect();
        out.push(args);
    }
    out
}

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
