//! Bad input: garbage lines, truncation, disorder.

use super::*;

#[test]
fn garbage_lines_are_errors_with_their_line_number_or_skipped() {
    let good = data("disk-irq-stress-6000.ftrace.txt");
    let text = String::from_utf8(good).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let garbage = [
        "garbage",
        "   bash-1 [000] .....   1.5",
        "   bash-1 [000] ..Q..   1.000000: x: a=1",
        "   bash-1 [000] .....   1.000000: sched_switch: prev_comm=a prev_pid=x",
        "   bash-1 [000] .....   1.000000: irq_handler_exit: irq=1 ret=maybe",
        "\u{fffd}\u{fffd}\u{0}",
    ];
    let at = [20, 500, 1000, 2000, 3000, 5000];
    for (i, g) in at.iter().zip(garbage) {
        lines.insert(*i, g);
    }
    let bad = lines.join("\n");
    let err = read_with(
        bad.as_bytes(),
        TextKind::Ftrace,
        TextOptions::named("bad.txt"),
    )
    .err()
    .unwrap();
    assert_eq!(
        (err.kind, err.location),
        (ErrorKind::Syntax, Location::Line(21)),
        "{err}"
    );
    // What users read: the file, the line, what was expected and the line itself.
    assert!(
        err.to_string().starts_with("bad.txt: line 21: expected "),
        "{err}"
    );
    assert!(err.message.ends_with(", in `garbage`"), "{err}");
    // Each garbage line is reported where it is, reading on after each error.
    let mut r = FtraceReader::new(bad.as_bytes(), TextOptions::named("bad.txt")).unwrap();
    let mut errors = Vec::new();
    loop {
        match r.next_event() {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => errors.push((e.kind, e.location)),
        }
    }
    let want: Vec<(ErrorKind, Location)> = at
        .iter()
        .map(|i| (ErrorKind::Syntax, Location::Line(*i as u64 + 1)))
        .collect();
    assert_eq!(errors, want);
    let lenient = TextOptions {
        lenient: true,
        ..TextOptions::named("bad.txt")
    };
    let r = read_with(bad.as_bytes(), TextKind::Ftrace, lenient).unwrap();
    assert_eq!(r.stats.skipped, 6);
    assert_eq!(r.events.len(), 6000);
}

/// Cuts `text` at every byte of its last `tail` bytes: the reader must never panic, and
/// either decode the cut file or fail on the line that was cut.
fn truncate_everywhere(name: &str, text: &[u8], kind: TextKind, tail: usize) {
    for cut in text.len().saturating_sub(tail)..=text.len() {
        let part = &text[..cut];
        let cut_line = part.iter().filter(|b| **b == b'\n').count() as u64 + 1;
        let whole_lines = cut == 0 || part.last() == Some(&b'\n');
        match read_with(part, kind, TextOptions::named(name)) {
            Ok(_) => {}
            Err(e) => {
                assert!(!whole_lines, "{name} cut at {cut}: {e}");
                assert_eq!(
                    (e.kind, e.location),
                    (ErrorKind::Syntax, Location::Line(cut_line)),
                    "{name} cut at {cut}: {e}"
                );
            }
        }
        let lenient = TextOptions {
            lenient: true,
            ..TextOptions::named(name)
        };
        let r = read_with(part, kind, lenient).unwrap();
        assert!(r.stats.skipped <= 1);
    }
}

#[test]
fn truncated_files_fail_on_the_cut_line_and_never_panic() {
    let ftrace = data("cyclictest-idle.ftrace.txt");
    let head: Vec<u8> = ftrace
        .split_inclusive(|b| *b == b'\n')
        .take(24)
        .flatten()
        .copied()
        .collect();
    truncate_everywhere("ftrace", &head, TextKind::Ftrace, head.len());
    let report = data("cyclictest-idle.report.txt");
    let head: Vec<u8> = report
        .split_inclusive(|b| *b == b'\n')
        .take(24)
        .flatten()
        .copied()
        .collect();
    truncate_everywhere("report", &head, TextKind::TraceCmdReport, head.len());
    for f in [
        "fgraph-smi-abstime.txt",
        "fgraph-ehci-softirq.txt",
        "fgraph-proc-tail.txt",
    ] {
        let b = data(f);
        truncate_everywhere(f, &b, TextKind::FunctionGraph, b.len());
    }
    let b = data("fgraph-report.txt");
    truncate_everywhere("fgraph-report.txt", &b, TextKind::TraceCmdReport, b.len());
    let b = data("ftrace-misc.txt");
    truncate_everywhere("ftrace-misc.txt", &b, TextKind::Ftrace, b.len());
}

#[test]
fn out_of_order_input_is_mended_within_the_window_and_refused_beyond() {
    let text = "  a-1 [000] 2.000000: x: a=1\n\
                \x20 a-1 [001] 1.000000: x: a=2\n\
                \x20 a-1 [000] 3.000000: x: a=3\n";
    let r = read_with(text.as_bytes(), TextKind::Ftrace, TextOptions::default()).unwrap();
    let ts: Vec<u64> = r.events.iter().map(|e| e.ts / 1_000_000_000).collect();
    assert_eq!(ts, [1, 2, 3]);
    let tight = TextOptions {
        reorder_window: 0,
        ..TextOptions::named("t")
    };
    let err = read_with(text.as_bytes(), TextKind::Ftrace, tight.clone())
        .err()
        .unwrap();
    assert_eq!(
        (err.kind, err.location),
        (ErrorKind::OutOfOrder, Location::Line(2)),
        "{err}"
    );
    let r = read_with(
        text.as_bytes(),
        TextKind::Ftrace,
        TextOptions {
            lenient: true,
            ..tight
        },
    )
    .unwrap();
    assert_eq!((r.events.len(), r.stats.skipped), (2, 1));
}

#[test]
fn an_overlong_line_is_an_error_of_its_own() {
    let mut text =
        String::from("cpus=1\n  a-1 [000] 1.000001: x: a=1\n  a-1 [000] 1.000002: x: a=");
    text.push_str(&"9".repeat(2 << 20));
    text.push_str("\n  a-1 [000] 1.000003: x: a=3\n");
    let err = read_with(
        text.as_bytes(),
        TextKind::TraceCmdReport,
        TextOptions::named("long"),
    )
    .err()
    .unwrap();
    assert_eq!(
        (err.kind, err.location),
        (ErrorKind::Limit, Location::Line(3)),
        "{err}"
    );
    let lenient = TextOptions {
        lenient: true,
        ..TextOptions::named("long")
    };
    let r = read_with(text.as_bytes(), TextKind::TraceCmdReport, lenient).unwrap();
    assert_eq!((r.events.len(), r.stats.skipped), (2, 1));
    assert_eq!(r.events[1].ts, 1_000_003_000);
}

#[test]
fn a_value_above_a_sanity_limit_and_unreadable_or_foreign_files_have_their_kinds() {
    let err = read_with(
        "  a-1 [9000] 1.000000: x: a=1\n".as_bytes(),
        TextKind::Ftrace,
        TextOptions::named("cpu"),
    )
    .err()
    .unwrap();
    assert_eq!(
        (err.kind, err.location),
        (ErrorKind::Limit, Location::Line(1)),
        "{err}"
    );
    let dir = std::env::temp_dir().join(format!("jitterlab-trace-kinds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.dat");
    let err = jitterlab_trace::Trace::open(&missing, false).err().unwrap();
    assert_eq!(
        (err.kind, err.location),
        (ErrorKind::Io, Location::Whole),
        "{err}"
    );
    let foreign = dir.join("notes.txt");
    std::fs::write(&foreign, "shopping list\n- milk\n").unwrap();
    let err = jitterlab_trace::Trace::open(&foreign, false).err().unwrap();
    assert_eq!(
        (err.kind, err.location),
        (ErrorKind::UnknownFormat, Location::Offset(0)),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The first error reading `path` whole: at open, at the reader's start, or at an event.
fn first_error(path: &std::path::Path) -> jitterlab_trace::Error {
    let t = match jitterlab_trace::Trace::open(path, false) {
        Err(e) => return e,
        Ok(t) => t,
    };
    let mut events = match t.events() {
        Err(e) => return e,
        Ok(ev) => ev,
    };
    loop {
        match events.next_event() {
            Err(e) => return e,
            Ok(Some(_)) => continue,
            Ok(None) => panic!("{}: read without an error", path.display()),
        }
    }
}

#[test]
fn detection_skips_blank_lines_and_a_bad_first_event_line_gets_its_own_error() {
    let dir = tempfile::tempdir().unwrap();
    let line =
        "          <idle>-0       [001] d.h1.   976.348848: irq_handler_entry: irq=36 name=x\n";
    // 400 blank lines (and some with spaces) before the first event.
    let blank = dir.path().join("blank.txt");
    std::fs::write(
        &blank,
        format!("{}{}{line}", "\n".repeat(400), "   \n".repeat(50)),
    )
    .unwrap();
    let t = jitterlab_trace::Trace::open(&blank, false).unwrap();
    assert_eq!(t.format(), "ftrace text");
    assert_eq!(t.events().unwrap().next_event().unwrap().unwrap().cpu, 1);
    // The kernel's header, then an event line whose CPU is out of range: that line's
    // error, as when the same line comes later.
    let header = "# tracer: nop\n#\n#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n";
    let bad =
        "           bash-1181    [65535] d.h2.  1464.179964: irq_handler_entry: irq=16 name=gp\n";
    for (name, text, line_no) in [
        ("header.txt", format!("{header}{bad}"), 4),
        ("bare.txt", bad.to_string(), 1),
        ("later.txt", format!("{header}{line}{bad}"), 5),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let err = first_error(&path);
        assert_eq!(
            (err.kind, err.location),
            (ErrorKind::Limit, Location::Line(line_no)),
            "{name}: {err}"
        );
        assert!(err.to_string().contains("CPU number"), "{err}");
    }
    // A header and a line of no format: that format's reader names the line.
    let path = dir.path().join("garbled.txt");
    std::fs::write(&path, format!("{header}this is not an event\n")).unwrap();
    assert_eq!(first_error(&path).location, Location::Line(4));
}
