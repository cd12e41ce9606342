//! What the user gave is never lost: every command that reads an input and writes an
//! output, with the output given as the input itself, as `./input`, as a symlink and a
//! hard link to it, as a FIFO without a reader, as `-` and as `/dev/full`. The input's
//! bytes are the same afterwards, and no run takes more than 10 s.

use std::os::unix::fs::{symlink, FileTypeExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::{data, run, run_vm2, stderr, stdout};

/// Runs jitterlab in `dir` with `args`, stdout to `stdout` (a file, or captured), killed
/// and failed past 10 s.
fn run_in(dir: &Path, args: &[String], stdout: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jitterlab"));
    cmd.current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped());
    match stdout {
        Some(p) => cmd.stdout(
            std::fs::OpenOptions::new()
                .append(true)
                .open(p)
                .expect("open stdout"),
        ),
        None => cmd.stdout(Stdio::piped()),
    };
    let child = cmd.spawn().expect("run jitterlab");
    let pid = child.id() as libc::pid_t;
    let (watch, done) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        // Ended (the sender dropped) or late.
        let late = matches!(
            done.recv_timeout(Duration::from_secs(10)),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
        );
        if late {
            // SAFETY: the child is ours and not yet reaped (we wait for it below).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        late
    });
    let start = Instant::now();
    let out = child.wait_with_output().expect("output");
    drop(watch);
    let late = watchdog.join().unwrap() || start.elapsed() > Duration::from_secs(10);
    assert!(!late, "jitterlab {args:?} did not end within 10 s");
    out
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// A command of the sweep: its arguments with `IN` and `OUT` in place of the paths, and
/// what its input is.
struct Case {
    args: &'static [&'static str],
    input: &'static str,
    /// Whether `-` is a valid output here (else it needs a format, or is a directory).
    stdout_ok: bool,
}

fn input_bytes(name: &str) -> Vec<u8> {
    match name {
        "trace.dat" => std::fs::read(data("cyclictest-idle.v7.dat")).unwrap(),
        "trace.txt" => std::fs::read(data("text/cyclictest-idle.ftrace.txt")).unwrap(),
        "result.json" => {
            std::fs::read(crate::util::repo().join("web/test/fixtures/latency-2cpu.json")).unwrap()
        }
        other => panic!("{other}"),
    }
}

const CASES: &[Case] = &[
    Case {
        args: &["analyze", "IN", "--section", "summary", "--json=OUT"],
        input: "trace.dat",
        stdout_ok: true,
    },
    Case {
        args: &["report", "IN", "--json=OUT"],
        input: "trace.txt",
        stdout_ok: true,
    },
    Case {
        args: &["view", "IN", "-o", "OUT"],
        input: "trace.dat",
        stdout_ok: true,
    },
    Case {
        args: &["view", "IN", "-o", "OUT"],
        input: "result.json",
        stdout_ok: true,
    },
    Case {
        args: &["analyze", "IN", "--section", "summary", "--html", "OUT"],
        input: "trace.dat",
        stdout_ok: true,
    },
    Case {
        args: &["convert", "IN", "OUT", "--format", "v6"],
        input: "trace.dat",
        stdout_ok: true,
    },
    Case {
        args: &["convert", "IN", "OUT", "--format", "perfetto"],
        input: "trace.txt",
        stdout_ok: true,
    },
    Case {
        args: &[
            "export",
            "--parquet",
            "OUT",
            "IN",
            "--host",
            "h",
            "--run",
            "r",
        ],
        input: "trace.dat",
        stdout_ok: false,
    },
    Case {
        args: &[
            "export",
            "--parquet",
            "OUT",
            "IN",
            "--host",
            "h",
            "--run",
            "r",
        ],
        input: "result.json",
        stdout_ok: false,
    },
];

fn args_of(case: &Case, input: &str, output: &str) -> Vec<String> {
    case.args
        .iter()
        .map(|a| match *a {
            "IN" => input.to_string(),
            "OUT" => output.to_string(),
            a => match a.strip_suffix("=OUT") {
                Some(option) => format!("{option}={output}"),
                None => a.to_string(),
            },
        })
        .collect()
}

#[test]
fn no_output_ever_replaces_an_input() {
    let threads: Vec<_> = CASES
        .iter()
        .enumerate()
        .map(|(n, case)| std::thread::spawn(move || sweep(n, case)))
        .collect();
    for t in threads {
        t.join().expect("a case failed");
    }
}

fn sweep(n: usize, case: &'static Case) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let name = case.input;
    let bytes = input_bytes(name);
    std::fs::write(d.join(name), &bytes).unwrap();
    symlink(name, d.join("link.out")).unwrap();
    std::fs::hard_link(d.join(name), d.join("hard.out")).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    mkfifo(&d.join("fifo"));
    let unchanged = |what: &str| {
        assert_eq!(
            std::fs::read(d.join(name)).unwrap(),
            bytes,
            "case {n} {:?}, output {what}: the input changed",
            case.args
        );
        assert!(
            std::fs::symlink_metadata(d.join("link.out"))
                .unwrap()
                .file_type()
                .is_symlink(),
            "the link stays a link"
        );
    };
    // The input itself, by four names: refused before any work, naming both.
    let same = [
        name.to_string(),
        format!("./{name}"),
        format!("sub/../{name}"),
        "link.out".into(),
        "hard.out".into(),
        d.join(name).display().to_string(),
    ];
    for out in &same {
        let o = run_in(d, &args_of(case, name, out), None);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{:?} -> {out}: {err}", case.args);
        assert!(
            err.contains("is the input") && err.contains(out.as_str()) && err.contains(name),
            "{:?} -> {out}: {err}",
            case.args
        );
        unchanged(out);
    }
    // A FIFO no one reads: an error after a bounded wait, never a hang.
    if case.stdout_ok {
        let o = run_in(d, &args_of(case, name, "fifo"), None);
        let err = stderr(&o);
        assert!(!o.status.success(), "{:?} -> fifo", case.args);
        assert!(err.contains("no reader"), "{:?}: {err}", case.args);
        assert!(std::fs::metadata(d.join("fifo"))
            .unwrap()
            .file_type()
            .is_fifo());
        unchanged("fifo");
        // `-`: the data on stdout, the summary on stderr.
        let o = run_in(d, &args_of(case, name, "-"), None);
        assert!(o.status.success(), "{:?} -> -: {}", case.args, stderr(&o));
        assert!(!o.stdout.is_empty());
        assert!(!d.join("-").exists(), "no file named -");
        unchanged("-");
        // /dev/full: an error, not a panic; the device stays a device.
        let o = run_in(d, &args_of(case, name, "/dev/full"), None);
        let err = stderr(&o);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{:?} -> /dev/full: {err}",
            case.args
        );
        assert!(err.contains("No space left"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(std::fs::metadata("/dev/full")
            .unwrap()
            .file_type()
            .is_char_device());
        unchanged("/dev/full");
    }
    // Standard output redirected into the input (`>> input`): refused too.
    let o = run_in(d, &args_of(case, name, "new.out"), Some(&d.join(name)));
    assert_eq!(o.status.code(), Some(2), "{:?} >> input", case.args);
    assert!(stderr(&o).contains("standard output is the input"));
    unchanged(">> input");
}

#[test]
fn report_into_its_own_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.dat");
    std::fs::copy(data("cyclictest-idle.v7.dat"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let o = run_in(dir.path(), &["report".into(), "t.dat".into()], Some(&input));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

/// Every command that writes to stdout, with stdout full: an error naming standard
/// output, status 1, never a panic; with stdout closed early (`| head`): status 0.
#[test]
fn a_full_or_closed_stdout_never_panics() {
    let trace = data("cyclictest-idle.v7.dat");
    let commands: Vec<Vec<String>> = [
        vec!["experiment", "--show", "partition"],
        vec!["experiment", "--list"],
        vec!["report", &trace],
        vec!["report", "--stats", &trace],
        vec!["analyze", &trace],
        vec!["analyze", &trace, "--json"],
        vec!["completions", "bash"],
        vec!["man"],
        vec!["help", "latency"],
        vec!["--help"],
        vec!["latency", "--help"],
        vec!["--version"],
    ]
    .iter()
    .map(|v| v.iter().map(|s| s.to_string()).collect())
    .collect();
    let dir = tempfile::tempdir().unwrap();
    for args in &commands {
        let o = run_in(dir.path(), args, Some(Path::new("/dev/full")));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("standard output"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        // A reader that stops at once.
        let mut child = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{args:?} | (closed): {}",
            stderr(&o)
        );
    }
}

/// Outputs that cannot be written are refused before any work: a directory, a block
/// device, a file in a directory that does not exist, two outputs on stdout.
#[test]
fn an_output_that_cannot_be_written_is_refused_first() {
    let trace = data("cyclictest-idle.v7.dat");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let missing: PathBuf = dir.path().join("nope/x.html");
    // A block device node of our own, of a loop device number nothing uses (never a real
    // disk: were the check broken, the write would fail there).
    let block = dir.path().join("blk");
    let c = std::ffi::CString::new(block.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let made =
        unsafe { libc::mknod(c.as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(7, 250)) } == 0;
    for (args, says) in [
        (vec!["view", &trace, "-o", &d], "is a directory"),
        (
            vec!["view", &trace, "-o", missing.to_str().unwrap()],
            "does not exist",
        ),
        (
            vec!["convert", &trace, block.to_str().unwrap(), "--format", "v6"],
            "block device",
        ),
        (
            vec!["latency", "--html", "-", "--plot", "-", "--duration", "1s"],
            "only one can go to standard output",
        ),
    ] {
        if says == "block device" && !made {
            crate::util::skip("making a block device node needs root");
            continue;
        }
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let o = run_in(dir.path(), &args, None);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

/// `--json[=FILE]` means one thing on every command: `--json` the JSON instead of the
/// text, `--json=FILE` the JSON in FILE and the text on stdout, `--json=-` as `--json`;
/// `--json FILE` is refused with the spelling to use, and `analyze --json trace.dat`
/// reads the trace.
#[test]
fn json_has_one_meaning_on_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.json");
    let eq_file = format!("--json={}", file.display());
    let trace = data("text/cyclictest-idle.ftrace.txt");
    let cases: [(&[&str], bool); 4] = [
        (&["show"], true),
        (&["show", "irqs"], true),
        (&["analyze", &trace, "--section", "summary"], false),
        (&["report", &trace, "--event", "sched_switch"], false),
    ];
    for (args, fixture) in cases {
        let go = |extra: &[&str]| {
            let mut all = args.to_vec();
            all.extend_from_slice(extra);
            let o = if fixture { run_vm2(&all) } else { run(&all) };
            assert!(o.status.success(), "{all:?}: {}", stderr(&o));
            stdout(&o)
        };
        let text = go(&[]);
        let json = go(&["--json"]);
        assert!(json.starts_with('{'), "{args:?} --json: {json}");
        assert_ne!(text, json, "{args:?}");
        assert_eq!(go(&["--json=-"]), json, "{args:?} --json=-");
        let _ = std::fs::remove_file(&file);
        assert_eq!(
            go(&[eq_file.as_str()]),
            text,
            "{args:?} --json=FILE: the text on stdout"
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            json,
            "{args:?} --json=FILE: the JSON in FILE"
        );
    }
    // The spelling `latency` and `audit` took before: refused, naming the one to use.
    for args in [
        &["latency", "--json", "run.json"][..],
        &["audit", "--static", "--json", "before.json"],
    ] {
        let o = run_vm2(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        let file = args[args.len() - 1];
        assert!(err.contains(&format!("--json={file}")), "{args:?}: {err}");
        assert!(!dir.path().join(file).exists());
    }
    // Before a positional argument, --json is the switch: the trace is read.
    let o = run(&["analyze", "--json", &trace, "--section", "summary"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"jitterlab.analyze\""));
}
