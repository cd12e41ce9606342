//! Counting a trace: events per type and per CPU, lost events, the time span — what
//! `report --stats` prints. Task names for printing events are learnt here too.

use std::collections::HashMap;

use crate::dat::{CpuCount, DatFile, EventCounts};
use crate::hash::FxMap;
use crate::{Comm, Event, EventKind, EventSource, Result};

/// Records of one event type.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NameCount {
    /// `sched_switch`, or `system:name` when the source gives the system.
    pub name: String,
    /// Records.
    pub count: u64,
}

/// One CPU's records.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CpuStat {
    /// The CPU.
    pub cpu: u32,
    /// Records.
    pub events: u64,
    /// Events the kernel lost there (`None`: some, count unknown).
    pub lost: Option<u64>,
    /// First timestamp, ns.
    pub first_ts: Option<u64>,
    /// Last timestamp, ns.
    pub last_ts: Option<u64>,
}

/// The counts of a whole trace.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TraceStats {
    /// The file.
    pub file: String,
    /// Its format.
    pub format: String,
    /// All records (lost-event markers not counted).
    pub total: u64,
    /// Per event type, most first.
    pub by_event: Vec<NameCount>,
    /// Per CPU, by number.
    pub per_cpu: Vec<CpuStat>,
    /// First timestamp, ns.
    pub first_ts: Option<u64>,
    /// Last timestamp, ns.
    pub last_ts: Option<u64>,
    /// Records or lines skipped as undecodable (lenient mode).
    pub skipped: u64,
    /// Whether the format records lost events; when not (`perf script` text), a
    /// CPU's `lost` of 0 means unknown.
    pub lost_recorded: bool,
    /// The buffers of a .dat (the top buffer, named `""`, and instances), or of
    /// `trace-cmd report` text that names them ([`crate::ReadStats::buffers`]), each counted
    /// on its own; the fields above add them up. Empty for other text traces.
    pub buffers: Vec<BufferStat>,
}

/// One buffer of a .dat or of `trace-cmd report` text, counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BufferStat {
    /// The instance name; empty for the top buffer.
    pub name: String,
    /// Its records.
    pub total: u64,
    /// Events the kernel lost in it, all CPUs (`None`: some, count unknown).
    pub lost: Option<u64>,
    /// Per CPU, by number.
    pub per_cpu: Vec<CpuStat>,
}

fn add_lost(slot: &mut Option<u64>, more: Option<u64>) {
    *slot = match (*slot, more) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        _ => None,
    };
}

/// `f` of both when both are there, else the one that is.
fn min_opt(a: Option<u64>, b: Option<u64>, f: fn(u64, u64) -> u64) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(f(x, y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn cpu_stat(p: &CpuCount) -> CpuStat {
    CpuStat {
        cpu: p.cpu,
        events: p.events,
        lost: p.lost,
        first_ts: p.first_ts,
        last_ts: p.last_ts,
    }
}

impl TraceStats {
    /// From the .dat reader's counts (which decode no field).
    pub fn from_dat_counts(file: &str, c: &EventCounts) -> TraceStats {
        TraceStats {
            file: file.to_string(),
            format: c.format.clone(),
            total: c.total,
            by_event: c
                .by_event
                .iter()
                .map(|e| NameCount {
                    name: e.name.to_string(),
                    count: e.count,
                })
                .collect(),
            per_cpu: c.per_cpu.iter().map(cpu_stat).collect(),
            first_ts: c.first_ts,
            last_ts: c.last_ts,
            skipped: c.skipped,
            lost_recorded: true,
            buffers: vec![BufferStat {
                name: c.buffer.clone(),
                total: c.total,
                lost: c
                    .per_cpu
                    .iter()
                    .try_fold(0u64, |a, p| Some(a.saturating_add(p.lost?))),
                per_cpu: c.per_cpu.iter().map(cpu_stat).collect(),
            }],
        }
    }

    /// Every buffer of `dat` counted ([`DatFile::count_events`]), and added up: events by
    /// name and by CPU, losses, the time span over all buffers.
    pub fn from_dat(file: &str, dat: &DatFile<'_>) -> Result<TraceStats> {
        let mut all: Option<TraceStats> = None;
        for i in 0..dat.buffers().len() {
            let one = TraceStats::from_dat_counts(file, &dat.count_events(i)?);
            all = Some(match all {
                None => one,
                Some(sum) => sum.plus(one),
            });
        }
        Ok(all.unwrap_or_else(|| TraceStats {
            file: file.to_string(),
            format: dat.meta().format.clone(),
            lost_recorded: true,
            ..TraceStats::default()
        }))
    }

    /// `self` and `other` (another buffer of the same file) added up.
    fn plus(mut self, other: TraceStats) -> TraceStats {
        self.total += other.total;
        for e in other.by_event {
            match self.by_event.iter_mut().find(|m| m.name == e.name) {
                Some(m) => m.count += e.count,
                None => self.by_event.push(e),
            }
        }
        self.by_event
            .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
        for c in other.per_cpu {
            match self.per_cpu.iter_mut().find(|m| m.cpu == c.cpu) {
                Some(m) => {
                    m.events += c.events;
                    add_lost(&mut m.lost, c.lost);
                    m.first_ts = min_opt(m.first_ts, c.first_ts, u64::min);
                    m.last_ts = min_opt(m.last_ts, c.last_ts, u64::max);
                }
                None => self.per_cpu.push(c),
            }
        }
        self.per_cpu.sort_by_key(|c| c.cpu);
        self.first_ts = min_opt(self.first_ts, other.first_ts, u64::min);
        self.last_ts = min_opt(self.last_ts, other.last_ts, u64::max);
        self.skipped += other.skipped;
        self.buffers.extend(other.buffers);
        self
    }

    /// The counts of an open trace named `file`: a .dat from its pages' headers (no field
    /// decoded), every buffer; a text trace by reading every event.
    pub fn of(file: &str, trace: &crate::Trace) -> Result<TraceStats> {
        match trace {
            crate::Trace::Dat(d) => TraceStats::from_dat(file, d),
            // Counted by name: the untyped events' fields are not built.
            crate::Trace::Ctf(c) => {
                TraceStats::count(file, &trace.format(), &mut c.events_with(false)?)
            }
            _ => TraceStats::count(file, &trace.format(), &mut *trace.events()?),
        }
    }

    /// By reading every event of `source`.
    pub fn count(file: &str, format: &str, source: &mut dyn EventSource) -> Result<TraceStats> {
        let mut by_name: HashMap<String, u64> = HashMap::new();
        let mut cpus: Vec<CpuStat> = Vec::new();
        let mut s = TraceStats {
            file: file.to_string(),
            format: format.to_string(),
            ..TraceStats::default()
        };
        while let Some(ev) = source.next_event()? {
            let idx = match cpus.binary_search_by_key(&ev.cpu, |c| c.cpu) {
                Ok(i) => i,
                Err(i) => {
                    cpus.insert(
                        i,
                        CpuStat {
                            cpu: ev.cpu,
                            lost: Some(0),
                            ..CpuStat::default()
                        },
                    );
                    i
                }
            };
            let cpu = &mut cpus[idx];
            if let EventKind::Lost { count } = ev.kind {
                add_lost(&mut cpu.lost, count);
                continue;
            }
            cpu.events += 1;
            cpu.first_ts.get_or_insert(ev.ts);
            cpu.last_ts = Some(ev.ts);
            s.total += 1;
            s.first_ts = Some(s.first_ts.map_or(ev.ts, |f| f.min(ev.ts)));
            s.last_ts = Some(s.last_ts.map_or(ev.ts, |l| l.max(ev.ts)));
            let name: &str = match &ev.kind {
                EventKind::Other { name, .. } => name,
                k => k.name(),
            };
            // Look up by &str: a String is made once per event type, not per event.
            match by_name.get_mut(name) {
                Some(n) => *n += 1,
                None => {
                    by_name.insert(name.to_string(), 1);
                }
            }
        }
        // Losses the reader knows of without a marker event.
        for (i, lost) in source.stats().lost.iter().enumerate() {
            if let Some(c) = cpus.iter_mut().find(|c| c.cpu as usize == i) {
                if c.lost == Some(0) {
                    c.lost = *lost;
                }
            }
        }
        s.buffers = source.stats().buffers.clone();
        s.skipped = source.stats().skipped;
        s.lost_recorded = !source.stats().lost_unrecorded;
        let mut by_event: Vec<NameCount> = by_name
            .into_iter()
            .map(|(name, count)| NameCount { name, count })
            .collect();
        by_event.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
        s.by_event = by_event;
        s.per_cpu = cpus;
        Ok(s)
    }
}

/// The name of each task, as last seen: seeded from saved cmdlines, then learnt from the
/// events that name tasks (switches, wake-ups, forks, exits, migrations).
#[derive(Clone, Debug, Default)]
pub struct TaskNames {
    names: FxMap<i32, Comm>,
    /// Learn from the events (false: the saved names only, as trace-cmd names tasks).
    learns: bool,
}

impl TaskNames {
    /// Seeded with `cmdlines`, learning from the events.
    pub fn new(cmdlines: HashMap<i32, Comm>) -> TaskNames {
        TaskNames {
            names: cmdlines.into_iter().collect(),
            learns: true,
        }
    }

    /// The names `cmdlines` give, and only those (what `trace-cmd report` prints of a
    /// .dat: the saved cmdlines, `<...>` for a task they do not name).
    pub fn saved(cmdlines: HashMap<i32, Comm>) -> TaskNames {
        TaskNames {
            names: cmdlines.into_iter().collect(),
            learns: false,
        }
    }

    /// Learns from `ev` (call before printing it: a switch names its next task); a no-op
    /// for [`TaskNames::saved`] names.
    pub fn learn(&mut self, ev: &Event) {
        if !self.learns {
            return;
        }
        let mut put = |pid: i32, comm: Comm| {
            if pid != 0 {
                self.names.insert(pid, comm);
            }
        };
        match &ev.kind {
            EventKind::SchedSwitch {
                prev_comm,
                prev_pid,
                next_comm,
                next_pid,
                ..
            } => {
                put(*prev_pid, *prev_comm);
                put(*next_pid, *next_comm);
            }
            EventKind::SchedWaking(w)
            | EventKind::SchedWakeup(w)
            | EventKind::SchedWakeupNew(w) => put(w.pid, w.comm),
            EventKind::SchedProcessFork {
                parent_comm,
                parent_pid,
                child_comm,
                child_pid,
            } => {
                put(*parent_pid, *parent_comm);
                put(*child_pid, *child_comm);
            }
            EventKind::SchedProcessExit { comm, pid, .. }
            | EventKind::SchedMigrateTask { comm, pid, .. } => put(*pid, *comm),
            _ => {}
        }
    }

    /// The name of `pid`: `<idle>` for 0, `<...>` when unknown (as trace-cmd prints).
    pub fn get(&self, pid: i32) -> &str {
        if pid == 0 {
            return "<idle>";
        }
        self.names.get(&pid).map_or("<...>", |c| c.as_str())
    }
}

#[cfg(test)]
mod tests {
    use crate::{Event, EventKind, Flags, Value};

    #[test]
    fn other_events_serialize_flat_without_duplicate_keys() {
        let ev = Event {
            ts: 5,
            cpu: 1,
            pid: 7,
            flags: Flags(0),
            preempt_count: 0,
            kind: EventKind::Other {
                name: "timer:timer_start".into(),
                fields: vec![
                    ("cpu".into(), Value::Uint(3)),
                    ("expires".into(), Value::Uint(99)),
                ],
            },
        };
        let json = serde_json::to_value(&ev).unwrap();
        assert_eq!(json["event"], "timer_start");
        assert_eq!(json["system"], "timer");
        assert_eq!(json["cpu"], 1, "the recording CPU");
        assert_eq!(json["cpu_"], 3, "the event's own cpu field");
        assert_eq!(json["expires"], 99);
    }

    /// trace-cmd names a .dat's tasks by its saved cmdlines only; the names learnt from
    /// the events are for text traces.
    #[test]
    fn saved_names_do_not_learn() {
        use super::TaskNames;
        use crate::{Comm, Wakeup};
        let wakeup = Event {
            ts: 0,
            cpu: 0,
            pid: 1,
            flags: Flags(0),
            preempt_count: 0,
            kind: EventKind::SchedWakeup(Wakeup {
                comm: Comm::new("worker"),
                pid: 9,
                prio: 120,
                target_cpu: 0,
            }),
        };
        let cmdlines = [(1, Comm::new("init"))].into_iter().collect();
        let mut saved = TaskNames::saved(cmdlines);
        saved.learn(&wakeup);
        assert_eq!(
            (saved.get(0), saved.get(1), saved.get(9)),
            ("<idle>", "init", "<...>")
        );
        let mut learnt = TaskNames::new(Default::default());
        learnt.learn(&wakeup);
        assert_eq!(learnt.get(9), "worker");
    }
}
