//! The filters of `--from`/`--to`, `--cpu` and `--pid`: which derived intervals the
//! analyses fold, and (with `--task`) which tasks' rows they show.
//!
//! The machine always sees every event, so its state is right at the window's start; the
//! filters apply to what it derives, between the machine and the folds ([`Filtered`]):
//!
//! - the time window `[from, to]` cuts intervals (run slices, IRQ and softirq spans,
//!   unknown stretches) to their part inside it, as if the trace had been cut there with
//!   the state known from before: a slice cut at `from` did not begin with a switch, one cut
//!   at `to` ends as at the end of the trace. Points count when they fall inside it: a
//!   wake-up at its switch-in, a migration, a function call at its entry;
//! - the CPU set keeps the intervals of those CPUs (a wake-up by the CPU it was switched in
//!   on, a migration by either end);
//! - the process and the task pattern choose task rows, IRQ -> task chains and the wake-ups
//!   blamed, never the intervals (a CPU's busy time stays whole).
//!
//! The same [`Filter`] chooses raw events for `report` and `convert`, through
//! [`EventFilter`]: an event is kept when its time is in the window, its CPU is selected
//! and its current task (`common_pid`) belongs to the process. `--pid PID` means one thing
//! everywhere: the threads of process PID when the trace has thread group ids, and the
//! task whose tid is PID.

use std::borrow::Cow;
use std::collections::HashMap;

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use jitterlab_trace::{Event, EventKind};

use crate::model::{
    Anomaly, Blind, FuncCall, Gap, HandlerSpan, IrqSpan, Marker, Migration, RunSlice, SliceEnd,
    SliceStart, SoftirqSpan, Wake,
};
use crate::pattern::Pattern;
use crate::sink::Sink;

/// Which part of the trace the analyses fold. Every field `None` = all of it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Filter {
    /// The window's start on the trace clock, ns.
    pub from_ns: Option<u64>,
    /// The window's end on the trace clock, ns (inclusive).
    pub to_ns: Option<u64>,
    /// Only these CPUs.
    pub cpus: Option<CpuSet>,
    /// Only this process: its threads when thread group ids are known, else the tid.
    pub pid: Option<i32>,
}

impl Filter {
    /// True when nothing is filtered.
    pub fn is_empty(&self) -> bool {
        *self == Filter::default()
    }

    /// The window, `[from, to]`.
    fn window(&self) -> (u64, u64) {
        (self.from_ns.unwrap_or(0), self.to_ns.unwrap_or(u64::MAX))
    }

    /// True when `ts` is inside the window.
    pub fn in_window(&self, ts: u64) -> bool {
        let (from, to) = self.window();
        (from..=to).contains(&ts)
    }

    /// `[start, end]` cut to the window; `None` when no part of it lies inside (an empty
    /// interval counts when it is inside).
    pub fn clip(&self, start: u64, end: u64) -> Option<(u64, u64)> {
        let (from, to) = self.window();
        let (s, e) = (start.max(from), end.min(to));
        (s < e || (start == end && self.in_window(start))).then_some((s, e))
    }

    /// True when `cpu` is selected.
    pub fn wants_cpu(&self, cpu: u32) -> bool {
        self.cpus.as_ref().is_none_or(|c| c.contains(cpu))
    }

    /// True when `ts` is after the window: a time-ordered stream can stop there.
    pub fn past_window(&self, ts: u64) -> bool {
        self.to_ns.is_some_and(|to| ts > to)
    }

    /// True when task `tid` of process `tgid` (when known) belongs to the selected process.
    pub fn wants_process(&self, tid: i32, tgid: Option<i32>) -> bool {
        self.pid.is_none_or(|p| tid == p || tgid == Some(p))
    }

    /// `s` on a selected CPU, cut to the window: a start cut is not a switch-in
    /// ([`SliceStart::TraceStart`]), an end cut is the end of the window
    /// ([`SliceEnd::TraceEnd`]).
    pub fn slice<'a>(&self, s: &'a RunSlice) -> Option<Cow<'a, RunSlice>> {
        if !self.wants_cpu(s.cpu) {
            return None;
        }
        let (start, end) = self.clip(s.start, s.end)?;
        if (start, end) == (s.start, s.end) {
            return Some(Cow::Borrowed(s));
        }
        let mut c = s.clone();
        if start != s.start {
            c.start = start;
            c.start_kind = SliceStart::TraceStart;
        }
        if end != s.end {
            c.end = end;
            c.end_kind = SliceEnd::TraceEnd;
        }
        c.last_seen = c.last_seen.clamp(c.start, c.end);
        Some(Cow::Owned(c))
    }

    /// True when the wake-up's switch-in is on a selected CPU, inside the window.
    pub fn wants_wake(&self, w: &Wake) -> bool {
        self.wants_cpu(w.cpu) && self.in_window(w.switch_in_ts)
    }
}

/// True when the task `tid` (of process `tgid`, named `comm`) is chosen by the task pattern
/// and the process filter.
pub(crate) fn task_selected(
    task: Option<&Pattern>,
    filter: &Filter,
    tid: i32,
    tgid: Option<i32>,
    comm: &str,
) -> bool {
    task.is_none_or(|p| p.matches(tid.into(), comm)) && filter.wants_process(tid, tgid)
}

/// Which wake-ups the blame section considers: those the filter keeps, of the selected
/// tasks.
#[derive(Clone, Debug, Default)]
pub(crate) struct WakeSelect {
    filter: Filter,
    task: Option<Pattern>,
    tgids: HashMap<i32, i32>,
    /// Nothing is filtered: every wake-up is wanted.
    all: bool,
}

impl WakeSelect {
    pub(crate) fn new(filter: &Filter, task: Option<&Pattern>, tgids: &HashMap<i32, i32>) -> Self {
        WakeSelect {
            all: filter.is_empty() && task.is_none(),
            filter: filter.clone(),
            task: task.cloned(),
            // Only the process filter needs the tgids.
            tgids: if filter.pid.is_some() {
                tgids.clone()
            } else {
                HashMap::new()
            },
        }
    }

    /// Whether the blame considers `w`: inlined, and with nothing filtered answered
    /// without a test (~45 Ir a wake-up saved).
    #[inline]
    pub(crate) fn wants(&self, w: &Wake) -> bool {
        self.all || self.filtered_wants(w)
    }

    /// [`WakeSelect::wants`] when something is filtered. The thread group is looked up
    /// only for the process filter, the one that reads it.
    fn filtered_wants(&self, w: &Wake) -> bool {
        self.filter.wants_wake(w)
            && task_selected(
                self.task.as_ref(),
                &self.filter,
                w.tid,
                self.filter
                    .pid
                    .and_then(|_| self.tgids.get(&w.tid).copied()),
                w.comm.as_str(),
            )
    }
}

/// A [`Sink`] that passes on what a [`Filter`]'s window and CPUs keep, cut to the window.
/// The process filter is not applied here (it chooses rows, not intervals).
pub struct Filtered<S> {
    filter: Filter,
    /// The filter keeps everything: the slices and wake-ups (one each per switch) go
    /// through untested and uncut (~40 Ir a slice saved).
    all: bool,
    /// The sink the kept intervals go to.
    pub inner: S,
}

impl<S> Filtered<S> {
    /// `inner` behind `filter`.
    pub fn new(filter: Filter, inner: S) -> Self {
        Filtered {
            all: filter.is_empty(),
            filter,
            inner,
        }
    }
}

impl<S: Sink> Sink for Filtered<S> {
    fn begin(&mut self, ts: u64) {
        self.inner.begin(ts.max(self.filter.from_ns.unwrap_or(0)))
    }
    #[inline]
    fn slice(&mut self, s: &RunSlice) {
        if self.all {
            self.inner.slice(s)
        } else if let Some(s) = self.filter.slice(s) {
            self.inner.slice(&s)
        }
    }
    #[inline]
    fn wake(&mut self, w: &Wake) {
        if self.all || self.filter.wants_wake(w) {
            self.inner.wake(w)
        }
    }
    fn irq(&mut self, s: &IrqSpan) {
        if !self.filter.wants_cpu(s.cpu) {
            return;
        }
        if let Some((start, end)) = self.filter.clip(s.start, s.end) {
            if (start, end) == (s.start, s.end) {
                self.inner.irq(s)
            } else {
                self.inner.irq(&IrqSpan {
                    start,
                    end,
                    ..s.clone()
                })
            }
        }
    }
    fn softirq(&mut self, s: &SoftirqSpan) {
        if !self.filter.wants_cpu(s.cpu) {
            return;
        }
        if let Some((start, end)) = self.filter.clip(s.start, s.end) {
            // An entry before the window: its raise -> entry delay is not in the window.
            let raise_ts = s.raise_ts.filter(|_| start == s.start);
            self.inner.softirq(&SoftirqSpan {
                start,
                end,
                raise_ts,
                ..s.clone()
            })
        }
    }
    fn handler(&mut self, h: &HandlerSpan) {
        if !self.filter.wants_cpu(h.cpu) {
            return;
        }
        if let Some((start, end)) = self.filter.clip(h.start, h.end) {
            self.inner.handler(&HandlerSpan {
                start,
                end,
                ..h.clone()
            })
        }
    }
    fn migration(&mut self, m: &Migration) {
        if self.filter.in_window(m.ts)
            && (self.filter.wants_cpu(m.from) || self.filter.wants_cpu(m.to))
        {
            self.inner.migration(m)
        }
    }
    fn anomaly(&mut self, a: &Anomaly) {
        if self.filter.in_window(a.ts) && self.filter.wants_cpu(a.cpu) {
            self.inner.anomaly(a)
        }
    }
    fn marker(&mut self, m: &Marker) {
        if self.filter.in_window(m.ts) && self.filter.wants_cpu(m.cpu) {
            self.inner.marker(m)
        }
    }
    fn gap(&mut self, g: &Gap) {
        if !self.filter.wants_cpu(g.cpu) {
            return;
        }
        if let Some((start, end)) = self.filter.clip(g.start, g.end) {
            self.inner.gap(&Gap { start, end, ..*g })
        }
    }
    fn blind(&mut self, b: &Blind) {
        if !self.filter.wants_cpu(b.cpu) {
            return;
        }
        if let Some((start, end)) = self.filter.clip(b.start, b.end) {
            self.inner.blind(&Blind { start, end, ..*b })
        }
    }
    fn func(&mut self, f: &FuncCall) {
        if self.filter.in_window(f.start) && self.filter.wants_cpu(f.cpu) {
            self.inner.func(f)
        }
    }
    fn end(&mut self, ts: u64) {
        self.inner
            .end(ts.min(self.filter.to_ns.unwrap_or(u64::MAX)))
    }
}

/// `--from`/`--to` of `report`, `analyze` and `convert`: a time on the trace clock in seconds as the traces print it
/// (`976.3483`, `976.348312`, `976`), to ns, exactly (up to 9 decimals).
pub fn parse_seconds_ns(s: &str) -> Result<u64, String> {
    let expected =
        || format!("expected seconds as the trace prints them (976.348312), found {s:?}");
    let (secs, frac) = s.trim().split_once('.').unwrap_or((s.trim(), ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if secs.is_empty() || !digits(secs) || frac.len() > 9 || !digits(frac) {
        return Err(expected());
    }
    let secs: u64 = secs.parse().map_err(|_| expected())?;
    let ns: u64 = format!("{frac:0<9}").parse().map_err(|_| expected())?;
    secs.checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(ns))
        .ok_or_else(expected)
}

/// The events `report` prints: a [`Filter`] over raw events (window, CPUs, process of the
/// current task) and event names.
#[derive(Clone, Debug, Default)]
pub struct EventFilter {
    /// The window, CPUs and process.
    pub filter: Filter,
    /// Event names (`*` and `?` globs): an event is kept when its short name
    /// (`sched_switch`) or its full name (`sched:sched_switch`, for events jitterlab does
    /// not decode) matches one. Empty: every event.
    pub names: Vec<Pattern>,
    /// Thread group ids by tid, as the trace records them ([`Filter::pid`] then takes
    /// every thread of the process).
    pub tgids: HashMap<i32, i32>,
}

impl EventFilter {
    /// True when `ev` is kept.
    pub fn wants(&self, ev: &Event) -> bool {
        let f = &self.filter;
        if !f.in_window(ev.ts) || !f.wants_cpu(ev.cpu) {
            return false;
        }
        // The thread group is looked up only for a process to keep.
        if f.pid.is_some() && !f.wants_process(ev.pid, self.tgids.get(&ev.pid).copied()) {
            return false;
        }
        if self.names.is_empty() {
            return true;
        }
        let short = ev.kind.name();
        let full = match &ev.kind {
            EventKind::Other { name, .. } => Some(name.to_string()),
            _ => None,
        };
        self.names
            .iter()
            .any(|p| p.matches(-1, short) || full.as_deref().is_some_and(|n| p.matches(-1, n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_trace::Comm;

    fn slice(start: u64, end: u64) -> RunSlice {
        RunSlice {
            cpu: 1,
            task: Some(0),
            tid: 7,
            comm: Comm::new("rt"),
            prio: Some(9),
            start,
            end,
            start_kind: SliceStart::Switch,
            end_kind: SliceEnd::Preempted,
            last_seen: end,
        }
    }

    #[test]
    fn events_are_chosen_by_window_cpu_process_and_name() {
        use jitterlab_trace::{Flags, Wakeup};
        let ev = |ts, cpu, pid| Event {
            ts,
            cpu,
            pid,
            flags: Flags(0),
            preempt_count: 0,
            kind: EventKind::SchedWaking(Wakeup {
                comm: Comm::new("rt"),
                pid: 9,
                prio: 9,
                target_cpu: 0,
            }),
        };
        let mut f = EventFilter {
            filter: Filter {
                from_ns: Some(100),
                to_ns: Some(200),
                cpus: Some(CpuSet::parse_list("1").unwrap()),
                pid: Some(40),
            },
            names: vec![Pattern::new("sched_wak*")],
            tgids: HashMap::from([(41, 40)]),
        };
        assert!(f.wants(&ev(150, 1, 40)));
        assert!(f.wants(&ev(150, 1, 41)), "a thread of process 40");
        assert!(!f.wants(&ev(150, 1, 42)));
        assert!(!f.wants(&ev(150, 0, 40)), "another CPU");
        assert!(!f.wants(&ev(99, 1, 40)) && !f.wants(&ev(201, 1, 40)));
        assert!(f.filter.past_window(201) && !f.filter.past_window(200));
        f.names = vec![Pattern::new("sched_switch")];
        assert!(!f.wants(&ev(150, 1, 40)));
        f.tgids.clear();
        f.names.clear();
        assert!(
            !f.wants(&ev(150, 1, 41)),
            "no thread groups known: the tid alone"
        );
    }

    #[test]
    fn slices_are_cut_to_the_window() {
        let f = Filter {
            from_ns: Some(100),
            to_ns: Some(200),
            ..Filter::default()
        };
        assert!(f.slice(&slice(0, 100)).is_none());
        assert!(f.slice(&slice(200, 300)).is_none());
        assert!(matches!(f.slice(&slice(120, 150)), Some(Cow::Borrowed(_))));
        let c = f.slice(&slice(50, 250)).unwrap().into_owned();
        assert_eq!((c.start, c.end), (100, 200));
        assert_eq!(
            (c.start_kind, c.end_kind),
            (SliceStart::TraceStart, SliceEnd::TraceEnd)
        );
        let c = f.slice(&slice(150, 250)).unwrap().into_owned();
        assert_eq!(
            (c.start_kind, c.end_kind),
            (SliceStart::Switch, SliceEnd::TraceEnd)
        );
        assert_eq!(f.clip(150, 150), Some((150, 150)));
        assert_eq!(f.clip(250, 250), None);
    }

    #[test]
    fn cpus_and_processes() {
        let f = Filter {
            cpus: Some(CpuSet::parse_list("0,2").unwrap()),
            pid: Some(10),
            ..Filter::default()
        };
        assert!(f.wants_cpu(2) && !f.wants_cpu(1));
        assert!(f.slice(&slice(0, 1)).is_none());
        assert!(f.wants_process(10, None) && f.wants_process(11, Some(10)));
        assert!(!f.wants_process(11, None) && !f.wants_process(12, Some(12)));
        assert!(Filter::default().is_empty() && !f.is_empty());
    }

    #[test]
    fn seconds_as_printed() {
        assert_eq!(parse_seconds_ns("976.3483"), Ok(976_348_300_000));
        assert_eq!(parse_seconds_ns("976.348312123"), Ok(976_348_312_123));
        assert_eq!(parse_seconds_ns("976"), Ok(976_000_000_000));
        assert_eq!(parse_seconds_ns("976."), Ok(976_000_000_000));
        for bad in [
            "",
            "-1",
            "1e3",
            "976.1234567891",
            "x",
            ".5",
            "99999999999999999999",
        ] {
            assert!(
                parse_seconds_ns(bad)
                    .unwrap_err()
                    .contains("expected seconds"),
                "{bad}"
            );
        }
    }
}
