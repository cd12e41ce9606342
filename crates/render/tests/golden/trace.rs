//! `analyze`, `report` (event lines and `--stats`) and `convert` (Perfetto JSON and the
//! conversion summary) on the committed traces of the trace crate.

use jitterlab_analyze::{analyze, EventFilter, Machine, MachineOptions, Options, Section};
use jitterlab_render::stream::{write_events, EventOutputs};
use jitterlab_render::{Conversion, EventLine, Events, Exporter, PerfettoCounts, PerfettoWriter};
use jitterlab_trace::stats::TraceStats;
use jitterlab_trace::Trace;

use crate::{both, check, workspace};

fn open(name: &str) -> Trace {
    Trace::open(workspace(&format!("trace/tests/data/{name}")), false).unwrap()
}

pub fn analyzed(name: &str, options: &Options) -> jitterlab_analyze::AnalyzeReport {
    let trace = open(name);
    let options = Options {
        tgids: trace.tgids(),
        ..options.clone()
    };
    let mut source = trace.events().unwrap();
    analyze(&mut *source, &options).unwrap()
}

#[test]
fn analyze_cyclictest_idle() {
    let report = analyzed("cyclictest-idle.v7.dat", &Options::default());
    check("analyze_cyclictest_idle.text", &crate::text(&report));
}

#[test]
fn analyze_disk_irq_stress() {
    let report = analyzed("disk-irq-stress.v7.dat", &Options::default());
    check("analyze_disk_irq_stress.text", &crate::text(&report));
}

#[test]
fn analyze_instances_text_and_json() {
    both(
        "analyze_instances",
        &analyzed("instances.v7.dat", &Options::default()),
    );
}

#[test]
fn analyze_summary_json() {
    let options = Options {
        sections: vec![Section::Summary],
        ..Options::default()
    };
    check(
        "analyze_disk_irq_stress_summary.json",
        &crate::json(&analyzed("disk-irq-stress.v7.dat", &options)),
    );
}

#[test]
fn report_stats() {
    for name in ["instances.v7.dat", "disk-irq-stress.v7.dat"] {
        let trace = open(name);
        // Every buffer: instances.v7.dat has three.
        let stats = match &trace {
            Trace::Dat(d) => TraceStats::from_dat(name, d).unwrap(),
            _ => unreachable!(),
        };
        both(&format!("report_stats_{}", name.replace('.', "_")), &stats);
    }
    // A text trace: counted from its events, lost events unknown.
    let name = "text/ftrace-misc.txt";
    let trace = open(name);
    let mut source = trace.events().unwrap();
    let stats = TraceStats::count(name, &trace.format(), &mut *source).unwrap();
    check("report_stats_ftrace_misc.text", &crate::text(&stats));
}

/// The first `n` lines of a trace as `jitterlab report` prints them (with `json`, its
/// JSON lines).
fn event_lines(name: &str, n: usize, json: bool) -> String {
    let trace = open(name);
    let mut out = Vec::new();
    let outputs = if json {
        EventOutputs {
            text: None,
            json: Some(&mut out),
        }
    } else {
        EventOutputs {
            text: Some(&mut out),
            json: None,
        }
    };
    write_events(
        &mut *trace.printed_events().unwrap(),
        &EventFilter::default(),
        trace.lines(),
        outputs,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    text.split_inclusive('\n').take(n).collect()
}

/// The events of a text trace as `jitterlab report --json` prints them; a .dat's, with
/// the fields its typed events do not keep (sched_process_exit's `group_dead`) and the
/// buffer of an instance's events.
#[test]
fn report_event_json_lines() {
    check(
        "report_events_ftrace_misc.jsonl",
        &event_lines("text/ftrace-misc.txt", usize::MAX, true),
    );
    // The top buffer's first lines, the losses, and the exits of the jlab_small buffer.
    let all = event_lines("instances.v7.dat", usize::MAX, true);
    let mut picked: Vec<&str> = all.lines().take(3).collect();
    picked.extend(all.lines().filter(|l| l.contains(r#""event":"lost""#)));
    picked.extend(
        all.lines()
            .filter(|l| l.contains("sched_process_exit"))
            .take(2),
    );
    check("report_events_instances.jsonl", &picked.join("\n"));
}

#[test]
fn report_event_lines() {
    check(
        "report_events_instances.txt",
        &event_lines("instances.v7.dat", 400, false),
    );
    check(
        "report_events_disk_irq_stress.txt",
        &event_lines("disk-irq-stress.v7.dat", 300, false),
    );
    check(
        "report_events_ftrace_misc.txt",
        &event_lines("text/ftrace-misc.txt", usize::MAX, false),
    );
}

/// One line of each layout case, built by hand: a buffer's name, a loss before the line
/// (the notice takes the name), a loss of unknown count no line followed, a clock
/// printed as it counts, a name longer than its column, a text's trailing newline.
#[test]
fn report_event_line_layout() {
    use jitterlab_trace::{Event, EventKind, Flags};
    let ev = |ts, cpu, pid, kind| Event {
        ts,
        cpu,
        pid,
        flags: Flags(0),
        preempt_count: 0,
        kind,
    };
    let print = ev(
        1_234_567_890_500,
        1,
        42,
        EventKind::Print {
            ip: 0,
            text: "hello".into(),
        },
    );
    let mut out = Vec::new();
    let line = |l: EventLine<'_>, out: &mut Vec<u8>| Events.write(&l, out).unwrap();
    line(EventLine::new(&print, "bash"), &mut out);
    line(
        EventLine {
            buffer: Some(("jlab", 10)),
            ..EventLine::new(&print, "a-very-long-task-name")
        },
        &mut out,
    );
    line(
        EventLine {
            buffer: Some(("", 10)),
            dropped: Some(Some(7)),
            info: Some(b"from the print format\n"),
            name: Some("bputs"),
            ..EventLine::new(&print, "bash")
        },
        &mut out,
    );
    line(
        EventLine {
            seconds: false,
            ..EventLine::new(&print, "<idle>")
        },
        &mut out,
    );
    let lost = ev(0, 3, -1, EventKind::Lost { count: None });
    line(
        EventLine {
            buffer: Some(("jlab", 4)),
            ..EventLine::new(&lost, "")
        },
        &mut out,
    );
    check(
        "report_event_line_layout.txt",
        &String::from_utf8(out).unwrap(),
    );
}

/// The first `n` events of a trace through the state machine into Perfetto JSON.
fn perfetto(name: &str, n: usize) -> (String, PerfettoCounts) {
    let trace = open(name);
    let mut source = trace.events().unwrap();
    let mut writer = PerfettoWriter::new(Vec::new()).unwrap();
    let mut machine = Machine::new(MachineOptions::default());
    let mut i = 0;
    while let Some(ev) = source.next_event().unwrap() {
        machine.feed(&ev, &mut writer);
        i += 1;
        if i == n {
            break;
        }
    }
    machine.finish(&mut writer);
    let (out, counts) = writer.finish().unwrap();
    let text = String::from_utf8(out).unwrap();
    serde_json::from_str::<serde_json::Value>(&text).expect("valid JSON");
    (text, counts)
}

#[test]
fn convert_perfetto() {
    let (text, counts) = perfetto("disk-irq-stress.v7.dat", 400);
    check("convert_perfetto_disk_irq_stress.json", &text);
    both(
        "convert",
        &Conversion {
            input: "disk-irq-stress.v7.dat".into(),
            input_format: open("disk-irq-stress.v7.dat").format(),
            output: "disk-irq-stress.json".into(),
            output_format: "Chrome trace-event JSON (Perfetto)".into(),
            bytes: text.len() as u64,
            perfetto: Some(counts),
            pftrace: None,
            warnings: Vec::new(),
        },
    );
    both(
        "convert_nothing_exported",
        &Conversion {
            input: "fgraph-report.txt".into(),
            input_format: "trace-cmd report text (function_graph)".into(),
            output: "fgraph.json".into(),
            output_format: "Chrome trace-event JSON (Perfetto)".into(),
            bytes: 40,
            perfetto: Some(Default::default()),
            pftrace: None,
            warnings: vec!["nothing was exported: the trace (or the window) has no scheduler, IRQ or marker events; function_graph calls are not exported to Perfetto".into()],
        },
    );
}
