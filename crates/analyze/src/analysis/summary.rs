//! The summary section: time span, events by type and CPU, lost events, anomalies, tasks,
//! IRQs, wake-ups.

use serde::Serialize;

use super::Ctx;
use crate::model::{AnomalyKind, Wake};
use crate::sink::Sink;

/// A name and a count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NameCount {
    /// The name.
    pub name: String,
    /// How many.
    pub count: u64,
}

/// Anomalies of one kind on one CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AnomalyRow {
    /// What.
    pub kind: AnomalyKind,
    /// Where.
    pub cpu: u32,
    /// How many.
    pub count: u64,
    /// The first, ns.
    pub first_ns: u64,
}

/// An IRQ seen in the trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IrqName {
    /// The number.
    pub irq: u32,
    /// Its handler's name.
    pub name: String,
}

/// The summary section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// First event, ns.
    pub start_ns: u64,
    /// Last event, ns.
    pub end_ns: u64,
    /// `end_ns - start_ns`.
    pub span_ns: u64,
    /// Events, lost markers included.
    pub events: u64,
    /// Events by type, most frequent first.
    pub events_by_type: Vec<NameCount>,
    /// CPUs (from the source, else the highest CPU with events + 1).
    pub cpus: u32,
    /// Events per CPU.
    pub events_per_cpu: Vec<u64>,
    /// Events the kernel lost per CPU; `null` = some, count unknown.
    pub lost_per_cpu: Vec<Option<u64>>,
    /// Whether the format records lost events; when not (`perf script` text), a 0 in
    /// `lost_per_cpu` means unknown.
    pub lost_recorded: bool,
    /// Records the reader skipped as undecodable (lenient reading only).
    pub skipped: u64,
    /// Anomalies by kind and CPU.
    pub anomalies: Vec<AnomalyRow>,
    /// Task incarnations seen (the idle tasks excluded).
    pub tasks: u64,
    /// IRQs seen (irq_handler_entry).
    pub irqs: Vec<IrqName>,
    /// Wake-ups measured (waking -> switch-in).
    pub wakeups: u64,
    /// Of which the switch-in was inferred from common_pid (latency is an upper bound).
    pub wakeups_inferred: u64,
    /// sched_waking of tasks already on a CPU (no latency to measure).
    pub wakes_of_running: u64,
    /// Wake-ups still pending at the end of the trace.
    pub wakes_pending_at_end: u64,
}

/// Folds what the summary needs beyond the machine's counters.
#[derive(Default)]
pub struct SummaryFold {
    wakeups: u64,
    inferred: u64,
}

impl Sink for SummaryFold {
    fn wake(&mut self, w: &Wake) {
        self.wakeups += 1;
        self.inferred += u64::from(w.inferred);
    }
}

impl SummaryFold {
    /// Builds the section.
    pub fn finish(self, ctx: &Ctx<'_>) -> Summary {
        let m = ctx.machine;
        let c = m.counts();
        let (start_ns, end_ns) = c.span.unwrap_or((0, 0));
        let cpus = ctx.meta.cpus.unwrap_or(0).max(c.per_cpu.len() as u32);
        let mut events_per_cpu = c.per_cpu.clone();
        events_per_cpu.resize(cpus as usize, 0);
        // The reader's counters and the stream's lost markers count the same losses; a
        // source may keep only one of them.
        let n = (cpus as usize).max(ctx.stats.lost.len()).max(c.lost.len());
        let mut lost_per_cpu: Vec<Option<u64>> = (0..n)
            .map(|i| {
                let a = ctx.stats.lost.get(i).copied().unwrap_or(Some(0));
                let b = c.lost.get(i).copied().unwrap_or(Some(0));
                Some(a?.max(b?))
            })
            .collect();
        lost_per_cpu.resize(cpus as usize, Some(0));
        Summary {
            start_ns,
            end_ns,
            span_ns: end_ns - start_ns,
            events: c.total(),
            events_by_type: c
                .by_name()
                .into_iter()
                .map(|(name, count)| NameCount { name, count })
                .collect(),
            cpus,
            events_per_cpu,
            lost_per_cpu,
            lost_recorded: !ctx.stats.lost_unrecorded,
            skipped: ctx.stats.skipped,
            anomalies: c
                .anomalies
                .iter()
                .map(|(&(kind, cpu), a)| AnomalyRow {
                    kind,
                    cpu,
                    count: a.count,
                    first_ns: a.first_ts,
                })
                .collect(),
            tasks: m.tasks().len() as u64,
            irqs: m
                .irq_names()
                .iter()
                .map(|(&irq, name)| IrqName {
                    irq,
                    name: name.to_string(),
                })
                .collect(),
            wakeups: self.wakeups,
            wakeups_inferred: self.inferred,
            wakes_of_running: c.wakes_of_running,
            wakes_pending_at_end: c.wakes_pending_at_end,
        }
    }
}
