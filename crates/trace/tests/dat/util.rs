//! Fixtures and the golden `trace-cmd report` outputs they are checked against.

use std::path::PathBuf;

use jitterlab_trace::dat::{DatFile, DatOptions};
use jitterlab_trace::{Event, EventKind, EventSource, Sym, Value};

pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// The bytes of a fixture; `NAME.zst` is decompressed when `NAME` itself is not there.
pub fn fixture(name: &str) -> Vec<u8> {
    let p = data_dir().join(name);
    if let Ok(b) = std::fs::read(&p) {
        return b;
    }
    let z = data_dir().join(format!("{name}.zst"));
    let b = std::fs::read(&z).unwrap_or_else(|e| panic!("fixture {}: {e}", z.display()));
    zstd::decode_all(&b[..]).expect("fixture decompresses")
}

pub fn fixture_text(name: &str) -> String {
    String::from_utf8(fixture(name)).expect("fixture is UTF-8")
}

pub fn all_events(dat: &DatFile, buffer: usize) -> Vec<Event> {
    let mut src = dat.events(buffer).expect("events");
    let mut v = Vec::new();
    while let Some(e) = src.next_event().expect("next_event") {
        v.push(e);
    }
    v
}

pub fn open(name: &str) -> DatFile<'static> {
    DatFile::from_vec(name, fixture(name), DatOptions::default()).expect("fixture parses")
}

/// One line of `trace-cmd report -t -R`: `COMM-PID [CPU] SECS.NSECS: EVENT: k=v ...`.
#[derive(Debug, Clone)]
pub struct RawLine {
    pub comm_pid: String,
    pub cpu: u32,
    pub ts: u64,
    pub event: String,
    pub fields: Vec<(String, String)>,
}

pub fn parse_raw_report(text: &str) -> Vec<RawLine> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(open) = line.find(" [") else {
            continue;
        };
        let Some(close) = line[open..].find(']').map(|c| open + c) else {
            continue;
        };
        let cpu = line[open + 2..close].trim().parse().expect("cpu");
        let rest = line[close + 1..].trim_start();
        let (ts, rest) = rest.split_once(": ").expect("timestamp");
        let (secs, nsecs) = ts.trim().split_once('.').expect("secs.nsecs");
        // ns, whatever the number of digits (6 in the default report, 9 with -t).
        let scale = 10u64.pow(9 - nsecs.len() as u32);
        let ts =
            secs.parse::<u64>().unwrap() * 1_000_000_000 + nsecs.parse::<u64>().unwrap() * scale;
        let (event, rest) = rest.split_once(':').expect("event name");
        let mut fields: Vec<(String, String)> = Vec::new();
        for tok in rest.split_whitespace() {
            match tok.split_once('=') {
                Some((k, v))
                    if !k.is_empty()
                        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
                {
                    fields.push((k.to_string(), v.to_string()))
                }
                _ => {
                    if let Some(last) = fields.last_mut() {
                        last.1.push(' ');
                        last.1.push_str(tok);
                    }
                }
            }
        }
        out.push(RawLine {
            comm_pid: line[..open].trim().to_string(),
            cpu,
            ts,
            event: event.trim().to_string(),
            fields,
        });
    }
    out
}

/// A field of a decoded event, in a form comparable with the raw report text.
#[derive(Debug, Clone, PartialEq)]
pub enum F {
    Num(i128),
    Str(String),
    Sym(Sym),
}

/// The fields of an event under the names the kernel formats give them.
pub fn fields_of(e: &Event) -> Vec<(&'static str, F)> {
    use F::*;
    let n = |v: i64| Num(v as i128);
    let u = |v: u64| Num(v as i128);
    let s = |v: &str| Str(v.to_string());
    match &e.kind {
        EventKind::SchedSwitch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
        } => vec![
            ("prev_comm", s(prev_comm.as_str())),
            ("prev_pid", n(*prev_pid as i64)),
            ("prev_prio", n(*prev_prio as i64)),
            ("prev_state", u(prev_state.0)),
            ("next_comm", s(next_comm.as_str())),
            ("next_pid", n(*next_pid as i64)),
            ("next_prio", n(*next_prio as i64)),
        ],
        EventKind::SchedWaking(w) | EventKind::SchedWakeup(w) | EventKind::SchedWakeupNew(w) => {
            vec![
                ("comm", s(w.comm.as_str())),
                ("pid", n(w.pid as i64)),
                ("prio", n(w.prio as i64)),
                ("target_cpu", u(w.target_cpu as u64)),
            ]
        }
        EventKind::SchedMigrateTask {
            comm,
            pid,
            prio,
            orig_cpu,
            dest_cpu,
        } => vec![
            ("comm", s(comm.as_str())),
            ("pid", n(*pid as i64)),
            ("prio", n(*prio as i64)),
            ("orig_cpu", u(*orig_cpu as u64)),
            ("dest_cpu", u(*dest_cpu as u64)),
        ],
        EventKind::SchedProcessFork {
            parent_comm,
            parent_pid,
            child_comm,
            child_pid,
        } => vec![
            ("parent_comm", s(parent_comm.as_str())),
            ("parent_pid", n(*parent_pid as i64)),
            ("child_comm", s(child_comm.as_str())),
            ("child_pid", n(*child_pid as i64)),
        ],
        EventKind::SchedProcessExec {
            filename,
            pid,
            old_pid,
        } => {
            vec![
                ("filename", s(filename)),
                ("pid", n(*pid as i64)),
                ("old_pid", n(*old_pid as i64)),
            ]
        }
        EventKind::SchedProcessExit { comm, pid, prio } => {
            vec![
                ("comm", s(comm.as_str())),
                ("pid", n(*pid as i64)),
                ("prio", n(*prio as i64)),
            ]
        }
        EventKind::IrqHandlerEntry { irq, name } => {
            vec![("irq", u(*irq as u64)), ("name", s(name))]
        }
        EventKind::IrqHandlerExit { irq, ret } => {
            vec![("irq", u(*irq as u64)), ("ret", n(*ret as i64))]
        }
        EventKind::SoftirqRaise { vec }
        | EventKind::SoftirqEntry { vec }
        | EventKind::SoftirqExit { vec } => {
            vec![("vec", u(*vec as u64))]
        }
        EventKind::HrtimerExpireEntry {
            hrtimer,
            now,
            function,
        } => {
            vec![
                ("hrtimer", u(*hrtimer)),
                ("now", u(*now)),
                ("function", Sym(function.clone())),
            ]
        }
        EventKind::HrtimerExpireExit { hrtimer } => vec![("hrtimer", u(*hrtimer))],
        EventKind::IpiSendCpu {
            cpu,
            callsite,
            callback,
        } => vec![
            ("cpu", u(*cpu as u64)),
            ("callsite", Sym(callsite.clone())),
            ("callback", Sym(callback.clone())),
        ],
        EventKind::WorkqueueExecuteStart { work, function }
        | EventKind::WorkqueueExecuteEnd { work, function } => {
            vec![("work", u(*work)), ("function", Sym(function.clone()))]
        }
        EventKind::Print { ip, text } => vec![("ip", u(*ip)), ("buf", s(text))],
        EventKind::Other { fields, .. } => fields
            .iter()
            .map(|(k, v)| {
                let k: &'static str = Box::leak(k.to_string().into_boxed_str());
                let v = match v {
                    Value::Int(i) => n(*i),
                    Value::Uint(x) => u(*x),
                    Value::Str(t) => s(t),
                    Value::Bytes(b) => Str(format!("{b:?}")),
                };
                (k, v)
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Does the raw report's text `text` say the same as `f`?
pub fn same(f: &F, text: &str) -> bool {
    let num = |t: &str| -> Option<i128> {
        match t.strip_prefix("0x") {
            Some(h) => i128::from_str_radix(h, 16).ok(),
            None => t.parse().ok(),
        }
    };
    match f {
        F::Num(v) => num(text) == Some(*v),
        F::Str(s) => s == text,
        F::Sym(sym) => match num(text) {
            Some(a) => a == sym.addr as i128,
            None => sym.name.as_deref() == Some(text.strip_suffix("+0x0").unwrap_or(text)),
        },
    }
}

/// Compare every event with the golden raw report, field by field.
pub fn assert_matches_raw_report(events: &[Event], golden: &[RawLine]) {
    assert_eq!(events.len(), golden.len(), "event count");
    for (i, (e, g)) in events.iter().zip(golden).enumerate() {
        let ctx = || format!("event {i}: {e:?}\n golden: {g:?}");
        assert_eq!(e.ts, g.ts, "{}", ctx());
        assert_eq!(e.cpu, g.cpu, "{}", ctx());
        assert_eq!(e.kind.name(), g.event, "{}", ctx());
        let pid = g
            .comm_pid
            .rsplit_once('-')
            .map(|(_, p)| p.parse::<i32>().unwrap());
        assert_eq!(Some(e.pid), pid, "{}", ctx());
        let mine = fields_of(e);
        for (k, v) in &g.fields {
            // Fields the event model does not keep.
            if (g.event.as_str(), k.as_str()) == ("sched_process_exit", "group_dead") {
                continue;
            }
            let m = mine
                .iter()
                .find(|(n, _)| n == k)
                .unwrap_or_else(|| panic!("field {k} missing; {}", ctx()));
            assert!(
                same(&m.1, v),
                "field {k}: mine {:?}, report {v:?}; {}",
                m.1,
                ctx()
            );
        }
    }
}

/// A line of a multi-buffer raw report: an event, or a loss notice.
#[derive(Debug, Clone)]
pub enum Golden {
    Event(RawLine),
    Dropped { cpu: u32, count: Option<u64> },
}

/// Split a `trace-cmd report` of several buffers by the `NAME:` prefix of each line (no
/// prefix: the top buffer). trace-cmd prints the line after a `[N EVENTS DROPPED]` notice
/// without the prefix; it belongs to the notice's buffer.
pub fn split_buffers(text: &str, names: &[&str]) -> Vec<(String, Vec<Golden>)> {
    let mut out: Vec<(String, Vec<Golden>)> = vec![(String::new(), Vec::new())];
    out.extend(names.iter().map(|n| (n.to_string(), Vec::new())));
    let mut after_drop: Option<usize> = None;
    for line in text.lines().filter(|l| !l.starts_with("cpus=")) {
        let t = line.trim_start();
        let (idx, rest) = match names.iter().position(|n| t.starts_with(&format!("{n}:"))) {
            Some(i) => (i + 1, &t[names[i].len() + 1..]),
            None => (after_drop.unwrap_or(0), line),
        };
        after_drop = None;
        let r = rest.trim_start();
        if let Some(d) = r.strip_prefix("CPU:") {
            let (cpu, tail) = d.split_once(' ').expect("cpu");
            let count = tail
                .trim_start_matches('[')
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok());
            out[idx].1.push(Golden::Dropped {
                cpu: cpu.parse().expect("cpu number"),
                count,
            });
            after_drop = Some(idx);
            continue;
        }
        let parsed = parse_raw_report(rest);
        out[idx].1.extend(parsed.into_iter().map(Golden::Event));
    }
    out
}

/// Compare one buffer's events, loss markers included, with its golden lines.
pub fn assert_matches_buffer(events: &[Event], golden: &[Golden]) {
    assert_eq!(
        events.len(),
        golden.len(),
        "event count (loss markers included)"
    );
    let mut lines = Vec::new();
    let mut evs = Vec::new();
    for (e, g) in events.iter().zip(golden) {
        match g {
            Golden::Dropped { cpu, count } => {
                assert_eq!(e.kind, EventKind::Lost { count: *count }, "{e:?}");
                assert_eq!(e.cpu, *cpu);
            }
            Golden::Event(l) => {
                lines.push(l.clone());
                evs.push(e.clone());
            }
        }
    }
    assert_matches_raw_report(&evs, &lines);
}
