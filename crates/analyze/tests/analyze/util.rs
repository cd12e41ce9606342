//! Helpers: event constructors, an in-memory event source, the real traces.

use std::path::PathBuf;

use jitterlab_analyze::{analyze, AnalyzeReport, Collect, Machine, MachineOptions, Options};
use jitterlab_trace::dat::DatFile;
use jitterlab_trace::{
    text, Comm, Event, EventKind, EventSource, Flags, ReadStats, TaskState, TraceMeta, Wakeup,
};

/// Events in memory.
pub struct VecSource {
    events: std::vec::IntoIter<Event>,
    meta: TraceMeta,
    stats: ReadStats,
}

impl VecSource {
    pub fn new(events: Vec<Event>) -> VecSource {
        VecSource {
            events: events.into_iter(),
            meta: TraceMeta {
                format: "test events".into(),
                cpus: None,
            },
            stats: ReadStats::default(),
        }
    }
}

impl EventSource for VecSource {
    fn next_event(&mut self) -> jitterlab_trace::Result<Option<Event>> {
        Ok(self.events.next())
    }
    fn meta(&self) -> &TraceMeta {
        &self.meta
    }
    fn stats(&self) -> &ReadStats {
        &self.stats
    }
}

/// An event at `ts` ns on `cpu`, current task `pid`, no flags.
pub fn ev(ts: u64, cpu: u32, pid: i32, kind: EventKind) -> Event {
    Event {
        ts,
        cpu,
        pid,
        flags: Flags(0),
        preempt_count: 0,
        kind,
    }
}

/// The same with flags.
pub fn evf(ts: u64, cpu: u32, pid: i32, flags: u8, kind: EventKind) -> Event {
    Event {
        flags: Flags(flags),
        ..ev(ts, cpu, pid, kind)
    }
}

pub fn comm(pid: i32) -> Comm {
    if pid == 0 {
        Comm::new("swapper")
    } else {
        Comm::new(&format!("t{pid}"))
    }
}

/// sched_switch prev -> next with prev's state letters (`R+`, `S`, `D`, `X`).
pub fn switch(prev: i32, state: &str, next: i32) -> EventKind {
    EventKind::SchedSwitch {
        prev_comm: comm(prev),
        prev_pid: prev,
        prev_prio: 120,
        prev_state: TaskState::from_letters(state).expect("state letters"),
        next_comm: comm(next),
        next_pid: next,
        next_prio: 120,
    }
}

/// A sched_switch with the tasks' priorities.
pub fn switch_prio(prev: i32, pp: i32, state: &str, next: i32, np: i32) -> EventKind {
    let mut k = switch(prev, state, next);
    if let EventKind::SchedSwitch {
        prev_prio,
        next_prio,
        ..
    } = &mut k
    {
        *prev_prio = pp;
        *next_prio = np;
    }
    k
}

fn wakeup(pid: i32, cpu: u32) -> Wakeup {
    Wakeup {
        comm: comm(pid),
        pid,
        prio: 120,
        target_cpu: cpu,
    }
}

pub fn waking(pid: i32, cpu: u32) -> EventKind {
    EventKind::SchedWaking(wakeup(pid, cpu))
}

pub fn wakeup_ev(pid: i32, cpu: u32) -> EventKind {
    EventKind::SchedWakeup(wakeup(pid, cpu))
}

/// sched_process_exit of `pid`.
pub fn exit(pid: i32) -> EventKind {
    EventKind::SchedProcessExit {
        comm: comm(pid),
        pid,
        prio: 120,
    }
}

/// sched_process_fork of `child` by `parent`.
pub fn fork(parent: i32, child: i32) -> EventKind {
    EventKind::SchedProcessFork {
        parent_comm: comm(parent),
        parent_pid: parent,
        child_comm: comm(child),
        child_pid: child,
    }
}

pub fn wakeup_new(pid: i32, cpu: u32) -> EventKind {
    EventKind::SchedWakeupNew(wakeup(pid, cpu))
}

/// sched_migrate_task of `pid` from CPU `from` to CPU `to`.
pub fn migrate(pid: i32, from: u32, to: u32) -> EventKind {
    EventKind::SchedMigrateTask {
        comm: comm(pid),
        pid,
        prio: 120,
        orig_cpu: from,
        dest_cpu: to,
    }
}

pub fn irq_entry(irq: u32) -> EventKind {
    EventKind::IrqHandlerEntry {
        irq,
        name: format!("dev{irq}").as_str().into(),
    }
}

pub fn irq_exit(irq: u32) -> EventKind {
    EventKind::IrqHandlerExit { irq, ret: 1 }
}

/// Runs the machine over `events`, collecting every interval.
pub fn run(events: &[Event]) -> (Machine, Collect) {
    let mut m = Machine::new(MachineOptions::default());
    let mut out = Collect::default();
    for e in events {
        m.feed(e, &mut out);
    }
    m.finish(&mut out);
    (m, out)
}

/// Runs the whole analysis over `events`.
pub fn report(events: Vec<Event>, options: &Options) -> AnalyzeReport {
    analyze(&mut VecSource::new(events), options).expect("in-memory events never fail")
}

/// A real capture of this machine (the two captures of ../shared/traces, four files
/// each, and exits.v6.dat), from the trace crate's test data: a file kept there as it is,
/// or its `.zst` copy decompressed into the target directory's test scratch space
/// (`CARGO_TARGET_TMPDIR`), again only when the `.zst` is newer. (A temporary directory
/// held in a static was never removed: 36 MB left in /tmp by every run.)
pub fn trace(name: &str) -> PathBuf {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../trace/tests/data");
    for p in [data.join(name), data.join("text").join(name)] {
        if p.exists() {
            return p;
        }
    }
    let zst = data.join(format!("{name}.zst"));
    assert!(
        zst.exists(),
        "missing real trace {name} in {} (see its README)",
        data.display()
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("real-traces");
    std::fs::create_dir_all(&dir).expect("the real traces' directory");
    let out = dir.join(name.replace('/', "-"));
    let modified = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if modified(&out) < modified(&zst) {
        let bytes = zstd::decode_all(std::fs::File::open(&zst).expect("open .zst")).expect("zstd");
        // Test threads may race here: each writes its own file, the rename is atomic.
        let tmp = tempfile::NamedTempFile::new_in(&dir).expect("temp file");
        std::fs::write(tmp.path(), bytes).expect("write trace");
        tmp.persist(&out).expect("rename trace");
    }
    out
}

/// The report of a real trace file, .dat or text, chosen by content.
pub fn report_of(name: &str, options: &Options) -> AnalyzeReport {
    let path = trace(name);
    let bytes = std::fs::read(&path).expect("read trace");
    if bytes.starts_with(b"\x17\x08\x44tracing") {
        let dat = DatFile::open(&path).expect("open .dat");
        let mut events = dat.events(0).expect("events");
        analyze(&mut events, options).expect("analyze .dat")
    } else {
        let kind = text::detect(&bytes).expect("a text trace");
        let mut src =
            text::open(&bytes[..], kind, text::TextOptions::named(name)).expect("open text");
        analyze(&mut *src, options).expect("analyze text")
    }
}
