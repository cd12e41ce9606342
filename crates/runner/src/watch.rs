//! The processes under test, watched while a run goes: each measure registers what it
//! starts ([`Roles::process`], [`Roles::thread`]) and a thread samples them every
//! [`EVERY`] from `/proc/PID/task/TID/{sched,schedstat,stat}`: time run, time waited
//! for a CPU, migrations, voluntary and involuntary switches, and the CPU each was on,
//! so that a run says where its sender and receiver (or server and client) ran, how
//! often they moved, whether they shared a CPU and what they waited on, traced or not.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use jitterlab_experiment::context::{RoleTime, SharedCpu};
use jitterlab_experiment::recipe::Role;
use jitterlab_host::usage::{thread_sched, SchedSample};
use jitterlab_host::Root;

/// How often the roles are sampled.
pub const EVERY: Duration = Duration::from_millis(20);

/// The pairs whose sharing of a CPU is counted.
const PAIRS: [(Role, Role); 2] = [(Role::Sender, Role::Receiver), (Role::Server, Role::Client)];

/// One process (or one thread of jitterlab's) under test.
#[derive(Debug)]
struct Watched {
    role: Role,
    pid: u32,
    /// Only this thread (a built-in workload's thread in jitterlab's own process).
    tid: Option<u32>,
    comm: String,
    allowed: String,
    /// Each thread's first and last sample.
    first: HashMap<u32, SchedSample>,
    last: HashMap<u32, SchedSample>,
    /// Samples per CPU.
    cpus: BTreeMap<u32, u32>,
    /// The CPU of the latest sample.
    now: Option<u32>,
}

/// The roles of one run, and what the samples found.
#[derive(Debug, Default)]
pub struct Roles {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    watched: Vec<Watched>,
    /// Processes of the experiment's own tools (the loads' commands): not sampled.
    tools: Vec<u32>,
    /// Per pair: samples with both, of which on one CPU.
    shared: HashMap<(Role, Role), (u32, u32)>,
}

impl Roles {
    /// A process under test (its every thread).
    pub fn process(&self, role: Role, pid: u32) {
        self.add(role, pid, None);
    }

    /// A thread of jitterlab's own process under test.
    pub fn thread(&self, role: Role, tid: u32) {
        self.add(role, std::process::id(), Some(tid));
    }

    /// A process of the experiment's own tools (a load's command): its CPU time and its
    /// descendants' are the tools', not the processes under test's.
    pub fn tool(&self, pid: u32) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.tools.push(pid);
    }

    /// The tool processes.
    pub fn tools(&self) -> Vec<u32> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .tools
            .clone()
    }

    fn add(&self, role: Role, pid: u32, tid: Option<u32>) {
        let dir = match tid {
            Some(t) => format!("/proc/{pid}/task/{t}"),
            None => format!("/proc/{pid}"),
        };
        let comm = std::fs::read_to_string(format!("{dir}/comm"))
            .map(|c| c.trim().to_string())
            .unwrap_or_default();
        let allowed = std::fs::read_to_string(format!("{dir}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .map(|v| v.trim().to_string())
            })
            .unwrap_or_default();
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.watched.push(Watched {
            role,
            pid,
            tid,
            comm,
            allowed,
            first: HashMap::new(),
            last: HashMap::new(),
            cpus: BTreeMap::new(),
            now: None,
        });
        drop(inner);
        // A first sample at once, so the run's counts start here.
        self.sample(&Root::live());
    }

    /// Samples every role once.
    pub fn sample(&self, root: &Root) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for w in &mut inner.watched {
            let tids = match w.tid {
                Some(t) => vec![t],
                None => root
                    .list_numeric(format!("/proc/{}/task", w.pid))
                    .unwrap_or_default(),
            };
            // The CPU of the thread that ran most since the last sample.
            let mut busiest: Option<(u64, u32)> = None;
            for tid in tids {
                let Ok(Some(s)) = thread_sched(root, w.pid, tid) else {
                    continue;
                };
                let ran = s
                    .run_ns
                    .saturating_sub(w.last.get(&tid).map_or(s.run_ns, |l| l.run_ns));
                if busiest.is_none_or(|(r, _)| ran > r) {
                    busiest = Some((ran, s.last_cpu));
                }
                w.first.entry(tid).or_insert(s);
                w.last.insert(tid, s);
            }
            w.now = busiest.map(|(_, cpu)| cpu);
            if let Some(cpu) = w.now {
                *w.cpus.entry(cpu).or_default() += 1;
            }
        }
        let now: Vec<(Role, Option<u32>)> = inner.watched.iter().map(|w| (w.role, w.now)).collect();
        for (a, b) in PAIRS {
            let cpu_of = |r: Role| now.iter().find(|(x, _)| *x == r).and_then(|(_, c)| *c);
            if let (Some(ca), Some(cb)) = (cpu_of(a), cpu_of(b)) {
                let e = inner.shared.entry((a, b)).or_default();
                e.0 += 1;
                e.1 += u32::from(ca == cb);
            }
        }
    }

    /// What each role did between its first and last sample, and how often the pairs
    /// shared a CPU.
    pub fn finish(&self) -> (Vec<RoleTime>, Vec<SharedCpu>) {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let roles = inner
            .watched
            .iter()
            .map(|w| {
                let d = |f: fn(&SchedSample) -> u64| -> u64 {
                    w.last
                        .iter()
                        .map(|(tid, l)| f(l).saturating_sub(w.first.get(tid).map_or(0, f)))
                        .sum()
                };
                let mut cpus: Vec<(u32, u32)> = w.cpus.iter().map(|(&c, &n)| (c, n)).collect();
                cpus.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                RoleTime {
                    role: w.role,
                    comm: w.comm.clone(),
                    pid: i32::try_from(w.tid.unwrap_or(w.pid)).unwrap_or(i32::MAX),
                    thread: w.tid.is_some(),
                    allowed: w.allowed.clone(),
                    cpu_ns: d(|s| s.run_ns),
                    wait_ns: d(|s| s.wait_ns),
                    migrations: d(|s| s.migrations),
                    voluntary_switches: d(|s| s.voluntary),
                    involuntary_switches: d(|s| s.involuntary),
                    cpus,
                }
            })
            .collect();
        let mut shared: Vec<SharedCpu> = inner
            .shared
            .iter()
            .filter(|(_, (n, _))| *n > 0)
            .map(|(&(a, b), &(n, same))| SharedCpu {
                a,
                b,
                fraction: f64::from(same) / f64::from(n),
                samples: n,
            })
            .collect();
        shared.sort_by_key(|s| (s.a as u8, s.b as u8));
        (roles, shared)
    }
}

/// Samples `roles` every [`EVERY`] on a thread of `scope` (on `observer` when given)
/// until `stop` is set, then once more.
pub fn watch<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    roles: &'scope Roles,
    stop: &'scope AtomicBool,
    observer: Option<&'scope jitterlab_cpuset::CpuSet>,
) {
    let _ = std::thread::Builder::new()
        .name("jl-watch".into())
        .spawn_scoped(scope, move || {
            crate::trace::observe_on(observer);
            let root = Root::live();
            while !stop.load(Ordering::Relaxed) {
                roles.sample(&root);
                std::thread::sleep(EVERY);
            }
            roles.sample(&root);
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread of this process that spins on one CPU, watched: it ran, on that CPU,
    /// without moving, and shared it with a second one pinned there too.
    #[test]
    fn a_pinned_spinner_is_seen_where_it_runs() {
        let roles = Roles::default();
        let stop = AtomicBool::new(false);
        let cpu0 = jitterlab_cpuset::CpuSet::parse_list("0").unwrap();
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            for role in [Role::Sender, Role::Receiver] {
                let (tx, stop, cpu0) = (tx.clone(), &stop, &cpu0);
                s.spawn(move || {
                    let mask = jitterlab_host::sched::mask_words(cpu0);
                    jitterlab_host::sched::set_affinity_words(0, &mask).unwrap();
                    // SAFETY: gettid has no preconditions.
                    let tid = unsafe { libc::gettid() } as u32;
                    tx.send((role, tid)).unwrap();
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_add(1));
                    }
                });
            }
            drop(tx);
            for (role, tid) in rx.iter().take(2) {
                roles.thread(role, tid);
            }
            watch(s, &roles, &stop, None);
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::Relaxed);
        });
        let (r, shared) = roles.finish();
        assert_eq!(r.len(), 2);
        for x in &r {
            assert_eq!(x.allowed, "0", "{x:?}");
            assert!(x.cpu_ns > 0, "{x:?}");
            assert_eq!(x.migrations, 0, "{x:?}");
            assert_eq!(x.cpus.first().map(|c| c.0), Some(0), "{x:?}");
        }
        assert_eq!(shared.len(), 1);
        assert_eq!(shared[0].fraction, 1.0);
    }
}
