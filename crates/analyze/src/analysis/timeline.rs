//! The timeline: every run slice, wake-up, IRQ and softirq span of the pass, per CPU, in
//! columns, for the HTML report's viewer to draw; and a coarse overview of the whole
//! trace per CPU that stays when the slices do not fit.
//!
//! Unlike the other folds, its memory grows with the trace (about 30 bytes an interval),
//! up to [`TimelineOptions::max_slices`]: past it, intervals that start later are counted,
//! not kept, and the [`LeftOut`] says so. The overview and the counts always cover
//! everything the filter keeps.

use std::collections::VecDeque;

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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimelineOptions {
    /// Slices, IRQ spans and softirq spans kept, at most (then the rest is left out).
    pub max_slices: u64,
    /// Overview buckets per CPU, at most.
    pub overview_buckets: usize,
}

impl Default for TimelineOptions {
    fn default() -> Self {
        TimelineOptions {
            max_slices: 8_000_000,
            overview_buckets: 2048,
        }
    }
}

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
}

impl Timeline {
    /// Task slices kept, all CPUs.
    pub fn slices(&self) -> usize {
        self.cpus.iter().map(|c| c.slices.start.len()).sum()
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
    /// Its index in its CPU's wake columns.
    index: u32,
    switch_in: u64,
    tid: i32,
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
    /// Per CPU, the wake-ups whose slice did not come next, looked up at the end.
    unresolved: Vec<Vec<PendingWake>>,
    /// The timeline's index of each task incarnation (`u32::MAX`: none yet).
    tasks: Vec<u32>,
    task_order: Vec<TaskId>,
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
        TimelineFold {
            options: TimelineOptions {
                overview_buckets: options.overview_buckets.max(2),
                ..options
            },
            origin: None,
            end: 0,
            cpus: Vec::new(),
            pending: Vec::new(),
            unresolved: Vec::new(),
            tasks: Vec::new(),
            task_order: Vec::new(),
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
            self.unresolved.push(Vec::new());
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
        // The wake-ups whose slice did not come next (and those still waiting): found by
        // their switch-in among the CPU's slices, which are in time order.
        let tasks = ctx.machine.tasks();
        // The tid of each timeline task (a small table, where the machine's is not).
        let tids: Vec<Option<i32>> = self
            .task_order
            .iter()
            .map(|&t| tasks.get(t as usize).map(|t| t.tid))
            .collect();
        let cpus = self.cpus.iter_mut().zip(&mut self.pending);
        for ((lanes, pending), unresolved) in cpus.zip(&mut self.unresolved) {
            let w = &mut lanes.wakes;
            // Whether each wake-up's slice was found (all of them, but past the limit).
            let mut found = Vec::new();
            let mut lost = 0usize;
            for p in unresolved.drain(..).chain(pending.drain(..)) {
                let starts = &lanes.slices.start;
                // Slices of no time can share a start: the one of this task.
                let tid_of = |k: usize| tids.get(lanes.slices.task[k] as usize).copied().flatten();
                let mut k = starts.partition_point(|&s| s < p.switch_in);
                while k < starts.len() && starts[k] == p.switch_in && tid_of(k) != Some(p.tid) {
                    k += 1;
                }
                if starts.get(k) == Some(&p.switch_in) {
                    w.slice[p.index as usize] = k as u32;
                } else {
                    if found.is_empty() {
                        found = vec![true; w.slice.len()];
                    }
                    found[p.index as usize] = false;
                    lost += 1;
                }
            }
            if lost > 0 {
                // A wake-up whose slice was not kept (left out past the limit).
                if let Some(l) = &mut self.left_out {
                    l.wakes += lost as u64;
                }
                fn pick<T: Copy>(v: &mut Vec<T>, found: &[bool]) {
                    let mut f = found.iter();
                    v.retain(|_| f.next().copied().unwrap_or(false));
                }
                pick(&mut w.lat, &found);
                pick(&mut w.irq_exit, &found);
                pick(&mut w.wakeup, &found);
                pick(&mut w.slice, &found);
                pick(&mut w.waker_cpu, &found);
                pick(&mut w.waker_id, &found);
                pick(&mut w.waker, &found);
                pick(&mut w.vec, &found);
                pick(&mut w.flags, &found);
            }
        }
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
        }
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
        self.resolve(s.cpu as usize, k, s.start, s.tid);
    }

    /// Slice `k` of `cpu`, of `tid`, starting at `start`, is kept: the wake-up that
    /// switched it in gets its index; those that switched in earlier and are still
    /// waiting did not get theirs next, and are looked up at the end.
    fn resolve(&mut self, cpu: usize, k: u32, start: u64, tid: i32) {
        let queue = &mut self.pending[cpu];
        while let Some(p) = queue.front().filter(|p| p.switch_in < start) {
            self.unresolved[cpu].push(*p);
            queue.pop_front();
        }
        let mine = queue
            .iter()
            .take_while(|p| p.switch_in == start)
            .position(|p| p.tid == tid);
        if let Some(p) = mine.and_then(|at| queue.remove(at)) {
            self.cpus[cpu].wakes.slice[p.index as usize] = k;
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
        let index = c.slice.len() as u32;
        c.slice.push(0);
        c.lat.push(w.latency);
        c.waker.push(kind);
        c.waker_cpu.push(w.waker_cpu);
        c.waker_id.push(id);
        c.vec.push(vec);
        c.irq_exit.push(w.irq_exit);
        c.wakeup.push(w.wakeup);
        c.flags.push(w.flags);
        self.pending[w.cpu as usize].push_back(PendingWake {
            index,
            switch_in: w.switch_in,
            tid: w.tid,
        });
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
        assert_eq!(f.cpus[0].wakes.slice[..4], [1, 3, 2, 0]);
        assert!(f.pending[0].is_empty());
        let left: Vec<_> = f.unresolved[0].iter().map(|p| (p.index, p.tid)).collect();
        assert_eq!(left, [(3, 11)], "looked up at the end");
    }
}
