//! One CPU's ring-buffer pages in a .dat file, read page by page: straight from the file
//! (version 6, or version 7 without compression) or one decompressed chunk at a time
//! (version 7), so memory stays at one chunk per CPU whatever the trace size.
//!
//! A chunk is inflated whole (a zstd frame of trace-cmd's is one segment: its window is
//! the whole chunk), so what a chunk may claim is bounded twice: by what trace-cmd and
//! jitterlab write, [`CHUNK_PAGES`] pages of the buffer's page size, and by
//! [`CHUNKS_HELD`], the decompressed bytes the readers of one pass hold at once (the
//! time-ordered merge holds a chunk per CPU; counting, a chunk per parallel task).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::compress::{Compression, Inflater};
use super::cursor::{error_at, Origin};
pub(crate) use super::spool::CHUNK_PAGES;
use crate::format::Endian;
use crate::ringbuf::{Missed, PageCursor, PageHeader, PageLayout};
use crate::{Error, ErrorKind, Result};

/// Decompressed chunk bytes the readers of one pass over a buffer hold at once at most:
/// 24 MiB, some 600 CPUs' chunks of 10 pages of 4 KiB (trace-cmd's `PAGES_IN_CHUNK`, in
/// lib/trace-cmd/trace-output.c). A chunk that would take the readers past it is an error
/// (skipped in lenient mode): a buffer of more CPUs than that, each holding a chunk, is
/// refused rather than read past the memory budget (issue 13: 64 MB).
pub(crate) const CHUNKS_HELD: usize = 24 << 20;

/// The most a chunk of a buffer with pages of `page_size` bytes inflates to: ten pages,
/// as trace-cmd (`PAGES_IN_CHUNK` pages of the buffer's page size) and jitterlab's
/// writer cut them (the last chunk of a CPU may be shorter).
pub(crate) fn chunk_limit(page_size: usize) -> usize {
    page_size.saturating_mul(CHUNK_PAGES)
}

/// Bytes of a memory-mapped file read before they are given back (see [`Release`]).
const RELEASE_STEP: usize = 1 << 20;

/// What the chunk readers of one pass share: one decompressor (one zstd context, not one
/// per CPU) and the count of decompressed bytes they hold, against [`CHUNKS_HELD`].
pub(crate) struct ChunkPool {
    inflater: Inflater,
    held: usize,
}

impl ChunkPool {
    /// A pool for data compressed with `kind`.
    pub(crate) fn new(kind: Compression) -> ChunkPool {
        ChunkPool {
            inflater: Inflater::new(kind),
            held: 0,
        }
    }

    /// Makes room in a reader's `buf` (of which it holds `held` bytes) for a chunk that
    /// inflates to `claim` bytes; the buffer is given back first when that helps. Err:
    /// the bytes the other readers hold, when the chunk does not fit beside them.
    fn hold(
        &mut self,
        held: &mut usize,
        buf: &mut Vec<u8>,
        claim: usize,
    ) -> std::result::Result<(), usize> {
        let others = self.held.saturating_sub(*held);
        if others.saturating_add(buf.capacity().max(claim)) > CHUNKS_HELD {
            self.give_back(held, buf);
            if others.saturating_add(claim) > CHUNKS_HELD {
                return Err(others);
            }
        }
        self.settle(held, buf.capacity().max(claim));
        Ok(())
    }

    /// Counts `now` bytes as a reader's instead of its `held`.
    fn settle(&mut self, held: &mut usize, now: usize) {
        self.held = self.held.saturating_sub(*held).saturating_add(now);
        *held = now;
    }

    /// A reader's buffer, freed.
    fn give_back(&mut self, held: &mut usize, buf: &mut Vec<u8>) {
        *buf = Vec::new();
        self.settle(held, 0);
    }
}

/// A page in the reader's backing bytes, and where errors in it point.
#[derive(Clone, Debug)]
pub(crate) struct PageRef {
    pub(crate) range: Range<usize>,
    pub(crate) origin: Origin,
}

enum Kind {
    Flat {
        pos: usize,
        end: usize,
    },
    Chunked {
        pos: usize,
        left: u32,
        end: usize,
        buf: Vec<u8>,
        /// The bytes of the pool `buf` counts for.
        held: usize,
        buf_pos: usize,
        chunk_at: u64,
    },
}

/// Where one CPU's data is, as a list of pages to come.
pub(crate) struct CpuSource<'f> {
    name: &'f str,
    file: &'f [u8],
    endian: Endian,
    page_size: usize,
    kind: Kind,
    release: Option<Release<'f>>,
    /// Where to add the bytes passed (for a progress display), and up to where they were.
    read: Option<&'f AtomicU64>,
    counted: usize,
}

/// The mapping that `CpuSource::file` is, and how far its pages have been given back:
/// pages behind the reader are dropped from the process (`MADV_DONTNEED`), so that the
/// resident memory stays at the pages in flight, not the file's size. The map is
/// read-only and file-backed: a page touched again is read again from the page cache.
struct Release<'f> {
    map: &'f memmap2::Mmap,
    done: usize,
}

impl Release<'_> {
    /// Gives back the pages of `self.done..upto` once they add up to a step, or at the
    /// `end` of the data.
    fn upto(&mut self, upto: usize, end: bool) {
        if upto >= self.done.saturating_add(RELEASE_STEP) || (end && upto > self.done) {
            // SAFETY: the map is a read-only file mapping (memmap2 maps it shared) and nothing writes to
            // it, so DONTNEED only unmaps pages that read back unchanged from the file.
            // The range is inside the map (memmap2 checks and page-aligns it).
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    self.done,
                    upto - self.done,
                )
            };
            self.done = upto;
        }
    }
}

/// One part of a CPU's data that can be read on its own (for parallel counting).
#[derive(Clone, Debug)]
pub(crate) enum Segment {
    Flat(Range<usize>),
    Chunks { pos: usize, count: u32, end: usize },
}

/// Split a CPU's data into segments of about `target` bytes (whole pages or chunks);
/// `compressed`: the CPU's size in the table, when its data is compressed chunks.
pub(crate) fn segments(
    name: &str,
    file: &[u8],
    endian: Endian,
    compressed: Option<u64>,
    range: Range<usize>,
    page_size: usize,
    target: usize,
) -> Result<Vec<Segment>> {
    let Some(size) = compressed else {
        let step = (target / page_size).max(1) * page_size;
        let mut v = Vec::new();
        let mut s = range.start;
        while s < range.end {
            let e = s.saturating_add(step).min(range.end);
            v.push(Segment::Flat(s..e));
            s = e;
        }
        return Ok(v);
    };
    let count = endian
        .u32(file, range.start)
        .filter(|_| range.start + 4 <= range.end)
        .ok_or_else(|| {
            error_at(
                ErrorKind::Truncated,
                name,
                Origin::File(range.start as u64),
                0,
                "expected the chunk count, found the end",
            )
        })?;
    let mut v = Vec::new();
    let (mut pos, mut start, mut n, mut bytes) = (range.start + 4, range.start + 4, 0u32, 0usize);
    let mut complete = true;
    for _ in 0..count {
        let Some(z) = endian.u32(file, pos).filter(|_| pos + 8 <= range.end) else {
            complete = false;
            break; // reported by the reader of the last segment
        };
        n += 1;
        bytes += z as usize;
        pos = pos.saturating_add(8 + z as usize);
        if bytes >= target {
            v.push(Segment::Chunks {
                pos: start,
                count: n,
                end: range.end,
            });
            (start, n, bytes) = (pos, 0, 0);
        }
        if pos > range.end {
            complete = false;
            break;
        }
    }
    // The chunks fill the CPU's size (trace-cmd 3.1's sizes leave out the 4-byte chunk
    // count): else the offset or the size is wrong, and the chunks read are not the CPU's.
    let walked = (pos - range.start) as u64;
    if complete && !(size..=size.saturating_add(4)).contains(&walked) {
        return Err(error_at(
            ErrorKind::Corrupt,
            name,
            Origin::File(range.start as u64),
            0,
            format!(
                "expected compressed CPU data of {size} bytes, found {count} chunks in {walked} bytes (a CPU table offset or size is wrong?)"
            ),
        ));
    }
    let rest = count
        - v.iter()
            .map(|s| {
                if let Segment::Chunks { count, .. } = s {
                    *count
                } else {
                    0
                }
            })
            .sum::<u32>();
    if rest > 0 || v.is_empty() {
        v.push(Segment::Chunks {
            pos: start,
            count: rest,
            end: range.end,
        });
    }
    Ok(v)
}

impl<'f> CpuSource<'f> {
    /// The pages of `segment` (compressed chunks are inflated through the pool given to
    /// [`CpuSource::next_page`]).
    pub(crate) fn new(
        name: &'f str,
        file: &'f [u8],
        endian: Endian,
        page_size: usize,
        segment: Segment,
    ) -> CpuSource<'f> {
        let kind = match segment {
            Segment::Flat(r) => Kind::Flat {
                pos: r.start,
                end: r.end.min(file.len()),
            },
            Segment::Chunks { pos, count, end } => Kind::Chunked {
                pos,
                left: count,
                end: end.min(file.len()),
                buf: Vec::new(),
                held: 0,
                buf_pos: 0,
                chunk_at: pos as u64,
            },
        };
        let counted = match &kind {
            Kind::Flat { pos, .. } | Kind::Chunked { pos, .. } => *pos,
        };
        CpuSource {
            name,
            file,
            endian,
            page_size,
            kind,
            release: None,
            read: None,
            counted,
        }
    }

    /// Adds the bytes of the file this source passes to `read` (a page or a compressed
    /// chunk at a time).
    pub(crate) fn counting(mut self, read: Option<&'f AtomicU64>) -> CpuSource<'f> {
        self.read = read;
        self
    }

    /// Gives the pages read back to the system as the reader passes them: `file` must
    /// be `map`'s bytes.
    pub(crate) fn release_behind(mut self, map: &'f memmap2::Mmap) -> CpuSource<'f> {
        let done = match &self.kind {
            Kind::Flat { pos, .. } | Kind::Chunked { pos, .. } => *pos,
        };
        if std::ptr::eq(map.as_ptr(), self.file.as_ptr()) && map.len() == self.file.len() {
            self.release = Some(Release { map, done });
        }
        self
    }

    /// The bytes pages point into.
    #[inline]
    pub(crate) fn backing(&self) -> &[u8] {
        match &self.kind {
            Kind::Flat { .. } => self.file,
            Kind::Chunked { buf, .. } => buf,
        }
    }

    /// The next page; with `lenient`, a bad chunk is skipped (counted in `skipped`).
    /// Chunks are inflated through `pool`.
    pub(crate) fn next_page(
        &mut self,
        pool: &mut ChunkPool,
        lenient: bool,
        skipped: &mut u64,
    ) -> Result<Option<PageRef>> {
        let ps = self.page_size;
        match &mut self.kind {
            Kind::Flat { pos, end } => {
                if *pos >= *end {
                    if let Some(rel) = &mut self.release {
                        rel.upto(*end, true);
                    }
                    return Ok(None);
                }
                let r = *pos..(*pos).saturating_add(ps).min(*end);
                *pos = r.end;
                if let Some(rel) = &mut self.release {
                    rel.upto(r.start, false);
                }
                if let Some(read) = self.read {
                    read.fetch_add(r.end.saturating_sub(self.counted) as u64, Relaxed);
                    self.counted = r.end;
                }
                Ok(Some(PageRef {
                    range: r,
                    origin: Origin::File(0),
                }))
            }
            Kind::Chunked {
                pos,
                left,
                end,
                buf,
                held,
                buf_pos,
                chunk_at,
            } => loop {
                if *buf_pos < buf.len() {
                    let r = *buf_pos..(*buf_pos).saturating_add(ps).min(buf.len());
                    *buf_pos = r.end;
                    return Ok(Some(PageRef {
                        range: r,
                        origin: Origin::Inflated(*chunk_at),
                    }));
                }
                if *left == 0 {
                    // The CPU's data is read: its chunk buffer goes back.
                    pool.give_back(held, buf);
                    if let Some(rel) = &mut self.release {
                        rel.upto(*pos, true);
                    }
                    return Ok(None);
                }
                *left -= 1;
                let at = *pos;
                let head = self
                    .endian
                    .u32(self.file, at)
                    .zip(self.endian.u32(self.file, at + 4))
                    .filter(|_| at + 8 <= *end);
                let Some((z, u)) = head else {
                    let e = error_at(ErrorKind::Truncated, self.name, Origin::File(at as u64), 0, format!(
                        "expected a compressed chunk header ({} more chunks), found the end of the data (truncated?)",
                        *left + 1
                    ));
                    pool.give_back(held, buf);
                    return give_up(lenient, skipped, left, e);
                };
                let (z, u) = (z as usize, u as usize);
                let data = at + 8..at + 8 + z;
                if data.end > *end {
                    let e = error_at(ErrorKind::Truncated, self.name, Origin::File(at as u64), 0, format!(
                        "expected a chunk of {z} compressed bytes (to {u} bytes) within the data ending at byte offset {end}, found it does not fit (truncated or corrupt)"
                    ));
                    pool.give_back(held, buf);
                    return give_up(lenient, skipped, left, e);
                }
                *pos = data.end;
                if let Some(rel) = &mut self.release {
                    rel.upto(at, false);
                }
                if let Some(read) = self.read {
                    read.fetch_add(data.end.saturating_sub(self.counted) as u64, Relaxed);
                    self.counted = data.end;
                }
                *chunk_at = at as u64;
                *buf_pos = 0;
                let limit = chunk_limit(ps);
                let input = &self.file[data];
                let (name, origin) = (self.name, Origin::File(at as u64));
                let corrupt = |msg: String| {
                    error_at(
                        ErrorKind::Decompress,
                        name,
                        origin,
                        0,
                        format!("in a compressed chunk: {msg}"),
                    )
                };
                let failed = if u > limit {
                    // Nothing is allocated for the claim: the data, inflated and dropped up
                    // to the limit, tells a claim that is too big from a corrupt one.
                    Some(match pool.inflater.measure(input, limit) {
                        Err(msg) => corrupt(msg),
                        Ok(Some(n)) => corrupt(format!(
                            "expected {u} bytes after decompression, found {n}"
                        )),
                        Ok(None) => error_at(ErrorKind::Limit, name, origin, 0, format!(
                            "expected a compressed chunk inflating to at most {limit} bytes ({CHUNK_PAGES} pages of {ps} bytes, as trace-cmd writes them), found one claiming {u} bytes and inflating past that"
                        )),
                    })
                } else if let Err(others) = pool.hold(held, buf, u) {
                    Some(error_at(ErrorKind::Limit, name, origin, 0, format!(
                        "expected the decompressed chunks held at once (one per CPU read) to fit in {CHUNKS_HELD} bytes, found {others} bytes held and a chunk of {u} more"
                    )))
                } else {
                    let r = pool.inflater.inflate(input, u, buf);
                    pool.settle(held, buf.capacity());
                    r.err().map(corrupt)
                };
                if let Some(e) = failed {
                    buf.clear();
                    if !lenient {
                        return Err(e);
                    }
                    *skipped += 1;
                }
            },
        }
    }
}

fn give_up(lenient: bool, skipped: &mut u64, left: &mut u32, e: Error) -> Result<Option<PageRef>> {
    *left = 0;
    if lenient {
        *skipped += 1;
        Ok(None)
    } else {
        Err(e)
    }
}

/// What a CPU reader yields.
#[derive(Clone, Debug)]
pub(crate) enum Item {
    /// A data record: timestamp, payload range in [`CpuReader::backing`], and the error
    /// position of the record header.
    Record {
        ts: u64,
        data: Range<usize>,
        origin: Origin,
        at: usize,
    },
    /// Events lost before the page that starts at `ts`.
    Lost { ts: u64, count: Option<u64> },
}

/// The records of one CPU, page after page.
pub(crate) struct CpuReader<'f> {
    pub(crate) cpu: u32,
    src: CpuSource<'f>,
    layout: PageLayout,
    page: Option<(PageRef, PageCursor)>,
    /// A record read ahead to date a loss marker.
    stash: Option<Item>,
    lenient: bool,
    /// Pages, chunks or records skipped (lenient only).
    pub(crate) skipped: u64,
    /// Events lost on this CPU: `None` once some loss had no count.
    pub(crate) lost: Option<u64>,
    /// Pages read.
    pub(crate) pages: u64,
}

impl<'f> CpuReader<'f> {
    pub(crate) fn new(
        cpu: u32,
        src: CpuSource<'f>,
        layout: PageLayout,
        lenient: bool,
    ) -> CpuReader<'f> {
        CpuReader {
            cpu,
            src,
            layout,
            page: None,
            stash: None,
            lenient,
            skipped: 0,
            lost: Some(0),
            pages: 0,
        }
    }

    #[inline]
    pub(crate) fn backing(&self) -> &[u8] {
        self.src.backing()
    }

    /// The next record of the current page; `Ok(None)` at its end (or without a page).
    #[inline]
    fn next_in_page(&mut self) -> Result<Option<Item>> {
        let mut item = None;
        self.next_in_page_into(&mut item)?;
        Ok(item)
    }

    /// [`CpuReader::next_in_page`] written into `out`; `false` (and `out` as it was) at
    /// the page's end.
    #[inline]
    fn next_in_page_into(&mut self, out: &mut Option<Item>) -> Result<bool> {
        let Some((pref, cur)) = &mut self.page else {
            return Ok(false);
        };
        let page = self.src.backing().get(pref.range.clone()).unwrap_or(&[]);
        match cur.next(self.layout.endian, page) {
            Ok(Some((ts, at, r))) => {
                let base = pref.range.start;
                *out = Some(Item::Record {
                    ts,
                    data: base + r.start..base + r.end,
                    origin: pref.origin,
                    at: base + at,
                });
                Ok(true)
            }
            Ok(None) => {
                self.page = None;
                Ok(false)
            }
            Err(e) => {
                let err = error_at(
                    e.kind,
                    self.src.name,
                    pref.origin,
                    pref.range.start + e.offset,
                    format!("CPU {}: {}", self.cpu, e.message),
                );
                self.page = None;
                if !self.lenient {
                    return Err(err);
                }
                self.skipped += 1;
                Ok(false)
            }
        }
    }

    /// [`CpuReader::next`] written into `out` (`None` when the CPU's data is done). A
    /// record of the current page, the common case, is written where it goes: returned
    /// by value, it was read back in other widths than it was written, which stalled the
    /// reader (most of `DatEvents::read`'s samples).
    #[inline]
    pub(crate) fn next_into(&mut self, pool: &mut ChunkPool, out: &mut Option<Item>) -> Result<()> {
        if self.stash.is_none() && self.next_in_page_into(out)? {
            return Ok(());
        }
        *out = self.next(pool)?;
        Ok(())
    }

    /// The next record or loss marker; `Ok(None)` when the CPU's data is done. Chunks are
    /// inflated through `pool`.
    #[inline]
    pub(crate) fn next(&mut self, pool: &mut ChunkPool) -> Result<Option<Item>> {
        if let Some(item) = self.stash.take() {
            return Ok(Some(item));
        }
        loop {
            if self.page.is_some() {
                if let Some(item) = self.next_in_page()? {
                    return Ok(Some(item));
                }
                continue;
            }
            let Some(pref) = self.src.next_page(pool, self.lenient, &mut self.skipped)? else {
                return Ok(None);
            };
            let page = self.src.backing().get(pref.range.clone()).unwrap_or(&[]);
            match PageHeader::read(&self.layout, page) {
                Ok(h) => {
                    self.pages += 1;
                    self.page = Some((pref, PageCursor::new(&self.layout, &h)));
                    let count = match h.missed {
                        Missed::None => continue,
                        Missed::Unknown => None,
                        Missed::Count(n) => Some(n),
                    };
                    self.lost = match (self.lost, count) {
                        (Some(a), Some(b)) => Some(a.saturating_add(b)),
                        _ => None,
                    };
                    // Date the loss by the page's first record, as trace-cmd reports it.
                    let mut ts = h.timestamp;
                    if let Some(first) = self.next_in_page()? {
                        if let Item::Record { ts: t, .. } = first {
                            ts = t;
                        }
                        self.stash = Some(first);
                    }
                    return Ok(Some(Item::Lost { ts, count }));
                }
                Err(e) => {
                    let err = error_at(
                        e.kind,
                        self.src.name,
                        pref.origin,
                        pref.range.start + e.offset,
                        format!("CPU {}: in a page header: {}", self.cpu, e.message),
                    );
                    if !self.lenient {
                        return Err(err);
                    }
                    self.skipped += 1;
                }
            }
        }
    }
}
