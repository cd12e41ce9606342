//! Scheduler events of the machine: switches (explicit and inferred from common_pid), run
//! slices, wake-ups.

use jitterlab_trace::{Comm, Event, TaskState};

use super::cpu::{CpuState, Cur, Current};
use super::tasks::{Pending, Run};
use super::Machine;
use crate::model::{AnomalyKind, Blind, RunSlice, SliceEnd, SliceStart, Wake, Waker};
use crate::sink::Sink;

impl Machine {
    /// Makes `tid` current on `cpu` if it is not: common_pid is a fact.
    pub(super) fn resync<S: Sink + ?Sized>(
        &mut self,
        cpu: u32,
        tid: i32,
        ts: u64,
        prev_last: u64,
        comm: Option<Comm>,
        sink: &mut S,
    ) {
        match self.cpus[cpu as usize].cur {
            Cur::Task(c) if c.tid == tid => {}
            Cur::Untraced => {
                // Events with no known task (pid -1) may have come first.
                let first = self.cpus[cpu as usize].first_ts.unwrap_or(ts);
                if first < ts {
                    sink.blind(&Blind {
                        cpu,
                        start: first,
                        end: ts,
                    });
                }
                self.switch_in(
                    cpu,
                    tid,
                    ts,
                    SliceStart::TraceStart,
                    None,
                    comm,
                    None,
                    None,
                    sink,
                )
            }
            Cur::Unknown { since } => {
                sink.blind(&Blind {
                    cpu,
                    start: since,
                    end: ts,
                });
                self.switch_in(
                    cpu,
                    tid,
                    ts,
                    SliceStart::TraceStart,
                    None,
                    comm,
                    None,
                    None,
                    sink,
                );
            }
            Cur::Vacated { since } => {
                self.anomaly(sink, AnomalyKind::ImplicitSwitchIn, cpu, ts, Some(tid), 1);
                if tid == 0 {
                    self.switch_in(
                        cpu,
                        tid,
                        since,
                        SliceStart::Inferred,
                        None,
                        comm,
                        Some(since),
                        None,
                        sink,
                    );
                } else {
                    sink.blind(&Blind {
                        cpu,
                        start: since,
                        end: ts,
                    });
                    self.switch_in(
                        cpu,
                        tid,
                        ts,
                        SliceStart::Inferred,
                        None,
                        comm,
                        Some(prev_last),
                        None,
                        sink,
                    );
                }
            }
            Cur::Task(_) => {
                self.end_slice(cpu, ts, prev_last, SliceEnd::Displaced, sink);
                self.anomaly(sink, AnomalyKind::ImplicitSwitchIn, cpu, ts, Some(tid), 1);
                self.switch_in(
                    cpu,
                    tid,
                    ts,
                    SliceStart::Inferred,
                    None,
                    comm,
                    Some(prev_last),
                    None,
                    sink,
                );
            }
        }
    }

    pub(super) fn switch<S: Sink + ?Sized>(
        &mut self,
        cpu: u32,
        ts: u64,
        prev: (Comm, i32, TaskState),
        next: (Comm, i32, i32),
        sink: &mut S,
    ) {
        let (prev_comm, prev_prio, prev_state) = prev;
        let mut exiting = false;
        if let Cur::Task(c) = &mut self.cpus[cpu as usize].cur {
            c.prio = Some(c.prio.map_or(prev_prio, |p| p.min(prev_prio)));
            if let Some(id) = c.task {
                exiting = self.tasks.rt[id as usize].exiting;
                let info = self.tasks.info(id);
                info.comm = prev_comm;
                info.prio = Some(prev_prio);
            }
        }
        let end = if last_switch_out(prev_state, exiting) {
            SliceEnd::Exited
        } else if prev_state.is_runnable() {
            SliceEnd::Preempted
        } else {
            SliceEnd::Slept(prev_state)
        };
        let from_idle = match &self.cpus[cpu as usize].cur {
            Cur::Task(c) => Some(c.tid == 0),
            _ => None,
        };
        if matches!(self.cpus[cpu as usize].cur, Cur::Task(_)) {
            self.end_slice(cpu, ts, ts, end, sink);
        }
        let (next_comm, next_pid, next_prio) = next;
        if next_pid >= 0 {
            self.switch_in(
                cpu,
                next_pid,
                ts,
                SliceStart::Switch,
                Some(next_prio),
                Some(next_comm),
                None,
                from_idle,
                sink,
            );
        } else {
            self.cpus[cpu as usize].cur = Cur::Unknown { since: ts };
        }
    }

    /// Ends the current slice of `cpu` at `ts`; the CPU is left without a current task
    /// (the caller sets one).
    pub(super) fn end_slice<S: Sink + ?Sized>(
        &mut self,
        cpu: u32,
        ts: u64,
        last_seen: u64,
        end_kind: SliceEnd,
        sink: &mut S,
    ) {
        let c = &mut self.cpus[cpu as usize];
        let Cur::Task(cur) = c.cur else {
            return;
        };
        c.cur = Cur::Unknown { since: ts };
        let comm = match cur.task {
            Some(id) => {
                let rt = self.tasks.rt(id);
                if end_kind == SliceEnd::Preempted
                    && rt.pending.is_some_and(|p| p.while_running.is_some())
                {
                    // Woken while current, then switched out runnable: it never slept.
                    rt.pending = None;
                    self.counts.wakes_of_running += 1;
                }
                let rt = self.tasks.rt(id);
                rt.run = match end_kind {
                    SliceEnd::Preempted => Run::Runnable,
                    SliceEnd::Slept(_) => Run::Sleeping,
                    SliceEnd::Exited => Run::Dead,
                    SliceEnd::TraceEnd => rt.run,
                    SliceEnd::Displaced | SliceEnd::Lost => Run::Unknown,
                };
                self.tasks.infos[id as usize].comm
            }
            None => swapper(cpu),
        };
        sink.slice(&RunSlice {
            cpu,
            task: cur.task,
            tid: cur.tid,
            comm,
            prio: cur.prio,
            start: cur.since,
            end: ts.max(cur.since),
            start_kind: cur.start_kind,
            end_kind,
            last_seen: last_seen.clamp(cur.since, ts.max(cur.since)),
        });
    }

    /// Makes `tid` current on `cpu` from `ts`, ending its pending wake-up.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn switch_in<S: Sink + ?Sized>(
        &mut self,
        cpu: u32,
        tid: i32,
        ts: u64,
        start_kind: SliceStart,
        prio: Option<i32>,
        comm: Option<Comm>,
        inferred_after: Option<u64>,
        from_idle: Option<bool>,
        sink: &mut S,
    ) {
        let task = self.task(tid, ts, comm, cpu, sink);
        let mut prio = prio;
        if let Some(id) = task {
            if let Run::Running(other) = self.tasks.rt[id as usize].run {
                if other != cpu && (other as usize) < self.cpus.len() {
                    self.anomaly(sink, AnomalyKind::RunningElsewhere, other, ts, Some(tid), 1);
                    let seen = self.cpus[other as usize].last_ts;
                    self.end_slice(other, ts, seen, SliceEnd::Displaced, sink);
                    self.cpus[other as usize].cur = Cur::Vacated { since: ts };
                }
            }
            let info = self.tasks.info(id);
            match prio {
                Some(p) => info.prio = Some(p),
                None => prio = info.prio,
            }
            let comm = info.comm;
            let rt = self.tasks.rt(id);
            rt.run = Run::Running(cpu);
            if let Some(p) = rt.pending.take() {
                sink.wake(&Wake {
                    task: id,
                    tid,
                    comm,
                    prio: p.prio,
                    waking_ts: p.waking_ts,
                    waker: p.waker,
                    waker_cpu: p.waker_cpu,
                    by_hrtimer: p.by_hrtimer,
                    wakeup_ts: p.wakeup_ts,
                    switch_in_ts: ts,
                    cpu,
                    inferred: start_kind != SliceStart::Switch,
                    inferred_after,
                    from_idle: from_idle.filter(|_| start_kind == SliceStart::Switch),
                    irq_exit_ts: p.irq_exit_ts,
                    softirq_exit_ts: p.softirq_exit_ts,
                    new_task: p.new_task,
                });
            }
        }
        self.cpus[cpu as usize].cur = Cur::Task(Current {
            tid,
            task,
            since: ts,
            start_kind,
            prio,
        });
    }

    /// sched_waking (`wakeup` false), sched_wakeup and sched_wakeup_new.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn waking<S: Sink + ?Sized>(
        &mut self,
        cpu: u32,
        ts: u64,
        ev: &Event,
        w: &jitterlab_trace::Wakeup,
        wakeup: bool,
        new_task: bool,
        sink: &mut S,
    ) {
        let Some(id) = self.task(w.pid, ts, Some(w.comm), cpu, sink) else {
            return;
        };
        self.tasks.info(id).prio = Some(w.prio);
        // Updated in place: copying the task's state out and back cost ~25 Ir a wake-up.
        let rt = self.tasks.rt(id);
        let running = match rt.run {
            Run::Running(x) => Some(x),
            _ => None,
        };
        if let Some(p) = &mut rt.pending {
            if wakeup && p.while_running.is_some() && running == Some(w.target_cpu) {
                // Woken while still current on its CPU: no switch-in to wait for.
                rt.pending = None;
                self.counts.wakes_of_running += 1;
                return;
            }
            p.target_cpu = w.target_cpu;
            if wakeup && p.wakeup_ts.is_none() {
                p.wakeup_ts = Some(ts);
            }
            return;
        }
        if wakeup && running.is_some() {
            self.counts.wakes_of_running += 1;
            return;
        }
        let c = &mut self.cpus[cpu as usize];
        let (waker, irq_exit_ts) = waker(c, ev);
        if matches!(waker, Waker::Hardirq { irq: Some(_) }) {
            c.woken.push((c.irqs.len(), id));
        }
        if matches!(waker, Waker::Softirq { vec: Some(_), .. }) && !c.soft_woken.contains(&id) {
            c.soft_woken.push(id);
        }
        self.tasks.rt(id).pending = Some(Pending {
            waking_ts: ts,
            waker,
            waker_cpu: cpu,
            by_hrtimer: c.in_hrtimer(),
            wakeup_ts: wakeup.then_some(ts),
            target_cpu: w.target_cpu,
            irq_exit_ts,
            softirq_exit_ts: None,
            new_task,
            prio: w.prio,
            while_running: running,
        });
    }
}

/// Whether a switch-out with `state` is the task's last, `exiting` telling that its
/// sched_process_exit was seen.
///
/// A task runs on after sched_process_exit (do_exit still releases its files, memory and
/// so on) and may be preempted (`R+`) or sleep (`S`, `D`) in that tail, then be switched in
/// again; only the switch-out from do_task_dead ends it, and the kernel reports it as `Z`
/// or `X` (the exit state; kernels before 4.14 as `x`, TASK_DEAD), whether or not the exit
/// was traced. After a traced exit, any other state that is neither runnable nor a sleep
/// is taken as the last switch-out too.
fn last_switch_out(state: TaskState, exiting: bool) -> bool {
    const SLEEP: u64 = TaskState::INTERRUPTIBLE | TaskState::UNINTERRUPTIBLE;
    state.0 & (TaskState::DEAD | TaskState::ZOMBIE | TaskState::TASK_DEAD) != 0
        || (exiting && !state.is_runnable() && state.0 & SLEEP == 0)
}

/// The waker context of an event on CPU `c`, and the raising IRQ's exit for a softirq.
fn waker(c: &CpuState, ev: &Event) -> (Waker, Option<u64>) {
    if let Some(f) = c.irqs.last() {
        (Waker::Hardirq { irq: Some(f.irq) }, None)
    } else if ev.flags.hardirq() {
        (Waker::Hardirq { irq: None }, None)
    } else if let Some(s) = &c.softirq {
        (
            Waker::Softirq {
                vec: Some(s.vec),
                raised_by: s.raised_by,
            },
            s.irq_exit_ts,
        )
    } else if ev.flags.softirq() {
        (
            Waker::Softirq {
                vec: None,
                raised_by: None,
            },
            None,
        )
    } else {
        (Waker::Task { tid: ev.pid.max(0) }, None)
    }
}

/// `swapper/N`, the idle task's name, without allocating.
fn swapper(cpu: u32) -> Comm {
    use std::io::Write;
    let mut buf = [0u8; 16];
    let mut w = &mut buf[..];
    let _ = write!(w, "swapper/{cpu}");
    let n = 16 - w.len();
    Comm::from_bytes(&buf[..n])
}
