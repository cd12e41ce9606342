//! `jitterlab experiment`: A/B runs of a workload under affinity, partitioning and
//! load, with the statistics that say whether a difference is real.

use std::io::{self, Write};
use std::path::PathBuf;

use crate::app::view::reports_beside;
use clap::{Args, ValueEnum};
use jitterlab_experiment::recipe::{builtin, builtins, Order, Trace};
use jitterlab_experiment::Recipe;
use jitterlab_host::child::cancel_on_signals;
use jitterlab_host::partition::DEFAULT_STATE_DIR;
use jitterlab_host::Root;
use jitterlab_render::{ExportManager, Target};
use jitterlab_runner::{compare, parse_recipe, run_experiment, Options, Progress};

use crate::cli::{Color, JsonOut};
use crate::exit::{Error, Exit, Result};
use crate::files::Files;
use crate::output::{add_result, stdout_error};
use crate::progress;

/// `jitterlab experiment`.
#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: 0 when the runs ended and the machine is as before (failed runs are reported in the result), 1 when Ctrl-C ended it, a cell could not be restored or the machine differs from before, 2 when the recipe is malformed or names what this machine lacks (nothing ran).

Examples:
  jitterlab experiment --list                      the built-in recipes
  jitterlab experiment --show tcp-affinity > my.toml   a built-in recipe to edit
  jitterlab experiment --recipe partition -o part  isolate off/on x idle/cpu/io, saved in part/
  jitterlab experiment my.toml --rounds 5 --duration 3s --json=result.json
  jitterlab experiment --compare before/ after/    two saved experiments, offline"
)]
pub struct ExperimentArgs {
    /// The recipe file (TOML); see --show for the format.
    #[arg(value_name = "RECIPE.toml", conflicts_with_all = ["recipe", "list", "show", "compare"])]
    pub file: Option<PathBuf>,
    /// A built-in recipe: tcp-affinity, mcast-pinning, partition, latency-hunt.
    #[arg(long, value_name = "NAME")]
    pub recipe: Option<String>,
    /// List the built-in recipes.
    #[arg(long)]
    pub list: bool,
    /// Print a built-in recipe as a file to copy and edit.
    #[arg(long, value_name = "NAME")]
    pub show: Option<String>,
    /// Compare two saved experiments (-o DIR) offline: the second's runs against the
    /// first's, cell by cell.
    #[arg(long, num_args = 2, value_names = ["OLD_DIR", "NEW_DIR"])]
    pub compare: Option<Vec<PathBuf>>,
    /// Measured runs per cell (the recipe's `rounds`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=10000))]
    pub rounds: Option<u32>,
    /// Length of each run: 10s, 2m (the recipe's `duration`).
    #[arg(long, value_parser = jitterlab_units::parse_duration_ns)]
    pub duration: Option<u64>,
    /// Warm-up runs per cell, discarded (the recipe's `warmup`).
    #[arg(long, value_name = "N")]
    pub warmup: Option<u32>,
    /// The order of the runs (the recipe's `order`; interleaved by default).
    #[arg(long, value_enum)]
    pub order: Option<OrderArg>,
    /// Which runs are traced (the recipe's `trace`).
    #[arg(long, value_enum)]
    pub trace: Option<TraceArg>,
    /// The seed of the run order and the statistics (default: the recipe's, else drawn
    /// and recorded).
    #[arg(long)]
    pub seed: Option<u64>,
    /// The noise threshold of the verdicts, percent (the recipe's `noise`, 2).
    #[arg(long, value_name = "PERCENT")]
    pub noise: Option<f64>,
    /// Stop before all the rounds once every cell's median of every metric is known to
    /// this precision, percent: the half-width of its 95 % interval over the median (the
    /// recipe's `precision`; at least 5 rounds run).
    #[arg(long, value_name = "PERCENT")]
    pub precision: Option<f64>,
    /// Save the recipe, every run's raw output, the traces and the result in DIR (a new
    /// or empty directory: an earlier experiment's is never written over).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub json: JsonOut,
    /// Also write the result as an offline HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Where the records of what a cell changed live (the partition journal, the IRQ
    /// masks), for the undo after a crash.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
}

/// `--order`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OrderArg {
    /// A fresh random order of the cells in every round.
    Interleaved,
    /// The same as interleaved.
    Random,
    /// All rounds of one cell, then the next.
    Sequential,
    /// Rounds in the cells' order, then reversed, alternately.
    Abba,
}

/// `--trace`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TraceArg {
    /// The first measured run of each cell.
    First,
    /// Every measured run.
    All,
    /// None.
    None,
}

impl ExperimentArgs {
    /// The files it reads and writes, for [`crate::files::guard`].
    pub fn files(&self) -> Files<'_> {
        let mut f = Files::default();
        f.input_opt(self.file.as_ref());
        // A saved experiment's files, which --json or --html could otherwise name.
        for c in self.compare.iter().flatten() {
            f.input(c);
            for name in jitterlab_runner::SAVED_FILES {
                f.input_owned(c.join(name));
            }
        }
        f.output_dir_opt(self.output.as_ref())
            .output_opt(self.html.as_ref());
        f
    }
}

pub fn run(root: &Root, args: ExperimentArgs, color: Color) -> Result {
    // Written, not printed: a full or closed stdout is an error (or a quiet end), never
    // a panic.
    if args.list {
        let mut out = io::stdout().lock();
        for b in builtins() {
            let description = b.recipe().map(|r| r.description).unwrap_or_default();
            writeln!(out, "{:<14} {description}", b.name).map_err(stdout_error)?;
        }
        out.flush().map_err(stdout_error)?;
        return Ok(Exit::Ok);
    }
    if let Some(name) = &args.show {
        let b = builtin(name).ok_or_else(|| unknown_recipe(name))?;
        let mut out = io::stdout().lock();
        out.write_all(b.text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(stdout_error)?;
        return Ok(Exit::Ok);
    }
    if let Some(dirs) = &args.compare {
        let compared = compare(&dirs[0], &dirs[1])?;
        for d in &compared.machines_differ {
            eprintln!("jitterlab: warning: the machines differ: {d}");
        }
        write(&compared.report, &args.json, args.html.as_ref(), color)?;
        return Ok(Exit::Ok);
    }
    let (name, text) = match (&args.file, &args.recipe) {
        (Some(path), _) => (
            path.display().to_string(),
            std::fs::read_to_string(path)
                .map_err(|e| Error::usage(format!("{}: {e}", path.display())))?,
        ),
        (None, Some(name)) => {
            let b = builtin(name).ok_or_else(|| unknown_recipe(name))?;
            (format!("<built-in {name}>"), b.text.to_string())
        }
        (None, None) => {
            return Err(Error::usage(
                "give a recipe file or --recipe NAME (--list shows the built-in ones)",
            ))
        }
    };
    // Checked against this machine before anything runs.
    let mut recipe = parse_recipe(root, &name, &text)?;
    override_recipe(&mut recipe, &args)?;
    let options = Options {
        state_dir: args.state_dir.clone(),
        out_dir: args.output.clone(),
        seed: args.seed,
    };
    // Ctrl-C from here on ends the current run, restores its cell and reports what ran.
    let cancel = cancel_on_signals();
    let mut line: Option<progress::Progress> = None;
    let outcome = run_experiment(root, &recipe, &text, &options, &cancel, |p| {
        if let Progress::Starts { run, of, label } = p {
            let kind = if run.warmup { " (warm-up)" } else { "" };
            line.get_or_insert_with(|| {
                progress::Progress::steps(format!("experiment {}", recipe.name), Some(of as u64))
            })
            .step(
                run.seq as u64,
                format!("run {}: {label}{kind}", run.seq + 1),
            );
        }
    })?;
    drop(line);
    for r in &outcome.recovered {
        eprintln!("jitterlab: {r}");
    }
    for n in &outcome.notes {
        eprintln!("jitterlab: warning: {n}");
    }
    // Each traced run's report beside its trace, linked from the experiment's page.
    for failed in reports_beside(&outcome.traces) {
        eprintln!("jitterlab: warning: {failed}");
    }
    write(&outcome.report, &args.json, args.html.as_ref(), color)?;
    if outcome.cancelled {
        eprintln!("jitterlab: interrupted: the results are those of the runs that ended");
    }
    for f in &outcome.restore_failures {
        eprintln!("jitterlab: error: could not restore: {f}");
    }
    for d in &outcome.left_over {
        eprintln!(
            "jitterlab: error: the machine differs from before the experiment: {}: {} -> {}",
            d.what, d.before, d.after
        );
    }
    Ok(outcome.status().into())
}

fn unknown_recipe(name: &str) -> Error {
    let names: Vec<&str> = builtins().iter().map(|b| b.name).collect();
    Error::usage(format!(
        "no built-in recipe {name:?} (built-in: {})",
        names.join(", ")
    ))
}

/// The command line's settings over the recipe's.
fn override_recipe(recipe: &mut Recipe, args: &ExperimentArgs) -> Result<()> {
    if let Some(n) = args.rounds {
        recipe.rounds = n;
    }
    if let Some(d) = args.duration {
        recipe.duration_ns = d;
    }
    if let Some(w) = args.warmup {
        recipe.warmup = w;
    }
    if let Some(o) = args.order {
        recipe.order = match o {
            OrderArg::Interleaved | OrderArg::Random => Order::Interleaved,
            OrderArg::Sequential => Order::Sequential,
            OrderArg::Abba => Order::Abba,
        };
    }
    if let Some(t) = args.trace {
        recipe.trace = match t {
            TraceArg::First => Trace::First,
            TraceArg::All => Trace::All,
            TraceArg::None => Trace::None,
        };
    }
    if let Some(n) = args.noise {
        if !(0.0..100.0).contains(&n) {
            return Err(Error::usage(format!(
                "--noise {n}: expected a percentage from 0 to 100"
            )));
        }
        recipe.noise = n / 100.0;
    }
    if let Some(p) = args.precision {
        if !(0.01..50.0).contains(&p) {
            return Err(Error::usage(format!(
                "--precision {p}: expected a percentage from 0.01 to 50"
            )));
        }
        if recipe.order == Order::Sequential {
            return Err(Error::usage(
                "--precision: stopping early needs rounds of every cell (--order interleaved or abba)",
            ));
        }
        recipe.precision = Some(p / 100.0);
    }
    Ok(())
}

/// The result as `--json` asks ([`add_result`]), and the HTML where asked.
fn write(
    report: &jitterlab_experiment::ExperimentReport,
    json: &JsonOut,
    html: Option<&PathBuf>,
    color: Color,
) -> Result<()> {
    let mut outputs = ExportManager::new();
    add_result(&mut outputs, report, json, color);
    if let Some(path) = html {
        outputs.add(
            jitterlab_render::Html::titled(&report.name),
            report,
            Target::file(path),
        );
    }
    outputs.write_all()?;
    Ok(())
}
