//! Opening a trace file by its content, whatever its name: a trace-cmd .dat (v6 or v7),
//! the kernel's ftrace text, `trace-cmd report` text, function_graph text or `perf script`
//! text.

use std::collections::HashMap;
use std::path::Path;

use crate::dat::{DatFile, DatOptions};
use crate::text::{self, TextKind, TextOptions};
use crate::{Comm, Error, EventSource, Location, Result};

/// The first bytes of every trace-cmd .dat file.
const DAT_MAGIC: &[u8] = b"\x17\x08\x44tracing";

/// A trace file, open.
pub enum Trace {
    /// A trace-cmd .dat file.
    Dat(Box<DatFile<'static>>),
    /// A text trace, read into memory (the readers stream it, the bytes stay).
    Text {
        /// The file name, for errors.
        name: String,
        /// Its bytes.
        bytes: Vec<u8>,
        /// Which text format.
        kind: TextKind,
        /// Skip undecodable lines instead of failing.
        lenient: bool,
    },
}

impl Trace {
    /// Opens `path`, telling the format from its content. With `lenient`, undecodable
    /// records and lines are skipped and counted instead of failing the read.
    pub fn open(path: impl AsRef<Path>, lenient: bool) -> Result<Trace> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let cannot =
            |e: std::io::Error| Error::new(&name, Location::Whole, format!("cannot read: {e}"));
        let mut head = [0u8; 10];
        let n = {
            use std::io::Read;
            let mut f = std::fs::File::open(path).map_err(cannot)?;
            let mut n = 0;
            while n < head.len() {
                match f.read(&mut head[n..]).map_err(cannot)? {
                    0 => break,
                    k => n += k,
                }
            }
            n
        };
        if head[..n].starts_with(DAT_MAGIC) {
            // Memory-mapped: memory stays bounded by the pages in flight.
            let dat = DatFile::open_with(path, DatOptions { lenient })?;
            return Ok(Trace::Dat(Box::new(dat)));
        }
        let bytes = std::fs::read(path).map_err(cannot)?;
        match text::detect(&bytes) {
            Some(kind) => Ok(Trace::Text {
                name,
                bytes,
                kind,
                lenient,
            }),
            None => Err(Error::new(
                name,
                Location::Offset(0),
                "expected a trace-cmd .dat file (magic 17 08 44 'tracing'), ftrace text, \
                 trace-cmd report text, function_graph text or perf script text",
            )),
        }
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

    /// The events of the top buffer, in time order.
    pub fn events(&self) -> Result<Box<dyn EventSource + '_>> {
        match self {
            Trace::Dat(d) => Ok(Box::new(d.events(0)?)),
            Trace::Text {
                name,
                bytes,
                kind,
                lenient,
            } => text::open(
                &bytes[..],
                *kind,
                TextOptions {
                    lenient: *lenient,
                    ..TextOptions::named(name.clone())
                },
            ),
        }
    }

    /// Thread group ids by tid, when the file records them: the TGID column of ftrace text
    /// (the `record-tgid` trace option). Empty for .dat files (trace-cmd keeps no tgid
    /// table) and the other text formats.
    pub fn tgids(&self) -> HashMap<i32, i32> {
        match self {
            Trace::Text {
                bytes,
                kind: TextKind::Ftrace,
                ..
            } => text::scan_tgids(bytes),
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
