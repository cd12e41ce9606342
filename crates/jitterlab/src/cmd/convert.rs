//! `jitterlab convert IN OUT` (or `IN -o OUT`): a .dat between versions 6 and 7, an LTTng
//! trace folder to .dat, or any trace to the Chrome trace-event JSON that ui.perfetto.dev
//! and chrome://tracing open.

use std::path::PathBuf;

use crate::app::convert::{convert, OutputFormat};
use clap::{Args, ValueEnum};
use jitterlab_trace::dat::Compression;

use crate::cli::{Color, JsonOut, TraceInput, Window};
use crate::exit::{Error, Exit, Result};
use crate::files::Files;
use crate::output::{emit, trace_notes};
use crate::progress::{self, file_name};

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum To {
    /// trace-cmd .dat version 6 (what KernelShark and every trace-cmd read).
    V6,
    /// trace-cmd .dat version 7, compressed (see --compression).
    V7,
    /// Chrome trace-event JSON for ui.perfetto.dev and chrome://tracing.
    Perfetto,
    /// Perfetto's protobuf trace (.pftrace): CPU tracks in ui.perfetto.dev, sched_slice and
    /// thread_state in trace processor.
    Pftrace,
}

/// Compression of a version 7 output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Compress {
    /// Zstandard (trace-cmd's default).
    Zstd,
    /// zlib.
    Zlib,
    /// None.
    None,
}

/// `jitterlab convert`.
#[derive(Args, Debug)]
#[command(
    after_help = "Without --format, the output format follows OUT: *.json is Perfetto JSON; *.pftrace and *.perfetto-trace Perfetto's protobuf trace; *.dat is the other .dat version than IN's (v6 -> v7, v7 -> v6), and v7 for an LTTng trace folder.\n\nExamples:\n  jitterlab convert trace.dat trace.json      # then open it in ui.perfetto.dev\n  jitterlab convert trace.dat -o trace.json   # the same\n  jitterlab convert trace.dat trace.pftrace   # CPU tracks; SQL in trace processor\n  jitterlab convert trace.v7.dat trace.v6.dat  # for an older trace-cmd or KernelShark\n  jitterlab convert trace.dat small.dat --format v7 --compression zstd\n  jitterlab convert trace.dat spike.json --cpu 1 --from 976.30 --to 976.35\n  jitterlab convert ~/lttng-traces/jl-20250101-120000 jl.dat --format v6   # an LTTng trace for trace-cmd"
)]
pub struct ConvertArgs {
    /// The trace: a .dat (v6, v7) or an LTTng trace folder, or for Perfetto output any
    /// text trace jitterlab reads.
    pub input: PathBuf,
    /// The file to write (written whole under a temporary name, then renamed over a
    /// regular file; copied into a FIFO or device, never renamed over one); or -o FILE.
    #[arg(value_name = "OUT", required_unless_present = "output_opt")]
    pub output: Option<PathBuf>,
    /// The file to write, given as the other commands take it (instead of OUT).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        conflicts_with = "output"
    )]
    pub output_opt: Option<PathBuf>,
    /// The output format (default: from OUT's name, see below).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<To>,
    /// Compression of a version 7 output.
    #[arg(long, value_enum, default_value = "zstd", value_name = "ALGO")]
    pub compression: Compress,
    /// For Perfetto output: only these CPUs and this window (intervals cut to it).
    #[command(flatten)]
    pub window: Window,
    #[command(flatten)]
    pub json: JsonOut,
    /// How the trace is read.
    #[command(flatten)]
    pub trace: TraceInput,
}

impl ConvertArgs {
    /// The files it reads and writes, for [`crate::files::guard`].
    pub fn files(&self) -> Files<'_> {
        let mut f = Files::default();
        f.input(&self.input).output_opt(self.out());
        f
    }

    /// OUT, or -o's file (clap requires one of them).
    fn out(&self) -> Option<&PathBuf> {
        self.output.as_ref().or(self.output_opt.as_ref())
    }
}

pub fn run(args: ConvertArgs, color: Color) -> Result {
    let filter = args.window.filter(None)?;
    let output = args
        .out()
        .ok_or_else(|| Error::usage("give the file to write: OUT, or -o FILE"))?
        .clone();
    let mut trace = args.trace.open(&args.input)?;
    trace.parse_symbols_behind();
    let compression = match args.compression {
        Compress::Zstd => Compression::Zstd,
        Compress::Zlib => Compression::Zlib,
        Compress::None => Compression::None,
    };
    let format_out = match args.format {
        Some(To::V6) => OutputFormat::V6,
        Some(To::V7) => OutputFormat::V7(compression),
        Some(To::Perfetto) => OutputFormat::Perfetto,
        Some(To::Pftrace) => OutputFormat::Pftrace,
        None => OutputFormat::from_name(&output, &trace, compression)?,
    };
    // A .dat copy keeps every buffer; Perfetto JSON is drawn from one.
    trace_notes(&trace, format_out.is_perfetto());
    let progress = progress::reading(
        &mut trace,
        format!("converting {}", file_name(&args.input)),
        !format_out.is_perfetto(),
    );
    let summary = convert(&trace, &args.input, &output, format_out, &filter)?;
    progress.finish();
    emit(&summary, &args.json, color)?;
    Ok(Exit::Ok)
}
