//! What the machine counts about the raw stream: events by type and CPU, lost events,
//! anomalies, the time span.

use std::collections::BTreeMap;

use jitterlab_trace::{EventKind, Text};

use crate::hash::FxMap;
use crate::model::AnomalyKind;

/// Names of the typed event kinds, by [`kind_index`].
const KIND_NAMES: [&str; 22] = [
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
    "sched_process_fork",
    "sched_process_exec",
    "sched_process_exit",
    "irq_handler_entry",
    "irq_handler_exit",
    "softirq_raise",
    "softirq_entry",
    "softirq_exit",
    "hrtimer_expire_entry",
    "hrtimer_expire_exit",
    "ipi_send_cpu",
    "workqueue_execute_start",
    "workqueue_execute_end",
    "print",
    "funcgraph_entry",
    "funcgraph_exit",
    "lost",
];

/// The slot of a typed kind in [`KIND_NAMES`]; `None` for [`EventKind::Other`].
fn kind_index(k: &EventKind) -> Option<usize> {
    Some(match k {
        EventKind::SchedSwitch { .. } => 0,
        EventKind::SchedWaking(_) => 1,
        EventKind::SchedWakeup(_) => 2,
        EventKind::SchedWakeupNew(_) => 3,
        EventKind::SchedMigrateTask { .. } => 4,
        EventKind::SchedProcessFork { .. } => 5,
        EventKind::SchedProcessExec { .. } => 6,
        EventKind::SchedProcessExit { .. } => 7,
        EventKind::IrqHandlerEntry { .. } => 8,
        EventKind::IrqHandlerExit { .. } => 9,
        EventKind::SoftirqRaise { .. } => 10,
        EventKind::SoftirqEntry { .. } => 11,
        EventKind::SoftirqExit { .. } => 12,
        EventKind::HrtimerExpireEntry { .. } => 13,
        EventKind::HrtimerExpireExit { .. } => 14,
        EventKind::IpiSendCpu { .. } => 15,
        EventKind::WorkqueueExecuteStart { .. } => 16,
        EventKind::WorkqueueExecuteEnd { .. } => 17,
        EventKind::Print { .. } => 18,
        EventKind::FuncEntry { .. } => 19,
        EventKind::FuncReturn { .. } => 20,
        EventKind::Lost { .. } => 21,
        _ => return None,
    })
}

/// Anomaly totals of one kind on one CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnomalyCount {
    /// How many.
    pub count: u64,
    /// The first one, ns.
    pub first_ts: u64,
}

/// Counters over the whole stream.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    typed: [u64; KIND_NAMES.len()],
    other: FxMap<Text, u64>,
    /// Events per CPU (index = CPU), lost markers included.
    pub per_cpu: Vec<u64>,
    /// Events lost per CPU, from the stream's lost markers; `None` = some, count unknown.
    pub lost: Vec<Option<u64>>,
    /// Anomalies by kind and CPU.
    pub anomalies: BTreeMap<(AnomalyKind, u32), AnomalyCount>,
    /// First and last event timestamps, ns.
    pub span: Option<(u64, u64)>,
    /// sched_waking of a task already current on a CPU (not a wake-up: no latency).
    pub wakes_of_running: u64,
    /// Wake-ups still pending when the trace ended.
    pub wakes_pending_at_end: u64,
}

impl Counts {
    /// Counts one event. Inlined into the machine's feed: the call cost ~27 Ir an event.
    #[inline]
    pub(crate) fn event(&mut self, cpu: u32, kind: &EventKind) {
        match kind_index(kind) {
            Some(i) => self.typed[i] += 1,
            None => {
                let name = match kind {
                    EventKind::Other { name, .. } => name.clone(),
                    other => Text::from(other.name()),
                };
                *self.other.entry(name).or_insert(0) += 1;
            }
        }
        let c = cpu as usize;
        if self.per_cpu.len() <= c {
            self.per_cpu.resize(c + 1, 0);
        }
        self.per_cpu[c] += 1;
    }

    pub(crate) fn lost(&mut self, cpu: u32, count: Option<u64>) {
        let c = cpu as usize;
        if self.lost.len() <= c {
            self.lost.resize(c + 1, Some(0));
        }
        self.lost[c] = match (self.lost[c], count) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
    }

    pub(crate) fn anomaly(&mut self, kind: AnomalyKind, cpu: u32, ts: u64, n: u64) {
        let e = self.anomalies.entry((kind, cpu)).or_insert(AnomalyCount {
            count: 0,
            first_ts: ts,
        });
        e.count = e.count.saturating_add(n);
    }

    /// Total events.
    pub fn total(&self) -> u64 {
        self.per_cpu.iter().sum()
    }

    /// Events by name (`sched_switch`, `irq_handler_entry`, `timer:timer_start`, ...),
    /// most frequent first.
    pub fn by_name(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = KIND_NAMES
            .iter()
            .zip(self.typed)
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| (name.to_string(), n))
            .chain(self.other.iter().map(|(k, n)| (k.to_string(), *n)))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    }

    /// Anomalies of `kind` on every CPU.
    pub fn anomalies_of(&self, kind: AnomalyKind) -> u64 {
        self.anomalies
            .iter()
            .filter(|((k, _), _)| *k == kind)
            .map(|(_, c)| c.count)
            .sum()
    }

    /// Anomalies of `kind` on `cpu`.
    pub fn anomalies_on(&self, kind: AnomalyKind, cpu: u32) -> u64 {
        self.anomalies.get(&(kind, cpu)).map_or(0, |c| c.count)
    }
}
