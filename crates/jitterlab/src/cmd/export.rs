//! `jitterlab export --parquet DIR INPUT...`: traces and results as Parquet tables,
//! hive-style, for DuckDB and Spark across many machines (issue 17).

use std::path::PathBuf;

use clap::Args;
use jitterlab_parquet::{
    check_partitions, export_result, export_trace, is_json_result, origin_of_result,
    origin_of_trace, read_result, ExportReport, ExportSummary, OriginOptions,
};

use crate::cli::{Color, JsonOut, TraceInput};
use crate::exit::{Error, Exit, Result};
use crate::files::Files;
use crate::output::{emit, trace_notes};
use crate::progress::{self, file_name};

/// `jitterlab export`.
#[derive(Args, Debug)]
#[command(
    after_help = "Each input is a trace (.dat, or text jitterlab reads) or a saved `latency --json`, `experiment --json` or `audit --json` result. Every table is written to DIR/TABLE/host=HOST/run_id=RUN/part.parquet, so the exports of many machines under one DIR are one dataset; the tables and columns are in docs/parquet.md.\n\nExamples:\n  jitterlab export --parquet fleet/ trace.dat\n  jitterlab export --parquet fleet/ --host board7 latency.json\n  duckdb -c \"SELECT host, count(*) FROM 'fleet/sched_slice/**/*.parquet' GROUP BY host\""
)]
pub struct ExportArgs {
    /// The directory to write the tables under (created if missing). A host and run it
    /// already holds is refused, unless --replace.
    #[arg(long, value_name = "DIR")]
    pub parquet: PathBuf,
    /// Write again a host and run that DIR already holds: its earlier rows, in every
    /// table, are replaced by this export's.
    #[arg(long)]
    pub replace: bool,
    /// Traces and result files.
    #[arg(value_name = "INPUT", required = true)]
    pub inputs: Vec<PathBuf>,
    /// The host the inputs came from (default: what the file records: the host name of a
    /// `jitterlab record` trace, of a latency run, an experiment or an audit; trace-cmd's
    /// uname).
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// The run id (default: minted from the input: its kind, its start in UTC when it
    /// records one, and a hash of its content, e.g. trace-20261129T062548Z-3fa9c2d1); one
    /// input only.
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// The kernel release (default: what the file records).
    #[arg(long, value_name = "RELEASE")]
    pub kernel: Option<String>,
    /// How the trace is read.
    #[command(flatten)]
    pub trace: TraceInput,
    #[command(flatten)]
    pub json: JsonOut,
}

impl ExportArgs {
    /// The files it reads and writes, for [`crate::files::guard`].
    pub fn files(&self) -> Files<'_> {
        let mut f = Files::default();
        for i in &self.inputs {
            f.input(i);
        }
        f.output_dir(&self.parquet);
        f
    }
}

/// An input as opened to find its origin, and then exported.
enum Opened {
    /// A saved `latency`, `experiment` or `audit` result.
    Result(serde_json::Value),
    /// A trace.
    Trace(jitterlab_trace::Trace),
}

pub fn run(args: ExportArgs, color: Color) -> Result {
    if args.run.is_some() && args.inputs.len() > 1 {
        return Err(Error::usage(
            "--run names one input's run; give it with one INPUT at a time",
        ));
    }
    let opts = OriginOptions {
        host: args.host.clone(),
        run: args.run.clone(),
        kernel: args.kernel.clone(),
    };
    // Every input's origin first, so that a missing or unusable name, two inputs of one
    // partition, or a partition the dataset holds already fail before any export. Each
    // input is opened (or read) once: the export reads what was opened here.
    let mut opened = Vec::with_capacity(args.inputs.len());
    for input in &args.inputs {
        opened.push(if is_json_result(input)? {
            let json = read_result(input)?;
            let origin = origin_of_result(&json, input, &opts)?;
            (Opened::Result(json), origin)
        } else {
            let trace = args.trace.open(input)?;
            // The first trace's symbols are parsed while the others are opened and the
            // dataset is checked; each next one's when its export begins (not all at
            // once: each table is held until its trace is exported).
            if !opened.iter().any(|(o, _)| matches!(o, Opened::Trace(_))) {
                trace.parse_symbols_behind();
            }
            let origin = origin_of_trace(&trace, input, &opts)?;
            (Opened::Trace(trace), origin)
        });
    }
    let planned: Vec<_> = args
        .inputs
        .iter()
        .map(PathBuf::as_path)
        .zip(opened.iter().map(|(_, origin)| origin))
        .collect();
    check_partitions(&args.parquet, &planned, args.replace)?;
    let mut done: Vec<ExportSummary> = Vec::new();
    for (input, (input_read, origin)) in args.inputs.iter().zip(opened) {
        let summary = match input_read {
            Opened::Result(json) => export_result(input, &json, &origin, &args.parquet)?,
            Opened::Trace(mut trace) => {
                // Started when it was opened, for the first trace.
                trace.parse_symbols_behind();
                trace_notes(&trace, true);
                let bar =
                    progress::reading(&mut trace, format!("exporting {}", file_name(input)), false);
                let s = export_trace(&trace, &input.display().to_string(), &origin, &args.parquet)?;
                bar.finish();
                s
            }
        };
        done.push(summary);
    }
    let report = ExportReport {
        dir: args.parquet.clone(),
        exports: done,
    };
    emit(&report, &args.json, color)?;
    Ok(Exit::Ok)
}
