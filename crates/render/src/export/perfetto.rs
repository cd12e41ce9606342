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

use std::collections::BTreeSet;
use std::io::{self, Write};

use jitterlab_analyze::{
    softirq_name, Anomaly, AnomalyKind, IrqSpan, Marker, RunSlice, Sink, SliceEnd, SoftirqSpan,
    Wake, Waker,
};
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
    first: bool,
    error: Option<io::Error>,
    cpus: BTreeSet<u32>,
    counts: PerfettoCounts,
}

impl<W: Write> PerfettoWriter<W> {
    /// Starts the document.
    pub fn new(mut out: W) -> io::Result<PerfettoWriter<W>> {
        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        Ok(PerfettoWriter {
            out,
            first: true,
            error: None,
            cpus: BTreeSet::new(),
            counts: PerfettoCounts::default(),
        })
    }

    /// Closes the document; the first write error, if any happened.
    pub fn finish(mut self) -> io::Result<(W, PerfettoCounts)> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()?;
        self.counts.cpus = self.cpus.len() as u32;
        Ok((self.out, self.counts))
    }

    /// Writes one event object (given without braces), keeping the first error.
    fn event(&mut self, body: std::fmt::Arguments<'_>) {
        if self.error.is_some() {
            return;
        }
        let sep: &[u8] = if self.first { b"{" } else { b",\n{" };
        self.first = false;
        let r = self
            .out
            .write_all(sep)
            .and_then(|_| self.out.write_fmt(body))
            .and_then(|_| self.out.write_all(b"}"));
        if let Err(e) = r {
            self.error = Some(e);
        }
    }

    /// Names a CPU's process and tracks the first time the CPU shows up.
    fn cpu(&mut self, cpu: u32) {
        if !self.cpus.insert(cpu) {
            return;
        }
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

    /// A complete slice.
    fn complete(
        &mut self,
        cpu: u32,
        track: Track,
        cat: &str,
        name: &str,
        (start, end): (u64, u64),
        args: &str,
    ) {
        self.cpu(cpu);
        let name = json_string(name);
        self.event(format_args!(
            "\"ph\":\"X\",\"cat\":\"{cat}\",\"name\":{name},\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{{args}}}",
            pid(cpu),
            tid(cpu, track),
            Micros(start),
            Micros(end.saturating_sub(start)),
        ));
    }
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".to_string())
}

fn end_name(e: SliceEnd) -> String {
    match e {
        SliceEnd::Preempted => "preempted".into(),
        SliceEnd::Slept(st) => format!("slept {st}"),
        SliceEnd::Exited => "exited".into(),
        SliceEnd::TraceEnd => "trace end".into(),
        SliceEnd::Displaced => "displaced".into(),
        SliceEnd::Lost => "lost".into(),
    }
}

impl<W: Write> Sink for PerfettoWriter<W> {
    fn slice(&mut self, s: &RunSlice) {
        self.counts.task_slices += 1;
        let (cat, name) = if s.is_idle() {
            ("idle", "idle".to_string())
        } else {
            ("task", s.comm.to_string())
        };
        let prio = s.prio.map_or_else(|| "null".to_string(), |p| p.to_string());
        let args = format!(
            "\"tid\":{},\"prio\":{prio},\"end\":\"{}\"",
            s.tid,
            end_name(s.end_kind)
        );
        self.complete(s.cpu, Track::Tasks, cat, &name, (s.start, s.end), &args);
    }

    fn irq(&mut self, s: &IrqSpan) {
        self.counts.irq_slices += 1;
        let name = format!("irq {} {}", s.irq, s.name);
        let args = format!("\"irq\":{},\"ret\":{}", s.irq, s.ret);
        self.complete(s.cpu, Track::Hardirq, "irq", &name, (s.start, s.end), &args);
    }

    fn softirq(&mut self, s: &SoftirqSpan) {
        self.counts.softirq_slices += 1;
        let raised = s
            .raised_by
            .map_or_else(|| "null".to_string(), |n| n.to_string());
        let args = format!("\"vec\":{},\"raised_by_irq\":{raised}", s.vec);
        let name = softirq_name(s.vec);
        self.complete(
            s.cpu,
            Track::Softirq,
            "softirq",
            &name,
            (s.start, s.end),
            &args,
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
        self.event(format_args!(
            "\"ph\":\"s\",\"cat\":\"wakeup\",\"name\":\"wakeup\",\"id\":{id},\"pid\":{},\"tid\":{},\"ts\":{}",
            pid(w.waker_cpu),
            tid(w.waker_cpu, from),
            Micros(w.waking_ts),
        ));
        self.event(format_args!(
            "\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"wakeup\",\"name\":\"wakeup\",\"id\":{id},\"pid\":{},\"tid\":{},\"ts\":{}",
            pid(w.cpu),
            tid(w.cpu, Track::Tasks),
            Micros(w.switch_in_ts),
        ));
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
            first: true,
            error: None,
            cpus: BTreeSet::new(),
            counts: PerfettoCounts::default(),
        };
        w.slice(&run_slice(0, 1, 0, 1));
        let err = w.finish().err().unwrap();
        assert_eq!(err.to_string(), "disk full");
    }
}
