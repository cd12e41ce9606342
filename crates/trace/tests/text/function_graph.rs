//! function_graph text, and trace-cmd report of it.

use super::*;

/// Per function: calls, inclusive ns, self ns (inclusive minus the children's inclusive),
/// folded from FuncEntry/FuncReturn per task (the idle task of each CPU apart) as the
/// function statistics analysis would.
fn function_stats(events: &[Event]) -> HashMap<String, (u32, u64, u64)> {
    let mut stacks: HashMap<(u32, i32), Vec<(String, u64)>> = HashMap::new();
    let task = |e: &Event| {
        if e.pid > 0 {
            (u32::MAX, e.pid)
        } else {
            (e.cpu, e.pid)
        }
    };
    let mut stats: HashMap<String, (u32, u64, u64)> = HashMap::new();
    for e in events {
        match &e.kind {
            EventKind::FuncEntry { func, .. } => {
                let name = func.name.as_deref().unwrap_or("?").to_string();
                stacks.entry(task(e)).or_default().push((name, 0));
            }
            EventKind::FuncReturn { func, duration, .. } => {
                let d = duration.unwrap();
                let stack = stacks.entry(task(e)).or_default();
                let (name, children) = match stack.pop() {
                    Some(f) => f,
                    None => (func.name.as_deref().unwrap_or("?").to_string(), 0),
                };
                if let Some(n) = func.name.as_deref() {
                    assert_eq!(n, name);
                }
                if let Some(parent) = stack.last_mut() {
                    parent.1 += d;
                }
                let s = stats.entry(name).or_default();
                s.0 += 1;
                s.1 += d;
                s.2 += d - children;
            }
            _ => {}
        }
    }
    stats
}

fn func_events(events: &[Event]) -> Vec<(u64, &str, u32, Option<u64>, bool)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::FuncEntry { func, depth } => Some((
                e.ts,
                func.name.as_deref().unwrap_or("?"),
                *depth,
                None,
                true,
            )),
            EventKind::FuncReturn {
                func,
                depth,
                duration,
            } => Some((
                e.ts,
                func.name.as_deref().unwrap_or("?"),
                *depth,
                *duration,
                false,
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn fgraph_with_abstime_the_smi_hole_is_self_time_of_schedule() {
    let r = read("fgraph-smi-abstime.txt");
    assert_eq!(r.meta.format, "function_graph text");
    assert_time_ordered(&r.events);
    let f = func_events(&r.events);
    assert_eq!(f.len(), 38);
    assert_eq!(f[0], (641_941_738_000, "schedule", 0, None, true));
    assert_eq!(f[1], (641_941_738_000, "__schedule", 1, None, true));
    assert_eq!(f[2], (641_941_739_000, "rcu_qsctr_inc", 2, None, true));
    assert_eq!(
        f[3],
        (641_941_739_421, "rcu_qsctr_inc", 2, Some(421), false)
    );
    let deepest = f.iter().find(|x| x.1 == "sched_avg_update").unwrap();
    assert_eq!(deepest.2, 4);
    // The return lines' own times.
    assert_eq!(
        f[36],
        (641_969_868_000, "__schedule", 1, Some(28_130_910), false)
    );
    assert_eq!(
        f[37],
        (641_969_870_000, "schedule", 0, Some(28_132_070), false)
    );
    // 641.941756 pick_next_task_fair, then 28 ms later 641.969863 pick_next_task_rt.
    let gap = f.iter().find(|x| x.1 == "pick_next_task_rt").unwrap().0
        - f.iter().find(|x| x.1 == "pick_next_task_fair").unwrap().0;
    assert_eq!(gap, 28_107_000);
    let s = function_stats(&r.events);
    assert_eq!(s["__schedule"], (1, 28_130_910, 28_119_678));
    assert_eq!(s["schedule"], (1, 28_132_070, 1_160));
    assert_eq!(s["pick_next_task_fair"], (2, 845, 845));
    assert_eq!(s["deactivate_task"], (1, 3_577, 925));
    assert_eq!(s.len(), 18);
    assert!(r
        .events
        .iter()
        .all(|e| e.cpu == 0 && e.pid == -1 && e.flags == Flags(0)));
}

#[test]
fn fgraph_without_abstime_irq_task_switch_lost_markers() {
    let bytes = data("fgraph-ehci-softirq.txt");
    let mut reader = FgraphReader::new(&bytes[..], TextOptions::named("ehci")).unwrap();
    assert!(reader.relative_times());
    let r = drain(&mut reader).unwrap();
    assert!(r.meta.format.contains("relative"), "{}", r.meta.format);
    assert_time_ordered(&r.events);
    assert_eq!(r.stats.lost, vec![Some(0), Some(17)]);
    let s = function_stats(&r.events);
    assert_eq!(s["qh_completions"], (12, 41_375, 41_375));
    assert_eq!(s["ehci_work"], (1, 49_250, 6_000));
    assert_eq!(s["run_timer_softirq"], (1, 58_625, 3_000));
    assert_eq!(s["asm_do_IRQ"], (1, 82_875, 8_500));
    assert_eq!(s["sys_rt_sigtimedwait"], (1, 2_513_625, 125));
    assert_eq!(s["schedule"], (1, 2_497_250, 2_496_250));
    // Markers: + 24.000, # 2497.250, @ 119760.2, $ 3594274.
    assert_eq!(s["cpu_idle"].1, 24_000);
    assert_eq!(s["ksoftirqd_should_run"], (1, 119_760_200, 119_760_200));
    // A `}` whose entry was lost: its callees are not paired with it.
    assert_eq!(s["?"], (1, 3_594_274_000, 3_594_274_000));
    assert_eq!(reader.resyncs(), 0);

    let ev = &r.events;
    let other = |name: &'static str| {
        ev.iter()
            .filter(move |e| matches!(&e.kind, EventKind::Other { name: n, .. } if &**n == name))
    };
    let irq_in: Vec<_> = other(GRAPH_IRQ_ENTRY).collect();
    let irq_out: Vec<_> = other(GRAPH_IRQ_EXIT).collect();
    assert_eq!((irq_in.len(), irq_out.len()), (1, 1));
    // Everything between them ran in hard-irq context, on the idle task.
    let from = ev.iter().position(|e| std::ptr::eq(e, irq_in[0])).unwrap();
    let to = ev.iter().position(|e| std::ptr::eq(e, irq_out[0])).unwrap();
    let inside: Vec<_> = ev[from..=to].iter().filter(|e| e.cpu == 0).collect();
    // The two irq lines and 24 calls (12 of them qh_completions).
    assert_eq!(inside.len(), 2 + 2 * 24);
    assert!(inside
        .iter()
        .all(|e| e.flags == Flags(Flags::HARDIRQ) && e.pid == 0));
    // Relative time: the asm_do_IRQ return is its entry plus its duration.
    let f = func_events(ev);
    let asm: Vec<_> = f.iter().filter(|x| x.1 == "asm_do_IRQ").collect();
    assert_eq!(asm[1].0 - asm[0].0, 82_875);
    let switches: Vec<_> = other(GRAPH_TASK_SWITCH)
        .map(|e| match &e.kind {
            EventKind::Other { fields, .. } => (
                e.pid,
                fields.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>(),
            ),
            _ => unreachable!(),
        })
        .collect();
    let s = |t: &str| Value::Str(t.into());
    assert_eq!(
        switches,
        [
            (
                0,
                vec![s("cyclict"), Value::Int(2170), s("<idle>"), Value::Int(0)]
            ),
            (
                2170,
                vec![s("<idle>"), Value::Int(0), s("cyclict"), Value::Int(2170)]
            ),
        ]
    );
    // The task's call stack survives its sleep: `schedule` returns at depth 1 after the idle
    // task ran at depth 0.
    assert!(f.contains(&(
        f.iter().find(|x| x.1 == "schedule" && !x.4).unwrap().0,
        "schedule",
        1,
        Some(2_497_250),
        false
    )));
    assert_eq!(f.iter().find(|x| x.1 == "finish_task_switch").unwrap().2, 2);
    // Events printed as comments.
    let typed: Vec<_> = ev
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::SchedSwitch { .. } | EventKind::SchedWakeup(_) | EventKind::Print { .. }
            )
        })
        .map(|e| e.kind.clone())
        .collect();
    assert_eq!(typed.len(), 3);
    assert!(matches!(
        typed[0],
        EventKind::SchedSwitch {
            prev_pid: 2170,
            next_pid: 0,
            ..
        }
    ));
    assert!(matches!(
        typed[1],
        EventKind::SchedWakeup(Wakeup {
            pid: 2170,
            target_cpu: 0,
            ..
        })
    ));
    assert_eq!(
        typed[2],
        EventKind::Print {
            ip: 0,
            text: "wake cyclictest".into()
        }
    );
    // CPU 1 after its lost events: a `}` naming a function whose entry was lost, and a
    // `}` naming none.
    let cpu1: Vec<_> = func_events(
        &ev.iter()
            .filter(|e| e.cpu == 1)
            .cloned()
            .collect::<Vec<_>>(),
    )
    .into_iter()
    .map(|x| (x.1.to_string(), x.2, x.3, x.4))
    .collect();
    assert_eq!(
        cpu1,
        [
            ("run_ksoftirqd".to_string(), 0, None, true),
            ("__do_softirq".to_string(), 1, None, true),
            ("__do_softirq".to_string(), 1, Some(3_125), false),
            ("run_ksoftirqd".to_string(), 0, Some(7_750), false),
            (
                "ksoftirqd_should_run".to_string(),
                0,
                Some(119_760_200),
                false
            ),
            ("kthread_should_stop".to_string(), 1, None, true),
            ("kthread_should_stop".to_string(), 1, Some(375), false),
            ("?".to_string(), 0, Some(3_594_274_000), false),
        ]
    );
    let lost = ev
        .iter()
        .position(|e| matches!(e.kind, EventKind::Lost { .. }))
        .unwrap();
    assert_eq!(
        (ev[lost].cpu, &ev[lost].kind),
        (1, &EventKind::Lost { count: Some(17) })
    );
    assert!(
        matches!(&ev[lost + 1].kind, EventKind::FuncReturn { func, .. } if func.name.as_deref() == Some("ksoftirqd_should_run"))
    );
}

#[test]
fn fgraph_proc_latency_tail_and_retval_columns() {
    let r = read("fgraph-proc-tail.txt");
    assert_time_ordered(&r.events);
    let f = func_events(&r.events);
    let s = function_stats(&r.events);
    assert_eq!(s["do_sys_open"], (1, 61_770, 61_770 - 7_876 - 3_177));
    assert_eq!(s["getname"], (1, 7_876, 7_876 - 2_478 - 3_807));
    assert_eq!(s["might_fault"], (1, 616, 616));
    assert_eq!(
        f.last().unwrap(),
        &(17_284_993_713_000, "do_sys_open", 0, Some(61_770), false)
    );
    for e in &r.events {
        match e.cpu {
            1 => assert_eq!(e.pid, 4802),
            3 => assert_eq!(e.pid, 1977),
            c => panic!("cpu {c}"),
        }
    }
    let lock = r.events.iter().find(|e| e.cpu == 3).unwrap();
    assert_eq!(
        (lock.flags, lock.preempt_count),
        (Flags(Flags::IRQS_OFF), 1)
    );
    let spin = r.events.iter().find(|e| matches!(&e.kind, EventKind::FuncEntry { func, .. } if func.name.as_deref() == Some("_spin_lock"))).unwrap();
    assert_eq!(spin.preempt_count, 1);
    let print = r
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::Print { .. }))
        .unwrap();
    assert_eq!(
        (print.cpu, &print.kind),
        (
            3,
            &EventKind::Print {
                ip: 0,
                text: "ready".into()
            }
        )
    );
}

#[test]
fn trace_cmd_report_of_a_function_graph_trace() {
    let r = read("fgraph-report.txt");
    assert_eq!(
        r.meta,
        TraceMeta {
            format: "trace-cmd report text".into(),
            cpus: Some(2)
        }
    );
    assert_eq!(r.stats.lost, vec![Some(0), Some(3)]);
    assert_time_ordered(&r.events);
    let s = function_stats(&r.events);
    assert_eq!(
        s["sys_rt_sigtimedwait"],
        (1, 2_513_625, 2_513_625 - 8_375 - 5_250)
    );
    assert_eq!(s["sys_clock_gettime"], (1, 14_250, 14_250));
    assert_eq!(s["cpu_idle"], (1, 13_500, 13_500));
    let f = func_events(&r.events);
    assert_eq!(f[1], (504_294_649_000, "lock_timer", 1, None, true));
    assert_eq!(f[2], (504_294_651_000, "lock_timer", 1, Some(2_000), false));
    let rs = f.iter().find(|x| x.1 == "recalc_sigpending").unwrap();
    assert_eq!(rs.2, 1);
    let sw: Vec<_> = r
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::SchedSwitch { .. }))
        .collect();
    assert_eq!(sw.len(), 2);
    assert!(matches!(
        sw[0].kind,
        EventKind::SchedSwitch {
            prev_pid: 2170,
            prev_state: TaskState(1),
            ..
        }
    ));
}

#[test]
fn seed_slides_strict_names_the_first_bad_line_lenient_reads_the_rest() {
    let bytes = data("fgraph-slides.txt");
    let err = read_with(
        &bytes,
        TextKind::FunctionGraph,
        TextOptions::named("fgraph-slides.txt"),
    )
    .err()
    .unwrap();
    assert_eq!(
        (err.kind, err.location),
        (ErrorKind::Syntax, Location::Line(4)),
        "{err}"
    );
    assert_eq!(err.source_name, "fgraph-slides.txt");
    // The message quotes the line.
    assert!(err.message.contains(". . ."), "{err}");
    let lenient = TextOptions {
        lenient: true,
        ..TextOptions::named("fgraph-slides.txt")
    };
    let r = read_with(&bytes, TextKind::FunctionGraph, lenient).unwrap();
    // `. . .` and the 16 tab-separated lines of the first attempt.
    assert_eq!(r.stats.skipped, 17);
    let f = func_events(&r.events);
    let at = |name: &str| f.iter().find(|x| x.1 == name && x.4).unwrap().0;
    assert_eq!(
        at("pick_next_task_rt") - at("pick_next_task_fair"),
        28_107_000
    );
    assert_eq!(f.iter().filter(|x| x.4).count(), 25);
}
