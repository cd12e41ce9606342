//! The noise probe's window as a trace of its CPU saw it (issue 16): what took the CPU
//! from a thread that spins reading the clock, the way rtla osnoise splits noise into
//! IRQ, softirq, thread and "hardware" noise where its tracer exists.
//!
//! The probe writes a trace marker just before its first clock reading and another
//! just after its last ([`START_MARKER`], [`END_MARKER`], followed by the CPU): the two
//! markers put the probe's window and its gaps on the trace clock, whatever that clock
//! is, to the length of one `write(2)`. [`NoiseFold`] then folds the events of that CPU
//! between them into intervals — hardirq handlers, irq_vectors handlers (the local
//! timer, IPIs, irq_work), hrtimer callbacks, softirqs, other threads, idle — and
//! accounts for the window ([`NoiseAccount`]): the time each kind took, their union
//! (the traced noise), the largest takers, and each of the probe's longest gaps with
//! what the trace shows in it. A gap with no event in it is time the CPU was taken
//! with nothing in the kernel to show for it: on a VM the host stopping the vCPU, on
//! hardware an SMI.
//!
//! A [`Sink`] on the one pass's machine, beside any other consumer of the trace; its
//! memory grows with the intervals of the one CPU inside the window, never with the
//! rest of the trace.

use std::collections::HashMap;

use jitterlab_trace::{EventSource, Result};

use crate::intervals::merge;
use crate::model::{
    Anomaly, AnomalyKind, HandlerKind, HandlerSpan, IrqSpan, Marker, RunSlice, SliceEnd,
    SoftirqSpan,
};
use crate::sink::Sink;
use crate::state::{Machine, MachineOptions};
use serde::Serialize;

/// The marker the probe writes just before its window (then ` cpu N`).
pub const START_MARKER: &str = "jitterlab-noise: start";
/// The marker it writes just after (then ` cpu N`).
pub const END_MARKER: &str = "jitterlab-noise: end";

/// One of the probe's gaps, on its own clock: its offset from the window's start and
/// its length, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeGap {
    /// From the window's start, ns.
    pub at_ns: u64,
    /// Length, ns.
    pub ns: u64,
}

/// What held the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseKind {
    /// A device interrupt's handler (irq_handler_entry/exit).
    Irq,
    /// An irq_vectors handler: the local timer, an IPI, irq_work.
    Vector,
    /// An hrtimer callback (the tick among them).
    Timer,
    /// A softirq.
    Softirq,
    /// Another thread.
    Thread,
    /// The CPU idle while the probe did not run (it was throttled or blocked).
    Idle,
    /// Nothing the trace shows.
    NoEvents,
}

impl NoiseKind {
    /// The word written.
    pub fn name(self) -> &'static str {
        match self {
            NoiseKind::Irq => "irq",
            NoiseKind::Vector => "vector",
            NoiseKind::Timer => "timer",
            NoiseKind::Softirq => "softirq",
            NoiseKind::Thread => "thread",
            NoiseKind::Idle => "idle",
            NoiseKind::NoEvents => "no_events",
        }
    }
}

/// One source of noise over the window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Taker {
    /// What kind.
    pub kind: NoiseKind,
    /// Its name: the IRQ handler (`virtio1-req.0`), the vector (`local_timer`), the
    /// callback, the softirq (`RCU`), the thread (`kworker/1:1-123`).
    pub name: String,
    /// How many times it ran in the window.
    pub count: u64,
    /// Its time in the window, ns (nested handlers counted in each).
    pub ns: u64,
}

/// One of the probe's gaps with what the trace shows inside it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GapCause {
    /// From the window's start, ns (the probe's clock).
    pub at_ns: u64,
    /// Its start on the trace clock, ns from the trace's first event (the report's
    /// time 0).
    pub t_ns: u64,
    /// Length, ns.
    pub ns: u64,
    /// The kind that took most of it, `no_events` when nothing did.
    pub cause: NoiseKind,
    /// What ran in it, most time first (at most 3).
    pub what: Vec<String>,
    /// Of its length, the time something traced ran, ns.
    pub traced_ns: u64,
}

/// The probe's window accounted for from the trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NoiseAccount {
    /// The CPU.
    pub cpu: u32,
    /// The window on the trace clock: the start marker, ns.
    pub start_ns: u64,
    /// The end marker, ns.
    pub end_ns: u64,
    /// Device interrupt handlers' time in the window, ns.
    pub irq_ns: u64,
    /// irq_vectors handlers' time, ns.
    pub vector_ns: u64,
    /// hrtimer callbacks' time, ns.
    pub timer_ns: u64,
    /// Softirqs' time, ns.
    pub softirq_ns: u64,
    /// Other threads' time, ns.
    pub thread_ns: u64,
    /// Idle time (the probe not running, nothing else either), ns.
    pub idle_ns: u64,
    /// The union of all of the above: the time the trace shows the CPU away from the
    /// probe, ns.
    pub traced_ns: u64,
    /// The largest takers, most time first (at most 8).
    pub takers: Vec<Taker>,
    /// Of the traced time, what fell inside one of the probe's gaps, ns: what the trace
    /// shows and the probe felt. The rest are handlers shorter than the probe's
    /// threshold (or a window put wrongly on the trace clock).
    pub traced_in_gaps_ns: u64,
    /// The farthest the gaps of a stretch of the window were moved on the trace clock
    /// from where the markers put them, to fit the traced time best, ns (the markers are
    /// stamped inside their writes, and the clocks drift).
    pub shift_ns: i64,
    /// Every gap of the probe by the kind that took most of it (`no_events` when the
    /// trace shows nothing in it), most time first.
    pub by_cause: Vec<CauseTotal>,
    /// The probe's longest gaps, longest first (at most [`DETAILED_GAPS`]), each with
    /// what the trace shows in it.
    pub gaps: Vec<GapCause>,
    /// The CPU lost events inside the window: the account is short by what they were.
    pub lost_events: bool,
}

/// The gaps of one cause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CauseTotal {
    /// The kind that took most of each.
    pub cause: NoiseKind,
    /// How many gaps.
    pub gaps: u64,
    /// Their total length, ns.
    pub ns: u64,
    /// Of that, the time the trace shows something running, ns.
    pub traced_ns: u64,
}

/// The longest gaps described one by one.
pub const DETAILED_GAPS: usize = 10;

impl NoiseAccount {
    /// The gaps with no event in them: how many, and their total length, ns.
    pub fn silent(&self) -> (u64, u64) {
        self.by_cause
            .iter()
            .find(|c| c.cause == NoiseKind::NoEvents)
            .map_or((0, 0), |c| (c.gaps, c.ns))
    }

    /// How many gaps the account covers.
    pub fn gap_count(&self) -> u64 {
        self.by_cause.iter().map(|c| c.gaps).sum()
    }
}

#[derive(Clone, Copy, Debug)]
struct Span {
    start: u64,
    end: u64,
    kind: NoiseKind,
    name: u32,
}

/// Folds the machine's intervals of one CPU into the probe's window; see the module.
#[derive(Debug)]
pub struct NoiseFold {
    cpu: u32,
    start_text: String,
    end_text: String,
    gaps: Vec<ProbeGap>,
    first: Option<u64>,
    /// The start marker's time and the probe's tid (the marker's writer).
    window: Option<(u64, i32)>,
    end: Option<u64>,
    lost: bool,
    names: HashMap<(NoiseKind, String), u32>,
    name_list: Vec<(NoiseKind, String)>,
    spans: Vec<Span>,
}

impl NoiseFold {
    /// A fold for the probe's window on `cpu`, with its `gaps` (all of them, or as many
    /// as it kept).
    pub fn new(cpu: u32, gaps: &[ProbeGap]) -> NoiseFold {
        NoiseFold {
            cpu,
            start_text: format!("{START_MARKER} cpu {cpu}"),
            end_text: format!("{END_MARKER} cpu {cpu}"),
            gaps: gaps.to_vec(),
            first: None,
            window: None,
            end: None,
            lost: false,
            names: HashMap::new(),
            name_list: Vec::new(),
            spans: Vec::new(),
        }
    }

    fn name(&mut self, kind: NoiseKind, name: &str) -> u32 {
        if let Some(&i) = self.names.get(&(kind, name.to_string())) {
            return i;
        }
        let i = self.name_list.len() as u32;
        self.name_list.push((kind, name.to_string()));
        self.names.insert((kind, name.to_string()), i);
        i
    }

    /// Whether an interval of `cpu` from `start` to `end` may overlap the window.
    fn wants(&self, cpu: u32, start: u64, end: u64) -> bool {
        match self.window {
            Some((t0, _)) => cpu == self.cpu && end > t0 && self.end.is_none_or(|e| start < e),
            None => false,
        }
    }

    /// Keeps the part of an interval inside the window.
    fn close(&mut self, kind: NoiseKind, name: &str, start: u64, end: u64) {
        let Some((t0, _)) = self.window else {
            return;
        };
        let start = start.max(t0);
        let end = self.end.map_or(end, |e| end.min(e));
        if end > start {
            let name = self.name(kind, name);
            self.spans.push(Span {
                start,
                end,
                kind,
                name,
            });
        }
    }

    /// The account, when both markers were seen.
    pub fn finish(self, window_ns: u64) -> Option<NoiseAccount> {
        let (t0, _) = self.window?;
        let t1 = self.end?;
        let mut by_kind: HashMap<NoiseKind, u64> = HashMap::new();
        let mut by_name: HashMap<u32, (u64, u64)> = HashMap::new();
        for s in &self.spans {
            *by_kind.entry(s.kind).or_default() += s.end - s.start;
            let e = by_name.entry(s.name).or_default();
            e.0 += 1;
            e.1 += s.end - s.start;
        }
        let mut sorted = self.spans.clone();
        sorted.sort_unstable_by_key(|s| (s.start, s.end));
        let merged = merge(sorted.iter().map(|s| (s.start, s.end)));
        let traced_ns = merged.iter().map(|(a, b)| b - a).sum();
        let mut takers: Vec<Taker> = by_name
            .into_iter()
            .filter_map(|(i, (count, ns))| {
                let (kind, name) = self.name_list.get(i as usize)?.clone();
                Some(Taker {
                    kind,
                    name,
                    count,
                    ns,
                })
            })
            .collect();
        takers.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
        takers.truncate(8);
        // The probe's clock to the trace's: the two markers bound the window.
        let span = t1.saturating_sub(t0);
        let at = |off: u64| -> u64 {
            if window_ns == 0 {
                t0 + off
            } else {
                t0 + (off as u128 * span as u128 / window_ns as u128) as u64
            }
        };
        // The markers are stamped inside their write(2)s, a few microseconds from the
        // probe's first and last readings (more when the write is interrupted), and the
        // two clocks may drift apart: within each stretch of [`SEGMENT_NS`] the gaps are
        // moved to where the traced time fits them best, within [`ALIGN_NS`].
        let segments = (window_ns / SEGMENT_NS + 1) as usize;
        let mut by_segment: Vec<Vec<(u64, u64)>> = vec![Vec::new(); segments.min(1 << 16)];
        for g in &self.gaps {
            let k = ((g.at_ns / SEGMENT_NS) as usize).min(by_segment.len() - 1);
            by_segment[k].push((at(g.at_ns), at(g.at_ns + g.ns)));
        }
        let mut shifts: Vec<i64> = Vec::with_capacity(by_segment.len());
        for mut seg in by_segment {
            seg.sort_unstable();
            let kept = shifts.last().copied().unwrap_or(0);
            shifts.push(best_shift(&merged, &seg).unwrap_or(kept));
        }
        let shift_of =
            |off: u64| -> i64 { shifts[((off / SEGMENT_NS) as usize).min(shifts.len() - 1)] };
        let shift = shifts.iter().copied().max_by_key(|s| s.abs()).unwrap_or(0);
        let at = |off: u64, base: u64| -> u64 { at(off).saturating_add_signed(shift_of(base)) };
        let longest_span = sorted.iter().map(|s| s.end - s.start).max().unwrap_or(0);
        let mut totals: HashMap<NoiseKind, CauseTotal> = HashMap::new();
        let mut traced_in_gaps_ns = 0;
        let mut described: Vec<GapCause> = Vec::new();
        // The gaps longest first (stable: equal lengths in time order), so that the
        // first ones are described.
        let mut order: Vec<usize> = (0..self.gaps.len()).collect();
        order.sort_by(|&x, &y| self.gaps[y].ns.cmp(&self.gaps[x].ns).then(x.cmp(&y)));
        for (rank, &i) in order.iter().enumerate() {
            let g = self.gaps[i];
            let (a, b) = (at(g.at_ns, g.at_ns), at(g.at_ns + g.ns, g.at_ns));
            // The spans that may overlap [a, b): starting before b, and not ending
            // before a (none is longer than the longest).
            let lo = sorted.partition_point(|s| s.start.saturating_add(longest_span) <= a);
            let mut over: HashMap<u32, u64> = HashMap::new();
            let mut inside = Vec::new();
            for s in &sorted[lo..] {
                if s.start >= b {
                    break;
                }
                let o = s.end.min(b).saturating_sub(s.start.max(a));
                if o > 0 {
                    *over.entry(s.name).or_default() += o;
                    inside.push((s.start.max(a), s.end.min(b)));
                }
            }
            let traced_ns: u64 = merge(inside.into_iter()).iter().map(|(x, y)| y - x).sum();
            traced_in_gaps_ns += traced_ns;
            let mut kinds: HashMap<NoiseKind, u64> = HashMap::new();
            for (n, o) in &over {
                if let Some((k, _)) = self.name_list.get(*n as usize) {
                    *kinds.entry(*k).or_default() += o;
                }
            }
            let cause = kinds
                .into_iter()
                .max_by(|x, y| x.1.cmp(&y.1).then(y.0.cmp(&x.0)))
                .map_or(NoiseKind::NoEvents, |k| k.0);
            let t = totals.entry(cause).or_insert(CauseTotal {
                cause,
                gaps: 0,
                ns: 0,
                traced_ns: 0,
            });
            t.gaps += 1;
            t.ns += g.ns;
            t.traced_ns += traced_ns;
            if rank < DETAILED_GAPS {
                let mut what: Vec<(u32, u64)> = over.into_iter().collect();
                what.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
                described.push(GapCause {
                    at_ns: g.at_ns,
                    t_ns: a.saturating_sub(self.first.unwrap_or(t0)),
                    ns: g.ns,
                    cause,
                    what: what
                        .iter()
                        .take(3)
                        .filter_map(|(n, _)| self.name_list.get(*n as usize))
                        .map(|(_, n)| n.clone())
                        .collect(),
                    traced_ns,
                });
            }
        }
        let mut by_cause: Vec<CauseTotal> = totals.into_values().collect();
        by_cause.sort_by(|x, y| y.ns.cmp(&x.ns).then(x.cause.cmp(&y.cause)));
        let k = |kind| by_kind.get(&kind).copied().unwrap_or(0);
        Some(NoiseAccount {
            cpu: self.cpu,
            start_ns: t0,
            end_ns: t1,
            irq_ns: k(NoiseKind::Irq),
            vector_ns: k(NoiseKind::Vector),
            timer_ns: k(NoiseKind::Timer),
            softirq_ns: k(NoiseKind::Softirq),
            thread_ns: k(NoiseKind::Thread),
            idle_ns: k(NoiseKind::Idle),
            traced_ns,
            takers,
            traced_in_gaps_ns,
            shift_ns: shift,
            by_cause,
            gaps: described,
            lost_events: self.lost,
        })
    }
}

impl Sink for NoiseFold {
    fn begin(&mut self, ts: u64) {
        self.first.get_or_insert(ts);
    }

    fn marker(&mut self, m: &Marker) {
        if m.cpu != self.cpu {
            return;
        }
        let t = m.text.trim_end();
        if self.window.is_none() && t == self.start_text {
            self.window = Some((m.ts, m.tid));
        } else if self.window.is_some() && self.end.is_none() && t == self.end_text {
            self.end = Some(m.ts);
        }
    }

    fn slice(&mut self, s: &RunSlice) {
        // A slice whose switch-out the trace lost ran, as far as the trace shows, until
        // its CPU's last event before another task was seen there: no time is counted
        // that the trace does not show.
        let end = match s.end_kind {
            SliceEnd::Displaced => s.last_seen,
            _ => s.end,
        };
        if !self.wants(s.cpu, s.start, end) || self.window.is_some_and(|w| w.1 == s.tid) {
            return;
        }
        if s.tid == 0 {
            self.close(NoiseKind::Idle, "idle", s.start, end);
        } else {
            let name = format!("{}-{}", s.comm, s.tid);
            self.close(NoiseKind::Thread, &name, s.start, end);
        }
    }

    fn irq(&mut self, s: &IrqSpan) {
        if self.wants(s.cpu, s.start, s.end) {
            self.close(NoiseKind::Irq, &s.name, s.start, s.end);
        }
    }

    fn softirq(&mut self, s: &SoftirqSpan) {
        if self.wants(s.cpu, s.start, s.end) {
            self.close(
                NoiseKind::Softirq,
                &crate::softirq_name(s.vec),
                s.start,
                s.end,
            );
        }
    }

    fn handler(&mut self, h: &HandlerSpan) {
        if self.wants(h.cpu, h.start, h.end) {
            let kind = match h.kind {
                HandlerKind::Hrtimer => NoiseKind::Timer,
                HandlerKind::Vector => NoiseKind::Vector,
            };
            self.close(kind, &h.name, h.start, h.end);
        }
    }

    fn anomaly(&mut self, a: &Anomaly) {
        if a.kind == AnomalyKind::LostEvents && self.wants(a.cpu, a.ts, a.ts.saturating_add(1)) {
            self.lost = true;
        }
    }
}

/// The gaps are moved at most this far from where the markers put them, ns.
pub const ALIGN_NS: i64 = 50_000;

/// The stretch of the window within which the gaps move together, ns.
pub const SEGMENT_NS: u64 = 50_000_000;

/// The shift in [-ALIGN_NS, ALIGN_NS] (steps of 250 ns) that puts the most of the
/// traced time `merged` (sorted, disjoint) inside the `gaps` (sorted by start, disjoint);
/// the smallest such shift; `None` when no shift makes them overlap.
fn best_shift(merged: &[(u64, u64)], gaps: &[(u64, u64)]) -> Option<i64> {
    let (Some(first), Some(last)) = (gaps.first(), gaps.last()) else {
        return None;
    };
    // Only the traced time near these gaps can overlap them.
    let reach = ALIGN_NS.unsigned_abs();
    let lo = merged.partition_point(|m| m.1 + reach <= first.0);
    let hi = merged.partition_point(|m| m.0 < last.1 + reach);
    let merged = &merged[lo..hi.max(lo)];
    let overlap = |shift: i64| -> u64 {
        let mut total = 0;
        let mut j = 0;
        for &(a, b) in gaps {
            let (a, b) = (
                a.saturating_add_signed(shift),
                b.saturating_add_signed(shift),
            );
            while j < merged.len() && merged[j].1 <= a {
                j += 1;
            }
            let mut k = j;
            while k < merged.len() && merged[k].0 < b {
                total += merged[k].1.min(b).saturating_sub(merged[k].0.max(a));
                k += 1;
            }
        }
        total
    };
    let mut best = (overlap(0), 0i64);
    for step in 1..=(ALIGN_NS / 250) {
        for shift in [-step * 250, step * 250] {
            let o = overlap(shift);
            if o > best.0 {
                best = (o, shift);
            }
        }
    }
    (best.0 > 0).then_some(best.1)
}

/// Runs a [`NoiseFold`] over `source` for the probe's window on `cpu` (`window_ns` long
/// on the probe's clock, with its `gaps`). `None` when the trace has not both
/// markers on that CPU.
pub fn noise_account(
    source: &mut dyn EventSource,
    cpu: u32,
    window_ns: u64,
    gaps: &[ProbeGap],
) -> Result<Option<NoiseAccount>> {
    let mut fold = NoiseFold::new(cpu, gaps);
    let mut machine = Machine::new(MachineOptions::default());
    crate::engine::pass_source(
        source,
        Some(&mut machine),
        &mut crate::engine::no_raw,
        &mut fold,
    )?;
    Ok(fold.finish(window_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_trace::{Comm, Event, EventKind, Flags, Sym, TaskState, Text};

    fn ev(ts: u64, pid: i32, kind: EventKind) -> Event {
        Event {
            ts,
            cpu: 1,
            pid,
            flags: Flags(0),
            preempt_count: 0,
            kind,
        }
    }
    fn print(ts: u64, text: &str) -> Event {
        ev(
            ts,
            7,
            EventKind::Print {
                ip: 0,
                text: Text::from(text),
            },
        )
    }
    /// The tests' tasks by tid.
    fn comm_of(tid: i32) -> Comm {
        Comm::new(match tid {
            0 => "swapper/1",
            55 => "kworker/1:1",
            _ => "jl-noise/1",
        })
    }
    fn switch(ts: u64, prev: i32, next: i32, comm: &str) -> Event {
        ev(
            ts,
            prev,
            EventKind::SchedSwitch {
                prev_comm: comm_of(prev),
                prev_pid: prev,
                prev_prio: 98,
                prev_state: TaskState(0),
                next_comm: Comm::new(comm),
                next_pid: next,
                next_prio: 120,
            },
        )
    }

    /// The fold on `cpu` fed through the machine.
    fn feed(cpu: u32, events: &[Event], gaps: &[ProbeGap]) -> NoiseFold {
        let mut f = NoiseFold::new(cpu, gaps);
        let mut m = Machine::new(MachineOptions::default());
        for e in events {
            m.feed(e, &mut f);
        }
        m.finish(&mut f);
        f
    }

    fn fold(events: &[Event], window_ns: u64, gaps: &[ProbeGap]) -> NoiseAccount {
        feed(1, events, gaps)
            .finish(window_ns)
            .expect("both markers")
    }

    #[test]
    fn accounts_for_each_kind_and_names_the_gaps() {
        let irq = |ts, entry: bool| {
            ev(
                ts,
                7,
                if entry {
                    EventKind::IrqHandlerEntry {
                        irq: 36,
                        name: Text::from("virtio1-req.0"),
                    }
                } else {
                    EventKind::IrqHandlerExit { irq: 36, ret: 1 }
                },
            )
        };
        let timer = |ts, entry: bool| {
            ev(
                ts,
                7,
                if entry {
                    EventKind::Other {
                        name: Text::from("irq_vectors:local_timer_entry"),
                        fields: Vec::new(),
                    }
                } else {
                    EventKind::Other {
                        name: Text::from("irq_vectors:local_timer_exit"),
                        fields: Vec::new(),
                    }
                },
            )
        };
        let hrt = |ts, entry: bool| {
            ev(
                ts,
                7,
                if entry {
                    EventKind::HrtimerExpireEntry {
                        hrtimer: 1,
                        now: 0,
                        function: Sym {
                            addr: 0xff,
                            name: Some(Text::from("tick_nohz_handler+0x0/0x10")),
                        },
                    }
                } else {
                    EventKind::HrtimerExpireExit { hrtimer: 1 }
                },
            )
        };
        let events = [
            // Before the window: an IRQ that closes before it is not counted.
            irq(500, true),
            irq(900, false),
            print(1_000, "jitterlab-noise: start cpu 1"),
            // A tick: 20 us of vector with 5 us of hrtimer callback nested.
            timer(11_000, true),
            hrt(12_000, true),
            hrt(17_000, false),
            timer(31_000, false),
            // A device IRQ then its softirq, 10 + 10 us.
            irq(51_000, true),
            irq(61_000, false),
            ev(61_000, 7, EventKind::SoftirqEntry { vec: 4 }),
            ev(71_000, 7, EventKind::SoftirqExit { vec: 4 }),
            // A kworker for 40 us.
            switch(101_000, 7, 55, "kworker/1:1"),
            switch(141_000, 55, 7, "jl-noise/1"),
            print(1_001_000, "jitterlab-noise: end cpu 1"),
            // After the window: ignored.
            irq(1_100_000, true),
            irq(1_200_000, false),
        ];
        // The probe's gaps: the tick, the IRQ and its softirq, the kworker, and one
        // that nothing in the trace explains.
        let gaps = [
            ProbeGap {
                at_ns: 99_000,
                ns: 41_000,
            },
            ProbeGap {
                at_ns: 10_000,
                ns: 21_000,
            },
            ProbeGap {
                at_ns: 50_000,
                ns: 21_000,
            },
            ProbeGap {
                at_ns: 500_000,
                ns: 30_000,
            },
        ];
        let a = fold(&events, 1_000_000, &gaps);
        assert_eq!((a.start_ns, a.end_ns), (1_000, 1_001_000));
        assert_eq!(a.vector_ns, 20_000);
        assert_eq!(a.timer_ns, 5_000);
        assert_eq!(a.irq_ns, 10_000);
        assert_eq!(a.softirq_ns, 10_000);
        assert_eq!(a.thread_ns, 40_000);
        assert_eq!(a.idle_ns, 0);
        // The nested callback is counted once in the union.
        assert_eq!(a.traced_ns, 20_000 + 20_000 + 40_000);
        assert_eq!(a.takers[0].name, "kworker/1:1-55");
        assert_eq!(a.takers[0].kind, NoiseKind::Thread);
        let causes: Vec<(NoiseKind, u64)> = a.gaps.iter().map(|g| (g.cause, g.traced_ns)).collect();
        // Longest first.
        assert_eq!(
            causes,
            [
                (NoiseKind::Thread, 40_000),
                (NoiseKind::NoEvents, 0),
                (NoiseKind::Vector, 20_000),
                (NoiseKind::Irq, 20_000),
            ]
        );
        assert_eq!(a.shift_ns, 0);
        // On the trace clock from its first event (500 ns): the marker at 1 us + 99 us.
        assert_eq!(a.gaps[0].t_ns, 99_500);
        assert_eq!(a.gaps[2].what, ["local_timer", "tick_nohz_handler"]);
        assert_eq!(a.gaps[3].what, ["virtio1-req.0", "BLOCK"]);
        assert_eq!(a.silent(), (1, 30_000));
        assert_eq!(a.gap_count(), 4);
        // Every traced interval lies in a gap.
        assert_eq!(a.traced_in_gaps_ns, a.traced_ns);
        let totals: Vec<(NoiseKind, u64, u64)> =
            a.by_cause.iter().map(|c| (c.cause, c.gaps, c.ns)).collect();
        assert_eq!(
            totals,
            [
                (NoiseKind::Thread, 1, 41_000),
                (NoiseKind::NoEvents, 1, 30_000),
                (NoiseKind::Irq, 1, 21_000),
                (NoiseKind::Vector, 1, 21_000),
            ]
        );
        assert!(!a.lost_events);
    }

    #[test]
    fn the_markers_map_the_probe_clock_onto_the_trace_clock() {
        // The trace clock runs 10 % fast against the probe's: a gap at 500 us of the
        // probe's is at 550 us of the trace's.
        let events = [
            print(0, "jitterlab-noise: start cpu 1"),
            switch(550_000, 7, 0, "swapper/1"),
            switch(560_000, 0, 7, "jl-noise/1"),
            print(1_100_000, "jitterlab-noise: end cpu 1"),
        ];
        let a = fold(
            &events,
            1_000_000,
            &[ProbeGap {
                at_ns: 500_000,
                ns: 10_000,
            }],
        );
        assert_eq!(a.idle_ns, 10_000);
        assert_eq!(a.gaps[0].cause, NoiseKind::Idle);
        // 10 us of the probe's is 11 us of the trace's: the idle 10 us are inside it.
        assert_eq!(a.gaps[0].traced_ns, 10_000);
    }

    #[test]
    fn the_gaps_move_to_where_the_traced_time_fits_them() {
        // The start marker was stamped 3 us before the probe's first reading: by the
        // markers, each gap would begin 3 us before the thread that made it.
        let mut events = vec![print(0, "jitterlab-noise: start cpu 1")];
        let mut gaps = Vec::new();
        for k in 0..10u64 {
            let t = 3_000 + k * 100_000;
            events.push(switch(t + 1_000, 7, 55, "kworker/1:1"));
            events.push(switch(t + 9_000, 55, 7, "jl-noise/1"));
            gaps.push(ProbeGap {
                at_ns: k * 100_000,
                ns: 10_000,
            });
        }
        events.push(print(1_003_000, "jitterlab-noise: end cpu 1"));
        let a = fold(&events, 1_003_000, &gaps);
        // Each 8 us thread fits its 10 us gap for moves of 2 to 4 us: the smallest is
        // taken.
        assert_eq!(a.shift_ns, 2_000);
        assert_eq!(a.traced_in_gaps_ns, a.traced_ns);
        assert!(a
            .gaps
            .iter()
            .all(|g| g.cause == NoiseKind::Thread && g.traced_ns == 8_000));
    }

    #[test]
    fn a_switch_the_trace_lost_ends_at_the_cpus_last_event() {
        // The probe went idle (throttled) at 100 us; the switch back was lost, but the
        // tick at 200 us interrupted idle (pid 0) and the end marker is the probe's.
        let tick = |ts, pid, entry: bool| {
            ev(
                ts,
                pid,
                EventKind::Other {
                    name: Text::from(if entry {
                        "irq_vectors:local_timer_entry"
                    } else {
                        "irq_vectors:local_timer_exit"
                    }),
                    fields: Vec::new(),
                },
            )
        };
        let events = [
            print(0, "jitterlab-noise: start cpu 1"),
            switch(100_000, 7, 0, "swapper/1"),
            tick(200_000, 0, true),
            tick(205_000, 0, false),
            tick(900_000, 7, true),
            tick(905_000, 7, false),
            print(1_000_000, "jitterlab-noise: end cpu 1"),
        ];
        let gaps = [ProbeGap {
            at_ns: 100_000,
            ns: 200_000,
        }];
        let a = fold(&events, 1_000_000, &gaps);
        // Idle from the switch to the CPU's last idle event, not to the window's end.
        assert_eq!(a.idle_ns, 105_000);
        assert_eq!(a.traced_in_gaps_ns, a.traced_ns - 5_000);
    }

    #[test]
    fn without_both_markers_there_is_no_account() {
        let f = feed(1, &[print(0, "jitterlab-noise: start cpu 1")], &[]);
        assert!(f.finish(1).is_none());
        // Another CPU's markers are not this one's.
        let both = [
            print(0, "jitterlab-noise: start cpu 1"),
            print(9, "jitterlab-noise: end cpu 1"),
        ];
        assert!(feed(0, &both, &[]).finish(9).is_none());
    }
}
