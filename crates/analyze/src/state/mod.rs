//! The one scheduler/IRQ state machine.
//!
//! Fed the events of a trace in timestamp order, it keeps per CPU the current task, the IRQ
//! stack, the softirq in progress and which hardirq raised each pending softirq vector, and
//! per task its state (running, runnable after preemption, sleeping, dead) and its pending
//! wake-up with the waker's context. It emits derived intervals to a [`Sink`].
//!
//! Real traces miss events. Every event's common_pid is a fact: a task shown current on a CPU
//! that no switch put there is taken as switched in at that event, and the correction is an
//! [`AnomalyKind::ImplicitSwitchIn`]. Unmatched exits, switch-outs of tasks never seen
//! switching in, traces that start inside an IRQ and lost events are handled and counted as
//! anomalies, never a panic. Memory grows with the number of CPUs, tasks and IRQs only.

mod counts;
mod cpu;
mod irq;
mod sched;
mod tasks;

use std::collections::{BTreeMap, HashMap};

use jitterlab_trace::{Comm, Event, EventKind, EventSource, Text};

use crate::hash::FxMap;
use crate::model::{
    Anomaly, AnomalyKind, Blind, Gap, HandlerKind, Marker, Migration, SliceEnd, TaskId,
};
use crate::sink::Sink;
use cpu::{CpuState, Cur};
use tasks::Tasks;

pub use counts::{AnomalyCount, Counts};
pub use tasks::TaskInfo;

/// CPUs above this number are counted but not tracked (a corrupt CPU field must not make
/// the machine allocate gigabytes).
const MAX_CPUS: u32 = 8192;

/// Settings of the machine.
#[derive(Clone, Debug)]
pub struct MachineOptions {
    /// A stretch longer than this with no event on a CPU is reported as a [`Gap`], ns.
    pub gap_ns: u64,
    /// Thread group ids by tid, when the source knows them.
    pub tgids: HashMap<i32, i32>,
    /// Task names the source saved besides its events (a .dat's saved cmdlines): a task
    /// no event names (a trace without sched events) takes its name from here; a name an
    /// event gives wins.
    pub names: HashMap<i32, Comm>,
}

impl Default for MachineOptions {
    fn default() -> Self {
        MachineOptions {
            gap_ns: 100_000,
            tgids: HashMap::new(),
            names: HashMap::new(),
        }
    }
}

/// What the machine knows of one CPU at the end of the pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuInfo {
    /// The CPU number.
    pub cpu: u32,
    /// Its first event, ns (`None`: no event).
    pub first_ts: Option<u64>,
    /// Its last event, ns.
    pub last_ts: u64,
    /// Its events, lost markers included.
    pub events: u64,
}

/// The scheduler/IRQ state machine.
///
/// Fed the events of a trace in timestamp order, it keeps per CPU the current task, the
/// IRQ stack, the softirq in progress and which hardirq raised each pending softirq vector,
/// and per task its state and pending wake-up with the waker's context; it emits derived
/// intervals to a [`Sink`]. Every event's common_pid is a fact: a task shown current on a
/// CPU that no switch put there is taken as switched in at that event
/// ([`AnomalyKind::ImplicitSwitchIn`]). Unmatched exits, switch-outs of tasks never seen
/// switching in, traces starting inside an IRQ and lost events are handled and counted
/// as anomalies, never a panic. Memory grows with CPUs, tasks and IRQs only.
pub struct Machine {
    gap_ns: u64,
    tgids: FxMap<i32, i32>,
    names: FxMap<i32, Comm>,
    cpus: Vec<CpuState>,
    tasks: Tasks,
    irq_names: BTreeMap<u32, Text>,
    /// function_graph call stacks of known tasks (per CPU for the others).
    task_funcs: FxMap<i32, Vec<cpu::FuncFrame>>,
    counts: Counts,
    last_ts: u64,
    started: bool,
    finished: bool,
}

impl Machine {
    /// A machine that has seen nothing.
    pub fn new(options: MachineOptions) -> Machine {
        Machine {
            gap_ns: options.gap_ns,
            tgids: options.tgids.into_iter().collect(),
            names: options.names.into_iter().collect(),
            cpus: Vec::new(),
            tasks: Tasks::default(),
            irq_names: BTreeMap::new(),
            task_funcs: FxMap::default(),
            counts: Counts::default(),
            last_ts: 0,
            started: false,
            finished: false,
        }
    }

    /// Every task incarnation seen, indexed by [`crate::TaskId`].
    pub fn tasks(&self) -> &[TaskInfo] {
        &self.tasks.infos
    }

    /// IRQ names by number, from irq_handler_entry.
    pub fn irq_names(&self) -> &BTreeMap<u32, Text> {
        &self.irq_names
    }

    /// Counters over the stream.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Per-CPU facts, for CPUs 0 up to the highest that logged an event.
    pub fn cpus(&self) -> Vec<CpuInfo> {
        self.cpus
            .iter()
            .enumerate()
            .map(|(i, c)| CpuInfo {
                cpu: i as u32,
                first_ts: c.first_ts,
                last_ts: c.last_ts,
                events: c.events,
            })
            .collect()
    }

    /// Feeds one event. Events must come in timestamp order; one that does not is counted
    /// as [`AnomalyKind::TimeBackwards`] and taken at the previous event's time.
    pub fn feed<S: Sink + ?Sized>(&mut self, ev: &Event, sink: &mut S) {
        let mut ts = ev.ts;
        if !self.started {
            self.started = true;
            self.last_ts = ts;
            sink.begin(ts);
        }
        if ts < self.last_ts {
            self.anomaly(
                sink,
                AnomalyKind::TimeBackwards,
                ev.cpu,
                self.last_ts,
                None,
                1,
            );
            ts = self.last_ts;
        }
        self.last_ts = ts;
        self.counts.span = Some((self.counts.span.map_or(ts, |s| s.0), ts));
        self.counts.event(ev.cpu, &ev.kind);
        if ev.cpu >= MAX_CPUS {
            return;
        }
        let cpu = ev.cpu;
        if self.cpus.len() <= cpu as usize {
            self.cpus.resize_with(cpu as usize + 1, CpuState::default);
        }
        if let EventKind::Lost { count } = ev.kind {
            self.lost(cpu, ts, count, sink);
            return;
        }
        let gap_ns = self.gap_ns;
        let c = &mut self.cpus[cpu as usize];
        c.events += 1;
        let prev_last = c.last_ts;
        match c.first_ts {
            None => c.first_ts = Some(ts),
            Some(_) if ts - c.last_ts > gap_ns => sink.gap(&Gap {
                cpu,
                start: c.last_ts,
                end: ts,
                tid: c.tid(),
            }),
            Some(_) => {}
        }
        c.last_ts = ts;
        if ev.flags.0 != 0 {
            c.flags_valid = true;
        }
        if c.flags_valid {
            self.check_context(cpu, ev, ts, sink);
        }
        let who = match &ev.kind {
            EventKind::SchedSwitch { prev_pid, .. } if ev.pid < 0 => *prev_pid,
            _ => ev.pid,
        };
        if who >= 0 {
            let comm = match &ev.kind {
                EventKind::SchedSwitch {
                    prev_pid,
                    prev_comm,
                    ..
                } if *prev_pid == who => Some(*prev_comm),
                _ => None,
            };
            self.resync(cpu, who, ts, prev_last, comm, sink);
        }
        self.handle(cpu, ts, ev, sink);
    }

    fn handle<S: Sink + ?Sized>(&mut self, cpu: u32, ts: u64, ev: &Event, sink: &mut S) {
        match &ev.kind {
            EventKind::SchedSwitch {
                prev_comm,
                prev_pid,
                prev_prio,
                prev_state,
                next_comm,
                next_pid,
                next_prio,
            } => {
                if ev.pid >= 0 && *prev_pid != ev.pid {
                    self.anomaly(
                        sink,
                        AnomalyKind::SwitchPrevMismatch,
                        cpu,
                        ts,
                        Some(*prev_pid),
                        1,
                    );
                }
                self.switch(
                    cpu,
                    ts,
                    (*prev_comm, *prev_prio, *prev_state),
                    (*next_comm, *next_pid, *next_prio),
                    sink,
                );
            }
            EventKind::SchedWaking(w) => self.waking(cpu, ts, ev, w, false, false, sink),
            EventKind::SchedWakeup(w) => self.waking(cpu, ts, ev, w, true, false, sink),
            EventKind::SchedWakeupNew(w) => self.waking(cpu, ts, ev, w, true, true, sink),
            EventKind::SchedMigrateTask {
                comm,
                pid,
                prio,
                orig_cpu,
                dest_cpu,
            } if *pid > 0 => {
                let Some(id) = self.task(*pid, ts, Some(*comm), cpu, sink) else {
                    return;
                };
                self.tasks.info(id).prio = Some(*prio);
                if let Some(p) = &mut self.tasks.rt(id).pending {
                    p.target_cpu = *dest_cpu;
                }
                sink.migration(&Migration {
                    ts,
                    task: id,
                    tid: *pid,
                    from: *orig_cpu,
                    to: *dest_cpu,
                });
            }
            EventKind::SchedProcessFork {
                parent_pid,
                child_comm,
                child_pid,
                ..
            } if *child_pid > 0 => {
                let (_, anomaly) =
                    self.tasks
                        .fork(*child_pid, ts, *child_comm, *parent_pid, &self.tgids);
                if let Some(kind) = anomaly {
                    self.anomaly(sink, kind, cpu, ts, Some(*child_pid), 1);
                }
            }
            EventKind::SchedProcessExec { filename, pid, .. } if *pid > 0 => {
                let base = filename.rsplit('/').next().unwrap_or(filename);
                let comm = Comm::new(cut(base, 15));
                self.task(*pid, ts, Some(comm), cpu, sink);
            }
            EventKind::SchedProcessExit { comm, pid, prio } if *pid > 0 => {
                if let Some(id) = self.task(*pid, ts, Some(*comm), cpu, sink) {
                    self.tasks.rt(id).exiting = true;
                    let info = self.tasks.info(id);
                    info.exited = true;
                    info.prio = Some(*prio);
                }
            }
            EventKind::IrqHandlerEntry { irq, name } => self.irq_entry(cpu, ts, *irq, name, sink),
            EventKind::IrqHandlerExit { irq, ret } => self.irq_exit(cpu, ts, *irq, *ret, sink),
            EventKind::SoftirqRaise { vec } => self.softirq_raise(cpu, ts, *vec),
            EventKind::SoftirqEntry { vec } => self.softirq_entry(cpu, ts, *vec, sink),
            EventKind::SoftirqExit { vec } => self.softirq_exit(cpu, ts, *vec, sink),
            EventKind::HrtimerExpireEntry { function, .. } => {
                self.handler_entry(cpu, ts, HandlerKind::Hrtimer, irq::sym_name(function))
            }
            EventKind::HrtimerExpireExit { .. } => {
                self.handler_exit(cpu, ts, HandlerKind::Hrtimer, sink)
            }
            EventKind::Other { name, .. } => {
                if let Some(vector) = name.strip_prefix("irq_vectors:") {
                    if let Some(v) = vector.strip_suffix("_entry") {
                        self.handler_entry(cpu, ts, HandlerKind::Vector, Text::from(v));
                    } else if vector.ends_with("_exit") {
                        self.handler_exit(cpu, ts, HandlerKind::Vector, sink);
                    }
                }
            }
            EventKind::Print { text, .. } => sink.marker(&Marker {
                ts,
                cpu,
                tid: ev.pid,
                text: text.clone(),
            }),
            EventKind::FuncEntry { func, depth } => self.func_entry(cpu, ev.pid, ts, func, *depth),
            EventKind::FuncReturn {
                func,
                depth,
                duration,
            } => self.func_return(cpu, ts, ev.pid, func, *depth, *duration, sink),
            _ => {}
        }
    }

    /// Feeds every event of `source` and finishes: one whole pass, the intervals going to
    /// `sink` (for consumers other than [`crate::analyze`], e.g. a converter).
    pub fn replay<S: Sink + ?Sized>(
        &mut self,
        source: &mut dyn EventSource,
        sink: &mut S,
    ) -> jitterlab_trace::Result<()> {
        while let Some(ev) = source.next_event()? {
            self.feed(&ev, sink);
        }
        self.finish(sink);
        Ok(())
    }

    /// Ends the pass: every current task's slice ends at the last event, unknown stretches
    /// are closed. Calling it again does nothing.
    pub fn finish<S: Sink + ?Sized>(&mut self, sink: &mut S) {
        if self.finished || !self.started {
            return;
        }
        self.finished = true;
        let end = self.last_ts;
        for cpu in 0..self.cpus.len() as u32 {
            match self.cpus[cpu as usize].cur {
                Cur::Task(_) => self.end_slice(cpu, end, end, SliceEnd::TraceEnd, sink),
                Cur::Unknown { since } | Cur::Vacated { since } => sink.blind(&Blind {
                    cpu,
                    start: since,
                    end,
                }),
                Cur::Untraced => {}
            }
        }
        self.counts.wakes_pending_at_end = self.tasks.pending_count();
        sink.end(end);
    }

    fn anomaly<S: Sink + ?Sized>(
        &mut self,
        sink: &mut S,
        kind: AnomalyKind,
        cpu: u32,
        ts: u64,
        tid: Option<i32>,
        count: u64,
    ) {
        self.counts.anomaly(kind, cpu, ts, count);
        sink.anomaly(&Anomaly {
            ts,
            cpu,
            kind,
            tid,
            count,
        });
    }

    /// The live task of `tid` (> 0), created when new; a reuse is reported.
    #[inline]
    fn task<S: Sink + ?Sized>(
        &mut self,
        tid: i32,
        ts: u64,
        comm: Option<Comm>,
        cpu: u32,
        sink: &mut S,
    ) -> Option<TaskId> {
        if tid <= 0 {
            return None;
        }
        // Nearly every call finds a live task: one probe, no saved name read, no call
        // (two probes and two calls before: ~105 Ir more a call, 2.9 M calls on a 2.9
        // M-event trace).
        if let Some(id) = self.tasks.live(tid, comm) {
            return Some(id);
        }
        self.new_task(tid, ts, comm, cpu, sink)
    }

    /// [`Machine::task`] when `tid` has no live task.
    #[cold]
    fn new_task<S: Sink + ?Sized>(
        &mut self,
        tid: i32,
        ts: u64,
        comm: Option<Comm>,
        cpu: u32,
        sink: &mut S,
    ) -> Option<TaskId> {
        let (id, anomaly) = self.tasks.lookup(tid, ts, comm, &self.names, &self.tgids);
        if let Some(kind) = anomaly {
            self.anomaly(sink, kind, cpu, ts, Some(tid), 1);
        }
        Some(id)
    }

    /// Lost events on `cpu`: its slice ends at its last event, its state is unknown until
    /// its next event, and wake-ups pending towards it are dropped.
    fn lost<S: Sink + ?Sized>(&mut self, cpu: u32, ts: u64, count: Option<u64>, sink: &mut S) {
        self.counts.lost(cpu, count);
        self.anomaly(
            sink,
            AnomalyKind::LostEvents,
            cpu,
            ts,
            None,
            count.unwrap_or(1),
        );
        let c = &mut self.cpus[cpu as usize];
        c.events += 1;
        // The CPU's state is known up to its last event (or up to where the current
        // stretch began, when that was set from another CPU's event).
        let since = match (c.first_ts, c.cur) {
            (None, _) => ts,
            (Some(_), Cur::Task(cur)) => c.last_ts.max(cur.since),
            (Some(_), Cur::Unknown { since } | Cur::Vacated { since }) => c.last_ts.max(since),
            (Some(_), Cur::Untraced) => c.last_ts,
        };
        match c.cur {
            Cur::Task(_) => self.end_slice(cpu, since, since, SliceEnd::Lost, sink),
            Cur::Unknown { since: s } | Cur::Vacated { since: s } => sink.blind(&Blind {
                cpu,
                start: s,
                end: since.max(s),
            }),
            Cur::Untraced => {}
        }
        let c = &mut self.cpus[cpu as usize];
        c.first_ts.get_or_insert(ts);
        c.cur = Cur::Unknown { since };
        c.last_ts = ts;
        c.reset_nesting();
        let mut dropped = 0;
        for rt in &mut self.tasks.rt {
            if rt.pending.is_some_and(|p| p.target_cpu == cpu) {
                rt.pending = None;
                dropped += 1;
            }
        }
        if dropped > 0 {
            self.anomaly(sink, AnomalyKind::WakeDroppedOnLost, cpu, ts, None, dropped);
        }
    }
}

/// `s` cut to at most `max` bytes on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
