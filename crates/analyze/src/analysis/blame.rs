//! The blame section: for the worst wake-ups, and for every `jitterlab:` trace_marker that
//! `jitterlab latency --break` leaves, what the woken task's CPU did from the waking to the
//! switch-in: which tasks ran (priority, how long), which IRQs and softirqs, and stretches
//! with no event at all; then one verdict line.
//!
//! Each CPU keeps a short history of what ended on it (slices, IRQ and softirq spans, gaps):
//! the last [`HISTORY_NS`] and at most [`HISTORY_ITEMS`] items. A window older than that is
//! reported as truncated. Memory stays bounded whatever the trace's length.
//!
//! The history is of every interval; the filters (window, CPUs, `--task`, `--pid`) choose
//! which wake-ups are blamed: those switched in inside the window on a selected CPU, of
//! the selected tasks.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use jitterlab_trace::Comm;
use serde::Serialize;

use super::{Ctx, Names};
use crate::filter::WakeSelect;
use crate::hash::FxMap;
use crate::model::{
    Anomaly, AnomalyKind, Gap, IrqSpan, Marker, RunSlice, SoftirqSpan, Wake, Waker,
};
use crate::sink::Sink;
use crate::softirq_name;

/// History kept per CPU, ns.
pub const HISTORY_NS: u64 = 50_000_000;
/// History kept per CPU, items.
pub const HISTORY_ITEMS: usize = 8192;
/// Timeline steps kept per spike; the rest are counted.
const STEPS_KEPT: usize = 40;
/// The prefix of the markers `jitterlab latency --break` writes.
pub const MARKER_PREFIX: &str = "jitterlab:";

/// What one step of a timeline was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum StepKind {
    /// A task was current (tid 0: idle).
    Task {
        /// Its tid.
        tid: i32,
        /// Its kernel priority.
        prio: Option<i32>,
    },
    /// A hard IRQ handler ran.
    Irq {
        /// The IRQ.
        irq: u32,
    },
    /// A softirq ran.
    Softirq {
        /// The vector.
        vec: u32,
    },
    /// No event at all on the CPU: hypervisor, SMI or IRQs-off suspected.
    Gap,
    /// No event at all on the CPU, ended by this task showing up current without a
    /// recorded switch-in: it probably ran during the stretch (this kernel omits idle ->
    /// task switches).
    Unrecorded {
        /// Its tid.
        tid: i32,
        /// Its kernel priority.
        prio: Option<i32>,
    },
}

/// One step of a spike's timeline, clipped to the window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// What.
    #[serde(flatten)]
    pub kind: StepKind,
    /// For people: the task's name, the IRQ's, the softirq's.
    pub name: String,
    /// Start (clipped to the waking), ns.
    pub start_ns: u64,
    /// End (clipped to the switch-in), ns.
    pub end_ns: u64,
}

/// Where the window's time went (the categories overlap: an IRQ runs within a slice).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Breakdown {
    /// Other tasks current, ns.
    pub tasks_ns: u64,
    /// The idle task current, ns.
    pub idle_ns: u64,
    /// In hard IRQ handlers, ns.
    pub hardirq_ns: u64,
    /// In softirqs, ns.
    pub softirq_ns: u64,
    /// With no event at all, ns.
    pub gaps_ns: u64,
}

/// Why a spike is in the section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// One of the worst wake-up latencies.
    Worst,
    /// A `jitterlab:` trace_marker follows it.
    Marker,
}

/// What took most of a blamed window: the verdict line's first words, as a value to
/// group spikes by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// One task ran for at least half of the window.
    Task,
    /// IRQ and softirq handlers took at least half of it.
    Interrupts,
    /// No event at all for at least half of it: the hypervisor, an SMI or IRQs off.
    NoEvents,
    /// The CPU stayed idle for at least half of it.
    Idle,
    /// None of these took half.
    Spread,
}

impl Cause {
    /// Its name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Task => "task",
            Cause::Interrupts => "interrupts",
            Cause::NoEvents => "no_events",
            Cause::Idle => "idle",
            Cause::Spread => "spread",
        }
    }
}

/// One blamed wake-up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Spike {
    /// Why it is here.
    pub reason: Reason,
    /// The marker's text, for [`Reason::Marker`].
    pub marker: Option<String>,
    /// The woken task.
    pub tid: i32,
    /// Its name.
    pub comm: String,
    /// Its priority.
    pub prio: i32,
    /// The CPU it was switched in on (the timeline's).
    pub cpu: u32,
    /// Who woke it, for people.
    pub waker: String,
    /// The waking, ns (for a marked spike whose waking the trace lacks, when it was due).
    pub waking_ns: u64,
    /// For a marked spike: when the sample was due, ns (the marker's time less the
    /// latency it reports). The window starts there, not at the waking, so that it holds
    /// the timer's own lateness (an idle CPU's exit on a VM): what the probe measured.
    pub due_ns: Option<u64>,
    /// The switch-in, ns.
    pub switch_in_ns: u64,
    /// The latency, ns.
    pub latency_ns: u64,
    /// The switch-in was inferred from common_pid: the latency is an upper bound.
    pub inferred: bool,
    /// With an inferred switch-in, the lower bound: the CPU's last event before it, minus
    /// the waking, ns. The breakdown covers only this known part.
    pub latency_min_ns: Option<u64>,
    /// The history did not reach back to the waking: the timeline starts later.
    pub truncated: bool,
    /// Events the kernel lost on the CPU within the window (its buffer was full): the
    /// timeline has holes, so the verdict may miss the cause.
    pub lost_events: u64,
    /// What the CPU did, in time order.
    pub timeline: Vec<Step>,
    /// Steps left out of `timeline` (the longest are kept).
    pub elided: u64,
    /// Time by category.
    pub breakdown: Breakdown,
    /// What took most of the window.
    pub cause: Cause,
    /// One line for people.
    pub verdict: String,
}

/// The blame section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlameSection {
    /// The worst wake-ups (worst first), then the marked ones (in time order).
    pub spikes: Vec<Spike>,
}

#[derive(Clone, Copy, Debug)]
enum Item {
    Slice {
        tid: i32,
        comm: Comm,
        prio: Option<i32>,
        inferred: bool,
    },
    Unrecorded {
        tid: i32,
        comm: Comm,
        prio: Option<i32>,
    },
    Irq(u32),
    Softirq(u32),
    Gap,
}

#[derive(Default)]
struct History {
    items: VecDeque<(u64, u64, Item)>,
    /// Where events were lost: (from the CPU's last event before, the loss's mark, count).
    lost: VecDeque<(u64, u64, u64)>,
    /// The CPU's last item end (where a loss begins).
    last_end: u64,
    /// The latest end of an item dropped from the front.
    pruned_until: u64,
}

/// A spike built at its switch-in, named at report time.
struct Raw {
    wake: Wake,
    /// Events lost on the CPU within the window.
    lost: u64,
    /// The waking (the window may start earlier: at `due`).
    waking: u64,
    /// A marked sample's due time.
    due: Option<u64>,
    truncated: bool,
    steps: Vec<(u64, u64, Item)>,
    elided: u64,
    breakdown: Breakdown,
}

/// Folds per-CPU history into the timelines of the worst and the marked wake-ups.
pub struct BlameFold {
    n: usize,
    cpus: Vec<History>,
    seq: u64,
    worst: BinaryHeap<Reverse<(u64, u64)>>,
    built: FxMap<u64, Raw>,
    /// The last wake-up of each task (by [`crate::TaskId`]), numbered in the order seen:
    /// the last of a tid is the highest numbered of its incarnations'. An index where a
    /// map by tid cost a hash insert and a copy more (~80 Ir) a wake-up.
    last_wake: Vec<Option<(u64, Wake)>>,
    /// Wake-ups seen.
    wakes: u64,
    marked: Vec<(String, Raw)>,
    select: WakeSelect,
    recorded_only: bool,
}

impl BlameFold {
    /// Blames the `n` worst wake-ups, and every marked one, of those `select` keeps (of
    /// those whose switch-in the trace recorded, when `recorded_only`).
    pub(crate) fn new(n: usize, select: WakeSelect, recorded_only: bool) -> BlameFold {
        BlameFold {
            n,
            cpus: Vec::new(),
            seq: 0,
            worst: BinaryHeap::new(),
            built: FxMap::default(),
            last_wake: Vec::new(),
            wakes: 0,
            marked: Vec::new(),
            select,
            recorded_only,
        }
    }

    fn push(&mut self, cpu: u32, start: u64, end: u64, item: Item) {
        let c = cpu as usize;
        if self.cpus.len() <= c {
            self.cpus.resize_with(c + 1, History::default);
        }
        let h = &mut self.cpus[c];
        h.last_end = h.last_end.max(end);
        h.items.push_back((start, end, item));
        while let Some(&(_, e, _)) = h.items.front() {
            if h.items.len() <= HISTORY_ITEMS && e + HISTORY_NS >= end {
                break;
            }
            h.pruned_until = h.pruned_until.max(e);
            h.items.pop_front();
        }
        while h.lost.front().is_some_and(|&(_, e, _)| e < h.pruned_until) {
            h.lost.pop_front();
        }
    }

    fn build(&self, w: &Wake) -> Raw {
        let (from, to) = (w.waking_ts, w.switch_in_ts);
        // With an inferred switch-in, only up to the CPU's last event before it is known.
        let known = match (w.inferred, w.inferred_after) {
            (true, Some(after)) => after.clamp(from, to),
            _ => to,
        };
        let mut steps = Vec::new();
        let mut b = Breakdown::default();
        let mut truncated = true;
        let mut unrecorded = 0;
        if let Some(h) = self.cpus.get(w.cpu as usize) {
            truncated = from < h.pruned_until;
            let in_window = |&&(s, e, _): &&(u64, u64, Item)| e > from && s < to;
            // Tasks that showed up current with no switch-in, within the window.
            let unswitched: Vec<(u64, Item)> = h
                .items
                .iter()
                .filter(|&&(s, _, _)| s > from && s <= to)
                .filter_map(|&(s, _, it)| match it {
                    Item::Slice {
                        tid,
                        comm,
                        prio,
                        inferred: true,
                    } if tid != 0 && tid != w.tid => {
                        Some((s, Item::Unrecorded { tid, comm, prio }))
                    }
                    _ => None,
                })
                .collect();
            for &(s, e, item) in h.items.iter().filter(in_window) {
                // A gap ended by a task that nothing switched in: that task likely ran.
                let item = match item {
                    Item::Gap => unswitched
                        .iter()
                        .find(|u| u.0 == e)
                        .map_or(Item::Gap, |u| u.1),
                    other => other,
                };
                let (s, e) = (s.max(from), e.min(to));
                let d = e.min(known).saturating_sub(s);
                match item {
                    Item::Slice { tid: 0, .. } => b.idle_ns += d,
                    Item::Slice { .. } => b.tasks_ns += d,
                    Item::Unrecorded { .. } => {
                        b.tasks_ns += d;
                        unrecorded += d;
                    }
                    Item::Irq(_) => b.hardirq_ns += d,
                    Item::Softirq(_) => b.softirq_ns += d,
                    Item::Gap => b.gaps_ns += d,
                }
                steps.push((s, e, item));
            }
        }
        // The idle slice under an unrecorded task's stretch was not really idle.
        b.idle_ns = b.idle_ns.saturating_sub(unrecorded);
        let mut elided = 0;
        if steps.len() > STEPS_KEPT {
            elided = (steps.len() - STEPS_KEPT) as u64;
            steps.sort_by_key(|&(s, e, _)| Reverse(e - s));
            steps.truncate(STEPS_KEPT);
        }
        steps.sort_by_key(|&(s, e, _)| (s, e));
        let lost = self.cpus.get(w.cpu as usize).map_or(0, |h| {
            h.lost
                .iter()
                .filter(|&&(s, e, _)| e > from && s < to)
                .map(|l| l.2)
                .sum()
        });
        Raw {
            wake: w.clone(),
            lost,
            waking: w.waking_ts,
            due: None,
            truncated,
            steps,
            elided,
            breakdown: b,
        }
    }

    /// Builds the section.
    pub fn finish(mut self, ctx: &Ctx<'_>) -> BlameSection {
        let names = Names::new(ctx.machine);
        let mut worst: Vec<Raw> = self.built.drain().map(|(_, r)| r).collect();
        worst.sort_by_key(|r| (Reverse(r.wake.latency()), r.wake.waking_ts));
        let mut spikes: Vec<Spike> = worst
            .into_iter()
            .map(|r| spike(&names, Reason::Worst, None, r))
            .collect();
        for (text, r) in self.marked {
            spikes.push(spike(&names, Reason::Marker, Some(text), r));
        }
        BlameSection { spikes }
    }
}

/// The latency a `jitterlab:` marker reports, ns: its `(N ns)` when written, else its
/// `latency N us` (the markers of older builds).
pub fn marker_latency_ns(text: &str) -> Option<u64> {
    let ns = text
        .split('(')
        .nth(1)
        .and_then(|t| t.trim_end().strip_suffix(" ns)"))
        .and_then(|n| n.trim().parse().ok());
    ns.or_else(|| {
        let rest = text.split("latency ").nth(1)?;
        let us: u64 = rest.split(' ').next()?.parse().ok()?;
        rest.split(' ').nth(1).filter(|u| *u == "us")?;
        Some(us * 1_000)
    })
}

fn spike(names: &Names<'_>, reason: Reason, marker: Option<String>, r: Raw) -> Spike {
    let w = &r.wake;
    let timeline: Vec<Step> = r
        .steps
        .iter()
        .map(|&(s, e, item)| {
            let (kind, name) = match item {
                Item::Slice {
                    tid, comm, prio, ..
                } => (StepKind::Task { tid, prio }, comm.to_string()),
                Item::Unrecorded { tid, comm, prio } => {
                    (StepKind::Unrecorded { tid, prio }, comm.to_string())
                }
                Item::Irq(irq) => (StepKind::Irq { irq }, names.irq(irq)),
                Item::Softirq(vec) => (StepKind::Softirq { vec }, softirq_name(vec)),
                Item::Gap => (StepKind::Gap, "no events".to_string()),
            };
            Step {
                kind,
                name,
                start_ns: s,
                end_ns: e,
            }
        })
        .collect();
    let (cause, mut verdict) = verdict(w, &r.breakdown, &timeline, r.truncated);
    if r.lost > 0 {
        verdict.push_str(&format!(
            "; {} events lost on the CPU in the window: incomplete",
            r.lost
        ));
    }
    Spike {
        reason,
        marker,
        tid: w.tid,
        comm: w.comm.to_string(),
        prio: w.prio,
        cpu: w.cpu,
        waker: names.waker(w.waker),
        waking_ns: r.waking,
        due_ns: r.due,
        switch_in_ns: w.switch_in_ts,
        latency_ns: w.latency(),
        inferred: w.inferred,
        latency_min_ns: known_latency(w).filter(|_| w.inferred),
        truncated: r.truncated,
        lost_events: r.lost,
        timeline,
        elided: r.elided,
        breakdown: r.breakdown,
        cause,
        verdict,
    }
}

/// The part of the latency the events account for: to the switch-in, or for an inferred
/// one to the CPU's last event before it.
fn known_latency(w: &Wake) -> Option<u64> {
    match (w.inferred, w.inferred_after) {
        (true, Some(after)) => Some(after.clamp(w.waking_ts, w.switch_in_ts) - w.waking_ts),
        (true, None) => None,
        (false, _) => Some(w.latency()),
    }
}

/// The largest contributor, in one line.
fn verdict(w: &Wake, b: &Breakdown, steps: &[Step], truncated: bool) -> (Cause, String) {
    let known = known_latency(w).unwrap_or_else(|| w.latency());
    let lat = known.max(1);
    let known_end = w.waking_ts + known;
    let steps: Vec<&Step> = steps.iter().filter(|s| s.start_ns < known_end).collect();
    let share = |ns: u64| ns * 100 / lat;
    let mut tasks: Vec<(&str, i32, Option<i32>, u64)> = Vec::new();
    for s in &steps {
        if let StepKind::Task { tid, prio } | StepKind::Unrecorded { tid, prio } = s.kind {
            if tid == 0 {
                continue;
            }
            match tasks.iter_mut().find(|t| t.1 == tid) {
                Some(t) => t.3 += s.end_ns.min(known_end) - s.start_ns,
                None => tasks.push((&s.name, tid, prio, s.end_ns.min(known_end) - s.start_ns)),
            }
        }
    }
    tasks.sort_by_key(|t| Reverse(t.3));
    let irqs = b.hardirq_ns + b.softirq_ns;
    let mut cause = Cause::Spread;
    let mut line = if let Some(&(name, tid, prio, ns)) = tasks.first().filter(|t| t.3 * 2 >= lat) {
        cause = Cause::Task;
        let rank = match prio {
            Some(p) if p < w.prio => "higher priority",
            Some(p) if p == w.prio => "same priority: it waited for its turn",
            Some(_) => "lower priority: not preemptible there?",
            None => "priority unknown",
        };
        let observer = if is_jitterlab_thread(name) {
            " (jitterlab's own thread: the observer, not the system under test)"
        } else {
            ""
        };
        format!(
            "{name}-{tid} ({rank}) ran for {}% of the window{observer}",
            share(ns)
        )
    } else if irqs * 2 >= lat {
        cause = Cause::Interrupts;
        let mut by: Vec<(&str, u64)> = Vec::new();
        for s in steps
            .iter()
            .filter(|s| matches!(s.kind, StepKind::Irq { .. } | StepKind::Softirq { .. }))
        {
            let d = s.end_ns.min(known_end) - s.start_ns;
            match by.iter_mut().find(|x| x.0 == s.name) {
                Some(x) => x.1 += d,
                None => by.push((&s.name, d)),
            }
        }
        by.sort_by_key(|x| Reverse(x.1));
        let top: Vec<&str> = by.iter().take(2).map(|x| x.0).collect();
        format!(
            "interrupt work for {}% of the window: {}",
            share(irqs),
            top.join(", ")
        )
    } else if b.gaps_ns * 2 >= lat {
        cause = Cause::NoEvents;
        format!(
            "no events for {}% of the window: hypervisor, SMI or IRQs-off suspected",
            share(b.gaps_ns)
        )
    } else if b.idle_ns * 2 >= lat {
        cause = Cause::Idle;
        format!(
            "the CPU stayed idle for {}% of the window: wake-up IPI, idle-state exit or switch path",
            share(b.idle_ns)
        )
    } else {
        let top = tasks.first().map_or_else(String::new, |t| {
            format!("; most: {}-{} {}%", t.0, t.1, share(t.3))
        });
        format!(
            "spread: tasks {}%, interrupts {}%, idle {}%, no events {}%{top}",
            share(b.tasks_ns),
            share(irqs),
            share(b.idle_ns),
            share(b.gaps_ns)
        )
    };
    if matches!(w.waker, Waker::Task { .. }) && w.waker_cpu != w.cpu && b.idle_ns * 2 >= lat {
        line.push_str(" (woken from another CPU)");
    }
    if w.inferred {
        line = format!(
            "switch-in not recorded: between {} and {} after the waking; before: {line}",
            fmt_ns(known),
            fmt_ns(w.latency())
        );
    }
    if truncated {
        line.push_str("; history shorter than the window");
    }
    (cause, line)
}

/// The names of jitterlab's own threads (its trace recorder, watcher, loads and
/// probes): when one is the cause, the verdict says it was the observer.
const JITTERLAB_THREADS: [&str; 3] = ["jitterlab", "jl-record", "jl-watch"];

/// Whether `comm` names one of jitterlab's own threads (`jitterlab`, `jitterlab-rec/1`,
/// `jl-record`...).
fn is_jitterlab_thread(comm: &str) -> bool {
    JITTERLAB_THREADS.iter().any(|p| comm.starts_with(p))
}

/// `12.3 us`, for the verdict line.
fn fmt_ns(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.1} us", ns as f64 / 1e3),
        _ => format!("{:.2} ms", ns as f64 / 1e6),
    }
}

impl Sink for BlameFold {
    fn slice(&mut self, s: &RunSlice) {
        let item = Item::Slice {
            tid: s.tid,
            comm: s.comm,
            prio: s.prio,
            inferred: s.start_kind == crate::model::SliceStart::Inferred,
        };
        self.push(s.cpu, s.start, s.end, item);
    }
    fn irq(&mut self, s: &IrqSpan) {
        if s.depth == 0 {
            self.push(s.cpu, s.start, s.end, Item::Irq(s.irq));
        }
    }
    fn softirq(&mut self, s: &SoftirqSpan) {
        self.push(s.cpu, s.start, s.end, Item::Softirq(s.vec));
    }
    fn gap(&mut self, g: &Gap) {
        self.push(g.cpu, g.start, g.end, Item::Gap);
    }
    fn anomaly(&mut self, a: &Anomaly) {
        if a.kind != AnomalyKind::LostEvents {
            return;
        }
        let c = a.cpu as usize;
        if self.cpus.len() <= c {
            self.cpus.resize_with(c + 1, History::default);
        }
        let h = &mut self.cpus[c];
        // The events were lost between the CPU's last event and the mark.
        h.lost.push_back((h.last_end.min(a.ts), a.ts, a.count));
    }
    fn wake(&mut self, w: &Wake) {
        self.wakes += 1;
        let i = w.task as usize;
        if self.last_wake.len() <= i {
            self.last_wake.resize(i + 1, None);
        }
        self.last_wake[i] = Some((self.wakes, w.clone()));
        if self.n == 0 || !self.select.wants(w) || (self.recorded_only && w.inferred) {
            return;
        }
        let lat = w.latency();
        if self.worst.len() >= self.n
            && self
                .worst
                .peek()
                .is_some_and(|Reverse((min, _))| lat <= *min)
        {
            return;
        }
        self.seq += 1;
        let raw = self.build(w);
        self.built.insert(self.seq, raw);
        self.worst.push(Reverse((lat, self.seq)));
        if self.worst.len() > self.n {
            if let Some(Reverse((_, seq))) = self.worst.pop() {
                self.built.remove(&seq);
            }
        }
    }
    fn marker(&mut self, m: &Marker) {
        if !m.text.trim_start().starts_with(MARKER_PREFIX) {
            return;
        }
        // The writer is the measuring thread, right after its late wake-up.
        let last = self
            .last_wake
            .iter()
            .flatten()
            .filter(|(_, w)| w.tid == m.tid)
            .max_by_key(|(n, _)| *n)
            .map(|(_, w)| w);
        let Some(last) = last.filter(|w| self.select.wants(w)) else {
            return;
        };
        let mut w = last.clone();
        // The sample was due its latency before the marker (which follows the reading of
        // the clock by microseconds): the window starts there.
        let due = marker_latency_ns(&m.text).map(|l| m.ts.saturating_sub(l));
        let mut waking = w.waking_ts;
        match due {
            // The due sample's wake-up is not in the trace (its waking was lost, or its
            // switch-in not yet seen): the window runs from the due time to the marker.
            Some(d) if w.switch_in_ts < d => {
                waking = d;
                w.waking_ts = d;
                w.switch_in_ts = m.ts;
                w.cpu = m.cpu;
                w.inferred = true;
                w.inferred_after = None;
                w.from_idle = None;
                w.wakeup_ts = None;
                w.irq_exit_ts = None;
                w.softirq_exit_ts = None;
            }
            Some(d) => w.waking_ts = w.waking_ts.min(d),
            None => {}
        }
        let mut raw = self.build(&w);
        raw.waking = waking;
        raw.due = due;
        self.marked.push((m.text.trim().to_string(), raw));
    }
}

#[cfg(test)]
mod tests {
    use super::marker_latency_ns;

    #[test]
    fn a_marker_says_its_latency() {
        let now = "jitterlab: latency 612 us > 500 us on cpu 1 (612345 ns)\n";
        assert_eq!(marker_latency_ns(now), Some(612_345));
        let older = "jitterlab: latency 612 us > 500 us on cpu 1";
        assert_eq!(marker_latency_ns(older), Some(612_000));
        assert_eq!(marker_latency_ns("jitterlab: hello (x ns)"), None);
        assert_eq!(marker_latency_ns("jitterlab: latency many us"), None);
    }

    #[test]
    fn jitterlabs_own_threads_are_known() {
        for ours in [
            "jitterlab",
            "jitterlab-rec/1",
            "jitterlab-probe/",
            "jl-record",
            "jl-watch",
        ] {
            assert!(super::is_jitterlab_thread(ours), "{ours}");
        }
        for theirs in ["iperf3", "jl-test-hog", "kworker/1:0"] {
            assert!(!super::is_jitterlab_thread(theirs), "{theirs}");
        }
    }
}
