//! The kernel's ring-buffer page format, as `trace_pipe_raw` hands out pages and as
//! trace-cmd stores them in `.dat` files.
//!
//! A page (sub-buffer) starts with a header described by `events/header_page`: a 64-bit
//! timestamp, then a `commit` word (a kernel `long`) whose low bits are the number of data
//! bytes and whose bits 31 and 30 say that events were lost before this page
//! (`RB_MISSED_EVENTS`) and that their count is stored after the data
//! (`RB_MISSED_STORED`). Records follow, each with a 32-bit header: 5 bits `type_len`,
//! 27 bits time delta. `type_len` 1..=28 is a data record of `4 * type_len` bytes, 0 a data
//! record whose length is in the next word, 29 padding (a discarded record or the end of the
//! page), 30 a time extend (delta continues in the next word), 31 an absolute time stamp.
//!
//! [`PageReader`] walks one page and yields [`RawRecord`]s (timestamp and payload bytes).
//! It never panics and never loops: every step moves forward, every read is bounds-checked.

use crate::format::{parse_field, Endian};
use crate::ErrorKind;

/// `type_len` of padding (a discarded record, or the rest of the page when its delta is 0).
pub const TYPE_PADDING: u32 = 29;
/// `type_len` of a time extend: the delta continues in the next 32-bit word.
pub const TYPE_TIME_EXTEND: u32 = 30;
/// `type_len` of an absolute time stamp.
pub const TYPE_TIME_STAMP: u32 = 31;
/// Bit of the commit word: events were lost before this page.
pub const MISSED_EVENTS: u64 = 1 << 31;
/// Bit of the commit word: the number lost is stored after the page data.
pub const MISSED_STORED: u64 = 1 << 30;
const COMMIT_MASK: u64 = (1 << 27) - 1;
const TS_SHIFT: u32 = 27;
const TS_MSB: u64 = 0xf8 << 56;

/// Where the parts of a page are, from `events/header_page`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    /// Byte order.
    pub endian: Endian,
    /// Offset of the 64-bit page timestamp.
    pub ts_offset: usize,
    /// Offset of the commit word.
    pub commit_offset: usize,
    /// Size of the commit word (the kernel's `long`: 4 or 8); also the size of the stored
    /// missed-events count.
    pub commit_size: usize,
    /// Offset of the first record.
    pub data_offset: usize,
    /// Size of a whole page (header and data).
    pub page_size: usize,
}

impl PageLayout {
    /// The layout of a 64-bit kernel with `page_size`-byte pages.
    pub fn new(endian: Endian, long_size: usize, page_size: usize) -> PageLayout {
        let commit_size = if long_size == 4 { 4 } else { 8 };
        PageLayout {
            endian,
            ts_offset: 0,
            commit_offset: 8,
            commit_size,
            data_offset: 8 + commit_size,
            page_size,
        }
    }

    /// The layout described by the text of `events/header_page`. `page_size` is the
    /// sub-buffer size when known (a .dat file says it); otherwise the data field's
    /// offset plus size is used.
    pub fn parse(
        header_page: &str,
        endian: Endian,
        page_size: Option<usize>,
    ) -> Result<PageLayout, String> {
        let (mut ts, mut commit, mut data) = (None, None, None);
        for line in header_page
            .lines()
            .filter(|l| l.trim().starts_with("field:"))
        {
            let f = parse_field(line)?;
            match &*f.name {
                "timestamp" => ts = Some(f),
                "commit" => commit = Some(f),
                "data" => data = Some(f),
                _ => {}
            }
        }
        let ts = ts.ok_or("header_page: expected a `timestamp` field")?;
        let commit = commit.ok_or("header_page: expected a `commit` field")?;
        let data = data.ok_or("header_page: expected a `data` field")?;
        if ts.size != 8 || !matches!(commit.size, 4 | 8) {
            return Err(format!(
                "header_page: expected an 8-byte timestamp and a 4- or 8-byte commit, found {} and {}",
                ts.size, commit.size
            ));
        }
        let page_size = page_size.unwrap_or(data.offset.saturating_add(data.size));
        if data.offset >= page_size || commit.offset + commit.size > data.offset {
            return Err(format!(
                "header_page: data offset {} does not fit a {page_size}-byte page",
                data.offset
            ));
        }
        Ok(PageLayout {
            endian,
            ts_offset: ts.offset,
            commit_offset: commit.offset,
            commit_size: commit.size,
            data_offset: data.offset,
            page_size,
        })
    }
}

/// Check the text of `events/header_event` against the record types this reader knows
/// (padding 29, time extend 30, time stamp 31, 5-bit `type_len`). Empty text (old writers
/// leave it out) passes.
pub fn check_header_event(text: &str) -> Result<(), String> {
    for (what, want) in [
        ("padding", TYPE_PADDING),
        ("time_extend", TYPE_TIME_EXTEND),
        ("time_stamp", TYPE_TIME_STAMP),
    ] {
        let Some(line) = text.lines().find(|l| l.trim_start().starts_with(what)) else {
            continue;
        };
        let found = line
            .rsplit("==")
            .next()
            .map(str::trim)
            .and_then(|v| v.parse::<u32>().ok());
        if found != Some(want) {
            return Err(format!(
                "header_event: expected `{what} : type == {want}`, found {:?}",
                line.trim()
            ));
        }
    }
    if let Some(line) = text
        .lines()
        .find(|l| l.trim_start().starts_with("type_len"))
    {
        if !line.contains(" 5 bits") {
            return Err(format!(
                "header_event: expected a 5-bit type_len, found {:?}",
                line.trim()
            ));
        }
    }
    Ok(())
}

/// Events the kernel lost before a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missed {
    /// None were lost.
    None,
    /// Some were lost; the page does not say how many.
    Unknown,
    /// This many were lost.
    Count(u64),
}

/// A bad page: what class of problem, the offset within the page and what was wrong
/// there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageError {
    /// [`ErrorKind::Truncated`] when the page or its data ends inside a header or record,
    /// [`ErrorKind::Corrupt`] when a commit word or record length is impossible.
    pub kind: ErrorKind,
    /// Byte offset from the start of the page.
    pub offset: usize,
    /// What was expected and what was found.
    pub message: String,
}

impl PageError {
    fn new(kind: ErrorKind, offset: usize, message: impl Into<String>) -> PageError {
        PageError {
            kind,
            offset,
            message: message.into(),
        }
    }
}

/// One data record of a page: its absolute timestamp and payload (which starts with the
/// 16-bit event id, `common_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// Timestamp in trace-clock units (ns for the usual clocks).
    pub ts: u64,
    /// Offset of the record header within the page.
    pub offset: usize,
    /// The payload.
    pub data: &'a [u8],
}

impl RawRecord<'_> {
    /// The event id (`common_type`, the first two bytes); `None` if the payload is shorter.
    #[inline]
    pub fn event_id(&self, endian: Endian) -> Option<u16> {
        endian.u16(self.data, 0)
    }
}

/// The header of one page, read and checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageHeader {
    /// The page timestamp: the base the first record's delta is added to.
    pub timestamp: u64,
    /// Number of data bytes after the header.
    pub commit: usize,
    /// Events lost before this page.
    pub missed: Missed,
}

impl PageHeader {
    /// Read the header of `page`. The page may be shorter than `layout.page_size` (the last
    /// page of a file), but its data must fit.
    pub fn read(layout: &PageLayout, page: &[u8]) -> Result<PageHeader, PageError> {
        let e = layout.endian;
        let timestamp = e.u64(page, layout.ts_offset).ok_or_else(|| {
            PageError::new(
                ErrorKind::Truncated,
                0,
                format!("expected a page header, found {} bytes", page.len()),
            )
        })?;
        let word = e
            .uint(page, layout.commit_offset, layout.commit_size)
            .ok_or_else(|| {
                PageError::new(
                    ErrorKind::Truncated,
                    layout.commit_offset,
                    "expected the commit word, found the end",
                )
            })?;
        let commit = (word & COMMIT_MASK) as usize;
        let room = page
            .len()
            .min(layout.page_size)
            .saturating_sub(layout.data_offset);
        if commit > room {
            return Err(PageError::new(
                ErrorKind::Corrupt,
                layout.commit_offset,
                format!("expected at most {room} data bytes in the commit word, found {commit} (corrupt page header)"),
            ));
        }
        let missed = if word & MISSED_EVENTS == 0 {
            Missed::None
        } else if word & MISSED_STORED != 0 {
            let at = layout.data_offset + commit;
            match e.uint(page, at, layout.commit_size) {
                Some(n) => Missed::Count(n),
                None => Missed::Unknown,
            }
        } else {
            Missed::Unknown
        };
        Ok(PageHeader {
            timestamp,
            commit,
            missed,
        })
    }
}

/// Where a walk over a page stands: kept apart from the page bytes so that a reader that
/// owns its buffer can resume without borrowing itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageCursor {
    /// The running timestamp.
    pub ts: u64,
    /// Offset of the next record header.
    pub pos: usize,
    /// End of the data (data offset + commit).
    pub end: usize,
}

impl PageCursor {
    /// A cursor at the first record of a page whose header is `header`.
    pub fn new(layout: &PageLayout, header: &PageHeader) -> PageCursor {
        PageCursor {
            ts: header.timestamp,
            pos: layout.data_offset,
            end: layout.data_offset + header.commit,
        }
    }

    /// The next data record: `(timestamp, record offset, payload range)`. Time extends,
    /// time stamps and padding are applied and skipped. `Ok(None)` at the end of the page.
    #[inline]
    pub fn next(
        &mut self,
        endian: Endian,
        page: &[u8],
    ) -> Result<Option<(u64, usize, std::ops::Range<usize>)>, PageError> {
        loop {
            if self.pos + 4 > self.end {
                self.pos = self.end;
                return Ok(None);
            }
            let at = self.pos;
            let head = endian.u32(page, at).ok_or_else(|| {
                PageError::new(
                    ErrorKind::Truncated,
                    at,
                    "expected a record header, found the end",
                )
            })?;
            let (type_len, delta) = match endian {
                Endian::Little => (head & 31, u64::from(head >> 5)),
                Endian::Big => (head >> 27, u64::from(head & ((1 << 27) - 1))),
            };
            let word = |off: usize| {
                endian.u32(page, off).filter(|_| off + 4 <= self.end).ok_or_else(|| {
                    PageError::new(ErrorKind::Truncated, off, format!("expected a length word of the record at {at}, found the end of the data"))
                })
            };
            match type_len {
                TYPE_PADDING => {
                    if delta == 0 {
                        // The rest of the page is unused.
                        self.pos = self.end;
                        return Ok(None);
                    }
                    let len = word(at + 4)? as usize;
                    self.ts = self.ts.wrapping_add(delta);
                    self.pos = (at + 4).saturating_add(len).max(at + 8);
                }
                TYPE_TIME_EXTEND => {
                    let ext = u64::from(word(at + 4)?);
                    self.ts = self.ts.wrapping_add((ext << TS_SHIFT) + delta);
                    self.pos = at + 8;
                }
                TYPE_TIME_STAMP => {
                    let ext = u64::from(word(at + 4)?);
                    self.ts = ((ext << TS_SHIFT) | delta) | (self.ts & TS_MSB);
                    self.pos = at + 8;
                }
                0 => {
                    let len = word(at + 4)? as usize;
                    if len < 4 {
                        return Err(PageError::new(
                            ErrorKind::Corrupt,
                            at + 4,
                            format!("expected a record length of at least 4, found {len}"),
                        ));
                    }
                    let len = (len - 4 + 3) & !3;
                    return self.data(at, at + 8, len, delta);
                }
                n => return self.data(at, at + 4, n as usize * 4, delta),
            }
        }
    }

    #[inline]
    fn data(
        &mut self,
        at: usize,
        start: usize,
        len: usize,
        delta: u64,
    ) -> Result<Option<(u64, usize, std::ops::Range<usize>)>, PageError> {
        let end = start + len;
        if end > self.end {
            return Err(PageError::new(
                ErrorKind::Corrupt,
                at,
                format!("expected a record of {len} bytes within the page data (ends at {}), found it running to {end}", self.end),
            ));
        }
        self.ts = self.ts.wrapping_add(delta);
        self.pos = end;
        Ok(Some((self.ts, at, start..end)))
    }
}

/// Reads the records of one ring-buffer page.
///
/// ```
/// use jitterlab_trace::format::Endian;
/// use jitterlab_trace::ringbuf::{PageLayout, PageReader, Missed};
///
/// // A page with one 8-byte record (type_len 2) 100 ns after the page timestamp 1000.
/// let mut page = vec![0u8; 4096];
/// page[0..8].copy_from_slice(&1000u64.to_le_bytes());
/// page[8..16].copy_from_slice(&12u64.to_le_bytes()); // commit: 12 data bytes
/// page[16..20].copy_from_slice(&((100u32 << 5) | 2).to_le_bytes());
/// page[20..22].copy_from_slice(&7u16.to_le_bytes()); // event id 7
/// let layout = PageLayout::new(Endian::Little, 8, 4096);
/// let mut r = PageReader::new(&layout, &page).unwrap();
/// assert_eq!(r.missed(), Missed::None);
/// let rec = r.next_record().unwrap().unwrap();
/// assert_eq!((rec.ts, rec.event_id(Endian::Little)), (1100, Some(7)));
/// assert!(r.next_record().unwrap().is_none());
/// ```
#[derive(Clone, Debug)]
pub struct PageReader<'a> {
    layout: PageLayout,
    page: &'a [u8],
    header: PageHeader,
    cursor: PageCursor,
}

impl<'a> PageReader<'a> {
    /// Start reading `page`; fails if its header is corrupt.
    pub fn new(layout: &PageLayout, page: &'a [u8]) -> Result<PageReader<'a>, PageError> {
        let header = PageHeader::read(layout, page)?;
        Ok(PageReader {
            layout: *layout,
            page,
            cursor: PageCursor::new(layout, &header),
            header,
        })
    }

    /// The page header.
    pub fn header(&self) -> &PageHeader {
        &self.header
    }

    /// Events lost before this page.
    pub fn missed(&self) -> Missed {
        self.header.missed
    }

    /// The page timestamp.
    pub fn timestamp(&self) -> u64 {
        self.header.timestamp
    }

    /// The next data record, `Ok(None)` at the end of the page.
    pub fn next_record(&mut self) -> Result<Option<RawRecord<'a>>, PageError> {
        let page = self.page;
        Ok(self
            .cursor
            .next(self.layout.endian, page)?
            .map(|(ts, offset, r)| RawRecord {
                ts,
                offset,
                data: &page[r],
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(records: &[(u32, u32, &[u8])], commit_flags: u64) -> Vec<u8> {
        let mut p = vec![0u8; 16];
        p[0..8].copy_from_slice(&1_000u64.to_le_bytes());
        for &(type_len, delta, body) in records {
            p.extend_from_slice(&((delta << 5) | type_len).to_le_bytes());
            p.extend_from_slice(body);
        }
        let commit = (p.len() - 16) as u64;
        p[8..16].copy_from_slice(&(commit | commit_flags).to_le_bytes());
        p.resize(4096, 0);
        p
    }

    fn all(p: &[u8]) -> Result<Vec<(u64, Vec<u8>)>, PageError> {
        let layout = PageLayout::new(Endian::Little, 8, 4096);
        let mut r = PageReader::new(&layout, p)?;
        let mut v = Vec::new();
        while let Some(rec) = r.next_record()? {
            v.push((rec.ts, rec.data.to_vec()));
        }
        Ok(v)
    }

    #[test]
    fn extends_stamps_padding_and_long_records() {
        let long = [
            12u32.to_le_bytes(),
            0xaabbccddu32.to_le_bytes(),
            5u32.to_le_bytes(),
        ]
        .concat();
        let p = page(
            &[
                (1, 10, &[1, 0, 0, 0]),
                (TYPE_TIME_EXTEND, 5, &1u32.to_le_bytes()),
                (1, 0, &[2, 0, 0, 0]),
                (TYPE_PADDING, 3, &[4, 0, 0, 0]),
                (0, 1, &long),
                (TYPE_TIME_STAMP, 7, &2u32.to_le_bytes()),
                (1, 0, &[3, 0, 0, 0]),
            ],
            0,
        );
        let v = all(&p).unwrap();
        let ext = 1_010 + (1 << 27) + 5;
        assert_eq!(v[0], (1_010, vec![1, 0, 0, 0]));
        assert_eq!(v[1], (ext, vec![2, 0, 0, 0]));
        assert_eq!(
            v[2],
            (ext + 3 + 1, vec![0xdd, 0xcc, 0xbb, 0xaa, 5, 0, 0, 0])
        );
        assert_eq!(v[3], ((2 << 27) | 7, vec![3, 0, 0, 0]));
    }

    #[test]
    fn missed_events_flags() {
        let layout = PageLayout::new(Endian::Little, 8, 4096);
        let mut p = page(&[(1, 1, &[1, 0, 0, 0])], MISSED_EVENTS | MISSED_STORED);
        p[24..32].copy_from_slice(&42u64.to_le_bytes());
        assert_eq!(
            PageReader::new(&layout, &p).unwrap().missed(),
            Missed::Count(42)
        );
        let p = page(&[(1, 1, &[1, 0, 0, 0])], MISSED_EVENTS);
        assert_eq!(
            PageReader::new(&layout, &p).unwrap().missed(),
            Missed::Unknown
        );
    }

    #[test]
    fn corrupt_pages_are_errors() {
        let layout = PageLayout::new(Endian::Little, 8, 4096);
        let mut p = page(&[], 0);
        p[8..16].copy_from_slice(&5000u64.to_le_bytes());
        let kind_at = |e: PageError| (e.kind, e.offset);
        // A commit word larger than the page.
        assert_eq!(
            kind_at(PageReader::new(&layout, &p).unwrap_err()),
            (ErrorKind::Corrupt, 8)
        );
        // A page that ends inside its header: in the commit word, or before it.
        assert_eq!(
            kind_at(PageReader::new(&layout, &p[..10]).unwrap_err()),
            (ErrorKind::Truncated, 8)
        );
        assert_eq!(
            kind_at(PageReader::new(&layout, &p[..4]).unwrap_err()),
            (ErrorKind::Truncated, 0)
        );
        // A record running past the commit.
        let p = page(&[(3, 1, &[1, 0, 0, 0])], 0);
        assert_eq!(kind_at(all(&p).unwrap_err()), (ErrorKind::Corrupt, 16));
        // A type-0 record with a length below 4.
        let p = page(&[(0, 1, &[2, 0, 0, 0])], 0);
        assert_eq!(kind_at(all(&p).unwrap_err()), (ErrorKind::Corrupt, 20));
    }

    #[test]
    fn layout_from_header_page() {
        let text = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        let l = PageLayout::parse(text, Endian::Little, None).unwrap();
        assert_eq!(l, PageLayout::new(Endian::Little, 8, 4096));
        assert!(PageLayout::parse("", Endian::Little, None).is_err());
    }

    #[test]
    fn header_event_check() {
        let ok =
            "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\
\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\
\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";
        assert_eq!(check_header_event(ok), Ok(()));
        assert_eq!(check_header_event(""), Ok(()));
        assert!(check_header_event(&ok.replace("== 30", "== 1")).is_err());
        assert!(check_header_event("\ttype : 2 bits\n\ttype_len : 3 bits\n").is_err());
    }
}
