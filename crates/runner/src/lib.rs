//! The experiment runner: `jitterlab experiment`'s host side.
//!
//! It takes a [`Recipe`] checked against this machine ([`parse_recipe`]) and its run plan,
//! and for each run applies the cell's settings (IRQ affinity and partitioning
//! through the partition journal, so that they are undone after the run, on Ctrl-C
//! and, after a crash, by the next run), starts the loads and the workloads, runs
//! the measures (the latency probe, commands, the built-in `tcp` and `mcast`
//! network workloads in private network namespaces), records the traced runs and
//! hands the values back as [`Run`]s for the
//! statistics of `jitterlab-experiment`.
//!
//! ```no_run
//! use std::sync::{atomic::AtomicBool, Arc};
//! use jitterlab_experiment::recipe::builtin;
//! use jitterlab_runner::{parse_recipe, run_experiment, Options};
//!
//! let text = builtin("partition").unwrap().text;
//! let root = jitterlab_host::Root::live();
//! // Checked against this machine: its CPUs online, a CPU left for housekeeping.
//! let recipe = parse_recipe(&root, "partition.toml", text)?;
//! let options = Options { state_dir: "/run/jitterlab".into(), out_dir: None, seed: Some(1) };
//! let cancel = Arc::new(AtomicBool::new(false));
//! let outcome = run_experiment(&root, &recipe, text, &options, &cancel, |_| {})?;
//! assert!(outcome.left_over.is_empty(), "the machine is as before");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! It does not compute statistics (jitterlab-experiment does) nor render anything
//! (jitterlab-render does).

#![deny(missing_docs)]

mod error;
pub mod net;

pub use error::{Error, Result};

/// What one run of one measure gave.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// Its value of each metric (`tcp.throughput`, `mcast.received`, ...), in the
    /// metric's unit.
    pub values: std::collections::BTreeMap<String, f64>,
    /// Its per-interval series.
    pub series: Vec<jitterlab_experiment::Series>,
    /// The processes (or threads) under test, by role, for the trace's explanation:
    /// the thread group ids of processes, the thread ids of built-in threads.
    pub tasks: Vec<(jitterlab_experiment::recipe::Role, u32)>,
    /// Raw outputs to keep in the experiment's directory: a file name and its bytes
    /// (`iperf3-client.json`).
    pub raw: Vec<(String, Vec<u8>)>,
    /// What else the machine did during the run (set once, by the run).
    pub context: Option<jitterlab_experiment::context::RunContext>,
}

mod cell;
mod context;
mod facts;
mod measure;
mod place;
mod restore;
mod save;
pub mod trace;
pub mod watch;
mod workload;

pub use facts::{host_facts, parse_recipe};
pub use restore::StateDir;
pub use save::{compare, Compared, Saved, SAVED_FILES};

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use jitterlab_experiment::explain::Testbed;
use jitterlab_experiment::recipe::{PlannedRun, Role};
use jitterlab_experiment::report::precise_enough;
use jitterlab_experiment::stats::Config;
use jitterlab_experiment::{ExperimentReport, Explanation, Recipe, Run};
use jitterlab_host::partition::{Difference, Snapshot};
use jitterlab_host::{Root, Status};

/// The measured rounds every cell has before `precision` may stop an experiment.
pub const MIN_ROUNDS_BEFORE_STOPPING: usize = 5;

/// How to run an experiment.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where the records of what a cell changed live (`/run/jitterlab`; the experiment
    /// uses its `experiment/` subdirectory).
    pub state_dir: PathBuf,
    /// Where the recipe, every run's raw output, the traces and the result go.
    pub out_dir: Option<PathBuf>,
    /// The seed of the order and the statistics, when the recipe has none.
    pub seed: Option<u64>,
}

/// What the runner tells while it works.
#[derive(Debug)]
pub enum Progress<'a> {
    /// A run starts: its place, the number of runs, and its cell's label.
    Starts {
        /// The run.
        run: &'a PlannedRun,
        /// The runs of the experiment.
        of: usize,
        /// Its cell's label.
        label: &'a str,
    },
    /// A run ended.
    Ended(&'a Run),
}

/// A finished (or cancelled) experiment.
#[derive(Debug)]
pub struct Outcome {
    /// The result, over the runs that ran.
    pub report: ExperimentReport,
    /// Ctrl-C ended it early.
    pub cancelled: bool,
    /// What was undone first that an earlier experiment had left.
    pub recovered: Vec<String>,
    /// What could not be restored after a run.
    pub restore_failures: Vec<String>,
    /// How the machine differs from before the experiment (IRQ masks, cpusets,
    /// threads' CPUs): empty when it was left as it was.
    pub left_over: Vec<Difference>,
    /// The trace files of the traced runs, to render.
    pub traces: Vec<PathBuf>,
    /// What could not be explained, in words (a trace that could not be read again).
    pub notes: Vec<String>,
}

impl Outcome {
    /// How `experiment` ends: [`Status::Failed`] when Ctrl-C ended it early, a cell
    /// could not be restored, or the machine differs from before the experiment, else
    /// [`Status::Ok`] (runs that failed are the result's, counted in its warnings).
    pub fn status(&self) -> Status {
        Status::failed_if(
            self.cancelled || !self.restore_failures.is_empty() || !self.left_over.is_empty(),
        )
    }
}

/// Runs the experiment of `recipe` (whose text is `recipe_text`, kept in the
/// output directory): every planned run with its cell's settings applied and undone,
/// until the end or until `cancel` is set; then the statistics.
pub fn run_experiment(
    root: &Root,
    recipe: &Recipe,
    recipe_text: &str,
    options: &Options,
    cancel: &Arc<AtomicBool>,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<Outcome> {
    if !root.is_live() {
        return Err(Error::Invalid(
            "experiment runs on this machine; it cannot take --root".into(),
        ));
    }
    // Before anything changes: an earlier experiment's directory is never written over.
    if let Some(dir) = &options.out_dir {
        Saved::check(dir)?;
    }
    let state = StateDir::new(&options.state_dir);
    let mut recovered = state.recover(root)?;
    if recipe.measures.tcp.is_some() || recipe.measures.mcast.is_some() {
        for name in net::netns::sweep_stale()? {
            recovered.push(format!(
                "removed the network namespace {name} an earlier experiment left"
            ));
        }
    }
    let before = Snapshot::read(root)?;
    let start_wall_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|d| u64::try_from(d.as_nanos()).ok());
    let online = jitterlab_host::cpus::online(root)?;
    let seed = recipe.seed.or(options.seed).unwrap_or_else(seed_from_clock);
    let plan = recipe.plan(seed);
    let cells = recipe.cells();
    let saved = match &options.out_dir {
        Some(dir) => Some(Saved::create(dir, recipe_text)?),
        None => None,
    };
    let machine = machine(root)?;
    if let Some(s) = &saved {
        s.write_json("machine.json", &machine)?;
    }
    if let Some(cmd) = &recipe.setup {
        cell::shell("the recipe's setup", cmd)?;
    }
    let metrics = recipe.metrics();
    let config = Config {
        seed,
        noise: recipe.noise,
        ..Config::default()
    };
    let mut stopped_early = None;
    let mut runs = Vec::new();
    let mut explanations = Vec::new();
    let mut restore_failures = Vec::new();
    let mut traces = Vec::new();
    let mut notes = Vec::new();
    let mut irqs_written = BTreeSet::new();
    let scratch = tempfile::Builder::new()
        .prefix("jitterlab-experiment-")
        .tempdir()
        .map_err(|e| Error::Io {
            path: std::env::temp_dir().display().to_string(),
            cause: e,
        })?;
    for planned in &plan.runs {
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        let cell = &cells[planned.cell];
        progress(Progress::Starts {
            run: planned,
            of: plan.runs.len(),
            label: &cell.label,
        });
        let trace_path = planned.trace.then(|| match &saved {
            Some(s) => s.trace_path(planned.seq),
            None => scratch.path().join(format!("run-{:03}.dat", planned.seq)),
        });
        let ctx = RunContext {
            root,
            recipe,
            online: &online,
            cancel,
        };
        let (result, failed) = one_run(
            &ctx,
            &state,
            &cell.settings,
            planned,
            trace_path.as_deref(),
            &mut irqs_written,
        );
        restore_failures.extend(failed);
        let mut run = Run {
            seq: planned.seq,
            cell: planned.cell,
            round: planned.round,
            warmup: planned.warmup,
            traced: planned.trace,
            values: Default::default(),
            series: Vec::new(),
            error: None,
            context: None,
        };
        match result {
            Ok((measured, explanation)) => {
                run.values = measured.values;
                run.series = measured.series;
                run.context = measured.context;
                if let Some(s) = &saved {
                    for (name, bytes) in &measured.raw {
                        s.write_raw(planned.seq, name, bytes)?;
                    }
                }
                if let Some(mut t) = explanation {
                    if let (Some(s), Some(p)) = (&saved, &trace_path) {
                        t.explanation.trace = s.relative(p);
                    }
                    if let Some(p) = &trace_path {
                        explanations.push(t);
                        traces.push(p.clone());
                    }
                }
            }
            Err(e) => run.error = Some(e.to_string()),
        }
        // A run cut short by Ctrl-C is not a sample.
        if cancel.load(Ordering::Relaxed) && run.error.is_some() {
            break;
        }
        progress(Progress::Ended(&run));
        runs.push(run);
        if !restore_failures.is_empty() {
            // The machine is no longer as the cells assume: stop here.
            break;
        }
        // At the end of a measured round, stop when every median is known well enough.
        let round_ends = plan
            .runs
            .get(planned.seq + 1)
            .is_none_or(|next| next.round != planned.round || next.warmup != planned.warmup);
        if let (Some(precision), true, false) = (recipe.precision, round_ends, planned.warmup) {
            let more = plan.runs.len() > planned.seq + 1;
            if more
                && precise_enough(
                    &metrics,
                    cells.len(),
                    &runs,
                    &config,
                    precision,
                    MIN_ROUNDS_BEFORE_STOPPING,
                )
            {
                stopped_early = Some(planned.round + 1);
                break;
            }
        }
    }
    if let Some(cmd) = &recipe.teardown {
        if let Err(e) = cell::shell("the recipe's teardown", cmd) {
            restore_failures.push(e.to_string());
        }
    }
    let now = Snapshot::read(root)?;
    let mut left_over = before.diff(&now);
    left_over.extend(restore::effective_cpus(
        root,
        &before,
        &now,
        &irqs_written,
        &mut notes,
    ));
    let mut report = ExperimentReport::new(
        &recipe.name,
        metrics,
        cells,
        recipe.baselines(),
        runs,
        config,
    );
    report.machine = Some(machine);
    report.start_wall_ns = start_wall_ns;
    report.order = Some(recipe.order);
    report.stopped_early = stopped_early;
    // The steps are known now: the migrations around them, from each traced run's trace.
    for t in explanations.iter_mut() {
        if let Some(run) = report.runs.iter().find(|r| r.seq == t.explanation.seq) {
            trace::around_steps(&t.migrations, t.start, &mut t.explanation, run);
        }
    }
    report.explanations = explanations.into_iter().map(|t| t.explanation).collect();
    report.spike_causes = jitterlab_experiment::explain::causes(&report.explanations);
    report.answers = jitterlab_experiment::answers::answer(&report, &recipe.measures);
    if let Some(s) = &saved {
        s.write_json("runs.json", &report.runs)?;
        s.write_json("result.json", &report)?;
    }
    // The traces of an unsaved experiment go with the scratch directory.
    if saved.is_none() {
        traces.clear();
    }
    Ok(Outcome {
        report,
        cancelled: cancel.load(Ordering::Relaxed),
        recovered,
        restore_failures,
        left_over,
        traces,
        notes,
    })
}

struct RunContext<'a> {
    root: &'a Root,
    recipe: &'a Recipe,
    online: &'a jitterlab_cpuset::CpuSet,
    cancel: &'a Arc<AtomicBool>,
}

/// One run: the cell applied, the workload and the measures, the trace, the cell
/// undone. The undo's failures come back beside the run's result; the IRQs whose
/// masks the cell wrote are added to `irqs_written`.
fn one_run(
    ctx: &RunContext<'_>,
    state: &StateDir,
    settings: &jitterlab_experiment::recipe::Settings,
    planned: &PlannedRun,
    trace_path: Option<&Path>,
    irqs_written: &mut BTreeSet<u32>,
) -> (Result<(Measured, Option<Traced>)>, Vec<String>) {
    let mut applied = match cell::apply(ctx.root, state, settings, ctx.cancel) {
        Ok(a) => a,
        Err(e) => return (Err(e), Vec::new()),
    };
    irqs_written.extend(applied.irqs_written.iter().copied());
    let roles = watch::Roles::default();
    for pid in applied.load_pids() {
        roles.tool(pid);
    }
    let result = measure_run(ctx, settings, planned, trace_path, &roles);
    let loads = applied.stop_loads();
    let failed = cell::undo(ctx.root, state, applied);
    (with_loads(result, loads), failed)
}

/// A traced run's explanation, with what its trace said that is needed once the
/// experiment is over (the steps are found then).
struct Traced {
    explanation: Explanation,
    /// The migrations of the processes under test ([`trace::Answers::migrations`]).
    migrations: Vec<jitterlab_analyze::MigrationEvent>,
    /// The trace's first event, ns.
    start: u64,
}

/// A run's result with what its loads did: a load command's output (kept off the
/// terminal) is the run's raw output `load.out`; a load that ended before the run did
/// fails the run, which was not measured under it.
fn with_loads(
    result: Result<(Measured, Option<Traced>)>,
    loads: Vec<jitterlab_latency::load::LoadResult>,
) -> Result<(Measured, Option<Traced>)> {
    let (mut measured, explanation) = result?;
    if let Some(l) = loads.iter().find(|l| l.failure.is_some()) {
        return Err(Error::workload(
            format!("load {}", l.spec),
            l.failure.as_deref().unwrap_or_default(),
        ));
    }
    for l in loads.into_iter().filter(|l| !l.output.is_empty()) {
        measured.raw.push(("load.out".into(), l.output));
    }
    Ok((measured, explanation))
}

fn measure_run(
    ctx: &RunContext<'_>,
    settings: &jitterlab_experiment::recipe::Settings,
    planned: &PlannedRun,
    trace_path: Option<&Path>,
    roles: &watch::Roles,
) -> Result<(Measured, Option<Traced>)> {
    let recipe = ctx.recipe;
    let m = &recipe.measures;
    let duration = recipe.duration_ns;
    let cpus = |r: Role| place::cpus_of(r, settings, |r| m.default_cpus(r), ctx.online);
    let workload_cpus = cpus(Role::Workload)?;
    let mut workload = match &recipe.workload {
        Some(w) => Some(workload::Workload::start(
            &w.command,
            workload_cpus.as_ref(),
        )?),
        None => None,
    };
    if let Some(w) = &workload {
        roles.process(Role::Workload, w.pid());
    }
    // A `break` turns tracing off in every buffer that traces, the top level too (as
    // cyclictest -b does, for whoever records beside the experiment): the experiment
    // turns the top level back on after the run, as it found it.
    let breaks = m.latency.as_ref().is_some_and(|l| l.break_ns.is_some());
    let top_on = if breaks {
        trace::top_tracing_on(ctx.root)
    } else {
        None
    };
    // jitterlab's own threads keep off the CPUs the probe measures, where there is room.
    let observer =
        trace::observer_cpus(m.latency.as_ref().and_then(|l| l.cpus.as_ref()), ctx.online);
    let recording = match trace_path {
        Some(p) => Some(trace::start(ctx.root, p, breaks, observer.as_ref())?),
        None => None,
    };
    let cancel: &AtomicBool = ctx.cancel;
    // The probe ends its run at a `break`, through its cancel flag: its own, which Ctrl-C
    // also sets, so that a break ends this run and not the experiment.
    let probe_cancel = Arc::new(AtomicBool::new(false));
    let measuring = AtomicBool::new(true);
    let watching = AtomicBool::new(false);
    // What else the machine does is read from here to the measures' end, and what the
    // kernel logs.
    let mut kernel_log = jitterlab_host::kmsg::KernelLog::open(ctx.root);
    let before = context::Reading::take(ctx.root)?;
    let result = std::thread::scope(|s| -> Result<Measured> {
        let probe = &probe_cancel;
        let running = &measuring;
        let observer = observer.as_ref();
        s.spawn(move || {
            trace::observe_on(observer);
            while running.load(Ordering::Relaxed) {
                if cancel.load(Ordering::Relaxed) {
                    probe.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        watch::watch(s, roles, &watching, observer);
        let result = measure_all(ctx, settings, duration, probe, &cpus, roles);
        watching.store(true, Ordering::Relaxed);
        running.store(false, Ordering::Relaxed);
        result
    });
    let after = context::Reading::take(ctx.root)?;
    let trace_summary = recording.map(|r| r.finish());
    if let Some(on) = top_on {
        trace::restore_top_tracing_on(ctx.root, on)?;
    }
    if let Some(w) = workload.as_mut() {
        w.stop();
    }
    let mut measured = result?;
    if let Some(w) = &workload {
        measured.tasks.push((Role::Workload, w.pid()));
    }
    let mut run_context = context::context(&before, &after, roles);
    if let Some(log) = kernel_log.as_mut() {
        run_context.kernel_messages = context::kernel_messages(log);
    }
    measured.context = Some(run_context);
    let explanation = match (trace_summary, trace_path) {
        (Some(summary), Some(path)) => {
            summary?;
            // Every question of the run's trace, in one pass: its analysis, the probe's
            // blame, the migrations of the processes under test (for the steps found
            // once the experiment is over).
            let pids: Vec<i32> = measured
                .tasks
                .iter()
                .filter_map(|&(_, p)| i32::try_from(p).ok())
                .collect();
            let answers = trace::ask(
                path,
                &trace::Questions {
                    analysis: true,
                    probe_blame: m.latency.as_ref().map(|_| false),
                    migrations_of: &pids,
                    noise: None,
                },
            )?;
            let report = answers
                .analysis
                .ok_or_else(|| Error::workload("analyzing the trace", "no analysis"))?;
            Some(Traced {
                explanation: trace::explain(
                    &report,
                    answers.probe_blame.as_ref(),
                    &measured.tasks,
                    planned.seq,
                    planned.cell,
                    None,
                ),
                migrations: answers.migrations,
                start: answers.start,
            })
        }
        _ => None,
    };
    Ok((measured, explanation))
}

/// Runs every measure of the recipe side by side: the probe on a thread of its own, the
/// commands and the network workloads on this one.
fn measure_all(
    ctx: &RunContext<'_>,
    settings: &jitterlab_experiment::recipe::Settings,
    duration: u64,
    probe_cancel: &Arc<AtomicBool>,
    cpus: &dyn Fn(Role) -> Result<Option<jitterlab_cpuset::CpuSet>>,
    roles: &watch::Roles,
) -> Result<Measured> {
    let recipe = ctx.recipe;
    let m = &recipe.measures;
    let cancel: &AtomicBool = ctx.cancel;
    let workload_cpus = cpus(Role::Workload)?;
    std::thread::scope(|s| -> Result<Measured> {
        let latency = m
            .latency
            .as_ref()
            .map(|l| s.spawn(move || measure::latency(ctx.root, l, duration, probe_cancel)));
        let mut total = Measured::default();
        for c in &m.commands {
            let placed = if recipe.workload.is_none() {
                workload_cpus.as_ref()
            } else {
                None
            };
            total.merge(measure::command(c, duration, placed, cancel)?);
        }
        if let Some(t) = &m.tcp {
            let bitrate = settings.bitrate.as_deref().or(t.bitrate.as_deref());
            let bitrate = bitrate.filter(|b| *b != "unlimited");
            let server = cpus(Role::Server)?;
            let client = cpus(Role::Client)?;
            total.merge(net::tcp::run(
                t,
                bitrate,
                server.as_ref(),
                client.as_ref(),
                duration,
                cancel,
                roles,
            )?);
        }
        if let Some(mc) = &m.mcast {
            let sender = cpus(Role::Sender)?;
            let receiver = cpus(Role::Receiver)?;
            total.merge(net::mcast::run(
                mc,
                sender.as_ref(),
                receiver.as_ref(),
                duration,
                cancel,
                roles,
            )?);
        }
        if let Some(h) = latency {
            let (measured, _report) = h
                .join()
                .map_err(|_| Error::workload("the latency probe", "it panicked"))??;
            total.merge(measured);
        }
        Ok(total)
    })
}

impl Measured {
    /// Adds another measure's values, series, tasks and raw outputs.
    pub fn merge(&mut self, other: Measured) {
        if other.context.is_some() {
            self.context = other.context;
        }
        self.values.extend(other.values);
        self.series.extend(other.series);
        self.tasks.extend(other.tasks);
        self.raw.extend(other.raw);
    }
}

fn seed_from_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ u64::from(std::process::id())
}

/// The machine, as an experiment records it.
fn machine(root: &Root) -> Result<Testbed> {
    let env = jitterlab_host::env::Environment::read(root)?;
    Ok(Testbed {
        hostname: root
            .read_line_opt("/proc/sys/kernel/hostname")?
            .unwrap_or_default(),
        kernel: env.kernel_release,
        cpus: jitterlab_host::cpus::online(root)?.to_string(),
        preemption: env.preemption,
        virtualization: env.virtualization,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `experiment` fails (status 1) when Ctrl-C ended it, a cell could not be restored
    /// or the machine differs from before; failed runs are the result's, not the status's.
    #[test]
    fn status_of_experiment() {
        let recipe = Recipe::parse(
            "t.toml",
            "name = \"t\"\n[[measure.command]]\nname = \"v\"\ncommand = \"x\"\nregex = \"(1)\"\nunit = \"u\"\nbetter = \"lower\"\n",
        )
        .unwrap();
        let failed_run = Run {
            seq: 0,
            cell: 0,
            round: 0,
            warmup: false,
            traced: false,
            values: Default::default(),
            series: vec![],
            error: Some("the command failed".into()),
            context: None,
        };
        let outcome = Outcome {
            report: ExperimentReport::new(
                &recipe.name,
                recipe.metrics(),
                recipe.cells(),
                recipe.baselines(),
                vec![failed_run],
                Config::default(),
            ),
            cancelled: false,
            recovered: vec!["undid an earlier experiment's IRQ 41".into()],
            restore_failures: vec![],
            left_over: vec![],
            traces: vec![],
            notes: vec!["a trace could not be read".into()],
        };
        assert_eq!(outcome.status(), Status::Ok);
        let cancelled = Outcome {
            cancelled: true,
            ..outcome
        };
        assert_eq!(cancelled.status(), Status::Failed);
        let not_restored = Outcome {
            cancelled: false,
            restore_failures: vec!["reverting the partition: EBUSY".into()],
            ..cancelled
        };
        assert_eq!(not_restored.status(), Status::Failed);
        let differs = Outcome {
            restore_failures: vec![],
            left_over: vec![Difference {
                what: "IRQ 41 smp_affinity_list".into(),
                before: "0-1".into(),
                after: "0".into(),
            }],
            ..not_restored
        };
        assert_eq!(differs.status(), Status::Failed);
    }
}
