//! The two real captures, each as the kernel and as trace-cmd printed it.

use super::*;

/// Makes an event of the kernel's text comparable with trace-cmd's: no flags column there,
/// `hrtimer=` is a hashed pointer in the kernel's text, and trace-cmd prints `R+` as `R`.
/// Returns whether the state had to be changed.
fn normalize(e: &mut Event) -> bool {
    e.flags = Flags(0);
    e.preempt_count = 0;
    match &mut e.kind {
        EventKind::HrtimerExpireEntry { hrtimer, .. }
        | EventKind::HrtimerExpireExit { hrtimer } => {
            *hrtimer = 0;
            false
        }
        EventKind::SchedSwitch { prev_state, .. } if prev_state.0 == TaskState::PREEMPTED => {
            *prev_state = TaskState(0);
            true
        }
        _ => false,
    }
}

/// Both printings of one capture decode to the same events, but for the documented
/// differences; returns the number of `R+` switches.
fn assert_same_capture(ftrace: &Read, report: &Read) -> usize {
    assert_eq!(ftrace.events.len(), report.events.len());
    assert_eq!(
        counts_by_name(&ftrace.events),
        counts_by_name(&report.events)
    );
    assert_eq!(counts_by_cpu(&ftrace.events), counts_by_cpu(&report.events));
    let mut preempted = 0;
    for (f, r) in ftrace.events.iter().zip(&report.events) {
        let mut f = f.clone();
        let mut r = r.clone();
        preempted += normalize(&mut f) as usize;
        assert!(!normalize(&mut r), "trace-cmd never prints R+: {r:?}");
        assert_eq!(f, r);
    }
    preempted
}

fn expected(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn cyclictest_idle_both_printings_decode_to_the_same_events() {
    let f = read("cyclictest-idle.ftrace.txt");
    let r = read("cyclictest-idle.report.txt");
    assert_eq!(f.meta.format, "ftrace text (tracer: nop)");
    assert_eq!(r.meta.format, "trace-cmd report text");
    assert_eq!((f.meta.cpus, r.meta.cpus), (Some(2), Some(2)));
    assert_eq!(
        f.stats,
        ReadStats {
            lost: vec![Some(0), Some(0)],
            skipped: 0,
            lost_unrecorded: false,
            buffers: Vec::new(),
        }
    );
    assert_eq!(r.stats, f.stats);
    assert_time_ordered(&f.events);
    // awk '!/^#/ {for(i=1;i<=NF;i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) {print $(i+1); break}}' \
    //   cyclictest-idle.ftrace.txt | sort | uniq -c        (the same on the report)
    let want = expected(&[
        ("hrtimer_expire_entry", 1666),
        ("hrtimer_expire_exit", 1666),
        ("ipi_send_cpu", 4),
        ("irq_handler_entry", 8),
        ("irq_handler_exit", 8),
        ("sched_migrate_task", 6),
        ("sched_process_exit", 2),
        ("sched_process_fork", 2),
        ("sched_switch", 1183),
        ("sched_wakeup", 1156),
        ("sched_wakeup_new", 2),
        ("sched_waking", 1157),
        ("softirq_entry", 488),
        ("softirq_exit", 488),
        ("softirq_raise", 488),
    ]);
    assert_eq!(counts_by_name(&f.events), want);
    // grep -v '^#' cyclictest-idle.ftrace.txt | grep -o '\[00[01]\]' | sort | uniq -c
    assert_eq!(
        counts_by_cpu(&f.events),
        BTreeMap::from([(0, 1537), (1, 6787)])
    );
    // grep -c 'prev_state=R+' cyclictest-idle.ftrace.txt
    assert_eq!(assert_same_capture(&f, &r), 1);
}

#[test]
fn disk_irq_stress_excerpt_both_printings_decode_to_the_same_events() {
    let f = read("disk-irq-stress-6000.ftrace.txt");
    let r = read("disk-irq-stress-6000.report.txt");
    // The same awk as above, over the excerpts.
    let want = expected(&[
        ("hrtimer_expire_entry", 25),
        ("hrtimer_expire_exit", 25),
        ("ipi_send_cpu", 8),
        ("irq_handler_entry", 645),
        ("irq_handler_exit", 645),
        ("sched_migrate_task", 6),
        ("sched_process_fork", 5),
        ("sched_switch", 1291),
        ("sched_wakeup", 663),
        ("sched_wakeup_new", 5),
        ("sched_waking", 663),
        ("softirq_entry", 673),
        ("softirq_exit", 673),
        ("softirq_raise", 673),
    ]);
    assert_eq!(counts_by_name(&f.events), want);
    assert_eq!(
        counts_by_cpu(&f.events),
        BTreeMap::from([(0, 116), (1, 5884)])
    );
    assert_time_ordered(&f.events);
    // grep -c 'prev_state=R+' disk-irq-stress-6000.ftrace.txt
    assert_eq!(assert_same_capture(&f, &r), 7);
}

/// The whole disk-irq-stress capture (../shared/traces, committed as .zst copies).
#[test]
fn disk_irq_stress_whole_capture() {
    let unzst = |name: &str| {
        let z = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data")
                .join(name),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        zstd::decode_all(&z[..]).expect("decompresses")
    };
    let fb = unzst("disk-irq-stress.ftrace.txt.zst");
    let rb = unzst("disk-irq-stress.report.txt.zst");
    let f = read_with(&fb, TextKind::Ftrace, TextOptions::named("ftrace")).unwrap();
    let r = read_with(&rb, TextKind::TraceCmdReport, TextOptions::named("report")).unwrap();
    assert_eq!(f.events.len(), 41636);
    assert_eq!(
        counts_by_cpu(&f.events),
        BTreeMap::from([(0, 4479), (1, 37157)])
    );
    let c = counts_by_name(&f.events);
    assert_eq!(c["sched_switch"], 9023);
    assert_eq!(c["irq_handler_entry"], 4078);
    assert_eq!(c["softirq_raise"], 4239);
    assert_eq!(c["ipi_send_cpu"], 786);
    assert_eq!(assert_same_capture(&f, &r), 21);
}

#[test]
fn sampled_fields_of_the_real_capture() {
    let f = read("cyclictest-idle.ftrace.txt");
    let r = read("cyclictest-idle.report.txt");
    // memfd:sealed-91-1809 [001] d..2. 976.348476: sched_switch: prev_comm=memfd:sealed-91
    //   prev_pid=1809 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 ...
    let switch = find(&f.events, |e| {
        matches!(e.kind, EventKind::SchedSwitch { .. })
    });
    assert_eq!(
        *switch,
        Event {
            ts: 976_348_476_000,
            cpu: 1,
            pid: 1809,
            flags: Flags(Flags::IRQS_OFF),
            preempt_count: 2,
            kind: EventKind::SchedSwitch {
                prev_comm: Comm::new("memfd:sealed-91"),
                prev_pid: 1809,
                prev_prio: 120,
                prev_state: TaskState(TaskState::INTERRUPTIBLE),
                next_comm: Comm::new("swapper/1"),
                next_pid: 0,
                next_prio: 120,
            },
        }
    );
    // trace-cmd: memfd:sealed-91:1809 [120] S ==> swapper/1:0 [120] (a comm with a colon).
    let rswitch = find(&r.events, |e| {
        matches!(e.kind, EventKind::SchedSwitch { .. })
    });
    assert_eq!(rswitch.kind, switch.kind);
    assert_eq!((rswitch.flags, rswitch.preempt_count), (Flags(0), 0));

    // <idle>-0 [001] d.h1. 976.348848: irq_handler_entry: irq=36 name=virtio1-req.0
    let irq = find(&f.events, |e| {
        matches!(e.kind, EventKind::IrqHandlerEntry { .. })
    });
    assert_eq!((irq.ts, irq.cpu, irq.pid), (976_348_848_000, 1, 0));
    assert_eq!(
        (irq.flags, irq.preempt_count),
        (Flags(Flags::IRQS_OFF | Flags::HARDIRQ), 1)
    );
    match &irq.kind {
        EventKind::IrqHandlerEntry { irq, name } => {
            assert_eq!((*irq, &**name), (36, "virtio1-req.0"));
        }
        k => panic!("{k:?}"),
    }
    let exit = find(&f.events, |e| {
        matches!(e.kind, EventKind::IrqHandlerExit { .. })
    });
    assert_eq!(exit.kind, EventKind::IrqHandlerExit { irq: 36, ret: 1 });

    // cyclictest-11384 [000] dN.4. 976.348586: sched_wakeup: comm=migration/0 pid=18 prio=0
    //   target_cpu=000; trace-cmd: migration/0:18 [0] CPU:000
    let wake = |events: &[Event]| {
        find(
            events,
            |e| matches!(e.kind, EventKind::SchedWakeup(w) if w.pid == 18),
        )
        .clone()
    };
    let w = wake(&f.events);
    let want = Wakeup {
        comm: Comm::new("migration/0"),
        pid: 18,
        prio: 0,
        target_cpu: 0,
    };
    assert_eq!(w.kind, EventKind::SchedWakeup(want));
    assert_eq!(
        (w.ts, w.pid, w.flags, w.preempt_count),
        (
            976_348_586_000,
            11384,
            Flags(Flags::IRQS_OFF | Flags::NEED_RESCHED | Flags::PREEMPT_RESCHED),
            4
        )
    );
    assert_eq!(wake(&r.events).kind, EventKind::SchedWakeup(want));
    // Every wake-up targets the CPU its line says.
    let targets: Vec<u32> = f
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SchedWakeup(w) => Some(w.target_cpu),
            _ => None,
        })
        .collect();
    assert_eq!(targets.len(), 1156);
    assert!(targets.iter().all(|c| *c <= 1));

    // softirq_raise: vec=4 [action=BLOCK]
    let soft = find(&f.events, |e| {
        matches!(e.kind, EventKind::SoftirqRaise { .. })
    });
    assert_eq!(soft.kind, EventKind::SoftirqRaise { vec: 4 });

    // cyclictest-11384 [000] d..2. 976.348587: sched_switch: prev_comm=bash prev_pid=11384
    //   prev_prio=120 prev_state=R+ ==> next_comm=migration/0 ...: the TASK-PID column says
    //   cyclictest, the fields still say bash; trace-cmd says `bash:11384 [120] R ==> ...`.
    let state = |events: &[Event]| {
        let e = find(events, |e| e.ts == 976_348_587_000);
        match e.kind {
            EventKind::SchedSwitch {
                prev_comm,
                prev_state,
                ..
            } => (e.pid, prev_comm, prev_state),
            ref k => panic!("{k:?}"),
        }
    };
    let bash = Comm::new("bash");
    assert_eq!(
        state(&f.events),
        (11384, bash, TaskState(TaskState::PREEMPTED))
    );
    assert_eq!(state(&r.events), (11384, bash, TaskState(0)));

    // The kernel's X (dead) and Z (zombie) are trace-cmd's Z and X.
    let states = |events: &[Event]| {
        let mut s: Vec<String> = events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::SchedSwitch { prev_state, .. } if !prev_state.is_runnable() => {
                    Some(prev_state.to_string())
                }
                _ => None,
            })
            .collect();
        s.sort();
        s.dedup();
        s
    };
    assert_eq!(states(&f.events), ["D", "I", "S", "X", "Z"]);
    assert_eq!(states(&r.events), states(&f.events));

    // ipi_send_cpu: callsite=wakeup_preempt+0x55/0xa0 callback=0x0 (trace-cmd: +0x55)
    let ipi = find(&r.events, |e| e.ts == 976_348_594_000);
    let want = EventKind::IpiSendCpu {
        cpu: 1,
        callsite: Sym {
            addr: 0,
            name: Some("wakeup_preempt+0x55".into()),
        },
        callback: Sym::default(),
    };
    assert_eq!(ipi.kind, want);
    // hrtimer=000000000cbaf9d7 function=hrtimer_wakeup now=976322677128 (kernel, hashed %p)
    let h = find(&f.events, |e| {
        matches!(e.kind, EventKind::HrtimerExpireEntry { .. })
    });
    let want = EventKind::HrtimerExpireEntry {
        hrtimer: 0x0cba_f9d7,
        now: 976_322_677_128,
        function: Sym {
            addr: 0,
            name: Some("hrtimer_wakeup".into()),
        },
    };
    assert_eq!(h.kind, want);
    let h = find(&r.events, |e| {
        matches!(e.kind, EventKind::HrtimerExpireEntry { .. })
    });
    assert!(matches!(
        h.kind,
        EventKind::HrtimerExpireEntry {
            hrtimer: 0xffff_c900_01c5_7cd8,
            ..
        }
    ));
}
