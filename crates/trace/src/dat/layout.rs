//! The layout of the CPU data, checked when a file is opened: the page size against the
//! saved `header_page`, page alignment and whole pages of uncompressed data, CPU data
//! inside its section and apart from every other CPU's, and (as warnings) bytes that no
//! CPU's range covers.
//!
//! What trace-cmd (3.1) and jitterlab write, and so what passes:
//! - version 6 and uncompressed version 7: each CPU's data starts at a multiple of the
//!   page size and is whole pages; the CPUs of a buffer follow each other; in version 6
//!   the options and CPU table of each instance sit between the buffers' data, padded to
//!   the next page; nothing follows the last CPU's data;
//! - compressed version 7: each CPU's chunks start anywhere in the buffer's section
//!   (trace-cmd pads to a page, its zlib writer does not) and its size may be 4 bytes
//!   short of the chunks; the reader bounds each CPU by the next CPU's offset.
//!
//! A wrong value there would otherwise read silently as fewer or more events: a page size
//! of 8192 over 4096-byte pages halves them, an offset off by 3 reads no page of that CPU,
//! overlapping ranges count pages twice.

use std::ops::Range;

use super::header::Header;
use super::Buffer;
use crate::{Error, ErrorKind, Location, Result};

/// A stretch of the file the layout accounts for.
struct Span {
    range: Range<u64>,
    what: String,
    /// Where the error points when this span overlaps one before it.
    at: u64,
}

/// Checks the layout of `h`'s buffers in a file of `file_len` bytes whose `header_page`
/// implies pages of `header_page_size` bytes. Returns the warnings (bytes no range covers);
/// a layout that would read wrong events is an error naming the offset of the field.
pub(crate) fn check(
    name: &str,
    file_len: u64,
    header_page_size: usize,
    h: &Header,
) -> Result<Vec<Error>> {
    let err =
        |at: u64, msg: String| Error::new(ErrorKind::Corrupt, name, Location::Offset(at), msg);
    let file_ps = u64::from(h.info.page_size);
    if !file_ps.is_power_of_two() {
        return Err(err(
            h.page_size_at,
            format!("expected a page size that is a power of two, found {file_ps}"),
        ));
    }
    for b in &h.buffers {
        let ps = b.page_size as u64;
        if !ps.is_power_of_two() {
            return Err(err(
                b.page_size_at,
                format!(
                    "expected a page size that is a power of two for buffer {:?}, found {ps}",
                    b.name
                ),
            ));
        }
    }
    // The saved header_page describes the top buffer's pages (the kernel prints its
    // sub-buffer size there); instances may have other sub-buffer sizes (version 7 says
    // so per buffer).
    if let Some(top) = h.buffers.iter().find(|b| b.name.is_empty()) {
        if top.page_size != header_page_size {
            return Err(err(
                top.page_size_at,
                format!(
                    "expected a page size of {header_page_size} (the data field of the saved \
                     header_page ends there), found {}",
                    top.page_size
                ),
            ));
        }
    }
    let mut spans = Vec::new();
    for b in &h.buffers {
        cpu_spans(b, file_ps, file_len, &err, &mut spans)?;
    }
    // Version 6: CPU data follows the top buffer's CPU table.
    if let Some(start) = h.data_region {
        if let Some(s) = spans.iter().find(|s| s.range.start < start) {
            return Err(err(
                s.at,
                format!(
                    "expected {} after the CPU table (from byte {start}), found offset {}",
                    s.what, s.range.start
                ),
            ));
        }
    }
    for (r, inst) in &h.meta_ranges {
        spans.push(Span {
            range: r.clone(),
            what: format!("the options and CPU table of buffer {inst:?}"),
            at: r.start,
        });
    }
    spans.sort_by_key(|s| (s.range.start, s.range.end));
    for w in spans.windows(2) {
        if w[1].range.start < w[0].range.end {
            return Err(err(
                w[1].at,
                format!(
                    "expected {} (bytes {}..{}) apart from {} (bytes {}..{}), found them overlapping",
                    w[1].what,
                    w[1].range.start,
                    w[1].range.end,
                    w[0].what,
                    w[0].range.start,
                    w[0].range.end
                ),
            ));
        }
    }
    let mut warnings = Vec::new();
    match h.data_region {
        // Version 6: the data runs from the top CPU table to the end of the file.
        Some(start) => gaps(
            name,
            start..file_len,
            &spans.iter().collect::<Vec<_>>(),
            (file_ps, 1),
            "the CPU data",
            &mut warnings,
        ),
        // Version 7: each buffer's data fills its section, and the sections the options
        // reach fill the file (a section no option reaches is a lost BUFFER option, or
        // worse).
        None => {
            let mut secs: Vec<Span> = h
                .sections
                .iter()
                .map(|r| Span {
                    range: r.clone(),
                    what: format!("the section at byte {}", r.start),
                    at: r.start,
                })
                .collect();
            secs.sort_by_key(|s| (s.range.start, s.range.end));
            gaps(
                name,
                0..file_len,
                &secs.iter().collect::<Vec<_>>(),
                (file_ps, file_ps),
                "the file",
                &mut warnings,
            );
            for b in &h.buffers {
                let mine: Vec<&Span> = spans
                    .iter()
                    .filter(|s| s.range.start >= b.data_start && s.range.start < b.data_end)
                    .collect();
                let what = format!("the data section of buffer {:?}", b.name);
                let ps = b.page_size as u64;
                gaps(
                    name,
                    b.data_start..b.data_end.min(file_len),
                    &mine,
                    (ps, ps),
                    &what,
                    &mut warnings,
                );
            }
        }
    }
    Ok(warnings)
}

/// The spans of `b`'s non-empty CPUs, each checked on its own.
fn cpu_spans(
    b: &Buffer,
    file_ps: u64,
    file_len: u64,
    err: &dyn Fn(u64, String) -> Error,
    spans: &mut Vec<Span>,
) -> Result<()> {
    let ps = b.page_size as u64;
    let mut seen = Vec::new();
    for c in &b.cpus {
        if seen.contains(&c.cpu) {
            return Err(err(
                c.entry_at.saturating_sub(4),
                format!(
                    "expected each CPU once in the CPU table of buffer {:?}, found CPU {} again",
                    b.name, c.cpu
                ),
            ));
        }
        seen.push(c.cpu);
        if c.size == 0 {
            continue;
        }
        let what = format!("CPU {} data of buffer {:?}", c.cpu, b.name);
        if b.compressed {
            if c.offset < b.data_start || c.offset >= b.data_end {
                return Err(err(
                    c.entry_at,
                    format!(
                        "expected {what} inside its section (bytes {}..{}), found offset {}",
                        b.data_start, b.data_end, c.offset
                    ),
                ));
            }
        } else {
            if c.offset % file_ps != 0 {
                return Err(err(
                    c.entry_at,
                    format!(
                        "expected {what} at a multiple of the page size {file_ps}, found offset {}",
                        c.offset
                    ),
                ));
            }
            if c.size % ps != 0 {
                return Err(err(
                    c.entry_at + 8,
                    format!(
                        "expected {what} to be whole {ps}-byte pages, found {} bytes",
                        c.size
                    ),
                ));
            }
            let end = c.offset.saturating_add(c.size);
            if b.data_start > 0 && (c.offset < b.data_start || end > b.data_end) {
                return Err(err(
                    c.entry_at,
                    format!(
                        "expected {what} (bytes {}..{end}) inside its section (bytes {}..{})",
                        c.offset, b.data_start, b.data_end
                    ),
                ));
            }
        }
        // Past the end of the file is reported when the data is read (truncated files
        // are read as far as they go in lenient mode).
        let end = c.offset.saturating_add(c.size).min(file_len.max(c.offset));
        spans.push(Span {
            range: c.offset..end,
            what,
            at: c.entry_at,
        });
    }
    Ok(())
}

/// Warns of the stretches of `region` that no span covers: a gap of at least `min.0`
/// bytes (page alignment leaves less), or at least `min.1` bytes after the last span.
fn gaps(
    name: &str,
    region: Range<u64>,
    spans: &[&Span],
    min: (u64, u64),
    what: &str,
    warnings: &mut Vec<Error>,
) {
    let mut pos = region.start;
    let mut after = "its start".to_string();
    for s in spans {
        if s.range.start >= region.end {
            break;
        }
        if s.range.start > pos && s.range.start - pos >= min.0 {
            warnings.push(Error::new(
                ErrorKind::Corrupt,
                name,
                Location::Offset(pos),
                format!(
                    "{} bytes of {what} between {after} and {} are in no CPU's range nor \
                     section (a CPU table offset or size, or an option, is wrong?)",
                    s.range.start - pos,
                    s.what
                ),
            ));
        }
        if s.range.end > pos {
            pos = s.range.end;
            after = s.what.clone();
        }
    }
    if region.end > pos && region.end - pos >= min.1 {
        warnings.push(Error::new(
            ErrorKind::Corrupt,
            name,
            Location::Offset(pos),
            format!(
                "{} bytes of {what} after {after} (to byte {}) are in no CPU's range: data \
                 past the last range (a CPU count, offset or size is wrong?)",
                region.end - pos,
                region.end
            ),
        ));
    }
}
