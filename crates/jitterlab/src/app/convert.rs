//! `jitterlab convert`: a trace to the other .dat version, to Perfetto JSON or to
//! Perfetto's protobuf trace (.pftrace), written whole under a temporary name and then
//! renamed: the trace's one pass into render's writers; render's [`Conversion`] says
//! what was written.

use std::ops::ControlFlow;
use std::path::Path;

use jitterlab_analyze::engine::{self, PassOptions, Tables};
use jitterlab_analyze::{EventFilter, Filter, Filtered};
use jitterlab_render::{
    Conversion, PerfettoCounts, PerfettoWriter, PftraceCounts, PftraceTables, PftraceWriter,
};
use jitterlab_trace::dat::{copy_to_v6, copy_to_v7, Compression, Spool};
use jitterlab_trace::output::OutputFile;
use jitterlab_trace::{write_behind, Trace};

use super::Error;

/// What `convert` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// trace-cmd .dat version 6.
    V6,
    /// trace-cmd .dat version 7, with this compression.
    V7(Compression),
    /// Chrome trace-event JSON for ui.perfetto.dev and chrome://tracing.
    Perfetto,
    /// Perfetto's protobuf trace, the ftrace events as its own ftrace event bundles.
    Pftrace,
}

impl OutputFormat {
    /// True for the formats drawn from the events of one buffer, which `filter` applies
    /// to (Perfetto JSON and protobuf); false for a .dat copy.
    pub fn is_perfetto(self) -> bool {
        matches!(self, OutputFormat::Perfetto | OutputFormat::Pftrace)
    }

    /// The format `out`'s name asks for: `*.json` is Perfetto JSON; `*.pftrace` and
    /// `*.perfetto-trace` Perfetto's protobuf trace; `*.dat` is the other
    /// .dat version than the input's (v6 -> v7 with `compression`, v7 -> v6), and
    /// version 7 with `compression` for an LTTng trace.
    pub fn from_name(
        out: &Path,
        trace: &Trace,
        compression: Compression,
    ) -> Result<OutputFormat, Error> {
        let name = out.to_string_lossy();
        if name.ends_with(".json") {
            return Ok(OutputFormat::Perfetto);
        }
        if name.ends_with(".pftrace") || name.ends_with(".perfetto-trace") {
            return Ok(OutputFormat::Pftrace);
        }
        match trace {
            Trace::Dat(d) if name.ends_with(".dat") => Ok(if d.info().version == 6 {
                OutputFormat::V7(compression)
            } else {
                OutputFormat::V6
            }),
            Trace::Ctf(_) if name.ends_with(".dat") => Ok(OutputFormat::V7(compression)),
            _ => Err(Error::Unsupported(format!(
                "{}: cannot tell the output format from the name; give --format v6, v7, perfetto or pftrace",
                out.display()
            ))),
        }
    }
}

/// Converts `trace` (read from `input`) into `output` as `format`; for Perfetto output,
/// only what `filter` keeps, from the buffer `trace` chose (a .dat copy is whole: a
/// filter or a buffer chosen by name there is [`Error::Invalid`]). The output is
/// written as [`OutputFile`] writes: under a temporary name and renamed over a regular
/// file when complete (a failure leaves no partial file), copied through into a FIFO or
/// device, never renamed over one.
pub fn convert(
    trace: &Trace,
    input: &Path,
    output: &Path,
    format: OutputFormat,
    filter: &Filter,
) -> Result<Conversion, Error> {
    if !format.is_perfetto() && !filter.is_empty() {
        return Err(Error::Invalid(
            "--cpu, --from and --to apply to Perfetto output only; a .dat copy is whole".into(),
        ));
    }
    if let Trace::Dat(d) = trace {
        if !format.is_perfetto() && d.buffer_choice().is_some_and(|c| c.by_name) {
            return Err(Error::Invalid(
                "--buffer applies to Perfetto output only; a .dat copy keeps every buffer".into(),
            ));
        }
    }
    let out_err = |cause| Error::Io {
        path: jitterlab_render::named_output(output),
        cause,
    };
    let mut out = OutputFile::create(output).map_err(out_err)?;
    let (output_format, perfetto, pftrace, mut warnings) =
        write(trace, input, format, filter, &mut out)?;
    let bytes = out.commit().map_err(out_err)?;
    if let Some(p) = &perfetto {
        if p.task_slices + p.irq_slices + p.softirq_slices + p.wakeups + p.markers == 0 {
            warnings.push(
                "nothing was exported: the trace (or the window) has no scheduler, IRQ or \
                 marker events; function_graph calls are not exported to Perfetto"
                    .into(),
            );
        }
    }
    if pftrace.as_ref().is_some_and(|p| p.events == 0) {
        warnings.push(
            "nothing was exported: the trace (or the window) has no event Perfetto's ftrace \
             bundles hold (scheduler, IRQ, softirq, timer, workqueue or marker events)"
                .into(),
        );
    }
    Ok(Conversion {
        input: input.display().to_string(),
        input_format: trace.format(),
        output: output.display().to_string(),
        output_format,
        bytes,
        perfetto,
        pftrace,
        warnings,
    })
}

/// The output's format, its counts, and what the user should know about it.
type Written = (
    String,
    Option<PerfettoCounts>,
    Option<PftraceCounts>,
    Vec<String>,
);

fn write(
    trace: &Trace,
    input: &Path,
    format: OutputFormat,
    filter: &Filter,
    out: &mut OutputFile,
) -> Result<Written, Error> {
    let tmp = out.path().to_path_buf();
    let io_err = |cause| Error::Io {
        path: tmp.clone(),
        cause,
    };
    match (format, trace) {
        (OutputFormat::Perfetto, _) => {
            // Through the output's own handle, not a second one opened by its path,
            // written behind the pass by a second thread.
            let counts = write_behind(&mut *out, |w| -> Result<PerfettoCounts, Error> {
                let writer = PerfettoWriter::new(w).map_err(io_err)?;
                let mut sink = Filtered::new(filter.clone(), writer);
                engine::pass(
                    trace,
                    &Tables::of(trace),
                    &PassOptions::default(),
                    &mut engine::no_raw,
                    &mut sink,
                )?;
                let (_, counts) = sink.inner.finish().map_err(io_err)?;
                Ok(counts)
            })
            .map_err(io_err)??;
            Ok((
                "Chrome trace-event JSON (Perfetto)".into(),
                Some(counts),
                None,
                Vec::new(),
            ))
        }
        (OutputFormat::Pftrace, _) => {
            let tables = PftraceTables {
                tgids: trace.tgids(),
                cmdlines: trace.cmdlines(),
                uname: match trace {
                    Trace::Dat(d) => d.info().uname.clone(),
                    Trace::Ctf(c) => c.uname(),
                    Trace::Text { .. } => None,
                },
            };
            let keep = EventFilter {
                filter: filter.clone(),
                names: Vec::new(),
                tgids: tables.tgids.clone(),
            };
            // Written behind the pass by a second thread, as the JSON is.
            let counts = write_behind(&mut *out, |w| -> Result<PftraceCounts, Error> {
                let mut writer = PftraceWriter::new(w, tables);
                // The events alone: the machine's intervals are not written (nor its
                // tables read again).
                let mut failed = None;
                engine::pass(
                    trace,
                    &Tables::default(),
                    &PassOptions {
                        machine: false,
                        ..PassOptions::default()
                    },
                    &mut |ev| {
                        if filter.past_window(ev.ts) {
                            return ControlFlow::Break(());
                        }
                        if keep.wants(ev) {
                            if let Err(e) = writer.event(ev) {
                                failed = Some(e);
                                return ControlFlow::Break(());
                            }
                        }
                        ControlFlow::Continue(())
                    },
                    &mut (),
                )?;
                if let Some(e) = failed {
                    return Err(io_err(e));
                }
                let (_, counts) = writer.finish().map_err(io_err)?;
                Ok(counts)
            })
            .map_err(io_err)??;
            Ok((
                "Perfetto protobuf trace".into(),
                None,
                Some(counts),
                Vec::new(),
            ))
        }
        (OutputFormat::V6 | OutputFormat::V7(_), Trace::Dat(dat)) => {
            // Pages wait in files next to the output, not in memory.
            let spool = Spool::Dir(out.scratch_dir().to_path_buf());
            match format {
                OutputFormat::V7(c) => {
                    copy_to_v7(dat, &tmp, spool, c)?;
                    Ok((
                        format!("trace-cmd .dat v7 ({})", c.name()),
                        None,
                        None,
                        Vec::new(),
                    ))
                }
                _ => {
                    copy_to_v6(dat, &tmp, spool)?;
                    Ok(("trace-cmd .dat v6".into(), None, None, Vec::new()))
                }
            }
        }
        (OutputFormat::V6 | OutputFormat::V7(_), Trace::Ctf(ctf)) => {
            // Pages wait in files next to the output, not in memory.
            let spool = Spool::Dir(out.scratch_dir().to_path_buf());
            let v7 = match format {
                OutputFormat::V7(c) => Some(c),
                _ => None,
            };
            let done = ctf.write_dat(&tmp, spool, v7)?;
            let name = match v7 {
                Some(c) => format!("trace-cmd .dat v7 ({})", c.name()),
                None => "trace-cmd .dat v6".into(),
            };
            Ok((
                format!(
                    "{name}: {} events of {} LTTng event classes (system {})",
                    done.events,
                    done.formats,
                    jitterlab_trace::ctf::DAT_SYSTEM
                ),
                None,
                None,
                done.warnings,
            ))
        }
        (_, Trace::Text { .. }) => Err(Error::Unsupported(format!(
            "{}: a text trace has no ring-buffer pages to write a .dat from; convert it --format perfetto, or record a .dat with `jitterlab record`",
            input.display()
        ))),
    }
}
