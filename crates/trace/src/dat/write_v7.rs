//! The version 7 layout of [`DatWriter`]: sections (compressed when the file is), options
//! sections pointing at them, one flyrecord section per buffer with each CPU's chunks at a
//! page-aligned offset, and the strings section that names the sections.

use std::io::{self, Write};

use super::compress::Compression;
use super::header::{opt, MAGIC};
use super::write::{num, option, pad_to, sized, Counter, DatWriter, CHUNK_PAGES};

const SEC_COMPRESSED: u16 = 1;
const STRINGS: u16 = 15;

/// Section descriptions, gathered into the strings section.
#[derive(Default)]
struct Strings(Vec<u8>);

impl Strings {
    fn id(&mut self, s: &str) -> u32 {
        let at = self.0.len() as u32;
        self.0.extend_from_slice(s.as_bytes());
        self.0.push(0);
        at
    }
}

fn section_header(big: bool, id: u16, flags: u16, desc: u32, size: u64) -> Vec<u8> {
    let mut h = num(big, id);
    h.extend_from_slice(&num(big, flags));
    h.extend_from_slice(&num(big, desc));
    h.extend_from_slice(&num(big, size));
    h
}

/// The selected clock name of a `trace_clock` text (`[local] global` gives `local`).
fn clock_name(text: &str) -> String {
    match text.split_whitespace().find(|w| w.starts_with('[')) {
        Some(w) => w.trim_matches(|c| c == '[' || c == ']').to_string(),
        None => text.trim().to_string(),
    }
}

pub(crate) fn finish(mut w: DatWriter, out: impl Write) -> io::Result<u64> {
    let m = &w.meta;
    let e = m.big_endian;
    let kind = w.v7.unwrap_or(Compression::None);
    let ps = u64::from(m.page_size);
    let chunk = m.page_size as usize * CHUNK_PAGES;
    if let Some(d) = w.deflater.as_mut() {
        for b in &mut w.buffers {
            for c in &mut b.cpus {
                while !c.pending.is_empty() {
                    c.flush_chunk(d, chunk)?;
                }
            }
        }
    }
    let m = &w.meta;
    let mut strings = Strings::default();
    let version = match kind {
        Compression::Zstd => zstd::zstd_safe::version_string().to_string(),
        Compression::Zlib => "1.3".to_string(),
        Compression::None => String::new(),
    };
    let mut head = Vec::new();
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(b"7\0");
    head.push(u8::from(e));
    head.push(m.long_size);
    head.extend_from_slice(&num(e, m.page_size));
    head.extend_from_slice(kind.name().as_bytes());
    head.push(0);
    head.extend_from_slice(version.as_bytes());
    head.push(0);
    let mut pos = head.len() as u64 + 8;
    // The metadata sections, built (and compressed) now.
    let blob = |data: &[u8], wide: bool| {
        let mut v = Vec::new();
        sized(&mut v, e, data, wide);
        v
    };
    let parts: Vec<(u16, &str, Vec<u8>)> = vec![
        (opt::HEADER_INFO, "headers", m.header_info()),
        (opt::FTRACE_EVENTS, "ftrace events", m.ftrace_part()),
        (opt::EVENT_FORMATS, "events format", m.events_part()),
        (opt::KALLSYMS, "kallsyms", blob(&m.kallsyms, false)),
        (opt::PRINTK, "printk", blob(&m.printk, false)),
        (opt::CMDLINES, "command lines", blob(&m.cmdlines, true)),
    ];
    let flags = if w.deflater.is_some() {
        SEC_COMPRESSED
    } else {
        0
    };
    let mut sections = Vec::new();
    let mut refs = Vec::new();
    for (id, desc, data) in parts {
        let payload = match w.deflater.as_mut() {
            Some(d) => d.section(&data)?,
            None => data,
        };
        let mut s = section_header(e, id, flags, strings.id(desc), payload.len() as u64);
        s.extend_from_slice(&payload);
        refs.push((id, pos));
        pos += s.len() as u64;
        sections.push(s);
    }
    // The first options section: where the metadata is, and the common options.
    let mut opts = Vec::new();
    for (id, at) in &refs {
        option(&mut opts, e, *id, &num(e, *at))?;
    }
    for (id, body) in m.options() {
        option(&mut opts, e, id, &body)?;
    }
    let opts_len = opts.len() as u64 + 6 + 8;
    let first_opts = pos;
    pos += 16 + opts_len;
    // The flyrecord sections: each CPU's data at a page-aligned offset.
    let compressed = w.deflater.is_some();
    let mut layout = Vec::new();
    for b in &w.buffers {
        let sec_at = pos;
        let mut cur = pos + 16;
        let mut cpus = Vec::new();
        for c in &b.cpus {
            let at = cur.div_ceil(ps) * ps;
            let len = c.file.len() + if compressed { 4 } else { 0 };
            cpus.push((at, len));
            cur = at + len;
        }
        layout.push((sec_at, cur - (sec_at + 16), cpus));
        pos = cur;
    }
    let last_opts = pos;
    let clock = m.trace_clock.as_deref().map(clock_name).unwrap_or_default();
    let mut bopts = Vec::new();
    for (b, (sec_at, _, cpus)) in w.buffers.iter().zip(&layout) {
        let mut o = num(e, *sec_at);
        o.extend_from_slice(b.name.as_bytes());
        o.push(0);
        o.extend_from_slice(clock.as_bytes());
        o.push(0);
        o.extend_from_slice(&num(e, m.page_size));
        o.extend_from_slice(&num(e, cpus.len() as u32));
        for (cpu, (at, len)) in cpus.iter().enumerate() {
            o.extend_from_slice(&num(e, cpu as u32));
            o.extend_from_slice(&num(e, *at));
            o.extend_from_slice(&num(e, *len));
        }
        option(&mut bopts, e, opt::BUFFER, &o)?;
    }
    option(&mut bopts, e, opt::DONE, &num(e, 0u64))?;
    // Write it all, in order.
    let mut out = Counter {
        inner: io::BufWriter::with_capacity(1 << 20, out),
        pos: 0,
    };
    out.write_all(&head)?;
    out.write_all(&num(e, first_opts))?;
    for s in &sections {
        out.write_all(s)?;
    }
    let desc = strings.id("options");
    out.write_all(&section_header(e, opt::DONE, 0, desc, opts_len))?;
    out.write_all(&opts)?;
    option(&mut out, e, opt::DONE, &num(e, last_opts))?;
    let bufdesc: Vec<u32> = w
        .buffers
        .iter()
        .map(|b| strings.id(&format!("buffer flyrecord {}", b.name)))
        .collect();
    for ((b, (sec_at, size, cpus)), desc) in w.buffers.iter_mut().zip(&layout).zip(bufdesc) {
        pad_to(&mut out, *sec_at)?;
        out.write_all(&section_header(e, opt::BUFFER, flags, desc, *size))?;
        for (c, (at, _)) in b.cpus.iter_mut().zip(cpus) {
            pad_to(&mut out, *at)?;
            if compressed {
                out.write_all(&num(e, c.chunks))?;
            }
            c.file.copy_to(&mut out)?;
        }
    }
    pad_to(&mut out, last_opts)?;
    let desc = strings.id("options");
    out.write_all(&section_header(e, opt::DONE, 0, desc, bopts.len() as u64))?;
    out.write_all(&bopts)?;
    let payload = match w.deflater.as_mut() {
        Some(d) => d.section(&strings.0)?,
        None => strings.0.clone(),
    };
    out.write_all(&section_header(e, STRINGS, flags, 0, payload.len() as u64))?;
    out.write_all(&payload)?;
    out.flush()?;
    Ok(out.pos)
}
