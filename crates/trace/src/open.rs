//! Opening a trace file by its content, whatever its name: a trace-cmd .dat (v6 or v7),
//! the kernel's ftrace text, `trace-cmd report` text, function_graph text or `perf script`
//! text; or a folder: an LTTng (CTF 1.8) kernel trace.
//! A file compressed whole with zstd, gzip or xz is decompressed as it is read.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::ctf::{is_metadata, CtfTrace};
use crate::dat::{DatFile, DatOptions};
use crate::text::stream::{read_head, CancelRead};
use crate::text::{self, Cancel, TextKind, TextOptions};
use crate::{Comm, Error, ErrorKind, EventSource, Location, Result};

/// The first bytes of every trace-cmd .dat file.
const DAT_MAGIC: &[u8] = b"\x17\x08\x44tracing";

/// Where a text trace's lines come from.
pub enum TextSource {
    /// A regular file, read again from its start for each pass.
    File(PathBuf),
    /// The whole text of a small file.
    Bytes(Vec<u8>),
    /// What has no size (a pipe, a FIFO, tracefs `trace` and `trace_pipe`): read once, as it
    /// comes, with bounded memory. The start read to tell the format, then the rest; the
    /// first [`Trace::events`] takes the file.
    Stream {
        /// The start, already read.
        head: Vec<u8>,
        /// The rest, until taken.
        rest: Mutex<Option<File>>,
    },
    /// A regular file compressed with zstd, gzip or xz, decompressed as it is read, again
    /// from its start for each pass.
    Compressed(PathBuf, Packed),
}

/// How a trace file is compressed, when jitterlab decompresses it as it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packed {
    /// Zstandard (`.zst`, as the project's own test traces are kept).
    Zstd = 0,
    /// gzip (`.gz`).
    Gzip = 1,
    /// xz (`.xz`, LZMA2), as distributions and bug trackers often keep files.
    Xz = 2,
}

/// A compression a trace file may come in: its magic, its name, the command that
/// decompresses it to a file, and how jitterlab reads it itself (`None`: it does not).
type Compression = (&'static [u8], &'static str, &'static str, Option<Packed>);

/// The compressions told apart, those jitterlab reads first, in [`Packed`]'s order.
const COMPRESSIONS: [Compression; 4] = [
    (b"\x28\xb5\x2f\xfd", "zstd", "zstd -d", Some(Packed::Zstd)),
    (b"\x1f\x8b", "gzip", "gunzip -k", Some(Packed::Gzip)),
    (b"\xfd7zXZ\x00", "xz", "unxz -k", Some(Packed::Xz)),
    (b"BZh", "bzip2", "bunzip2 -k", None),
];

/// The entry of [`COMPRESSIONS`] whose magic `head` starts with.
fn compression(head: &[u8]) -> Option<&'static Compression> {
    COMPRESSIONS
        .iter()
        .find(|(magic, ..)| head.starts_with(magic))
}

impl Packed {
    /// The compression jitterlab reads whose magic `head` starts with.
    fn sniff(head: &[u8]) -> Option<Packed> {
        compression(head).and_then(|c| c.3)
    }

    /// Its entry of [`COMPRESSIONS`] (its discriminant is the entry's index).
    fn entry(self) -> &'static Compression {
        &COMPRESSIONS[self as usize]
    }

    /// The error of a read that could not decompress `name`.
    fn error(self, name: &str, e: std::io::Error) -> Error {
        Error::new(
            ErrorKind::Decompress,
            name,
            Location::Whole,
            format!("cannot decompress ({}): {e}", self.entry().1),
        )
    }

    /// `file`'s bytes, decompressed as they are read.
    fn reader(self, file: File) -> std::io::Result<Box<dyn Read + Send>> {
        let file = BufReader::with_capacity(TEXT_BUFFER, file);
        Ok(match self {
            Packed::Zstd => Box::new(zstd::Decoder::with_buffer(file)?),
            Packed::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(file)),
            // Concatenated streams are one file, as `xz -d` reads them.
            Packed::Xz => Box::new(lzma_rust2::XzReader::new(file, true)),
        })
    }
}

/// Text read per system call when streaming a file.
const TEXT_BUFFER: usize = 256 * 1024;

/// A compressed .dat is decompressed into memory (it is read by offsets); past this it is
/// refused, with the command that decompresses it to a file.
const PACKED_DAT_LIMIT: u64 = 4 << 30;

/// How much of a text file tells its format.
const DETECT_BYTES: usize = 64 * 1024;

/// A trace file, open.
pub enum Trace {
    /// A trace-cmd .dat file.
    Dat(Box<DatFile<'static>>),
    /// An LTTng kernel trace (CTF 1.8): a folder of stream files and their metadata.
    Ctf(Box<CtfTrace>),
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
        /// Ends the read early once set ([`Trace::set_cancel`]).
        cancel: Cancel,
        /// Bytes of text read so far ([`Trace::set_progress`]).
        progress: Option<Arc<AtomicU64>>,
    },
}

impl Trace {
    /// Opens `path`, telling the format from its content. With `lenient`, undecodable
    /// records and lines are skipped and counted instead of failing the read. The events
    /// of a .dat with several buffers are those of the buffer the default rule chooses
    /// (see [`Trace::open_buffer`]).
    ///
    /// A file without a size (a pipe, a FIFO, tracefs `trace` and `trace_pipe`) is a
    /// stream ([`Trace::is_stream`]): this returns once its first event line (or its end)
    /// is read, and its events are read once, as they come, in bounded memory. An empty
    /// file (nothing but blank lines) is not a trace ([`ErrorKind::UnknownFormat`]); text
    /// with headers and no event is a trace with no events.
    ///
    /// A folder is an LTTng kernel trace ([`CtfTrace::find`]): one holding a CTF
    /// `metadata` file and the stream files, or an LTTng session folder holding `kernel/`.
    /// The `metadata` file itself opens its folder's trace.
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
        if path.is_dir() {
            no_buffer_in_text(buffer, &name)?;
            let dir = CtfTrace::find(path)?;
            return Ok(Trace::Ctf(Box::new(CtfTrace::open(dir, lenient)?)));
        }
        let cannot = |e: std::io::Error| {
            Error::new(
                ErrorKind::Io,
                &name,
                Location::Whole,
                format!("cannot read: {e}"),
            )
        };
        let mut file = File::open(path).map_err(cannot)?;
        let sized = file.metadata().is_ok_and(|m| m.is_file() && m.len() > 0);
        if !sized {
            return Trace::open_stream(file, name, lenient, buffer);
        }
        let mut head = Vec::with_capacity(DETECT_BYTES);
        (&mut file)
            .take(DETECT_BYTES as u64)
            .read_to_end(&mut head)
            .map_err(cannot)?;
        if let Some(packed) = Packed::sniff(&head) {
            return Trace::open_packed(path, name, packed, lenient, buffer);
        }
        let is_ctf_metadata = path.file_name().is_some_and(|n| n == "metadata")
            && is_metadata(&head)
            && path.parent().is_some_and(Path::is_dir);
        if is_ctf_metadata {
            no_buffer_in_text(buffer, &name)?;
            let dir = path.parent().unwrap_or(Path::new("."));
            return Ok(Trace::Ctf(Box::new(CtfTrace::open(dir, lenient)?)));
        }
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
        no_buffer_in_text(buffer, &name)?;
        let kind = known(text::detect(&head), &head, &name)?;
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
            cancel: Cancel::default(),
            progress: None,
        })
    }

    /// A compressed file: a .dat decompressed whole into memory (it is read by offsets), a
    /// text decompressed as it is read, for each pass.
    fn open_packed(
        path: &Path,
        name: String,
        packed: Packed,
        lenient: bool,
        buffer: Option<&str>,
    ) -> Result<Trace> {
        let cannot = |e| packed.error(&name, e);
        let file = File::open(path).map_err(cannot)?;
        let mut reader = packed.reader(file).map_err(cannot)?;
        let mut head = Vec::with_capacity(DETECT_BYTES);
        (&mut reader)
            .take(DETECT_BYTES as u64)
            .read_to_end(&mut head)
            .map_err(cannot)?;
        if head.starts_with(DAT_MAGIC) {
            let mut bytes = head;
            reader
                .take(PACKED_DAT_LIMIT + 1 - bytes.len() as u64)
                .read_to_end(&mut bytes)
                .map_err(cannot)?;
            if bytes.len() as u64 > PACKED_DAT_LIMIT {
                return Err(Error::new(
                    ErrorKind::Limit,
                    &name,
                    Location::Whole,
                    format!(
                        "a compressed .dat of more than {} GiB decompressed is not read into \
                         memory: decompress it to a file first (`{} {name}`)",
                        PACKED_DAT_LIMIT >> 30,
                        packed.entry().2
                    ),
                ));
            }
            let mut dat = DatFile::from_vec(&name, bytes, DatOptions { lenient })?;
            dat.choose_buffer(buffer)?;
            return Ok(Trace::Dat(Box::new(dat)));
        }
        no_buffer_in_text(buffer, &name)?;
        let kind = known(text::detect(&head), &head, &name)?;
        Ok(Trace::Text {
            name,
            source: TextSource::Compressed(path.to_path_buf(), packed),
            kind,
            lenient,
            cancel: Cancel::default(),
            progress: None,
        })
    }

    /// A pipe, FIFO or size-less file: its format told from its first lines as they come,
    /// the rest left to be read once.
    fn open_stream(
        mut file: File,
        name: String,
        lenient: bool,
        buffer: Option<&str>,
    ) -> Result<Trace> {
        let (head, kind) = read_head(&mut file).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                &name,
                Location::Whole,
                format!("cannot read: {e}"),
            )
        })?;
        if head.starts_with(DAT_MAGIC) {
            // A pipe cannot be mapped nor read twice: the rest of it, whole.
            let mut bytes = head;
            file.read_to_end(&mut bytes).map_err(|e| {
                Error::new(
                    ErrorKind::Io,
                    &name,
                    Location::Whole,
                    format!("cannot read: {e}"),
                )
            })?;
            let mut dat = DatFile::from_vec(&name, bytes, DatOptions { lenient })?;
            dat.choose_buffer(buffer)?;
            return Ok(Trace::Dat(Box::new(dat)));
        }
        no_buffer_in_text(buffer, &name)?;
        let kind = known(kind, &head, &name)?;
        Ok(Trace::Text {
            name,
            source: TextSource::Stream {
                head,
                rest: Mutex::new(Some(file)),
            },
            kind,
            lenient,
            cancel: Cancel::default(),
            progress: None,
        })
    }

    /// Ends reading this trace's events early once `flag` is set (Ctrl-C): the events read
    /// so far are handed out, then the end, as if the input ended there (a line cut short
    /// is dropped). A read waiting on a pipe looks at the flag every 100 ms. True for text
    /// traces; a .dat file is not cut short (false).
    pub fn set_cancel(&mut self, flag: Arc<AtomicBool>) -> bool {
        match self {
            Trace::Text { cancel, .. } => {
                *cancel = Cancel::new(flag);
                true
            }
            Trace::Dat(_) | Trace::Ctf(_) => false,
        }
    }

    /// From now on, reading this trace adds the bytes read to `read`, for a progress
    /// display that polls it: of a .dat, the CPU data passed (a page or a compressed chunk
    /// at a time, [`DatFile::set_progress`]); of a text trace, the text read (a buffer of
    /// 256 KiB at a time). Compare with [`Trace::progress_total`].
    pub fn set_progress(&mut self, read: Arc<AtomicU64>) {
        match self {
            Trace::Dat(d) => d.set_progress(read),
            Trace::Text { progress, .. } => *progress = Some(read),
            Trace::Ctf(_) => {}
        }
    }

    /// What one pass over the events adds to [`Trace::set_progress`]'s counter: of a
    /// .dat, the bytes of CPU data of the buffer read (of every buffer with
    /// `every_buffer`, as `report --stats` and a .dat copy read them); of a text file, its
    /// size. `None` for a stream (it has no size) or a text held in memory.
    pub fn progress_total(&self, every_buffer: bool) -> Option<u64> {
        match self {
            Trace::Dat(d) => Some(d.data_bytes((!every_buffer).then(|| d.chosen_buffer()))),
            Trace::Text {
                source: TextSource::File(path),
                ..
            } => std::fs::metadata(path).ok().map(|m| m.len()),
            Trace::Text { .. } | Trace::Ctf(_) => None,
        }
    }

    /// Whether this is a text read once, as it comes (a pipe, a FIFO, tracefs `trace_pipe`):
    /// its events are handed out as they arrive (see [`Trace::set_cancel`]).
    pub fn is_stream(&self) -> bool {
        matches!(
            self,
            Trace::Text {
                source: TextSource::Stream { .. },
                ..
            }
        )
    }

    /// The text's lines from the start, buffered; with `counted`, the bytes read are
    /// added to the progress counter, if any.
    fn text_lines(&self, counted: bool) -> Result<Box<dyn BufRead + '_>> {
        let Trace::Text {
            name,
            source,
            cancel,
            progress,
            ..
        } = self
        else {
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
                Box::new(BufReader::with_capacity(
                    TEXT_BUFFER,
                    Counted(f, progress.as_deref().filter(|_| counted)),
                ))
            }
            TextSource::Bytes(b) => Box::new(&b[..]),
            TextSource::Compressed(path, packed) => {
                let reader = File::open(path)
                    .and_then(|f| packed.reader(f))
                    .map_err(|e| packed.error(name, e))?;
                Box::new(BufReader::with_capacity(
                    TEXT_BUFFER,
                    Cancelled {
                        inner: reader,
                        cancel: cancel.clone(),
                    },
                ))
            }
            TextSource::Stream { head, rest } => {
                let file = rest.lock().ok().and_then(|mut r| r.take()).ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidArgument,
                        name,
                        Location::Whole,
                        "a pipe is read once: its events were read already",
                    )
                })?;
                let rest = CancelRead {
                    file,
                    cancel: cancel.clone(),
                    quiet: false,
                };
                Box::new(BufReader::with_capacity(
                    TEXT_BUFFER,
                    Counted(
                        std::io::Cursor::new(&head[..]).chain(rest),
                        progress.as_deref().filter(|_| counted),
                    ),
                ))
            }
        })
    }

    /// Starts parsing the kernel symbols a .dat file saved (for the first event that
    /// names a function) on a thread of its own, for a pass about to be made: what the
    /// caller does before the pass overlaps it (on a 5 M-event recording, an export's
    /// origin, checks and files: 3 ms of the 8 ms the parse takes). The pass waits for
    /// it only if it needs a symbol before the parse is done. Once a trace (a second call
    /// does nothing); nothing for the other formats, a file without symbols, or one CPU.
    pub fn parse_symbols_behind(&self) {
        if let Trace::Dat(d) = self {
            d.parse_symbols_behind();
        }
    }

    /// The format, for people.
    pub fn format(&self) -> String {
        match self {
            Trace::Dat(d) => d.meta().format.clone(),
            Trace::Ctf(c) => c.meta().format.clone(),
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
            Trace::Text { .. } | Trace::Ctf(_) => Vec::new(),
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
            Trace::Text { .. } | Trace::Ctf(_) => None,
        }
    }

    /// The events, in time order: of a .dat, those of its chosen buffer (see
    /// [`Trace::open_buffer`]).
    pub fn events(&self) -> Result<Box<dyn EventSource + '_>> {
        match self {
            Trace::Dat(d) => Ok(Box::new(d.events(d.chosen_buffer())?)),
            Trace::Ctf(c) => Ok(Box::new(c.events()?)),
            Trace::Text {
                name,
                kind,
                lenient,
                cancel,
                ..
            } => text::open(
                self.text_lines(true)?,
                *kind,
                TextOptions {
                    lenient: *lenient,
                    cancel: cancel.clone(),
                    ..TextOptions::named(name.clone())
                },
            ),
        }
    }

    /// Thread group ids by tid, when the file records them: the TGID column of ftrace text
    /// (the `record-tgid` trace option), and jitterlab's saved-tgids option of a .dat that
    /// `jitterlab record` wrote, and LTTng's statedump of an LTTng trace. Empty for
    /// trace-cmd's own .dat files (they keep no tgid table) and the other text formats.
    pub fn tgids(&self) -> HashMap<i32, i32> {
        match self {
            // A stream is read once: its tgids are those of its first lines.
            Trace::Text {
                kind: TextKind::Ftrace,
                source: TextSource::Stream { head, .. },
                ..
            } => text::scan_tgids(&head[..]),
            Trace::Text {
                kind: TextKind::Ftrace,
                ..
            } => self
                .text_lines(false)
                .map(text::scan_tgids)
                .unwrap_or_default(),
            Trace::Dat(d) => d.info().tgids.iter().copied().collect(),
            Trace::Ctf(c) => c.tgids(),
            _ => HashMap::new(),
        }
    }

    /// Task names the file records besides its events (.dat saved cmdlines, LTTng's
    /// statedump).
    pub fn cmdlines(&self) -> HashMap<i32, Comm> {
        match self {
            Trace::Dat(d) => d.cmdlines(),
            Trace::Ctf(c) => c.cmdlines(),
            Trace::Text { .. } => HashMap::new(),
        }
    }
}

/// A reader that ends (reads 0) once its trace's cancel flag is set (Ctrl-C).
struct Cancelled<R> {
    inner: R,
    cancel: Cancel,
}

impl<R: Read> Read for Cancelled<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.cancel.is_set() {
            return Ok(0);
        }
        self.inner.read(buf)
    }
}

/// A reader that adds the bytes it reads to a progress counter (under a buffer: one
/// addition per buffer filled).
struct Counted<'a, R>(R, Option<&'a AtomicU64>);

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        if let Some(read) = self.1 {
            read.fetch_add(n as u64, Ordering::Relaxed);
        }
        Ok(n)
    }
}

/// `--buffer` names a .dat buffer: for a text trace it is an error.
fn no_buffer_in_text(buffer: Option<&str>, name: &str) -> Result<()> {
    match buffer {
        Some(b) => Err(Error::new(
            ErrorKind::InvalidArgument,
            name,
            Location::Whole,
            format!(
                "expected a trace-cmd .dat file for --buffer {b:?}, found a text trace (read whole, every buffer)"
            ),
        )),
        None => Ok(()),
    }
}

/// `kind`, or the error for text that is no trace (`head` its start): an empty file is
/// not a trace; a trace with no events still has its headers.
fn known(kind: Option<TextKind>, head: &[u8], name: &str) -> Result<TextKind> {
    if let Some(kind) = kind {
        return Ok(kind);
    }
    if head.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::new(
            ErrorKind::UnknownFormat,
            name,
            Location::Whole,
            "the file is empty: not a trace (a trace without events still has its header: \
             `# tracer:`, `cpus=N`)",
        ));
    }
    // A compression jitterlab does not read (those it reads never get here): say which,
    // and what to do.
    if let Some((_, what, cmd, None)) = compression(head) {
        return Err(Error::new(
            ErrorKind::UnknownFormat,
            name,
            Location::Offset(0),
            format!(
                "compressed with {what}; jitterlab reads traces uncompressed or compressed with \
                 {}: `{cmd} {name}`, then give it the decompressed file",
                COMPRESSIONS
                    .iter()
                    .filter(|c| c.3.is_some())
                    .map(|c| c.1)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Err(Error::new(
        ErrorKind::UnknownFormat,
        name,
        Location::Offset(0),
        "expected a trace-cmd .dat file (magic 17 08 44 'tracing'), ftrace text, \
         trace-cmd report text, function_graph text or perf script text (or an LTTng trace \
         folder)",
    ))
}
