//! Carrying a plan out, journalled step by step; a failure of the partition
//! itself, or a cancel, rolls back what was done.

use std::io;
use std::path::Path;
use std::time::Instant;

use jitterlab_cpuset::CpuSet;
use serde::Serialize;

use crate::irqs::{IrqChange, IrqOutcome};
use crate::partition::journal::Journal;
use crate::partition::plan::Plan;
use crate::partition::revert::{revert, RevertReport};
use crate::partition::step::{Action, Outcome, Step, Target, TaskMove};
use crate::partition::system::System;
use crate::pin::explain_setaffinity;
use crate::tasks::{read_tasks, TaskQuery};
use crate::Status;

/// What the caller says after each step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// Stop and roll back what was done (Ctrl-C).
    Cancel,
}

/// What became of one step.
#[derive(Clone, Debug, Serialize)]
pub struct StepResult {
    /// The step.
    pub seq: usize,
    /// Its outcome.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// For an IRQ: both masks before and after, and the verdict.
    pub irq: Option<IrqChange>,
    /// How long the change took, ns (the journal's sync excluded).
    pub took_ns: u64,
}

/// The result of `isolate`.
#[derive(Clone, Debug, Serialize)]
pub struct ApplyReport {
    /// The plan that was applied.
    pub plan: Plan,
    /// One result per step applied, in order (late steps included).
    pub results: Vec<StepResult>,
    /// Moves of threads that appeared while the plan was applied.
    pub late_steps: Vec<Step>,
    /// The journal.
    pub journal: String,
    /// Wall time of the apply, ns.
    pub elapsed_ns: u64,
    /// Whether the partition stands (applied, not rolled back).
    pub applied: bool,
    /// Why it was rolled back.
    pub rolled_back: Option<String>,
    /// The rollback.
    pub revert: Option<RevertReport>,
}

impl ApplyReport {
    /// Steps that failed for a reason other than a known refusal.
    pub fn failures(&self) -> usize {
        self.results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Failed { .. }))
            .count()
    }

    /// Steps the kernel refused (managed IRQs).
    pub fn refusals(&self) -> usize {
        self.results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Refused { .. }))
            .count()
    }

    /// How `isolate` ends: [`Status::Ok`] when the partition stands and no step failed
    /// (refusals, the managed IRQs, are listed with their remedy and are not failures),
    /// else [`Status::Failed`] (a step failed, or the apply was rolled back).
    pub fn status(&self) -> Status {
        Status::failed_if(!self.applied || self.failures() > 0)
    }
}

/// Rounds of looking for threads that appeared while applying.
const LATE_ROUNDS: usize = 3;

/// Steps intended with one `fsync`: on a state directory on disk that is the
/// difference between milliseconds and a second for a hundred threads.
const BATCH: usize = 64;

/// Applies `plan`: for each batch of steps, journal them as intended (synced), then
/// make each and journal its outcome. `on_step` is called after each step with the
/// number done; it may cancel. A step the partition cannot stand without (a
/// cpuset, the journal itself) failing, or a cancel, reverts everything done.
/// Afterwards, threads that appeared meanwhile are moved too (a few rounds, until
/// none is new).
pub fn apply(
    sys: &mut dyn System,
    plan: &Plan,
    journal: &mut Journal,
    on_step: &mut dyn FnMut(usize) -> Flow,
) -> ApplyReport {
    let start = Instant::now();
    let mut a = Applier {
        plan,
        journal,
        on_step,
        results: Vec::new(),
        done: 0,
    };
    let mut late_steps = Vec::new();
    let mut stop = plan.steps.chunks(BATCH).find_map(|batch| a.run(sys, batch));
    if stop.is_none() {
        let mut seen: Vec<(u32, u64)> = plan
            .steps
            .iter()
            .filter_map(|s| match &s.action {
                Action::Task(t) => Some((t.tid, t.start_ticks)),
                _ => None,
            })
            .collect();
        for _ in 0..LATE_ROUNDS {
            let Ok(tasks) = read_tasks(sys.root(), TaskQuery::all_threads()) else {
                break;
            };
            let new: Vec<Step> = plan
                .rules()
                .sort(&tasks)
                .moves
                .into_iter()
                .filter(|m| !seen.contains(&(m.tid, m.start_ticks)))
                .enumerate()
                .map(|(i, m)| Step {
                    seq: plan.steps.len() + late_steps.len() + i,
                    action: Action::Task(m),
                })
                .collect();
            if new.is_empty() {
                break;
            }
            seen.extend(new.iter().filter_map(|s| match &s.action {
                Action::Task(t) => Some((t.tid, t.start_ticks)),
                _ => None,
            }));
            stop = new.chunks(BATCH).find_map(|batch| a.run(sys, batch));
            late_steps.extend(new);
            if stop.is_some() {
                break;
            }
        }
    }
    if stop.is_none() {
        if let Err(e) = a.journal.finish() {
            stop = Some(format!("journal: {e}"));
        }
    }
    let dir = a
        .journal
        .path()
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let revert = stop.as_ref().map(|_| revert(sys, &dir));
    let revert = match revert {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            stop = stop.map(|s| format!("{s}; the rollback failed: {e}"));
            None
        }
        None => None,
    };
    ApplyReport {
        plan: plan.clone(),
        results: a.results,
        late_steps,
        journal: a.journal.path().display().to_string(),
        elapsed_ns: start.elapsed().as_nanos() as u64,
        applied: stop.is_none(),
        rolled_back: stop,
        revert,
    }
}

/// The state of an apply in progress.
struct Applier<'a> {
    plan: &'a Plan,
    journal: &'a mut Journal,
    on_step: &'a mut dyn FnMut(usize) -> Flow,
    results: Vec<StepResult>,
    done: usize,
}

impl Applier<'_> {
    /// Journals a batch as intended, then makes each step; why to stop, if so.
    fn run(&mut self, sys: &mut dyn System, batch: &[Step]) -> Option<String> {
        if let Err(e) = self.journal.intend_all(batch) {
            return Some(format!("journal: {e}"));
        }
        batch.iter().find_map(|step| self.run_one(sys, step))
    }

    fn run_one(&mut self, sys: &mut dyn System, step: &Step) -> Option<String> {
        let began = Instant::now();
        let (outcome, irq) = perform(sys, self.plan, &step.action);
        let took_ns = began.elapsed().as_nanos() as u64;
        let fatal = match (&outcome, &step.action) {
            (Outcome::Failed { error }, Action::Mkdir { .. })
            | (
                Outcome::Failed { error },
                Action::Write {
                    target: Target::Cpuset,
                    ..
                },
            ) => Some(format!("{}: {error}", step.action.describe())),
            _ => None,
        };
        let journalled = self.journal.done(step.seq, &outcome);
        self.results.push(StepResult {
            seq: step.seq,
            outcome,
            irq,
            took_ns,
        });
        self.done += 1;
        fatal
            .or_else(|| journalled.err().map(|e| format!("journal: {e}")))
            .or_else(|| {
                ((self.on_step)(self.done) == Flow::Cancel).then(|| "cancelled".to_string())
            })
    }
}

fn perform(sys: &mut dyn System, plan: &Plan, action: &Action) -> (Outcome, Option<IrqChange>) {
    match action {
        Action::Write {
            target: Target::Irq { irq, label },
            new,
            ..
        } => {
            let Ok(cpus) = CpuSet::parse_list(new) else {
                return (failed(format!("bad CPU list {new:?}")), None);
            };
            let change = sys.set_irq(*irq, label, &cpus);
            let outcome = match change.outcome {
                IrqOutcome::Applied | IrqOutcome::Subset | IrqOutcome::Inactive => Outcome::Done,
                IrqOutcome::Pending => Outcome::Pending,
                IrqOutcome::Refused => Outcome::Refused {
                    error: change.error.clone().unwrap_or_default(),
                    remedy: Some(managed_irq_remedy(&plan.cpus, &plan.housekeeping)),
                },
                IrqOutcome::Altered | IrqOutcome::Unknown => failed(
                    change
                        .error
                        .clone()
                        .unwrap_or_else(|| "the kernel stored another mask".into()),
                ),
            };
            (outcome, Some(change))
        }
        Action::Write {
            path, new, expect, ..
        } => {
            if let Err(e) = sys.write(path, new) {
                return (failed(e.to_string()), None);
            }
            if let Some(want) = expect {
                let got = sys.root().read_line(path).unwrap_or_default();
                if !got.starts_with(want.as_str()) || got.contains("invalid") {
                    return (
                        failed(format!("{path} reads {got:?} after writing {new:?}")),
                        None,
                    );
                }
            }
            (Outcome::Done, None)
        }
        Action::Mkdir { path, .. } => match sys.mkdir(path) {
            Ok(()) => (Outcome::Done, None),
            Err(e) => (failed(e.to_string()), None),
        },
        Action::Task(t) => (move_task(sys, t), None),
        Action::StopIrqbalance(ib) => match sys.stop_irqbalance(ib) {
            Ok(()) => (Outcome::Done, None),
            Err(e) => (failed(e.to_string()), None),
        },
    }
}

fn failed(error: String) -> Outcome {
    Outcome::Failed { error }
}

/// The boot option that moves a managed IRQ, which refuses writes at run time.
pub(crate) fn managed_irq_remedy(cpus: &CpuSet, housekeeping: &CpuSet) -> String {
    format!(
        "a managed IRQ: boot with isolcpus=managed_irq,domain,{cpus} (it then avoids CPU {cpus} \
         while CPU {housekeeping} can serve it); see `jitterlab advise {cpus}`"
    )
}

fn gone(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ESRCH)
}

fn move_task(sys: &mut dyn System, t: &TaskMove) -> Outcome {
    if sys.start_ticks(t.pid, t.tid) != Some(t.start_ticks) {
        return Outcome::Gone;
    }
    if let Some(c) = &t.cpuset {
        match sys.write(&c.to_tasks, &t.tid.to_string()) {
            Ok(()) => {}
            Err(e) if e.is_not_found() => return Outcome::Gone,
            Err(e) => return failed(format!("joining cpuset {}: {e}", c.to)),
        }
        // The cpuset set its CPUs; they differ from the plan only when the thread
        // kept fewer CPUs of its own.
        match sys.get_affinity(t.tid) {
            Ok(now) if now == t.new_allowed => return Outcome::Done,
            Ok(_) => {}
            Err(e) if gone(&e) => return Outcome::Gone,
            Err(e) => return failed(format!("sched_getaffinity: {e}")),
        }
    }
    match sys.set_affinity(t.tid, &t.new_allowed) {
        Ok(()) => Outcome::Done,
        Err(e) if gone(&e) => Outcome::Gone,
        Err(e) => failed(explain_setaffinity(&e, t.kind, &t.new_allowed)),
    }
}

/// Set by the tests: [`apply_live`] stops for good after this many steps (until killed,
/// or cancelled), so that a test can kill the isolating process halfway.
pub const PAUSE_ENV: &str = "JITTERLAB_TEST_PAUSE_AFTER_STEPS";

/// `jitterlab isolate` on the live machine: the journal created in `state_dir`, then
/// [`apply`] with [`crate::partition::LiveSystem`], rolled back when `cancel` is set
/// (Ctrl-C, through [`crate::child::cancel_on_signals`]).
pub fn apply_live(
    root: &crate::Root,
    plan: &Plan,
    state_dir: &Path,
    cancel: &std::sync::atomic::AtomicBool,
) -> crate::Result<ApplyReport> {
    use std::sync::atomic::Ordering;
    let header = crate::partition::Header::for_plan(root, plan)?;
    let mut journal = Journal::create(state_dir, &header)?;
    let pause: Option<usize> = std::env::var(PAUSE_ENV).ok().and_then(|v| v.parse().ok());
    let cancelled = || cancel.load(Ordering::Relaxed);
    let mut on_step = |done: usize| {
        if pause == Some(done) {
            eprintln!("jitterlab: paused after {done} steps ({PAUSE_ENV})");
            while !cancelled() {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        if cancelled() {
            Flow::Cancel
        } else {
            Flow::Continue
        }
    };
    let mut system = crate::partition::LiveSystem::new();
    Ok(apply(&mut system, plan, &mut journal, &mut on_step))
}
