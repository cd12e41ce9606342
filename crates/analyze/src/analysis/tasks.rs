//! The task section: per task (thread) and per process (or per name, when the source has no
//! thread group ids), run time, execution instances, CPUs, migrations, preemptions vs.
//! sleeps, and wake-up latency.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Ctx, Names};
use crate::model::{Migration, RunSlice, SliceEnd, Wake, Waker};
use crate::sink::Sink;
use crate::stats::{DurationStats, Stats};

/// Distinct wakers kept per task; more are counted under the last row.
const WAKERS_KEPT: usize = 8;

/// Run time on one CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CpuTime {
    /// The CPU.
    pub cpu: u32,
    /// Time current on it, ns.
    pub run_ns: u64,
    /// Slices on it.
    pub instances: u64,
}

/// Who woke a task, how often.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WakerCount {
    /// The waker; `null` for the others beyond the ones kept.
    pub waker: Option<Waker>,
    /// For people: `task bash-11382`, `irq 36 virtio1-req.0`, `softirq BLOCK (irq 36)`.
    pub name: String,
    /// Wake-ups.
    pub count: u64,
}

/// One task (thread) incarnation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TaskRow {
    /// Its tid.
    pub tid: i32,
    /// Its process, when known.
    pub tgid: Option<i32>,
    /// Its latest name.
    pub comm: String,
    /// Its kernel priority: the one it ran longest at (else the latest seen).
    pub prio: Option<i32>,
    /// First seen, ns.
    pub first_ns: u64,
    /// Its fork was traced.
    pub forked: bool,
    /// Its exit was traced.
    pub exited: bool,
    /// Time current on a CPU, ns.
    pub run_ns: u64,
    /// Execution instances (switch-in to switch-out) and their durations.
    pub instances: Option<Stats>,
    /// Time per CPU, most first.
    pub cpus: Vec<CpuTime>,
    /// sched_migrate_task events.
    pub migrations: u64,
    /// Instances ended runnable (preempted or yielded).
    pub preempted: u64,
    /// Instances ended in a sleep (voluntary).
    pub slept: u64,
    /// Instances ended otherwise: exit, trace end, a missing switch-out, lost events.
    pub other_ends: u64,
    /// Wake-up latency: sched_waking -> switch-in.
    pub wakeups: Option<Stats>,
    /// Wake-ups whose switch-in was inferred from common_pid (upper bounds).
    pub wakeups_inferred: u64,
    /// The wake-ups whose recorded switch-in came from the idle task: their latency
    /// includes the CPU's exit from idle.
    pub wakeups_from_idle: Option<Stats>,
    /// The wake-ups whose recorded switch-in took the CPU from another task (it was
    /// preempted, or yielded).
    pub wakeups_from_task: Option<Stats>,
    /// Who woke it, most first.
    pub wakers: Vec<WakerCount>,
}

/// How the groups are formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// By thread group id (process).
    Tgid,
    /// By name: the source has no thread group ids.
    Comm,
}

/// Threads of one process (or of one name).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupRow {
    /// The process id (grouping by tgid).
    pub tgid: Option<i32>,
    /// The name (the leader's, or the common name).
    pub comm: String,
    /// Its threads' tids.
    pub threads: Vec<i32>,
    /// Their run time, ns.
    pub run_ns: u64,
    /// The CPUs they ran on.
    pub cpus: Vec<u32>,
    /// Their wake-ups.
    pub wakeups: u64,
}

/// The task section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TaskSection {
    /// How `groups` are formed.
    pub group_by: GroupBy,
    /// Processes (or names) with their threads, most run time first.
    pub groups: Vec<GroupRow>,
    /// Tasks, most run time first (the idle tasks are in the CPU section).
    pub tasks: Vec<TaskRow>,
    /// Wake-up latency over every task (whatever `--task` and `--pid` say; in the window and
    /// on the CPUs the filter keeps).
    pub wakeups: Option<Stats>,
}

#[derive(Default)]
struct Acc {
    active: bool,
    run_ns: u64,
    slices: DurationStats,
    cpus: Vec<(u64, u64)>,
    migrations: u64,
    preempted: u64,
    slept: u64,
    other_ends: u64,
    wake: DurationStats,
    inferred: u64,
    from_idle: DurationStats,
    from_task: DurationStats,
    wakers: Vec<(Option<Waker>, u64)>,
    /// Run time (and slices) per priority.
    prios: Vec<(i32, u64, u64)>,
}

/// Folds slices, wake-ups and migrations per task.
#[derive(Default)]
pub struct TaskFold {
    acc: Vec<Acc>,
    all: DurationStats,
}

impl TaskFold {
    fn acc(&mut self, id: u32) -> &mut Acc {
        let i = id as usize;
        if self.acc.len() <= i {
            self.acc.resize_with(i + 1, Acc::default);
        }
        let a = &mut self.acc[i];
        a.active = true;
        a
    }

    /// Builds the section.
    pub fn finish(self, ctx: &Ctx<'_>) -> TaskSection {
        let m = ctx.machine;
        let names = Names::new(m);
        let mut tasks: Vec<TaskRow> = Vec::new();
        for (id, a) in self.acc.into_iter().enumerate() {
            if !a.active {
                continue;
            }
            let Some(info) = m.tasks().get(id) else {
                continue;
            };
            if !ctx
                .options
                .wants_task(info.tid, info.tgid, info.comm.as_str())
            {
                continue;
            }
            let mut cpus: Vec<CpuTime> = a
                .cpus
                .iter()
                .enumerate()
                .filter(|(_, (_, n))| *n > 0)
                .map(|(cpu, &(run_ns, instances))| CpuTime {
                    cpu: cpu as u32,
                    run_ns,
                    instances,
                })
                .collect();
            cpus.sort_by(|x, y| y.run_ns.cmp(&x.run_ns).then(x.cpu.cmp(&y.cpu)));
            let mut wakers: Vec<WakerCount> = a
                .wakers
                .iter()
                .map(|&(w, count)| WakerCount {
                    waker: w,
                    name: w.map_or_else(|| "others".to_string(), |w| names.waker(w)),
                    count,
                })
                .collect();
            wakers.sort_by(|x, y| {
                y.count
                    .cmp(&x.count)
                    .then(x.waker.is_none().cmp(&y.waker.is_none()))
            });
            tasks.push(TaskRow {
                tid: info.tid,
                tgid: info.tgid,
                comm: info.comm.to_string(),
                prio: a
                    .prios
                    .iter()
                    .max_by_key(|p| (p.1, p.2))
                    .map(|p| p.0)
                    .or(info.prio),
                first_ns: info.first_ts,
                forked: info.forked,
                exited: info.exited,
                run_ns: a.run_ns,
                instances: a.slices.summary(),
                cpus,
                migrations: a.migrations,
                preempted: a.preempted,
                slept: a.slept,
                other_ends: a.other_ends,
                wakeups: a.wake.summary(),
                wakeups_inferred: a.inferred,
                wakeups_from_idle: a.from_idle.summary(),
                wakeups_from_task: a.from_task.summary(),
                wakers,
            });
        }
        tasks.sort_by(|x, y| y.run_ns.cmp(&x.run_ns).then(x.tid.cmp(&y.tid)));
        let (group_by, groups) = groups(&tasks);
        TaskSection {
            group_by,
            groups,
            tasks,
            wakeups: self.all.summary(),
        }
    }
}

/// Groups rows by tgid when any is known, else by name.
fn groups(tasks: &[TaskRow]) -> (GroupBy, Vec<GroupRow>) {
    let by_tgid = tasks.iter().any(|t| t.tgid.is_some());
    let mut map: BTreeMap<(i32, String), GroupRow> = BTreeMap::new();
    for t in tasks {
        let key = if by_tgid {
            (t.tgid.unwrap_or(t.tid), String::new())
        } else {
            (0, t.comm.clone())
        };
        let g = map.entry(key).or_insert_with(|| GroupRow {
            tgid: by_tgid.then(|| t.tgid.unwrap_or(t.tid)),
            comm: t.comm.clone(),
            threads: Vec::new(),
            run_ns: 0,
            cpus: Vec::new(),
            wakeups: 0,
        });
        if by_tgid && Some(t.tid) == t.tgid {
            g.comm = t.comm.clone();
        }
        g.threads.push(t.tid);
        g.run_ns += t.run_ns;
        g.wakeups += t.wakeups.map_or(0, |w| w.count);
        for c in &t.cpus {
            if !g.cpus.contains(&c.cpu) {
                g.cpus.push(c.cpu);
            }
        }
    }
    let mut groups: Vec<GroupRow> = map.into_values().collect();
    for g in &mut groups {
        g.cpus.sort_unstable();
        g.threads.sort_unstable();
    }
    groups.sort_by(|x, y| y.run_ns.cmp(&x.run_ns).then(x.comm.cmp(&y.comm)));
    (
        if by_tgid {
            GroupBy::Tgid
        } else {
            GroupBy::Comm
        },
        groups,
    )
}

impl Sink for TaskFold {
    fn slice(&mut self, s: &RunSlice) {
        let Some(id) = s.task else {
            return;
        };
        let d = s.duration();
        let a = self.acc(id);
        a.run_ns += d;
        a.slices.record(d, s.start);
        let c = s.cpu as usize;
        if a.cpus.len() <= c {
            a.cpus.resize(c + 1, (0, 0));
        }
        a.cpus[c].0 += d;
        a.cpus[c].1 += 1;
        if let Some(p) = s.prio {
            match a.prios.iter_mut().find(|e| e.0 == p) {
                Some(e) => {
                    e.1 += d;
                    e.2 += 1;
                }
                None => a.prios.push((p, d, 1)),
            }
        }
        match s.end_kind {
            SliceEnd::Preempted => a.preempted += 1,
            SliceEnd::Slept(_) => a.slept += 1,
            _ => a.other_ends += 1,
        }
    }
    fn wake(&mut self, w: &Wake) {
        let lat = w.latency();
        self.all.record(lat, w.waking_ts);
        let a = self.acc(w.task);
        a.wake.record(lat, w.waking_ts);
        a.inferred += u64::from(w.inferred);
        match w.from_idle {
            Some(true) => a.from_idle.record(lat, w.waking_ts),
            Some(false) => a.from_task.record(lat, w.waking_ts),
            None => {}
        }
        let key = Some(w.waker);
        if let Some(e) = a.wakers.iter_mut().find(|e| e.0 == key) {
            e.1 += 1;
        } else if a.wakers.len() < WAKERS_KEPT {
            a.wakers.push((key, 1));
        } else if let Some(e) = a.wakers.iter_mut().find(|e| e.0.is_none()) {
            e.1 += 1;
        } else {
            a.wakers.push((None, 1));
        }
    }
    fn migration(&mut self, m: &Migration) {
        self.acc(m.task).migrations += 1;
    }
}
