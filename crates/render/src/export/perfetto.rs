//! The Chrome trace-event JSON that ui.perfetto.dev and chrome://tracing open, written from
//! the intervals of the analysis state machine as they end (streaming: memory does not
//! grow with the trace).
//!
//! Layout: one process per CPU (`CPU 0`, `CPU 1` ...), sorted by CPU number, with three
//! thread tracks each:
//!
//! - `tasks`: a complete (`X`) slice per run slice, named by the task's comm (`idle` for
//!   the idle task), with the tid, priority and how the slice ended in its arguments;
//! - `hardirq`: a slice per interrupt handler run, named `irq N name`, nested as the
//!   handlers nested;
//! - `softirq`: a slice per softirq run, named by its vector (`TIMER`, `NET_RX` ...).
//!
//! A wake-up is a flow arrow (`s` -> `f`, category `wakeup`) from the waker's slice at the
//! sched_waking (the waking task's slice, or the hardirq or softirq slice that woke it) to
//! the woken task's slice at its switch-in. trace_marker writes are thread-scoped instant
//! events on the tasks track; lost events are process-scoped instants.
//!
//! Times are microseconds with three decimals, written from the integer nanoseconds
//! (exact; no floating point).
//!
//! A streaming format, so not an [`Exporter`](super::Exporter): there is no model to
//! hand over whole, the machine's intervals are written as they end. Open the output
//! with [`Target::create`](super::Target::create) (or any `Write`), feed the writer to
//! the machine as its sink, then [`PerfettoWriter::finish`] it.

use std::io::{self, Write};

use jitterlab_analyze::{
    softirq_name, Anomaly, AnomalyKind, IrqSpan, Marker, RunSlice, Sink, SliceEnd, SoftirqSpan,
    Wake, Waker,
};
use jitterlab_trace::TaskState;
use serde::Serialize;

/// The tracks of a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Track {
    Tasks = 0,
    Hardirq = 1,
    Softirq = 2,
}

impl Track {
    const ALL: [Track; 3] = [Track::Tasks, Track::Hardirq, Track::Softirq];

    fn name(self) -> &'static str {
        match self {
            Track::Tasks => "tasks",
            Track::Hardirq => "hardirq",
            Track::Softirq => "softirq",
        }
    }
}

/// The process id of CPU `cpu`'s tracks (pid 0 is left alone: viewers treat it as the
/// idle process).
fn pid(cpu: u32) -> u64 {
    u64::from(cpu) + 1
}

/// The thread id of a track: unique over the whole file, as viewers key threads by tid.
fn tid(cpu: u32, track: Track) -> u64 {
    1_000_000 + u64::from(cpu) * 4 + track as u64
}

/// `ns` as microseconds with three decimals.
struct Micros(u64);

impl std::fmt::Display for Micros {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

/// What was written, for the summary line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PerfettoCounts {
    /// CPUs with tracks.
    pub cpus: u32,
    /// Task slices (idle included).
    pub task_slices: u64,
    /// Hard IRQ slices.
    pub irq_slices: u64,
    /// Softirq slices.
    pub softirq_slices: u64,
    /// Wake-up arrows.
    pub wakeups: u64,
    /// trace_marker instants.
    pub markers: u64,
    /// Lost-event instants.
    pub lost: u64,
}

/// Writes Chrome trace-event JSON while the state machine runs: a [`Sink`]. Call
/// [`PerfettoWriter::finish`] after the machine's `finish` to close the document.
pub struct PerfettoWriter<W: Write> {
    out: W,
    /// Events written and not yet handed to `out`: handed over in large chunks, which a
    /// `BufWriter` passes through without copying them again.
    line: Vec<u8>,
    first: bool,
    error: Option<io::Error>,
    /// The CPUs whose tracks are named, by number (the machine's intervals name CPUs
    /// below its bound of 8192).
    named: Vec<bool>,
    counts: PerfettoCounts,
}

/// What [`PerfettoWriter`] hands `out` at once, bytes.
const CHUNK: usize = 1 << 16;

impl<W: Write> PerfettoWriter<W> {
    /// Starts the document.
    pub fn new(mut out: W) -> io::Result<PerfettoWriter<W>> {
        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        Ok(PerfettoWriter {
            out,
            line: Vec::with_capacity(CHUNK + 4096),
            first: true,
            error: None,
            named: Vec::new(),
            counts: PerfettoCounts::default(),
        })
    }

    /// Closes the document; the first write error, if any happened.
    pub fn finish(mut self) -> io::Result<(W, PerfettoCounts)> {
        self.hand_over();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()?;
        self.counts.cpus = self.named.iter().filter(|&&n| n).count() as u32;
        Ok((self.out, self.counts))
    }

    /// Writes one event object (given without braces).
    fn event(&mut self, body: std::fmt::Arguments<'_>) {
        if self.error.is_some() {
            return;
        }
        let b = self.open();
        // Writing into a Vec cannot fail.
        let _ = b.write_fmt(body);
        self.close();
    }

    /// Hands the events written so far to `out`, keeping the first error.
    fn hand_over(&mut self) {
        if self.error.is_none() && !self.line.is_empty() {
            if let Err(e) = self.out.write_all(&self.line) {
                self.error = Some(e);
            }
        }
        self.line.clear();
    }

    /// Names a CPU's process and tracks the first time the CPU shows up.
    fn cpu(&mut self, cpu: u32) {
        let i = cpu as usize;
        if self.named.get(i).copied().unwrap_or(false) {
            return;
        }
        if self.named.len() <= i {
            self.named.resize(i + 1, false);
        }
        self.named[i] = true;
        let p = pid(cpu);
        self.event(format_args!(
            "\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{p},\"tid\":{},\"args\":{{\"name\":\"CPU {cpu}\"}}",
            tid(cpu, Track::Tasks)
        ));
        self.event(format_args!(
            "\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{p},\"tid\":{},\"args\":{{\"sort_index\":{cpu}}}",
            tid(cpu, Track::Tasks)
        ));
        for track in Track::ALL {
            let t = tid(cpu, track);
            self.event(format_args!(
                "\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{p},\"tid\":{t},\"args\":{{\"name\":\"{}\"}}",
                track.name()
            ));
            self.event(format_args!(
                "\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{p},\"tid\":{t},\"args\":{{\"sort_index\":{}}}",
                track as u32
            ));
        }
    }

    /// Starts an event object in [`Self::line`]: the separator and the brace.
    fn open(&mut self) -> &mut Vec<u8> {
        self.line
            .extend_from_slice(if self.first { b"{" } else { b",\n{" });
        self.first = false;
        &mut self.line
    }

    /// Ends the event object in [`Self::line`]; hands a full chunk over.
    fn close(&mut self) {
        self.line.push(b'}');
        if self.line.len() >= CHUNK {
            self.hand_over();
        }
    }

    /// A complete slice: `args` writes its arguments (without braces) after `"args":{`.
    fn complete(
        &mut self,
        cpu: u32,
        track: Track,
        cat: &str,
        name: Name<'_>,
        (start, end): (u64, u64),
        args: impl FnOnce(&mut Vec<u8>),
    ) {
        self.cpu(cpu);
        if self.error.is_some() {
            return;
        }
        let b = self.open();
        b.extend_from_slice(b"\"ph\":\"X\",\"cat\":\"");
        b.extend_from_slice(cat.as_bytes());
        b.extend_from_slice(b"\",\"name\":");
        name.write(b);
        b.extend_from_slice(b",\"pid\":");
        num(b, pid(cpu));
        b.extend_from_slice(b",\"tid\":");
        num(b, tid(cpu, track));
        b.extend_from_slice(b",\"ts\":");
        micros(b, start);
        b.extend_from_slice(b",\"dur\":");
        micros(b, end.saturating_sub(start));
        b.extend_from_slice(b",\"args\":{");
        args(b);
        b.push(b'}');
        self.close();
    }

    /// A wake-up's flow end (`s` at the waking, `f` at the switch-in).
    fn flow(&mut self, head: &[u8], id: u64, cpu: u32, track: Track, ts: u64) {
        if self.error.is_some() {
            return;
        }
        let b = self.open();
        b.extend_from_slice(head);
        num(b, id);
        b.extend_from_slice(b",\"pid\":");
        num(b, pid(cpu));
        b.extend_from_slice(b",\"tid\":");
        num(b, tid(cpu, track));
        b.extend_from_slice(b",\"ts\":");
        micros(b, ts);
        self.close();
    }
}

/// A slice's name as written.
enum Name<'a> {
    /// Known not to need escaping.
    Plain(&'a str),
    /// Escaped as a JSON string.
    Escaped(&'a str),
    /// `irq N name`, escaped.
    Irq(u32, &'a str),
}

impl Name<'_> {
    fn write(&self, b: &mut Vec<u8>) {
        match self {
            Name::Plain(s) => {
                b.push(b'"');
                b.extend_from_slice(s.as_bytes());
                b.push(b'"');
            }
            // Most names need no escape: written as they are, without serde_json's
            // escaping walk (3.6 % of a convert's instructions).
            Name::Escaped(s) if !needs_escape(s) => Name::Plain(s).write(b),
            Name::Escaped(s) => json_string_into(b, s),
            Name::Irq(irq, name) => json_string_into(b, &format!("irq {irq} {name}")),
        }
    }
}

/// True when `s` has a character a JSON string must escape: a quote, a backslash or a
/// control character.
fn needs_escape(s: &str) -> bool {
    s.bytes().any(|c| c < 0x20 || c == b'"' || c == b'\\')
}

/// `v` in decimal.
fn num(b: &mut Vec<u8>, v: impl itoa::Integer) {
    b.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// `ns` as microseconds with three decimals, as [`Micros`] writes them.
fn micros(b: &mut Vec<u8>, ns: u64) {
    num(b, ns / 1000);
    let frac = ns % 1000;
    b.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

/// `s` as a JSON string literal, appended.
fn json_string_into(b: &mut Vec<u8>, s: &str) {
    if serde_json::to_writer(&mut *b, s).is_err() {
        b.extend_from_slice(b"\"?\"");
    }
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".to_string())
}

/// How a slice ended, as its `end` argument says (with the JSON string's quotes).
fn end_name(b: &mut Vec<u8>, e: SliceEnd) {
    match e {
        SliceEnd::Preempted => b.extend_from_slice(b"\"preempted\""),
        // The two common states without formatting them.
        SliceEnd::Slept(TaskState(TaskState::INTERRUPTIBLE)) => b.extend_from_slice(b"\"slept S\""),
        SliceEnd::Slept(TaskState(TaskState::UNINTERRUPTIBLE)) => {
            b.extend_from_slice(b"\"slept D\"")
        }
        SliceEnd::Slept(st) => json_string_into(b, &format!("slept {st}")),
        SliceEnd::Exited => b.extend_from_slice(b"\"exited\""),
        SliceEnd::TraceEnd => b.extend_from_slice(b"\"trace end\""),
        SliceEnd::Displaced => b.extend_from_slice(b"\"displaced\""),
        SliceEnd::Lost => b.extend_from_slice(b"\"lost\""),
    }
}

impl<W: Write> Sink for PerfettoWriter<W> {
    fn slice(&mut self, s: &RunSlice) {
        self.counts.task_slices += 1;
        let (cat, name) = if s.is_idle() {
            ("idle", Name::Plain("idle"))
        } else {
            ("task", Name::Escaped(s.comm.as_str()))
        };
        let (tid, prio, end) = (s.tid, s.prio, s.end_kind);
        self.complete(s.cpu, Track::Tasks, cat, name, (s.start, s.end), |b| {
            b.extend_from_slice(b"\"tid\":");
            num(b, tid);
            b.extend_from_slice(b",\"prio\":");
            match prio {
                Some(p) => num(b, p),
                None => b.extend_from_slice(b"null"),
            }
            b.extend_from_slice(b",\"end\":");
            end_name(b, end);
        });
    }

    fn irq(&mut self, s: &IrqSpan) {
        self.counts.irq_slices += 1;
        let (irq, ret) = (s.irq, s.ret);
        self.complete(
            s.cpu,
            Track::Hardirq,
            "irq",
            Name::Irq(s.irq, &s.name),
            (s.start, s.end),
            |b| {
                b.extend_from_slice(b"\"irq\":");
                num(b, irq);
                b.extend_from_slice(b",\"ret\":");
                num(b, ret);
            },
        );
    }

    fn softirq(&mut self, s: &SoftirqSpan) {
        self.counts.softirq_slices += 1;
        let (vec, raised) = (s.vec, s.raised_by);
        let name = softirq_name(s.vec);
        self.complete(
            s.cpu,
            Track::Softirq,
            "softirq",
            Name::Escaped(&name),
            (s.start, s.end),
            |b| {
                b.extend_from_slice(b"\"vec\":");
                num(b, vec);
                b.extend_from_slice(b",\"raised_by_irq\":");
                match raised {
                    Some(n) => num(b, n),
                    None => b.extend_from_slice(b"null"),
                }
            },
        );
    }

    fn wake(&mut self, w: &Wake) {
        self.counts.wakeups += 1;
        let id = self.counts.wakeups;
        let from = match w.waker {
            Waker::Hardirq { irq: Some(_) } => Track::Hardirq,
            Waker::Softirq { vec: Some(_), .. } => Track::Softirq,
            _ => Track::Tasks,
        };
        self.cpu(w.waker_cpu);
        self.cpu(w.cpu);
        self.flow(
            b"\"ph\":\"s\",\"cat\":\"wakeup\",\"name\":\"wakeup\",\"id\":",
            id,
            w.waker_cpu,
            from,
            w.waking_ts,
        );
        self.flow(
            b"\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"wakeup\",\"name\":\"wakeup\",\"id\":",
            id,
            w.cpu,
            Track::Tasks,
            w.switch_in_ts,
        );
    }

    fn marker(&mut self, m: &Marker) {
        self.counts.markers += 1;
        self.cpu(m.cpu);
        let name = json_string(m.text.trim_end());
        self.event(format_args!(
            "\"ph\":\"i\",\"s\":\"t\",\"cat\":\"marker\",\"name\":{name},\"pid\":{},\"tid\":{},\"ts\":{},\"args\":{{\"tid\":{}}}",
            pid(m.cpu),
            tid(m.cpu, Track::Tasks),
            Micros(m.ts),
            m.tid,
        ));
    }

    fn anomaly(&mut self, a: &Anomaly) {
        if a.kind != AnomalyKind::LostEvents {
            return;
        }
        self.counts.lost += 1;
        self.cpu(a.cpu);
        self.event(format_args!(
            "\"ph\":\"i\",\"s\":\"p\",\"cat\":\"lost\",\"name\":\"lost events\",\"pid\":{},\"tid\":{},\"ts\":{},\"args\":{{\"count\":{}}}",
            pid(a.cpu),
            tid(a.cpu, Track::Tasks),
            Micros(a.ts),
            a.count,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_trace::Comm;

    fn run_slice(cpu: u32, tid: i32, start: u64, end: u64) -> RunSlice {
        RunSlice {
            cpu,
            task: None,
            tid,
            comm: Comm::new("a\"b"),
            prio: Some(120),
            start,
            end,
            start_kind: jitterlab_analyze::SliceStart::Switch,
            end_kind: SliceEnd::Preempted,
            last_seen: end,
        }
    }

    #[test]
    fn writes_valid_json_with_named_tracks_and_exact_times() {
        let mut w = PerfettoWriter::new(Vec::new()).unwrap();
        w.slice(&run_slice(1, 7, 1_234_567, 2_000_001));
        w.slice(&run_slice(1, 0, 2_000_001, 3_000_000));
        let (out, counts) = w.finish().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        // 2 process + 6 thread metadata events for CPU 1, then the slices.
        assert_eq!(evs.len(), 8 + 2);
        assert_eq!(counts.cpus, 1);
        assert_eq!(counts.task_slices, 2);
        let x: Vec<_> = evs.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(x[0]["name"], "a\"b");
        assert_eq!(x[0]["ts"].as_f64(), Some(1234.567));
        assert_eq!(x[0]["dur"].as_f64(), Some(765.434));
        assert_eq!(x[1]["name"], "idle");
        assert_eq!(x[0]["pid"], 2);
        let names: Vec<_> = evs
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["tasks", "hardirq", "softirq"]);
    }

    /// Names are escaped only when they must be, and the states written as literals
    /// read as the formatted ones.
    #[test]
    fn names_and_states_read_back_as_given() {
        let mut w = PerfettoWriter::new(Vec::new()).unwrap();
        let states = [
            TaskState(TaskState::INTERRUPTIBLE),
            TaskState(TaskState::UNINTERRUPTIBLE),
            TaskState(TaskState::UNINTERRUPTIBLE | 128),
        ];
        let names = ["plain-name/0", "tab\there", "back\\slash", "quo\"te"];
        for (i, name) in names.iter().enumerate() {
            let mut s = run_slice(0, 5, 1000 * i as u64, 1000 * i as u64 + 500);
            s.comm = Comm::new(name);
            s.end_kind = SliceEnd::Slept(states[i % states.len()]);
            w.slice(&s);
        }
        let (out, _) = w.finish().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let x: Vec<_> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        for (i, name) in names.iter().enumerate() {
            assert_eq!(x[i]["name"], *name);
            let st = states[i % states.len()];
            assert_eq!(x[i]["args"]["end"], format!("slept {st}"));
        }
        let plain = b"\"name\":\"plain-name/0\"";
        assert!(out.windows(plain.len()).any(|w| w == plain));
    }

    #[test]
    fn a_wakeup_is_a_flow_from_the_waker_track_to_the_woken_slice() {
        let mut w = PerfettoWriter::new(Vec::new()).unwrap();
        w.wake(&Wake {
            task: 0,
            tid: 9,
            comm: Comm::new("rt"),
            prio: 9,
            waking_ts: 5_000,
            waker: Waker::Hardirq { irq: Some(36) },
            waker_cpu: 0,
            by_hrtimer: false,
            wakeup_ts: None,
            switch_in_ts: 9_000,
            cpu: 1,
            inferred: false,
            inferred_after: None,
            from_idle: None,
            irq_exit_ts: Some(6_000),
            softirq_exit_ts: None,
            new_task: false,
        });
        let (out, counts) = w.finish().unwrap();
        assert_eq!(counts.wakeups, 1);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        let s = evs.iter().find(|e| e["ph"] == "s").unwrap();
        let f = evs.iter().find(|e| e["ph"] == "f").unwrap();
        assert_eq!(s["id"], f["id"]);
        assert_eq!(s["tid"], tid(0, Track::Hardirq));
        assert_eq!(f["tid"], tid(1, Track::Tasks));
        assert_eq!(f["bp"], "e");
        assert_eq!(f["ts"].as_f64(), Some(9.0));
    }

    #[test]
    fn a_write_error_is_returned_by_finish() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        assert!(PerfettoWriter::new(Full).is_err());
        let mut w = PerfettoWriter {
            out: Full,
            line: Vec::new(),
            first: true,
            error: None,
            named: Vec::new(),
            counts: PerfettoCounts::default(),
        };
        w.slice(&run_slice(0, 1, 0, 1));
        let err = w.finish().err().unwrap();
        assert_eq!(err.to_string(), "disk full");
    }
}
