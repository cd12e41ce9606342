//! The sched_migrate_task events of given threads inside given time windows (issue 15: the
//! migrations of a workload's threads around a step in its latency).
//!
//! A fold over raw events, without the state machine: [`MigrationFold`] keeps only the
//! matches, so its memory grows with the tids, the windows and the matches, never with the
//! events; [`migrations`] runs it over an [`EventSource`].

use jitterlab_trace::{Event, EventKind, EventSource};
use serde::Serialize;

/// One sched_migrate_task of a chosen thread inside a chosen window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MigrationEvent {
    /// When, ns on the trace clock.
    pub ts_ns: u64,
    /// The CPU that logged the event (the one that moved the thread).
    pub cpu: u32,
    /// The migrated thread's tid.
    pub tid: i32,
    /// Its name, as the event gives it.
    pub comm: String,
    /// Its kernel priority.
    pub prio: i32,
    /// From this CPU.
    pub orig_cpu: u32,
    /// To this CPU.
    pub dest_cpu: u32,
}

/// Collects the sched_migrate_task events of `tids` whose time lies in one of `windows`
/// (`[start, end]`, ns, both ends included; they may overlap and come in any order).
/// An empty `tids` or `windows` matches nothing.
#[derive(Clone, Debug)]
pub struct MigrationFold {
    tids: Vec<i32>,
    /// Sorted by start, overlapping ones merged.
    windows: Vec<(u64, u64)>,
    found: Vec<MigrationEvent>,
}

impl MigrationFold {
    /// A fold for these threads and windows (a window whose end is before its start is
    /// ignored).
    pub fn new(tids: &[i32], windows: &[(u64, u64)]) -> MigrationFold {
        let mut t = tids.to_vec();
        t.sort_unstable();
        t.dedup();
        let mut w: Vec<(u64, u64)> = windows.iter().copied().filter(|(s, e)| s <= e).collect();
        w.sort_unstable();
        MigrationFold {
            tids: t,
            windows: crate::intervals::merge(w.into_iter()),
            found: Vec::new(),
        }
    }

    fn in_window(&self, ts: u64) -> bool {
        // The last window starting at or before ts.
        let i = self.windows.partition_point(|w| w.0 <= ts);
        i > 0 && self.windows[i - 1].1 >= ts
    }

    /// Looks at one event.
    pub fn feed(&mut self, ev: &Event) {
        if let EventKind::SchedMigrateTask {
            comm,
            pid,
            prio,
            orig_cpu,
            dest_cpu,
        } = &ev.kind
        {
            if self.tids.binary_search(pid).is_ok() && self.in_window(ev.ts) {
                self.found.push(MigrationEvent {
                    ts_ns: ev.ts,
                    cpu: ev.cpu,
                    tid: *pid,
                    comm: comm.to_string(),
                    prio: *prio,
                    orig_cpu: *orig_cpu,
                    dest_cpu: *dest_cpu,
                });
            }
        }
    }

    /// The matches, in the order of the events fed (time order for an [`EventSource`]).
    pub fn finish(self) -> Vec<MigrationEvent> {
        self.found
    }
}

/// The sched_migrate_task events of the threads `tids` inside the time `windows` (`[start,
/// end]` in ns on the trace clock, both ends included, in any order, overlaps allowed), in
/// time order, read from `source` in one streaming pass: memory grows with the matches
/// only. An empty `tids` or `windows` matches nothing. The trace must have recorded
/// `sched:sched_migrate_task` (the `sched` preset of `jitterlab record` does).
///
/// [`MigrationFold`] does the same one event at a time:
///
/// ```
/// use jitterlab_analyze::MigrationFold;
/// use jitterlab_trace::{Comm, Event, EventKind, Flags};
///
/// let mig = |ts, pid| Event {
///     ts, cpu: 0, pid: 0, flags: Flags(0), preempt_count: 0,
///     kind: EventKind::SchedMigrateTask {
///         comm: Comm::new("worker"), pid, prio: 120, orig_cpu: 1, dest_cpu: 0,
///     },
/// };
/// let mut fold = MigrationFold::new(&[7], &[(8_000, 9_000), (0, 2_000)]);
/// for ev in [mig(1_000, 7), mig(5_000, 7), mig(6_000, 8), mig(9_000, 7)] {
///     fold.feed(&ev);
/// }
/// let found = fold.finish();
/// assert_eq!(found.iter().map(|m| m.ts_ns).collect::<Vec<_>>(), [1_000, 9_000]);
/// ```
pub fn migrations(
    source: &mut dyn EventSource,
    tids: &[i32],
    windows: &[(u64, u64)],
) -> jitterlab_trace::Result<Vec<MigrationEvent>> {
    let mut fold = MigrationFold::new(tids, windows);
    while let Some(ev) = source.next_event()? {
        fold.feed(&ev);
    }
    Ok(fold.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_trace::{Comm, Flags};

    fn mig(ts: u64, pid: i32) -> Event {
        Event {
            ts,
            cpu: 1,
            pid: 0,
            flags: Flags(0),
            preempt_count: 0,
            kind: EventKind::SchedMigrateTask {
                comm: Comm::new("w"),
                pid,
                prio: 120,
                orig_cpu: 0,
                dest_cpu: 1,
            },
        }
    }

    #[test]
    fn windows_are_inclusive_merged_and_unordered() {
        let mut f = MigrationFold::new(&[3, 3, 1], &[(50, 60), (10, 20), (15, 30), (40, 35)]);
        assert_eq!(f.windows, [(10, 30), (50, 60)]);
        for (ts, pid) in [(9, 1), (10, 1), (30, 3), (31, 3), (37, 1), (50, 2), (60, 3)] {
            f.feed(&mig(ts, pid));
        }
        let got: Vec<(u64, i32)> = f.finish().iter().map(|m| (m.ts_ns, m.tid)).collect();
        assert_eq!(got, [(10, 1), (30, 3), (60, 3)]);
    }

    #[test]
    fn nothing_matches_without_tids_or_windows() {
        let mut a = MigrationFold::new(&[], &[(0, u64::MAX)]);
        let mut b = MigrationFold::new(&[1], &[]);
        a.feed(&mig(5, 1));
        b.feed(&mig(5, 1));
        assert!(a.finish().is_empty() && b.finish().is_empty());
    }
}
