//! The IRQ section: hard IRQ handlers and softirqs (count, duration, CPUs), IRQ -> task
//! chains and softirq -> task chains.
//!
//! An IRQ chain is a wake-up done inside hardirq N, or inside a softirq whose vector hardirq
//! N raised on that CPU; its latency runs from N's irq_handler_exit to the woken task's
//! switch-in, and chains are aggregated per (IRQ, task). A softirq chain is a wake-up done
//! inside a softirq run that no traced IRQ raised (raised by a task, as NET_RX on veth and
//! loopback, with RPS or busy polling, or by an untraced hardirq such as the local timer);
//! its latency runs from that run's softirq_exit to the switch-in, aggregated per
//! (vector, task).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Ctx, Names};
use crate::hash::FxMap;
use crate::model::{ChainSource, IrqSpan, SoftirqSpan, TaskId, Wake, Waker};
use crate::sink::Sink;
use crate::softirq_name;
use crate::stats::{Bucket, Buckets, DurationStats, Stats};

/// A count on one CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CpuCount {
    /// The CPU.
    pub cpu: u32,
    /// How many.
    pub count: u64,
}

/// One hard IRQ.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IrqRow {
    /// The number.
    pub irq: u32,
    /// Its handler's name.
    pub name: String,
    /// Handler runs (entry matched with exit).
    pub count: u64,
    /// Handler duration, entry -> exit.
    pub duration: Option<Stats>,
    /// Runs per CPU.
    pub cpus: Vec<CpuCount>,
    /// Tasks woken directly in the handler.
    pub wakeups: u64,
}

/// Who raised a softirq vector.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RaiseCount {
    /// The raising IRQ; `null` = raised outside a traced IRQ handler (or not seen).
    pub irq: Option<u32>,
    /// How many runs it raised.
    pub count: u64,
}

/// One softirq vector.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SoftirqRow {
    /// The vector.
    pub vec: u32,
    /// Its name (`BLOCK`, `NET_RX`, ...).
    pub name: String,
    /// Runs (entry matched with exit).
    pub count: u64,
    /// Run duration, entry -> exit.
    pub duration: Option<Stats>,
    /// softirq_raise -> softirq_entry, for runs whose raise was seen.
    pub raise_to_entry: Option<Stats>,
    /// Runs per CPU.
    pub cpus: Vec<CpuCount>,
    /// Runs by raising IRQ.
    pub raised_by: Vec<RaiseCount>,
}

/// The wake-ups of one task by one IRQ.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChainRow {
    /// The IRQ.
    pub irq: u32,
    /// Its handler's name.
    pub irq_name: String,
    /// The woken task's tid.
    pub tid: i32,
    /// Its name.
    pub comm: String,
    /// Wake-ups of the task by the IRQ.
    pub count: u64,
    /// Of which done in the hard IRQ handler.
    pub via_hardirq: u64,
    /// Of which done in a softirq the IRQ raised.
    pub via_softirq: u64,
    /// The CPUs the handler (or the softirq) that did the wake-ups ran on, most first.
    pub waker_cpus: Vec<CpuCount>,
    /// irq_handler_exit -> switch-in.
    pub latency: Option<Stats>,
    /// Wake-ups whose switch-in came before the handler's exit was seen (another CPU), or
    /// whose exit was never seen: not in `latency`.
    pub exit_unknown: u64,
    /// sched_waking -> switch-in of the same wake-ups.
    pub wake_latency: Option<Stats>,
    /// Of `latency`'s wake-ups, those whose switch-in was not recorded but inferred from
    /// the task's next event: their latency is an upper bound, not a value.
    pub inferred: u64,
    /// Histogram of `latency`.
    pub histogram: Vec<Bucket>,
}

/// The wake-ups of one task done in runs of one softirq vector that no traced IRQ raised.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SoftirqChainRow {
    /// The vector.
    pub vec: u32,
    /// Its name (`NET_RX`, ...).
    pub name: String,
    /// The chain's source as printed: `softirq NET_RX`.
    pub source: String,
    /// The woken task's tid.
    pub tid: i32,
    /// Its name.
    pub comm: String,
    /// Wake-ups of the task in runs of the vector.
    pub count: u64,
    /// The CPUs the softirq runs that did the wake-ups ran on, most first.
    pub waker_cpus: Vec<CpuCount>,
    /// softirq_exit (of the run that did the wake-up) -> switch-in.
    pub latency: Option<Stats>,
    /// Wake-ups switched in before that run's softirq_exit (on another CPU), or whose exit
    /// was never seen: not in `latency`.
    pub exit_unknown: u64,
    /// sched_waking -> switch-in of the same wake-ups.
    pub wake_latency: Option<Stats>,
    /// Of `latency`'s wake-ups, those whose switch-in was not recorded but inferred from
    /// the task's next event: their latency is an upper bound, not a value.
    pub inferred: u64,
    /// Histogram of `latency`.
    pub histogram: Vec<Bucket>,
}

/// The IRQ section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IrqSection {
    /// Hard IRQs, most runs first.
    pub irqs: Vec<IrqRow>,
    /// Softirq vectors, by vector.
    pub softirqs: Vec<SoftirqRow>,
    /// IRQ -> task chains, most wake-ups first (only the focused ones with `--irq`/`--task`).
    pub chains: Vec<ChainRow>,
    /// Softirq -> task chains, most wake-ups first (with `--irq`, those of the vectors whose
    /// name it matches; with `--task`, the focused tasks').
    pub softirq_chains: Vec<SoftirqChainRow>,
    /// The `--irq` focus.
    pub focus_irq: Option<String>,
    /// The `--task` focus.
    pub focus_task: Option<String>,
}

#[derive(Default)]
struct IrqAcc {
    dur: DurationStats,
    cpus: Vec<u64>,
    wakeups: u64,
}

#[derive(Default)]
struct SoftAcc {
    dur: DurationStats,
    raise: DurationStats,
    cpus: Vec<u64>,
    raised_by: BTreeMap<Option<u32>, u64>,
}

#[derive(Default)]
struct ChainAcc {
    /// Wake-ups per CPU the waking IRQ or softirq ran on.
    cpus: Vec<u64>,
    lat: DurationStats,
    buckets: Buckets,
    wake: DurationStats,
    hard: u64,
    soft: u64,
    no_exit: u64,
    /// Wake-ups in `lat` whose switch-in was inferred.
    inferred: u64,
}

/// Folds IRQ and softirq spans and IRQ-caused wake-ups.
#[derive(Default)]
pub struct IrqFold {
    irqs: BTreeMap<u32, IrqAcc>,
    softirqs: BTreeMap<u32, SoftAcc>,
    chains: FxMap<(u32, TaskId), ChainAcc>,
    soft_chains: FxMap<(u32, TaskId), ChainAcc>,
}

fn bump(v: &mut Vec<u64>, cpu: u32) {
    let c = cpu as usize;
    if v.len() <= c {
        v.resize(c + 1, 0);
    }
    v[c] += 1;
}

/// The CPUs of `v` with their counts, most first.
fn by_count(v: &[u64]) -> Vec<CpuCount> {
    let mut out = per_cpu(v);
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.cpu.cmp(&b.cpu)));
    out
}

fn per_cpu(v: &[u64]) -> Vec<CpuCount> {
    v.iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(cpu, &count)| CpuCount {
            cpu: cpu as u32,
            count,
        })
        .collect()
}

impl Sink for IrqFold {
    fn irq(&mut self, s: &IrqSpan) {
        let a = self.irqs.entry(s.irq).or_default();
        a.dur.record(s.end.saturating_sub(s.start), s.start);
        bump(&mut a.cpus, s.cpu);
    }
    fn softirq(&mut self, s: &SoftirqSpan) {
        let a = self.softirqs.entry(s.vec).or_default();
        a.dur.record(s.end.saturating_sub(s.start), s.start);
        if let Some(r) = s.raise_ts {
            a.raise.record(s.start.saturating_sub(r), r);
        }
        bump(&mut a.cpus, s.cpu);
        *a.raised_by.entry(s.raised_by).or_insert(0) += 1;
    }
    /// Inlined: most wake-ups are by tasks, no chain (the call cost ~20 Ir a wake-up).
    #[inline]
    fn wake(&mut self, w: &Wake) {
        if !matches!(w.waker, Waker::Task { .. }) {
            self.chain_wake(w);
        }
    }
}

impl IrqFold {
    /// Folds a wake-up done by an IRQ or a softirq.
    fn chain_wake(&mut self, w: &Wake) {
        let irq = match w.chain_source() {
            Some(ChainSource::Irq(irq)) => irq,
            Some(ChainSource::Softirq(vec)) => {
                let c = self.soft_chains.entry((vec, w.task)).or_default();
                c.soft += 1;
                bump(&mut c.cpus, w.waker_cpu);
                c.wake.record(w.latency(), w.waking_ts);
                match (w.softirq_chain_latency(), w.softirq_exit_ts) {
                    (Some(l), Some(exit)) => {
                        c.lat.record(l, exit);
                        c.buckets.record(l);
                        c.inferred += u64::from(w.inferred);
                    }
                    _ => c.no_exit += 1,
                }
                return;
            }
            None => return,
        };
        let hard = matches!(w.waker, Waker::Hardirq { .. });
        if hard {
            self.irqs.entry(irq).or_default().wakeups += 1;
        }
        let c = self.chains.entry((irq, w.task)).or_default();
        bump(&mut c.cpus, w.waker_cpu);
        if hard {
            c.hard += 1;
        } else {
            c.soft += 1;
        }
        c.wake.record(w.latency(), w.waking_ts);
        match (w.chain_latency(), w.irq_exit_ts) {
            (Some(l), Some(exit)) => {
                c.lat.record(l, exit);
                c.buckets.record(l);
                c.inferred += u64::from(w.inferred);
            }
            _ => c.no_exit += 1,
        }
    }
}

impl IrqFold {
    /// Builds the section.
    pub fn finish(self, ctx: &Ctx<'_>) -> IrqSection {
        let m = ctx.machine;
        let names = Names::new(m);
        let mut irqs: Vec<IrqRow> = self
            .irqs
            .iter()
            .map(|(&irq, a)| IrqRow {
                irq,
                name: names.irq(irq),
                count: a.dur.count(),
                duration: a.dur.summary(),
                cpus: per_cpu(&a.cpus),
                wakeups: a.wakeups,
            })
            .collect();
        irqs.sort_by(|x, y| y.count.cmp(&x.count).then(x.irq.cmp(&y.irq)));
        let softirqs = self
            .softirqs
            .iter()
            .map(|(&vec, a)| SoftirqRow {
                vec,
                name: softirq_name(vec),
                count: a.dur.count(),
                duration: a.dur.summary(),
                raise_to_entry: a.raise.summary(),
                cpus: per_cpu(&a.cpus),
                raised_by: a
                    .raised_by
                    .iter()
                    .map(|(&irq, &count)| RaiseCount { irq, count })
                    .collect(),
            })
            .collect();
        let (fi, ft) = (&ctx.options.irq, &ctx.options.task);
        let mut chains: Vec<ChainRow> = self
            .chains
            .into_iter()
            .filter_map(|((irq, task), c)| {
                let info = m.tasks().get(task as usize)?;
                let irq_name = names.irq(irq);
                if fi
                    .as_ref()
                    .is_some_and(|p| !p.matches(irq.into(), &irq_name))
                    || !ctx
                        .options
                        .wants_task(info.tid, info.tgid, info.comm.as_str())
                {
                    return None;
                }
                Some(ChainRow {
                    irq,
                    irq_name,
                    tid: info.tid,
                    comm: info.comm.to_string(),
                    count: c.hard + c.soft,
                    via_hardirq: c.hard,
                    via_softirq: c.soft,
                    waker_cpus: by_count(&c.cpus),
                    latency: c.lat.summary(),
                    exit_unknown: c.no_exit,
                    wake_latency: c.wake.summary(),
                    inferred: c.inferred,
                    histogram: c.buckets.to_vec(),
                })
            })
            .collect();
        chains.sort_by(|x, y| {
            y.count
                .cmp(&x.count)
                .then((x.irq, x.tid).cmp(&(y.irq, y.tid)))
        });
        let mut softirq_chains: Vec<SoftirqChainRow> = self
            .soft_chains
            .into_iter()
            .filter_map(|((vec, task), c)| {
                let info = m.tasks().get(task as usize)?;
                let name = softirq_name(vec);
                // A number names an IRQ, never a vector.
                if fi
                    .as_ref()
                    .is_some_and(|p| p.as_str().parse::<i64>().is_ok() || !p.matches(-1, &name))
                    || !ctx
                        .options
                        .wants_task(info.tid, info.tgid, info.comm.as_str())
                {
                    return None;
                }
                Some(SoftirqChainRow {
                    vec,
                    source: format!("softirq {name}"),
                    name,
                    tid: info.tid,
                    comm: info.comm.to_string(),
                    count: c.soft,
                    waker_cpus: by_count(&c.cpus),
                    latency: c.lat.summary(),
                    exit_unknown: c.no_exit,
                    wake_latency: c.wake.summary(),
                    inferred: c.inferred,
                    histogram: c.buckets.to_vec(),
                })
            })
            .collect();
        softirq_chains.sort_by(|x, y| {
            y.count
                .cmp(&x.count)
                .then((x.vec, x.tid).cmp(&(y.vec, y.tid)))
        });
        IrqSection {
            irqs,
            softirqs,
            chains,
            softirq_chains,
            focus_irq: fi.as_ref().map(|p| p.as_str().to_string()),
            focus_task: ft.as_ref().map(|p| p.as_str().to_string()),
        }
    }
}
