//! The .dat reader against real traces and their `trace-cmd report` output.

mod bombs;
mod decode;
mod layout;
mod limits;
mod progress;
mod robust;
mod sweep;
mod sweep_formats;
mod synth;
mod util;
mod write;

use std::collections::BTreeMap;

use jitterlab_trace::dat::DatFile;
use jitterlab_trace::{Event, EventKind, EventSource, Flags};
use util::*;

#[test]
fn v7_zstd_matches_trace_cmd_report_field_by_field() {
    let dat = open("cyclictest-idle.v7.dat");
    assert_eq!(dat.meta().format, "trace-cmd .dat v7 (zstd)");
    assert_eq!(dat.meta().cpus, Some(2));
    let events = all_events(&dat, 0);
    let golden = parse_raw_report(&fixture_text("cyclictest-idle.raw.txt"));
    assert_matches_raw_report(&events, &golden);
}

/// A .dat's events filled into batches (as the read-ahead thread takes them) are the
/// ones `next_event` gives, lost-event markers and instance buffers included, and the
/// reader's counts at the end are the same.
#[test]
fn events_filled_in_batches_are_the_events_read_one_by_one() {
    for file in [
        "cyclictest-idle.v7.dat",
        "instances.v7.dat",
        "instances.v6.dat",
    ] {
        let dat = open(file);
        for buffer in 0..dat.buffers().len() {
            let one_by_one = all_events(&dat, buffer);
            let mut src = dat.events(buffer).unwrap();
            let (mut filled, mut batch) = (Vec::new(), Vec::new());
            // Batches of an odd size, so that they end anywhere.
            while src.fill(&mut batch, 37).unwrap() {
                filled.append(&mut batch);
            }
            filled.append(&mut batch);
            assert!(!filled.is_empty(), "{file} {buffer}");
            assert_eq!(filled, one_by_one, "{file} buffer {buffer}");
            let mut again = dat.events(buffer).unwrap();
            while again.next_event().unwrap().is_some() {}
            assert_eq!(src.stats(), again.stats(), "{file} buffer {buffer}");
        }
    }
}

/// Symbols parsed on a thread of their own while the events are read (and looked up
/// by events before the parse is done, which wait for it) are the ones parsed when
/// first needed.
#[test]
fn symbols_parsed_behind_are_the_symbols_parsed_when_needed() {
    let file = "cyclictest-idle.v7.dat";
    let named = |evs: &[Event]| {
        evs.iter()
            .filter(|e| {
                matches!(
                    &e.kind,
                    EventKind::HrtimerExpireEntry { function, .. } if function.name.is_some()
                )
            })
            .count()
    };
    let when_needed = all_events(&open(file), 0);
    let dat = open(file);
    dat.parse_symbols_behind();
    // Once a trace: a second call starts nothing more.
    dat.parse_symbols_behind();
    let behind = all_events(&dat, 0);
    assert!(named(&behind) > 0, "{file} names no function");
    assert_eq!(behind, when_needed);
}

#[test]
fn v6_matches_v7() {
    let v7 = open("cyclictest-idle.v7.dat");
    let v6 = open("cyclictest-idle.v6.dat");
    assert_eq!(v6.meta().format, "trace-cmd .dat v6");
    assert_eq!(all_events(&v6, 0), all_events(&v7, 0));
}

#[test]
fn instances_and_lost_events_match_trace_cmd_report() {
    let golden = split_buffers(
        &fixture_text("instances.raw.txt"),
        &["jlab_small", "jlab_big"],
    );
    for file in [
        "instances.v7.dat",
        "instances.v6.dat",
        "instances.v7none.dat",
        "instances.v7zlib.dat",
    ] {
        let dat = open(file);
        let names: Vec<&str> = dat.buffers().iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["", "jlab_small", "jlab_big"], "{file}");
        for (name, lines) in &golden {
            let i = dat.buffer_index(name).expect("buffer");
            let events = all_events(&dat, i);
            assert!(!events.is_empty(), "{file} {name}");
            assert_matches_buffer(&events, lines);
            let mut src = dat.events(i).unwrap();
            while src.next_event().unwrap().is_some() {}
            let lost = &src.stats().lost;
            if name == "jlab_small" {
                // `[734 EVENTS DROPPED]` and `[1309 EVENTS DROPPED]`, as the kernel's
                // per_cpu stats said (overrun 734 and 1309).
                assert_eq!(lost, &[Some(734), Some(1309)], "{file}");
            } else {
                assert!(
                    lost.iter().all(|l| *l == Some(0)),
                    "{file} {name}: {lost:?}"
                );
            }
        }
    }
}

/// Several buffers read as one stream, as `trace-cmd report` merges them: each buffer's
/// events in its own order, all in time order (a tie: the buffer listed first), each
/// event's buffer and record told by `origin`.
#[test]
fn buffers_merge_in_time_order_and_name_their_origin() {
    let dat = open("instances.v7.dat");
    let mut src = dat.events_of(&[0, 1, 2]).unwrap();
    src.keep_records();
    let mut per_buffer: Vec<Vec<jitterlab_trace::Event>> = vec![Vec::new(); 3];
    let mut last = (0, 0);
    while let Some(ev) = src.next_event().unwrap() {
        let o = src.origin().unwrap();
        assert!((ev.ts, o.buffer) >= last, "{ev:?} after {last:?}");
        last = (ev.ts, o.buffer);
        if matches!(ev.kind, EventKind::Lost { .. }) {
            assert!(o.record.is_empty());
        } else {
            // The record is the event's: its id names its format.
            let id = u16::from_le_bytes([o.record[0], o.record[1]]);
            assert_eq!(dat.formats().name(id).unwrap().1.as_ref(), ev.kind.name());
        }
        per_buffer[o.buffer].push(ev);
    }
    for (i, events) in per_buffer.iter().enumerate() {
        assert_eq!(events, &all_events(&dat, i), "buffer {i}");
    }
    assert_eq!(src.stats().lost, [Some(734), Some(1309)]);
    // Without keep_records, no bytes are copied.
    let mut src = dat.events_of(&[1]).unwrap();
    src.next_event().unwrap();
    assert_eq!(src.origin().unwrap().buffer, 1);
    assert!(src.origin().unwrap().record.is_empty());
}

/// A 4.1 kernel numbers its task states otherwise (`+` is 4096, `x` 64, `K` 128): its
/// switches read as `trace-cmd report -N` prints them from the format (the reader took
/// the 10 preemptions for plain `R`, `x` for `P`, `D|K` for `D|I`), on 32-bit records;
/// its sched_wakeup's `success` is kept beside the typed fields.
#[test]
fn an_old_kernels_task_states_read_through_its_own_format() {
    for (file, want) in [
        (
            "external/fifo-multicore.dat",
            [("D|K", 1), ("R", 368), ("R+", 3), ("S", 385), ("x", 9)],
        ),
        (
            "external/fifo-1cpu.dat",
            [("D|K", 1), ("R", 239), ("R+", 7), ("S", 301), ("x", 9)],
        ),
    ] {
        let dat = open(file);
        assert_eq!(dat.info().long_size, 4);
        let mut states = BTreeMap::new();
        let mut wakeups = 0;
        let mut printer = dat.printer();
        let mut src = dat.events(0).unwrap();
        src.keep_records();
        while let Some(ev) = src.next_event().unwrap() {
            match ev.kind {
                EventKind::SchedSwitch { prev_state, .. } => {
                    *states.entry(prev_state.to_string()).or_insert(0) += 1;
                }
                EventKind::SchedWakeup(_) => {
                    let untyped = printer.untyped_fields(src.origin().unwrap().record);
                    assert_eq!(
                        untyped,
                        [("success".into(), jitterlab_trace::Value::Int(1))]
                    );
                    wakeups += 1;
                }
                _ => {}
            }
        }
        let want: BTreeMap<String, u64> = want.iter().map(|(s, n)| (s.to_string(), *n)).collect();
        assert_eq!(states, want, "{file}");
        assert!(wakeups > 0);
    }
}

/// `trace-cmd report` (the default text): per event name and per CPU counts, first and
/// last timestamps in µs.
fn report_summary(text: &str) -> (BTreeMap<String, u64>, BTreeMap<u32, u64>, u64, u64) {
    // Timestamps come back in ns (with µs precision).
    let (mut by_event, mut by_cpu) = (BTreeMap::new(), BTreeMap::new());
    let (mut first, mut last) = (u64::MAX, 0);
    for l in parse_raw_report(text) {
        *by_event.entry(l.event).or_insert(0) += 1;
        *by_cpu.entry(l.cpu).or_insert(0) += 1;
        first = first.min(l.ts);
        last = last.max(l.ts);
    }
    (by_event, by_cpu, first, last)
}

fn check_counts_against_report(dat: &DatFile, report: &str) {
    let (by_event, by_cpu, first_us, last_us) = report_summary(report);
    let c = dat.count_events(0).unwrap();
    let mine: BTreeMap<String, u64> = c
        .by_event
        .iter()
        .map(|e| (e.name.rsplit(':').next().unwrap().to_string(), e.count))
        .collect();
    assert_eq!(mine, by_event);
    let cpus: BTreeMap<u32, u64> = c.per_cpu.iter().map(|p| (p.cpu, p.events)).collect();
    assert_eq!(cpus, by_cpu);
    assert_eq!(c.total, by_event.values().sum::<u64>());
    // The text has µs, rounded to nearest.
    assert_eq!((c.first_ts.unwrap() + 500) / 1000, first_us / 1000);
    assert_eq!((c.last_ts.unwrap() + 500) / 1000, last_us / 1000);
    // The decoding path sees the same.
    let events = all_events(dat, 0);
    assert_eq!(events.len() as u64, c.total);
    assert_eq!(events.first().unwrap().ts, c.first_ts.unwrap());
    assert_eq!(events.last().unwrap().ts, c.last_ts.unwrap());
    assert!(events.windows(2).all(|w| w[0].ts <= w[1].ts), "time order");
}

#[test]
fn counts_and_time_span_match_the_report() {
    let report = fixture_text("cyclictest-idle.report.txt");
    for f in ["cyclictest-idle.v7.dat", "cyclictest-idle.v6.dat"] {
        check_counts_against_report(&open(f), &report);
    }
    let (by_event, by_cpu, _, _) = report_summary(&report);
    assert_eq!(by_event["sched_switch"], 1183);
    assert_eq!(by_event["hrtimer_expire_entry"], 1666);
    assert_eq!(by_cpu.values().sum::<u64>(), 8324);
}

/// The two captures of ../shared/traces, as committed in tests/data.
#[test]
fn shared_traces_match_their_reports() {
    for name in ["cyclictest-idle", "disk-irq-stress"] {
        let report = fixture_text(&format!("{name}.report.txt"));
        let v7 = open(&format!("{name}.v7.dat"));
        let v6 = open(&format!("{name}.v6.dat"));
        check_counts_against_report(&v7, &report);
        check_counts_against_report(&v6, &report);
        assert_eq!(all_events(&v6, 0), all_events(&v7, 0), "{name}");
    }
}

#[test]
fn sampled_events_have_the_fields_the_report_prints() {
    let dat = open("cyclictest-idle.v7.dat");
    let events = all_events(&dat, 0);
    // bash-11382 [000] 976.348491860: sched_switch: bash:11382 [120] S ==> bash:11384 [120]
    let sw = events
        .iter()
        .find(|e| matches!(e.kind, EventKind::SchedSwitch { .. }) && e.cpu == 0)
        .unwrap();
    assert_eq!((sw.ts, sw.pid), (976_348_491_860, 11382));
    match &sw.kind {
        EventKind::SchedSwitch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
        } => {
            assert_eq!(
                (prev_comm.as_str(), *prev_pid, *prev_prio),
                ("bash", 11382, 120)
            );
            assert_eq!(prev_state.to_string(), "S");
            assert_eq!(
                (next_comm.as_str(), *next_pid, *next_prio),
                ("bash", 11384, 120)
            );
        }
        _ => unreachable!(),
    }
    // <idle>-0 [001] 976.348848076: irq_handler_entry: irq=36 name=virtio1-req.0
    let irq = events
        .iter()
        .find(|e| matches!(e.kind, EventKind::IrqHandlerEntry { .. }))
        .unwrap();
    assert_eq!((irq.ts, irq.cpu), (976_348_848_076, 1));
    assert_eq!(
        irq.kind,
        EventKind::IrqHandlerEntry {
            irq: 36,
            name: "virtio1-req.0".into()
        }
    );
    // The kernel's text for it: `<idle>-0 [001] d.h1.`: irqs off, hardirq, preempt depth 1.
    assert_eq!(irq.flags, Flags(Flags::IRQS_OFF | Flags::HARDIRQ));
    assert_eq!(irq.preempt_count & 0xf, 1);
    // <idle>-0 [001] 976.348408: hrtimer_expire_entry: hrtimer=0xffffc90001c57cd8
    //   now=976322677128 function=hrtimer_wakeup/0x0
    let hr = events
        .iter()
        .find(|e| matches!(e.kind, EventKind::HrtimerExpireEntry { .. }))
        .unwrap();
    match &hr.kind {
        EventKind::HrtimerExpireEntry {
            hrtimer,
            now,
            function,
        } => {
            assert_eq!((*hrtimer, *now), (0xffffc90001c57cd8, 976322677128));
            assert_eq!(
                (function.addr, function.name.as_deref()),
                (0xffffffff814204b0, Some("hrtimer_wakeup"))
            );
        }
        _ => unreachable!(),
    }
    // migration/0-18 [000]: ipi_send_cpu: cpu=1 callsite=wakeup_preempt+0x55 callback=0x0
    let ipi = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::IpiSendCpu { .. }))
        .nth(1)
        .unwrap();
    match &ipi.kind {
        EventKind::IpiSendCpu {
            cpu,
            callsite,
            callback,
        } => {
            assert_eq!(*cpu, 1);
            assert_eq!(callsite.name.as_deref(), Some("wakeup_preempt+0x55"));
            assert_eq!((callback.addr, callback.name.as_deref()), (0, None));
        }
        _ => unreachable!(),
    }
    assert_eq!(
        dat.cmdlines().get(&1809).map(|c| c.as_str()),
        Some("memfd:sealed-91")
    );
    assert_eq!(dat.info().clock.as_deref(), Some("local"));
    assert_eq!(
        dat.info().uname.as_deref(),
        Some("Linux vm 6.18.44-fc-v669 x86_64")
    );
}

#[test]
fn counting_in_small_parallel_segments_gives_the_same_counts() {
    for f in [
        "cyclictest-idle.v7.dat",
        "cyclictest-idle.v6.dat",
        "instances.v7zlib.dat",
    ] {
        let dat = open(f);
        for b in 0..dat.buffers().len() {
            let whole = dat.count_events_in_segments(b, usize::MAX).unwrap();
            // One page (v6) or one chunk (v7) per task.
            let split = dat.count_events_in_segments(b, 1).unwrap();
            assert_eq!(split, whole, "{f} buffer {b}");
            assert_eq!(dat.count_events(b).unwrap(), whole);
            let events = all_events(&dat, b);
            let lost = events
                .iter()
                .filter(|e| matches!(e.kind, EventKind::Lost { .. }))
                .count() as u64;
            assert_eq!(whole.total + lost, events.len() as u64, "{f} buffer {b}");
            let markers: u64 = whole.per_cpu.iter().map(|c| c.lost_markers).sum();
            assert_eq!(markers, lost);
        }
    }
}
