//! IRQ, softirq and function_graph nesting of the machine.

use jitterlab_trace::{Event, Sym, Text};

use super::cpu::{FuncFrame, HandlerFrame, IrqFrame, Raise, SoftFrame, VECS};
use super::Machine;
use crate::model::{AnomalyKind, FuncCall, HandlerKind, HandlerSpan, IrqSpan, SoftirqSpan, Waker};
use crate::sink::Sink;

/// Deeper IRQ nesting than this means exits were lost; the oldest frame is dropped.
const MAX_IRQ_DEPTH: usize = 32;
/// Deeper function_graph nesting than this is cut the same way.
const MAX_FUNC_DEPTH: usize = 256;

impl Machine {
    /// With recorded flags, an event outside hardirq context while IRQ frames are open means
    /// their exits were lost (and the same for softirq).
    pub(super) fn check_context<S: Sink + ?Sized>(
        &mut self,
        cpu: u32,
        ev: &Event,
        ts: u64,
        sink: &mut S,
    ) {
        let c = &mut self.cpus[cpu as usize];
        let hard = ev.flags.hardirq() || ev.flags.has(jitterlab_trace::Flags::NMI);
        if !hard && !c.irqs.is_empty() {
            let n = c.irqs.len() as u64;
            c.irqs.clear();
            c.woken.clear();
            self.anomaly(sink, AnomalyKind::IrqExitMissing, cpu, ts, None, n);
        }
        let c = &mut self.cpus[cpu as usize];
        if !hard && !ev.flags.softirq() && c.softirq.is_some() {
            c.softirq = None;
            c.soft_woken.clear();
            self.anomaly(sink, AnomalyKind::SoftirqExitMissing, cpu, ts, None, 1);
        }
    }

    pub(super) fn irq_entry<S: Sink + ?Sized>(
        &mut self,
        cpu: u32,
        ts: u64,
        irq: u32,
        name: &Text,
        sink: &mut S,
    ) {
        if self.irq_names.get(&irq) != Some(name) {
            self.irq_names.insert(irq, name.clone());
        }
        let c = &mut self.cpus[cpu as usize];
        c.irq_seen = true;
        if c.irqs.len() >= MAX_IRQ_DEPTH {
            c.irqs.remove(0);
            c.woken.retain(|&(d, _)| d > 1);
            c.woken.iter_mut().for_each(|(d, _)| *d -= 1);
            self.anomaly(sink, AnomalyKind::IrqExitMissing, cpu, ts, None, 1);
        }
        self.cpus[cpu as usize].irqs.push(IrqFrame {
            irq,
            name: name.clone(),
            start: ts,
            raised: 0,
        });
    }

    pub(super) fn irq_exit<S: Sink + ?Sized>(
        &mut self,
        cpu: u32,
        ts: u64,
        irq: u32,
        ret: i32,
        sink: &mut S,
    ) {
        let c = &mut self.cpus[cpu as usize];
        let Some(pos) = c.irqs.iter().rposition(|f| f.irq == irq) else {
            let kind = if c.irq_seen {
                AnomalyKind::UnmatchedIrqExit
            } else {
                AnomalyKind::TraceStartsInIrq
            };
            self.anomaly(sink, kind, cpu, ts, None, 1);
            return;
        };
        let above = (c.irqs.len() - pos - 1) as u64;
        c.irqs.truncate(pos + 1);
        c.woken.retain(|&(d, _)| d <= pos + 1);
        if above > 0 {
            self.anomaly(sink, AnomalyKind::IrqExitMissing, cpu, ts, None, above);
        }
        let c = &mut self.cpus[cpu as usize];
        let Some(frame) = c.irqs.pop() else {
            return;
        };
        for vec in 0..VECS {
            if frame.raised & (1 << vec) != 0 {
                if let Some(r) = &mut c.raised[vec] {
                    if r.irq == Some(irq) && r.irq_exit_ts.is_none() {
                        r.irq_exit_ts = Some(ts);
                    }
                }
            }
        }
        let interrupted = c.tid();
        while let Some(&(d, id)) = c.woken.last() {
            if d != pos + 1 {
                break;
            }
            c.woken.pop();
            if let Some(p) = &mut self.tasks.rt[id as usize].pending {
                if p.waker == (Waker::Hardirq { irq: Some(irq) }) && p.waking_ts >= frame.start {
                    p.irq_exit_ts = Some(ts);
                }
            }
        }
        sink.irq(&IrqSpan {
            cpu,
            irq,
            name: frame.name,
            start: frame.start,
            end: ts,
            depth: pos as u32,
            ret,
            interrupted,
        });
    }

    pub(super) fn softirq_raise(&mut self, cpu: u32, ts: u64, vec: u32) {
        let c = &mut self.cpus[cpu as usize];
        let v = vec as usize;
        if v >= VECS || c.raised[v].is_some() {
            return;
        }
        let irq = c.irqs.last_mut().map(|f| {
            f.raised |= 1 << v;
            f.irq
        });
        c.raised[v] = Some(Raise {
            ts,
            irq,
            irq_exit_ts: None,
        });
    }

    pub(super) fn softirq_entry<S: Sink + ?Sized>(
        &mut self,
        cpu: u32,
        ts: u64,
        vec: u32,
        sink: &mut S,
    ) {
        if self.cpus[cpu as usize].softirq.is_some() {
            self.anomaly(sink, AnomalyKind::SoftirqExitMissing, cpu, ts, None, 1);
        }
        let c = &mut self.cpus[cpu as usize];
        c.soft_woken.clear();
        let raise = c.raised.get_mut(vec as usize).and_then(Option::take);
        c.softirq_seen = true;
        c.softirq = Some(SoftFrame {
            vec,
            start: ts,
            raise_ts: raise.map(|r| r.ts),
            raised_by: raise.and_then(|r| r.irq),
            irq_exit_ts: raise.and_then(|r| r.irq_exit_ts),
        });
    }

    pub(super) fn softirq_exit<S: Sink + ?Sized>(
        &mut self,
        cpu: u32,
        ts: u64,
        vec: u32,
        sink: &mut S,
    ) {
        let c = &mut self.cpus[cpu as usize];
        let frame = c.softirq.take();
        match frame {
            Some(f) if f.vec == vec => {
                // The wake-ups this run did that are still waiting for their switch-in.
                for &id in &c.soft_woken {
                    let rt = self.tasks.rt.get_mut(id as usize);
                    if let Some(p) = rt.and_then(|r| r.pending.as_mut()) {
                        if p.waker_cpu == cpu
                            && p.waking_ts >= f.start
                            && matches!(p.waker, Waker::Softirq { vec: Some(v), .. } if v == vec)
                        {
                            p.softirq_exit_ts = Some(ts);
                        }
                    }
                }
                c.soft_woken.clear();
                sink.softirq(&SoftirqSpan {
                    cpu,
                    vec,
                    start: f.start,
                    end: ts,
                    raise_ts: f.raise_ts,
                    raised_by: f.raised_by,
                })
            }
            Some(_) => {
                c.soft_woken.clear();
                self.anomaly(sink, AnomalyKind::SoftirqExitMissing, cpu, ts, None, 1);
                self.anomaly(sink, AnomalyKind::UnmatchedSoftirqExit, cpu, ts, None, 1);
            }
            None => {
                let kind = if c.softirq_seen {
                    AnomalyKind::UnmatchedSoftirqExit
                } else {
                    AnomalyKind::TraceStartsInSoftirq
                };
                self.anomaly(sink, kind, cpu, ts, None, 1);
            }
        }
    }

    /// The call stack of `pid` (a task's own, so that a task switch inside `schedule()`
    /// does not mix two tasks' calls), or of the CPU when the task is unknown or idle.
    fn func_stack(&mut self, cpu: u32, pid: i32) -> &mut Vec<FuncFrame> {
        if pid > 0 {
            self.task_funcs.entry(pid).or_default()
        } else {
            &mut self.cpus[cpu as usize].funcs
        }
    }

    pub(super) fn func_entry(&mut self, cpu: u32, pid: i32, ts: u64, func: &Sym, depth: u32) {
        let c = self.func_stack(cpu, pid);
        // An entry at or above an open frame's depth closes nothing: returns may be missing
        // (cut graph output); such frames are dropped when an outer return comes.
        if c.len() >= MAX_FUNC_DEPTH {
            c.remove(0);
        }
        c.push(FuncFrame {
            func: sym_name(func),
            depth,
            start: ts,
            child_ns: 0,
        });
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn func_return<S: Sink + ?Sized>(
        &mut self,
        cpu: u32,
        ts: u64,
        pid: i32,
        func: &Sym,
        depth: u32,
        duration: Option<u64>,
        sink: &mut S,
    ) {
        let c = self.func_stack(cpu, pid);
        let Some(pos) = c.iter().rposition(|f| f.depth == depth) else {
            self.anomaly(
                sink,
                AnomalyKind::UnmatchedFuncReturn,
                cpu,
                ts,
                (pid >= 0).then_some(pid),
                1,
            );
            return;
        };
        c.truncate(pos + 1);
        let Some(frame) = c.pop() else {
            return;
        };
        let inclusive = duration.unwrap_or_else(|| ts.saturating_sub(frame.start));
        if let Some(parent) = c.last_mut() {
            parent.child_ns = parent.child_ns.saturating_add(inclusive);
        }
        let name = match &func.name {
            Some(_) if frame.func.is_empty() => sym_name(func),
            _ => frame.func.clone(),
        };
        let mut path: Vec<Text> = c.iter().map(|f| f.func.clone()).collect();
        let parent = path.last().cloned();
        path.push(name.clone());
        sink.func(&FuncCall {
            cpu,
            tid: (pid >= 0).then_some(pid),
            func: name,
            parent,
            depth,
            start: frame.start,
            duration: inclusive,
            self_ns: inclusive.saturating_sub(frame.child_ns),
            path,
        });
    }
}

impl Machine {
    /// An hrtimer callback or an irq_vectors handler begins on `cpu`.
    pub(super) fn handler_entry(&mut self, cpu: u32, ts: u64, kind: HandlerKind, name: Text) {
        let handlers = &mut self.cpus[cpu as usize].handlers;
        if handlers.len() >= MAX_IRQ_DEPTH {
            // Their exits were lost.
            handlers.remove(0);
        }
        handlers.push(HandlerFrame {
            kind,
            name,
            start: ts,
        });
    }

    /// The innermost handler of `kind` on `cpu` ends; an exit without its entry (the
    /// trace began inside it) ends nothing.
    pub(super) fn handler_exit<S: Sink + ?Sized>(
        &mut self,
        cpu: u32,
        ts: u64,
        kind: HandlerKind,
        sink: &mut S,
    ) {
        let c = &mut self.cpus[cpu as usize];
        if let Some(i) = c.handlers.iter().rposition(|h| h.kind == kind) {
            let h = c.handlers.remove(i);
            sink.handler(&HandlerSpan {
                cpu,
                kind,
                name: h.name,
                start: h.start,
                end: ts,
            });
        }
    }
}

/// A symbol's name without the `+0xoff` suffix, or its address in hex.
pub(super) fn sym_name(s: &Sym) -> Text {
    match &s.name {
        Some(n) => match n.split_once('+') {
            Some((base, _)) => Text::from(base),
            None => n.clone(),
        },
        None if s.addr == 0 => Text::from(""),
        None => Text::from(format!("{:#x}", s.addr).as_str()),
    }
}
