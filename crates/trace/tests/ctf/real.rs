//! The committed trace, typed, checked by hand against `babeltrace2`'s lines (quoted).

use jitterlab_trace::ctf::CtfTrace;
use jitterlab_trace::{Comm, Event, EventKind, Trace, Wakeup};

use super::KERNEL_IRQ_SCHED;

fn events() -> Vec<Event> {
    let trace = Trace::open(KERNEL_IRQ_SCHED, false).unwrap();
    assert_eq!(trace.format(), "LTTng CTF 1.8 (kernel, 4 streams)");
    let mut src = trace.events().unwrap();
    let mut out = Vec::new();
    while let Some(ev) = src.next_event().unwrap() {
        out.push(ev);
    }
    assert_eq!(src.meta().cpus, Some(4));
    assert_eq!(src.stats().lost, vec![Some(0); 4]);
    out
}

fn at(evs: &[Event], ts: u64, name: &str) -> Event {
    evs.iter()
        .find(|e| e.ts == ts && e.kind.name() == name)
        .unwrap_or_else(|| panic!("no {name} at {ts}"))
        .clone()
}

#[test]
fn typed_events_match_babeltrace2_by_hand() {
    let evs = events();
    assert_eq!(evs.len(), 31_556);
    // [08:36:01.211296639] sched_switch: { cpu_id = 2 }, { prev_comm = "swapper/2",
    // prev_tid = 0, prev_prio = 20, prev_state = 0, next_comm = "lttng-consumerd",
    // next_tid = 496, next_prio = 20 }: prio 20 is 120 - MAX_RT_PRIO.
    let sw = at(&evs, 1412670961211296639, "sched_switch");
    assert_eq!((sw.cpu, sw.pid, sw.flags.0, sw.preempt_count), (2, 0, 0, 0));
    assert_eq!(
        sw.kind,
        EventKind::SchedSwitch {
            prev_comm: Comm::new("swapper/2"),
            prev_pid: 0,
            prev_prio: 120,
            prev_state: jitterlab_trace::TaskState(0),
            next_comm: Comm::new("lttng-consumerd"),
            next_pid: 496,
            next_prio: 120,
        }
    );
    // The task after a switch is its next_tid.
    let after = evs.iter().find(|e| e.cpu == 2 && e.ts > sw.ts).unwrap();
    assert_eq!(after.pid, 496);
    // prev_state 1024 (TASK_STATE_MAX of Linux 3.10) is a preemption; 64 is TASK_DEAD.
    let EventKind::SchedSwitch { prev_state, .. } =
        at(&evs, 1412670961222775339, "sched_switch").kind
    else {
        panic!()
    };
    assert_eq!(prev_state.to_string(), "R+");
    let EventKind::SchedSwitch { prev_state, .. } =
        at(&evs, 1412670961314091039, "sched_switch").kind
    else {
        panic!()
    };
    assert_eq!(prev_state.to_string(), "x");
    // [08:36:01.211287139] sched_wakeup: { cpu_id = 1 }, { comm = "lttng-consumerd",
    // tid = 496, prio = 120, success = 1, target_cpu = 2 }: lttng-modules 2.5 kept
    // p->prio in the wake-up events.
    let w = at(&evs, 1412670961211287139, "sched_wakeup");
    assert_eq!(
        w.kind,
        EventKind::SchedWakeup(Wakeup {
            comm: Comm::new("lttng-consumerd"),
            pid: 496,
            prio: 120,
            target_cpu: 2,
        })
    );
    // ... and the waker is the task that CPU 1 starts with: the prev_tid of its first
    // switch (lttng-sessiond, 482).
    assert_eq!((w.cpu, w.pid), (1, 482));
    // [08:36:01.211281739] sched_migrate_task: prio = 20 (p->prio - 100).
    let EventKind::SchedMigrateTask {
        prio,
        orig_cpu,
        dest_cpu,
        ..
    } = at(&evs, 1412670961211281739, "sched_migrate_task").kind
    else {
        panic!()
    };
    assert_eq!((prio, orig_cpu, dest_cpu), (120, 1, 2));
    // irq_handler_entry { irq = 27, name = "arch_timer" }, softirq_entry { vec = 1 }.
    let irq = at(&evs, 1412670961212720739, "irq_handler_entry");
    assert_eq!(
        irq.kind,
        EventKind::IrqHandlerEntry {
            irq: 27,
            name: "arch_timer".into()
        }
    );
    assert_eq!(irq.cpu, 1);
    let soft = at(&evs, 1412670961212752839, "softirq_entry");
    assert_eq!(
        (soft.cpu, soft.kind),
        (0, EventKind::SoftirqEntry { vec: 1 })
    );
    let EventKind::HrtimerExpireEntry {
        hrtimer,
        now,
        function,
    } = at(&evs, 1412670961212727339, "hrtimer_expire_entry").kind
    else {
        panic!()
    };
    assert_eq!(
        (hrtimer, now, function.addr),
        (3253852144, 7633690007089, 3221663248)
    );
    let EventKind::SchedProcessExec {
        filename,
        pid,
        old_pid,
    } = at(&evs, 1412670963202927839, "sched_process_exec").kind
    else {
        panic!()
    };
    assert_eq!((&*filename, pid, old_pid), ("/bin/ls", 525, 525));
    // Everything else keeps its fields, named without CTF's leading underscore.
    let EventKind::Other { name, fields } = &evs[0].kind else {
        panic!()
    };
    assert_eq!(&**name, "kmem_kmalloc");
    assert_eq!(&*fields[2].0, "bytes_req");
    assert_eq!(fields[2].1, jitterlab_trace::Value::Uint(712));
}

#[test]
fn statedump_names_threads_and_irqs() {
    let trace = CtfTrace::open(KERNEL_IRQ_SCHED, false).unwrap();
    let names = trace.cmdlines();
    assert_eq!(names.get(&1).map(Comm::as_str), Some("systemd"));
    // lttng_statedump_process_state { tid = 274, pid = 271, name = "dlt-system" }
    assert_eq!(names.get(&274).map(Comm::as_str), Some("dlt-system"));
    assert_eq!(trace.tgids().get(&274), Some(&271));
    assert_eq!(trace.irq_names().get(&27).map(|s| &**s), Some("arch_timer"));
    assert_eq!(trace.env_str("kernel_release"), Some("3.10.31-ltsi"));
    assert_eq!(trace.clocks()[0].offset, 1412663327522716450);
}

#[test]
fn folders_are_found_or_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    // An LTTng session folder: SESSION/kernel/.
    let kernel = dir.path().join("kernel");
    std::fs::create_dir(&kernel).unwrap();
    for f in [
        "metadata",
        "channel0_0",
        "channel0_1",
        "channel0_2",
        "channel0_3",
    ] {
        std::fs::copy(format!("{KERNEL_IRQ_SCHED}/{f}"), kernel.join(f)).unwrap();
    }
    let t = Trace::open(dir.path(), false).unwrap();
    assert!(matches!(t, Trace::Ctf(_)));
    // The metadata file names its folder's trace.
    assert!(matches!(
        Trace::open(kernel.join("metadata"), false).unwrap(),
        Trace::Ctf(_)
    ));
    // A folder that is not a trace.
    let empty = tempfile::tempdir().unwrap();
    let e = Trace::open(empty.path(), false).err().unwrap();
    assert_eq!(e.kind, jitterlab_trace::ErrorKind::UnknownFormat);
    assert!(e.to_string().contains("not a trace"), "{e}");
    // A user-space-only session.
    std::fs::create_dir(empty.path().join("ust")).unwrap();
    let e = Trace::open(empty.path(), false).err().unwrap();
    assert_eq!(e.kind, jitterlab_trace::ErrorKind::Unsupported, "{e}");
}
