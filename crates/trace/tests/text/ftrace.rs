//! ftrace line features the captures lack, and format detection.

use super::*;

#[test]
fn detect_tells_the_formats_apart() {
    assert_eq!(
        detect(&data("cyclictest-idle.ftrace.txt")),
        Some(TextKind::Ftrace)
    );
    assert_eq!(
        detect(&data("cyclictest-idle.report.txt")),
        Some(TextKind::TraceCmdReport)
    );
    assert_eq!(
        detect(&data("fgraph-report.txt")),
        Some(TextKind::TraceCmdReport)
    );
    for f in [
        "fgraph-smi-abstime.txt",
        "fgraph-ehci-softirq.txt",
        "fgraph-proc-tail.txt",
        "fgraph-slides.txt",
    ] {
        assert_eq!(detect(&data(f)), Some(TextKind::FunctionGraph), "{f}");
    }
    // trace_pipe: no header.
    let pipe =
        b"          <idle>-0       [001] d.h1.   976.348848: irq_handler_entry: irq=36 name=x\n";
    assert_eq!(detect(pipe), Some(TextKind::Ftrace));
    assert_eq!(
        detect(b" 0)   0.123 us    |  getname();\n"),
        Some(TextKind::FunctionGraph)
    );
    assert_eq!(detect(b""), None);
    assert_eq!(detect(b"\x17\x08\x44tracing6\0"), None);
    assert_eq!(detect(b"hello world\n"), None);
}

#[test]
fn misc_ftrace_lines() {
    let r = read("ftrace-misc.txt");
    assert_eq!(
        r.meta,
        TraceMeta {
            format: "ftrace text (tracer: function)".into(),
            cpus: Some(4)
        }
    );
    assert_eq!(r.stats.lost, vec![Some(0), Some(42), Some(0), None]);
    let bytes = data("ftrace-misc.txt");
    let mut reader = FtraceReader::new(&bytes[..], TextOptions::default()).unwrap();
    assert_eq!(reader.overwritten(), Some(110_200));
    assert_eq!(reader.tracer(), Some("function"));
    while reader.next_event().unwrap().is_some() {}
    let ev = &r.events;
    let names: Vec<&str> = ev.iter().map(|e| e.kind.name()).collect();
    assert_eq!(
        names,
        [
            "function",
            "irq_handler_entry",
            "irq_handler_exit",
            "softirq_entry",
            "sched_waking",
            "lost",
            "workqueue_execute_start",
            "workqueue_execute_end",
            "print",
            "sched_switch",
            "timer_start",
            "sched_process_exec",
            "sched_stat_runtime",
            "kernel_stack",
            "lost",
            "local_timer_entry",
            "bputs",
        ]
    );
    let s = |t: &str| Value::Str(t.into());
    let field = |i: usize| match &ev[i].kind {
        EventKind::Other { name, fields } => (
            name.to_string(),
            fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Vec<_>>(),
        ),
        k => panic!("{k:?}"),
    };
    assert_eq!(
        field(0),
        (
            "ftrace:function".to_string(),
            vec![
                ("ip".to_string(), s("sys_close")),
                ("parent_ip".to_string(), s("system_call_fastpath"))
            ]
        )
    );
    // ` Web Content-4410-4411 [002]`: the pid follows the last dash.
    assert_eq!((ev[1].pid, ev[1].cpu), (4411, 2));
    assert_eq!(ev[2].kind, EventKind::IrqHandlerExit { irq: 24, ret: 0 });
    // dNs2. / DLH3. / ....3 / d.Z1f / bp... / Xn...
    assert_eq!(
        ev[3].flags,
        Flags(Flags::IRQS_OFF | Flags::NEED_RESCHED | Flags::PREEMPT_RESCHED | Flags::SOFTIRQ)
    );
    assert_eq!(ev[3].kind, EventKind::SoftirqEntry { vec: 9 });
    assert_eq!(
        (ev[4].flags, ev[4].preempt_count),
        (
            Flags(
                Flags::IRQS_OFF
                    | Flags::BH_OFF
                    | Flags::NEED_RESCHED_LAZY
                    | Flags::PREEMPT_RESCHED
                    | Flags::HARDIRQ
                    | Flags::SOFTIRQ
            ),
            3
        )
    );
    assert_eq!(
        ev[4].kind,
        EventKind::SchedWaking(Wakeup {
            comm: Comm::new("Web Content"),
            pid: 4411,
            prio: 120,
            target_cpu: 2
        })
    );
    // The lost marker of CPU 1 takes the time of CPU 1's next event.
    assert_eq!(
        (ev[5].cpu, ev[5].ts, &ev[5].kind),
        (1, ev[6].ts, &EventKind::Lost { count: Some(42) })
    );
    let vmstat = Sym {
        addr: 0,
        name: Some("vmstat_update".into()),
    };
    assert_eq!(
        ev[6].kind,
        EventKind::WorkqueueExecuteStart {
            work: 0x2e9f_8b1a,
            function: vmstat.clone()
        }
    );
    assert_eq!(
        ev[7].kind,
        EventKind::WorkqueueExecuteEnd {
            work: 0x2e9f_8b1a,
            function: vmstat
        }
    );
    assert_eq!(
        ev[8].kind,
        EventKind::Print {
            ip: 0,
            text: "start: phase=1 x=2".into()
        }
    );
    assert_eq!(ev[8].preempt_count, 0x30);
    match ev[9].kind {
        EventKind::SchedSwitch {
            prev_state,
            next_comm,
            next_pid,
            prev_prio,
            ..
        } => {
            assert_eq!(
                prev_state,
                TaskState(TaskState::UNINTERRUPTIBLE | TaskState::WAKEKILL)
            );
            assert_eq!(
                (next_comm, next_pid, prev_prio),
                (Comm::new("kworker/u8:2"), 114, 9)
            );
        }
        ref k => panic!("{k:?}"),
    }
    assert_eq!(
        (ev[10].flags, ev[10].preempt_count),
        (Flags(Flags::IRQS_OFF | Flags::NMI | Flags::HARDIRQ), 0xf1)
    );
    let (name, fields) = field(10);
    assert_eq!(name, "timer:timer_start");
    assert_eq!(
        fields,
        [
            ("timer".to_string(), s("00000000a5e2b8d4")),
            ("function".to_string(), s("process_timeout")),
            ("expires".to_string(), Value::Int(4_295_892_000)),
            ("cpu".to_string(), Value::Int(3)),
            ("idx".to_string(), Value::Int(86)),
            ("flags".to_string(), s("")),
        ]
    );
    assert_eq!(
        ev[11].kind,
        EventKind::SchedProcessExec {
            filename: "/usr/bin/cyclictest".into(),
            pid: 2170,
            old_pid: 2170
        }
    );
    assert_eq!(ev[12].flags, Flags(Flags::BH_OFF | Flags::PREEMPT_RESCHED));
    let (name, fields) = field(12);
    assert_eq!(name, "sched:sched_stat_runtime");
    assert_eq!(fields[2], ("runtime".to_string(), Value::Int(5_014_167)));
    assert_eq!(fields[3], ("vruntime".to_string(), Value::Int(-12)));
    assert_eq!(ev[13].flags, Flags(Flags::NEED_RESCHED));
    let (name, fields) = field(13);
    assert_eq!(name, KERNEL_STACK);
    let frames: Vec<_> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    assert_eq!(
        frames,
        [
            ("caller", s("trace_event_raw_event_sched_switch")),
            ("caller", s("__schedule")),
            ("caller", s("schedule+0x5a/0x110")),
        ]
    );
    assert_eq!(
        (ev[14].cpu, &ev[14].kind),
        (3, &EventKind::Lost { count: None })
    );
    assert_eq!(field(15).0, "irq_vectors:local_timer_entry");
    assert_eq!(
        field(16),
        (
            "ftrace:bputs".to_string(),
            vec![("text".to_string(), s("kernel_clone: hello there"))]
        )
    );
}

#[test]
fn timestamps_are_exact_integers() {
    let text = "cpus=1\n\
        \x20 a-1 [000] 0.000001: x: a=1\n\
        \x20 a-1 [000] 18446744073.709551615: x: a=1\n\
        \x20 a-1 [000] 123.456789123: x: a=1\n";
    let r = read_with(
        text.as_bytes(),
        TextKind::TraceCmdReport,
        TextOptions::default(),
    )
    .unwrap();
    let ts: Vec<u64> = r.events.iter().map(|e| e.ts).collect();
    assert_eq!(ts, [1_000, 123_456_789_123, 18_446_744_073_709_551_615]);
    let err = read_with(
        "  a-1 [000] 18446744073.709551616: x: a=1\n".as_bytes(),
        TextKind::Ftrace,
        TextOptions::default(),
    )
    .err()
    .unwrap();
    assert_eq!(
        (err.kind, err.location),
        (ErrorKind::Syntax, Location::Line(1)),
        "{err}"
    );
}

#[test]
fn lost_events_lines_of_both_printers() {
    let text = "cpus=2\n\
        CPU:1 [LOST 5 EVENTS]\n\
        CPU:1 [3 EVENTS DROPPED]\n\
        \x20 a-1 [000] 1.000001: x: a=1\n\
        CPU:0 [EVENTS DROPPED]\n\
        \x20 a-1 [001] 1.000002: x: a=1\n\
        \x20 a-1 [000] 1.000003: x: a=1\n\
        CPU:1 [LOST 2 EVENTS]\n";
    let r = read_with(
        text.as_bytes(),
        TextKind::TraceCmdReport,
        TextOptions::default(),
    )
    .unwrap();
    assert_eq!(r.stats.lost, vec![None, Some(10)]);
    let got: Vec<(u32, u64, String)> = r
        .events
        .iter()
        .map(|e| (e.cpu, e.ts, format!("{:?}", e.kind)))
        .filter(|(_, _, k)| k.starts_with("Lost"))
        .collect();
    assert_eq!(
        got,
        [
            (1, 1_000_002_000, "Lost { count: Some(8) }".to_string()),
            // After CPU 1's last event: placed at its time.
            (1, 1_000_002_000, "Lost { count: Some(2) }".to_string()),
            (0, 1_000_003_000, "Lost { count: None }".to_string()),
        ]
    );
}

#[test]
fn tgid_column_unknown_comms_and_crlf() {
    let text = "# tracer: nop\r\n\
        \x20           bash-1977    (   1977) [000] .....  10.000001: x: a=1\r\n\
        \x20          <...>-1978    (-------) [001] d....  10.000002: y: b=0x1f c=-3 d=str\r\n\
        \x20 kworker/u8:2-ev-114    [001] .....  10.000003: z:\r\n";
    let r = read_with(text.as_bytes(), TextKind::Ftrace, TextOptions::default()).unwrap();
    let got: Vec<(i32, u32, String)> = r
        .events
        .iter()
        .map(|e| (e.pid, e.cpu, e.kind.name().to_string()))
        .collect();
    assert_eq!(
        got,
        [
            (1977, 0, "x".to_string()),
            (1978, 1, "y".to_string()),
            (114, 1, "z".to_string())
        ]
    );
    match &r.events[1].kind {
        EventKind::Other { name, fields } => {
            assert_eq!(&**name, "y");
            let values: Vec<Value> = fields.iter().map(|(_, v)| v.clone()).collect();
            assert_eq!(
                values,
                [Value::Uint(0x1f), Value::Int(-3), Value::Str("str".into())]
            );
        }
        k => panic!("{k:?}"),
    }
    assert_eq!(
        r.events[2].kind,
        EventKind::Other {
            name: "z".into(),
            fields: vec![]
        }
    );
}

#[test]
fn a_file_reads_the_same_streamed_as_from_memory() {
    let path = std::path::Path::new(DATA).join("cyclictest-idle.report.txt");
    let file = std::io::BufReader::with_capacity(512, std::fs::File::open(path).unwrap());
    let mut streamed = FtraceReader::new(file, TextOptions::default()).unwrap();
    let streamed = drain(&mut streamed).unwrap();
    let bytes = data("cyclictest-idle.report.txt");
    let mut memory = FtraceReader::new(&bytes[..], TextOptions::default()).unwrap();
    assert_eq!(streamed.events, drain(&mut memory).unwrap().events);
}

#[test]
fn trace_cmd_function_and_marker_records() {
    let text = "cpus=2\n\
        \x20    bash-7842  [002]   354.414778: print:                tracing_mark_write: TRACE_MARKER_START\n\
        \x20    bash-7842  [002]   354.414779: function:             do_sys_open <-- do_syscall_64\n\
        \x20    bash-7842  [002]   354.414780: function:                do_filp_open <-- do_sys_open\n\
        \x20 rt-app-5732  [001]   471.410977940: print:                tracing_mark_write: rtapp_main: event=start\n";
    let r = read_with(
        text.as_bytes(),
        TextKind::TraceCmdReport,
        TextOptions::default(),
    )
    .unwrap();
    let s = |t: &str| Value::Str(t.into());
    let kinds: Vec<EventKind> = r.events.iter().map(|e| e.kind.clone()).collect();
    assert_eq!(
        kinds[0],
        EventKind::Print {
            ip: 0,
            text: "TRACE_MARKER_START".into()
        }
    );
    assert_eq!(
        kinds[1],
        EventKind::Other {
            name: "ftrace:function".into(),
            fields: vec![
                ("ip".into(), s("do_sys_open")),
                ("parent_ip".into(), s("do_syscall_64"))
            ]
        }
    );
    assert!(
        matches!(&kinds[2], EventKind::Other { fields, .. } if fields[0].1 == s("do_filp_open"))
    );
    assert_eq!(r.events[3].ts, 471_410_977_940);
    assert_eq!(
        kinds[3],
        EventKind::Print {
            ip: 0,
            text: "rtapp_main: event=start".into()
        }
    );
}
