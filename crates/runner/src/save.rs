//! An experiment's directory (`-o DIR`) and the offline comparison of two of them.
//!
//! ```text
//! DIR/recipe.toml          the recipe as it ran
//! DIR/machine.json         the machine (host name, kernel, CPUs, preemption)
//! DIR/runs.json            every run, warm-up runs included, with values and series
//! DIR/result.json          the whole result (the model `--json` renders)
//! DIR/runs/NNN/FILE        each run's raw outputs (iperf3's JSON, a command's output)
//! DIR/traces/run-NNN.dat   the traced runs' recordings
//! ```

use std::fs;
use std::path::{Path, PathBuf};

use jitterlab_experiment::explain::Testbed;
use jitterlab_experiment::stats::Config;
use jitterlab_experiment::{ExperimentReport, Recipe, Run};
use serde::Serialize;

use crate::error::{Error, Result};

/// The files of an experiment's directory that `--compare` reads.
pub const SAVED_FILES: [&str; 4] = ["recipe.toml", "machine.json", "runs.json", "result.json"];

/// An experiment's directory being written.
#[derive(Clone, Debug)]
pub struct Saved {
    dir: PathBuf,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::Io {
        path: path.display().to_string(),
        cause: e,
    }
}

impl Saved {
    /// Refuses a `dir` that holds anything already (an earlier experiment's runs and
    /// traces are never written over): it must not exist, or be empty.
    pub fn check(dir: &Path) -> Result<()> {
        let Ok(mut entries) = fs::read_dir(dir) else {
            if dir.exists() && !dir.is_dir() {
                return Err(Error::Invalid(format!(
                    "-o {}: not a directory; give a new directory for the experiment",
                    dir.display()
                )));
            }
            return Ok(());
        };
        if let Some(Ok(first)) = entries.next() {
            let earlier = ["result.json", "runs.json", "recipe.toml"]
                .iter()
                .find(|f| dir.join(f).exists())
                .map_or_else(
                    || format!("it holds {}", first.file_name().to_string_lossy()),
                    |f| format!("it holds an earlier experiment ({f})"),
                );
            return Err(Error::Invalid(format!(
                "-o {}: the directory is not empty ({earlier}); give a new or empty directory: an experiment never writes over another's files",
                dir.display()
            )));
        }
        Ok(())
    }

    /// Creates `dir` (it must not exist, or be empty: [`Saved::check`]) and writes the
    /// recipe into it.
    pub fn create(dir: &Path, recipe_text: &str) -> Result<Saved> {
        Saved::check(dir)?;
        for sub in ["", "runs", "traces"] {
            let d = dir.join(sub);
            fs::create_dir_all(&d).map_err(io_err(&d))?;
        }
        let path = dir.join("recipe.toml");
        fs::write(&path, recipe_text).map_err(io_err(&path))?;
        Ok(Saved {
            dir: dir.to_path_buf(),
        })
    }

    /// Where run `seq`'s trace goes.
    pub fn trace_path(&self, seq: usize) -> PathBuf {
        self.dir.join("traces").join(format!("run-{seq:03}.dat"))
    }

    /// `path` relative to the directory, when it is inside it.
    pub fn relative(&self, path: &Path) -> Option<String> {
        path.strip_prefix(&self.dir)
            .ok()
            .map(|p| p.display().to_string())
    }

    /// Writes one raw output of run `seq`.
    pub fn write_raw(&self, seq: usize, name: &str, bytes: &[u8]) -> Result<()> {
        let dir = self.dir.join("runs").join(format!("{seq:03}"));
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        // A name is the runner's own (a measure's name and a suffix); keep it a file name.
        let name: String = name
            .chars()
            .map(|c| if c == '/' || c == '\0' { '_' } else { c })
            .collect();
        let path = dir.join(name);
        fs::write(&path, bytes).map_err(io_err(&path))
    }

    /// Writes `value` as pretty JSON into `name`.
    pub fn write_json(&self, name: &str, value: &impl Serialize) -> Result<()> {
        let path = self.dir.join(name);
        let text = serde_json::to_vec_pretty(value).map_err(|e| Error::Io {
            path: path.display().to_string(),
            cause: e.into(),
        })?;
        fs::write(&path, text).map_err(io_err(&path))
    }
}

/// Two saved experiments compared.
#[derive(Debug)]
pub struct Compared {
    /// The comparison as an experiment: each cell of the first directory that the
    /// second also has, twice (`LABEL @ DIR1` the baseline, `LABEL @ DIR2`), with
    /// their runs; the statistics as for one experiment.
    pub report: ExperimentReport,
    /// How the two machines differ, in words (empty when they look the same).
    pub machines_differ: Vec<String>,
}

struct Loaded {
    name: String,
    recipe: Recipe,
    runs: Vec<Run>,
    machine: Option<Testbed>,
}

fn load(dir: &Path) -> Result<Loaded> {
    let read = |name: &str| -> Result<String> {
        let path = dir.join(name);
        fs::read_to_string(&path).map_err(io_err(&path))
    };
    let recipe_path = dir.join("recipe.toml");
    let recipe = Recipe::parse(&recipe_path.display().to_string(), &read("recipe.toml")?)
        .map_err(|e| Error::Invalid(e.to_string()))?;
    let runs_path = dir.join("runs.json");
    let runs: Vec<Run> = serde_json::from_str(&read("runs.json")?).map_err(|e| {
        Error::Invalid(format!(
            "{}:{}:{}: {e}",
            runs_path.display(),
            e.line(),
            e.column()
        ))
    })?;
    let machine = read("machine.json")
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let name = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok(Loaded {
        name,
        recipe,
        runs,
        machine,
    })
}

/// Compares the experiments saved in `old` and `new` (`-o DIR`), offline: every
/// cell both have, `new`'s runs against `old`'s, on the metrics both measured.
pub fn compare(old: &Path, new: &Path) -> Result<Compared> {
    let a = load(old)?;
    let b = load(new)?;
    let (name_a, name_b) = if a.name == b.name {
        (old.display().to_string(), new.display().to_string())
    } else {
        (a.name.clone(), b.name.clone())
    };
    let cells_a = a.recipe.cells();
    let cells_b = b.recipe.cells();
    let metrics_b = b.recipe.metrics();
    let metrics: Vec<_> = a
        .recipe
        .metrics()
        .into_iter()
        .filter(|m| metrics_b.iter().any(|x| x.name == m.name))
        .collect();
    if metrics.is_empty() {
        return Err(Error::Invalid(format!(
            "{} and {} measured nothing in common",
            old.display(),
            new.display()
        )));
    }
    let mut cells = Vec::new();
    let mut baselines = Vec::new();
    let mut runs = Vec::new();
    let offset = a.runs.iter().map(|r| r.seq + 1).max().unwrap_or(0);
    for ca in &cells_a {
        let Some(cb) = cells_b.iter().find(|c| c.label == ca.label) else {
            continue;
        };
        let ia = cells.len();
        for (cell, dir, src, shift) in [(ca, &name_a, &a.runs, 0), (cb, &name_b, &b.runs, offset)] {
            let index = cells.len();
            let mut c = cell.clone();
            c.index = index;
            c.label = format!("{} @ {dir}", cell.label);
            cells.push(c);
            baselines.push(ia);
            runs.extend(src.iter().filter(|r| r.cell == cell.index).map(|r| Run {
                cell: index,
                seq: r.seq + shift,
                ..r.clone()
            }));
        }
    }
    if cells.is_empty() {
        return Err(Error::Invalid(format!(
            "{} and {} have no cell in common (cells are matched by their labels)",
            old.display(),
            new.display()
        )));
    }
    runs.sort_by_key(|r| r.seq);
    let config = Config {
        seed: 0,
        noise: a.recipe.noise,
        ..Config::default()
    };
    let mut report = ExperimentReport::new(
        &format!("{} vs {}", a.recipe.name, b.recipe.name),
        metrics,
        cells,
        baselines,
        runs,
        config,
    );
    let machines_differ = match (&a.machine, &b.machine) {
        (Some(x), Some(y)) => machine_differences(x, y),
        _ => vec!["a directory has no machine.json: the machines cannot be compared".into()],
    };
    report.machine = a.machine;
    report.answers = jitterlab_experiment::answers::answer(&report, &a.recipe.measures);
    Ok(Compared {
        report,
        machines_differ,
    })
}

fn machine_differences(a: &Testbed, b: &Testbed) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |what: &str, x: &str, y: &str| {
        if x != y {
            out.push(format!("{what}: {x} vs {y}"));
        }
    };
    check("host", &a.hostname, &b.hostname);
    check("kernel", &a.kernel, &b.kernel);
    check("online CPUs", &a.cpus, &b.cpus);
    check("preemption", &a.preemption, &b.preemption);
    check(
        "virtualization",
        a.virtualization.as_deref().unwrap_or("none"),
        b.virtualization.as_deref().unwrap_or("none"),
    );
    out
}
