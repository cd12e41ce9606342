//! Writing trace-cmd `.dat` files that `trace-cmd report` and KernelShark open: version 6
//! (uncompressed), or version 7 (zstd, zlib or none; see `write_v7.rs`).
//!
//! A recorder streams ring-buffer pages (as `trace_pipe_raw` hands them out) per buffer
//! and CPU into a [`DatWriter`]; the pages are spooled (in memory or in files of a spool
//! directory; compressed in chunks of ten pages as they arrive for version 7) until
//! [`DatWriter::finish`] knows every size and writes the file in one forward pass. Version
//! 6: header, header files, formats, kallsyms, printk formats, cmdlines, options, the
//! flyrecord CPU table, then each CPU's pages at page-aligned offsets, then each instance's
//! table and pages.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::compress::{Compression, Deflater};
use super::header::{opt, MAGIC};
pub use super::spool::Spool;
pub(crate) use super::spool::CHUNK_PAGES;
use super::spool::{BufferSpool, CpuSpool, SpoolFile};
use super::DatFile;

/// What a .dat file says besides the pages: the tracefs files and facts of the machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DatMeta {
    /// The traced machine was big-endian.
    pub big_endian: bool,
    /// Size of a `long` on the traced machine (4 or 8).
    pub long_size: u8,
    /// The ring-buffer page (sub-buffer) size, bytes.
    pub page_size: u32,
    /// Number of CPUs (each buffer has this many per-CPU streams, empty ones included).
    pub cpus: u32,
    /// `events/header_page`.
    pub header_page: Vec<u8>,
    /// `events/header_event`.
    pub header_event: Vec<u8>,
    /// `events/ftrace/*/format`.
    pub ftrace_formats: Vec<Vec<u8>>,
    /// Per system, `events/SYSTEM/*/format`.
    pub event_formats: Vec<(String, Vec<Vec<u8>>)>,
    /// `/proc/kallsyms`.
    pub kallsyms: Vec<u8>,
    /// `printk_formats`.
    pub printk: Vec<u8>,
    /// `saved_cmdlines`.
    pub cmdlines: Vec<u8>,
    /// `saved_tgids` (`PID TGID` per line), written as jitterlab's own option; empty:
    /// none written.
    pub tgids: Vec<u8>,
    /// The clocks read when the recording started, written as jitterlab's own option.
    pub clocks: Option<super::ClockPair>,
    /// The recording machine's host name, written in the same option as `clocks`.
    pub hostname: Option<String>,
    /// The `trace_clock` file (`[local] global ...`), when known.
    pub trace_clock: Option<String>,
    /// `uname -a`-like text.
    pub uname: Option<String>,
    /// The writer's name and version.
    pub version: Option<String>,
    /// `per_cpu/cpuN/stats`, one text per CPU.
    pub cpustats: Vec<String>,
    /// The `env` block of the LTTng trace the file is converted from, written as
    /// jitterlab's own option; `None`: none written.
    pub lttng_env: Option<Vec<(String, crate::ctf::EnvValue)>>,
}

impl DatMeta {
    /// Add the format file of an event of `system` (`ftrace` for ftrace's own events).
    pub fn add_format(&mut self, system: &str, text: Vec<u8>) {
        if system == "ftrace" {
            self.ftrace_formats.push(text);
        } else if let Some(s) = self.event_formats.iter_mut().find(|(s, _)| s == system) {
            s.1.push(text);
        } else {
            self.event_formats.push((system.to_string(), vec![text]));
        }
    }

    /// The metadata of an open file, to copy it.
    pub fn from_dat(dat: &DatFile<'_>) -> DatMeta {
        let info = dat.info();
        let mut formats = DatMeta::default();
        for (system, text) in dat.format_files() {
            formats.add_format(system, text.clone());
        }
        DatMeta {
            big_endian: info.big_endian,
            long_size: info.long_size,
            page_size: info.page_size,
            cpus: info.cpus,
            header_page: dat.header_page().as_bytes().to_vec(),
            header_event: dat.header_event().as_bytes().to_vec(),
            ftrace_formats: formats.ftrace_formats,
            event_formats: formats.event_formats,
            kallsyms: dat.kallsyms_text().to_vec(),
            printk: dat.printk_text().to_vec(),
            cmdlines: dat.cmdlines_text().to_vec(),
            tgids: info
                .tgids
                .iter()
                .map(|(pid, tgid)| format!("{pid} {tgid}\n"))
                .collect::<String>()
                .into_bytes(),
            clocks: info.clocks,
            hostname: info.hostname.clone(),
            trace_clock: info.clock.as_ref().map(|c| format!("[{c}]")),
            uname: info.uname.clone(),
            version: info.tracer_version.clone(),
            cpustats: info.cpustats.clone(),
            lttng_env: info.lttng_env.clone(),
        }
    }
}

/// Writes a .dat file (version 6, or version 7 with [`DatWriter::new_v7`]) from metadata
/// and per-CPU page streams.
///
/// ```
/// use jitterlab_trace::dat::{DatFile, DatMeta, DatWriter, Spool};
/// use jitterlab_trace::{Error, ErrorKind, Location};
///
/// // Copy a file: its metadata, then every page of every CPU of every buffer
/// // (what [`copy_to_v6`] does).
/// fn copy(dat: &DatFile) -> jitterlab_trace::Result<Vec<u8>> {
///     let io = |e: std::io::Error| Error::new(ErrorKind::Io, "copy", Location::Whole, e.to_string());
///     let mut w = DatWriter::new(DatMeta::from_dat(dat), Spool::Memory).map_err(io)?;
///     for (b, buffer) in dat.buffers().iter().enumerate() {
///         let id = w.add_buffer(&buffer.name).map_err(io)?;
///         for (i, cpu) in buffer.cpus.iter().enumerate() {
///             dat.cpu_pages(b, i, |page| w.write_pages(id, cpu.cpu, page).map_err(io))?;
///         }
///     }
///     let mut out = Vec::new();
///     w.finish(&mut out).map_err(io)?;
///     Ok(out)
/// }
/// ```
pub struct DatWriter {
    pub(crate) meta: DatMeta,
    spool: Spool,
    pub(crate) buffers: Vec<BufferSpool>,
    /// `None`: version 6; else version 7 with this compression.
    pub(crate) v7: Option<Compression>,
    pub(crate) deflater: Option<Deflater>,
}

impl DatWriter {
    /// A version 6 writer with the top buffer (index 0) ready for pages.
    pub fn new(meta: DatMeta, spool: Spool) -> io::Result<DatWriter> {
        DatWriter::build(meta, spool, None)
    }

    /// A version 7 writer: sections compressed with `compression`, CPU data in chunks of
    /// ten pages compressed as they arrive (so the spool holds compressed data).
    pub fn new_v7(meta: DatMeta, spool: Spool, compression: Compression) -> io::Result<DatWriter> {
        DatWriter::build(meta, spool, Some(compression))
    }

    fn build(meta: DatMeta, spool: Spool, v7: Option<Compression>) -> io::Result<DatWriter> {
        if meta.page_size == 0 || meta.cpus == 0 || !matches!(meta.long_size, 4 | 8) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "expected a page size, CPUs and a long size of 4 or 8, found {}, {}, {}",
                    meta.page_size, meta.cpus, meta.long_size
                ),
            ));
        }
        let deflater = match v7 {
            Some(c) if c != Compression::None => Some(Deflater::new(c, meta.big_endian)),
            _ => None,
        };
        let mut w = DatWriter {
            meta,
            spool,
            buffers: Vec::new(),
            v7,
            deflater,
        };
        w.add_buffer("")?;
        Ok(w)
    }

    /// Add an instance buffer; returns its index for [`DatWriter::write_pages`].
    pub fn add_buffer(&mut self, name: &str) -> io::Result<usize> {
        if let Some(i) = self.buffers.iter().position(|b| b.name == name) {
            return Ok(i);
        }
        let cpus = (0..self.meta.cpus)
            .map(|_| {
                Ok(CpuSpool {
                    file: SpoolFile::new(&self.spool)?,
                    pending: Vec::new(),
                    chunks: 0,
                })
            })
            .collect::<io::Result<_>>()?;
        self.buffers.push(BufferSpool {
            name: name.to_string(),
            cpus,
        });
        Ok(self.buffers.len() - 1)
    }

    /// Takes a file of whole pages — as a recorder spooled them — as all of `cpu`'s data
    /// in buffer `buffer`, without copying it; the file is removed when the writer is
    /// dropped. Only for uncompressed output (version 6, or 7 without compression), and
    /// only before any page of that CPU was written.
    pub fn adopt_pages(&mut self, buffer: usize, cpu: u32, path: PathBuf) -> io::Result<()> {
        let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
        if self.deflater.is_some() {
            return Err(invalid(
                "compressed output takes its pages through write_pages".into(),
            ));
        }
        let ps = u64::from(self.meta.page_size);
        let spool = self
            .buffers
            .get_mut(buffer)
            .and_then(|b| b.cpus.get_mut(cpu as usize))
            .ok_or_else(|| invalid(format!("no buffer {buffer} CPU {cpu}")))?;
        if spool.file.len() != 0 {
            return Err(invalid(format!(
                "buffer {buffer} CPU {cpu} already has pages"
            )));
        }
        let file = File::options().read(true).append(true).open(&path)?;
        let len = file.metadata()?.len();
        if len % ps != 0 {
            return Err(invalid(format!(
                "{}: {len} bytes is not a whole number of {ps}-byte pages",
                path.display()
            )));
        }
        spool.file = SpoolFile::File { file, path, len };
        Ok(())
    }

    /// Append whole pages of `cpu` to buffer `buffer`; a short last page is padded with
    /// zeros to the page size (its commit word says how much of it is data).
    pub fn write_pages(&mut self, buffer: usize, cpu: u32, pages: &[u8]) -> io::Result<()> {
        let ps = self.meta.page_size as usize;
        let spool = self
            .buffers
            .get_mut(buffer)
            .and_then(|b| b.cpus.get_mut(cpu as usize))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("no buffer {buffer} CPU {cpu}"),
                )
            })?;
        let chunk = ps * CHUNK_PAGES;
        spool.append(pages, self.deflater.as_mut(), chunk)?;
        let rest = pages.len() % ps;
        if rest != 0 {
            spool.append(&vec![0; ps - rest], self.deflater.as_mut(), chunk)?;
        }
        Ok(())
    }

    /// Write the file to `out`; returns its size.
    pub fn finish(self, out: impl Write) -> io::Result<u64> {
        if self.v7.is_some() {
            return super::write_v7::finish(self, out);
        }
        self.finish_v6(out)
    }

    fn finish_v6(mut self, out: impl Write) -> io::Result<u64> {
        let mut out = Counter {
            inner: io::BufWriter::with_capacity(1 << 20, out),
            pos: 0,
        };
        let e = self.meta.big_endian;
        let ps = u64::from(self.meta.page_size);
        let align = |x: u64| x.div_ceil(ps) * ps;
        let head = self.head();
        let table_len = 10 + 16 * u64::from(self.meta.cpus);
        let buffer_opts: u64 = self
            .buffers
            .iter()
            .skip(1)
            .map(|b| 6 + 8 + b.name.len() as u64 + 1)
            .sum();
        let head_len = head.len() as u64 + buffer_opts + 2 + table_len + self.clock_len();
        // Lay out every buffer: (where its table is, where each CPU's pages are).
        let mut layout: Vec<(u64, Vec<u64>)> = Vec::new();
        let mut pos = head_len;
        for (i, b) in self.buffers.iter().enumerate() {
            let table_at = if i == 0 {
                head_len - table_len - self.clock_len()
            } else {
                pos
            };
            if i > 0 {
                pos += table_len;
            }
            let mut cpus = Vec::new();
            for s in &b.cpus {
                let at = align(pos);
                cpus.push(at);
                pos = at + s.file.len();
            }
            layout.push((table_at, cpus));
        }
        out.write_all(&head)?;
        for (b, (table_at, _)) in self.buffers.iter().zip(&layout).skip(1) {
            let mut o = num(e, *table_at);
            o.extend_from_slice(b.name.as_bytes());
            o.push(0);
            option(&mut out, e, opt::BUFFER, &o)?;
        }
        out.write_all(&num(e, 0u16))?;
        for (i, b) in self.buffers.iter_mut().enumerate() {
            let (table_at, cpus) = &layout[i];
            pad_to(&mut out, *table_at)?;
            out.write_all(b"flyrecord\0")?;
            for (s, &at) in b.cpus.iter().zip(cpus) {
                out.write_all(&num(e, at))?;
                out.write_all(&num(e, s.file.len()))?;
            }
            if i == 0 {
                if let Some(c) = &self.meta.trace_clock {
                    out.write_all(&num(e, c.len() as u64))?;
                    out.write_all(c.as_bytes())?;
                }
            }
            for (s, &at) in b.cpus.iter_mut().zip(cpus) {
                pad_to(&mut out, at)?;
                s.file.copy_to(&mut out)?;
            }
        }
        out.flush()?;
        Ok(out.pos)
    }

    fn clock_len(&self) -> u64 {
        self.meta
            .trace_clock
            .as_ref()
            .map_or(0, |c| 8 + c.len() as u64)
    }

    /// Everything up to the BUFFER options (which need offsets).
    fn head(&self) -> Vec<u8> {
        let m = &self.meta;
        let e = m.big_endian;
        let mut o = Vec::new();
        o.extend_from_slice(MAGIC);
        o.extend_from_slice(b"6\0");
        o.push(u8::from(e));
        o.push(m.long_size);
        o.extend_from_slice(&num(e, m.page_size));
        o.extend_from_slice(&m.header_info());
        o.extend_from_slice(&m.ftrace_part());
        o.extend_from_slice(&m.events_part());
        sized(&mut o, e, &m.kallsyms, false);
        sized(&mut o, e, &m.printk, false);
        sized(&mut o, e, &m.cmdlines, true);
        o.extend_from_slice(&num(e, m.cpus));
        o.extend_from_slice(b"options  \0");
        for (id, body) in m.options() {
            // Infallible into a Vec.
            let _ = option(&mut o, e, id, &body);
        }
        o
    }
}

impl DatMeta {
    /// `header_page` and `header_event` with their tags and sizes.
    pub(crate) fn header_info(&self) -> Vec<u8> {
        let e = self.big_endian;
        let mut o = b"header_page\0".to_vec();
        sized(&mut o, e, &self.header_page, true);
        o.extend_from_slice(b"header_event\0");
        sized(&mut o, e, &self.header_event, true);
        o
    }

    /// The ftrace formats: count, then each with its size.
    pub(crate) fn ftrace_part(&self) -> Vec<u8> {
        let e = self.big_endian;
        let mut o = num(e, self.ftrace_formats.len() as u32);
        for f in &self.ftrace_formats {
            sized(&mut o, e, f, true);
        }
        o
    }

    /// The event formats: systems, each with its name, count and formats.
    pub(crate) fn events_part(&self) -> Vec<u8> {
        let e = self.big_endian;
        let mut o = num(e, self.event_formats.len() as u32);
        for (system, files) in &self.event_formats {
            o.extend_from_slice(system.as_bytes());
            o.push(0);
            o.extend_from_slice(&num(e, files.len() as u32));
            for f in files {
                sized(&mut o, e, f, true);
            }
        }
        o
    }

    /// The options both versions write (clock, uname, version, CPU stats and count).
    pub(crate) fn options(&self) -> Vec<(u16, Vec<u8>)> {
        let text = |s: &str| {
            let mut v = s.as_bytes().to_vec();
            v.push(0);
            v
        };
        let mut opts = Vec::new();
        if let Some(c) = &self.trace_clock {
            opts.push((opt::TRACECLOCK, text(c)));
        }
        if let Some(u) = &self.uname {
            opts.push((opt::UNAME, text(u)));
        }
        if let Some(v) = &self.version {
            opts.push((opt::VERSION, text(v)));
        }
        for s in &self.cpustats {
            opts.push((opt::CPUSTAT, text(s)));
        }
        opts.push((opt::CPUCOUNT, num(self.big_endian, self.cpus)));
        if !self.tgids.is_empty() {
            let mut t = self.tgids.clone();
            t.push(0);
            opts.push((opt::JITTERLAB_TGIDS, t));
        }
        if let Some(env) = &self.lttng_env {
            opts.push((opt::JITTERLAB_LTTNG, text(&crate::ctf::env_text(env))));
        }
        if self.clocks.is_some() || self.hostname.is_some() {
            let mut t = self.clocks.map(|c| c.to_text()).unwrap_or_default();
            if let Some(h) = &self.hostname {
                t.push_str(&format!("hostname {}\n", h.replace(['\n', '\0'], " ")));
            }
            opts.push((opt::JITTERLAB_CLOCKS, text(&t)));
        }
        opts
    }
}

pub(crate) struct Counter<W: Write> {
    pub(crate) inner: io::BufWriter<W>,
    pub(crate) pos: u64,
}

impl<W: Write> Write for Counter<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(b)?;
        self.pos += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

pub(crate) fn pad_to<W: Write>(out: &mut Counter<W>, at: u64) -> io::Result<()> {
    if at < out.pos {
        return Err(io::Error::other(format!(
            "layout error: at {} past {at}",
            out.pos
        )));
    }
    let zeros = [0u8; 4096];
    while out.pos < at {
        let n = ((at - out.pos) as usize).min(zeros.len());
        out.write_all(&zeros[..n])?;
    }
    Ok(())
}

pub(crate) trait Num: Copy {
    fn bytes(self, big: bool) -> Vec<u8>;
}
impl Num for u16 {
    fn bytes(self, big: bool) -> Vec<u8> {
        if big {
            self.to_be_bytes().to_vec()
        } else {
            self.to_le_bytes().to_vec()
        }
    }
}
impl Num for u32 {
    fn bytes(self, big: bool) -> Vec<u8> {
        if big {
            self.to_be_bytes().to_vec()
        } else {
            self.to_le_bytes().to_vec()
        }
    }
}
impl Num for u64 {
    fn bytes(self, big: bool) -> Vec<u8> {
        if big {
            self.to_be_bytes().to_vec()
        } else {
            self.to_le_bytes().to_vec()
        }
    }
}

pub(crate) fn num<N: Num>(big: bool, n: N) -> Vec<u8> {
    n.bytes(big)
}

pub(crate) fn sized(o: &mut Vec<u8>, big: bool, data: &[u8], wide: bool) {
    if wide {
        o.extend_from_slice(&num(big, data.len() as u64));
    } else {
        o.extend_from_slice(&num(big, data.len() as u32));
    }
    o.extend_from_slice(data);
}

pub(crate) fn option(out: &mut impl Write, big: bool, id: u16, body: &[u8]) -> io::Result<()> {
    out.write_all(&num(big, id))?;
    out.write_all(&num(big, body.len() as u32))?;
    out.write_all(body)
}

/// Copy `dat` (every buffer, CPU and page) into a version 6 file at `path`, spooling in
/// `spool`.
pub fn copy_to_v6(dat: &DatFile<'_>, path: &Path, spool: Spool) -> crate::Result<u64> {
    copy(dat, path, spool, None)
}

/// Copy `dat` into a version 7 file whose sections and CPU data are compressed with
/// `compression`.
pub fn copy_to_v7(
    dat: &DatFile<'_>,
    path: &Path,
    spool: Spool,
    compression: Compression,
) -> crate::Result<u64> {
    copy(dat, path, spool, Some(compression))
}

fn copy(
    dat: &DatFile<'_>,
    path: &Path,
    spool: Spool,
    v7: Option<Compression>,
) -> crate::Result<u64> {
    let io = |e: io::Error| {
        crate::Error::new(
            crate::ErrorKind::Io,
            path.display().to_string(),
            crate::Location::Whole,
            e.to_string(),
        )
    };
    let meta = DatMeta::from_dat(dat);
    let mut w = match v7 {
        None => DatWriter::new(meta, spool),
        Some(c) => DatWriter::new_v7(meta, spool, c),
    }
    .map_err(io)?;
    for (b, buffer) in dat.buffers().iter().enumerate() {
        let id = w.add_buffer(&buffer.name).map_err(io)?;
        for (i, cpu) in buffer.cpus.iter().enumerate() {
            dat.cpu_pages(b, i, |page| w.write_pages(id, cpu.cpu, page).map_err(io))?;
        }
    }
    let file = File::create(path).map_err(io)?;
    w.finish(file).map_err(io)
}
