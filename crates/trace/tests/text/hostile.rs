//! Input a hostile user (or a real machine) gives (issue 13): comms that are not UTF-8,
//! buffer-named drop lines, empty traces, lost counts past 2^64, CR line ends, pipes and
//! FIFOs streamed with bounded memory and cut short by a cancel flag.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jitterlab_trace::stats::TraceStats;
use jitterlab_trace::text::PerfReader;
use jitterlab_trace::Trace;

use super::*;

fn stats_of(path: &Path) -> TraceStats {
    let trace = Trace::open(path, false).unwrap_or_else(|e| panic!("{e}"));
    TraceStats::of("t", &trace).unwrap_or_else(|e| panic!("{e}"))
}

/// D4: a comm cut inside a UTF-8 character on the first event line; the format is told
/// whatever the bytes of the comm, and the comm is read lossily.
#[test]
fn a_comm_that_is_not_utf8_does_not_hide_the_format() {
    let first = data("nonutf8-comm-line1.ftrace.txt");
    let later = data("nonutf8-comm-later-line.ftrace.txt");
    assert_eq!(detect(&first), Some(TextKind::Ftrace));
    assert_eq!(detect(&later), Some(TextKind::Ftrace));
    let a = stats_of(&Path::new(DATA).join("nonutf8-comm-line1.ftrace.txt"));
    let b = stats_of(&Path::new(DATA).join("nonutf8-comm-later-line.ftrace.txt"));
    assert_eq!(a.total, 20);
    assert_eq!(
        (a.total, &a.by_event, &a.per_cpu),
        (b.total, &b.by_event, &b.per_cpu)
    );
    // Any byte in the first comm (but the line ends), in each text format's first line.
    let text = String::from_utf8_lossy(&later).into_owned();
    let line = text.lines().find(|l| !l.starts_with('#')).unwrap();
    let report = "cpus=2\n    bash-11382 [000]   976.348313: sched_waking: comm=foo pid=1 prio=120 target_cpu=001\n";
    let perf = "            perf 24694 [000] 10345.819203: sched:sched_waking: comm=foo pid=1 prio=120 target_cpu=000\n";
    for b in (1..=255u8).filter(|b| *b != b'\n' && *b != b'\r') {
        let mut ftrace = b"# tracer: nop\n".to_vec();
        ftrace.extend_from_slice(&line.as_bytes()[..14]);
        ftrace.push(b);
        ftrace.extend_from_slice(&line.as_bytes()[14..]);
        ftrace.push(b'\n');
        assert_eq!(detect(&ftrace), Some(TextKind::Ftrace), "byte {b:#x}");
        let r = read_with(&ftrace, TextKind::Ftrace, TextOptions::named("x"));
        assert_eq!(r.map(|r| r.events.len()).ok(), Some(1), "byte {b:#x}");
        let mut rep = report.as_bytes().to_vec();
        rep.insert(13, b);
        assert_eq!(detect(&rep), Some(TextKind::TraceCmdReport), "byte {b:#x}");
        if b != b' ' && b != b'\t' && b != 0x0b && b != 0x0c {
            // perf right-aligns the comm: a blank would be taken for padding.
            let mut p = perf.as_bytes().to_vec();
            p.insert(13, b);
            assert_eq!(detect(&p), Some(TextKind::PerfScript), "byte {b:#x}");
        }
    }
}

/// D6: `trace-cmd report` of several buffers names the buffer of a drop line.
#[test]
fn a_buffer_named_drop_line_counts_as_that_cpus_lost_events() {
    let r = read("report-buffer-dropped.txt");
    assert_eq!(r.stats.lost.first(), Some(&Some(734)));
    assert_eq!(r.events.len(), 7, "6 events and the lost marker");
    let s = stats_of(&Path::new(DATA).join("report-buffer-dropped.txt"));
    assert_eq!(s.per_cpu[0].lost, Some(734));
    assert_eq!(s.total, 6);
}

/// One buffer's counts: (name, total, lost, [(cpu, events, lost)]).
type Buf = (String, u64, Option<u64>, Vec<(u32, u64, Option<u64>)>);

fn buffers(b: &[jitterlab_trace::stats::BufferStat]) -> Vec<Buf> {
    b.iter()
        .map(|b| {
            let cpus = b
                .per_cpu
                .iter()
                .map(|c| (c.cpu, c.events, c.lost))
                .collect();
            (b.name.clone(), b.total, b.lost, cpus)
        })
        .collect()
}

/// D6: ... and counts per buffer: each line's `NAME: ` prefix (none: the top buffer) puts
/// its event or its drops in that buffer, as `report --stats` of a .dat does.
#[test]
fn report_text_of_several_buffers_is_counted_per_buffer() {
    let want = vec![
        (String::new(), 1, Some(0), vec![(0, 1, Some(0))]),
        ("jlab_big".to_string(), 3, Some(0), vec![(1, 3, Some(0))]),
        (
            "jlab_small".to_string(),
            2,
            Some(734),
            vec![(0, 2, Some(734))],
        ),
    ];
    let r = read("report-buffer-dropped.txt");
    assert_eq!(buffers(&r.stats.buffers), want);
    let s = stats_of(&Path::new(DATA).join("report-buffer-dropped.txt"));
    assert_eq!(buffers(&s.buffers), want);
    let small = &s.buffers[2].per_cpu[0];
    assert_eq!(
        (small.first_ts, small.last_ts),
        (Some(4_290_779_935_000), Some(4_290_779_981_000))
    );
    // The per-CPU totals are the buffers added up, losses included.
    for c in &s.per_cpu {
        let (events, lost) = s
            .buffers
            .iter()
            .flat_map(|b| b.per_cpu.iter().filter(|p| p.cpu == c.cpu))
            .fold((0, 0), |(e, l), p| (e + p.events, l + p.lost.unwrap()));
        assert_eq!((events, Some(lost)), (c.events, c.lost), "CPU {}", c.cpu);
    }

    // As trace-cmd prints it: names right-aligned, the top buffer's lines indented as far;
    // an unknown count of drops; the same through `Trace::open` and `TraceStats::of`.
    let text = "          cpus=2\n\
        \x20           <idle>-0     [001]  10.000001: sched_waking: comm=a pid=2 prio=120 target_cpu=001\n\
        \x20  one:           a-2     [001]  10.000002: sched_waking: comm=b pid=3 prio=120 target_cpu=001\n\
        three: CPU:1 [EVENTS DROPPED]\n\
        three:           b-3     [001]  10.000003: sched_waking: comm=c pid=4 prio=120 target_cpu=001\n\
        \x20  one: CPU:0 [5 EVENTS DROPPED]\n\
        \x20  one:           c-4     [000]  10.000004: sched_waking: comm=d pid=5 prio=120 target_cpu=000\n";
    let want = vec![
        (String::new(), 1, Some(0), vec![(1, 1, Some(0))]),
        (
            "one".to_string(),
            2,
            Some(5),
            vec![(0, 1, Some(5)), (1, 1, Some(0))],
        ),
        ("three".to_string(), 1, None, vec![(1, 1, None)]),
    ];
    assert_eq!(detect(text.as_bytes()), Some(TextKind::TraceCmdReport));
    let r = read_with(
        text.as_bytes(),
        TextKind::TraceCmdReport,
        TextOptions::named("x"),
    )
    .unwrap();
    assert_eq!(r.events.len(), 6, "4 events and 2 lost markers");
    assert_eq!(buffers(&r.stats.buffers), want);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("several.txt");
    std::fs::write(&path, text).unwrap();
    assert_eq!(buffers(&stats_of(&path).buffers), want);
}

/// D6: text that names no buffer has no buffer counts: one-buffer report text, the kernel's
/// text (where a first word ending in `:` is not taken for a buffer), comms with colons.
#[test]
fn text_that_names_no_buffer_has_no_buffer_counts() {
    for name in ["cyclictest-idle.report.txt", "cyclictest-idle.ftrace.txt"] {
        assert_eq!(read(name).stats.buffers, vec![], "{name}");
        assert_eq!(
            stats_of(&Path::new(DATA).join(name)).buffers,
            vec![],
            "{name}"
        );
    }
    let report = "cpus=1\n\
        kworker/0:1-12    [000]  1.000001: sched_waking: comm=a pid=2 prio=120 target_cpu=000\n\
        CPU:0 [3 EVENTS DROPPED]\n\
        \x20      a:-13    [000]  1.000002: sched_waking: comm=a pid=2 prio=120 target_cpu=000\n";
    let r = read_with(
        report.as_bytes(),
        TextKind::TraceCmdReport,
        TextOptions::named("x"),
    )
    .unwrap();
    assert_eq!(r.stats.buffers, vec![]);
    assert_eq!(r.stats.lost, vec![Some(3)]);
    let ftrace = "# tracer: nop\n\
        x: y-12 [000] ..... 1.000001: sched_waking: comm=a pid=2 prio=120 target_cpu=000\n";
    let r = read_with(ftrace.as_bytes(), TextKind::Ftrace, TextOptions::named("x")).unwrap();
    assert_eq!(r.stats.buffers, vec![]);
    assert_eq!(r.events[0].pid, 12);
}

/// D7: headers and no event is a trace with no events, in every format; an empty file
/// (or whitespace) is not a trace.
#[test]
fn an_empty_trace_has_no_events_and_an_empty_file_is_no_trace() {
    for (name, kind) in [
        ("empty-ftrace-trace.txt", TextKind::Ftrace),
        ("empty-report.txt", TextKind::TraceCmdReport),
        ("empty-function-graph.txt", TextKind::FunctionGraph),
        ("empty-perf-script.txt", TextKind::PerfScript),
    ] {
        assert_eq!(detect(&data(name)), Some(kind), "{name}");
        assert!(read(name).events.is_empty(), "{name}");
        let s = stats_of(&Path::new(DATA).join(name));
        assert_eq!(s.total, 0, "{name}");
    }
    let dir = tempfile::tempdir().unwrap();
    for (i, bytes) in [&b""[..], b"\n\n  \n"].iter().enumerate() {
        let path = dir.path().join(format!("empty{i}"));
        std::fs::write(&path, bytes).unwrap();
        let err = Trace::open(&path, false).err().unwrap();
        assert_eq!(err.kind, ErrorKind::UnknownFormat, "{err}");
        assert!(err.message.contains("empty"), "{err}");
    }
}

/// D10: lost counts add up saturating at u64::MAX (which means "at least that many").
#[test]
fn lost_counts_saturate() {
    let r = read("lost-count-wrap.ftrace.txt");
    assert_eq!(r.stats.lost[0], Some(u64::MAX));
    let s = stats_of(&Path::new(DATA).join("lost-count-wrap.ftrace.txt"));
    assert_eq!(s.per_cpu[0].lost, Some(u64::MAX));
    // A count past 2^64 in the text itself.
    let text = b"# tracer: nop\nCPU:1 [LOST 99999999999999999999999 EVENTS]\n  bash-1 [001] .....   1.000000: sched_waking: comm=a pid=2 prio=120 target_cpu=001\n";
    let r = read_with(text, TextKind::Ftrace, TextOptions::named("x")).unwrap();
    assert_eq!(r.stats.lost[1], Some(u64::MAX));
}

/// misc: `perf script` text with CR-only line ends reads as its lines (CRLF too).
#[test]
fn cr_and_crlf_end_lines() {
    let cr = data("perf-cr-line-ends.txt");
    assert!(!cr.contains(&b'\n'));
    let lf: Vec<u8> = cr
        .iter()
        .map(|b| if *b == b'\r' { b'\n' } else { *b })
        .collect();
    let crlf = String::from_utf8(lf.clone()).unwrap().replace('\n', "\r\n");
    assert_eq!(detect(&cr), Some(TextKind::PerfScript));
    let count = |bytes: &[u8]| {
        let mut r = PerfReader::new(bytes, TextOptions::named("x")).unwrap();
        drain(&mut r).unwrap().events.len()
    };
    assert_eq!(count(&lf), 30);
    assert_eq!(count(&cr), 30);
    assert_eq!(count(crlf.as_bytes()), 30);
    let s = stats_of(&Path::new(DATA).join("perf-cr-line-ends.txt"));
    assert_eq!(s.total, 30);
    // In text whose lines end with `\n`, a `\r` is part of its line (a marker's text).
    let marker = b"# tracer: nop\n  bash-1 [000] .....   1.000000: tracing_mark_write: a\rb\n  bash-1 [000] .....   1.000001: tracing_mark_write: c\n";
    let r = read_with(marker, TextKind::Ftrace, TextOptions::named("x")).unwrap();
    assert_eq!(r.events.len(), 2);
    assert!(
        matches!(&r.events[0].kind, EventKind::Print { text, .. } if &**text == "a\rb"),
        "{:?}",
        r.events[0].kind
    );
}

const HEADER: &str = "# tracer: nop\n#\n";

fn event_line(i: u64) -> String {
    format!(
        "            bash-11382   [000] d..2. {}.{:06}: sched_waking: comm=foo pid={} prio=120 target_cpu=001\n",
        1000 + i / 1_000_000,
        i % 1_000_000,
        100 + i % 1000
    )
}

fn fifo(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("fifo");
    let st = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(st.success());
    path
}

/// D5: a FIFO is streamed: the format is known from its first event line (not after 64
/// KiB), events come out while the writer still writes, and a cancel ends the read where
/// it is, also while it waits for input, dropping a line cut short.
#[test]
fn a_fifo_streams_and_a_cancel_ends_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = fifo(dir.path());
    let (go_on, wait) = std::sync::mpsc::channel::<()>();
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            f.write_all(HEADER.as_bytes()).unwrap();
            for i in 0..10 {
                f.write_all(event_line(i).as_bytes()).unwrap();
            }
            // Half a line, then silence with the FIFO still open.
            f.write_all(b"            bash-11382   [000] d..2. 1")
                .unwrap();
            let _ = wait.recv_timeout(Duration::from_secs(30));
            drop(f);
        })
    };
    let mut trace = Trace::open(&path, false).unwrap();
    assert!(trace.is_stream());
    let flag = Arc::new(AtomicBool::new(false));
    assert!(trace.set_cancel(Arc::clone(&flag)));
    let mut events = trace.events().unwrap();
    // The ten events come out although the window (4096) is not full: the input is idle.
    for i in 0..10 {
        let ev = events.next_event().unwrap().unwrap();
        assert_eq!(ev.ts, 1_000_000_000_000 + i * 1000);
    }
    let t = Instant::now();
    let stopper = {
        let flag = Arc::clone(&flag);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            flag.store(true, Ordering::Relaxed);
        })
    };
    assert!(
        events.next_event().unwrap().is_none(),
        "the cut line dropped"
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    stopper.join().unwrap();
    drop(events);
    // A stream is read once.
    assert_eq!(
        trace.events().err().map(|e| e.kind),
        Some(ErrorKind::InvalidArgument)
    );
    go_on.send(()).unwrap();
    writer.join().unwrap();
}

/// D7 and D5: a FIFO with headers only, closed, is an empty trace; closed with nothing
/// written, no trace.
#[test]
fn an_empty_fifo() {
    for (bytes, ok) in [(HEADER, true), ("", false)] {
        let dir = tempfile::tempdir().unwrap();
        let path = fifo(dir.path());
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
                f.write_all(bytes.as_bytes()).unwrap();
            })
        };
        let r = Trace::open(&path, false);
        writer.join().unwrap();
        match r {
            Ok(t) => {
                assert!(ok);
                assert!(t.events().unwrap().next_event().unwrap().is_none());
            }
            Err(e) => {
                assert!(!ok);
                assert_eq!(e.kind, ErrorKind::UnknownFormat, "{e}");
            }
        }
    }
}
