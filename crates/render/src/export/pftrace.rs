//! Perfetto's own trace format (`.pftrace`): a protobuf `Trace` whose packets hold the
//! ftrace events as Perfetto's `FtraceEventBundle`s, so that ui.perfetto.dev draws its
//! CPU tracks and trace processor fills `sched_slice`, `thread_state`, `irq` and
//! `softirq` slices as it does for a trace Perfetto recorded itself.
//!
//! The messages are encoded by hand (`protobuf.rs`) from the field numbers Perfetto
//! publishes in `protos/perfetto/trace/` (google/perfetto; the numbers are stable: the
//! format is the on-disk format of every Perfetto trace). What is written:
//!
//! - a `SystemInfo` packet (field 45) with the kernel's `Utsname` (field 1): trace
//!   processor reads `sched_switch`'s `prev_state` by the kernel's release, and the .dat's
//!   `uname` names it; without one, `4.14` is written, the layout of the task states the
//!   trace crate decodes (`R+` = 0x100);
//! - a `ProcessTree` packet (field 2) before the first event, from the trace's tables of
//!   thread groups and task names (a .dat that `jitterlab record` wrote, ftrace text with
//!   the TGID column): a `Process` per thread group, a `Thread` with its `tgid` per task;
//! - `FtraceEventBundle` packets (field 1), one CPU each, flushed every
//!   [`BUNDLE_EVENTS`] events of that CPU (memory holds one open bundle per CPU, never
//!   the trace), with `lost_events` set on the bundle after the kernel lost events. The
//!   events: sched_switch, sched_waking, sched_wakeup, sched_wakeup_new,
//!   sched_migrate_task, sched_process_fork/exec/exit, task_newtask, task_rename,
//!   irq_handler_entry/exit, softirq_raise/entry/exit, hrtimer_expire_entry/exit,
//!   workqueue_execute_start/end and print (trace_marker). Others (function_graph,
//!   ipi_send_cpu, events without a Perfetto message) are counted as skipped.
//!
//! Timestamps are the trace clock's nanoseconds, unchanged; no `ftrace_clock` is named,
//! so trace processor takes them as its boot-time clock.
//!
//! A streaming format like the Chrome JSON: feed [`PftraceWriter::event`] the events in
//! time order, then [`PftraceWriter::finish`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{self, Write};

use jitterlab_trace::{Comm, Event, EventKind, Value, Wakeup};
use serde::Serialize;

use super::protobuf::Pb;

/// Events per CPU in one bundle before it is written.
pub const BUNDLE_EVENTS: u32 = 4096;

/// Field numbers, from Perfetto's protos/perfetto/trace/*.proto.
mod field {
    /// `Trace.packet`.
    pub const TRACE_PACKET: u32 = 1;
    /// `TracePacket.timestamp`.
    pub const PACKET_TIMESTAMP: u32 = 8;
    /// `TracePacket.ftrace_events`.
    pub const PACKET_FTRACE_EVENTS: u32 = 1;
    /// `TracePacket.process_tree`.
    pub const PACKET_PROCESS_TREE: u32 = 2;
    /// `TracePacket.system_info`.
    pub const PACKET_SYSTEM_INFO: u32 = 45;
    /// `TracePacket.trusted_packet_sequence_id`.
    pub const PACKET_SEQUENCE_ID: u32 = 10;
    /// `FtraceEventBundle.cpu`, `.event`, `.lost_events`.
    pub const BUNDLE_CPU: u32 = 1;
    pub const BUNDLE_EVENT: u32 = 2;
    pub const BUNDLE_LOST_EVENTS: u32 = 3;
    /// `FtraceEvent.timestamp`, `.pid`, `.common_flags`.
    pub const EVENT_TIMESTAMP: u32 = 1;
    pub const EVENT_PID: u32 = 2;
    pub const EVENT_COMMON_FLAGS: u32 = 5;
    /// `FtraceEvent`'s event oneof.
    pub const PRINT: u32 = 3;
    pub const SCHED_SWITCH: u32 = 4;
    pub const SCHED_WAKEUP: u32 = 17;
    pub const SCHED_WAKING: u32 = 20;
    pub const SOFTIRQ_ENTRY: u32 = 24;
    pub const SOFTIRQ_EXIT: u32 = 25;
    pub const SOFTIRQ_RAISE: u32 = 26;
    pub const IRQ_HANDLER_ENTRY: u32 = 36;
    pub const IRQ_HANDLER_EXIT: u32 = 37;
    pub const WORKQUEUE_EXECUTE_END: u32 = 57;
    pub const WORKQUEUE_EXECUTE_START: u32 = 58;
    pub const SCHED_WAKEUP_NEW: u32 = 114;
    pub const TASK_NEWTASK: u32 = 235;
    pub const TASK_RENAME: u32 = 236;
    pub const SCHED_PROCESS_EXEC: u32 = 237;
    pub const SCHED_PROCESS_EXIT: u32 = 238;
    pub const SCHED_PROCESS_FORK: u32 = 239;
    pub const SCHED_MIGRATE_TASK: u32 = 491;
    pub const HRTIMER_EXPIRE_ENTRY: u32 = 553;
    pub const HRTIMER_EXPIRE_EXIT: u32 = 554;
    /// `ProcessTree.processes`, `.threads`; `Process.pid`, `.cmdline`,
    /// `.cmdline_is_comm`; `Thread.tid`, `.name`, `.tgid`.
    pub const TREE_PROCESSES: u32 = 1;
    pub const TREE_THREADS: u32 = 2;
    pub const PROCESS_PID: u32 = 1;
    pub const PROCESS_CMDLINE: u32 = 3;
    pub const PROCESS_CMDLINE_IS_COMM: u32 = 9;
    pub const THREAD_TID: u32 = 1;
    pub const THREAD_NAME: u32 = 2;
    pub const THREAD_TGID: u32 = 3;
    /// `SystemInfo.utsname`; `Utsname.sysname`, `.release`, `.machine`.
    pub const SYSTEM_INFO_UTSNAME: u32 = 1;
    pub const UTSNAME_SYSNAME: u32 = 1;
    pub const UTSNAME_RELEASE: u32 = 3;
    pub const UTSNAME_MACHINE: u32 = 4;
}

/// The packets' sequence (one writer: every packet is on it).
const SEQUENCE_ID: u64 = 1;

/// What the trace says about its tasks and kernel besides its events.
#[derive(Clone, Debug, Default)]
pub struct PftraceTables {
    /// Thread group ids by tid.
    pub tgids: HashMap<i32, i32>,
    /// Task names by tid.
    pub cmdlines: HashMap<i32, Comm>,
    /// The .dat's `uname` text (`Linux host 6.1.0-18-amd64 #1 SMP ... x86_64`).
    pub uname: Option<String>,
}

/// What was written, for the summary line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PftraceCounts {
    /// CPUs with events.
    pub cpus: u32,
    /// Ftrace event bundles.
    pub bundles: u64,
    /// Events written.
    pub events: u64,
    /// sched_switch events among them.
    pub sched_switch: u64,
    /// sched_waking events among them.
    pub sched_waking: u64,
    /// irq_handler_entry events among them.
    pub irq: u64,
    /// softirq_entry events among them.
    pub softirq: u64,
    /// Thread groups in the process tree.
    pub processes: u64,
    /// Threads in the process tree.
    pub threads: u64,
    /// Events with no Perfetto message, not written.
    pub skipped: u64,
    /// Bundles marked as following lost events.
    pub lost: u64,
}

/// One CPU's open bundle.
#[derive(Default)]
struct Bundle {
    /// The encoded `FtraceEvent` fields (`event` entries of the bundle).
    events: Vec<u8>,
    /// How many.
    count: u32,
    /// Events were lost before these.
    lost: bool,
}

/// Writes a Perfetto protobuf trace from events in time order.
pub struct PftraceWriter<W: Write> {
    out: W,
    tables: PftraceTables,
    started: bool,
    bundles: BTreeMap<u32, Bundle>,
    /// Scratch: one event, one packet.
    event: Pb,
    packet: Pb,
    counts: PftraceCounts,
    cpus: BTreeSet<u32>,
}

impl<W: Write> PftraceWriter<W> {
    /// A writer to `out`; `tables` give the process tree and the kernel's release.
    pub fn new(out: W, tables: PftraceTables) -> PftraceWriter<W> {
        PftraceWriter {
            out,
            tables,
            started: false,
            bundles: BTreeMap::new(),
            event: Pb::default(),
            packet: Pb::default(),
            counts: PftraceCounts::default(),
            cpus: BTreeSet::new(),
        }
    }

    /// Adds `ev` (events come in time order).
    pub fn event(&mut self, ev: &Event) -> io::Result<()> {
        if !self.started {
            self.started = true;
            self.header(ev.ts)?;
        }
        if let EventKind::Lost { .. } = ev.kind {
            self.bundles.entry(ev.cpu).or_default().lost = true;
            return Ok(());
        }
        self.event.clear();
        if !encode_event(&mut self.event, ev, &self.tables.tgids) {
            self.counts.skipped += 1;
            return Ok(());
        }
        match ev.kind {
            EventKind::SchedSwitch { .. } => self.counts.sched_switch += 1,
            EventKind::SchedWaking(_) => self.counts.sched_waking += 1,
            EventKind::IrqHandlerEntry { .. } => self.counts.irq += 1,
            EventKind::SoftirqEntry { .. } => self.counts.softirq += 1,
            _ => {}
        }
        self.counts.events += 1;
        self.cpus.insert(ev.cpu);
        let b = self.bundles.entry(ev.cpu).or_default();
        let mut wrap = Pb {
            buf: std::mem::take(&mut b.events),
        };
        wrap.encoded(field::BUNDLE_EVENT, &self.event.buf);
        b.events = wrap.buf;
        b.count += 1;
        if b.count >= BUNDLE_EVENTS {
            self.flush(ev.cpu)?;
        }
        Ok(())
    }

    /// Writes the open bundles, in CPU order, and returns the output and the counts.
    pub fn finish(mut self) -> io::Result<(W, PftraceCounts)> {
        let cpus: Vec<u32> = self.bundles.keys().copied().collect();
        for cpu in cpus {
            self.flush(cpu)?;
        }
        self.out.flush()?;
        self.counts.cpus = self.cpus.len() as u32;
        Ok((self.out, self.counts))
    }

    /// The packet in `self.packet`, as a `Trace.packet` entry.
    fn write_packet(&mut self) -> io::Result<()> {
        self.packet.uint(field::PACKET_SEQUENCE_ID, SEQUENCE_ID);
        let mut head = Pb::default();
        head.len_header(field::TRACE_PACKET, self.packet.buf.len());
        self.out.write_all(&head.buf)?;
        self.out.write_all(&self.packet.buf)
    }

    /// The system info and the process tree, at the first event's time.
    fn header(&mut self, ts: u64) -> io::Result<()> {
        let (sysname, release, machine) = utsname(self.tables.uname.as_deref());
        self.packet.clear();
        self.packet.message(field::PACKET_SYSTEM_INFO, |si| {
            si.message(field::SYSTEM_INFO_UTSNAME, |u| {
                u.str(field::UTSNAME_SYSNAME, sysname);
                u.str(field::UTSNAME_RELEASE, release);
                if let Some(m) = machine {
                    u.str(field::UTSNAME_MACHINE, m);
                }
            })
        });
        self.write_packet()?;

        let tables = &self.tables;
        let mut groups: BTreeSet<i32> = BTreeSet::new();
        let mut threads: BTreeMap<i32, i32> = BTreeMap::new();
        for (&tid, &tgid) in &tables.tgids {
            if tid > 0 && tgid > 0 {
                groups.insert(tgid);
                threads.insert(tid, tgid);
            }
        }
        if threads.is_empty() {
            return Ok(());
        }
        self.counts.processes = groups.len() as u64;
        self.counts.threads = threads.len() as u64;
        self.packet.clear();
        self.packet.uint(field::PACKET_TIMESTAMP, ts);
        self.packet.message(field::PACKET_PROCESS_TREE, |tree| {
            for &pid in &groups {
                tree.message(field::TREE_PROCESSES, |p| {
                    p.int(field::PROCESS_PID, i64::from(pid));
                    if let Some(comm) = tables.cmdlines.get(&pid) {
                        p.str(field::PROCESS_CMDLINE, comm.as_str());
                        p.uint(field::PROCESS_CMDLINE_IS_COMM, 1);
                    }
                });
            }
            for (&tid, &tgid) in &threads {
                tree.message(field::TREE_THREADS, |t| {
                    t.int(field::THREAD_TID, i64::from(tid));
                    if let Some(comm) = tables.cmdlines.get(&tid) {
                        t.str(field::THREAD_NAME, comm.as_str());
                    }
                    t.int(field::THREAD_TGID, i64::from(tgid));
                });
            }
        });
        self.write_packet()
    }

    /// Writes CPU `cpu`'s open bundle, if it holds anything.
    fn flush(&mut self, cpu: u32) -> io::Result<()> {
        let Some(b) = self.bundles.get_mut(&cpu) else {
            return Ok(());
        };
        if b.count == 0 && !b.lost {
            return Ok(());
        }
        let events = std::mem::take(&mut b.events);
        let lost = std::mem::take(&mut b.lost);
        b.count = 0;
        self.packet.clear();
        self.packet.message(field::PACKET_FTRACE_EVENTS, |bundle| {
            bundle.uint(field::BUNDLE_CPU, u64::from(cpu));
            if lost {
                bundle.uint(field::BUNDLE_LOST_EVENTS, 1);
            }
            bundle.buf.extend_from_slice(&events);
        });
        self.counts.bundles += 1;
        self.counts.lost += u64::from(lost);
        self.write_packet()?;
        // Keep the allocation for the next bundle.
        let mut events = events;
        events.clear();
        if let Some(b) = self.bundles.get_mut(&cpu) {
            b.events = events;
        }
        Ok(())
    }
}

/// Sysname, release and machine from the .dat's `uname` text: trace-cmd writes `uname
/// -a`'s `Linux vm 6.18.0-1-amd64 #1 SMP ... x86_64`, `jitterlab record` `uname -srvm`'s
/// (no host name), so the release is the first word after the system's name that starts
/// with a digit; without one, Linux 4.14 (see the module's note).
fn utsname(uname: Option<&str>) -> (&str, &str, Option<&str>) {
    let words: Vec<&str> = uname
        .map(|u| u.split_whitespace().collect())
        .unwrap_or_default();
    let release = words
        .iter()
        .skip(1)
        .take(2)
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()));
    match (words.first(), release, words.last()) {
        (Some(sys), Some(release), Some(machine)) if words.len() >= 3 => {
            (sys, release, Some(machine))
        }
        _ => ("Linux", "4.14", None),
    }
}

/// The woken task of a sched_waking, sched_wakeup or sched_wakeup_new.
fn wakeup(m: &mut Pb, w: &Wakeup) {
    m.str(1, w.comm.as_str());
    m.int(2, i64::from(w.pid));
    m.int(3, i64::from(w.prio));
    m.int(4, 1);
    m.int(5, i64::from(w.target_cpu));
}

/// A generic event's integer field by name.
fn int_field(fields: &[(jitterlab_trace::Text, Value)], name: &str) -> Option<i64> {
    fields
        .iter()
        .find(|(k, _)| &**k == name)
        .and_then(|(_, v)| match v {
            Value::Int(i) => Some(*i),
            Value::Uint(u) => i64::try_from(*u).ok(),
            _ => None,
        })
}

/// A generic event's string field by name.
fn str_field<'a>(fields: &'a [(jitterlab_trace::Text, Value)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| &**k == name)
        .and_then(|(_, v)| match v {
            Value::Str(s) => Some(&**s),
            _ => None,
        })
}

/// Encodes `ev` as an `FtraceEvent` into `m`; false when Perfetto has no message for it.
fn encode_event(m: &mut Pb, ev: &Event, tgids: &HashMap<i32, i32>) -> bool {
    use field::*;
    m.uint(EVENT_TIMESTAMP, ev.ts);
    m.int(EVENT_PID, i64::from(ev.pid));
    m.uint(EVENT_COMMON_FLAGS, u64::from(ev.flags.0));
    match &ev.kind {
        EventKind::SchedSwitch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
        } => m.message(SCHED_SWITCH, |s| {
            s.str(1, prev_comm.as_str());
            s.int(2, i64::from(*prev_pid));
            s.int(3, i64::from(*prev_prio));
            s.int(4, prev_state.0 as i64);
            s.str(5, next_comm.as_str());
            s.int(6, i64::from(*next_pid));
            s.int(7, i64::from(*next_prio));
        }),
        EventKind::SchedWaking(w) => m.message(SCHED_WAKING, |s| wakeup(s, w)),
        EventKind::SchedWakeup(w) => m.message(SCHED_WAKEUP, |s| wakeup(s, w)),
        EventKind::SchedWakeupNew(w) => m.message(SCHED_WAKEUP_NEW, |s| wakeup(s, w)),
        EventKind::SchedMigrateTask {
            comm,
            pid,
            prio,
            orig_cpu,
            dest_cpu,
        } => m.message(SCHED_MIGRATE_TASK, |s| {
            s.str(1, comm.as_str());
            s.int(2, i64::from(*pid));
            s.int(3, i64::from(*prio));
            s.int(4, i64::from(*orig_cpu));
            s.int(5, i64::from(*dest_cpu));
        }),
        EventKind::SchedProcessFork {
            parent_comm,
            parent_pid,
            child_comm,
            child_pid,
        } => m.message(SCHED_PROCESS_FORK, |s| {
            s.str(1, parent_comm.as_str());
            s.int(2, i64::from(*parent_pid));
            s.str(3, child_comm.as_str());
            s.int(4, i64::from(*child_pid));
        }),
        EventKind::SchedProcessExec {
            filename,
            pid,
            old_pid,
        } => m.message(SCHED_PROCESS_EXEC, |s| {
            s.str(1, filename);
            s.int(2, i64::from(*pid));
            s.int(3, i64::from(*old_pid));
        }),
        EventKind::SchedProcessExit { comm, pid, prio } => m.message(SCHED_PROCESS_EXIT, |s| {
            s.str(1, comm.as_str());
            s.int(2, i64::from(*pid));
            if let Some(tgid) = tgids.get(pid) {
                s.int(3, i64::from(*tgid));
            }
            s.int(4, i64::from(*prio));
        }),
        EventKind::IrqHandlerEntry { irq, name } => m.message(IRQ_HANDLER_ENTRY, |s| {
            s.int(1, i64::from(*irq));
            s.str(2, name);
        }),
        EventKind::IrqHandlerExit { irq, ret } => m.message(IRQ_HANDLER_EXIT, |s| {
            s.int(1, i64::from(*irq));
            s.int(2, i64::from(*ret));
        }),
        EventKind::SoftirqRaise { vec } => m.message(SOFTIRQ_RAISE, |s| s.uint(1, u64::from(*vec))),
        EventKind::SoftirqEntry { vec } => m.message(SOFTIRQ_ENTRY, |s| s.uint(1, u64::from(*vec))),
        EventKind::SoftirqExit { vec } => m.message(SOFTIRQ_EXIT, |s| s.uint(1, u64::from(*vec))),
        EventKind::HrtimerExpireEntry {
            hrtimer,
            now,
            function,
        } => m.message(HRTIMER_EXPIRE_ENTRY, |s| {
            s.uint(1, *hrtimer);
            s.int(2, *now as i64);
            s.uint(3, function.addr);
        }),
        EventKind::HrtimerExpireExit { hrtimer } => {
            m.message(HRTIMER_EXPIRE_EXIT, |s| s.uint(1, *hrtimer))
        }
        EventKind::WorkqueueExecuteStart { work, function } => {
            m.message(WORKQUEUE_EXECUTE_START, |s| {
                s.uint(1, *work);
                s.uint(2, function.addr);
            })
        }
        EventKind::WorkqueueExecuteEnd { work, function } => {
            m.message(WORKQUEUE_EXECUTE_END, |s| {
                s.uint(1, *work);
                s.uint(2, function.addr);
            })
        }
        EventKind::Print { ip, text } => m.message(PRINT, |s| {
            s.uint(1, *ip);
            // The kernel's buffer ends in the newline the reader took off.
            s.str_nl(2, text);
        }),
        EventKind::Other { name, fields } => match &**name {
            "task:task_newtask" => m.message(TASK_NEWTASK, |s| {
                if let Some(pid) = int_field(fields, "pid") {
                    s.int(1, pid);
                }
                if let Some(comm) = str_field(fields, "comm") {
                    s.str(2, comm);
                }
                if let Some(f) = int_field(fields, "clone_flags") {
                    s.int(3, f);
                }
                if let Some(o) = int_field(fields, "oom_score_adj") {
                    s.int(4, o);
                }
            }),
            "task:task_rename" => m.message(TASK_RENAME, |s| {
                if let Some(pid) = int_field(fields, "pid") {
                    s.int(1, pid);
                }
                if let Some(c) = str_field(fields, "oldcomm") {
                    s.str(2, c);
                }
                if let Some(c) = str_field(fields, "newcomm") {
                    s.str(3, c);
                }
                if let Some(o) = int_field(fields, "oom_score_adj") {
                    s.int(4, o);
                }
            }),
            _ => return false,
        },
        _ => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::utsname;

    #[test]
    fn the_release_is_found_with_or_without_a_host_name() {
        let a = "Linux vm 6.18.0-1-amd64 #1 SMP PREEMPT_DYNAMIC Debian x86_64";
        assert_eq!(
            utsname(Some(a)),
            ("Linux", "6.18.0-1-amd64", Some("x86_64"))
        );
        let b = "Linux 6.1.0-rt5 #1 SMP PREEMPT_RT aarch64";
        assert_eq!(utsname(Some(b)), ("Linux", "6.1.0-rt5", Some("aarch64")));
        assert_eq!(utsname(Some("garbage")), ("Linux", "4.14", None));
        assert_eq!(utsname(None), ("Linux", "4.14", None));
    }
}
