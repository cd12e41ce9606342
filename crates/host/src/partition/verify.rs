//! What still disturbs the isolated CPUs: sampled over a window, judged per CPU.
//!
//! A finding is `fail` when isolation is broken in a way the run-time partition
//! should have prevented (a movable task or IRQ allowed there, the workqueue mask
//! spanning the CPU), `warn` for noise that remains (the tick, IPIs, softirqs,
//! per-CPU kernel threads, managed IRQs, missing boot options), `info` otherwise.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::cgroups::Cgroups;
use crate::cmdline::Cmdline;
use crate::error::{Error, Result};
use crate::irqs::IrqMap;
use crate::partition::journal::{Journal, RunRecord};
use crate::partition::judge::{
    finding, judge_counters, judge_idle, judge_irqs, judge_tasks, machine_findings, sample_threads,
    Context, Ran,
};
use crate::partition::step::Outcome;
use crate::partition::Method;
use crate::root::Root;
use crate::tasks::{read_tasks, TaskKind, TaskQuery};
use crate::workqueues::Workqueues;
use crate::Status;

/// What to verify.
#[derive(Clone, Debug)]
pub struct VerifyRequest {
    /// The CPUs; default: those of the partition in `state_dir`, else those
    /// isolated at boot or by a cpuset.
    pub cpus: Option<CpuSet>,
    /// The sampling window (zero: one reading, no counts).
    pub interval: Duration,
    /// Where a partition's journal is.
    pub state_dir: PathBuf,
}

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Context.
    Info,
    /// Noise that remains.
    Warn,
    /// Isolation is broken.
    Fail,
}

/// The verdict on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// Nothing found.
    Isolated,
    /// Isolated, with noise that only boot options or the kernel can remove.
    Noisy,
    /// Something that should not is allowed or delivered there.
    NotIsolated,
}

/// One thing found.
#[derive(Clone, Debug, Serialize)]
pub struct Observation {
    /// How bad.
    pub level: Level,
    /// What, in a line.
    pub what: String,
    /// What would remove it.
    pub fix: Option<String>,
}

/// A count over the window on one CPU.
#[derive(Clone, Debug, Serialize)]
pub struct Count {
    /// `IRQ 36 virtio1-req.0`, `LOC`, `TIMER`.
    pub name: String,
    /// How many.
    pub count: u64,
    /// Per second.
    pub per_s: f64,
}

/// A thread found allowed on, or running on, an isolated CPU.
#[derive(Clone, Debug, Serialize)]
pub struct TaskSeen {
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// Name.
    pub comm: String,
    /// Kind.
    pub kind: TaskKind,
    /// Its CPUs (at the end of the window).
    pub allowed: CpuSet,
    /// Times it was scheduled in while last seen on this CPU, over the window.
    pub runs: u64,
    /// CPU time over the window while seen on this CPU, ns.
    pub runtime_ns: u64,
    /// Whose it is: `user` (started with `jitterlab run`, in the isolated cpuset, or
    /// pinned to isolated CPUs only), `excluded`, `excluded_child`, `kernel`, `other`.
    pub class: String,
}

/// An IRQ that may be, or was, delivered to an isolated CPU.
#[derive(Clone, Debug, Serialize)]
pub struct IrqSeen {
    /// Number.
    pub irq: u32,
    /// Device names.
    pub label: String,
    /// `smp_affinity_list`.
    pub affinity: Option<CpuSet>,
    /// `effective_affinity_list`.
    pub effective: Option<CpuSet>,
    /// Interrupts on this CPU over the window.
    pub count: u64,
    /// Whether the kernel refused to move it (a managed IRQ, per the journal).
    pub refused: bool,
}

/// One CPU's result.
#[derive(Clone, Debug, Serialize)]
pub struct CpuIsolation {
    /// The CPU.
    pub cpu: u32,
    /// The verdict.
    pub verdict: Isolation,
    /// What was found, worst first.
    pub findings: Vec<Observation>,
    /// Device IRQs allowed or delivered here.
    pub irqs: Vec<IrqSeen>,
    /// Interrupt rows (IRQs and LOC, RES, CAL, TLB, ...) that grew here.
    pub interrupts: Vec<Count>,
    /// Softirqs that ran here.
    pub softirqs: Vec<Count>,
    /// Threads allowed here, other than bound per-CPU kernel threads.
    pub allowed: Vec<TaskSeen>,
    /// Threads that ran here during the window.
    pub ran: Vec<TaskSeen>,
}

impl CpuIsolation {
    /// A CPU with nothing found yet.
    pub fn new(cpu: u32) -> CpuIsolation {
        CpuIsolation {
            cpu,
            verdict: Isolation::Isolated,
            findings: Vec::new(),
            irqs: Vec::new(),
            interrupts: Vec::new(),
            softirqs: Vec::new(),
            allowed: Vec::new(),
            ran: Vec::new(),
        }
    }
}

/// The partition verify found.
#[derive(Clone, Debug, Serialize)]
pub struct PartitionInfo {
    /// The journal.
    pub journal: String,
    /// Its CPUs.
    pub cpus: CpuSet,
    /// Its method.
    pub method: Method,
    /// Whether the apply finished.
    pub complete: bool,
    /// Commands started with `jitterlab run`.
    pub runs: Vec<RunRecord>,
}

/// The result of `verify`.
#[derive(Clone, Debug, Serialize)]
pub struct VerifyReport {
    /// The CPUs verified.
    pub cpus: CpuSet,
    /// Where that set came from.
    pub source: String,
    /// The window, ns (0: a single reading).
    pub interval_ns: u64,
    /// The partition, when a journal is there.
    pub partition: Option<PartitionInfo>,
    /// Findings that concern the machine (boot options, irqbalance, the journal).
    pub machine: Vec<Observation>,
    /// Per CPU.
    pub verdicts: Vec<CpuIsolation>,
    /// The worst of them all.
    pub verdict: Isolation,
}

impl VerifyReport {
    /// Whether a CPU is not isolated (or, with `strict`, noisy).
    pub fn failed(&self, strict: bool) -> bool {
        match self.verdict {
            Isolation::NotIsolated => true,
            Isolation::Noisy => strict,
            Isolation::Isolated => false,
        }
    }

    /// How `verify` ends: [`Status::Limit`] when a CPU is not isolated (with `strict`,
    /// also when one is noisy), else [`Status::Ok`].
    pub fn status(&self, strict: bool) -> Status {
        Status::limit_if(self.failed(strict))
    }
}

/// Samples the CPUs over the window and judges each.
pub fn verify(root: &Root, req: &VerifyRequest) -> Result<VerifyReport> {
    if req.interval.as_nanos() > u128::from(crate::window::MAX_WINDOW_NS) {
        return Err(Error::Invalid(format!(
            "interval {:?}: expected at most {}",
            req.interval,
            jitterlab_units::format_ns(crate::window::MAX_WINDOW_NS)
        )));
    }
    let rec = Journal::read(&req.state_dir)?;
    let cgroups = Cgroups::read(root)?;
    let possible = root.read_cpu_list("/sys/devices/system/cpu/possible")?;
    let online = root.read_cpu_list("/sys/devices/system/cpu/online")?;
    let boot = Cmdline::read(root)?
        .isolation(&possible)
        .unwrap_or_default();
    let sys_isolated = root
        .read_cpu_list_opt("/sys/devices/system/cpu/isolated")?
        .unwrap_or_default();
    let unbalanced = sys_isolated
        .union(&cgroups.isolated_cpus())
        .union(boot.isolcpus.as_ref().unwrap_or(&CpuSet::new()));
    let (cpus, source) = match (&req.cpus, &rec) {
        (Some(c), _) => (c.clone(), "given".to_string()),
        (None, Some(r)) => (
            r.header.cpus.clone(),
            format!("the partition in {}", r.path.display()),
        ),
        (None, None) if !unbalanced.is_empty() => (
            unbalanced.clone(),
            "isolated at boot or by a cpuset".to_string(),
        ),
        (None, None) => {
            return Err(Error::Invalid(format!(
                "no CPUs to verify: no partition journal in {} and no CPU isolated at boot; \
                 give the CPUs (jitterlab verify 1)",
                req.state_dir.display()
            )))
        }
    };
    crate::cpus::check_online(root, &cpus)?;
    let housekeeping = online.difference(&cpus);
    if root.is_live() && !housekeeping.is_empty() {
        // Sample from the housekeeping CPUs, not from those being judged.
        let _ = crate::sched::set_affinity(0, &housekeeping);
    }

    // The window.
    let idle = |root: &Root| -> Result<Vec<Vec<crate::cpus::IdleState>>> {
        cpus.iter()
            .map(|c| crate::cpus::read_idle_states(root, c))
            .collect()
    };
    let start = Instant::now();
    let idle0 = idle(root)?;
    let irq0 = IrqMap::read(root)?;
    let mut ran = Ran::new();
    let mut last = sample_threads(root);
    if !req.interval.is_zero() {
        let step = (req.interval / 10).clamp(Duration::from_millis(20), Duration::from_millis(250));
        while start.elapsed() < req.interval {
            std::thread::sleep(step.min(req.interval.saturating_sub(start.elapsed())));
            let now = sample_threads(root);
            for (key, s) in &now {
                let Some(before) = last.get(key) else {
                    continue;
                };
                if cpus.contains(s.cpu)
                    && (s.runs > before.runs || s.runtime_ns > before.runtime_ns)
                {
                    let e = ran.entry(*key).or_default().entry(s.cpu).or_default();
                    e.0 += s.runs.saturating_sub(before.runs).max(1);
                    e.1 += s.runtime_ns.saturating_sub(before.runtime_ns);
                }
            }
            last = now;
        }
    }
    let elapsed = start.elapsed();
    let irq1 = IrqMap::read(root)?;
    let idle1 = idle(root)?;
    let window = irq1.since(&irq0, elapsed.as_nanos() as u64);
    let tasks = read_tasks(root, TaskQuery::all_threads())?;
    let wq = Workqueues::read(root)?;

    let runs = Journal::runs(&req.state_dir);
    let ctx = Context::new(rec.as_ref(), &runs, &tasks, &cpus);
    let machine = machine_findings(root, rec.as_ref(), &cpus)?;
    let refused: Vec<u32> = rec
        .as_ref()
        .map(|r| {
            r.steps
                .iter()
                .filter(|(_, o)| matches!(o, Some(Outcome::Refused { .. })))
                .filter_map(|(s, _)| s.action.irq())
                .collect()
        })
        .unwrap_or_default();

    let mut verdicts = Vec::new();
    for (i, cpu) in cpus.iter().enumerate() {
        let mut v = CpuIsolation::new(cpu);
        judge_irqs(&mut v, &window, &refused, &cpus, &housekeeping);
        judge_counters(&mut v, &window, &boot.nohz_full);
        judge_tasks(&mut v, &ctx, &tasks, &ran);
        let limit = root.read_line_opt(crate::partition::plan::idle_latency_path(cpu))?;
        judge_idle(
            &mut v,
            &idle0[i],
            &idle1[i],
            crate::partition::plan::idle_limit_us(limit.as_deref()),
            rec.is_some(),
        );
        if wq.cpumask.as_ref().is_some_and(|m| m.contains(cpu)) {
            v.findings.push(finding(
                Level::Fail,
                "unbound workqueue work may run here (the workqueue cpumask includes it)".into(),
                Some(format!(
                    "jitterlab isolate writes {} to /sys/devices/virtual/workqueue/cpumask",
                    housekeeping.to_mask_string()
                )),
            ));
        }
        if !unbalanced.contains(cpu) {
            v.findings.push(finding(
                Level::Warn,
                "in a scheduler domain: load balancing still runs here".into(),
                Some("a cpuset partition (--method cgroup1/cgroup2) or isolcpus=domain".into()),
            ));
        }
        v.findings.sort_by_key(|f| std::cmp::Reverse(f.level));
        v.verdict = match v.findings.first().map(|f| f.level) {
            Some(Level::Fail) => Isolation::NotIsolated,
            Some(Level::Warn) => Isolation::Noisy,
            _ => Isolation::Isolated,
        };
        verdicts.push(v);
    }
    let verdict = verdicts
        .iter()
        .map(|v| v.verdict)
        .chain(machine.iter().map(|f| match f.level {
            Level::Fail => Isolation::NotIsolated,
            Level::Warn => Isolation::Noisy,
            Level::Info => Isolation::Isolated,
        }))
        .max_by_key(|v| match v {
            Isolation::Isolated => 0,
            Isolation::Noisy => 1,
            Isolation::NotIsolated => 2,
        })
        .unwrap_or(Isolation::Isolated);
    Ok(VerifyReport {
        cpus,
        source,
        interval_ns: elapsed.as_nanos() as u64 * u64::from(!req.interval.is_zero()),
        partition: rec.map(|r| PartitionInfo {
            journal: r.path.display().to_string(),
            cpus: r.header.cpus.clone(),
            method: r.header.method,
            complete: r.complete,
            runs,
        }),
        machine,
        verdicts,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `verify` hits its limit (status 3) on a CPU not isolated; on a noisy one only
    /// with `strict`.
    #[test]
    fn status_of_verify() {
        let report = |verdict: Isolation| VerifyReport {
            cpus: CpuSet::first_n(1),
            source: "argument".into(),
            interval_ns: 0,
            partition: None,
            machine: vec![],
            verdicts: vec![],
            verdict,
        };
        for strict in [false, true] {
            assert_eq!(report(Isolation::Isolated).status(strict), Status::Ok);
            assert_eq!(report(Isolation::NotIsolated).status(strict), Status::Limit);
        }
        assert_eq!(report(Isolation::Noisy).status(false), Status::Ok);
        assert_eq!(report(Isolation::Noisy).status(true), Status::Limit);
    }
}
