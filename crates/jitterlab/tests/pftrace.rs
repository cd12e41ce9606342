//! `jitterlab convert TRACE out.pftrace`: Perfetto's protobuf trace, decoded back with
//! `prost` and message structs written here from Perfetto's published .proto files (not
//! from the writer's code), checked against `report --json` and `analyze --json` of the
//! same committed traces: sched_switch per CPU, wake-ups, IRQ and softirq runs, the
//! process tree, the kernel release, the bundles' size and order.
//!
//! No trace processor runs here: the `perfetto` Python package fetches its binary from
//! get.perfetto.dev at run time, which the CI machine cannot reach (docs/perfetto.md).

use std::collections::BTreeMap;
use std::path::Path;

use prost::Message;

use crate::util::{data, json_data, run, stderr};

// protos/perfetto/trace/trace.proto and trace_packet.proto (the fields read here).
#[derive(Clone, PartialEq, Message)]
struct Trace {
    #[prost(message, repeated, tag = "1")]
    packet: Vec<Packet>,
}

#[derive(Clone, PartialEq, Message)]
struct Packet {
    #[prost(uint64, optional, tag = "8")]
    timestamp: Option<u64>,
    #[prost(message, optional, tag = "1")]
    ftrace_events: Option<Bundle>,
    #[prost(message, optional, tag = "2")]
    process_tree: Option<ProcessTree>,
    #[prost(message, optional, tag = "45")]
    system_info: Option<SystemInfo>,
}

// ftrace/ftrace_event_bundle.proto.
#[derive(Clone, PartialEq, Message)]
struct Bundle {
    #[prost(uint32, optional, tag = "1")]
    cpu: Option<u32>,
    #[prost(message, repeated, tag = "2")]
    event: Vec<FtraceEvent>,
    #[prost(bool, optional, tag = "3")]
    lost_events: Option<bool>,
}

// ftrace/ftrace_event.proto: the common fields and the oneof members read here.
#[derive(Clone, PartialEq, Message)]
struct FtraceEvent {
    #[prost(uint64, optional, tag = "1")]
    timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "2")]
    pid: Option<u32>,
    #[prost(message, optional, tag = "4")]
    sched_switch: Option<SchedSwitch>,
    #[prost(message, optional, tag = "17")]
    sched_wakeup: Option<Wakeup>,
    #[prost(message, optional, tag = "20")]
    sched_waking: Option<Wakeup>,
    #[prost(message, optional, tag = "114")]
    sched_wakeup_new: Option<Wakeup>,
    #[prost(message, optional, tag = "24")]
    softirq_entry: Option<Softirq>,
    #[prost(message, optional, tag = "36")]
    irq_handler_entry: Option<IrqHandlerEntry>,
}

// ftrace/sched.proto.
#[derive(Clone, PartialEq, Message)]
struct SchedSwitch {
    #[prost(string, optional, tag = "1")]
    prev_comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    prev_pid: Option<i32>,
    #[prost(int64, optional, tag = "4")]
    prev_state: Option<i64>,
    #[prost(string, optional, tag = "5")]
    next_comm: Option<String>,
    #[prost(int32, optional, tag = "6")]
    next_pid: Option<i32>,
    #[prost(int32, optional, tag = "7")]
    next_prio: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
struct Wakeup {
    #[prost(string, optional, tag = "1")]
    comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pid: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    target_cpu: Option<i32>,
}

// ftrace/irq.proto.
#[derive(Clone, PartialEq, Message)]
struct Softirq {
    #[prost(uint32, optional, tag = "1")]
    vec: Option<u32>,
}

#[derive(Clone, PartialEq, Message)]
struct IrqHandlerEntry {
    #[prost(int32, optional, tag = "1")]
    irq: Option<i32>,
    #[prost(string, optional, tag = "2")]
    name: Option<String>,
}

// ps/process_tree.proto.
#[derive(Clone, PartialEq, Message)]
struct ProcessTree {
    #[prost(message, repeated, tag = "1")]
    processes: Vec<Process>,
    #[prost(message, repeated, tag = "2")]
    threads: Vec<Thread>,
}

#[derive(Clone, PartialEq, Message)]
struct Process {
    #[prost(int32, optional, tag = "1")]
    pid: Option<i32>,
    #[prost(string, repeated, tag = "3")]
    cmdline: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct Thread {
    #[prost(int32, optional, tag = "1")]
    tid: Option<i32>,
    #[prost(string, optional, tag = "2")]
    name: Option<String>,
    #[prost(int32, optional, tag = "3")]
    tgid: Option<i32>,
}

// common/system_info.proto.
#[derive(Clone, PartialEq, Message)]
struct SystemInfo {
    #[prost(message, optional, tag = "1")]
    utsname: Option<Utsname>,
}

#[derive(Clone, PartialEq, Message)]
struct Utsname {
    #[prost(string, optional, tag = "1")]
    sysname: Option<String>,
    #[prost(string, optional, tag = "3")]
    release: Option<String>,
}

/// What a decoded file holds, counted.
#[derive(Debug, Default)]
struct Decoded {
    switches_per_cpu: BTreeMap<u32, u64>,
    waking: u64,
    wakeup_new: u64,
    irq_entries: u64,
    softirq_entries: u64,
    bundles: u64,
    trees: Vec<ProcessTree>,
    release: Option<String>,
    first_switch: Option<(u64, u32, SchedSwitch)>,
}

fn decode(path: &Path) -> Decoded {
    let bytes = std::fs::read(path).expect("read the .pftrace");
    let trace = Trace::decode(&bytes[..]).expect("a valid protobuf Trace");
    let mut d = Decoded::default();
    let mut last_ts: BTreeMap<u32, u64> = BTreeMap::new();
    for p in trace.packet {
        if let Some(si) = p.system_info {
            let u = si.utsname.expect("utsname");
            assert_eq!(u.sysname.as_deref(), Some("Linux"));
            d.release = u.release;
        }
        if let Some(tree) = p.process_tree {
            assert!(p.timestamp.is_some(), "the process tree has a time");
            d.trees.push(tree);
        }
        let Some(b) = p.ftrace_events else { continue };
        let cpu = b.cpu.expect("every bundle names its CPU");
        d.bundles += 1;
        assert!(!b.event.is_empty() || b.lost_events == Some(true));
        assert!(
            b.event.len() <= 4096,
            "a bundle of {} events",
            b.event.len()
        );
        for e in b.event {
            let ts = e.timestamp.expect("every event has a time");
            let last = last_ts.entry(cpu).or_insert(0);
            assert!(ts >= *last, "CPU {cpu}: {ts} after {last}");
            *last = ts;
            if let Some(s) = e.sched_switch {
                *d.switches_per_cpu.entry(cpu).or_default() += 1;
                // Bundles are per CPU: the earliest is not always the first in the file.
                if d.first_switch.as_ref().is_none_or(|(t, ..)| ts < *t) {
                    d.first_switch = Some((ts, cpu, s));
                }
            }
            d.waking += u64::from(e.sched_waking.is_some());
            d.wakeup_new += u64::from(e.sched_wakeup_new.is_some());
            if let Some(irq) = e.irq_handler_entry {
                assert!(irq.name.is_some_and(|n| !n.is_empty()));
                d.irq_entries += 1;
            }
            d.softirq_entries += u64::from(e.softirq_entry.is_some_and(|s| s.vec.is_some()));
        }
    }
    d
}

/// sched_switch events per CPU, from `report --json --event sched_switch`'s lines.
fn switches_per_cpu(file: &str) -> (BTreeMap<u32, u64>, Option<serde_json::Value>) {
    let o = run(&["report", file, "--json", "--event", "sched_switch"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut per_cpu = BTreeMap::new();
    let mut first = None;
    for line in o.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).expect("a JSON line");
        *per_cpu
            .entry(v["cpu"].as_u64().expect("cpu") as u32)
            .or_default() += 1;
        first.get_or_insert(v);
    }
    (per_cpu, first)
}

/// Converts `file` to a .pftrace in a temporary directory and checks it against
/// `report` and `analyze` of the same file; returns the decoded file.
fn convert_and_check(file: &str) -> Decoded {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("t.pftrace");
    let o = run(&["convert", file, out.to_str().unwrap(), "--json"]);
    let conv = json_data(&o, "jitterlab.convert");
    assert_eq!(conv["output_format"], "Perfetto protobuf trace");
    let d = decode(&out);

    let (switches, first) = switches_per_cpu(file);
    assert_eq!(d.switches_per_cpu, switches, "{file}: sched_switch per CPU");
    let first = first.expect("the trace has a sched_switch");
    let (ts, cpu, s) = d.first_switch.clone().expect("a decoded sched_switch");
    assert_eq!(ts, first["ts"].as_u64().unwrap());
    assert_eq!(u64::from(cpu), first["cpu"].as_u64().unwrap());
    assert_eq!(s.prev_comm.as_deref(), first["prev_comm"].as_str());
    assert_eq!(s.next_comm.as_deref(), first["next_comm"].as_str());
    assert_eq!(s.next_pid.map(i64::from), first["next_pid"].as_i64());

    let a = json_data(&run(&["analyze", file, "--json"]), "jitterlab.analyze");
    let summary = &a["summary"];
    let by_type = |name: &str| {
        summary["events_by_type"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .map_or(0, |e| e["count"].as_u64().unwrap())
    };
    assert_eq!(d.waking, by_type("sched_waking"), "{file}: sched_waking");
    assert_eq!(d.wakeup_new, by_type("sched_wakeup_new"));
    // Every wake-up analyze saw is a sched_waking or sched_wakeup_new here: measured,
    // of a running task, or pending at the end.
    let wakes: u64 = ["wakeups", "wakes_of_running", "wakes_pending_at_end"]
        .iter()
        .map(|k| summary[k].as_u64().unwrap())
        .sum();
    assert_eq!(d.waking + d.wakeup_new, wakes, "{file}: wake-ups");
    let cpus = a["cpus"]["cpus"].as_array().unwrap();
    let sum = |k: &str| cpus.iter().map(|c| c[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(d.irq_entries, sum("irqs"), "{file}: IRQ handler runs");
    assert_eq!(d.softirq_entries, sum("softirqs"), "{file}: softirq runs");

    let p = &conv["pftrace"];
    assert_eq!(p["bundles"].as_u64(), Some(d.bundles));
    assert_eq!(p["sched_switch"].as_u64(), Some(switches.values().sum()));
    assert_eq!(p["sched_waking"].as_u64(), Some(d.waking));
    // The release trace processor reads prev_state by: this VM's kernel 6.18.
    assert!(
        d.release.as_deref().is_some_and(|r| r.starts_with("6.")),
        "{:?}",
        d.release
    );
    d
}

#[test]
fn the_ftrace_bundles_hold_what_report_and_analyze_count() {
    let d = convert_and_check(&data("disk-irq-stress.v7.dat"));
    assert_eq!(d.irq_entries, 4078);
    assert!(d.bundles > 2, "bundles are flushed as they fill");
}

#[test]
fn a_recording_with_thread_groups_gets_a_process_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dat = dir.path().join("veth.dat");
    let zst = std::fs::read(data("veth-iperf3.v6.dat.zst")).unwrap();
    std::fs::write(&dat, zstd::decode_all(&zst[..]).unwrap()).unwrap();
    let d = convert_and_check(dat.to_str().unwrap());
    assert_eq!(d.trees.len(), 1);
    let tree = &d.trees[0];
    // The iperf3 server of make-veth.sh, pid 16144, is a process with its thread.
    assert!(tree.processes.iter().any(|p| p.pid == Some(16144)));
    let server = tree
        .threads
        .iter()
        .find(|t| t.tid == Some(16144))
        .expect("the server's thread");
    assert_eq!(server.tgid, Some(16144));
    assert_eq!(server.name.as_deref(), Some("iperf3"));
    for t in &tree.threads {
        let tgid = t.tgid.expect("every thread names its group");
        assert!(tree.processes.iter().any(|p| p.pid == Some(tgid)));
    }
}

#[test]
fn the_name_or_format_chooses_pftrace_and_the_window_applies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = data("disk-irq-stress.v7.dat");
    let named = dir.path().join("t.perfetto-trace");
    let o = run(&["convert", &file, named.to_str().unwrap(), "--cpu", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let d = decode(&named);
    assert_eq!(d.switches_per_cpu.keys().copied().collect::<Vec<_>>(), [1]);
    assert_eq!(
        d.switches_per_cpu[&1],
        switches_per_cpu(&file).0[&1],
        "--cpu 1 keeps CPU 1 whole"
    );
    let forced = dir.path().join("t.bin");
    let o = run(&[
        "convert",
        &file,
        forced.to_str().unwrap(),
        "--format",
        "pftrace",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(Trace::decode(&std::fs::read(&forced).unwrap()[..]).is_ok());
}
