//! The metadata of a .dat file: the initial header, then (version 6) the fixed sequence of
//! header files, formats, kallsyms, printk formats, cmdlines, options and the flyrecord CPU
//! table, or (version 7) the chain of options sections and the sections they point to.

use std::ops::Range;
use std::sync::Arc;

use super::compress::Compression;
use super::cursor::{Cursor, Origin};
use super::{cmdline, Buffer, ClockPair, CpuData, DatInfo, MAX_CMDLINES, MAX_TGIDS};
use crate::decode::{count_past, is_printk_format, is_symbol, MAX_PRINTK_FORMATS, MAX_SYMBOLS};
use crate::format::{Endian, Formats};
use crate::{ErrorKind, Result};

/// The file magic: `\x17\x08\x44` then `tracing`.
pub(crate) const MAGIC: &[u8] = b"\x17\x08\x44tracing";

/// Option ids (`TRACECMD_OPTION_*`).
pub(crate) mod opt {
    pub const DONE: u16 = 0;
    pub const DATE: u16 = 1;
    pub const CPUSTAT: u16 = 2;
    pub const BUFFER: u16 = 3;
    pub const TRACECLOCK: u16 = 4;
    pub const UNAME: u16 = 5;
    pub const OFFSET: u16 = 7;
    pub const CPUCOUNT: u16 = 8;
    pub const VERSION: u16 = 9;
    pub const TRACEID: u16 = 11;
    pub const HEADER_INFO: u16 = 16;
    pub const FTRACE_EVENTS: u16 = 17;
    pub const EVENT_FORMATS: u16 = 18;
    pub const KALLSYMS: u16 = 19;
    pub const PRINTK: u16 = 20;
    pub const CMDLINES: u16 = 21;
    pub const BUFFER_TEXT: u16 = 22;
    /// jitterlab's own option, far above trace-cmd's ids (which end at 22): the
    /// kernel's `saved_tgids` text, `PID TGID` per line, so that a recorded trace keeps
    /// the thread groups. trace-cmd (3.1) skips an option id it does not know.
    pub const JITTERLAB_TGIDS: u16 = 0x8001;
    /// jitterlab's own option: the recording machine's host name and a CLOCK_MONOTONIC /
    /// CLOCK_REALTIME pair read when the recording started (`hostname NAME`,
    /// `monotonic NS` and `realtime NS` lines), so that traces of different hosts can be
    /// told apart and put on one wall clock.
    pub const JITTERLAB_CLOCKS: u16 = 0x8002;
    /// jitterlab's own option: the file was converted from an LTTng trace, whose
    /// metadata's `env` block it holds (`key=value` lines, text values in double
    /// quotes), so that its events read as the tracer and kernel versions there say
    /// (see [`crate::ctf::DAT_SYSTEM`]).
    pub const JITTERLAB_LTTNG: u16 = 0x8003;
}

/// Bytes kept for later: in the file, or decompressed (shared with what is parsed from
/// them, such as the kallsyms table, rather than copied).
#[derive(Clone, Debug)]
pub(crate) enum Blob {
    Missing,
    File(Range<usize>),
    Owned(Arc<Vec<u8>>),
}

impl Blob {
    pub(crate) fn get<'a>(&'a self, file: &'a [u8]) -> &'a [u8] {
        match self {
            Blob::Missing => &[],
            Blob::File(r) => file.get(r.clone()).unwrap_or(&[]),
            Blob::Owned(v) => v,
        }
    }
}

/// Everything read from the metadata.
pub(crate) struct Header {
    pub(crate) info: DatInfo,
    pub(crate) endian: Endian,
    pub(crate) header_page: String,
    pub(crate) header_event: String,
    pub(crate) formats: Formats,
    /// The format files as stored: system (`ftrace` for ftrace's own) and text.
    pub(crate) format_files: Vec<(String, Vec<u8>)>,
    pub(crate) format_errors: u64,
    pub(crate) kallsyms: Blob,
    pub(crate) printk: Blob,
    pub(crate) cmdlines: Blob,
    pub(crate) buffers: Vec<Buffer>,
    /// File offset of the page size in the file header.
    pub(crate) page_size_at: u64,
    /// Version 6: where the CPU data may start (the end of the top buffer's CPU table and
    /// clock); from there to the end of the file, every byte belongs to a CPU's data, an
    /// instance's options and CPU table, or the page alignment between them.
    pub(crate) data_region: Option<u64>,
    /// Version 6: the options and CPU table of each instance (they sit between CPU data).
    pub(crate) meta_ranges: Vec<(Range<u64>, String)>,
    /// Version 7: the file header and every section the options reach (options, header
    /// files, formats, kallsyms, printk, cmdlines, buffers' data), header included.
    pub(crate) sections: Vec<Range<u64>>,
}

pub(crate) fn parse(name: &str, data: &[u8], lenient: bool) -> Result<Header> {
    let mut c = Cursor::new(name, data, Origin::File(0), Endian::Little);
    if data.len() < MAGIC.len() || &data[..MAGIC.len()] != MAGIC {
        return Err(c.err(
            ErrorKind::UnknownFormat,
            "expected the trace-cmd magic \\x17\\x08\\x44tracing (not a trace-cmd .dat file)",
        ));
    }
    c.pos = MAGIC.len();
    let version = c.cstr("the file version")?;
    let version: u32 = version.parse().map_err(|_| {
        c.err_at(
            ErrorKind::Corrupt,
            MAGIC.len(),
            format!("expected a file version number, found {version:?}"),
        )
    })?;
    if !(6..=7).contains(&version) {
        return Err(c.err_at(
            ErrorKind::Unsupported,
            MAGIC.len(),
            format!("expected file version 6 or 7, found {version}"),
        ));
    }
    c.endian = match c.u8("the endianness byte")? {
        0 => Endian::Little,
        1 => Endian::Big,
        b => {
            return Err(c.err_at(
                ErrorKind::Corrupt,
                c.pos - 1,
                format!("expected endianness 0 or 1, found {b}"),
            ))
        }
    };
    let long_size = c.u8("the size of a long")?;
    if long_size != 4 && long_size != 8 {
        return Err(c.err_at(
            ErrorKind::Corrupt,
            c.pos - 1,
            format!("expected a long size of 4 or 8, found {long_size}"),
        ));
    }
    let page_size_at = c.pos as u64;
    let page_size = c.u32("the page size")?;
    if !(64..=(64 << 20)).contains(&page_size) {
        return Err(c.err_at(
            ErrorKind::Corrupt,
            c.pos - 4,
            format!("expected a page size of 64 B to 64 MiB, found {page_size}"),
        ));
    }
    let mut h = Header {
        info: DatInfo {
            version,
            big_endian: c.endian == Endian::Big,
            long_size,
            page_size,
            compression: Compression::None,
            compression_version: None,
            cpus: 0,
            clock: None,
            uname: None,
            tracer_version: None,
            trace_id: None,
            cpustats: Vec::new(),
            ts_offset: 0,
            tgids: Vec::new(),
            clocks: None,
            hostname: None,
            lttng_env: None,
        },
        endian: c.endian,
        header_page: String::new(),
        header_event: String::new(),
        formats: Formats::new(),
        format_files: Vec::new(),
        format_errors: 0,
        kallsyms: Blob::Missing,
        printk: Blob::Missing,
        cmdlines: Blob::Missing,
        buffers: Vec::new(),
        page_size_at,
        data_region: None,
        meta_ranges: Vec::new(),
        sections: Vec::new(),
    };
    if version == 6 {
        parse_v6(&mut c, &mut h, lenient)?;
    } else {
        super::v7::parse(&mut c, &mut h, lenient)?;
    }
    Ok(h)
}

pub(crate) fn parse_headers(c: &mut Cursor, h: &mut Header) -> Result<()> {
    c.tag(b"header_page\0", "the header_page tag")?;
    let n = c.u64("the header_page size")?;
    h.header_page = String::from_utf8_lossy(c.bytes(n, "the header_page text")?).into_owned();
    c.tag(b"header_event\0", "the header_event tag")?;
    let n = c.u64("the header_event size")?;
    h.header_event = String::from_utf8_lossy(c.bytes(n, "the header_event text")?).into_owned();
    Ok(())
}

fn add_format(
    c: &Cursor,
    h: &mut Header,
    system: &str,
    at: usize,
    text: &[u8],
    lenient: bool,
) -> Result<()> {
    h.format_files.push((system.to_string(), text.to_vec()));
    let text = String::from_utf8_lossy(text);
    if let Err(e) = h.formats.add_text(system, &text) {
        if !lenient {
            return Err(c.err_at(
                ErrorKind::Format,
                at,
                format!("in the format file of a {system} event: {e}"),
            ));
        }
        h.format_errors += 1;
    }
    Ok(())
}

pub(crate) fn parse_ftrace_formats(c: &mut Cursor, h: &mut Header, lenient: bool) -> Result<()> {
    let count = c.u32("the number of ftrace formats")?;
    for _ in 0..count {
        let n = c.u64("the size of an ftrace format")?;
        let at = c.pos;
        let text = c.bytes(n, "an ftrace format")?;
        add_format(c, h, "ftrace", at, text, lenient)?;
    }
    Ok(())
}

pub(crate) fn parse_event_formats(c: &mut Cursor, h: &mut Header, lenient: bool) -> Result<()> {
    let systems = c.u32("the number of event systems")?;
    for _ in 0..systems {
        let system = c.cstr("an event system name")?;
        let count = c.u32("the number of events of a system")?;
        for _ in 0..count {
            let n = c.u64("the size of an event format")?;
            let at = c.pos;
            let text = c.bytes(n, "an event format")?;
            add_format(c, h, &system, at, text, lenient)?;
        }
    }
    Ok(())
}

/// A size-prefixed blob at the cursor: its range in the cursor's data.
/// Issue 13: the kallsyms, printk formats and saved cmdlines a file keeps list at most
/// [`MAX_SYMBOLS`], [`MAX_PRINTK_FORMATS`] and [`MAX_CMDLINES`] entries (what a table of
/// them costs grows with the entries, not the bytes: dense hostile text, an entry every 4
/// to 6 bytes, would cost several times its size). `text`, kept by `what`, listing more
/// is an error at `at` (its size word, or its section), in lenient mode too.
pub(crate) fn check_entries(c: &Cursor, at: usize, id: u16, text: &[u8], what: &str) -> Result<()> {
    type IsEntry = fn(&[u8]) -> bool;
    let (max, entries, entry): (usize, &str, IsEntry) = match id {
        opt::KALLSYMS => (
            MAX_SYMBOLS,
            "kallsyms symbols (a kernel lists some 100,000 to 300,000)",
            is_symbol,
        ),
        opt::PRINTK => (
            MAX_PRINTK_FORMATS,
            "printk formats (a kernel lists some hundreds)",
            is_printk_format,
        ),
        opt::JITTERLAB_TGIDS => (
            MAX_TGIDS,
            "thread groups (one per task the recording saw)",
            |l| tgid_line(l).is_some(),
        ),
        _ => (
            MAX_CMDLINES,
            "saved cmdlines (the kernel keeps at most 32768)",
            |l| cmdline(l).is_some(),
        ),
    };
    match count_past(text, max, entry) {
        Some(n) => Err(c.err_at(
            ErrorKind::Limit,
            at,
            format!("expected at most {max} {entries}, found {n} in {what}"),
        )),
        None => Ok(()),
    }
}

pub(crate) fn sized(c: &mut Cursor, wide: bool, what: &str) -> Result<Range<usize>> {
    let n = if wide {
        c.u64(what)?
    } else {
        u64::from(c.u32(what)?)
    };
    let start = c.pos;
    c.bytes(n, what)?;
    Ok(start..c.pos)
}

fn parse_v6(c: &mut Cursor, h: &mut Header, lenient: bool) -> Result<()> {
    parse_headers(c, h)?;
    parse_ftrace_formats(c, h, lenient)?;
    parse_event_formats(c, h, lenient)?;
    for (id, wide, what) in [
        (opt::KALLSYMS, false, "the kallsyms"),
        (opt::PRINTK, false, "the printk formats"),
        (opt::CMDLINES, true, "the saved cmdlines"),
    ] {
        let at = c.pos;
        let r = sized(c, wide, what)?;
        check_entries(c, at, id, &c.data[r.clone()], what)?;
        let blob = Blob::File(r);
        match id {
            opt::KALLSYMS => h.kallsyms = blob,
            opt::PRINTK => h.printk = blob,
            _ => h.cmdlines = blob,
        }
    }
    let cpus = c.u32("the number of CPUs")?;
    if cpus > 65536 {
        return Err(c.err_at(
            ErrorKind::Limit,
            c.pos - 4,
            format!("expected at most 65536 CPUs, found {cpus}"),
        ));
    }
    h.info.cpus = cpus;
    let mut instances = Vec::new();
    let mut has_clock = false;
    let kind = v6_options(c, h, &mut instances, &mut has_clock)?;
    if kind != "flyrecord" {
        return Err(c.err(
            ErrorKind::Unsupported,
            "expected flyrecord data (latency traces are text, not supported)",
        ));
    }
    let cpu_data = v6_cpu_table(c, cpus)?;
    let mut clock = None;
    if has_clock {
        let r = sized(c, true, "the trace clock")?;
        clock = parse_clock(&String::from_utf8_lossy(&c.data[r]));
    }
    h.info.clock = clock.clone();
    h.data_region = Some(c.pos as u64);
    h.buffers.push(Buffer {
        name: String::new(),
        clock: clock.clone(),
        page_size: h.info.page_size as usize,
        cpus: cpu_data,
        compressed: false,
        data_start: 0,
        data_end: c.data.len() as u64,
        page_size_at: h.page_size_at,
    });
    for (name, at) in instances {
        let mut ic = Cursor::at(c.name, c.data, at, c.endian)?;
        let mut ignore = Vec::new();
        let kind = v6_options(&mut ic, h, &mut ignore, &mut false)?;
        if kind != "flyrecord" {
            return Err(ic.err(
                ErrorKind::Unsupported,
                format!("expected flyrecord data for buffer {name:?}"),
            ));
        }
        let cpus = v6_cpu_table(&mut ic, cpus)?;
        h.meta_ranges.push((at..ic.pos as u64, name.clone()));
        h.buffers.push(Buffer {
            name,
            clock: clock.clone(),
            page_size: h.info.page_size as usize,
            cpus,
            compressed: false,
            data_start: 0,
            data_end: c.data.len() as u64,
            page_size_at: h.page_size_at,
        });
    }
    Ok(())
}

/// `options  \0` and its options (optional), then the data kind (`flyrecord`, `latency`).
fn v6_options(
    c: &mut Cursor,
    h: &mut Header,
    instances: &mut Vec<(String, u64)>,
    has_clock: &mut bool,
) -> Result<String> {
    let mut at = c.pos;
    let mut tag = c.bytes(10, "the options or flyrecord tag")?;
    if tag == b"options  \0" {
        loop {
            let id = c.u16("an option id")?;
            if id == opt::DONE {
                break;
            }
            let n = c.u32("an option size")?;
            let at = c.pos;
            let body = c.bytes(u64::from(n), "an option")?;
            *has_clock |= id == opt::TRACECLOCK;
            if id == opt::BUFFER {
                let mut b = Cursor::new(c.name, body, Origin::File(at as u64), c.endian);
                let off = b.u64("the buffer offset")?;
                let name = b.cstr("the buffer name")?;
                instances.push((name, off));
            } else {
                common_option(c, h, id, body, at)?;
            }
        }
        at = c.pos;
        tag = c.bytes(10, "the flyrecord tag")?;
    }
    match tag {
        b"flyrecord\0" => Ok("flyrecord".into()),
        b"latency  \0" => Ok("latency".into()),
        _ => Err(c.err_at(
            ErrorKind::Corrupt,
            at,
            format!(
                "expected \"flyrecord\" or \"options\", found {:?}",
                String::from_utf8_lossy(tag)
            ),
        )),
    }
}

fn v6_cpu_table(c: &mut Cursor, cpus: u32) -> Result<Vec<CpuData>> {
    let mut v = Vec::new();
    for cpu in 0..cpus {
        let entry_at = c.pos as u64;
        let offset = c.u64("a CPU data offset")?;
        let size = c.u64("a CPU data size")?;
        v.push(CpuData {
            cpu,
            offset,
            size,
            entry_at,
        });
    }
    Ok(v)
}

/// Options both versions share.
pub(crate) fn common_option(
    c: &Cursor,
    h: &mut Header,
    id: u16,
    body: &[u8],
    at: usize,
) -> Result<()> {
    let text = || {
        let b = match body.iter().position(|&x| x == 0) {
            Some(n) => &body[..n],
            None => body,
        };
        String::from_utf8_lossy(b).trim_end().to_string()
    };
    match id {
        opt::DATE => {
            h.info.ts_offset = h
                .info
                .ts_offset
                .wrapping_add(parse_c_int(&text()).wrapping_mul(1000))
        }
        opt::OFFSET => h.info.ts_offset = h.info.ts_offset.wrapping_add(parse_c_int(&text())),
        opt::CPUSTAT => h.info.cpustats.push(text()),
        opt::TRACECLOCK if h.info.clock.is_none() => h.info.clock = parse_clock(&text()),
        opt::UNAME => h.info.uname = Some(text()),
        opt::JITTERLAB_TGIDS => {
            let body = body.split(|&b| b == 0).next().unwrap_or_default();
            check_entries(c, at, id, body, "the thread groups option")?;
            h.info.tgids = parse_tgids(body)
        }
        opt::JITTERLAB_CLOCKS => {
            let t = text();
            h.info.clocks = ClockPair::parse(&t);
            h.info.hostname = t
                .lines()
                .find_map(|l| l.strip_prefix("hostname "))
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty());
        }
        opt::JITTERLAB_LTTNG => h.info.lttng_env = Some(crate::ctf::parse_env(&text())),
        opt::VERSION => h.info.tracer_version = Some(text()),
        opt::TRACEID => h.info.trace_id = c.endian.u64(body, 0),
        opt::CPUCOUNT => {
            if let Some(n) = c.endian.u32(body, 0) {
                if n > 65536 {
                    return Err(c.err_at(
                        ErrorKind::Limit,
                        at,
                        format!("expected at most 65536 CPUs, found {n}"),
                    ));
                }
                h.info.cpus = h.info.cpus.max(n);
            }
        }
        _ => {}
    }
    Ok(())
}

/// `saved_tgids` text (`PID TGID` per line) as (pid, tgid) pairs; lines that do not
/// parse, and pids without a thread group (tgid 0), are left out.
fn parse_tgids(body: &[u8]) -> Vec<(i32, i32)> {
    body.split(|&b| b == b'\n').filter_map(tgid_line).collect()
}

/// One `PID TGID` line of `saved_tgids`, when it parses with a tgid above 0.
fn tgid_line(line: &[u8]) -> Option<(i32, i32)> {
    let line = std::str::from_utf8(line).ok()?;
    let mut f = line.split_whitespace();
    let pid = f.next()?.parse().ok()?;
    let tgid = f.next()?.parse().ok()?;
    (tgid > 0).then_some((pid, tgid))
}

/// `strtoll(s, NULL, 0)`: decimal, or hex with `0x`; 0 when it does not parse.
fn parse_c_int(s: &str) -> i64 {
    let s = s.trim();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => i64::from_str_radix(h, 16).unwrap_or(0),
        None => s.parse().unwrap_or(0),
    };
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

/// The selected clock of a `trace_clock` file (`[local] global ...`), or a bare name.
fn parse_clock(s: &str) -> Option<String> {
    let s = s.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    if let Some(sel) = s.split_whitespace().find(|w| w.starts_with('[')) {
        return Some(sel.trim_matches(|c| c == '[' || c == ']').to_string());
    }
    (!s.is_empty() && !s.contains(' ')).then(|| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_parsers() {
        assert_eq!(parse_c_int("0x10"), 16);
        assert_eq!(parse_c_int("-25"), -25);
        assert_eq!(parse_c_int("junk"), 0);
        assert_eq!(
            parse_clock("[local] global counter").as_deref(),
            Some("local")
        );
        assert_eq!(parse_clock("local global").as_deref(), None);
        assert_eq!(parse_clock("mono\0").as_deref(), Some("mono"));
    }
}
