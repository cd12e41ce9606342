//! `jitterlab convert IN OUT`: a .dat between versions 6 and 7, or any trace to the Chrome
//! trace-event JSON that ui.perfetto.dev and chrome://tracing open.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use jitterlab_analyze::{Filter, Filtered, Machine, MachineOptions};
use jitterlab_render::{Conversion, PerfettoWriter};
use jitterlab_trace::dat::{copy_to_v6, copy_to_v7, Compression, Spool};
use jitterlab_trace::Trace;

use super::analyze::Window;
use crate::cli::Color;
use crate::output::{emit, format};
use crate::EXIT_OK;

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum To {
    /// trace-cmd .dat version 6 (what KernelShark and every trace-cmd read).
    V6,
    /// trace-cmd .dat version 7, compressed (see --compression).
    V7,
    /// Chrome trace-event JSON for ui.perfetto.dev and chrome://tracing.
    Perfetto,
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
    after_help = "Without --format, the output format follows OUT: *.json is Perfetto JSON; *.dat is the other .dat version than IN's (v6 -> v7, v7 -> v6).\n\nExamples:\n  jitterlab convert trace.dat trace.json      # then open it in ui.perfetto.dev\n  jitterlab convert trace.v7.dat trace.v6.dat  # for an older trace-cmd or KernelShark\n  jitterlab convert trace.dat small.dat --format v7 --compression zstd\n  jitterlab convert trace.dat spike.json --cpu 1 --from 976.30 --to 976.35"
)]
pub struct Convert {
    /// The trace: a .dat (v6, v7), or for Perfetto output any text trace jitterlab reads.
    pub input: PathBuf,
    /// The file to write (written whole under a temporary name, then renamed).
    pub output: PathBuf,
    /// The output format (default: from OUT's name, see below).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<To>,
    /// Compression of a version 7 output.
    #[arg(long, value_enum, default_value = "zstd", value_name = "ALGO")]
    pub compression: Compress,
    /// For Perfetto output: only these CPUs and this window (intervals cut to it).
    #[command(flatten)]
    pub window: Window,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Skip undecodable records and lines, counting them, instead of stopping.
    #[arg(long)]
    pub lenient: bool,
}

pub fn run(args: Convert, color: Color) -> anyhow::Result<u8> {
    let filter = args.window.filter(None)?;
    let trace = Trace::open(&args.input, args.lenient)?;
    let to = match args.format {
        Some(to) => to,
        None => default_format(&args.output, &trace)?,
    };
    if to != To::Perfetto && !filter.is_empty() {
        return Err(jitterlab_host::Error::Invalid(
            "--cpu, --from and --to apply to Perfetto output only; a .dat copy is whole".into(),
        )
        .into());
    }
    let tmp = temporary(&args.output);
    let result = write(&args, &trace, to, &filter, &tmp);
    let (output_format, perfetto) = match result {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    std::fs::rename(&tmp, &args.output).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::anyhow!(
            "cannot rename {} to {}: {e}",
            tmp.display(),
            args.output.display()
        )
    })?;
    let bytes = std::fs::metadata(&args.output)?.len();
    let summary = Conversion {
        input: args.input.display().to_string(),
        input_format: trace.format(),
        output: args.output.display().to_string(),
        output_format,
        bytes,
        perfetto,
    };
    emit(&summary, format(args.json, color))?;
    Ok(EXIT_OK)
}

/// The format OUT's name asks for.
fn default_format(out: &Path, trace: &Trace) -> anyhow::Result<To> {
    let name = out.to_string_lossy();
    if name.ends_with(".json") {
        return Ok(To::Perfetto);
    }
    match trace {
        Trace::Dat(d) if name.ends_with(".dat") => Ok(if d.info().version == 6 {
            To::V7
        } else {
            To::V6
        }),
        _ => anyhow::bail!(
            "{}: cannot tell the output format from the name; give --format v6, v7 or perfetto",
            out.display()
        ),
    }
}

/// `OUT` -> `OUT.partial-PID` in the same directory (so the rename is atomic).
fn temporary(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".partial-{}", std::process::id()));
    out.with_file_name(name)
}

fn write(
    args: &Convert,
    trace: &Trace,
    to: To,
    filter: &Filter,
    tmp: &Path,
) -> anyhow::Result<(String, Option<jitterlab_render::PerfettoCounts>)> {
    match (to, trace) {
        (To::Perfetto, _) => {
            let file = File::create(tmp)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", tmp.display()))?;
            let writer = PerfettoWriter::new(BufWriter::with_capacity(1 << 20, file))?;
            let mut sink = Filtered::new(filter.clone(), writer);
            let mut machine = Machine::new(MachineOptions::default());
            machine.replay(&mut *trace.events()?, &mut sink)?;
            let (_, counts) = sink
                .inner
                .finish()
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", tmp.display()))?;
            Ok(("Chrome trace-event JSON (Perfetto)".into(), Some(counts)))
        }
        (To::V6 | To::V7, Trace::Dat(dat)) => {
            // Pages wait in files next to the output, not in memory.
            let dir = tmp
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let spool = Spool::Dir(dir.to_path_buf());
            if to == To::V6 {
                copy_to_v6(dat, tmp, spool)?;
                Ok(("trace-cmd .dat v6".into(), None))
            } else {
                let c = match args.compression {
                    Compress::Zstd => Compression::Zstd,
                    Compress::Zlib => Compression::Zlib,
                    Compress::None => Compression::None,
                };
                copy_to_v7(dat, tmp, spool, c)?;
                Ok((format!("trace-cmd .dat v7 ({})", c.name()), None))
            }
        }
        (_, Trace::Text { .. }) => anyhow::bail!(
            "{}: a text trace has no ring-buffer pages to write a .dat from; convert it --format perfetto, or record a .dat with `jitterlab record`",
            args.input.display()
        ),
    }
}
