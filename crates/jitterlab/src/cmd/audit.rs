//! `jitterlab audit`.

use std::path::{Path, PathBuf};

use crate::app::view::reports_beside;
use clap::Args;
use jitterlab_audit::{audit, AuditRequest, KeepTraces, Mode};
use jitterlab_host::child::cancel_on_signals;
use jitterlab_host::Root;
use jitterlab_render::{AuditSummary, ExportManager, Target};

use crate::cli::{cpu_list, Color, JsonOut};
use crate::exit::{Error, Result};
use crate::files::Files;
use crate::output::add_result;

/// `jitterlab audit`.
#[derive(Args, Debug)]
#[command(
    after_help = "Without --quick or --duration, the latency probe runs 10 s idle and 10 s under a load on the RT CPUs, and the noise probe 5 s on each (about 30 s for one RT CPU); --quick takes 2 s, 2 s and 1 s. Without root, or with --root, only the static checks run.\n\nWithout --verbose it prints a screen: the verdict per RT CPU, the first recommendations, the measured tables, and what the verdict means.\n\nExit status: 0 when no RT CPU is unfit (verdict READY or TUNE), 3 when one is (UNFIT: the audit's answer for a CI gate, not a failure), 1 when the audit failed, 2 on a usage error.\n\nExamples:\n  jitterlab audit --quick\n  jitterlab audit --cpus 2-3 --json=before.json\n  jitterlab audit --cpus 2-3 --compare before.json"
)]
pub struct AuditArgs {
    /// The CPUs meant for real-time work (default: the isolated ones, else the last CPU).
    #[arg(long, value_name = "RT_CPUS")]
    pub cpus: Option<String>,
    /// Measure briefly: 2 s idle, 2 s loaded, 1 s of noise per RT CPU.
    #[arg(long, conflicts_with = "duration")]
    pub quick: bool,
    /// Each latency phase this long (10s, 1m); the noise probe half of it per RT CPU.
    #[arg(long, value_name = "D", value_parser = jitterlab_units::parse_duration_ns)]
    pub duration: Option<u64>,
    /// Print the whole audit: every finding with its evidence, why and fix, every
    /// recommendation, the blamed spikes and the noise traced (without it: the
    /// verdicts, the first recommendations and the measured tables, a screen).
    #[arg(short, long)]
    pub verbose: bool,
    /// Only the static checks: measure nothing.
    #[arg(long = "static", conflicts_with_all = ["quick", "duration"])]
    pub static_only: bool,
    #[command(flatten)]
    pub json: JsonOut,
    /// Write the audit's page of the HTML report to FILE (web/audit.js: the verdicts,
    /// the findings by family, the recommendations, what was measured).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// List what changed since an earlier audit's JSON.
    #[arg(long, value_name = "OLD.json")]
    pub compare: Option<PathBuf>,
    /// Keep the traces of the measured phases in DIR (idle.dat, loaded.dat,
    /// noise-cpuN.dat), each with its report beside it (T.dat.html). With --html, they
    /// are kept beside the page in STEM-traces/ unless this names another place, and
    /// the page links each blamed spike and noise gap into its trace's timeline.
    #[arg(long, value_name = "DIR")]
    pub keep_traces: Option<PathBuf>,
}

impl AuditArgs {
    /// The files it reads and writes, for [`crate::files::guard`].
    pub fn files(&self) -> Files<'_> {
        let mut f = Files::default();
        f.input_opt(self.compare.as_ref())
            .output_opt(self.html.as_ref())
            .output_dir_opt(self.keep_traces.as_ref());
        f
    }
}

pub fn run(root: &Root, args: AuditArgs, color: Color) -> Result {
    let cpus = args
        .cpus
        .as_deref()
        .map(|c| cpu_list("--cpus", c))
        .transpose()?;
    let mode = match (args.static_only, args.quick, args.duration) {
        (true, _, _) => Mode::Static,
        (_, true, _) => Mode::Quick,
        (_, _, Some(d)) => Mode::Full(d),
        _ => Mode::Full(10_000_000_000),
    };
    let keep_traces = keep_traces(&args);
    let cancel = cancel_on_signals();
    // Its steps (static checks, each probe) on the progress line.
    let line = crate::progress::Progress::steps("audit", None);
    let mut steps = 0;
    let report = audit(
        root,
        &AuditRequest {
            cpus,
            mode,
            compare: args.compare.clone(),
            keep_traces: keep_traces.clone(),
        },
        &cancel,
        |step| {
            line.step(steps, step);
            steps += 1;
        },
    )
    .map_err(|e| match e {
        jitterlab_audit::Error::Invalid(m) => Error::usage(m),
        e => Error::Failed(e.into()),
    })?;
    line.finish();
    if let (Some(keep), Some(m)) = (&keep_traces, &report.measured) {
        // Each kept trace's report beside it, linked from the audit's page.
        let kept: Vec<PathBuf> = m
            .latency
            .iter()
            .filter_map(|p| p.trace.as_ref())
            .chain(m.noise.iter().filter_map(|n| n.trace.as_ref()))
            .filter_map(|t| Path::new(t).file_name().map(|f| keep.dir.join(f)))
            .collect();
        for failed in reports_beside(&kept) {
            eprintln!("jitterlab: warning: {failed}");
        }
    }
    let summary = AuditSummary(&report);
    let mut outputs = ExportManager::new();
    if args.verbose {
        add_result(&mut outputs, &report, &args.json, color);
    } else {
        add_result(&mut outputs, &summary, &args.json, color);
    }
    if let Some(path) = &args.html {
        outputs.add(
            jitterlab_render::Html::titled("jitterlab audit"),
            &report,
            Target::file(path),
        );
    }
    outputs.write_all()?;
    Ok(report.status().into())
}

/// Where the traces are kept: `--keep-traces DIR`, else `STEM-traces/` beside the
/// `--html` page (named relative to it), else nowhere.
fn keep_traces(args: &AuditArgs) -> Option<KeepTraces> {
    if let Some(dir) = &args.keep_traces {
        let shown = match args.html.as_deref().and_then(Path::parent) {
            // Relative to the page when it is inside the page's directory.
            Some(page_dir) => dir
                .strip_prefix(page_dir)
                .unwrap_or(dir)
                .display()
                .to_string(),
            None => dir.display().to_string(),
        };
        return Some(KeepTraces {
            dir: dir.clone(),
            shown,
        });
    }
    let page = args.html.as_deref()?;
    let stem = page.file_stem()?.to_string_lossy();
    let name = format!("{stem}-traces");
    Some(KeepTraces {
        dir: page.with_file_name(&name),
        shown: name,
    })
}
