//! The `perf script` text reader: the real recording in tests/data/perf (see its README),
//! the column variations perf prints, errors, and the inputs the fuzzer found.

use std::collections::BTreeMap;
use std::path::Path;

use jitterlab_trace::text::{self, detect, PerfReader, TextKind, TextOptions};
use jitterlab_trace::{
    Comm, ErrorKind, Event, EventKind, EventSource, Location, TaskState, Trace, Value, Wakeup,
};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

fn fixture() -> Vec<u8> {
    std::fs::read(Path::new(DATA).join("perf/sleep-loop.perf.txt")).unwrap()
}

fn read_opts(bytes: &[u8], opts: TextOptions) -> jitterlab_trace::Result<(Vec<Event>, u64)> {
    let mut r = text::open(bytes, TextKind::PerfScript, opts)?;
    let mut out = Vec::new();
    while let Some(e) = r.next_event()? {
        out.push(e);
    }
    Ok((out, r.stats().skipped))
}

fn read(bytes: &[u8]) -> Vec<Event> {
    read_opts(bytes, TextOptions::named("t.txt")).unwrap().0
}

const BRIEF_LINE: &str = "            perf  6611 [000]  9971.176944:       sched:sched_waking: \
                          comm=migration/0 pid=18 prio=0 target_cpu=000\n";

#[test]
fn detects_perf_script_text_and_nothing_else_as_it() {
    assert_eq!(detect(&fixture()), Some(TextKind::PerfScript));
    assert_eq!(detect(BRIEF_LINE.as_bytes()), Some(TextKind::PerfScript));
    let header = format!("# ========\n# nrcpus avail : 2\n# ========\n#\n{BRIEF_LINE}");
    assert_eq!(detect(header.as_bytes()), Some(TextKind::PerfScript));
    // Kernel text and trace-cmd report stay theirs.
    let ftrace = b"  bash-1234 [000] d..2. 976.348848: sched_waking: comm=a pid=1 prio=1 \
                   target_cpu=000\n";
    assert_eq!(detect(ftrace), Some(TextKind::Ftrace));
    let report = b"cpus=2\n  bash-1234 [000] 976.348848: sched_waking: comm=a pid=1 prio=1 \
                   target_cpu=000\n";
    assert_eq!(detect(report), Some(TextKind::TraceCmdReport));
    assert_eq!(detect(b"hello world\n"), None);
}

/// Counts from `grep -o 'sched:[a-z_]*' sleep-loop.perf.txt | sort | uniq -c`.
#[test]
fn reads_the_recording_whole_and_in_order() {
    let bytes = fixture();
    let events = read(&bytes);
    let lines = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    assert_eq!(events.len(), lines);
    assert_eq!(lines, 1320);
    let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
    for e in &events {
        *by_name.entry(e.kind.name().to_string()).or_default() += 1;
        assert_eq!((e.flags.0, e.preempt_count), (0, 0));
        assert!(e.cpu < 2);
    }
    let expect = [
        ("sched_migrate_task", 7),
        ("sched_process_fork", 31),
        ("sched_stat_runtime", 668),
        ("sched_switch", 388),
        ("sched_wakeup_new", 31),
        ("sched_waking", 195),
    ];
    let expect: BTreeMap<String, usize> = expect.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    assert_eq!(by_name, expect);
    assert!(events.windows(2).all(|w| w[0].ts <= w[1].ts));
    // The generic event keeps its system and its fields (`[ns]` dropped from the number).
    let rt = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Other { name, fields } => Some((name.clone(), fields.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(&*rt.0, "sched:sched_stat_runtime");
    assert!(matches!(rt.1.last(), Some((k, Value::Int(_))) if &**k == "runtime"));

    let trace = Trace::open(Path::new(DATA).join("perf/sleep-loop.perf.txt"), false).unwrap();
    assert_eq!(trace.format(), "perf script text");
    let src = trace.events().unwrap();
    assert_eq!(src.meta().format, "perf script text");
    assert!(
        src.stats().lost.is_empty(),
        "perf script does not tell lost events"
    );
}

#[test]
fn the_default_line() {
    let e = &read(BRIEF_LINE.as_bytes())[0];
    assert_eq!((e.ts, e.cpu, e.pid), (9_971_176_944_000, 0, 6611));
    assert_eq!(
        e.kind,
        EventKind::SchedWaking(Wakeup {
            comm: Comm::new("migration/0"),
            pid: 18,
            prio: 0,
            target_cpu: 0,
        })
    );
}

#[test]
fn column_variations() {
    let text = "\
# ========
# captured on    : Sat Nov 22 17:17:00 2025
# nrcpus avail : 2
# ========
#
opt 1fct7nlyx36 14112 [001] 10125.261463: sched:sched_switch: prev_comm=opt 1fct7nlyx36 \
prev_pid=14112 prev_prio=120 prev_state=R+ ==> next_comm=swapper/1 next_pid=0 next_prio=120
\tffffffff821f8b58 __schedule+0x618 ([kernel.kallsyms])
\t          146f7c [unknown] (/usr/bin/perf)

            perf  8343/8344  [000] 10125.374365539: sched:sched_stat_runtime: comm=perf \
pid=8344 runtime=48312 [ns]
         swapper     0 [001] 10125.374400:   irq:irq_handler_entry: irq=36 name=virtio1-req.0
         swapper     0 [001] 10125.374401:     irq:softirq_entry: vec=1 [action=TIMER]
             :-1    -1 [001] 10125.374402: sched:sched_stat_runtime: comm=lto cgu.02 \
pid=19699 runtime=33459 [ns]
            perf  8343 [000] 10125.374403: PERF_RECORD_COMM: perf:8343/8343
            perf  8343 [000] 10125.374404:   probe:sched_switch: (ffffffff821f8b58) arg1=3
            perf  8343 [000] 10125.374405:   sched:sched_process_exec: filename=/bin/sh \
pid=8343 old_pid=8343
";
    let mut r = PerfReader::new(text.as_bytes(), TextOptions::named("v.txt")).unwrap();
    let mut ev = Vec::new();
    while let Some(e) = r.next_event().unwrap() {
        ev.push(e);
    }
    assert_eq!(r.meta().cpus, Some(2));
    assert_eq!(ev.len(), 7, "{ev:#?}");
    // A comm with a space, the `R+` state.
    assert_eq!((ev[0].pid, ev[0].cpu), (14112, 1));
    match &ev[0].kind {
        EventKind::SchedSwitch {
            prev_comm,
            prev_state,
            next_pid,
            ..
        } => {
            assert_eq!(prev_comm.as_str(), "opt 1fct7nlyx36");
            assert_eq!(*prev_state, TaskState(TaskState::PREEMPTED));
            assert_eq!(*next_pid, 0);
        }
        k => panic!("{k:?}"),
    }
    // PID/TID: the event's pid is the TID; nanoseconds kept.
    assert_eq!((ev[1].pid, ev[1].ts), (8344, 10_125_374_365_539));
    assert!(matches!(
        &ev[2].kind,
        EventKind::IrqHandlerEntry { irq: 36, name } if &**name == "virtio1-req.0"
    ));
    assert_eq!(ev[3].kind, EventKind::SoftirqEntry { vec: 1 });
    // A sample whose task perf could not tell.
    assert_eq!(ev[4].pid, -1);
    // An event named like a typed one in another system stays generic, with its system.
    assert!(
        matches!(&ev[5].kind, EventKind::Other { name, .. } if &**name == "probe:sched_switch")
    );
    assert!(matches!(
        &ev[6].kind,
        EventKind::SchedProcessExec { pid: 8343, .. }
    ));
}

#[test]
fn errors_name_the_line_and_what_was_expected() {
    // No CPU column (`perf record` without -a, or -F without cpu).
    let no_cpu = "            perf  8343 10025.374365: sched:sched_stat_runtime: comm=perf \
                  pid=8343 runtime=48312 [ns]\n";
    let e = read_opts(no_cpu.as_bytes(), TextOptions::named("nocpu.txt")).expect_err("an error");
    assert_eq!(
        (e.kind, e.location),
        (ErrorKind::Syntax, Location::Line(1)),
        "{e}"
    );
    assert!(e.to_string().contains("CPU column"), "{e}");
    assert!(e.to_string().contains("nocpu.txt"), "{e}");

    // A cut line and a bad field, in the middle.
    let good = BRIEF_LINE;
    let text = format!(
        "{good}            perf  6611 [000]  9971.1769\n{good}            perf  6611 [000]  \
         9971.176950:       sched:sched_switch: prev_comm=a prev_pid=1 prev_prio=1 \
         prev_state=S ==> next_comm=b next_prio=1\n{good}"
    );
    let mut r = text::open(
        text.as_bytes(),
        TextKind::PerfScript,
        TextOptions::named("bad.txt"),
    )
    .unwrap();
    let mut errors = Vec::new();
    let mut n = 0;
    loop {
        match r.next_event() {
            Ok(Some(_)) => n += 1,
            Ok(None) => break,
            Err(e) => errors.push(e),
        }
    }
    assert_eq!(n, 3);
    assert_eq!(errors.len(), 2, "{errors:?}");
    let at: Vec<_> = errors.iter().map(|e| (e.kind, e.location)).collect();
    assert_eq!(
        at,
        [
            (ErrorKind::Syntax, Location::Line(2)),
            (ErrorKind::Syntax, Location::Line(4))
        ]
    );
    assert!(
        errors[0].to_string().contains("expected `COMM TID [CPU]"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].to_string().contains("`next_pid=`"),
        "{}",
        errors[1]
    );

    let lenient = TextOptions {
        lenient: true,
        ..TextOptions::named("bad.txt")
    };
    let (events, skipped) = read_opts(text.as_bytes(), lenient).unwrap();
    assert_eq!((events.len(), skipped), (3, 2));
}

/// What the perf-text fuzz target (fuzz/fuzz_targets/common/text.rs) checks of one input:
/// no panic, strict or lenient; lenient mode never fails; events come out in time order;
/// an error names a line of the input. Returns the events and errors of strict mode and
/// the events and skipped lines of lenient mode.
fn check_like_the_fuzzer(name: &str, data: &[u8]) -> [u64; 4] {
    let _ = detect(data);
    // Lines end at LF, or (in text without LF) at CR: at most one more than their ends.
    let lines = 1 + data.iter().filter(|b| **b == b'\n' || **b == b'\r').count() as u64;
    let mut out = [0; 4];
    for lenient in [false, true] {
        let opts = TextOptions {
            lenient,
            reorder_window: data.first().map_or(0, |b| *b as usize % 8),
            ..TextOptions::named(name)
        };
        let in_input = |e: &jitterlab_trace::Error| {
            assert!(!lenient, "{name}: lenient mode failed: {e}");
            assert!(
                matches!(e.location, Location::Line(n) if n >= 1 && n <= lines),
                "{name}: {e}"
            );
            assert!(
                matches!(
                    e.kind,
                    ErrorKind::Syntax | ErrorKind::Limit | ErrorKind::OutOfOrder
                ),
                "{name}: {e}"
            );
        };
        let mut r = match text::open(data, TextKind::PerfScript, opts) {
            Ok(r) => r,
            Err(e) => {
                in_input(&e);
                out[1] += 1;
                continue;
            }
        };
        let (mut last, mut events, mut errors) = (0, 0, 0);
        loop {
            match r.next_event() {
                Ok(Some(e)) => {
                    assert!(e.ts >= last, "{name}: out of order");
                    last = e.ts;
                    events += 1;
                }
                Ok(None) => break,
                Err(e) => {
                    in_input(&e);
                    errors += 1;
                    assert!(errors <= lines, "{name}: errors without end");
                }
            }
        }
        let _ = r.meta();
        if lenient {
            out[2..].copy_from_slice(&[events, r.stats().skipped]);
        } else {
            out[..2].copy_from_slice(&[events, errors]);
        }
    }
    out
}

/// Hostile `perf script` text in tests/data/fuzz-regressions/perf-*, checked the way the
/// fuzzer (fuzz/fuzz_targets/perf_text.rs) checks its inputs. The fuzzer has found nothing
/// yet; these are made by hand, one trap each, as their names say: a last line cut in its
/// time stamp, a line cut after each column, numbers past every integer type, comms that
/// look like the columns around them, bytes that are not text (invalid UTF-8, NUL, CR),
/// a header and no event, time running backwards, callchain and side-band lines with no
/// event before them, and known events with garbled fields. The fuzzer's finds go there too.
#[test]
fn fuzz_regressions_stay_fixed() {
    // What the hand-made ones give today: strict events and errors, lenient events and
    // skipped lines. A strict reader stops at a first line it cannot open on.
    let expect: BTreeMap<&str, [u64; 4]> = [
        ("perf-truncated-last-line", [2, 1, 2, 1]),
        ("perf-cut-at-every-column", [1, 12, 1, 12]),
        ("perf-huge-numbers", [0, 1, 1, 12]),
        ("perf-odd-comm-names", [10, 0, 10, 0]),
        ("perf-not-text", [3, 1, 3, 1]),
        ("perf-header-only", [0, 0, 0, 0]),
        ("perf-time-goes-backwards", [3, 4, 3, 4]),
        ("perf-orphan-callchains", [0, 1, 1, 3]),
        ("perf-garbled-sched-fields", [0, 1, 3, 7]),
    ]
    .into_iter()
    .collect();
    let dir = Path::new(DATA).join("fuzz-regressions");
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.starts_with("perf-") {
            continue;
        }
        let data = std::fs::read(&path).unwrap();
        let got = check_like_the_fuzzer(&name, &data);
        if let Some(want) = expect.get(name.as_str()) {
            assert_eq!(
                &got, want,
                "{name}: strict events, errors; lenient events, skipped"
            );
        }
        seen.push(name);
    }
    seen.sort();
    let missing: Vec<_> = expect
        .keys()
        .filter(|k| !seen.iter().any(|s| s == *k))
        .collect();
    assert!(missing.is_empty(), "not in {}: {missing:?}", dir.display());
}
