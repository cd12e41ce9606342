//! Bad requests: a clear message naming what failed, exit status 2, nothing changed.

use crate::util::{run, run_vm2, stderr};

fn usage(args: &[&str], message: &str) {
    let o = run(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains(message), "{args:?}: {e}");
}

#[test]
fn invalid_cpu_lists() {
    usage(
        &["pin", "0-x", "-p", "1"],
        "invalid CPU list \"0-x\" at column 3: expected a CPU number after '-'",
    );
    usage(
        &["irq", "set", "0", "3-1"],
        "expected a range whose end is not below its start",
    );
    usage(
        &["show", "--cpu", "a"],
        "--cpu: invalid CPU list \"a\" at column 1",
    );
}

#[test]
fn absent_cpus() {
    usage(&["pin", "4095", "--", "true"], "CPU 4095 does not exist");
    usage(&["irq", "default", "0,4000"], "CPU 4000 does not exist");
    // Not an empty view: "0 CPUs shown" read as nothing there.
    usage(&["show", "--cpu", "4095"], "CPU 4095 does not exist");
}

#[test]
fn convert_takes_o_as_every_command_does() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x.json");
    let trace = crate::util::data("cyclictest-idle.v7.dat");
    let trace = trace.as_str();
    let o = run(&["convert", trace, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.metadata().unwrap().len() > 0);
    usage(
        &["convert", trace, "a.json", "-o", out.to_str().unwrap()],
        "cannot be used with",
    );
}

#[test]
fn pin_and_run_take_a_command_without_dashes() {
    // `pin 1 sleep 1` meant `pin 1 -- sleep 1`: it is.
    let o = run(&["pin", "0", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["pin", "0", "sh", "-c", "exit 3"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}

/// As an unprivileged user, what needs root says so, and how to run it.
#[test]
fn permission_failures_say_to_run_as_root() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    if !jitterlab_host::running_as_root() {
        jitterlab_host::testing::skip("dropping to an unprivileged user needs root");
        return;
    }
    // A copy that user 65534 (nobody) may run, in a folder it may enter.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = tmp.path().join("jitterlab");
    std::fs::copy(env!("CARGO_BIN_EXE_jitterlab"), &bin).unwrap();
    let as_nobody = |args: &[&str]| {
        std::process::Command::new(&bin)
            .args(args)
            .env("NO_COLOR", "1")
            .current_dir(tmp.path())
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap()
    };
    // tracefs: creating the recording's instance is refused (the output's folder is
    // nobody's to write).
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    let dat = out.join("x.dat");
    let o = as_nobody(&["record", "-o", dat.to_str().unwrap(), "--", "true"]);
    let e = stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{e}");
    assert!(e.contains("run it as root"), "record: {e}");
    // /proc/irq: the write is refused, and the row says why.
    let irq = std::fs::read_dir("/proc/irq")
        .unwrap()
        .filter_map(|d| d.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .min()
        .expect("an IRQ in /proc/irq");
    let o = as_nobody(&["irq", "set", &irq.to_string(), "0"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("run as root"),
        "irq set: {text}{}",
        stderr(&o)
    );
}

#[test]
fn vanished_pid_and_thread() {
    // pid_max is at most 4194304; this pid cannot exist.
    usage(
        &["pin", "0", "-p", "4194305"],
        "no process with pid 4194305",
    );
    let me = std::process::id().to_string();
    usage(
        &["pin", "0", "-p", &me, "--tid", "4194305"],
        "has no thread 4194305",
    );
}

#[test]
fn bad_arguments() {
    usage(&["pin", "0"], "pin needs -p PID");
    usage(
        &[
            "pin",
            "0",
            "--policy",
            "fifo",
            "--priority",
            "100",
            "--",
            "true",
        ],
        "priority 100 is out of range for policy fifo: 1-99",
    );
    usage(
        &[
            "pin",
            "0",
            "--policy",
            "other",
            "--priority",
            "5",
            "--",
            "true",
        ],
        "out of range for policy other: 0-0",
    );
    usage(
        &["show", "irqs", "--interval", "0s"],
        "--interval 0ns: expected above 0 and at most 3600s",
    );
    usage(
        &["show", "irqs", "--interval", "2h"],
        "--interval 7200s: expected above 0 and at most 3600s",
    );
    let o = run(&["show", "irqs", "--interval", "1e300"]);
    assert!(stderr(&o).len() < 300, "a short message: {}", stderr(&o));
    // Every duration is a number and a unit, through one parser (jitterlab_units).
    for (value, says) in [
        (
            "10",
            "\"10\": give a unit (ns, us, ms, s, m, h), e.g. 10us or 10s",
        ),
        ("1e20", "\"1e20\": unknown unit \"e20\""),
        ("-1s", "\"-1s\": expected a number and a unit"),
        ("NaN", "\"NaN\": expected a number and a unit"),
        ("99999999999h", "\"99999999999h\": too long"),
    ] {
        usage(&["verify", "1", &format!("--interval={value}")], says);
        usage(&["latency", &format!("--break={value}")], says);
    }
    usage(
        &["verify", "1", "--interval", "2h"],
        "--interval 7200s: expected from 0 to 3600s",
    );
    usage(
        &["show", "--cpu", ""],
        "--cpu \"\": expected a CPU list such as 0-3,8 (an empty list is not a filter)",
    );
    usage(
        &["show", "tasks", "--cpu", " "],
        "an empty list is not a filter",
    );
    usage(
        &["verify", ""],
        "CPUS \"\": expected a CPU list such as 0-3,8, not an empty one",
    );
    usage(&["show", "--name", "[x"], "not a glob pattern");
    usage(
        &["irq", "set", "nosuchirq*", "0"],
        "no IRQ name matches \"nosuchirq*\"",
    );
    usage(
        &["irq", "set", "100000", "0"],
        "no IRQ 100000 in /proc/interrupts",
    );
    // clap's own usage errors are status 2 too.
    usage(&["show", "--bogus"], "unexpected argument '--bogus'");
    usage(
        &["pin", "0", "-p", "1", "--", "true"],
        "cannot be used with",
    );
}

#[test]
fn pin_refuses_a_fixture_root() {
    let o = run_vm2(&["pin", "0", "-p", "8113"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("pin acts on live tasks; it cannot take --root"));
}

#[test]
fn broken_pipe_is_not_an_error() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_jitterlab"))
        .args(["show", "tasks", "--threads"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn help_of_help_and_of_a_command() {
    let o = run(&["help", "--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["help", "show", "irqs"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Usage: jitterlab show irqs"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    usage(&["help", "nope"], "no command \"nope\"");
}

/// A folder that is not a trace, and a trace compressed in a way jitterlab does not read,
/// each say what is expected.
#[test]
fn a_folder_or_a_compressed_file_given_as_a_trace_says_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let o = run(&["analyze", dir]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("a folder that is not a trace") && e.contains("LTTng"),
        "{e}"
    );
    // bzip2 is refused with the command that decompresses it.
    let file = tmp.path().join("t.dat.bz2");
    std::fs::write(&file, b"BZh91AY&SY").unwrap();
    let e = stderr(&run(&["report", file.to_str().unwrap()]));
    assert!(
        e.contains("compressed with bzip2") && e.contains("bunzip2 -k"),
        "{e}"
    );
    // zstd, gzip and xz are read: a broken one says it cannot be decompressed.
    for (magic, what) in [
        (&b"\x28\xb5\x2f\xfd\x00\x00"[..], "zstd"),
        (&b"\xfd7zXZ\x00\x00"[..], "xz"),
    ] {
        let file = tmp.path().join(format!("t.dat.{what}"));
        std::fs::write(&file, magic).unwrap();
        let e = stderr(&run(&["report", file.to_str().unwrap()]));
        assert!(e.contains(&format!("cannot decompress ({what})")), "{e}");
    }
}
