//! The analyses (report sections) on small hand-made traces.

use jitterlab_analyze::{analysis::tasks::GroupBy, Options, Pattern, Section, Waker};
use jitterlab_trace::{Event, EventKind};

use crate::util::*;

/// Two CPUs: IRQ 36 on CPU 1 wakes task 11 (via BLOCK) and task 12 (in the handler) three
/// times each; task 20 hogs CPU 0 and is preempted once.
fn two_cpus() -> Vec<Event> {
    let mut v = vec![
        ev(0, 0, 20, EventKind::SoftirqRaise { vec: 9 }),
        ev(0, 1, 0, EventKind::SoftirqRaise { vec: 9 }),
    ];
    for i in 0..3u64 {
        let t = 1_000 + i * 10_000;
        v.extend([
            ev(t, 1, 0, irq_entry(36)),
            ev(t + 100, 1, 0, EventKind::SoftirqRaise { vec: 4 }),
            ev(t + 150, 1, 0, waking(12, 1)),
            ev(t + 200, 1, 0, irq_exit(36)),
            ev(t + 300, 1, 0, EventKind::SoftirqEntry { vec: 4 }),
            ev(t + 400, 1, 0, waking(11, 1)),
            ev(t + 500, 1, 0, EventKind::SoftirqExit { vec: 4 }),
            ev(t + 1_200, 1, 0, switch(0, "R", 12)),
            ev(t + 2_000, 1, 12, switch(12, "R+", 11)),
            ev(t + 3_000, 1, 11, switch(11, "S", 12)),
            ev(t + 4_000, 1, 12, switch(12, "S", 0)),
        ]);
    }
    v.push(ev(15_000, 0, 20, switch(20, "R+", 21)));
    v.push(ev(16_000, 0, 21, switch(21, "S", 20)));
    v.push(ev(40_000, 1, 0, EventKind::SoftirqRaise { vec: 9 }));
    v.sort_by_key(|e| e.ts);
    v
}

#[test]
fn cpu_times_add_up_to_the_span() {
    let r = report(two_cpus(), &Options::default());
    let cpus = r.cpus.unwrap();
    assert_eq!(cpus.cpus.len(), 2);
    for c in &cpus.cpus {
        assert_eq!(c.busy_ns + c.idle_ns + c.unknown_ns, c.span_ns, "{c:?}");
        assert_eq!(c.span_ns, 40_000);
        assert_eq!(c.load.iter().sum::<u64>(), c.busy_ns);
    }
    assert_eq!(cpus.cpus[0].busy_ns, 40_000);
    assert_eq!(cpus.cpus[1].busy_ns, 3 * 2_800);
    assert_eq!(cpus.cpus[1].hardirq_ns, 3 * 1_000 - 3 * 800);
    assert_eq!(cpus.cpus[1].softirq_ns, 3 * 200);
    assert_eq!((cpus.cpus[1].irqs, cpus.cpus[1].softirqs), (3, 3));
    assert!(cpus.cpus[0].load.len() <= Options::default().load_buckets);
}

#[test]
fn tasks_section() {
    let r = report(two_cpus(), &Options::default());
    let t = r.tasks.unwrap();
    assert_eq!(t.group_by, GroupBy::Comm);
    let t12 = t.tasks.iter().find(|t| t.tid == 12).unwrap();
    assert_eq!(t12.run_ns, 3 * (800 + 1_000));
    assert_eq!(t12.instances.unwrap().count, 6);
    assert_eq!((t12.preempted, t12.slept), (3, 3));
    let w = t12.wakeups.unwrap();
    assert_eq!((w.count, w.min_ns, w.max_ns), (3, 1_050, 1_050));
    assert_eq!(t12.wakers[0].waker, Some(Waker::Hardirq { irq: Some(36) }));
    assert_eq!(t12.wakers[0].name, "irq 36 dev36");
    // 12 is switched in from idle each time, 11 from 12: the split says which.
    assert_eq!(t12.wakeups_from_idle.unwrap().count, 3);
    assert!(t12.wakeups_from_task.is_none());
    let t11 = t.tasks.iter().find(|t| t.tid == 11).unwrap();
    assert_eq!(t11.wakeups.unwrap().avg_ns, 1_600);
    assert_eq!(t11.wakeups_from_task.unwrap().count, 3);
    assert!(t11.wakeups_from_idle.is_none());
    assert_eq!(t11.wakers[0].name, "softirq BLOCK (irq 36 dev36)");
    let t20 = &t.tasks[0];
    assert_eq!((t20.tid, t20.run_ns, t20.preempted), (20, 39_000, 1));
    assert_eq!(t.wakeups.unwrap().count, 6);
    // --task filters the rows.
    let only = report(
        two_cpus(),
        &Options {
            task: Some(Pattern::new("t1?")),
            ..Options::default()
        },
    );
    let tids: Vec<i32> = only.tasks.unwrap().tasks.iter().map(|t| t.tid).collect();
    assert_eq!(tids, [12, 11]);
}

#[test]
fn tgids_group_threads_under_processes() {
    let mut o = Options::default();
    o.tgids.extend([(11, 11), (12, 11), (20, 20), (21, 20)]);
    let t = report(two_cpus(), &o).tasks.unwrap();
    assert_eq!(t.group_by, GroupBy::Tgid);
    let g: Vec<_> = t
        .groups
        .iter()
        .map(|g| (g.tgid, g.threads.clone(), g.comm.clone()))
        .collect();
    assert_eq!(
        g,
        [
            (Some(20), vec![20, 21], "t20".into()),
            (Some(11), vec![11, 12], "t11".into())
        ]
    );
}

#[test]
fn irq_section_and_chains() {
    let r = report(two_cpus(), &Options::default());
    let irqs = r.irqs.unwrap();
    assert_eq!(irqs.irqs.len(), 1);
    let i = &irqs.irqs[0];
    assert_eq!(
        (i.irq, i.name.as_str(), i.count, i.wakeups),
        (36, "dev36", 3, 3)
    );
    assert_eq!(i.duration.unwrap().avg_ns, 200);
    let block = irqs.softirqs.iter().find(|s| s.name == "BLOCK").unwrap();
    assert_eq!(
        (
            block.count,
            block.raised_by[0].irq,
            block.raised_by[0].count
        ),
        (3, Some(36), 3)
    );
    assert_eq!(block.raise_to_entry.unwrap().max_ns, 200);
    assert_eq!(irqs.chains.len(), 2);
    for c in &irqs.chains {
        assert_eq!(c.count, 3);
        let l = c.latency.unwrap();
        match c.tid {
            // exit at +200, 12 in at +1200, 11 in at +2000
            12 => assert_eq!((c.via_hardirq, l.min_ns, l.max_ns), (3, 1_000, 1_000)),
            11 => assert_eq!((c.via_softirq, l.min_ns, l.max_ns), (3, 1_800, 1_800)),
            t => panic!("unexpected chain to {t}"),
        }
        assert_eq!(c.histogram.iter().map(|b| b.count).sum::<u64>(), 3);
    }
    // Focus on one pair.
    let o = Options {
        irq: Some(Pattern::new("dev*")),
        task: Some(Pattern::new("11")),
        sections: vec![Section::Irqs],
        ..Options::default()
    };
    let r = report(two_cpus(), &o);
    assert!(r.summary.is_none() && r.tasks.is_none());
    let chains = r.irqs.unwrap().chains;
    assert_eq!(chains.len(), 1);
    assert_eq!(chains[0].tid, 11);
}

#[test]
fn summary_section() {
    let r = report(two_cpus(), &Options::default());
    let s = r.summary.unwrap();
    assert_eq!(
        (s.start_ns, s.end_ns, s.span_ns, s.cpus),
        (0, 40_000, 40_000, 2)
    );
    assert_eq!(s.events, 2 + 33 + 3);
    assert_eq!(s.events_by_type[0].name, "sched_switch");
    assert_eq!(s.events_by_type[0].count, 14);
    assert_eq!(s.events_per_cpu, [3, 35]);
    assert_eq!(s.lost_per_cpu, [Some(0), Some(0)]);
    assert_eq!(s.irqs.len(), 1);
    assert_eq!((s.wakeups, s.wakeups_inferred), (6, 0));
    assert!(s.anomalies.is_empty(), "{:?}", s.anomalies);
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["events_by_type"][0]["name"], "sched_switch");
}

/// Task 7 (rt, prio 9) woken on CPU 0 three times; `dd`-like task 30 (prio 120) and the
/// higher-priority 40 (prio 5) in the way; a `jitterlab:` marker after the last wake-up.
fn blame_trace() -> Vec<Event> {
    let mut v = vec![
        ev(0, 0, 7, switch_prio(7, 9, "S", 0, 120)),
        // 1: 10 us, CPU idle.
        ev(1_000, 1, 0, waking(7, 0)),
        ev(11_000, 0, 0, switch_prio(0, 120, "R", 7, 9)),
        ev(12_000, 0, 7, switch_prio(7, 9, "S", 40, 5)),
        // 2: 300 us behind the higher-priority 40, with IRQ 3 in between.
        ev(20_000, 1, 0, waking(7, 0)),
        ev(50_000, 0, 40, irq_entry(3)),
        ev(60_000, 0, 40, irq_exit(3)),
        ev(320_000, 0, 40, switch_prio(40, 5, "S", 7, 9)),
        ev(321_000, 0, 7, switch_prio(7, 9, "S", 0, 120)),
        // 3: 500 us on an idle CPU with no event at all.
        ev(400_000, 1, 0, waking(7, 0)),
        ev(900_000, 0, 0, switch_prio(0, 120, "R", 7, 9)),
        ev(
            901_000,
            0,
            7,
            EventKind::Print {
                ip: 0,
                text: "jitterlab: latency 500 us > 60 us on cpu 0".into(),
            },
        ),
        ev(902_000, 0, 7, switch_prio(7, 9, "S", 0, 120)),
    ];
    v.sort_by_key(|e| e.ts);
    v
}

#[test]
fn blame_worst_and_marked() {
    let o = Options {
        blame: 2,
        sections: vec![Section::Blame],
        ..Options::default()
    };
    let b = report(blame_trace(), &o).blame.unwrap();
    use jitterlab_analyze::analysis::blame::{Reason, StepKind};
    let lat: Vec<_> = b.spikes.iter().map(|s| (s.reason, s.latency_ns)).collect();
    assert_eq!(
        lat,
        [
            (Reason::Worst, 500_000),
            (Reason::Worst, 300_000),
            (Reason::Marker, 500_000)
        ]
    );
    // The idle CPU that logged nothing.
    let gap = &b.spikes[0];
    assert!(gap.verdict.contains("no events"), "{}", gap.verdict);
    assert_eq!(gap.breakdown.gaps_ns, 500_000);
    assert!(gap.timeline.iter().any(|s| s.kind == StepKind::Gap));
    // The higher-priority task in the way, and the IRQ.
    let hp = &b.spikes[1];
    assert!(
        hp.verdict
            .starts_with("t40-40 (higher priority) ran for 100%"),
        "{}",
        hp.verdict
    );
    assert_eq!(
        (hp.breakdown.tasks_ns, hp.breakdown.hardirq_ns),
        (300_000, 10_000)
    );
    let kinds: Vec<_> = hp
        .timeline
        .iter()
        .map(|s| (s.kind, s.start_ns, s.end_ns))
        .collect();
    assert!(
        kinds.contains(&(StepKind::Irq { irq: 3 }, 50_000, 60_000)),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&(
            StepKind::Task {
                tid: 40,
                prio: Some(5)
            },
            20_000,
            320_000
        )),
        "{kinds:?}"
    );
    // The marker names the measuring thread's last wake-up.
    let m = &b.spikes[2];
    assert_eq!(
        m.marker.as_deref(),
        Some("jitterlab: latency 500 us > 60 us on cpu 0")
    );
    assert_eq!((m.tid, m.waking_ns, m.cpu), (7, 400_000, 0));
}

/// The probe's latency runs from when its sample was due, not from the waking: a timer
/// the hypervisor delivered late wakes the probe 600 us after it was due, and the
/// switch-in follows 10 us later. The marked spike's window starts at the due time (the
/// marker's time less the latency it reports), so that the late timer is in it.
#[test]
fn a_marked_spike_starts_when_its_sample_was_due() {
    let marker = |ts: u64, text: &str| {
        ev(
            ts,
            0,
            7,
            EventKind::Print {
                ip: 0,
                text: text.into(),
            },
        )
    };
    let mut v = vec![
        ev(0, 0, 7, switch(7, "S", 0)),
        // Due at 100 us; nothing on CPU 0 until the late timer's waking at 700 us.
        ev(700_000, 0, 0, waking(7, 0)),
        ev(710_000, 0, 0, switch(0, "R", 7)),
        marker(
            711_000,
            "jitterlab: latency 611 us > 500 us on cpu 0 (611000 ns)",
        ),
        ev(712_000, 0, 7, switch(7, "S", 0)),
    ];
    v.sort_by_key(|e| e.ts);
    let o = Options {
        blame: 0,
        sections: vec![Section::Blame],
        ..Options::default()
    };
    let b = report(v, &o).blame.unwrap();
    let m = &b.spikes[0];
    assert_eq!(
        (m.waking_ns, m.due_ns, m.switch_in_ns, m.latency_ns),
        (700_000, Some(100_000), 710_000, 610_000)
    );
    assert!(m.verdict.contains("no events"), "{}", m.verdict);
    assert_eq!(m.breakdown.gaps_ns, 600_000);

    // The due sample's wake-up is not in the trace at all (the last one came before it
    // was due): the window runs from the due time to the marker, an upper bound.
    let mut v = vec![
        ev(0, 0, 0, waking(7, 0)),
        ev(1_000, 0, 0, switch(0, "R", 7)),
        ev(2_000, 0, 7, switch(7, "S", 0)),
        marker(
            900_000,
            "jitterlab: latency 800 us > 500 us on cpu 0 (800000 ns)",
        ),
    ];
    v.sort_by_key(|e| e.ts);
    let b = report(v, &o).blame.unwrap();
    let m = &b.spikes[0];
    assert_eq!(
        (
            m.waking_ns,
            m.due_ns,
            m.switch_in_ns,
            m.latency_ns,
            m.inferred
        ),
        (100_000, Some(100_000), 900_000, 800_000, true)
    );
}

/// A wake-up whose switch-in the trace does not have (this kernel logs few switches out
/// of idle) is bounded only: its window runs to the woken task's next event and holds
/// its own run, which the trace shows as the idle it woke from. `blame_recorded` blames
/// the worst of those whose switch-in was recorded.
#[test]
fn blame_recorded_switch_ins_only() {
    let mut v = vec![
        ev(0, 0, 7, switch_prio(7, 9, "S", 0, 120)),
        // Woken on the idle CPU, switched in unrecorded: its next event, 800 us on.
        ev(1_000, 0, 0, waking(7, 0)),
        ev(801_000, 0, 7, switch_prio(7, 9, "S", 30, 120)),
        // Woken while 30 ran, switched in 200 us later, recorded.
        ev(900_000, 0, 30, waking(7, 0)),
        ev(1_100_000, 0, 30, switch_prio(30, 120, "R", 7, 9)),
        ev(1_101_000, 0, 7, switch_prio(7, 9, "S", 30, 120)),
    ];
    v.sort_by_key(|e| e.ts);
    let o = |recorded| Options {
        blame: 1,
        blame_recorded: recorded,
        sections: vec![Section::Blame],
        ..Options::default()
    };
    let all = report(v.clone(), &o(false)).blame.unwrap();
    assert_eq!(
        (all.spikes[0].latency_ns, all.spikes[0].inferred),
        (800_000, true)
    );
    assert!(
        all.spikes[0].verdict.contains("idle"),
        "{}",
        all.spikes[0].verdict
    );
    let recorded = report(v, &o(true)).blame.unwrap();
    assert_eq!(recorded.spikes.len(), 1);
    let s = &recorded.spikes[0];
    assert_eq!((s.latency_ns, s.inferred), (200_000, false));
    assert!(s.verdict.starts_with("t30-30 ("), "{}", s.verdict);
}
