//! The state machine on synthetic event sequences, one edge case each.

use jitterlab_analyze::{AnomalyKind, ChainSource, HandlerKind, SliceEnd, SliceStart, Waker};
use jitterlab_trace::{EventKind, Flags, Sym, TaskState};

use crate::util::*;

#[test]
fn preempted_vs_sleeping() {
    let (_, out) = run(&[
        ev(100, 0, 1, switch(1, "R+", 2)),
        ev(300, 0, 2, switch(2, "S", 1)),
        ev(450, 0, 1, switch(1, "D", 0)),
    ]);
    let s = &out.slices;
    assert_eq!(s.len(), 4, "{s:?}");
    assert_eq!(
        (s[0].tid, s[0].start_kind, s[0].end_kind),
        (1, SliceStart::TraceStart, SliceEnd::Preempted)
    );
    assert_eq!((s[1].tid, s[1].start, s[1].end), (2, 100, 300));
    assert_eq!(
        s[1].end_kind,
        SliceEnd::Slept(TaskState(TaskState::INTERRUPTIBLE))
    );
    assert_eq!(
        s[2].end_kind,
        SliceEnd::Slept(TaskState(TaskState::UNINTERRUPTIBLE))
    );
    assert_eq!((s[3].tid, s[3].end_kind), (0, SliceEnd::TraceEnd));
    // Resuming after preemption is not a wake-up.
    assert!(out.wakes.is_empty());
    assert!(out.anomalies.is_empty());
}

#[test]
fn wakeup_latency_and_waker_task() {
    let (_, out) = run(&[
        ev(0, 0, 5, switch(5, "S", 0)),
        ev(1_000, 1, 9, waking(5, 0)),
        ev(1_200, 1, 9, wakeup_ev(5, 0)),
        ev(4_000, 0, 0, switch(0, "R", 5)),
    ]);
    assert_eq!(out.wakes.len(), 1);
    let w = &out.wakes[0];
    assert_eq!(
        (w.tid, w.waking_ts, w.wakeup_ts, w.switch_in_ts, w.cpu),
        (5, 1_000, Some(1_200), 4_000, 0)
    );
    assert_eq!(w.latency(), 3_000);
    assert_eq!(w.waker, Waker::Task { tid: 9 });
    assert_eq!(w.waker_cpu, 1);
    assert!(!w.inferred);
}

#[test]
fn implicit_switch_in_from_common_pid() {
    // CPU 0 goes idle; the idle -> 7 switch is missing; 7 shows up as common_pid.
    let (m, out) = run(&[
        ev(0, 0, 7, switch(7, "S", 0)),
        evf(1_000, 0, 0, Flags::HARDIRQ, waking(7, 0)),
        ev(1_500, 0, 0, EventKind::SoftirqRaise { vec: 7 }),
        ev(5_000, 0, 7, switch(7, "S", 0)),
    ]);
    assert_eq!(m.counts().anomalies_on(AnomalyKind::ImplicitSwitchIn, 0), 1);
    let w = &out.wakes[0];
    assert!(w.inferred);
    assert_eq!((w.switch_in_ts, w.inferred_after), (5_000, Some(1_500)));
    assert_eq!(w.waker, Waker::Hardirq { irq: None });
    let s7: Vec<_> = out.slices.iter().filter(|s| s.tid == 7).collect();
    assert_eq!(s7[1].start_kind, SliceStart::Inferred);
    assert_eq!((s7[1].start, s7[1].end), (5_000, 5_000));
    let idle = out.slices.iter().find(|s| s.tid == 0).unwrap();
    assert_eq!(
        (idle.start, idle.end, idle.end_kind),
        (0, 5_000, SliceEnd::Displaced)
    );
    // The trace shows idle current until its CPU's event at 1.5 us, no further.
    assert_eq!(idle.last_seen, 1_500);
    assert!(out
        .slices
        .iter()
        .filter(|s| s.end_kind != SliceEnd::Displaced)
        .all(|s| s.last_seen == s.end));
}

#[test]
fn hrtimer_callbacks_and_irq_vectors_are_handler_spans() {
    let vector = |name: &str| EventKind::Other {
        name: name.into(),
        fields: Vec::new(),
    };
    let hrtimer = EventKind::HrtimerExpireEntry {
        hrtimer: 1,
        now: 0,
        function: Sym {
            addr: 0xff,
            name: Some("tick_nohz_handler+0x0/0x10".into()),
        },
    };
    let (_, out) = run(&[
        // The trace begins inside a vector: its exit ends nothing.
        ev(0, 0, 0, vector("irq_vectors:call_function_single_exit")),
        ev(100, 0, 0, vector("irq_vectors:local_timer_entry")),
        ev(110, 0, 0, hrtimer),
        ev(150, 0, 0, EventKind::HrtimerExpireExit { hrtimer: 1 }),
        ev(200, 0, 0, vector("irq_vectors:local_timer_exit")),
        ev(300, 1, 0, vector("irq_vectors:irq_work_entry")),
        ev(320, 1, 0, vector("irq_vectors:irq_work_exit")),
        // Not a vector.
        ev(400, 1, 0, vector("timer:timer_start")),
    ]);
    let spans: Vec<_> = out
        .handlers
        .iter()
        .map(|h| (h.cpu, h.kind, &*h.name, h.start, h.end))
        .collect();
    assert_eq!(
        spans,
        [
            (0, HandlerKind::Hrtimer, "tick_nohz_handler", 110, 150),
            (0, HandlerKind::Vector, "local_timer", 100, 200),
            (1, HandlerKind::Vector, "irq_work", 300, 320),
        ]
    );
}

#[test]
fn irq_softirq_chain() {
    // IRQ 36 raises BLOCK, exits at 200; BLOCK wakes 11 on CPU 0; 11 runs at 1000.
    let (m, out) = run(&[
        ev(0, 0, 11, switch(11, "D", 0)),
        ev(100, 0, 0, irq_entry(36)),
        ev(150, 0, 0, EventKind::SoftirqRaise { vec: 4 }),
        ev(200, 0, 0, irq_exit(36)),
        ev(210, 0, 0, EventKind::SoftirqEntry { vec: 4 }),
        ev(300, 0, 0, waking(11, 0)),
        ev(320, 0, 0, EventKind::SoftirqExit { vec: 4 }),
        ev(1_000, 0, 0, switch(0, "R", 11)),
    ]);
    let w = &out.wakes[0];
    assert_eq!(
        w.waker,
        Waker::Softirq {
            vec: Some(4),
            raised_by: Some(36)
        }
    );
    assert_eq!(w.irq(), Some(36));
    assert_eq!(w.irq_exit_ts, Some(200));
    assert_eq!(w.chain_latency(), Some(800));
    assert_eq!(out.irqs.len(), 1);
    assert_eq!(
        (out.irqs[0].start, out.irqs[0].end, out.irqs[0].depth),
        (100, 200, 0)
    );
    let sirq = &out.softirqs[0];
    assert_eq!(
        (
            sirq.vec,
            sirq.start,
            sirq.end,
            sirq.raise_ts,
            sirq.raised_by
        ),
        (4, 210, 320, Some(150), Some(36))
    );
    assert_eq!(m.irq_names().get(&36).map(|s| &**s), Some("dev36"));
    assert!(out.anomalies.is_empty());
}

#[test]
fn task_raised_softirq_chain() {
    // Task 5 raises NET_RX on CPU 0 (no IRQ), runs it at 210..320 and wakes 11 (to CPU
    // 1, switched in at 1000) and 12 (CPU 1, switched in at 300, before the exit).
    let (_, out) = run(&[
        ev(0, 1, 11, switch(11, "S", 0)),
        ev(1, 0, 12, switch(12, "S", 0)),
        ev(2, 0, 0, switch(0, "R", 5)),
        ev(150, 0, 5, EventKind::SoftirqRaise { vec: 3 }),
        ev(210, 0, 5, EventKind::SoftirqEntry { vec: 3 }),
        ev(250, 0, 5, waking(11, 1)),
        ev(260, 0, 5, waking(12, 1)),
        ev(300, 1, 0, switch(0, "R", 12)),
        ev(320, 0, 5, EventKind::SoftirqExit { vec: 3 }),
        ev(1_000, 1, 12, switch(12, "S", 11)),
    ]);
    let w11 = out.wakes.iter().find(|w| w.tid == 11).unwrap();
    let w12 = out.wakes.iter().find(|w| w.tid == 12).unwrap();
    let net_rx = Waker::Softirq {
        vec: Some(3),
        raised_by: None,
    };
    assert_eq!((w11.waker, w12.waker), (net_rx, net_rx));
    assert_eq!(w11.chain_source(), Some(ChainSource::Softirq(3)));
    assert_eq!(
        (w11.irq(), w11.irq_exit_ts, w11.chain_latency()),
        (None, None, None)
    );
    assert_eq!(w11.softirq_exit_ts, Some(320));
    assert_eq!(w11.softirq_chain_latency(), Some(680));
    // Switched in before the softirq's exit: no exit, no latency.
    assert_eq!(
        (w12.softirq_exit_ts, w12.softirq_chain_latency()),
        (None, None)
    );
    assert!(out.anomalies.is_empty(), "{:?}", out.anomalies);
}

#[test]
fn softirq_exit_is_only_its_own_runs() {
    // 11 is woken in a TIMER run whose exit is missing (the next event on CPU 0 is out of
    // softirq context, with flags): no softirq exit; a later run's exit is not its.
    let (_, out) = run(&[
        ev(0, 1, 11, switch(11, "S", 0)),
        evf(10, 0, 5, Flags::SOFTIRQ, EventKind::SoftirqEntry { vec: 1 }),
        evf(20, 0, 5, Flags::SOFTIRQ, waking(11, 1)),
        evf(
            30,
            0,
            5,
            Flags::NEED_RESCHED,
            EventKind::SoftirqRaise { vec: 1 },
        ),
        evf(40, 0, 5, Flags::SOFTIRQ, EventKind::SoftirqEntry { vec: 1 }),
        evf(50, 0, 5, Flags::SOFTIRQ, EventKind::SoftirqExit { vec: 1 }),
        ev(500, 1, 0, switch(0, "R", 11)),
    ]);
    let w = &out.wakes[0];
    assert_eq!(w.chain_source(), Some(ChainSource::Softirq(1)));
    assert_eq!(w.softirq_exit_ts, None);
}

#[test]
fn hardirq_wake_gets_the_handler_exit() {
    let (_, out) = run(&[
        ev(0, 0, 3, switch(3, "S", 0)),
        ev(100, 0, 0, irq_entry(20)),
        ev(110, 0, 0, irq_entry(21)), // nested
        ev(120, 0, 0, irq_exit(21)),
        ev(130, 0, 0, waking(3, 0)),
        ev(190, 0, 0, irq_exit(20)),
        ev(400, 0, 0, switch(0, "R", 3)),
    ]);
    let w = &out.wakes[0];
    assert_eq!(w.waker, Waker::Hardirq { irq: Some(20) });
    assert_eq!((w.irq_exit_ts, w.chain_latency()), (Some(190), Some(210)));
    let depths: Vec<_> = out.irqs.iter().map(|s| (s.irq, s.depth)).collect();
    assert_eq!(depths, [(21, 1), (20, 0)]);
}

#[test]
fn unmatched_exits_and_trace_starting_in_irq() {
    let (m, out) = run(&[
        ev(10, 0, 0, irq_exit(5)),                       // started inside IRQ 5
        ev(20, 0, 0, EventKind::SoftirqExit { vec: 1 }), // and inside a softirq
        ev(30, 0, 0, irq_entry(6)),
        ev(40, 0, 0, irq_exit(6)),
        ev(50, 0, 0, irq_exit(6)), // unmatched now
        ev(60, 0, 0, EventKind::SoftirqEntry { vec: 1 }),
        ev(70, 0, 0, EventKind::SoftirqExit { vec: 1 }),
        ev(80, 0, 0, EventKind::SoftirqExit { vec: 1 }), // unmatched
        ev(90, 0, 0, irq_entry(7)),
        ev(95, 0, 0, irq_entry(8)),
        ev(99, 0, 0, irq_exit(7)), // 8's exit is missing
    ]);
    let c = m.counts();
    assert_eq!(c.anomalies_of(AnomalyKind::TraceStartsInIrq), 1);
    assert_eq!(c.anomalies_of(AnomalyKind::TraceStartsInSoftirq), 1);
    assert_eq!(c.anomalies_of(AnomalyKind::UnmatchedIrqExit), 1);
    assert_eq!(c.anomalies_of(AnomalyKind::UnmatchedSoftirqExit), 1);
    assert_eq!(c.anomalies_of(AnomalyKind::IrqExitMissing), 1);
    let spans: Vec<_> = out.irqs.iter().map(|s| (s.irq, s.start, s.end)).collect();
    assert_eq!(spans, [(6, 30, 40), (7, 90, 99)]);
    assert_eq!(out.softirqs.len(), 1);
}

#[test]
fn flags_reveal_a_missing_irq_exit() {
    let h = Flags::HARDIRQ | Flags::IRQS_OFF;
    let (m, out) = run(&[
        evf(10, 0, 0, h, irq_entry(9)),
        evf(20, 0, 0, Flags::IRQS_OFF, switch(0, "R", 4)), // not in hardirq: 9 is over
        evf(30, 0, 4, h, irq_exit(9)),
    ]);
    assert_eq!(m.counts().anomalies_of(AnomalyKind::IrqExitMissing), 1);
    assert_eq!(m.counts().anomalies_of(AnomalyKind::UnmatchedIrqExit), 1);
    assert!(out.irqs.is_empty());
}

#[test]
fn pid_reuse_across_exit_and_fork() {
    let fork = |child: i32| EventKind::SchedProcessFork {
        parent_comm: comm(1),
        parent_pid: 1,
        child_comm: comm(child),
        child_pid: child,
    };
    let exit = EventKind::SchedProcessExit {
        comm: comm(100),
        pid: 100,
        prio: 120,
    };
    let (m, out) = run(&[
        ev(0, 0, 1, fork(100)),
        ev(
            10,
            0,
            1,
            EventKind::SchedWakeupNew(jitterlab_trace::Wakeup {
                comm: comm(100),
                pid: 100,
                prio: 120,
                target_cpu: 0,
            }),
        ),
        ev(20, 0, 1, switch(1, "S", 100)),
        ev(30, 0, 100, exit.clone()),
        ev(40, 0, 100, switch(100, "X", 0)),
        ev(50, 1, 1, fork(100)), // the tid again, a new task
        ev(60, 1, 1, switch(1, "S", 100)),
        ev(70, 1, 100, switch(100, "S", 0)),
        ev(80, 1, 0, waking(100, 1)),
        ev(90, 1, 0, switch(0, "R", 100)),
        ev(95, 1, 100, exit),
        ev(96, 1, 100, switch(100, "Z", 0)),
        ev(99, 0, 0, waking(100, 0)), // dead tid, no fork: reuse
    ]);
    let incarnations: Vec<_> = m.tasks().iter().filter(|t| t.tid == 100).collect();
    assert_eq!(incarnations.len(), 3);
    assert!(incarnations[0].forked && incarnations[0].exited);
    assert!(incarnations[1].forked && incarnations[1].exited);
    assert!(!incarnations[2].forked);
    assert_eq!(m.counts().anomalies_of(AnomalyKind::PidReuseWithoutFork), 1);
    assert_eq!(m.counts().anomalies_of(AnomalyKind::ForkOfLiveTid), 0);
    let s100: Vec<_> = out.slices.iter().filter(|s| s.tid == 100).collect();
    assert_eq!(s100.len(), 3);
    assert_eq!(s100[0].end_kind, SliceEnd::Exited);
    assert_ne!(s100[0].task, s100[1].task);
    assert_eq!(s100[2].end_kind, SliceEnd::Exited);
    // The new task's first wake-up (sched_wakeup_new) and the second one are measured.
    let w: Vec<_> = out
        .wakes
        .iter()
        .filter(|w| w.tid == 100)
        .map(|w| (w.new_task, w.latency()))
        .collect();
    assert_eq!(w, [(true, 10), (false, 10)]);
}

/// A run slice as (task, cpu, start, end, end kind).
type Slice = (Option<u32>, u32, u64, u64, SliceEnd);

/// The tasks of `tid` the machine made, and its slices.
fn incarnations(
    m: &jitterlab_analyze::Machine,
    out: &jitterlab_analyze::Collect,
    tid: i32,
) -> (Vec<jitterlab_analyze::TaskInfo>, Vec<Slice>) {
    let tasks = m.tasks().iter().filter(|t| t.tid == tid).cloned().collect();
    let slices = out
        .slices
        .iter()
        .filter(|s| s.tid == tid)
        .map(|s| (s.task, s.cpu, s.start, s.end, s.end_kind))
        .collect();
    (tasks, slices)
}

#[test]
fn exit_tail_on_one_cpu_is_the_same_task() {
    // do_exit runs on after sched_process_exit: 100 is preempted, sleeps, is woken and
    // switched in again before its last switch-out (Z).
    let (m, out) = run(&[
        ev(0, 0, 0, switch(0, "R", 100)),
        ev(10, 0, 100, exit(100)),
        ev(20, 0, 100, switch(100, "R+", 5)),
        ev(30, 0, 5, switch(5, "S", 100)),
        ev(40, 0, 100, switch(100, "D", 0)),
        ev(50, 0, 0, waking(100, 0)),
        ev(60, 0, 0, switch(0, "R", 100)),
        ev(70, 0, 100, switch(100, "Z", 0)),
    ]);
    let (tasks, slices) = incarnations(&m, &out, 100);
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert!(tasks[0].exited);
    let id = Some(0);
    assert_eq!(
        slices,
        [
            (id, 0, 0, 20, SliceEnd::Preempted),
            (
                id,
                0,
                30,
                40,
                SliceEnd::Slept(TaskState(TaskState::UNINTERRUPTIBLE))
            ),
            (id, 0, 60, 70, SliceEnd::Exited),
        ]
    );
    // The wake-up in the tail is the task's own.
    assert_eq!(out.wakes.len(), 1);
    assert_eq!((out.wakes[0].task, out.wakes[0].latency()), (0, 10));
    assert!(out.anomalies.is_empty(), "{:?}", out.anomalies);
}

#[test]
fn exit_tail_ending_on_another_cpu_is_the_same_task() {
    // 100 exits on CPU 0, is preempted there, migrated, and switched out for the last
    // time on CPU 1 (X: a self-reaping thread); the idle tasks come and go around it.
    let (m, out) = run(&[
        ev(0, 0, 0, switch(0, "R", 100)),
        ev(5, 1, 9, switch(9, "S", 0)),
        ev(10, 0, 100, exit(100)),
        ev(20, 0, 100, switch(100, "R+", 7)),
        ev(25, 1, 0, migrate(100, 0, 1)),
        ev(30, 1, 0, switch(0, "R", 100)),
        ev(35, 0, 7, switch(7, "S", 0)),
        ev(40, 1, 100, switch(100, "X", 0)),
        ev(50, 0, 0, waking(9, 1)),
    ]);
    let (tasks, slices) = incarnations(&m, &out, 100);
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let id = m
        .tasks()
        .iter()
        .position(|t| t.tid == 100)
        .map(|i| i as u32);
    assert_eq!(
        slices,
        [
            (id, 0, 0, 20, SliceEnd::Preempted),
            (id, 1, 30, 40, SliceEnd::Exited),
        ]
    );
    assert_eq!(out.migrations.len(), 1);
    assert_eq!(Some(out.migrations[0].task), id);
    assert!(m.tasks().iter().all(|t| t.tid > 0));
    assert!(out.anomalies.is_empty(), "{:?}", out.anomalies);
}

#[test]
fn tid_seen_after_the_tail_without_fork_is_a_reuse() {
    let (m, out) = run(&[
        ev(0, 0, 0, switch(0, "R", 100)),
        ev(10, 0, 100, exit(100)),
        ev(20, 0, 100, switch(100, "R+", 5)),
        ev(30, 0, 5, switch(5, "S", 100)),
        ev(40, 0, 100, switch(100, "Z", 0)),
        // The tid again, its fork not traced.
        ev(50, 1, 0, waking(100, 1)),
        ev(60, 1, 0, switch(0, "R", 100)),
        ev(70, 1, 100, switch(100, "S", 0)),
    ]);
    assert_eq!(m.counts().anomalies_of(AnomalyKind::PidReuseWithoutFork), 1);
    assert_eq!(m.counts().anomalies_of(AnomalyKind::ForkOfLiveTid), 0);
    let a: Vec<_> = out.anomalies.iter().map(|a| (a.kind, a.ts)).collect();
    assert_eq!(a, [(AnomalyKind::PidReuseWithoutFork, 50)]);
    let (tasks, slices) = incarnations(&m, &out, 100);
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert!(tasks[0].exited && !tasks[1].exited && !tasks[1].forked);
    assert_eq!(tasks[1].first_ts, 50);
    let ids: Vec<_> = slices.iter().map(|s| s.0).collect();
    assert_eq!(ids[0], ids[1]);
    assert_ne!(ids[1], ids[2]);
    assert_eq!(slices[1].4, SliceEnd::Exited);
}

#[test]
fn fork_of_the_tid_after_the_tail_is_no_anomaly() {
    let (m, out) = run(&[
        ev(0, 0, 0, switch(0, "R", 100)),
        ev(10, 0, 100, exit(100)),
        ev(20, 0, 100, switch(100, "R+", 1)),
        ev(30, 0, 1, switch(1, "R+", 100)),
        ev(40, 0, 100, switch(100, "Z", 1)),
        ev(50, 0, 1, fork(1, 100)),
        ev(55, 0, 1, wakeup_new(100, 1)),
        ev(60, 1, 0, switch(0, "R", 100)),
        ev(70, 1, 100, switch(100, "S", 0)),
    ]);
    assert!(out.anomalies.is_empty(), "{:?}", out.anomalies);
    let (tasks, slices) = incarnations(&m, &out, 100);
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert!(tasks[0].exited && !tasks[0].forked);
    assert!(tasks[1].forked && !tasks[1].exited);
    assert_eq!(tasks[1].parent, Some(1));
    let ids: Vec<_> = slices.iter().map(|s| s.0).collect();
    assert_eq!(ids[0], ids[1]);
    assert_ne!(ids[1], ids[2]);
    assert_eq!(out.wakes.iter().filter(|w| w.new_task).count(), 1);
}

#[test]
fn fork_of_the_tid_during_the_tail_is_no_anomaly() {
    // A self-reaping thread frees its tid in exit_notify, before its last switch-out:
    // a fork on CPU 1 may take the tid while the old task still runs on CPU 0.
    let (m, out) = run(&[
        ev(0, 0, 0, switch(0, "R", 100)),
        ev(10, 0, 100, exit(100)),
        ev(20, 1, 1, fork(1, 100)),
        ev(25, 1, 1, switch(1, "S", 100)),
        ev(30, 0, 100, switch(100, "X", 0)),
        ev(40, 1, 100, switch(100, "S", 0)),
    ]);
    assert!(out.anomalies.is_empty(), "{:?}", out.anomalies);
    let (tasks, slices) = incarnations(&m, &out, 100);
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    let (old, new) = (Some(slices[0].0.unwrap()), slices[1].0);
    assert_ne!(old, new);
    // Sorted by end: the new task's slice on CPU 1 ends after the old one's on CPU 0.
    assert_eq!(slices[0], (old, 0, 0, 30, SliceEnd::Exited));
    assert_eq!(
        slices[1],
        (
            new,
            1,
            25,
            40,
            SliceEnd::Slept(TaskState(TaskState::INTERRUPTIBLE))
        )
    );
}

#[test]
fn lost_events_reset_the_cpu() {
    let (m, out) = run(&[
        ev(0, 0, 2, switch(2, "S", 3)),
        ev(100, 1, 0, waking(2, 0)),
        ev(200, 0, 3, EventKind::SoftirqRaise { vec: 1 }),
        ev(300, 0, -1, EventKind::Lost { count: Some(42) }),
        ev(500, 0, 4, switch(4, "S", 0)),
        ev(600, 1, 0, switch(0, "R", 5)),
    ]);
    let c = m.counts();
    assert_eq!(c.anomalies_on(AnomalyKind::LostEvents, 0), 42);
    assert_eq!(c.anomalies_on(AnomalyKind::WakeDroppedOnLost, 0), 1);
    assert_eq!(c.lost, [Some(42)]);
    let s3 = out.slices.iter().find(|s| s.tid == 3).unwrap();
    assert_eq!((s3.start, s3.end, s3.end_kind), (0, 200, SliceEnd::Lost));
    assert_eq!(out.blinds.len(), 1);
    assert_eq!((out.blinds[0].start, out.blinds[0].end), (200, 500));
    let s4 = out.slices.iter().find(|s| s.tid == 4).unwrap();
    assert_eq!(
        (s4.start, s4.end, s4.start_kind),
        (500, 500, SliceStart::TraceStart)
    );
    assert!(
        out.wakes.is_empty(),
        "the wake-up towards CPU 0 was dropped"
    );
}

#[test]
fn waking_while_running_is_not_a_wakeup() {
    let (m, out) = run(&[
        ev(0, 0, 0, switch(0, "R", 8)),
        ev(10, 1, 0, waking(8, 0)), // 8 is still current on CPU 0
        ev(12, 1, 0, wakeup_ev(8, 0)),
        ev(50, 0, 8, switch(8, "S", 0)),
        ev(60, 1, 0, waking(8, 0)), // now a real one
        ev(90, 0, 0, switch(0, "R", 8)),
    ]);
    assert_eq!(m.counts().wakes_of_running, 1);
    assert_eq!(out.wakes.len(), 1);
    assert_eq!(out.wakes[0].latency(), 30);
}

#[test]
fn missed_switch_out_keeps_the_wakeup() {
    // 8 runs on CPU 0; its switch-out there is missing; it is woken and runs on CPU 1.
    let (m, out) = run(&[
        ev(0, 0, 0, switch(0, "R", 8)),
        ev(10, 1, 9, waking(8, 0)),
        ev(
            11,
            1,
            9,
            EventKind::SchedMigrateTask {
                comm: comm(8),
                pid: 8,
                prio: 120,
                orig_cpu: 0,
                dest_cpu: 1,
            },
        ),
        ev(12, 1, 9, wakeup_ev(8, 1)),
        ev(20, 1, 9, switch(9, "S", 8)),
        ev(40, 0, 0, EventKind::SoftirqRaise { vec: 1 }),
    ]);
    let c = m.counts();
    assert_eq!(c.anomalies_on(AnomalyKind::RunningElsewhere, 0), 1);
    assert_eq!(c.anomalies_on(AnomalyKind::ImplicitSwitchIn, 0), 1);
    assert_eq!(out.wakes.len(), 1);
    assert_eq!((out.wakes[0].latency(), out.wakes[0].cpu), (10, 1));
    assert_eq!(out.migrations.len(), 1);
    // CPU 0: 8 until it showed up elsewhere, then idle from there (the missing switch).
    let cpu0: Vec<_> = out
        .slices
        .iter()
        .filter(|s| s.cpu == 0)
        .map(|s| (s.tid, s.start, s.end))
        .collect();
    assert_eq!(cpu0, [(0, 0, 0), (8, 0, 20), (0, 20, 40)]);
    assert!(out.blinds.is_empty());
}

#[test]
fn time_going_backwards_is_counted_and_clamped() {
    let (m, out) = run(&[
        ev(100, 0, 1, switch(1, "S", 2)),
        ev(90, 0, 2, switch(2, "S", 1)),
    ]);
    assert_eq!(m.counts().anomalies_of(AnomalyKind::TimeBackwards), 1);
    let s2 = out.slices.iter().find(|s| s.tid == 2).unwrap();
    assert_eq!((s2.start, s2.end), (100, 100));
}

#[test]
fn function_graph_calls_and_self_time() {
    let entry = |f: &str, depth| EventKind::FuncEntry {
        func: jitterlab_trace::Sym {
            addr: 0,
            name: Some(f.into()),
        },
        depth,
    };
    let ret = |depth, d| EventKind::FuncReturn {
        func: jitterlab_trace::Sym::default(),
        depth,
        duration: Some(d),
    };
    let (m, out) = run(&[
        ev(0, 0, 5, entry("outer", 0)),
        ev(10, 0, 5, entry("leaf+0x10", 1)),
        ev(30, 0, 5, ret(1, 20)),
        ev(40, 0, 5, entry("leaf", 1)),
        ev(45, 0, 5, ret(1, 5)),
        ev(100, 0, 5, ret(0, 100)),
        ev(110, 0, 5, ret(0, 1)), // no entry
    ]);
    let calls: Vec<_> = out
        .funcs
        .iter()
        .map(|f| (&*f.func, f.duration, f.self_ns, f.path.len()))
        .collect();
    assert_eq!(
        calls,
        [
            ("leaf", 20, 20, 2),
            ("leaf", 5, 5, 2),
            ("outer", 100, 75, 1)
        ]
    );
    assert_eq!(out.funcs[0].parent.as_deref(), Some("outer"));
    assert_eq!(m.counts().anomalies_of(AnomalyKind::UnmatchedFuncReturn), 1);
}

#[test]
fn nothing_fed_reports_nothing() {
    let (m, out) = run(&[]);
    assert!(out.slices.is_empty());
    assert_eq!(m.counts().total(), 0);
}

/// Random event soup: never a panic, and every CPU's time adds up to its span.
#[test]
fn random_events_never_break_the_invariants() {
    use jitterlab_analyze::{Options, Section};
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for round in 0..20 {
        let mut ts = 1_000u64;
        let mut events = Vec::new();
        for _ in 0..5_000 {
            ts = if next(50) == 0 {
                ts.saturating_sub(next(500))
            } else {
                ts + next(2_000)
            };
            let cpu = next(3) as u32;
            let pid = next(6) as i32 - 1;
            let other = next(6) as i32;
            let kind = match next(16) {
                0 => switch(
                    pid.max(0),
                    ["R", "R+", "S", "D", "X"][next(5) as usize],
                    other,
                ),
                1 => waking(other, next(3) as u32),
                2 => wakeup_ev(other, next(3) as u32),
                3 => irq_entry(next(3) as u32),
                4 => irq_exit(next(3) as u32),
                5 => EventKind::SoftirqRaise {
                    vec: next(11) as u32,
                },
                6 => EventKind::SoftirqEntry {
                    vec: next(11) as u32,
                },
                7 => EventKind::SoftirqExit {
                    vec: next(11) as u32,
                },
                8 => EventKind::Lost {
                    count: Some(next(10)),
                },
                9 => EventKind::SchedProcessExit {
                    comm: comm(other),
                    pid: other,
                    prio: 120,
                },
                10 => EventKind::SchedProcessFork {
                    parent_comm: comm(pid),
                    parent_pid: pid,
                    child_comm: comm(other),
                    child_pid: other,
                },
                11 => EventKind::SchedMigrateTask {
                    comm: comm(other),
                    pid: other,
                    prio: 120,
                    orig_cpu: next(3) as u32,
                    dest_cpu: next(3) as u32,
                },
                12 => EventKind::Print {
                    ip: 0,
                    text: "jitterlab: latency 9 us > 1 us on cpu 0".into(),
                },
                13 => EventKind::FuncEntry {
                    func: jitterlab_trace::Sym {
                        addr: next(4),
                        name: None,
                    },
                    depth: next(4) as u32,
                },
                14 => EventKind::FuncReturn {
                    func: jitterlab_trace::Sym::default(),
                    depth: next(4) as u32,
                    duration: [None, Some(next(5_000))][next(2) as usize],
                },
                _ => EventKind::HrtimerExpireEntry {
                    hrtimer: 1,
                    now: 0,
                    function: Default::default(),
                },
            };
            let flags = [0, Flags::HARDIRQ, Flags::SOFTIRQ, Flags::IRQS_OFF][next(4) as usize];
            events.push(evf(ts, cpu, pid, flags, kind));
        }
        let o = Options {
            sections: Section::ALL.to_vec(),
            ..Options::default()
        };
        let r = report(events, &o);
        for c in &r.cpus.unwrap().cpus {
            assert_eq!(
                c.busy_ns + c.idle_ns + c.unknown_ns,
                c.span_ns,
                "round {round}: {c:?}"
            );
            assert_eq!(c.load.iter().sum::<u64>(), c.busy_ns, "round {round}");
        }
        let s = r.summary.unwrap();
        assert_eq!(s.events, 5_000);
        for t in r.tasks.unwrap().tasks {
            if let Some(w) = t.wakeups {
                assert!(w.min_ns <= w.p50_ns && w.p50_ns <= w.p99_ns && w.p99_ns <= w.max_ns);
            }
        }
    }
}
