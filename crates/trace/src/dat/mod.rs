//! trace-cmd `.dat` files, version 6 and version 7 (uncompressed, zstd or zlib).
//!
//! A [`DatFile`] is opened from a path (memory-mapped) or parsed from bytes; the kind of
//! file is told by its content (the `\x17\x08\x44tracing` magic and version), never by its
//! name. Opening reads the metadata: the page and event headers, the event formats, the
//! options and the table of per-CPU data of each buffer (the top buffer and any instances).
//! kallsyms, printk formats and cmdlines are parsed when first asked for.
//!
//! Events are read lazily: [`DatFile::events`] merges the per-CPU page streams of one buffer
//! in timestamp order and decodes each record only when it is returned; version 7 data is
//! decompressed one chunk per CPU at a time. [`DatFile::count_events`] counts records per
//! event and per CPU without decoding any field, in parallel over CPUs and chunks. What
//! version 7 data inflates to is bounded before anything is allocated for it: a chunk to
//! ten pages (what trace-cmd writes), the chunks held at once to 24 MiB, the compressed
//! sections to 32 MiB in all; past a bound, an error names the offset and the bound.
//! The kallsyms, printk formats and saved cmdlines (either version) list at most
//! [`MAX_SYMBOLS`](crate::decode::MAX_SYMBOLS), [`MAX_PRINTK_FORMATS`](crate::decode::MAX_PRINTK_FORMATS)
//! and [`MAX_CMDLINES`] entries: a file listing more is refused when opened.
//!
//! [`DatWriter`] writes version 6 or version 7 files from the tracefs metadata and
//! per-CPU page streams (as `trace_pipe_raw` hands them out); [`copy_to_v6`] and
//! [`copy_to_v7`] copy an open file.
//!
//! trace-cmd files keep no tgid table (only saved cmdlines); the TSC2NSEC and TIME_SHIFT
//! options (guest/host tracing) and latency-tracer text buffers are not applied or read.
//!
//! ```no_run
//! use jitterlab_trace::dat::DatFile;
//! use jitterlab_trace::EventSource;
//!
//! let dat = DatFile::open("trace.dat")?;
//! let mut events = dat.events(0)?;
//! while let Some(ev) = events.next_event()? {
//!     println!("{} {} {}", ev.ts, ev.cpu, ev.kind.name());
//! }
//! # Ok::<(), jitterlab_trace::Error>(())
//! ```

mod choice;
mod compress;
mod count;
mod cursor;
mod events;
mod header;
mod layout;
mod pages;
mod pages_out;
mod spool;
mod v7;
mod write;
mod write_v7;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

pub use choice::{BufferChoice, BufferSummary};
pub use compress::Compression;
pub use count::{CpuCount, EventCount, EventCounts};
pub use events::DatEvents;
pub use pages_out::{EncodeError, PageEncoder, HEADER_EVENT, HEADER_PAGE};
pub use write::{copy_to_v6, copy_to_v7, DatMeta, DatWriter, Spool};

use crate::decode::{Decoder, Kallsyms, LazyKallsyms, PrintkFormats};
use crate::format::{Endian, Formats};
use crate::printfmt::Printer;
use crate::ringbuf::{self, PageLayout};
use crate::{Comm, Error, ErrorKind, Location, Result, TraceMeta};
use header::Blob;
use pages::{ChunkPool, CpuSource, Segment};

/// How to read a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DatOptions {
    /// Skip what cannot be decoded (corrupt pages, bad chunks, records of unknown events,
    /// unparsable formats) and count it in `ReadStats::skipped`, instead of failing.
    pub lenient: bool,
}

/// Facts from the file header and options.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DatInfo {
    /// File format version: 6 or 7.
    pub version: u32,
    /// True when the traced machine was big-endian.
    pub big_endian: bool,
    /// Size of a user-space `long` on the traced machine (4 or 8).
    pub long_size: u8,
    /// Page size of the traced machine, bytes.
    pub page_size: u32,
    /// Compression of a version 7 file.
    pub compression: Compression,
    /// The compression library version the writer recorded.
    pub compression_version: Option<String>,
    /// Number of CPUs.
    pub cpus: u32,
    /// The trace clock of the top buffer (`local`, `mono`, ...).
    pub clock: Option<String>,
    /// `uname` of the traced machine.
    pub uname: Option<String>,
    /// Version of the program that wrote the file.
    pub tracer_version: Option<String>,
    /// The tracing session id.
    pub trace_id: Option<u64>,
    /// The `per_cpu/cpuN/stats` texts saved at the end of recording.
    pub cpustats: Vec<String>,
    /// Added to every timestamp (from the DATE and OFFSET options), ns.
    pub ts_offset: i64,
    /// Thread group ids, (pid, tgid), from jitterlab's saved-tgids option (files that
    /// `jitterlab record` wrote; trace-cmd's own files keep none).
    pub tgids: Vec<(i32, i32)>,
    /// The clocks read when the recording started (jitterlab's clocks option; files that
    /// `jitterlab record` wrote since issue 17).
    pub clocks: Option<ClockPair>,
    /// The recording machine's host name (jitterlab's clocks option; trace-cmd's own
    /// files name it in `uname`).
    pub hostname: Option<String>,
    /// The `env` block of the LTTng trace the file was converted from (jitterlab's LTTng
    /// option; see [`crate::ctf::DAT_SYSTEM`]).
    pub lttng_env: Option<Vec<(String, crate::ctf::EnvValue)>>,
}

/// CLOCK_MONOTONIC and CLOCK_REALTIME read together (at the start of a recording): a
/// timestamp `ts` of a monotonic trace clock is wall-clock time `ts + realtime_ns -
/// monotonic_ns` ([`ClockPair::wall_offset_ns`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ClockPair {
    /// CLOCK_MONOTONIC, ns.
    pub monotonic_ns: u64,
    /// CLOCK_REALTIME (ns since 1970-01-01 UTC).
    pub realtime_ns: u64,
}

impl ClockPair {
    /// The option's text: `monotonic NS` and `realtime NS` lines.
    pub fn to_text(&self) -> String {
        format!(
            "monotonic {}\nrealtime {}\n",
            self.monotonic_ns, self.realtime_ns
        )
    }

    /// The pair from the option's text; `None` when either line is missing or not a
    /// number (an option that does not parse is ignored, as trace-cmd ignores them).
    pub fn parse(text: &str) -> Option<ClockPair> {
        let (mut mono, mut real) = (None, None);
        for line in text.lines() {
            let mut f = line.split_whitespace();
            match (f.next(), f.next().and_then(|v| v.parse::<u64>().ok())) {
                (Some("monotonic"), Some(v)) => mono = Some(v),
                (Some("realtime"), Some(v)) => real = Some(v),
                _ => {}
            }
        }
        Some(ClockPair {
            monotonic_ns: mono?,
            realtime_ns: real?,
        })
    }

    /// What to add to a CLOCK_MONOTONIC timestamp to make it wall-clock time, ns.
    pub fn wall_offset_ns(&self) -> i64 {
        (i128::from(self.realtime_ns) - i128::from(self.monotonic_ns))
            .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }
}

/// Where one CPU's data of a buffer is in the file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CpuData {
    /// The CPU number.
    pub cpu: u32,
    /// File offset of the data.
    pub offset: u64,
    /// Size in the file, bytes (compressed size for version 7 compressed data).
    pub size: u64,
    /// File offset of this entry's `offset` field in the CPU table (its `size` field
    /// follows), for errors; for a compressed options section, the section's offset.
    #[serde(skip)]
    pub(crate) entry_at: u64,
}

/// One ring buffer of the trace: the top buffer (name `""`) or an instance.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Buffer {
    /// The instance name; empty for the top buffer.
    pub name: String,
    /// Its trace clock.
    pub clock: Option<String>,
    /// Its page (sub-buffer) size, bytes.
    pub page_size: usize,
    /// Its per-CPU data.
    pub cpus: Vec<CpuData>,
    /// True when the per-CPU data is compressed in chunks (version 7).
    pub compressed: bool,
    /// File offset where this buffer's data section starts (version 7; 0 in version 6).
    #[serde(skip)]
    pub(crate) data_start: u64,
    /// File offset where this buffer's data section ends.
    #[serde(skip)]
    pub(crate) data_end: u64,
    /// File offset of the field that gave the page size (the file header's, or the
    /// BUFFER option's), for errors.
    #[serde(skip)]
    pub(crate) page_size_at: u64,
}

enum Storage<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl Storage<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Borrowed(b) => b,
            Storage::Owned(v) => v,
            Storage::Mapped(m) => m,
        }
    }
}

/// The most saved cmdlines (task names by pid) kept: 65,536. The kernel's
/// `saved_cmdlines` holds at most 32,768 (`saved_cmdlines_size` is at most
/// `PID_MAX_DEFAULT`); a trace file listing more is refused when opened (issue 13).
pub const MAX_CMDLINES: usize = 1 << 16;

/// The thread groups (`PID TGID` lines) jitterlab's option of a file may list, at most
/// (issue 13: 8 bytes each, and a map of them when a trace is analyzed; a recording
/// sees far fewer tasks): a file listing more is refused when opened.
pub const MAX_TGIDS: usize = 1 << 20;

/// A saved cmdlines line (`PID COMM`): the pid and the task name.
pub(crate) fn cmdline(line: &[u8]) -> Option<(i32, Comm)> {
    let line = String::from_utf8_lossy(line);
    let (pid, comm) = line.trim_start().split_once(' ')?;
    Some((pid.parse().ok()?, Comm::new(comm)))
}

/// An open trace-cmd `.dat` file.
pub struct DatFile<'a> {
    name: String,
    data: Storage<'a>,
    info: DatInfo,
    meta: TraceMeta,
    endian: Endian,
    options: DatOptions,
    layout: PageLayout,
    header_page: String,
    header_event: String,
    formats: Arc<Formats>,
    format_files: Vec<(String, Vec<u8>)>,
    format_errors: u64,
    buffers: Vec<Buffer>,
    warnings: Vec<Error>,
    choice: Option<BufferChoice>,
    kallsyms_blob: Blob,
    printk_blob: Blob,
    cmdlines_blob: Blob,
    kallsyms: OnceLock<LazyKallsyms>,
    /// Whether the symbols' parse was started behind ([`DatFile::parse_symbols_behind`]).
    symbols_behind: std::sync::Once,
    printk: OnceLock<Arc<PrintkFormats>>,
    /// Bytes of CPU data read so far, for a progress display ([`DatFile::set_progress`]).
    progress: Option<Arc<AtomicU64>>,
}

impl DatFile<'static> {
    /// Open and memory-map the file at `path`. What is not a regular file (a pipe, a
    /// FIFO, `/dev/stdin`) cannot be mapped: it is read whole into memory.
    pub fn open(path: impl AsRef<Path>) -> Result<DatFile<'static>> {
        DatFile::open_with(path, DatOptions::default())
    }

    /// [`DatFile::open`] with options.
    pub fn open_with(path: impl AsRef<Path>, options: DatOptions) -> Result<DatFile<'static>> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let io = |e: std::io::Error| {
            Error::new(
                ErrorKind::Io,
                &name,
                Location::Whole,
                format!("cannot read: {e}"),
            )
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        if !file.metadata().map_err(io)?.is_file() {
            // A pipe, FIFO or character device cannot be mapped: read it whole.
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut file, &mut bytes).map_err(io)?;
            return DatFile::build(name, Storage::Owned(bytes), options);
        }
        // SAFETY: the map is read-only; a file truncated by another process while mapped
        // would fault, which is the usual caveat of mapped readers (trace-cmd maps too).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        DatFile::build(name, Storage::Mapped(map), options)
    }

    /// Parse a file held in `bytes`.
    pub fn from_vec(
        name: impl Into<String>,
        bytes: Vec<u8>,
        options: DatOptions,
    ) -> Result<DatFile<'static>> {
        DatFile::build(name.into(), Storage::Owned(bytes), options)
    }
}

impl<'a> DatFile<'a> {
    /// Parse the file whose bytes are `bytes`; `name` is used in errors.
    pub fn parse(name: impl Into<String>, bytes: &'a [u8]) -> Result<DatFile<'a>> {
        DatFile::parse_with(name, bytes, DatOptions::default())
    }

    /// [`DatFile::parse`] with options.
    pub fn parse_with(
        name: impl Into<String>,
        bytes: &'a [u8],
        options: DatOptions,
    ) -> Result<DatFile<'a>> {
        DatFile::build(name.into(), Storage::Borrowed(bytes), options)
    }

    fn build(name: String, data: Storage<'a>, options: DatOptions) -> Result<DatFile<'a>> {
        let bytes = data.bytes();
        if bytes.is_empty() {
            return Err(Error::new(
                ErrorKind::UnknownFormat,
                &name,
                Location::Whole,
                "expected a trace-cmd .dat file, found an empty file",
            ));
        }
        let mut h = header::parse(&name, bytes, options.lenient)?;
        let layout = PageLayout::parse(&h.header_page, h.endian, Some(h.info.page_size as usize))
            .and_then(|l| ringbuf::check_header_event(&h.header_event).map(|()| l))
            .map_err(|e| Error::new(ErrorKind::Format, &name, Location::Offset(0), e))?;
        for b in &mut h.buffers {
            if b.page_size == 0 {
                b.page_size = h.info.page_size as usize;
                b.page_size_at = h.page_size_at;
            }
            if b.page_size < layout.data_offset + 8 {
                return Err(Error::new(
                    ErrorKind::Corrupt,
                    &name,
                    Location::Offset(0),
                    format!(
                        "expected a page size above the {}-byte page header, found {}",
                        layout.data_offset, b.page_size
                    ),
                ));
            }
        }
        // The page size the saved header_page implies: its data field's offset and size.
        let header_page_size = PageLayout::parse(&h.header_page, h.endian, None)
            .map(|l| l.page_size)
            .unwrap_or(layout.page_size);
        let warnings = layout::check(&name, bytes.len() as u64, header_page_size, &h)?;
        let format = match h.info.version {
            6 => "trace-cmd .dat v6".to_string(),
            v => format!("trace-cmd .dat v{v} ({})", h.info.compression.name()),
        };
        let meta = TraceMeta {
            format,
            cpus: Some(h.info.cpus),
        };
        Ok(DatFile {
            name,
            data,
            meta,
            endian: h.endian,
            options,
            layout,
            header_page: h.header_page,
            header_event: h.header_event,
            formats: Arc::new(h.formats),
            format_files: h.format_files,
            format_errors: h.format_errors,
            buffers: h.buffers,
            warnings,
            choice: None,
            kallsyms_blob: h.kallsyms,
            printk_blob: h.printk,
            cmdlines_blob: h.cmdlines,
            info: h.info,
            kallsyms: OnceLock::new(),
            symbols_behind: std::sync::Once::new(),
            printk: OnceLock::new(),
            progress: None,
        })
    }

    /// The name used in errors.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        self.data.bytes()
    }

    /// Format and CPU count, for people.
    pub fn meta(&self) -> &TraceMeta {
        &self.meta
    }

    /// Header and option facts.
    pub fn info(&self) -> &DatInfo {
        &self.info
    }

    /// The buffers: the top buffer first (when recorded), then instances.
    pub fn buffers(&self) -> &[Buffer] {
        &self.buffers
    }

    /// What the layout check found odd but readable: bytes of CPU data that no CPU's
    /// range covers (a gap between ranges, data past the last range). Each names the
    /// file offset; events there are not read.
    pub fn warnings(&self) -> &[Error] {
        &self.warnings
    }

    /// The index of the buffer named `name` (`""` for the top buffer).
    pub fn buffer_index(&self, name: &str) -> Option<usize> {
        self.buffers.iter().position(|b| b.name == name)
    }

    /// The event formats, by id.
    pub fn formats(&self) -> &Formats {
        &self.formats
    }

    /// The format files as the file stores them, in order: the system (`ftrace` for
    /// ftrace's own events) and the text.
    pub fn format_files(&self) -> &[(String, Vec<u8>)] {
        &self.format_files
    }

    /// Format files without a name or id (lenient mode only; strict mode fails on them).
    /// Formats whose fields do not parse are found when their events are decoded.
    pub fn format_errors(&self) -> u64 {
        self.format_errors
    }

    /// The text of `events/header_page` saved in the file.
    pub fn header_page(&self) -> &str {
        &self.header_page
    }

    /// The text of `events/header_event` saved in the file.
    pub fn header_event(&self) -> &str {
        &self.header_event
    }

    /// The ring-buffer page layout.
    pub fn page_layout(&self) -> &PageLayout {
        &self.layout
    }

    /// The raw kallsyms text saved in the file (empty when none).
    pub fn kallsyms_text(&self) -> &[u8] {
        self.kallsyms_blob.get(self.bytes())
    }

    /// The raw printk_formats text saved in the file.
    pub fn printk_text(&self) -> &[u8] {
        self.printk_blob.get(self.bytes())
    }

    /// The raw saved_cmdlines text saved in the file.
    pub fn cmdlines_text(&self) -> &[u8] {
        self.cmdlines_blob.get(self.bytes())
    }

    /// The kernel symbols saved in the file (parsed on first use).
    pub fn kallsyms(&self) -> Arc<Kallsyms> {
        self.lazy_kallsyms().get().clone()
    }

    /// [`crate::Trace::parse_symbols_behind`].
    pub fn parse_symbols_behind(&self) {
        // Once a trace: a second call would only start a thread that waits for the first.
        self.symbols_behind.call_once(|| {
            let lazy = self.lazy_kallsyms();
            if lazy.text().is_empty()
                || !std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
            {
                return;
            }
            // Not joined: a pass that needs the table waits for it (`LazyKallsyms::get`),
            // and one that does not lets the process end without it.
            let _ = std::thread::Builder::new()
                .name("kallsyms".into())
                .spawn(move || {
                    lazy.get();
                });
        });
    }

    fn lazy_kallsyms(&self) -> LazyKallsyms {
        self.kallsyms
            .get_or_init(|| match &self.kallsyms_blob {
                // Decompressed: shared with the table, not copied.
                Blob::Owned(text) => LazyKallsyms::shared(text.clone()),
                // In the file (which the decoder does not borrow): one copy.
                blob => LazyKallsyms::shared(Arc::new(blob.get(self.bytes()).to_vec())),
            })
            .clone()
    }

    /// The trace_printk formats saved in the file (parsed on first use).
    pub fn printk_formats(&self) -> Arc<PrintkFormats> {
        self.printk
            .get_or_init(|| {
                Arc::new(PrintkFormats::parse_shared(match &self.printk_blob {
                    // Decompressed: shared with the table, not copied.
                    Blob::Owned(text) => text.clone(),
                    // In the file (which the decoder does not borrow): one copy.
                    blob => Arc::new(blob.get(self.bytes()).to_vec()),
                }))
            })
            .clone()
    }

    /// The saved cmdlines: task name by pid (of a pid listed twice, the later name; at
    /// most [`MAX_CMDLINES`] lines).
    pub fn cmdlines(&self) -> HashMap<i32, Comm> {
        crate::decode::lines(self.cmdlines_text())
            .filter_map(|(_, l)| cmdline(l))
            .take(MAX_CMDLINES)
            .collect()
    }

    /// A decoder for this file's records, with its kallsyms and printk formats.
    pub fn decoder(&self) -> Decoder {
        Decoder::new(
            self.endian,
            usize::from(self.info.long_size).max(self.layout.commit_size),
            self.formats.clone(),
        )
        .with_lazy_kallsyms(self.lazy_kallsyms())
        .with_printk(self.printk_formats())
        .with_lttng_env(self.info.lttng_env.as_deref().unwrap_or_default())
    }

    /// What `trace-cmd report -N` prints of this file's records after their event names
    /// ([`Printer`]), with its kallsyms and printk formats.
    pub fn printer(&self) -> Printer {
        Printer::new(
            self.endian,
            usize::from(self.info.long_size),
            self.formats.clone(),
        )
        .with_kallsyms(self.lazy_kallsyms().text())
        .with_printk(self.printk_formats())
    }

    fn buffer(&self, buffer: usize) -> Result<&Buffer> {
        self.buffers.get(buffer).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                &self.name,
                Location::Whole,
                format!(
                    "expected a buffer index below {}, found {buffer}",
                    self.buffers.len()
                ),
            )
        })
    }

    /// The events of buffer `buffer` (an index into [`DatFile::buffers`]), per-CPU streams
    /// merged in timestamp order.
    pub fn events(&self, buffer: usize) -> Result<DatEvents<'_>> {
        DatEvents::new(self, &[buffer])
    }

    /// The events of several buffers (indices into [`DatFile::buffers`]) merged in
    /// timestamp order as `trace-cmd report` merges them: on equal timestamps, the
    /// buffer listed first, then the lower CPU. [`crate::EventSource::origin`] names each
    /// event's buffer.
    pub fn events_of(&self, buffers: &[usize]) -> Result<DatEvents<'_>> {
        DatEvents::new(self, buffers)
    }

    /// The readable segments of one CPU's data, split to about `target` bytes each.
    fn segments(&self, b: &Buffer, cpu: &CpuData, target: usize) -> Result<Vec<Segment>> {
        let file = self.bytes();
        let start = usize::try_from(cpu.offset).unwrap_or(usize::MAX);
        let end = if b.compressed {
            // Up to the next CPU's chunks (sizes may be a few bytes short of them).
            let next = b
                .cpus
                .iter()
                .filter(|c| c.size > 0 && c.offset > cpu.offset)
                .map(|c| c.offset)
                .min()
                .unwrap_or(b.data_end)
                .min(b.data_end);
            usize::try_from(next).unwrap_or(usize::MAX)
        } else {
            start.saturating_add(usize::try_from(cpu.size).unwrap_or(usize::MAX))
        };
        if cpu.size == 0 && !b.compressed {
            return Ok(Vec::new());
        }
        if start > file.len() || end > file.len() || start > end {
            return Err(Error::new(ErrorKind::Truncated, &self.name, Location::Offset(cpu.offset), format!(
                "expected CPU {} data of buffer {:?} ({} bytes) within the file of {} bytes (truncated?)",
                cpu.cpu, b.name, cpu.size, file.len()
            )));
        }
        pages::segments(
            &self.name,
            file,
            self.endian,
            b.compressed.then_some(cpu.size),
            start..end,
            b.page_size,
            target,
        )
    }

    /// The page layout of buffer `b` (its page size may differ from the file's).
    fn layout_for(&self, b: &Buffer) -> PageLayout {
        PageLayout {
            page_size: b.page_size,
            ..self.layout
        }
    }

    fn source<'s>(&'s self, b: &Buffer, seg: Segment) -> CpuSource<'s> {
        let src = CpuSource::new(&self.name, self.bytes(), self.endian, b.page_size, seg)
            .counting(self.progress.as_deref());
        match &self.data {
            // Memory stays at the pages in flight, not the file's size.
            Storage::Mapped(map) => src.release_behind(map),
            _ => src,
        }
    }

    /// From now on, every reader of this file's CPU data (its events, its counts, its
    /// pages copied) adds the bytes it has passed to `read`, as it passes them (a page, or
    /// a compressed chunk, at a time): a progress display polls it, and compares it with
    /// [`DatFile::data_bytes`]. Reading in parallel (counts) adds from several threads.
    pub fn set_progress(&mut self, read: Arc<AtomicU64>) {
        self.progress = Some(read);
    }

    /// The bytes of CPU data of buffer `buffer` (every buffer's with `None`), as the CPU
    /// tables give them: what one pass over them adds to [`DatFile::set_progress`]'s
    /// counter (for compressed data, give or take four bytes per CPU).
    pub fn data_bytes(&self, buffer: Option<usize>) -> u64 {
        self.buffers
            .iter()
            .enumerate()
            .filter(|(i, _)| buffer.is_none_or(|b| b == *i))
            .flat_map(|(_, b)| &b.cpus)
            .fold(0u64, |sum, c| sum.saturating_add(c.size))
    }

    /// Counts of records per event and per CPU, lost events and the time span of buffer
    /// `buffer`, without decoding any field. Runs in parallel over CPUs and chunks.
    pub fn count_events(&self, buffer: usize) -> Result<EventCounts> {
        count::count(self, buffer, count::SEGMENT)
    }

    /// [`DatFile::count_events`] with parallel tasks of about `segment` bytes of CPU data
    /// (whole pages or compressed chunks) each.
    pub fn count_events_in_segments(&self, buffer: usize, segment: usize) -> Result<EventCounts> {
        count::count(self, buffer, segment)
    }

    /// Every page of one CPU's data in file order, decompressed (for copying a trace).
    pub fn cpu_pages(
        &self,
        buffer: usize,
        cpu_index: usize,
        mut f: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let b = self.buffer(buffer)?;
        let Some(cpu) = b.cpus.get(cpu_index) else {
            return Ok(());
        };
        let mut skipped = 0;
        let mut pool = ChunkPool::new(self.info.compression);
        for seg in self.segments(b, cpu, usize::MAX)? {
            let mut src = self.source(b, seg);
            while let Some(p) = src.next_page(&mut pool, self.options.lenient, &mut skipped)? {
                f(src.backing().get(p.range).unwrap_or(&[]))?;
            }
        }
        Ok(())
    }
}
