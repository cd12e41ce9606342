//! The real traces of this machine (../shared/traces), checked against independent
//! computations written here over the kernel's own text of the same capture.

use jitterlab_analyze::{AnalyzeReport, AnomalyKind, Options};

use crate::util::*;

/// One line of the kernel's ftrace text, parsed without the trace crate.
struct Line<'a> {
    pid: i32,
    cpu: u32,
    /// Microseconds.
    us: u64,
    event: &'a str,
    fields: &'a str,
}

/// Parses `TASK-PID [CPU] FLAGS SECONDS.MICROS: EVENT: FIELDS`.
fn lines(text: &str) -> Vec<Line<'_>> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let open = l.find(" [").expect("[CPU]");
            let task = l[..open].trim();
            let pid = task
                .rsplit_once('-')
                .expect("TASK-PID")
                .1
                .parse()
                .expect("pid");
            let close = open + l[open..].find(']').expect("]");
            let cpu = l[open + 2..close].parse().expect("cpu");
            let mut rest = l[close + 1..].split_whitespace();
            let _flags = rest.next();
            let ts = rest.next().expect("timestamp").trim_end_matches(':');
            let (s, us) = ts.split_once('.').expect("s.us");
            let us = s.parse::<u64>().unwrap() * 1_000_000 + us.parse::<u64>().unwrap();
            let ev_at = l.find(&format!("{ts}: ")).unwrap() + ts.len() + 2;
            let (event, fields) = l[ev_at..].split_once(": ").unwrap_or((&l[ev_at..], ""));
            Line {
                pid,
                cpu,
                us,
                event: event.trim_end_matches(':'),
                fields,
            }
        })
        .collect()
}

/// `key=value` of a field list.
fn field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    fields
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

fn read(name: &str) -> String {
    std::fs::read_to_string(trace(name)).expect("read text trace")
}

/// cyclictest's measuring thread (prio 9) on CPU 1: its wake-ups, and their latencies
/// computed here from the text: waking -> the next line of CPU 1 that shows it current.
fn cyclictest_by_hand() -> (i32, Vec<u64>) {
    let text = read("cyclictest-idle.ftrace.txt");
    let lines = lines(&text);
    let tid: i32 = lines
        .iter()
        .find(|l| l.event == "sched_waking" && field(l.fields, "prio") == Some("9"))
        .and_then(|l| field(l.fields, "pid")?.parse().ok())
        .expect("a prio-9 cyclictest thread");
    let mut lat = Vec::new();
    let mut pending: Option<u64> = None;
    for l in &lines {
        let shows_it = l.cpu == 1
            && (l.pid == tid
                || (l.event == "sched_switch"
                    && field(l.fields, "next_pid") == Some(&tid.to_string())));
        if let (true, Some(w)) = (shows_it, pending) {
            lat.push(l.us - w);
            pending = None;
        }
        let wakes = l.event == "sched_waking" || l.event == "sched_wakeup_new";
        if wakes && field(l.fields, "pid") == Some(&tid.to_string()) && pending.is_none() {
            pending = Some(l.us);
        }
    }
    (tid, lat)
}

#[test]
fn cyclictest_idle_wakeups() {
    let (tid, by_hand) = cyclictest_by_hand();
    let n = by_hand.len() as u64;
    // 1000 loops (`-l 1000`) and the thread's first wake-up as a new task.
    assert_eq!(n, 1001, "wake-ups by hand");
    let max_us = *by_hand.iter().max().unwrap();
    let avg_us = by_hand.iter().sum::<u64>() as f64 / n as f64;
    for name in ["cyclictest-idle.v7.dat", "cyclictest-idle.ftrace.txt"] {
        let r = report_of(name, &Options::default());
        let tasks = r.tasks.as_ref().unwrap();
        let t = tasks
            .tasks
            .iter()
            .find(|t| t.tid == tid)
            .expect("the cyclictest thread");
        assert_eq!(t.cpus[0].cpu, 1);
        let w = t.wakeups.expect("wake-ups");
        assert_eq!(w.count, n, "{name}");
        // All but the first (a task -> task switch) inferred: this kernel logs no idle ->
        // cyclictest switch.
        assert_eq!(t.wakeups_inferred, n - 1, "{name}");
        assert!(w.min_ns >= 1_000 && w.max_ns < 1_000_000, "{name}: {w:?}");
        assert!((5_000..100_000).contains(&w.p50_ns), "{name}: {w:?}");
        // The same figures as by hand, within the microseconds of the text.
        assert!(
            w.max_ns.abs_diff(max_us * 1000) <= 1_000,
            "{name}: max {} vs {max_us} us",
            w.max_ns
        );
        assert!(
            (w.avg_ns as f64 - avg_us * 1000.0).abs() <= 1_000.0,
            "{name}: avg {} vs {avg_us} us",
            w.avg_ns
        );
        if name.ends_with(".txt") {
            assert_eq!(w.max_ns, max_us * 1000);
        }
    }
}

#[test]
fn cyclictest_idle_cpus_and_anomalies() {
    let r = report_of("cyclictest-idle.v7.dat", &Options::default());
    let s = r.summary.as_ref().unwrap();
    assert_eq!(s.events, 8324);
    assert_eq!(s.lost_per_cpu, [Some(0), Some(0)]);
    let implicit_cpu1: u64 = s
        .anomalies
        .iter()
        .filter(|a| a.kind == AnomalyKind::ImplicitSwitchIn && a.cpu == 1)
        .map(|a| a.count)
        .sum();
    // CPU 1 switches to idle 1114 times and never out of it (traces/README.md).
    assert!(implicit_cpu1 > 1000, "{implicit_cpu1}");
    for kind in [
        AnomalyKind::UnmatchedIrqExit,
        AnomalyKind::IrqExitMissing,
        AnomalyKind::SoftirqExitMissing,
    ] {
        assert!(s.anomalies.iter().all(|a| a.kind != kind), "{kind:?}");
    }
    for c in &r.cpus.as_ref().unwrap().cpus {
        assert_eq!(c.unknown_ns, 0);
        assert_eq!(c.busy_ns + c.idle_ns, c.span_ns, "CPU {}", c.cpu);
        assert!(c.idle_ns > c.span_ns * 9 / 10, "an idle machine: {c:?}");
    }
}

/// IRQ 36 -> BLOCK softirq -> sched_waking of dd, counted here from the text: wakings of
/// a `dd` inside a BLOCK softirq whose vector IRQ 36's handler raised on that CPU.
fn dd_chains_by_hand(text: &str) -> std::collections::BTreeMap<i32, u64> {
    let mut out = std::collections::BTreeMap::new();
    let mut in_irq36 = [false; 2];
    let mut raised_by_36 = [false; 2];
    let mut block_by_36 = [false; 2];
    let mut running = std::collections::HashMap::new(); // cpu -> pid current (common_pid)
    for l in lines(text) {
        let c = l.cpu as usize;
        match (l.event, field(l.fields, "next_pid")) {
            ("sched_switch", Some(next)) => running.insert(l.cpu, next.parse().unwrap()),
            _ => running.insert(l.cpu, l.pid),
        };
        match (l.event, field(l.fields, "irq"), field(l.fields, "vec")) {
            ("irq_handler_entry", Some("36"), _) => in_irq36[c] = true,
            ("irq_handler_exit", Some("36"), _) => in_irq36[c] = false,
            ("softirq_raise", _, Some("4")) if in_irq36[c] => raised_by_36[c] = true,
            ("softirq_entry", _, Some("4")) => {
                block_by_36[c] = raised_by_36[c];
                raised_by_36[c] = false;
            }
            ("softirq_exit", _, Some("4")) => block_by_36[c] = false,
            ("sched_waking", _, _) if block_by_36[c] && field(l.fields, "comm") == Some("dd") => {
                let pid: i32 = field(l.fields, "pid").unwrap().parse().unwrap();
                if !running.values().any(|&p| p == pid) {
                    *out.entry(pid).or_insert(0) += 1;
                }
            }
            _ => {}
        }
    }
    out
}

#[test]
fn disk_irq_stress_irq36_and_dd() {
    let text = read("disk-irq-stress.ftrace.txt");
    let entries = lines(&text)
        .iter()
        .filter(|l| l.event == "irq_handler_entry" && field(l.fields, "irq") == Some("36"))
        .count() as u64;
    let by_hand = dd_chains_by_hand(&text);
    assert!(by_hand.values().sum::<u64>() > 3000, "{by_hand:?}");
    for name in ["disk-irq-stress.v7.dat", "disk-irq-stress.ftrace.txt"] {
        let r = report_of(name, &Options::default());
        let irqs = r.irqs.as_ref().unwrap();
        let i36 = irqs.irqs.iter().find(|i| i.irq == 36).unwrap();
        assert_eq!(i36.name, "virtio1-req.0");
        assert_eq!(i36.count, entries, "{name}");
        let block = irqs.softirqs.iter().find(|s| s.name == "BLOCK").unwrap();
        assert!(
            block
                .raised_by
                .iter()
                .any(|r| r.irq == Some(36) && r.count > 3000),
            "{name}: {block:?}"
        );
        let dd: Vec<_> = irqs
            .chains
            .iter()
            .filter(|c| c.irq == 36 && c.comm == "dd")
            .collect();
        let biggest = dd.iter().map(|c| c.count).max().unwrap_or(0);
        assert!((1_000..10_000).contains(&biggest), "{name}: {dd:?}");
        for c in &dd {
            assert_eq!(
                Some(&c.via_softirq),
                by_hand.get(&c.tid),
                "{name}: dd {}",
                c.tid
            );
            let l = c.latency.unwrap();
            assert_eq!(l.count + c.exit_unknown, c.count);
            assert!(l.min_ns > 0 && l.p50_ns < 100_000, "{name}: {l:?}");
        }
        let focus = Options {
            irq: Some(jitterlab_analyze::Pattern::new("virtio1-req.0")),
            task: Some(jitterlab_analyze::Pattern::new("dd")),
            ..Options::default()
        };
        let f = report_of(name, &focus);
        assert_eq!(f.irqs.unwrap().chains.len(), dd.len());
    }
}

/// The figures two readers of one capture must agree on: counts exactly, times within the
/// text's microsecond rounding.
fn assert_same(a: &AnalyzeReport, b: &AnalyzeReport, what: &str) {
    let (sa, sb) = (a.summary.as_ref().unwrap(), b.summary.as_ref().unwrap());
    assert_eq!(sa.events, sb.events, "{what}");
    assert_eq!(sa.events_by_type, sb.events_by_type, "{what}");
    assert_eq!(
        sa.anomalies
            .iter()
            .map(|x| (x.kind, x.cpu, x.count))
            .collect::<Vec<_>>(),
        sb.anomalies
            .iter()
            .map(|x| (x.kind, x.cpu, x.count))
            .collect::<Vec<_>>(),
        "{what}"
    );
    assert_eq!(
        (sa.wakeups, sa.wakeups_inferred, sa.tasks),
        (sb.wakeups, sb.wakeups_inferred, sb.tasks),
        "{what}"
    );
    assert!(sa.span_ns.abs_diff(sb.span_ns) < 1_000, "{what}");
    for (ca, cb) in a
        .cpus
        .as_ref()
        .unwrap()
        .cpus
        .iter()
        .zip(&b.cpus.as_ref().unwrap().cpus)
    {
        assert_eq!(
            (ca.irqs, ca.softirqs, ca.switches, ca.inferred_switches),
            (cb.irqs, cb.softirqs, cb.switches, cb.inferred_switches),
            "{what}"
        );
        // Each slice boundary moves by under 1 us; the sums by far less than that bound.
        let bound = 1_000 * (ca.switches + ca.inferred_switches + 1);
        assert!(
            ca.busy_ns.abs_diff(cb.busy_ns) <= bound,
            "{what}: CPU {} busy {} vs {}",
            ca.cpu,
            ca.busy_ns,
            cb.busy_ns
        );
        assert!(
            ca.busy_ns.abs_diff(cb.busy_ns) <= 20_000,
            "{what}: CPU {} busy {} vs {}",
            ca.cpu,
            ca.busy_ns,
            cb.busy_ns
        );
    }
    let (ta, tb) = (
        &a.tasks.as_ref().unwrap().tasks,
        &b.tasks.as_ref().unwrap().tasks,
    );
    assert_eq!(ta.len(), tb.len(), "{what}");
    for x in ta {
        let y = tb
            .iter()
            .find(|y| y.tid == x.tid && y.first_ns.abs_diff(x.first_ns) < 1_000)
            .unwrap();
        assert_eq!(
            (x.comm.as_str(), x.preempted, x.slept, x.migrations),
            (y.comm.as_str(), y.preempted, y.slept, y.migrations),
            "{what}: {}",
            x.tid
        );
        assert_eq!(
            x.wakeups.map(|w| w.count),
            y.wakeups.map(|w| w.count),
            "{what}: {}",
            x.tid
        );
        if let (Some(wx), Some(wy)) = (x.wakeups, y.wakeups) {
            assert!(
                wx.max_ns.abs_diff(wy.max_ns) <= 1_000,
                "{what}: {} {wx:?} {wy:?}",
                x.tid
            );
        }
    }
    let (ca, cb) = (
        &a.irqs.as_ref().unwrap().chains,
        &b.irqs.as_ref().unwrap().chains,
    );
    let key = |c: &jitterlab_analyze::analysis::irqs::ChainRow| {
        (
            c.irq,
            c.tid,
            c.count,
            c.via_softirq,
            c.latency.map(|l| l.count),
        )
    };
    assert_eq!(
        ca.iter().map(key).collect::<Vec<_>>(),
        cb.iter().map(key).collect::<Vec<_>>(),
        "{what}"
    );
}

#[test]
fn dat_and_text_of_one_capture_agree() {
    for base in ["cyclictest-idle", "disk-irq-stress"] {
        let v7 = report_of(&format!("{base}.v7.dat"), &Options::default());
        let v6 = report_of(&format!("{base}.v6.dat"), &Options::default());
        let mut j7 = serde_json::to_value(&v7).unwrap();
        let mut j6 = serde_json::to_value(&v6).unwrap();
        j7["source"] = serde_json::Value::Null;
        j6["source"] = serde_json::Value::Null;
        assert!(j7 == j6, "{base}: v6 and v7 differ");
        for ext in ["ftrace.txt", "report.txt"] {
            let t = report_of(&format!("{base}.{ext}"), &Options::default());
            assert_same(&v7, &t, &format!("{base}.{ext}"));
        }
    }
}

#[test]
fn blame_on_real_traces() {
    // Under stress-ng, the worst wake-ups waited for a CPU hog of the same priority.
    let r = report_of("disk-irq-stress.v7.dat", &Options::default());
    let b = r.blame.unwrap();
    assert_eq!(b.spikes.len(), 5);
    let worst = &b.spikes[0];
    let tasks = r.tasks.unwrap();
    let max = tasks
        .tasks
        .iter()
        .filter_map(|t| t.wakeups.map(|w| w.max_ns))
        .max()
        .unwrap();
    assert_eq!(worst.latency_ns, max);
    assert!(worst.verdict.contains("stress-ng-cpu"), "{}", worst.verdict);
    assert!(worst.verdict.contains("same priority"), "{}", worst.verdict);
    assert!(!worst.truncated);
    // On the idle machine, kcompactd0 waited for kdamond.0, whose switch-in is missing.
    let r = report_of("cyclictest-idle.v7.dat", &Options::default());
    let k = r
        .blame
        .unwrap()
        .spikes
        .into_iter()
        .find(|s| s.comm == "kcompactd0")
        .expect("kcompactd0 blamed");
    assert!(k.verdict.starts_with("kdamond.0-77"), "{}", k.verdict);
}

/// What the events of exits.v6.dat say, read here without the state machine.
#[derive(Default)]
struct ExitsByHand {
    /// Task incarnations per tid: one per fork, plus one when the tid shows before its
    /// first fork (or has none).
    incarnations: std::collections::BTreeMap<i32, u64>,
    /// Tids seen again after their last switch-out (`Z`/`X`) with no fork in between.
    reused_without_fork: u64,
    /// Tids preempted or asleep after their sched_process_exit and switched in again
    /// before their last switch-out: the exit tails.
    tails: std::collections::BTreeSet<i32>,
    /// Run time per tid: from its switch-in (or its first event as common_pid) to its
    /// switch-out, on one CPU.
    run_ns: std::collections::BTreeMap<i32, u64>,
    /// Tids shown current (common_pid) on a CPU no sched_switch put them on: their run
    /// time by switches alone is not the whole of it.
    implicit: std::collections::BTreeSet<i32>,
}

/// `tid` (> 0) shows in an event: a new incarnation when unseen since its last fork, or
/// seen again after its last switch-out (a reuse without fork).
fn touch(
    h: &mut ExitsByHand,
    seen: &mut std::collections::BTreeSet<i32>,
    dead: &mut std::collections::BTreeSet<i32>,
    tid: i32,
) {
    if tid <= 0 {
        return;
    }
    if dead.remove(&tid) {
        h.reused_without_fork += 1;
        seen.insert(tid);
        *h.incarnations.entry(tid).or_insert(0) += 1;
    } else if seen.insert(tid) {
        *h.incarnations.entry(tid).or_insert(0) += 1;
    }
}

fn exits_by_hand() -> ExitsByHand {
    use jitterlab_trace::{EventKind, EventSource, TaskState};
    use std::collections::{BTreeSet, HashMap};
    let dat = jitterlab_trace::dat::DatFile::open(trace("exits.v6.dat")).expect("open .dat");
    let mut events = dat.events(0).expect("events");
    let mut h = ExitsByHand::default();
    let mut seen = BTreeSet::new(); // tids seen since their last fork
    let mut dead = BTreeSet::new(); // switched out Z/X, not forked again since
    let mut exited = BTreeSet::new(); // sched_process_exit, no last switch-out yet
    let mut out_after_exit = BTreeSet::new();
    let mut cur: HashMap<u32, (i32, u64)> = HashMap::new(); // CPU -> (tid, since)
    while let Some(e) = events.next_event().expect("event") {
        touch(&mut h, &mut seen, &mut dead, e.pid);
        if e.pid > 0 && cur.get(&e.cpu).map(|c| c.0) != Some(e.pid) {
            h.implicit.insert(e.pid);
            cur.insert(e.cpu, (e.pid, e.ts));
        }
        match &e.kind {
            EventKind::SchedProcessFork { child_pid, .. } => {
                dead.remove(child_pid);
                seen.insert(*child_pid);
                *h.incarnations.entry(*child_pid).or_insert(0) += 1;
            }
            EventKind::SchedSwitch {
                prev_pid,
                prev_state,
                next_pid,
                ..
            } => {
                if let Some(&(tid, since)) = cur.get(&e.cpu) {
                    if tid == *prev_pid {
                        *h.run_ns.entry(tid).or_insert(0) += e.ts - since;
                    }
                }
                touch(&mut h, &mut seen, &mut dead, *prev_pid);
                let last = prev_state.0 & (TaskState::DEAD | TaskState::ZOMBIE) != 0;
                if last && *prev_pid > 0 {
                    dead.insert(*prev_pid);
                    seen.remove(prev_pid);
                    exited.remove(prev_pid);
                } else if exited.contains(prev_pid) {
                    out_after_exit.insert(*prev_pid);
                }
                touch(&mut h, &mut seen, &mut dead, *next_pid);
                if out_after_exit.contains(next_pid) {
                    h.tails.insert(*next_pid);
                }
                cur.insert(e.cpu, (*next_pid, e.ts));
            }
            EventKind::SchedProcessExit { pid, .. } => {
                touch(&mut h, &mut seen, &mut dead, *pid);
                exited.insert(*pid);
            }
            EventKind::SchedWaking(w)
            | EventKind::SchedWakeup(w)
            | EventKind::SchedWakeupNew(w) => touch(&mut h, &mut seen, &mut dead, w.pid),
            EventKind::SchedMigrateTask { pid, .. } | EventKind::SchedProcessExec { pid, .. } => {
                touch(&mut h, &mut seen, &mut dead, *pid)
            }
            _ => {}
        }
    }
    h
}

/// A task runs on after its sched_process_exit until its last switch-out (issue 12, item
/// 8): on exits.v6.dat, 18 tasks are preempted in that tail and switched in again. Their
/// tail is theirs: one task row per incarnation of a tid, no pid reuse where the trace has
/// none, and their run time is every slice of theirs, the tail's included.
#[test]
fn exit_tails_belong_to_the_exiting_task() {
    let h = exits_by_hand();
    assert!(
        h.tails.len() >= 10,
        "the trace has exit tails: {:?}",
        h.tails
    );
    let r = report_of("exits.v6.dat", &Options::default());
    let s = r.summary.as_ref().unwrap();
    let reuse: u64 = s
        .anomalies
        .iter()
        .filter(|a| a.kind == AnomalyKind::PidReuseWithoutFork)
        .map(|a| a.count)
        .sum();
    assert_eq!(reuse, h.reused_without_fork, "{:?}", s.anomalies);
    assert!(s
        .anomalies
        .iter()
        .all(|a| a.kind != AnomalyKind::ForkOfLiveTid));
    let tasks = &r.tasks.as_ref().unwrap().tasks;
    let mut rows = std::collections::BTreeMap::new();
    for t in tasks {
        *rows.entry(t.tid).or_insert(0u64) += 1;
    }
    assert_eq!(rows, h.incarnations, "task rows per tid");
    assert_eq!(s.tasks as usize, tasks.len());
    let mut checked = 0;
    for tid in &h.tails {
        let t = tasks.iter().find(|t| t.tid == *tid).unwrap();
        assert!(t.exited && t.other_ends == 1, "{t:?}");
        assert!(t.preempted >= 1, "{t:?}");
        let by_hand = h.run_ns[tid];
        assert!(t.run_ns >= by_hand, "{tid}: {} < {by_hand}", t.run_ns);
        if !h.implicit.contains(tid) {
            assert_eq!(t.run_ns, by_hand, "{tid}");
            checked += 1;
        }
    }
    assert!(checked * 2 > h.tails.len(), "{checked}");
    // Run time is conserved: every slice of a CPU's busy time is some task's.
    for c in &r.cpus.as_ref().unwrap().cpus {
        assert_eq!(
            c.busy_ns + c.idle_ns + c.unknown_ns,
            c.span_ns,
            "CPU {}",
            c.cpu
        );
        let of_tasks: u64 = tasks
            .iter()
            .flat_map(|t| &t.cpus)
            .filter(|x| x.cpu == c.cpu)
            .map(|x| x.run_ns)
            .sum();
        assert_eq!(of_tasks, c.busy_ns, "CPU {}", c.cpu);
    }
}

/// Traces of other machines (crates/trace/tests/data/external). One without sched events
/// (ext4 events only) names its task from the saved cmdlines, as `report` does; one of a
/// 4.1 kernel counts as preempted every switch-out its own format prints `R` or `R+` (its
/// `+` is bit 4096, its `x` an exit).
#[test]
fn other_machines_traces_name_and_count_tasks_from_their_own_metadata() {
    use jitterlab_analyze::analyze_trace;
    use jitterlab_trace::Trace;
    let open = |name: &str| Trace::open(trace(name), false).expect("open");
    let report = analyze_trace(&open("external/ext4-events.dat"), Options::default(), None)
        .expect("analyze");
    let tasks = report.tasks.expect("tasks");
    let named: Vec<(i32, &str)> = tasks
        .tasks
        .iter()
        .map(|t| (t.tid, t.comm.as_str()))
        .collect();
    assert_eq!(named, [(108, "ls")]);
    for (name, runnable_switch_outs) in [("fifo-multicore", 368 + 3), ("fifo-1cpu", 239 + 7)] {
        let report = analyze_trace(
            &open(&format!("external/{name}.dat")),
            Options::default(),
            None,
        )
        .expect("analyze");
        let tasks = report.tasks.expect("tasks");
        let preempted: u64 = tasks.tasks.iter().map(|t| t.preempted).sum();
        // Less the switch-outs of the idle task (tid 0, not a task of the table).
        let idle = golden_idle_runnable(name);
        assert_eq!(preempted, runnable_switch_outs - idle, "{name}");
    }
}

/// Switch-outs of the idle task with state `R` in trace-cmd's text of an external trace.
fn golden_idle_runnable(name: &str) -> u64 {
    let data = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../trace/tests/data/external")
        .join(format!("{name}.report-N.txt.zst"));
    let text = zstd::decode_all(std::fs::File::open(data).expect("golden")).expect("zstd");
    String::from_utf8(text)
        .expect("utf-8")
        .lines()
        .filter(|l| l.contains(" prev_pid=0 ") && l.contains(" prev_state=R"))
        .count() as u64
}
