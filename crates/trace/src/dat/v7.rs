//! Version 7 metadata: the chain of options sections and the sections they point to
//! (header files, formats, kallsyms, printk formats, cmdlines, buffers), each with a
//! 16-byte header (`u16 id, u16 flags, u32 description, u64 size`: trace-cmd 3.1 writes
//! the size in 8 bytes) and, when flagged, compressed whole (trace-cmd compresses a
//! section in one block, whatever its size). What compressed sections inflate to is
//! bounded by [`SECTIONS_INFLATED`] in all.

use std::ops::Range;
use std::sync::Arc;

use super::compress::{Compression, Inflater};
use super::cursor::{error_at, Cursor, Origin};
use super::header::{
    check_entries, common_option, opt, parse_event_formats, parse_ftrace_formats, parse_headers,
    sized, Blob, Header,
};
use super::Buffer;
use super::CpuData;
use crate::{ErrorKind, Result};

/// Section flag: the section is compressed.
const SEC_COMPRESSED: u16 = 1;
/// CPU ids accepted (the kernel's NR_CPUS is at most 8192).
const MAX_CPUS: u32 = 65536;
/// Options sections followed at most (a loop in the chain is an error).
const MAX_OPTION_SECTIONS: usize = 1024;
/// The most the compressed sections of a file inflate to, in all: 32 MiB. Their
/// content is kept (kallsyms, printk formats, cmdlines) or parsed into what is kept
/// (event formats, options): the /proc/kallsyms of a distribution kernel with its modules
/// is some 10 MB, of a big kernel some 20 MB (the committed traces' is 5.4 MB); a
/// kernel's event formats, some 2 MB. A section claiming more than is left is an error
/// naming it and its offset, before anything is allocated for it (issue 13: the reader
/// stays under 64 MB, whatever a size word says).
pub(crate) const SECTIONS_INFLATED: usize = 32 << 20;

/// A section's name, for errors.
fn section_name(id: u16) -> &'static str {
    match id {
        opt::DONE => "options",
        opt::BUFFER => "buffer data",
        opt::HEADER_INFO => "header info",
        opt::FTRACE_EVENTS => "ftrace event formats",
        opt::EVENT_FORMATS => "event formats",
        opt::KALLSYMS => "kallsyms",
        opt::PRINTK => "printk formats",
        opt::CMDLINES => "cmdlines",
        _ => "unknown",
    }
}

/// A v7 section: its id, flags and payload (decompressed if need be).
struct Section {
    id: u16,
    at: u64,
    /// The payload when stored as is: its range in the file.
    range: Range<usize>,
    /// The payload when compressed: decompressed here.
    inflated: Option<Vec<u8>>,
    flags: u16,
}

impl Section {
    fn cursor<'a>(&'a self, c: &Cursor<'a>) -> Cursor<'a> {
        match &self.inflated {
            Some(v) => Cursor::new(c.name, v, Origin::Inflated(self.at), c.endian),
            None => Cursor::new(
                c.name,
                &c.data[self.range.clone()],
                Origin::File(self.range.start as u64),
                c.endian,
            ),
        }
    }
}

/// Read the section header at `at`; decompress the payload when `inflate` and it is
/// compressed, adding what it inflates to to `total` (the file's sections so far), which
/// may not pass [`SECTIONS_INFLATED`].
fn section(
    c: &Cursor,
    at: u64,
    want: u16,
    inflate: Option<Compression>,
    total: &mut usize,
) -> Result<Section> {
    let mut s = Cursor::at(c.name, c.data, at, c.endian)?;
    let id = s.u16("a section id")?;
    if id != want {
        return Err(s.err_at(
            ErrorKind::Corrupt,
            at as usize,
            format!("expected section id {want}, found {id}"),
        ));
    }
    let flags = s.u16("the section flags")?;
    let _desc = s.u32("the section description id")?;
    let size = s.u64("the section size")?;
    let start = s.pos;
    s.bytes(size, "the section")?;
    let range = start..s.pos;
    let mut inflated = None;
    if flags & SEC_COMPRESSED != 0 {
        if let Some(kind) = inflate {
            if kind == Compression::None {
                return Err(s.err_at(
                    ErrorKind::Corrupt,
                    at as usize,
                    "expected an uncompressed section in a file without compression",
                ));
            }
            let mut p = Cursor::new(
                c.name,
                &c.data[range.clone()],
                Origin::File(start as u64),
                c.endian,
            );
            let zsize = p.u32("the compressed size")?;
            let usize_ = p.u32("the uncompressed size")? as usize;
            let z = p.bytes(u64::from(zsize), "the compressed data")?;
            let corrupt = |e: String| {
                error_at(
                    ErrorKind::Decompress,
                    c.name,
                    Origin::File(start as u64 + 8),
                    0,
                    e,
                )
            };
            let mut inflater = Inflater::new(kind);
            let left = SECTIONS_INFLATED.saturating_sub(*total);
            if usize_ > left {
                // Nothing is allocated for the claim: the data, inflated and dropped up
                // to what is left, tells a claim that is too big from a corrupt one.
                return Err(match inflater.measure(z, left).map_err(corrupt)? {
                    Some(n) => corrupt(format!(
                        "expected {usize_} bytes after decompression, found {n}"
                    )),
                    None => s.err_at(
                        ErrorKind::Limit,
                        at as usize,
                        format!(
                            "expected the compressed sections to inflate to at most {SECTIONS_INFLATED} bytes in all ({left} bytes left for this one), found section {id} ({}) claiming {usize_} bytes and inflating past that",
                            section_name(id),
                        ),
                    ),
                });
            }
            *total += usize_;
            let mut out = Vec::new();
            inflater.inflate(z, usize_, &mut out).map_err(corrupt)?;
            inflated = Some(out);
        }
    }
    Ok(Section {
        id,
        at,
        range,
        inflated,
        flags,
    })
}

pub(crate) fn parse(c: &mut Cursor, h: &mut Header, lenient: bool) -> Result<()> {
    let cname = c.cstr("the compression name")?;
    let cversion = c.cstr("the compression version")?;
    let kind = Compression::from_name(&cname).ok_or_else(|| {
        c.err(
            ErrorKind::Unsupported,
            format!("expected compression none, zstd or zlib, found {cname:?}"),
        )
    })?;
    h.info.compression = kind;
    h.info.compression_version = (!cversion.is_empty()).then_some(cversion);
    let mut next = c.u64("the offset of the first options section")?;
    h.sections.push(0..c.pos as u64);
    let mut refs: Vec<(u16, u64)> = Vec::new();
    let mut buffers: Vec<(Vec<u8>, Origin)> = Vec::new();
    let mut seen = Vec::new();
    let mut inflated = 0;
    while next != 0 {
        if seen.contains(&next) || seen.len() >= MAX_OPTION_SECTIONS {
            return Err(c.err_at(
                ErrorKind::Corrupt,
                next as usize,
                "expected a chain of options sections, found a loop",
            ));
        }
        seen.push(next);
        let sec = section(c, next, opt::DONE, Some(kind), &mut inflated)?;
        h.sections.push(sec.at..sec.range.end as u64);
        let mut o = sec.cursor(c);
        loop {
            let id = o.u16("an option id")?;
            let n = o.u32("an option size")?;
            let at = o.pos;
            let body = o.bytes(u64::from(n), "an option")?;
            let mut b = Cursor::new(o.name, body, sec_origin(&sec, at), o.endian);
            match id {
                opt::DONE => {
                    next = b.u64("the offset of the next options section")?;
                    break;
                }
                opt::HEADER_INFO..=opt::CMDLINES => refs.push((id, b.u64("a section offset")?)),
                opt::BUFFER => buffers.push((body.to_vec(), sec_origin(&sec, at))),
                opt::BUFFER_TEXT => {}
                _ => common_option(&o, h, id, body, at)?,
            }
        }
    }
    for (id, at) in refs {
        let inflate = !matches!(id, opt::KALLSYMS | opt::PRINTK | opt::CMDLINES);
        let sec = section(c, at, id, inflate.then_some(kind), &mut inflated)?;
        h.sections.push(sec.at..sec.range.end as u64);
        let mut s = sec.cursor(c);
        match id {
            opt::HEADER_INFO => parse_headers(&mut s, h)?,
            opt::FTRACE_EVENTS => parse_ftrace_formats(&mut s, h, lenient)?,
            opt::EVENT_FORMATS => parse_event_formats(&mut s, h, lenient)?,
            _ => {
                let blob = lazy_blob(c, &sec, kind, id == opt::CMDLINES, &mut inflated)?;
                let what = format!("section {id} ({})", section_name(id));
                check_entries(c, sec.at as usize, id, blob.get(c.data), &what)?;
                match id {
                    opt::KALLSYMS => h.kallsyms = blob,
                    opt::PRINTK => h.printk = blob,
                    _ => h.cmdlines = blob,
                }
            }
        }
    }
    for (body, origin) in buffers {
        let b = buffer_option(c, &body, origin)?;
        h.sections.push(b.data_start.saturating_sub(16)..b.data_end);
        if let Some(cpu) = b
            .cpus
            .iter()
            .find(|cpu| h.info.cpus > 0 && cpu.cpu >= h.info.cpus)
        {
            // The CPUCOUNT option counts the traced machine's CPUs.
            return Err(super::cursor::error_at(
                ErrorKind::Corrupt,
                c.name,
                Origin::File(0),
                cpu.entry_at.saturating_sub(4) as usize,
                format!(
                    "expected a CPU id below the CPU count {} in buffer {:?}, found {}",
                    h.info.cpus, b.name, cpu.cpu
                ),
            ));
        }
        h.buffers.push(b);
    }
    if h.header_page.is_empty() {
        return Err(c.err_at(
            ErrorKind::Corrupt,
            0,
            "expected a header info section (header_page), found none",
        ));
    }
    if h.info.clock.is_none() {
        h.info.clock = h
            .buffers
            .iter()
            .find(|b| b.name.is_empty())
            .and_then(|b| b.clock.clone());
    }
    h.buffers.sort_by_key(|b| !b.name.is_empty());
    let max_cpus = h
        .buffers
        .iter()
        .flat_map(|b| b.cpus.iter().map(|c| c.cpu + 1))
        .max()
        .unwrap_or(0);
    h.info.cpus = h.info.cpus.max(max_cpus);
    Ok(())
}

fn sec_origin(sec: &Section, at: usize) -> Origin {
    match sec.inflated {
        Some(_) => Origin::Inflated(sec.at),
        None => Origin::File((sec.range.start + at) as u64),
    }
}

/// kallsyms, printk and cmdlines are decompressed now (they are size-prefixed inside the
/// section) but kept as bytes for parsing on demand.
fn lazy_blob(
    c: &Cursor,
    sec: &Section,
    kind: Compression,
    wide: bool,
    inflated: &mut usize,
) -> Result<Blob> {
    if sec.flags & SEC_COMPRESSED != 0 {
        let sec = section(c, sec.at, sec.id, Some(kind), inflated)?;
        let mut s = sec.cursor(c);
        let r = sized(&mut s, wide, "a size-prefixed section")?;
        // The blob is cut out of the inflated section in place, not copied: a section
        // of N bytes costs N, not 2N.
        let mut v = sec.inflated.unwrap_or_default();
        if r.end > v.len() {
            v.clear();
        }
        v.truncate(r.end);
        v.drain(..r.start.min(v.len()));
        Ok(Blob::Owned(Arc::new(v)))
    } else {
        let mut s = Cursor::new(c.name, c.data, Origin::File(0), c.endian);
        s.pos = sec.range.start;
        s.data = &c.data[..sec.range.end];
        Ok(Blob::File(sized(&mut s, wide, "a size-prefixed section")?))
    }
}

/// A BUFFER option: the flyrecord section, name, clock, [page size,] CPU table.
fn buffer_option(c: &Cursor, body: &[u8], origin: Origin) -> Result<Buffer> {
    let mut b = Cursor::new(c.name, body, origin, c.endian);
    let file_at = |pos: usize| match origin {
        Origin::File(at) => at + pos as u64,
        Origin::Inflated(at) => at,
    };
    let offset = b.u64("the buffer section offset")?;
    let name = b.cstr("the buffer name")?;
    let clock = b.cstr("the buffer clock")?;
    // trace-cmd 3.1 and later store the page size here; earlier writers do not.
    let rest = b.remaining();
    let mut page_size = None;
    let with_page =
        rest >= 8 && c.endian.u32(body, b.pos + 4).map(|n| n as usize * 20 + 8) == Some(rest);
    let page_size_at = file_at(b.pos);
    if with_page {
        page_size = Some(b.u32("the buffer page size")? as usize);
    }
    let cpus = b.u32("the buffer CPU count")?;
    let mut table = Vec::new();
    for _ in 0..cpus {
        let at = b.pos;
        let cpu = b.u32("a CPU id")?;
        if cpu >= MAX_CPUS {
            return Err(b.err_at(
                ErrorKind::Limit,
                at,
                format!("expected a CPU id below {MAX_CPUS}, found {cpu}"),
            ));
        }
        let entry_at = file_at(b.pos);
        let offset = b.u64("a CPU data offset")?;
        let size = b.u64("a CPU data size")?;
        table.push(CpuData {
            cpu,
            offset,
            size,
            entry_at,
        });
    }
    // Its data is read chunk by chunk (dat/pages.rs), never inflated here.
    let sec = section(c, offset, opt::BUFFER, None, &mut 0)?;
    let ps = page_size.unwrap_or(0);
    if page_size.is_some() && !(64..=(64 << 20)).contains(&ps) {
        return Err(b.err_at(
            ErrorKind::Corrupt,
            0,
            format!("expected a page size of 64 B to 64 MiB, found {ps}"),
        ));
    }
    Ok(Buffer {
        name,
        clock: (!clock.is_empty()).then_some(clock),
        page_size: ps,
        cpus: table,
        compressed: sec.flags & SEC_COMPRESSED != 0,
        data_start: sec.range.start as u64,
        data_end: sec.range.end as u64,
        page_size_at: if page_size.is_some() { page_size_at } else { 0 },
    })
}
