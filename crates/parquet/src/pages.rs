//! What the column chunks written here rather than by the `parquet` crate's column
//! writer share ([`crate::strings`], [`crate::ints`], [`crate::int32s`]): a chunk's
//! data pages as they are made and written ([`Out`]) with its dictionary page, if any,
//! and the metadata the row group records; a page's definition levels in Parquet's
//! RLE/bit-packing hybrid; LEB128 varints; the column's compression; and a chunk whose
//! pages waited in memory or in a file ([`Spliced`]), which the row group appends.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};

use bytes::{Buf as _, Bytes};
use parquet::basic::{Compression, Encoding, PageType};
use parquet::column::page::{CompressedPage, Page, PageWriteSpec, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::metadata::{
    ColumnChunkMetaData, ColumnChunkMetaDataBuilder, OffsetIndexBuilder, PageEncodingStats,
};
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use crate::column::{Spill, SPILL_BYTES};

/// What the row group records of a chunk written here: its metadata, rows and page
/// offsets (the file writer wants an offset index of every column or of none).
pub(crate) fn closed(
    metadata: ColumnChunkMetaData,
    rows: u64,
    index: OffsetIndexBuilder,
) -> ColumnCloseResult {
    ColumnCloseResult {
        bytes_written: metadata.compressed_size() as u64,
        rows_written: rows,
        metadata,
        bloom_filter: None,
        column_index: None,
        offset_index: Some(index.build()),
    }
}

/// What each chunk written here has: its column and compression, whether it records
/// min/max and null counts, its data pages as they are serialized (a dictionary page
/// goes before them when the row group is sealed) and what they hold, its nulls, and the
/// page in the making.
pub(crate) struct Out {
    pub(crate) descr: ColumnDescPtr,
    pub(crate) compression: Compression,
    pub(crate) codec: Codec,
    pub(crate) stats: bool,
    pages: TrackedWrite<Spill>,
    pub(crate) written: Written,
    pub(crate) nulls: u64,
    /// The page in the making.
    pub(crate) buf: Vec<u8>,
    /// Scratch: a page's definition levels.
    levels: Vec<u32>,
    /// The page of dictionary indices in the making, over batches ([`Out::indices`]).
    open: Open,
}

/// Encoded bytes of an index page before they are compressed, once reached by a batch's
/// indices, at which it is written ([`Out::indices`]; one more batch may take it past):
/// a batch's indices of a CPU or a kind are 1-2 KB, and zstd's price a call (its
/// entropy tables) was most of the export's compression.
const INDEX_PAGE_BYTES: usize = 32 * 1024;

/// Rows of an index page at which it is written, once reached by a batch's (a page of
/// 1-bit indices holds 8 KB; batches of 8,192 rows fill it exactly).
const INDEX_PAGE_ROWS: usize = 64 * 1024;

/// How a column's indices are encoded.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Indices {
    /// Parquet's RLE/bit-packing hybrid ([`hybrid`]).
    Hybrid,
    /// Bit-packed whole ([`pack`]).
    Packed,
}

/// A data page of dictionary indices in the making, over batches: its definition
/// levels encoded so far, as runs and whole groups of 8 (a bit-packed run is padded only
/// at the page's end), and the fewer than 8 not encoded yet; the same of its indices,
/// which are encoded in [`Out::buf`] after their width.
struct Open {
    rows: usize,
    width: u8,
    how: Indices,
    levels: Vec<u8>,
    levels_left: Vec<u32>,
    keys_left: Vec<u32>,
}

impl Default for Open {
    fn default() -> Open {
        Open {
            rows: 0,
            width: 1,
            how: Indices::Hybrid,
            levels: Vec::new(),
            levels_left: Vec::new(),
            keys_left: Vec::new(),
        }
    }
}

impl Open {
    /// Appends `vals` to `bytes` (encoded as `how` of `width` bits) after the values
    /// `left` from before, leaving in `left` the last fewer than 8.
    fn append(bytes: &mut Vec<u8>, left: &mut Vec<u32>, vals: &[u32], width: u8, how: Indices) {
        // What a call leaves, fewer than 8 values.
        let encode = |b: &mut Vec<u8>, v: &[u32]| match how {
            Indices::Hybrid => hybrid_part(b, v, width, false),
            Indices::Packed => {
                let whole = v.len() / 8 * 8;
                if whole > 0 {
                    pack(b, &v[..whole], width);
                }
                whole
            }
        };
        let mut vals = vals;
        if !left.is_empty() {
            let k = (8 - left.len()).min(vals.len());
            left.extend_from_slice(&vals[..k]);
            vals = &vals[k..];
            if left.len() < 8 {
                return;
            }
            // A group of 8: a run or packed, nothing left.
            encode(bytes, left);
            left.clear();
        }
        let done = encode(bytes, vals);
        left.extend_from_slice(&vals[done..]);
    }
}

impl Out {
    pub(crate) fn new(
        descr: ColumnDescPtr,
        compression: Compression,
        stats: bool,
        spill: Spill,
    ) -> Out {
        Out {
            descr,
            compression,
            codec: Codec::new(compression),
            stats,
            pages: TrackedWrite::new(spill),
            written: Written::default(),
            nulls: 0,
            buf: Vec::new(),
            levels: Vec::new(),
            open: Open::default(),
        }
    }

    /// Starts a page of `rows` rows, `values` of them present: `defs` are the
    /// definition levels of a nullable column (`None`: every row present), written
    /// first into [`Out::buf`], its nulls counted. Returns the page's nulls; an error
    /// when `defs` do not say `values`.
    pub(crate) fn page(
        &mut self,
        defs: Option<&[i16]>,
        rows: usize,
        values: usize,
    ) -> Result<u64, ParquetError> {
        self.buf.clear();
        let mut present = rows;
        if self.descr.max_def_level() > 0 {
            present = def_levels(&mut self.buf, &mut self.levels, defs, rows)?;
        }
        if values != present {
            return Err(ParquetError::General(format!(
                "{values} values for {present} present rows"
            )));
        }
        let nulls = (rows - present) as u64;
        self.nulls += nulls;
        Ok(nulls)
    }

    /// Writes the page made in [`Out::buf`], of `rows` rows, its values in `encoding`.
    pub(crate) fn write_page(
        &mut self,
        rows: usize,
        encoding: Encoding,
    ) -> Result<(), ParquetError> {
        let n = u32::try_from(rows)
            .map_err(|_| ParquetError::General(format!("a page of {rows} rows")))?;
        let spec = data_page(&mut self.codec, &mut self.buf, n, encoding, &mut self.pages)?;
        self.written.add(&spec, rows);
        Ok(())
    }

    /// Appends `rows` rows to the data page of dictionary indices in the making: `keys`,
    /// one per present row, of `width` bits; `defs` as for [`Out::page`]. The page is
    /// written once it holds [`INDEX_PAGE_BYTES`] or [`INDEX_PAGE_ROWS`], before indices
    /// of another width, and when the chunk is finished ([`Out::finish_dict`]).
    pub(crate) fn indices(
        &mut self,
        defs: Option<&[i16]>,
        rows: usize,
        keys: &[u32],
        width: u8,
        how: Indices,
    ) -> Result<(), ParquetError> {
        if rows == 0 {
            return Ok(());
        }
        if self.open.rows > 0 && (self.open.width, self.open.how) != (width, how) {
            self.flush_indices()?;
        }
        let open = &mut self.open;
        if open.rows == 0 {
            self.buf.clear();
            self.buf.push(width);
        }
        let nullable = self.descr.max_def_level() > 0;
        // Checked before anything is added to the page.
        let present = if nullable { present(defs, rows)? } else { rows };
        if keys.len() != present {
            return Err(ParquetError::General(format!(
                "{} values for {present} present rows",
                keys.len()
            )));
        }
        if nullable {
            if open.levels_left.is_empty() && (present == rows || present == 0) {
                // One run, as the hybrid writes 8 or more equal levels: a run is exact,
                // and what follows it need not start a group.
                run(&mut open.levels, rows, u32::from(present == rows), 1);
            } else {
                level_values(&mut self.levels, defs, rows);
                let (bytes, left) = (&mut open.levels, &mut open.levels_left);
                Open::append(bytes, left, &self.levels, 1, Indices::Hybrid);
            }
        }
        self.nulls += (rows - present) as u64;
        open.rows += rows;
        (open.width, open.how) = (width, how);
        Open::append(&mut self.buf, &mut open.keys_left, keys, width, how);
        if open.levels.len() + self.buf.len() >= INDEX_PAGE_BYTES || open.rows >= INDEX_PAGE_ROWS {
            self.flush_indices()?;
        }
        Ok(())
    }

    /// Writes the data page of indices in the making, if any ([`Out::indices`]).
    pub(crate) fn flush_indices(&mut self) -> Result<(), ParquetError> {
        let open = &mut self.open;
        if open.rows == 0 {
            return Ok(());
        }
        // The last values, in a group padded with zeros.
        if !open.levels_left.is_empty() {
            hybrid(&mut open.levels, &open.levels_left, 1);
            open.levels_left.clear();
        }
        match open.how {
            Indices::Hybrid => hybrid(&mut self.buf, &open.keys_left, open.width),
            Indices::Packed if open.keys_left.is_empty() => {}
            Indices::Packed => pack(&mut self.buf, &open.keys_left, open.width),
        }
        open.keys_left.clear();
        // The levels go first, after their length.
        if self.descr.max_def_level() > 0 {
            let mut head = Vec::with_capacity(open.levels.len() + 4);
            levels(&mut head, |b| b.extend_from_slice(&open.levels));
            self.buf.splice(0..0, head);
        }
        let rows = std::mem::take(&mut open.rows);
        open.levels.clear();
        self.write_page(rows, Encoding::RLE_DICTIONARY)
    }

    /// The chunk: `head` (its dictionary page, or nothing), then the data pages, and
    /// what the row group records of it: `metadata` and the pages' offsets.
    pub(crate) fn finish(
        self,
        head: Bytes,
        metadata: ColumnChunkMetaData,
    ) -> Result<(Spliced, ColumnCloseResult), ParquetError> {
        // The file writer wants an offset index of every column or of none.
        let index = self.written.offset_index(head.len() as i64);
        let close = closed(metadata, self.written.rows, index);
        let tail = self.pages.into_inner()?.into_tail()?;
        Ok((Spliced { head, tail }, close))
    }

    /// The chunk of a dictionary-encoded column: its dictionary page, `n` values PLAIN
    /// in `plain`, then the data pages of indices; `stats` made only when the chunk
    /// records them.
    pub(crate) fn finish_dict(
        mut self,
        plain: &[u8],
        n: usize,
        stats: impl FnOnce(u64) -> Statistics,
    ) -> Result<(Spliced, ColumnCloseResult), ParquetError> {
        self.flush_indices()?;
        let mut head = TrackedWrite::new(Vec::new());
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        let dict = dict_page(&mut self.codec, plain, n, &mut head)?;
        let head = Bytes::from(head.into_inner()?);
        let w = &self.written;
        let mut meta = dict_chunk(
            &self.descr,
            self.compression,
            w.pages,
            (
                dict.compressed_size as i64 + w.compressed,
                dict.uncompressed_size as i64 + w.uncompressed,
            ),
            w.rows,
            head.len() as i64,
        );
        if self.stats {
            meta = meta.set_statistics(stats(self.nulls));
        }
        let metadata = meta.build()?;
        self.finish(head, metadata)
    }
}

/// The data pages of a chunk as they were written: their rows, count and sizes, and
/// where each is (for the offset index).
#[derive(Default)]
pub(crate) struct Written {
    pub(crate) rows: u64,
    pub(crate) pages: i32,
    /// Sizes of the pages, headers included.
    pub(crate) compressed: i64,
    pub(crate) uncompressed: i64,
    /// Each page's offset, size and rows.
    index: Vec<(i64, i32, i64)>,
}

impl Written {
    /// Notes a page of `rows` rows, written as `spec` says.
    pub(crate) fn add(&mut self, spec: &PageWriteSpec, rows: usize) {
        let size = i32::try_from(spec.compressed_size).unwrap_or(i32::MAX);
        self.index.push((spec.offset as i64, size, rows as i64));
        self.compressed += spec.compressed_size as i64;
        self.uncompressed += spec.uncompressed_size as i64;
        self.pages += 1;
        self.rows += rows as u64;
    }

    /// The offset index of the pages, which start `at` bytes into the chunk.
    pub(crate) fn offset_index(&self, at: i64) -> OffsetIndexBuilder {
        let mut index = OffsetIndexBuilder::new();
        for &(offset, size, rows) in &self.index {
            index.append_offset_and_size(at + offset, size);
            index.append_row_count(rows);
        }
        index
    }
}

/// Appends the definition levels of a data page of `rows` rows of a nullable column
/// to `out`: `defs` (1 present, 0 null; `None`: every row present), as the hybrid of
/// `scratch`. Returns the rows present.
pub(crate) fn def_levels(
    out: &mut Vec<u8>,
    scratch: &mut Vec<u32>,
    defs: Option<&[i16]>,
    rows: usize,
) -> Result<usize, ParquetError> {
    let present = present(defs, rows)?;
    // A page of every row present, or of none (most pages of most nullable columns):
    // one run, as the hybrid writes 8 or more equal levels, without a copy of them.
    if rows >= 8 && (present == rows || present == 0) {
        levels(out, |b| run(b, rows, u32::from(present == rows), 1));
        return Ok(present);
    }
    level_values(scratch, defs, rows);
    levels(out, |b| hybrid(b, scratch, 1));
    Ok(present)
}

/// The rows present among `rows` whose definition levels are `defs` (1 present, 0 null;
/// `None`: every row present); an error when `defs` are not `rows` levels.
fn present(defs: Option<&[i16]>, rows: usize) -> Result<usize, ParquetError> {
    match defs {
        Some(d) if d.len() != rows => Err(ParquetError::General(format!(
            "{} levels for {rows} rows",
            d.len()
        ))),
        Some(d) => Ok(d.iter().filter(|&&l| l == 1).count()),
        None => Ok(rows),
    }
}

/// `defs` (or `rows` levels of 1 for `None`) as the values the hybrid encodes, in `out`.
fn level_values(out: &mut Vec<u32>, defs: Option<&[i16]>, rows: usize) {
    out.clear();
    match defs {
        Some(d) => out.extend(d.iter().map(|&l| u32::from(l == 1))),
        None => out.resize(rows, 1),
    }
}

/// Appends the definition levels of a v1 data page, as `write` writes them: their
/// length in 4 bytes, then the levels.
pub(crate) fn levels(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    write(out);
    let len = u32::try_from(out.len() - at - 4).unwrap_or(u32::MAX);
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// One RLE run of `n` times `v`, of `width` bits.
pub(crate) fn run(out: &mut Vec<u8>, n: usize, v: u32, width: u8) {
    if n == 0 {
        return;
    }
    uleb(out, (n as u64) << 1);
    out.extend_from_slice(&v.to_le_bytes()[..usize::from(width).div_ceil(8)]);
}

/// A column's compression. Its zstd context is its thread's, kept from page to page
/// and from column to column (a context a page set its tables up each time: 56 M
/// instructions of memset in a 2.9 M-event export; one a column held some 100 KB each
/// once pages were of 32 KB).
pub(crate) struct Codec {
    compression: Compression,
}

thread_local! {
    /// The thread's zstd context and its level.
    static ZSTD: std::cell::RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
        const { std::cell::RefCell::new(None) };
}

impl Codec {
    pub(crate) fn new(compression: Compression) -> Codec {
        Codec { compression }
    }

    /// A page's bytes made in `buf`: compressed, or, left uncompressed, `buf`'s own bytes
    /// rather than a copy (the pages of times and durations, two thirds of an export's
    /// bytes), a buffer of the same capacity left in its place.
    pub(crate) fn take(&mut self, buf: &mut Vec<u8>) -> Result<Bytes, ParquetError> {
        if self.compression == Compression::UNCOMPRESSED {
            let capacity = buf.capacity();
            return Ok(Bytes::from(std::mem::replace(
                buf,
                Vec::with_capacity(capacity),
            )));
        }
        self.compress(buf)
    }

    /// `buf` compressed.
    pub(crate) fn compress(&mut self, buf: &[u8]) -> Result<Bytes, ParquetError> {
        let external = |e: std::io::Error| ParquetError::External(Box::new(e));
        match self.compression {
            Compression::ZSTD(level) => ZSTD.with_borrow_mut(|z| {
                let level = level.compression_level();
                let z = match z {
                    Some((l, z)) if *l == level => z,
                    _ => {
                        let new = zstd::bulk::Compressor::new(level).map_err(external)?;
                        &mut z.insert((level, new)).1
                    }
                };
                z.compress(buf).map(Bytes::from).map_err(external)
            }),
            Compression::UNCOMPRESSED => Ok(Bytes::copy_from_slice(buf)),
            c => Err(ParquetError::General(format!(
                "compression {c} not written"
            ))),
        }
    }
}

/// Bits of an index into a dictionary of `n` strings (at least one).
pub(crate) fn width_of(n: usize) -> u8 {
    let max = u32::try_from(n.saturating_sub(1)).unwrap_or(u32::MAX);
    (32 - max.leading_zeros()).max(1) as u8
}

/// Appends `vals` in Parquet's RLE/bit-packing hybrid of `width` bits: 8 or more equal
/// values as one run (count and value), the others bit-packed 8 at a time.
pub(crate) fn hybrid(out: &mut Vec<u8>, vals: &[u32], width: u8) {
    hybrid_part(out, vals, width, true);
}

/// [`hybrid`], of `vals` that are the `last` of a page's or not: if not, the values
/// after the last whole group of a bit-packed stretch are left (a group is padded with
/// zeros only at the end). Returns the values written.
fn hybrid_part(out: &mut Vec<u8>, vals: &[u32], width: u8, last: bool) -> usize {
    let n = vals.len();
    let mut i = 0;
    while let Some(&v) = vals.get(i) {
        let same = vals[i..].iter().take_while(|&&x| x == v).count();
        if same >= 8 {
            run(out, same, v, width);
            i += same;
            continue;
        }
        // Groups of 8 up to one that starts a run (only the last group is padded).
        let start = i;
        i = (i + 8).min(n);
        while i < n
            && !vals
                .get(i..i + 8)
                .is_some_and(|g| g.iter().all(|&x| x == g[0]))
        {
            i = (i + 8).min(n);
        }
        if !last && (i - start) % 8 != 0 {
            let whole = start + (i - start) / 8 * 8;
            if whole > start {
                pack(out, &vals[start..whole], width);
            }
            return whole;
        }
        pack(out, &vals[start..i], width);
    }
    n
}

/// One bit-packed run of `vals`, padded with zeros to a multiple of 8 values.
pub(crate) fn pack(out: &mut Vec<u8>, vals: &[u32], width: u8) {
    let groups = vals.len().div_ceil(8);
    uleb(out, ((groups as u64) << 1) | 1);
    let w = usize::from(width);
    if w <= 8 {
        // Eight values of 8 bits or fewer fill a u64: `width` bytes a group.
        let group = |g: &[u32]| {
            let bits =
                (g.iter().enumerate()).fold(0u64, |acc, (j, &v)| acc | u64::from(v) << (j * w));
            bits.to_le_bytes()
        };
        out.reserve(groups * w);
        let mut whole = vals.chunks_exact(8);
        for g in &mut whole {
            out.extend_from_slice(&group(g)[..w]);
        }
        if !whole.remainder().is_empty() {
            out.extend_from_slice(&group(whole.remainder())[..w]);
        }
        return;
    }
    let (mut acc, mut bits) = (0u64, 0u32);
    for k in 0..groups * 8 {
        acc |= u64::from(vals.get(k).copied().unwrap_or(0)) << bits;
        bits += u32::from(width);
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
}

/// `v` as an unsigned LEB128 varint.
pub(crate) fn uleb(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Where the data pages waited.
pub(crate) enum Tail {
    Mem(Bytes),
    File(File),
}

/// A chunk in two parts: the dictionary page, then the data pages (in memory or
/// spilled), read as one for `append_column`.
pub(crate) struct Spliced {
    pub(crate) head: Bytes,
    pub(crate) tail: Tail,
}

impl Length for Spliced {
    fn len(&self) -> u64 {
        let tail = match &self.tail {
            Tail::Mem(b) => b.len() as u64,
            Tail::File(f) => f.len(),
        };
        self.head.len() as u64 + tail
    }
}

impl ChunkReader for Spliced {
    type T = Box<dyn Read + Send>;

    fn get_read(&self, start: u64) -> Result<Self::T, ParquetError> {
        let tail: Box<dyn Read + Send> = match &self.tail {
            Tail::Mem(b) => Box::new(b.clone().reader()),
            Tail::File(f) => {
                let mut f = f.try_clone()?;
                f.seek(SeekFrom::Start(0))?;
                Box::new(BufReader::with_capacity(SPILL_BYTES, f))
            }
        };
        let mut read = self.head.clone().reader().chain(tail);
        std::io::copy(&mut (&mut read).take(start), &mut std::io::sink())?;
        Ok(Box::new(read))
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes, ParquetError> {
        let mut v = Vec::with_capacity(length);
        self.get_read(start)?
            .take(length as u64)
            .read_to_end(&mut v)?;
        Ok(Bytes::from(v))
    }
}

/// The metadata of a dictionary-encoded chunk of `rows` values: its dictionary page at
/// the chunk's start, then `data_pages` pages of indices from `data_offset`, of
/// (compressed, uncompressed) bytes in all, headers included.
pub(crate) fn dict_chunk(
    descr: &ColumnDescPtr,
    compression: Compression,
    data_pages: i32,
    (compressed, uncompressed): (i64, i64),
    rows: u64,
    data_offset: i64,
) -> ColumnChunkMetaDataBuilder {
    ColumnChunkMetaData::builder(descr.clone())
        .set_compression(compression)
        .set_encodings(vec![
            Encoding::PLAIN,
            Encoding::RLE,
            Encoding::RLE_DICTIONARY,
        ])
        .set_page_encoding_stats(encoding_stats(data_pages))
        .set_total_compressed_size(compressed)
        .set_total_uncompressed_size(uncompressed)
        .set_num_values(i64::try_from(rows).unwrap_or(i64::MAX))
        .set_dictionary_page_offset(Some(0))
        .set_data_page_offset(data_offset)
}

/// The page encodings of a chunk: its dictionary page, then `data_pages` of indices.
fn encoding_stats(data_pages: i32) -> Vec<PageEncodingStats> {
    vec![
        PageEncodingStats {
            page_type: PageType::DICTIONARY_PAGE,
            encoding: Encoding::PLAIN,
            count: 1,
        },
        PageEncodingStats {
            page_type: PageType::DATA_PAGE,
            encoding: Encoding::RLE_DICTIONARY,
            count: data_pages,
        },
    ]
}

/// Writes a dictionary page of `plain`, `n` values PLAIN, to `out`.
pub(crate) fn dict_page<W: Write + Send>(
    codec: &mut Codec,
    plain: &[u8],
    n: u32,
    out: &mut TrackedWrite<W>,
) -> Result<PageWriteSpec, ParquetError> {
    let page = Page::DictionaryPage {
        buf: codec.compress(plain)?,
        num_values: n,
        encoding: Encoding::PLAIN,
        is_sorted: false,
    };
    SerializedPageWriter::new(out).write_page(CompressedPage::new(page, plain.len()))
}

/// Writes a data page of `rows` rows to `out`: `buf` holds their definition levels (of a
/// nullable column), then the values in `encoding` (indices into the dictionary: the
/// bit width and the indices); `buf` is left as [`Codec::take`] leaves it.
pub(crate) fn data_page<W: Write + Send>(
    codec: &mut Codec,
    buf: &mut Vec<u8>,
    rows: u32,
    encoding: Encoding,
    out: &mut TrackedWrite<W>,
) -> Result<PageWriteSpec, ParquetError> {
    let size = buf.len();
    let page = Page::DataPage {
        buf: codec.take(buf)?,
        num_values: rows,
        encoding,
        def_level_encoding: Encoding::RLE,
        rep_level_encoding: Encoding::RLE,
        statistics: None,
    };
    SerializedPageWriter::new(out).write_page(CompressedPage::new(page, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hybrid decoded back (the reader's side, for the test).
    fn unhybrid(mut b: &[u8], width: u8, n: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let bytes = usize::from(width).div_ceil(8);
        while out.len() < n {
            let (mut h, mut shift) = (0u64, 0);
            loop {
                let (&c, rest) = b.split_first().unwrap();
                b = rest;
                h |= u64::from(c & 0x7f) << shift;
                shift += 7;
                if c < 0x80 {
                    break;
                }
            }
            if h & 1 == 0 {
                let mut v = [0u8; 4];
                v[..bytes].copy_from_slice(&b[..bytes]);
                b = &b[bytes..];
                out.extend(std::iter::repeat_n(
                    u32::from_le_bytes(v),
                    (h >> 1) as usize,
                ));
            } else {
                let count = (h >> 1) as usize * 8;
                let (mut acc, mut bits) = (0u64, 0u32);
                for _ in 0..count {
                    while bits < u32::from(width) {
                        acc |= u64::from(b[0]) << bits;
                        b = &b[1..];
                        bits += 8;
                    }
                    out.push((acc & ((1u64 << width) - 1)) as u32);
                    acc >>= width;
                    bits -= u32::from(width);
                }
            }
        }
        out.truncate(n);
        out
    }

    #[test]
    fn definition_levels_are_the_hybrid_of_the_rows_present() {
        // As the hybrid of the levels writes them, whatever the shortcut taken.
        let hybrid_of = |l: &[u32]| {
            let mut b = Vec::new();
            levels(&mut b, |b| hybrid(b, l, 1));
            b
        };
        for rows in [1, 7, 8, 9, 100] {
            for pattern in [[1i16, 1], [0, 0], [1, 0]] {
                let defs: Vec<i16> = (0..rows).map(|i| pattern[i % 2]).collect();
                let (mut out, mut scratch) = (Vec::new(), Vec::new());
                let present = def_levels(&mut out, &mut scratch, Some(&defs), rows).unwrap();
                let l: Vec<u32> = defs.iter().map(|&d| u32::from(d == 1)).collect();
                assert_eq!(out, hybrid_of(&l), "{rows} {pattern:?}");
                assert_eq!(present, l.iter().filter(|&&l| l == 1).count());
            }
            let mut out = Vec::new();
            assert_eq!(
                def_levels(&mut out, &mut Vec::new(), None, rows).unwrap(),
                rows
            );
            assert_eq!(out, hybrid_of(&vec![1; rows]));
        }
        assert!(def_levels(&mut Vec::new(), &mut Vec::new(), Some(&[1; 9]), 10).is_err());
    }

    #[test]
    fn the_hybrid_reads_back() {
        let mut cases: Vec<Vec<u32>> = vec![
            vec![],
            vec![3],
            vec![1; 100],
            (0..37).map(|i| i % 5).collect(),
            (0..50).map(|i| if i < 13 { i } else { 7 }).collect(),
            (0..1000).map(|i| (i * 7919 % 300) as u32).collect(),
        ];
        cases.push(
            (0..20)
                .flat_map(|i| std::iter::repeat_n(i, i as usize))
                .collect(),
        );
        for vals in cases {
            let width = width_of(vals.iter().max().map_or(1, |&m| m as usize + 1));
            let mut out = Vec::new();
            hybrid(&mut out, &vals, width);
            assert_eq!(unhybrid(&out, width, vals.len()), vals, "{width}");
        }
    }

    #[test]
    fn widths() {
        assert_eq!(width_of(0), 1);
        assert_eq!(width_of(1), 1);
        assert_eq!(width_of(2), 1);
        assert_eq!(width_of(3), 2);
        assert_eq!(width_of(256), 8);
        assert_eq!(width_of(257), 9);
    }
}
