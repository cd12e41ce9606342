//! Opening a trace file by its content, whatever its name: a trace-cmd .dat (v6 or v7),
//! the kernel's ftrace text, `trace-cmd report` text, function_graph text or `perf script`
//! text.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::dat::{DatFile, DatOptions};
use crate::text::{self, TextKind, TextOptions};
use crate::{Comm, Error, ErrorKind, EventSource, Location, Result};

/// The first bytes of every trace-cmd .dat file.
const DAT_MAGIC: &[u8] = b"\x17\x08\x44tracing";

/// Where a text trace's lines come from.
pub enum TextSource {
    /// A regular file, read again from its start for each pass.
    File(PathBuf),
    /// The whole text, for what cannot be read twice or has no size (a pipe, tracefs
    /// `trace`, a /proc-like file).
    Bytes(Vec<u8>),
}

/// Text read per system call when streaming a file.
const TEXT_BUFFER: usize = 256 * 1024;

/// How much of a text file tells its format.
const DETECT_BYTES: usize = 64 * 1024;

/// A trace file, open.
pub enum Trace {
    /// A trace-cmd .dat file.
    Dat(Box<DatFile<'static>>),
    /// A text trace, streamed from its file (memory does not grow with its size).
    Text {
        /// The file name, for errors.
        name: String,
        /// Where its lines come from.
        source: TextSource,
        /// Which text format.
        kind: TextKind,
        /// Skip undecodable lines instead of failing.
        lenient: bool,
    },
}

impl Trace {
    /// Opens `path`, telling the format from its content. With `lenient`, undecodable
    /// records and lines are skipped and counted instead of failing the read. The events
    /// of a .dat with several buffers are those of the buffer the default rule chooses
    /// (see [`Trace::open_buffer`]).
    pub fn open(path: impl AsRef<Path>, lenient: bool) -> Result<Trace> {
        Trace::open_buffer(path, lenient, None)
    }

    /// [`Trace::open`], reading the events of the .dat buffer named `buffer` (`""` or
    /// `top` for the top buffer): without a name, the top buffer when it holds events,
    /// else the buffer with the most (see [`DatFile::choose_buffer`]); [`Trace::notes`]
    /// then names the buffers left out, with their event and lost counts. A name the
    /// file does not have, or a name for a text trace (read whole), is an
    /// [`ErrorKind::InvalidArgument`] error.
    ///
    /// A .dat that is not a regular file (a pipe, `/dev/stdin`) is read whole into
    /// memory; a regular file is mapped.
    pub fn open_buffer(
        path: impl AsRef<Path>,
        lenient: bool,
        buffer: Option<&str>,
    ) -> Result<Trace> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let cannot = |e: std::io::Error| {
            Error::new(
                ErrorKind::Io,
                &name,
                Location::Whole,
                format!("cannot read: {e}"),
            )
        };
        let mut file = File::open(path).map_err(cannot)?;
        let mut head = Vec::with_capacity(DETECT_BYTES);
        (&mut file)
            .take(DETECT_BYTES as u64)
            .read_to_end(&mut head)
            .map_err(cannot)?;
        if head.starts_with(DAT_MAGIC) {
            let options = DatOptions { lenient };
            let mut dat = if file.metadata().is_ok_and(|m| m.is_file()) {
                // Memory-mapped: memory stays bounded by the pages in flight.
                DatFile::open_with(path, options)?
            } else {
                // A pipe cannot be mapped nor read twice: the rest of it, whole.
                let mut bytes = head;
                file.read_to_end(&mut bytes).map_err(cannot)?;
                DatFile::from_vec(&name, bytes, options)?
            };
            dat.choose_buffer(buffer)?;
            return Ok(Trace::Dat(Box::new(dat)));
        }
        if let Some(b) = buffer {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                name,
                Location::Whole,
                format!(
                    "expected a trace-cmd .dat file for --buffer {b:?}, found a text trace (read whole, every buffer)"
                ),
            ));
        }
        let Some(kind) = text::detect(&head) else {
            return Err(Error::new(
                ErrorKind::UnknownFormat,
                name,
                Location::Offset(0),
                "expected a trace-cmd .dat file (magic 17 08 44 'tracing'), ftrace text, \
                 trace-cmd report text, function_graph text or perf script text",
            ));
        };
        // A regular file with a size is read again for each pass; anything else (a pipe,
        // tracefs `trace`, which reports size 0) once, whole.
        let regular = file
            .metadata()
            .is_ok_and(|m| m.is_file() && m.len() > head.len() as u64);
        let source = if regular || head.len() < DETECT_BYTES {
            if regular {
                TextSource::File(path.to_path_buf())
            } else {
                TextSource::Bytes(head)
            }
        } else {
            let mut bytes = head;
            file.read_to_end(&mut bytes).map_err(cannot)?;
            TextSource::Bytes(bytes)
        };
        Ok(Trace::Text {
            name,
            source,
            kind,
            lenient,
        })
    }

    /// The text's lines from the start, buffered.
    fn text_lines(&self) -> Result<Box<dyn BufRead + '_>> {
        let Trace::Text { name, source, .. } = self else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "",
                Location::Whole,
                "not a text trace",
            ));
        };
        Ok(match source {
            TextSource::File(path) => {
                let f = File::open(path).map_err(|e| {
                    Error::new(
                        ErrorKind::Io,
                        name,
                        Location::Whole,
                        format!("cannot read: {e}"),
                    )
                })?;
                Box::new(BufReader::with_capacity(TEXT_BUFFER, f))
            }
            TextSource::Bytes(b) => Box::new(&b[..]),
        })
    }

    /// The format, for people.
    pub fn format(&self) -> String {
        match self {
            Trace::Dat(d) => d.meta().format.clone(),
            Trace::Text { kind, .. } => match kind {
                TextKind::Ftrace => "ftrace text".into(),
                TextKind::TraceCmdReport => "trace-cmd report text".into(),
                TextKind::FunctionGraph => "function_graph text".into(),
                TextKind::PerfScript => "perf script text".into(),
            },
        }
    }

    /// What a reader of this trace should be told about its layout: bytes of a .dat that
    /// no CPU range covers (a gap between ranges, data past the last range), each with
    /// its byte offset. Empty when all is well.
    pub fn notes(&self) -> Vec<String> {
        match self {
            Trace::Dat(d) => d.warnings().iter().map(|w| w.to_string()).collect(),
            Trace::Text { .. } => Vec::new(),
        }
    }

    /// When the default rule chose the buffer of a .dat and left out others that hold
    /// events or losses: the note naming the buffer read and the others, with their event
    /// and lost counts.
    pub fn buffer_note(&self) -> Option<String> {
        match self {
            Trace::Dat(d) => d
                .buffer_choice()
                .and_then(|c| c.note())
                .map(|n| format!("{}: {n}", d.name())),
            Trace::Text { .. } => None,
        }
    }

    /// The events, in time order: of a .dat, those of its chosen buffer (see
    /// [`Trace::open_buffer`]).
    pub fn events(&self) -> Result<Box<dyn EventSource + '_>> {
        match self {
            Trace::Dat(d) => Ok(Box::new(d.events(d.chosen_buffer())?)),
            Trace::Text {
                name,
                kind,
                lenient,
                ..
            } => text::open(
                self.text_lines()?,
                *kind,
                TextOptions {
                    lenient: *lenient,
                    ..TextOptions::named(name.clone())
                },
            ),
        }
    }

    /// Thread group ids by tid, when the file records them: the TGID column of ftrace text
    /// (the `record-tgid` trace option), and jitterlab's saved-tgids option of a .dat that
    /// `jitterlab record` wrote. Empty for trace-cmd's own .dat files (they keep no tgid
    /// table) and the other text formats.
    pub fn tgids(&self) -> HashMap<i32, i32> {
        match self {
            Trace::Text {
                kind: TextKind::Ftrace,
                ..
            } => self.text_lines().map(text::scan_tgids).unwrap_or_default(),
            Trace::Dat(d) => d.info().tgids.iter().copied().collect(),
            _ => HashMap::new(),
        }
    }

    /// Task names the file records besides its events (.dat saved cmdlines).
    pub fn cmdlines(&self) -> HashMap<i32, Comm> {
        match self {
            Trace::Dat(d) => d.cmdlines(),
            Trace::Text { .. } => HashMap::new(),
        }
    }
}
