//! The timeline: every run slice, wake-up, IRQ and softirq span of the pass, per CPU, in
//! columns, for the HTML report's viewer to draw; and a coarse overview of the whole
//! trace per CPU that stays when the slices do not fit.
//!
//! Unlike the other folds, its memory grows with the trace (about 30 bytes an interval),
//! up to [`TimelineOptions::max_slices`]: past it, intervals that start later are counted,
//! not kept, and the [`LeftOut`] says so. The overview and the counts always cover
//! everything the filter keeps. Given a [`Spill`] (`view` gives the page's encoder), the
//! fold hands its task slices and wake-ups out in chunks as they are done, and holds
//! only the last of each per CPU.

use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;

use serde::Serialize;

use super::blame::MARKER_PREFIX;
use super::Ctx;
use crate::hash::FxMap;
use crate::model::{
    Anomaly, AnomalyKind, Blind, IrqSpan, Marker, RunSlice, SliceEnd, SliceStart, SoftirqSpan,
    TaskId, Wake, Waker,
};
use crate::sink::Sink;
use jitterlab_trace::TaskState;

/// What the timeline keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineOptions {
    /// Slices, IRQ spans and softirq spans kept, at most (then the rest is left out).
    pub max_slices: u64,
    /// Overview buckets per CPU, at most.
    pub overview_buckets: usize,
    /// Where finished task slices and wake-ups go during the pass; none: the timeline
    /// holds them all.
    pub spill: Option<SpillTo>,
}

impl Default for TimelineOptions {
    fn default() -> Self {
        TimelineOptions {
            max_slices: 8_000_000,
            overview_buckets: 2048,
            spill: None,
        }
    }
}

/// Takes a timeline's task slices and wake-ups while the pass runs, a chunk at a time,
/// each CPU's in order: rows that will not change again (a wake-up's `slice` is
/// resolved). The timeline keeps the rest, and the [`Timeline::spill`] it was given.
/// Called from the thread that folds the timeline.
pub trait Spill: Send + Sync {
    /// Rows per chunk.
    fn rows(&self) -> usize;
    /// The next task slices of `cpu` (times absolute; `origin` is the timeline's).
    fn slices(&self, cpu: u32, origin: u64, rows: SliceColumns);
    /// The next wake-ups of `cpu` (`origin` is the timeline's).
    fn wakes(&self, cpu: u32, origin: u64, rows: WakeColumns);
    /// Itself, for its owner to find its own type again.
    fn as_any(&self) -> &dyn Any;
}

/// A [`Spill`] shared by the fold and whoever reads what it took.
#[derive(Clone)]
pub struct SpillTo(pub Arc<dyn Spill>);

impl std::fmt::Debug for SpillTo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SpillTo({} rows)", self.0.rows())
    }
}

impl PartialEq for SpillTo {
    fn eq(&self, other: &SpillTo) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SpillTo {}

/// A slice's end code (see docs/html.md): preempted.
pub const END_PREEMPTED: u8 = 0;
/// Exited.
pub const END_EXITED: u8 = 1;
/// Still running at the trace's end.
pub const END_TRACE_END: u8 = 2;
/// Displaced (its switch-out is missing).
pub const END_DISPLACED: u8 = 3;
/// Lost events on its CPU.
pub const END_LOST: u8 = 4;
/// Slept in `states[code - END_SLEPT]`.
pub const END_SLEPT: u8 = 5;
/// Slept, in a state past the first ten distinct ones.
pub const END_SLEPT_OTHER: u8 = 15;

/// Wake flag: the switch-in was inferred.
pub const WAKE_INFERRED: u8 = 1;
/// Wake flag: a new task's first wake-up.
pub const WAKE_NEW: u8 = 2;
/// Wake flag: done in a hrtimer callback.
pub const WAKE_HRTIMER: u8 = 4;
/// Wake flag: `irq_exit` is valid.
pub const WAKE_IRQ_EXIT: u8 = 8;
/// Wake flag: `wakeup` is valid.
pub const WAKE_WAKEUP: u8 = 16;

/// A CPU's run slices of tasks (idle excluded), in time order. Times are absolute ns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SliceColumns {
    /// Switch-in.
    pub start: Vec<u64>,
    /// Duration.
    pub dur: Vec<u64>,
    /// Index into [`Timeline::tasks`].
    pub task: Vec<u32>,
    /// Kernel priority; 255 unknown.
    pub prio: Vec<u8>,
    /// Bits 0-3: how it ended (`END_*`); bits 4-5: how it began (0 switch, 1 trace start,
    /// 2 inferred).
    pub flags: Vec<u8>,
}

/// A CPU's wake-ups (by the CPU they switched in on), in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WakeColumns {
    /// Index of the slice it switched in.
    pub slice: Vec<u32>,
    /// Latency, ns.
    pub lat: Vec<u64>,
    /// 0 a task, 1 a hardirq, 2 a softirq.
    pub waker: Vec<u8>,
    /// The CPU of the sched_waking.
    pub waker_cpu: Vec<u32>,
    /// Task: its tid; hardirq: IRQ index + 1 (0 unknown); softirq: the raising IRQ's index
    /// + 1 (0 none).
    pub waker_id: Vec<u32>,
    /// Softirq vector; 255 unknown.
    pub vec: Vec<u8>,
    /// Switch-in minus the IRQ's handler exit (flag `WAKE_IRQ_EXIT`).
    pub irq_exit: Vec<u64>,
    /// Switch-in minus sched_wakeup (flag `WAKE_WAKEUP`).
    pub wakeup: Vec<u64>,
    /// `WAKE_*` bits.
    pub flags: Vec<u8>,
}

impl WakeColumns {
    /// Drops rows `rows`.
    fn drop_rows(&mut self, rows: &[u32]) {
        if rows.is_empty() {
            return;
        }
        let mut keep = vec![true; self.slice.len()];
        for &row in rows {
            keep[row as usize] = false;
        }
        fn pick<T>(v: &mut Vec<T>, keep: &[bool]) {
            let mut f = keep.iter();
            v.retain(|_| f.next().copied().unwrap_or(false));
        }
        pick(&mut self.slice, &keep);
        pick(&mut self.lat, &keep);
        pick(&mut self.waker, &keep);
        pick(&mut self.waker_cpu, &keep);
        pick(&mut self.waker_id, &keep);
        pick(&mut self.vec, &keep);
        pick(&mut self.irq_exit, &keep);
        pick(&mut self.wakeup, &keep);
        pick(&mut self.flags, &keep);
    }
}

/// A CPU's hardirq spans, in time order of their starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IrqColumns {
    /// Entry.
    pub start: Vec<u64>,
    /// Duration.
    pub dur: Vec<u64>,
    /// Index into [`Timeline::irqs`].
    pub irq: Vec<u32>,
    /// Nesting depth.
    pub depth: Vec<u8>,
}

/// A CPU's softirq spans, in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SoftirqColumns {
    /// Entry.
    pub start: Vec<u64>,
    /// Duration.
    pub dur: Vec<u64>,
    /// Vector.
    pub vec: Vec<u8>,
    /// The raising IRQ's index + 1 (0 none).
    pub raised_by: Vec<u32>,
    /// Entry minus its softirq_raise (0 when not seen).
    pub raise: Vec<u64>,
}

/// The whole trace of one CPU in `Overview::bucket_ns` buckets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OverviewColumns {
    /// Task time in the bucket, ns.
    pub busy: Vec<u64>,
    /// The longest task slice ending in the bucket, ns.
    pub max_dur: Vec<u64>,
    /// The worst wake-up latency switching in in the bucket, ns.
    pub max_lat: Vec<u64>,
    /// Slices ending in the bucket.
    pub count: Vec<u64>,
}

/// One CPU's lanes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuLanes {
    /// The CPU.
    pub cpu: u32,
    /// Task slices handed to the [`Spill`] before those in `slices`.
    pub spilled_slices: usize,
    /// Wake-ups handed to the [`Spill`] before those in `wakes`.
    pub spilled_wakes: usize,
    /// Its first and last event, ns.
    pub first: Option<u64>,
    /// Its last event, ns.
    pub last: u64,
    /// Task slices.
    pub slices: SliceColumns,
    /// Wake-ups switching in here.
    pub wakes: WakeColumns,
    /// Hardirq spans.
    pub irqs: IrqColumns,
    /// Softirq spans.
    pub softirqs: SoftirqColumns,
    /// The overview.
    pub overview: OverviewColumns,
}

impl CpuLanes {
    /// Task slices, those spilled included.
    pub fn slice_count(&self) -> usize {
        self.spilled_slices + self.slices.start.len()
    }

    /// Wake-ups, those spilled included.
    pub fn wake_count(&self) -> usize {
        self.spilled_wakes + self.wakes.lat.len()
    }
}

/// A task of the timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TimelineTask {
    /// Its tid.
    pub tid: i32,
    /// Its process, when known.
    pub tgid: Option<i32>,
    /// Its latest name.
    pub comm: String,
}

/// An IRQ of the timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TimelineIrq {
    /// Its number.
    pub irq: u32,
    /// Its handler's name.
    pub name: String,
}

/// A trace_marker write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TimelineMarker {
    /// When, ns (absolute).
    pub ts: u64,
    /// The CPU.
    pub cpu: u32,
    /// The writer.
    pub tid: i32,
    /// The text.
    pub text: String,
    /// Written by `jitterlab latency --break`.
    #[serde(rename = "break")]
    pub is_break: bool,
}

/// A stretch of unknown state on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TimelineBlind {
    /// The CPU.
    pub cpu: u32,
    /// From, ns (absolute).
    pub start: u64,
    /// To, ns (absolute).
    pub end: u64,
}

/// Lost events on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TimelineLost {
    /// The CPU.
    pub cpu: u32,
    /// When, ns (absolute).
    pub ts: u64,
    /// How many, when known.
    pub count: Option<u64>,
}

/// What the timeline did not keep, past [`TimelineOptions::max_slices`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// Intervals that start at or after this time (absolute ns) were not kept.
    pub after: u64,
    /// Task slices left out.
    pub slices: u64,
    /// IRQ spans left out.
    pub irqs: u64,
    /// Softirq spans left out.
    pub softirqs: u64,
    /// Wake-ups left out.
    pub wakes: u64,
    /// The limit.
    pub max_slices: u64,
}

/// The timeline of a pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// The first event (of the window), ns: the viewer's time 0.
    pub origin: u64,
    /// The last event (of the window), ns.
    pub end: u64,
    /// Per CPU, for CPUs 0 up to the highest the filter keeps.
    pub cpus: Vec<CpuLanes>,
    /// The tasks, indexed by the slices' `task`.
    pub tasks: Vec<TimelineTask>,
    /// The IRQs, indexed by `irq` columns.
    pub irqs: Vec<TimelineIrq>,
    /// Sleep states of the end codes `END_SLEPT..`.
    pub states: Vec<String>,
    /// trace_marker writes.
    pub markers: Vec<TimelineMarker>,
    /// Unknown stretches.
    pub blinds: Vec<TimelineBlind>,
    /// Lost events.
    pub lost: Vec<TimelineLost>,
    /// The overview's bucket width, ns (its buckets start at `origin`).
    pub overview_ns: u64,
    /// What was not kept.
    pub left_out: Option<LeftOut>,
    /// What took the rows spilled ([`TimelineOptions::spill`]).
    pub spill: Option<SpillTo>,
}

impl Timeline {
    /// Task slices kept, all CPUs.
    pub fn slices(&self) -> usize {
        self.cpus.iter().map(CpuLanes::slice_count).sum()
    }

    /// Wake-ups kept, all CPUs.
    pub fn wakes(&self) -> usize {
        self.cpus.iter().map(CpuLanes::wake_count).sum()
    }
}

/// What the fold takes of a run slice: a [`RunSlice`] without its name, which is what
/// the analysis thread hands the fold's thread (background.rs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SliceRec {
    start: u64,
    end: u64,
    cpu: u32,
    /// The task incarnation; [`NO_TASK`] for the idle task.
    task: u32,
    tid: i32,
    /// Kernel priority; 255 unknown.
    prio: u8,
    /// How it began (the bits 4-5 of the flags column).
    begin: u8,
    end_kind: SliceEnd,
}

/// [`SliceRec::task`] of the idle task.
const NO_TASK: u32 = u32::MAX;

impl From<&RunSlice> for SliceRec {
    fn from(s: &RunSlice) -> SliceRec {
        SliceRec {
            start: s.start,
            end: s.end,
            cpu: s.cpu,
            task: s.task.filter(|_| !s.is_idle()).unwrap_or(NO_TASK),
            tid: s.tid,
            prio: s.prio.and_then(|p| u8::try_from(p).ok()).unwrap_or(255),
            begin: match s.start_kind {
                SliceStart::Switch => 0,
                SliceStart::TraceStart => 1,
                SliceStart::Inferred => 2,
            },
            end_kind: s.end_kind,
        }
    }
}

/// What the fold takes of a wake-up (a [`Wake`] without names and the times it does not
/// draw).
#[derive(Clone, Copy, Debug)]
pub(crate) struct WakeRec {
    switch_in: u64,
    latency: u64,
    /// Switch-in minus the IRQ's handler exit (flag `WAKE_IRQ_EXIT`).
    irq_exit: u64,
    /// Switch-in minus sched_wakeup (flag `WAKE_WAKEUP`).
    wakeup: u64,
    cpu: u32,
    tid: i32,
    waker_cpu: u32,
    waker: Waker,
    /// `WAKE_*` bits.
    flags: u8,
}

impl From<&Wake> for WakeRec {
    fn from(w: &Wake) -> WakeRec {
        let mut flags = 0;
        if w.inferred {
            flags |= WAKE_INFERRED;
        }
        if w.new_task {
            flags |= WAKE_NEW;
        }
        if w.by_hrtimer {
            flags |= WAKE_HRTIMER;
        }
        let irq_exit = w.irq_exit_ts.and_then(|x| w.switch_in_ts.checked_sub(x));
        if irq_exit.is_some() {
            flags |= WAKE_IRQ_EXIT;
        }
        let wakeup = w.wakeup_ts.and_then(|x| w.switch_in_ts.checked_sub(x));
        if wakeup.is_some() {
            flags |= WAKE_WAKEUP;
        }
        WakeRec {
            switch_in: w.switch_in_ts,
            latency: w.latency(),
            irq_exit: irq_exit.unwrap_or(0),
            wakeup: wakeup.unwrap_or(0),
            cpu: w.cpu,
            tid: w.tid,
            waker_cpu: w.waker_cpu,
            waker: w.waker,
            flags,
        }
    }
}

/// A kept wake-up waiting for the slice it switched in.
#[derive(Clone, Copy)]
struct PendingWake {
    /// Its index among its CPU's wake-ups (spilled ones counted).
    index: u32,
    switch_in: u64,
    tid: i32,
}

/// Per CPU: the wake-ups gone from the columns to the [`Spill`], those dropped among
/// them counted (the index of the first row held; the slices' is
/// [`CpuLanes::spilled_slices`]), and the wake-ups held whose slice was not found, to be
/// dropped.
#[derive(Clone, Default)]
struct Held {
    wakes: u32,
    unfound: Vec<u32>,
}

/// Folds the intervals into a [`Timeline`].
pub struct TimelineFold {
    options: TimelineOptions,
    origin: Option<u64>,
    end: u64,
    cpus: Vec<CpuLanes>,
    /// Per CPU, the kept wake-ups whose slice has not come yet, in switch-in order: a
    /// slice takes its own as it is kept (the machine emits a wake-up at its switch-in,
    /// the slice at its switch-out).
    pending: Vec<VecDeque<PendingWake>>,
    /// Per CPU, what went to the spill.
    held: Vec<Held>,
    /// Wake-ups whose slice was not found (dropped).
    unfound: u64,
    /// Rows per chunk spilled (`usize::MAX` without a spill).
    rows: usize,
    /// The timeline's index of each task incarnation (`u32::MAX`: none yet).
    tasks: Vec<u32>,
    task_order: Vec<TaskId>,
    /// The tid of each timeline task.
    task_tids: Vec<i32>,
    irqs: FxMap<u32, u32>,
    irq_order: Vec<u32>,
    /// Sleep states seen, with their letters.
    states: Vec<(TaskState, String)>,
    markers: Vec<TimelineMarker>,
    blinds: Vec<TimelineBlind>,
    lost: Vec<TimelineLost>,
    kept: u64,
    left_out: Option<LeftOut>,
    overview_ns: u64,
}

/// The overview's first bucket width, ns (a power of two); it doubles until the trace
/// fits.
const OVERVIEW_BASE_NS: u64 = 1024;

impl TimelineFold {
    /// A fold with `options`.
    pub fn new(options: TimelineOptions) -> TimelineFold {
        let rows = options
            .spill
            .as_ref()
            .map_or(usize::MAX, |s| s.0.rows().max(1));
        TimelineFold {
            options: TimelineOptions {
                overview_buckets: options.overview_buckets.max(2),
                ..options
            },
            origin: None,
            end: 0,
            cpus: Vec::new(),
            pending: Vec::new(),
            held: Vec::new(),
            unfound: 0,
            rows,
            tasks: Vec::new(),
            task_order: Vec::new(),
            task_tids: Vec::new(),
            irqs: FxMap::default(),
            irq_order: Vec::new(),
            states: Vec::new(),
            markers: Vec::new(),
            blinds: Vec::new(),
            lost: Vec::new(),
            kept: 0,
            left_out: None,
            overview_ns: OVERVIEW_BASE_NS,
        }
    }

    /// The lanes so far.
    #[cfg(test)]
    pub(crate) fn columns(&self) -> &[CpuLanes] {
        &self.cpus
    }

    fn lanes(&mut self, cpu: u32) -> &mut CpuLanes {
        let i = cpu as usize;
        while self.cpus.len() <= i {
            let c = self.cpus.len() as u32;
            self.cpus.push(CpuLanes {
                cpu: c,
                ..CpuLanes::default()
            });
            self.pending.push(VecDeque::new());
            self.held.push(Held::default());
        }
        &mut self.cpus[i]
    }

    fn irq_index(&mut self, irq: u32) -> u32 {
        let n = self.irq_order.len() as u32;
        *self.irqs.entry(irq).or_insert_with(|| {
            self.irq_order.push(irq);
            n
        })
    }

    fn origin(&self) -> u64 {
        self.origin.unwrap_or(0)
    }

    /// Whether an interval starting at `start` and ending at `end` is kept; past the
    /// limit, the time after which nothing is kept is fixed at the first interval that
    /// does not fit.
    fn keep(&mut self, start: u64, end: u64) -> bool {
        if let Some(l) = &self.left_out {
            return start < l.after;
        }
        if self.kept >= self.options.max_slices {
            self.left_out = Some(LeftOut {
                after: end,
                max_slices: self.options.max_slices,
                ..LeftOut::default()
            });
            return start < end;
        }
        self.kept += 1;
        true
    }

    /// The overview bucket of absolute time `ts`, widening the buckets until it fits.
    fn bucket(&mut self, ts: u64) -> usize {
        let off = ts.saturating_sub(self.origin());
        let shift = self.overview_ns.trailing_zeros();
        if ((off >> shift) as usize) < self.options.overview_buckets {
            return (off >> shift) as usize;
        }
        while (off / self.overview_ns) as usize >= self.options.overview_buckets {
            self.overview_ns *= 2;
            for c in &mut self.cpus {
                let o = &mut c.overview;
                o.busy = o.busy.chunks(2).map(|p| p.iter().sum()).collect();
                o.count = o.count.chunks(2).map(|p| p.iter().sum()).collect();
                o.max_dur = o
                    .max_dur
                    .chunks(2)
                    .map(|p| p.iter().copied().max().unwrap_or(0))
                    .collect();
                o.max_lat = o
                    .max_lat
                    .chunks(2)
                    .map(|p| p.iter().copied().max().unwrap_or(0))
                    .collect();
            }
        }
        (off / self.overview_ns) as usize
    }

    fn overview(&mut self, cpu: u32, at: u64) -> (usize, &mut OverviewColumns) {
        let b = self.bucket(at);
        let o = &mut self.lanes(cpu).overview;
        if o.busy.len() <= b {
            o.busy.resize(b + 1, 0);
            o.count.resize(b + 1, 0);
            o.max_dur.resize(b + 1, 0);
            o.max_lat.resize(b + 1, 0);
        }
        (b, o)
    }

    /// Adds a task slice `[start, end)` of `cpu` to the overview: its time to the busy
    /// time of the buckets it covers; it counts, with its duration, in the bucket of its
    /// end.
    fn overview_slice(&mut self, cpu: u32, start: u64, end: u64) {
        let at = end.saturating_sub(1).max(start);
        // Widen for the end (the later time); the start's bucket is then at or before it.
        let (last, _) = self.overview(cpu, at);
        let (width, origin) = (self.overview_ns, self.origin());
        let first = (start.saturating_sub(origin) / width) as usize;
        let o = &mut self.cpus[cpu as usize].overview;
        if first == last {
            o.busy[last] += end.saturating_sub(start);
        } else if end > start {
            for (i, b) in o.busy.iter_mut().enumerate().take(last + 1).skip(first) {
                let b0 = origin + i as u64 * width;
                *b += end.min(b0 + width) - start.max(b0);
            }
        }
        o.count[last] += 1;
        o.max_dur[last] = o.max_dur[last].max(end.saturating_sub(start));
    }

    fn end_code(&mut self, end: SliceEnd) -> u8 {
        match end {
            SliceEnd::Preempted => END_PREEMPTED,
            SliceEnd::Exited => END_EXITED,
            SliceEnd::TraceEnd => END_TRACE_END,
            SliceEnd::Displaced => END_DISPLACED,
            SliceEnd::Lost => END_LOST,
            SliceEnd::Slept(st) => {
                if let Some(k) = self.states.iter().position(|s| s.0 == st) {
                    return END_SLEPT + k as u8;
                }
                if self.states.len() < (END_SLEPT_OTHER - END_SLEPT) as usize {
                    self.states.push((st, st.to_string()));
                    END_SLEPT + self.states.len() as u8 - 1
                } else {
                    END_SLEPT_OTHER
                }
            }
        }
    }

    /// Builds the timeline: task and IRQ names from the machine, wake-ups matched to the
    /// slices they switched in.
    pub fn finish(mut self, ctx: &Ctx<'_>) -> Timeline {
        let filter = &ctx.options.filter;
        let infos = ctx.machine.cpus();
        let n = (ctx.meta.cpus.unwrap_or(0) as usize)
            .max(infos.len())
            .max(self.cpus.len());
        if n > 0 {
            self.lanes(n as u32 - 1);
        }
        let mut end = self.end;
        for lanes in &mut self.cpus {
            if let Some(info) = infos.get(lanes.cpu as usize) {
                lanes.first = info
                    .first_ts
                    .filter(|&f| f <= filter.to_ns.unwrap_or(u64::MAX))
                    .map(|f| f.max(filter.from_ns.unwrap_or(0)));
                lanes.last = info.last_ts.min(filter.to_ns.unwrap_or(u64::MAX));
                end = end.max(lanes.last);
            }
        }
        // The wake-ups still waiting: found by their switch-in among the CPU's slices.
        for cpu in 0..self.cpus.len() {
            while let Some(p) = self.pending[cpu].pop_front() {
                self.look_up(cpu, p);
            }
            self.drop_unfound(cpu);
        }
        if let Some(l) = &mut self.left_out {
            // A wake-up whose slice was not kept (left out past the limit).
            l.wakes += self.unfound;
        }
        let tasks = ctx.machine.tasks();
        for lanes in &mut self.cpus {
            sort_irqs(&mut lanes.irqs);
        }
        self.cpus.retain(|c| filter.wants_cpu(c.cpu));
        let names = ctx.machine.irq_names();
        Timeline {
            origin: self.origin.unwrap_or(0),
            end,
            tasks: self
                .task_order
                .iter()
                .map(|&t| match tasks.get(t as usize) {
                    Some(t) => TimelineTask {
                        tid: t.tid,
                        tgid: t.tgid,
                        comm: t.comm.to_string(),
                    },
                    None => TimelineTask {
                        tid: -1,
                        tgid: None,
                        comm: String::new(),
                    },
                })
                .collect(),
            irqs: self
                .irq_order
                .iter()
                .map(|&irq| TimelineIrq {
                    irq,
                    name: names
                        .get(&irq)
                        .map_or_else(|| format!("irq {irq}"), |n| n.to_string()),
                })
                .collect(),
            cpus: self.cpus,
            states: self.states.into_iter().map(|s| s.1).collect(),
            markers: self.markers,
            blinds: self.blinds,
            lost: self.lost,
            overview_ns: self.overview_ns,
            left_out: self.left_out,
            spill: self.options.spill,
        }
    }

    /// Wake-up `p`, whose slice did not come next: its slice found by its switch-in
    /// among the slices of its CPU held (in time order; slices of no time can share a
    /// start: the one of its task), or it is dropped. A slice kept later starts later, so
    /// only one kept before the wake-up can be its own; of those, the ones spilled
    /// already are not looked at (no trace seen so far has such a wake-up).
    fn look_up(&mut self, cpu: usize, p: PendingWake) {
        let held = &self.held[cpu];
        let lanes = &mut self.cpus[cpu];
        let starts = &lanes.slices.start;
        let tids = &self.task_tids;
        let tid_of = |k: usize| tids.get(lanes.slices.task[k] as usize).copied();
        let mut k = starts.partition_point(|&s| s < p.switch_in);
        while k < starts.len() && starts[k] == p.switch_in && tid_of(k) != Some(p.tid) {
            k += 1;
        }
        let row = p.index - held.wakes;
        if starts.get(k) == Some(&p.switch_in) {
            lanes.wakes.slice[row as usize] = (lanes.spilled_slices + k) as u32;
        } else {
            self.held[cpu].unfound.push(row);
            self.unfound += 1;
        }
    }

    /// Drops the held wake-ups of `cpu` whose slice was not found.
    fn drop_unfound(&mut self, cpu: usize) {
        let unfound = std::mem::take(&mut self.held[cpu].unfound);
        self.cpus[cpu].wakes.drop_rows(&unfound);
    }

    /// Hands `cpu`'s slices held to the spill.
    fn spill_slices(&mut self, cpu: usize) {
        let Some(spill) = &self.options.spill else {
            return;
        };
        let rows = self.rows;
        let c = &mut self.cpus[cpu];
        let n = c.slices.start.len();
        let fresh = SliceColumns {
            start: Vec::with_capacity(rows),
            dur: Vec::with_capacity(rows),
            task: Vec::with_capacity(rows),
            prio: Vec::with_capacity(rows),
            flags: Vec::with_capacity(rows),
        };
        let out = std::mem::replace(&mut c.slices, fresh);
        c.spilled_slices += n;
        spill.0.slices(c.cpu, self.origin(), out);
    }

    /// Hands `cpu`'s wake-ups held to the spill, up to the first still waiting for its
    /// slice, when that is half a chunk or more.
    fn spill_wakes(&mut self, cpu: usize) {
        let Some(spill) = &self.options.spill else {
            return;
        };
        let held = &mut self.held[cpu];
        let w = &mut self.cpus[cpu].wakes;
        let m = self.pending[cpu]
            .front()
            .map_or(w.slice.len(), |p| (p.index - held.wakes) as usize);
        if m == 0 || m < self.rows / 2 {
            return;
        }
        fn split<T>(v: &mut Vec<T>, m: usize, rows: usize) -> Vec<T> {
            let mut rest = Vec::with_capacity(rows.max(v.len() - m));
            rest.extend(v.drain(m..));
            std::mem::replace(v, rest)
        }
        let rows = self.rows;
        let mut out = WakeColumns {
            slice: split(&mut w.slice, m, rows),
            lat: split(&mut w.lat, m, rows),
            waker: split(&mut w.waker, m, rows),
            waker_cpu: split(&mut w.waker_cpu, m, rows),
            waker_id: split(&mut w.waker_id, m, rows),
            vec: split(&mut w.vec, m, rows),
            irq_exit: split(&mut w.irq_exit, m, rows),
            wakeup: split(&mut w.wakeup, m, rows),
            flags: split(&mut w.flags, m, rows),
        };
        held.wakes += m as u32;
        // The rows not found go with their chunk, the later ones move down.
        let unfound = std::mem::take(&mut held.unfound);
        let (gone, stay): (Vec<u32>, Vec<u32>) =
            unfound.into_iter().partition(|&r| (r as usize) < m);
        held.unfound = stay.into_iter().map(|r| r - m as u32).collect();
        out.drop_rows(&gone);
        let c = &mut self.cpus[cpu];
        c.spilled_wakes += out.lat.len();
        spill.0.wakes(c.cpu, self.origin(), out);
    }
}

/// Puts a CPU's IRQ spans in the order of their starts: a nested handler ends (and is
/// emitted) before the one it interrupted.
fn sort_irqs(c: &mut IrqColumns) {
    if c.start.windows(2).all(|w| w[0] <= w[1]) {
        return;
    }
    let mut order: Vec<usize> = (0..c.start.len()).collect();
    order.sort_by_key(|&i| (c.start[i], c.depth[i]));
    c.start = order.iter().map(|&i| c.start[i]).collect();
    c.dur = order.iter().map(|&i| c.dur[i]).collect();
    c.irq = order.iter().map(|&i| c.irq[i]).collect();
    c.depth = order.iter().map(|&i| c.depth[i]).collect();
}

impl TimelineFold {
    /// [`Sink::slice`], of what the fold takes of the slice.
    pub(crate) fn slice_rec(&mut self, s: &SliceRec) {
        self.end = self.end.max(s.end);
        if s.task == NO_TASK {
            return;
        }
        self.overview_slice(s.cpu, s.start, s.end);
        if !self.keep(s.start, s.end) {
            if let Some(l) = &mut self.left_out {
                l.slices += 1;
            }
            return;
        }
        let t = s.task as usize;
        if self.tasks.len() <= t {
            self.tasks.resize(t + 1, u32::MAX);
        }
        if self.tasks[t] == u32::MAX {
            self.tasks[t] = self.task_order.len() as u32;
            self.task_order.push(s.task);
            self.task_tids.push(s.tid);
        }
        let index = self.tasks[t];
        let end = self.end_code(s.end_kind);
        let c = &mut self.lanes(s.cpu).slices;
        let k = c.start.len() as u32;
        c.start.push(s.start);
        c.dur.push(s.end.saturating_sub(s.start));
        c.task.push(index);
        c.prio.push(s.prio);
        c.flags.push(end | s.begin << 4);
        let cpu = s.cpu as usize;
        self.resolve(
            cpu,
            self.cpus[cpu].spilled_slices as u32 + k,
            s.start,
            s.tid,
        );
        if k as usize + 1 >= self.rows {
            self.spill_slices(cpu);
        }
    }

    /// Slice `k` of `cpu`, of `tid`, starting at `start`, is kept: the wake-up that
    /// switched it in gets its index; those that switched in earlier and are still
    /// waiting did not get theirs next, and are looked up among the slices kept before.
    fn resolve(&mut self, cpu: usize, k: u32, start: u64, tid: i32) {
        while let Some(p) = self.pending[cpu].front().filter(|p| p.switch_in < start) {
            let p = *p;
            self.pending[cpu].pop_front();
            self.look_up(cpu, p);
        }
        let queue = &mut self.pending[cpu];
        let mine = queue
            .iter()
            .take_while(|p| p.switch_in == start)
            .position(|p| p.tid == tid);
        if let Some(p) = mine.and_then(|at| queue.remove(at)) {
            let row = p.index - self.held[cpu].wakes;
            self.cpus[cpu].wakes.slice[row as usize] = k;
        }
    }

    /// [`Sink::wake`], of what the fold takes of the wake-up.
    pub(crate) fn wake_rec(&mut self, w: &WakeRec) {
        let (b, o) = self.overview(w.cpu, w.switch_in);
        o.max_lat[b] = o.max_lat[b].max(w.latency);
        if self.left_out.is_some_and(|l| w.switch_in >= l.after) {
            if let Some(l) = &mut self.left_out {
                l.wakes += 1;
            }
            return;
        }
        let (kind, id, vec) = match w.waker {
            Waker::Task { tid } => (0, tid as u32, 255),
            Waker::Hardirq { irq } => (1, irq.map_or(0, |i| self.irq_index(i) + 1), 255),
            Waker::Softirq { vec, raised_by } => (
                2,
                raised_by.map_or(0, |i| self.irq_index(i) + 1),
                vec.and_then(|v| u8::try_from(v).ok()).unwrap_or(255),
            ),
        };
        let c = &mut self.lanes(w.cpu).wakes;
        let row = c.slice.len();
        c.slice.push(0);
        c.lat.push(w.latency);
        c.waker.push(kind);
        c.waker_cpu.push(w.waker_cpu);
        c.waker_id.push(id);
        c.vec.push(vec);
        c.irq_exit.push(w.irq_exit);
        c.wakeup.push(w.wakeup);
        c.flags.push(w.flags);
        let cpu = w.cpu as usize;
        self.pending[cpu].push_back(PendingWake {
            index: self.held[cpu].wakes + row as u32,
            switch_in: w.switch_in,
            tid: w.tid,
        });
        if row + 1 >= self.rows {
            self.spill_wakes(cpu);
        }
    }
}

impl Sink for TimelineFold {
    fn begin(&mut self, ts: u64) {
        self.origin = Some(ts);
        self.end = ts;
    }
    fn slice(&mut self, s: &RunSlice) {
        self.slice_rec(&SliceRec::from(s));
    }
    fn wake(&mut self, w: &Wake) {
        self.wake_rec(&WakeRec::from(w));
    }
    fn irq(&mut self, s: &IrqSpan) {
        self.end = self.end.max(s.end);
        if !self.keep(s.start, s.end) {
            if let Some(l) = &mut self.left_out {
                l.irqs += 1;
            }
            return;
        }
        let index = self.irq_index(s.irq);
        let c = &mut self.lanes(s.cpu).irqs;
        c.start.push(s.start);
        c.dur.push(s.end.saturating_sub(s.start));
        c.irq.push(index);
        c.depth.push(u8::try_from(s.depth).unwrap_or(u8::MAX));
    }
    fn softirq(&mut self, s: &SoftirqSpan) {
        self.end = self.end.max(s.end);
        if !self.keep(s.start, s.end) {
            if let Some(l) = &mut self.left_out {
                l.softirqs += 1;
            }
            return;
        }
        let raised_by = s.raised_by.map_or(0, |i| self.irq_index(i) + 1);
        let c = &mut self.lanes(s.cpu).softirqs;
        c.start.push(s.start);
        c.dur.push(s.end.saturating_sub(s.start));
        c.vec.push(u8::try_from(s.vec).unwrap_or(u8::MAX));
        c.raised_by.push(raised_by);
        c.raise
            .push(s.raise_ts.and_then(|r| s.start.checked_sub(r)).unwrap_or(0));
    }
    fn anomaly(&mut self, a: &Anomaly) {
        if a.kind == AnomalyKind::LostEvents {
            self.lost.push(TimelineLost {
                cpu: a.cpu,
                ts: a.ts,
                // The machine counts 1 when the count is unknown.
                count: Some(a.count),
            });
        }
    }
    fn marker(&mut self, m: &Marker) {
        self.markers.push(TimelineMarker {
            ts: m.ts,
            cpu: m.cpu,
            tid: m.tid,
            text: m.text.trim_end().to_string(),
            is_break: m.text.trim_start().starts_with(MARKER_PREFIX),
        });
    }
    fn blind(&mut self, b: &Blind) {
        self.blinds.push(TimelineBlind {
            cpu: b.cpu,
            start: b.start,
            end: b.end,
        });
    }
    fn end(&mut self, ts: u64) {
        self.end = self.end.max(ts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_trace::Comm;

    #[test]
    fn a_slice_counts_in_the_overview_bucket_of_its_end() {
        let mut f = TimelineFold::new(TimelineOptions::default());
        f.begin(0);
        // A wake-up switching in at 2048 ns (bucket 2 of 1024 ns) is seen before the
        // slice that ends there, [1000, 2048): that slice belongs to bucket 1.
        f.wake(&wake(8, 2000, 2048));
        f.slice(&slice(7, 1000, 2048));
        let o = &f.cpus[0].overview;
        assert_eq!(o.count, [0, 1, 0]);
        assert_eq!(o.max_dur, [0, 1048, 0]);
        assert_eq!(o.max_lat, [0, 0, 48]);
        assert_eq!(o.busy, [24, 1024, 0]);
    }

    fn wake(tid: i32, waking_ts: u64, switch_in: u64) -> Wake {
        Wake {
            task: tid as u32,
            tid,
            comm: Comm::new("w"),
            prio: 120,
            waking_ts,
            waker: Waker::Task { tid: 1 },
            waker_cpu: 0,
            by_hrtimer: false,
            wakeup_ts: None,
            switch_in_ts: switch_in,
            cpu: 0,
            inferred: false,
            inferred_after: None,
            from_idle: None,
            irq_exit_ts: None,
            softirq_exit_ts: None,
            new_task: false,
        }
    }

    fn slice(tid: i32, start: u64, end: u64) -> RunSlice {
        RunSlice {
            cpu: 0,
            task: Some(tid as u32),
            tid,
            comm: Comm::new("s"),
            prio: Some(120),
            start,
            end,
            start_kind: SliceStart::Switch,
            end_kind: SliceEnd::Preempted,
            last_seen: end,
        }
    }

    /// A spill that keeps what it is given, by CPU.
    struct Kept {
        rows: usize,
        slices: std::sync::Mutex<Vec<(u32, SliceColumns)>>,
        wakes: std::sync::Mutex<Vec<(u32, WakeColumns)>>,
    }

    impl Spill for Kept {
        fn rows(&self) -> usize {
            self.rows
        }
        fn slices(&self, cpu: u32, _origin: u64, rows: SliceColumns) {
            self.slices.lock().unwrap().push((cpu, rows));
        }
        fn wakes(&self, cpu: u32, _origin: u64, rows: WakeColumns) {
            self.wakes.lock().unwrap().push((cpu, rows));
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn a_spilling_fold_hands_out_in_order_what_a_holding_one_keeps() {
        let feed = |f: &mut TimelineFold| {
            f.begin(0);
            for i in 0..500u64 {
                let cpu = (i % 2) as u32;
                let (t0, t1) = (100 * i + 100, 100 * i + 190);
                let tid = 10 + (i % 7) as i32;
                // Every third slice switched in by a wake-up; two slices of no time.
                if i % 3 == 0 {
                    f.wake(&Wake {
                        cpu,
                        ..wake(tid, t0 - 5, t0)
                    });
                }
                let end = if i % 50 == 0 { t0 } else { t1 };
                f.slice(&RunSlice {
                    cpu,
                    ..slice(tid, t0, end)
                });
            }
        };
        let mut held = TimelineFold::new(TimelineOptions::default());
        feed(&mut held);
        for rows in [1, 4, 33] {
            let kept = Arc::new(Kept {
                rows,
                slices: Default::default(),
                wakes: Default::default(),
            });
            let mut f = TimelineFold::new(TimelineOptions {
                spill: Some(SpillTo(kept.clone())),
                ..TimelineOptions::default()
            });
            feed(&mut f);
            for (cpu, lanes) in held.cpus.iter().enumerate() {
                let mut s = SliceColumns::default();
                for (_, c) in kept
                    .slices
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|c| c.0 == cpu as u32)
                {
                    assert!(c.start.len() <= rows);
                    s.start.extend(&c.start);
                    s.dur.extend(&c.dur);
                    s.task.extend(&c.task);
                    s.prio.extend(&c.prio);
                    s.flags.extend(&c.flags);
                }
                let mine = &f.cpus[cpu];
                assert_eq!(mine.spilled_slices, s.start.len());
                assert!(mine.slices.start.len() < rows);
                s.start.extend(&mine.slices.start);
                s.dur.extend(&mine.slices.dur);
                s.task.extend(&mine.slices.task);
                s.prio.extend(&mine.slices.prio);
                s.flags.extend(&mine.slices.flags);
                assert_eq!(s, lanes.slices, "{rows} rows a chunk");
                let mut w = WakeColumns::default();
                for (_, c) in kept
                    .wakes
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|c| c.0 == cpu as u32)
                {
                    w.slice.extend(&c.slice);
                    w.lat.extend(&c.lat);
                    w.flags.extend(&c.flags);
                }
                assert_eq!(mine.spilled_wakes, w.slice.len());
                w.slice.extend(&mine.wakes.slice);
                w.lat.extend(&mine.wakes.lat);
                w.flags.extend(&mine.wakes.flags);
                assert_eq!(w.slice, lanes.wakes.slice, "{rows} rows a chunk");
                assert_eq!(w.lat, lanes.wakes.lat);
                assert_eq!(w.flags, lanes.wakes.flags);
            }
        }
    }

    #[test]
    fn a_slice_takes_the_wake_up_that_switched_it_in() {
        let mut f = TimelineFold::new(TimelineOptions::default());
        f.begin(0);
        f.slice(&slice(7, 0, 100));
        f.wake(&wake(8, 95, 100));
        f.slice(&slice(8, 100, 200));
        // Two wake-ups at one time, their slices of no time in the other order.
        f.wake(&wake(9, 195, 200));
        f.wake(&wake(10, 195, 200));
        f.slice(&slice(10, 200, 200));
        f.slice(&slice(9, 200, 300));
        // A wake-up whose slice never came: the next slice starts later.
        f.wake(&wake(11, 295, 300));
        f.slice(&slice(12, 400, 500));
        assert_eq!(f.cpus[0].wakes.slice[..3], [1, 3, 2]);
        assert!(f.pending[0].is_empty());
        // Looked up among the slices before, not found: dropped.
        assert_eq!(f.held[0].unfound, [3]);
        assert_eq!(f.unfound, 1);
    }
}
