//! A string column chunk encoded here rather than by the `parquet` crate's column
//! writer: the values are already indices into the table's [`crate::column::Dict`], so
//! a row group's chunk is its dictionary (the strings it uses, a PLAIN page) and data
//! pages of RLE_DICTIONARY indices, without hashing, comparing or copying a string per
//! value as the crate's writer does (its dictionary hashed every kind, its statistics
//! compared every kind twice, and its plain names were 20 MB a row group to compress:
//! together 20 % of an export's instructions). The provenance columns, one value a
//! file, are written here too ([`Repeated`]).

use std::io::Write;

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, PageType, Type as PhysicalType};
use parquet::column::page::{CompressedPage, Page, PageWriteSpec, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::metadata::{
    ColumnChunkMetaData, ColumnChunkMetaDataBuilder, OffsetIndexBuilder, PageEncodingStats,
};
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use crate::column::{Const, Spill};
use crate::pages::{
    closed, def_levels, hybrid, levels, run, width_of, Codec, Spliced, Tail, Written,
};

/// An index not yet in the chunk's dictionary.
const UNUSED: u32 = u32::MAX;

/// A string column's chunk of the open row group.
pub(crate) struct Strings {
    descr: ColumnDescPtr,
    compression: Compression,
    codec: Codec,
    /// Min/max and null count in the chunk's metadata (kinds; names have none).
    stats: bool,
    /// The data pages, serialized as they come; the dictionary page goes before them
    /// when the row group is sealed.
    pages: TrackedWrite<Spill>,
    /// The table's strings, by index (they only grow).
    strings: Vec<ByteArray>,
    /// Per table index, its index in the chunk's dictionary ([`UNUSED`]: none yet) and
    /// its PLAIN size (the string's length and 4): one look-up a value.
    local: Vec<(u32, usize)>,
    /// The chunk's dictionary: table indices in order of first use.
    used: Vec<u32>,
    /// The data pages written (the dictionary page goes before them).
    written: Written,
    nulls: u64,
    /// Scratch: the page's levels or indices, and its bytes.
    vals: Vec<u32>,
    buf: Vec<u8>,
}

impl Strings {
    pub(crate) fn new(
        descr: ColumnDescPtr,
        compression: Compression,
        stats: bool,
        spill: Spill,
    ) -> Strings {
        Strings {
            descr,
            compression,
            codec: Codec::new(compression),
            stats,
            pages: TrackedWrite::new(spill),
            strings: Vec::new(),
            local: Vec::new(),
            used: Vec::new(),
            written: Written::default(),
            nulls: 0,
            vals: Vec::new(),
            buf: Vec::new(),
        }
    }

    /// Writes `rows` rows as a data page: `keys` index `strings` (the table's strings so
    /// far), one per present row; `defs` are the definition levels of a nullable
    /// column (`None`: every row present). Returns the values' size as PLAIN (a
    /// string's length and 4).
    pub(crate) fn put(
        &mut self,
        keys: &[u32],
        defs: Option<&[i16]>,
        strings: &[ByteArray],
        rows: usize,
    ) -> Result<usize, ParquetError> {
        if rows == 0 {
            return Ok(0);
        }
        let new = strings.get(self.strings.len()..).unwrap_or_default();
        self.local
            .extend(new.iter().map(|s| (UNUSED, s.data().len() + 4)));
        self.strings.extend_from_slice(new);
        self.buf.clear();
        let mut present = rows;
        if self.descr.max_def_level() > 0 {
            present = def_levels(&mut self.buf, &mut self.vals, defs, rows)?;
            self.nulls += (rows - present) as u64;
        }
        if keys.len() != present {
            return Err(ParquetError::General(format!(
                "{} strings for {present} present values",
                keys.len()
            )));
        }
        self.vals.clear();
        let mut bytes = 0;
        for &k in keys {
            let Some((l, size)) = self.local.get_mut(k as usize) else {
                return Err(ParquetError::General(format!(
                    "string {k} of no dictionary"
                )));
            };
            bytes += *size;
            if *l == UNUSED {
                *l = u32::try_from(self.used.len()).unwrap_or(UNUSED);
                self.used.push(k);
            }
            self.vals.push(*l);
        }
        let width = width_of(self.used.len());
        self.buf.push(width);
        hybrid(&mut self.buf, &self.vals, width);
        let num_values = u32::try_from(rows).unwrap_or(u32::MAX);
        let spec = index_page(&mut self.codec, &self.buf, num_values, &mut self.pages)?;
        self.written.add(&spec, rows);
        Ok(bytes)
    }

    /// The chunk (the dictionary page, then the data pages) and what the row group
    /// records of it.
    pub(crate) fn close(mut self) -> Result<(Spliced, ColumnCloseResult), ParquetError> {
        self.buf.clear();
        for &k in &self.used {
            let s = self
                .strings
                .get(k as usize)
                .map_or(&[][..], ByteArray::data);
            let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
            self.buf.extend_from_slice(&len.to_le_bytes());
            self.buf.extend_from_slice(s);
        }
        let mut head = TrackedWrite::new(Vec::new());
        let values = u32::try_from(self.used.len()).unwrap_or(u32::MAX);
        let dict = dict_page(&mut self.codec, &self.buf, values, &mut head)?;
        let head = Bytes::from(head.into_inner()?);
        let mut meta = dict_chunk(
            &self.descr,
            self.compression,
            self.written.pages,
            (
                dict.compressed_size as i64 + self.written.compressed,
                dict.uncompressed_size as i64 + self.written.uncompressed,
            ),
            self.written.rows,
            head.len() as i64,
        );
        if self.stats {
            let used = || {
                self.used
                    .iter()
                    .filter_map(|&k| self.strings.get(k as usize))
            };
            let min = used().min_by(|a, b| a.data().cmp(b.data())).cloned();
            let max = used().max_by(|a, b| a.data().cmp(b.data())).cloned();
            meta = meta.set_statistics(Statistics::new(min, max, None, Some(self.nulls), false));
        }
        let metadata = meta.build()?;
        let tail = self.pages.into_inner()?.into_tail()?;
        // The file writer wants an offset index of every column or of none.
        let index = self.written.offset_index(head.len() as i64);
        let close = closed(metadata, self.written.rows, index);
        Ok((Spliced { head, tail }, close))
    }
}

/// A provenance column's chunk: the same value (or null) in every row, so nothing is
/// encoded as rows come; when the row group is sealed, a dictionary of the value and one
/// data page of a run of its index. (Encoded as rows, the two times' delta packing and
/// min/max and the kernel's indices cost 495 M of 8,494 M instructions of an export.)
pub(crate) struct Repeated {
    descr: ColumnDescPtr,
    compression: Compression,
    /// Min/max and null count in the chunk's metadata.
    stats: bool,
    value: Const,
    rows: u64,
}

impl Repeated {
    pub(crate) fn new(
        descr: ColumnDescPtr,
        compression: Compression,
        stats: bool,
        value: Const,
    ) -> Repeated {
        Repeated {
            descr,
            compression,
            stats,
            value,
            rows: 0,
        }
    }

    /// Adds `rows` rows; returns their size as PLAIN values.
    pub(crate) fn put(&mut self, rows: usize) -> usize {
        self.rows += rows as u64;
        rows * match &self.value {
            Const::Str(s) => s.len() + 4,
            Const::I64(_) => 8,
            Const::Null => 0,
        }
    }

    /// The chunk (the dictionary page of a value, then the data page) and what the row
    /// group records of it.
    pub(crate) fn close(self) -> Result<(Spliced, ColumnCloseResult), ParquetError> {
        let rows = usize::try_from(self.rows).unwrap_or(usize::MAX);
        let num_values = u32::try_from(rows)
            .map_err(|_| ParquetError::General(format!("a page of {rows} rows")))?;
        // A null column's dictionary is empty, as that of a string column of nulls.
        let (plain, present) = match &self.value {
            Const::Str(s) => {
                let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
                ([&len.to_le_bytes()[..], s.data()].concat(), true)
            }
            Const::I64(v) => (v.to_le_bytes().to_vec(), true),
            Const::Null => (Vec::new(), false),
        };
        let mut codec = Codec::new(self.compression);
        let mut head = TrackedWrite::new(Vec::new());
        let dict = dict_page(&mut codec, &plain, u32::from(present), &mut head)?;
        let dict_len = head.bytes_written() as i64;
        let mut buf = Vec::new();
        if self.descr.max_def_level() > 0 {
            levels(&mut buf, |b| run(b, rows, u32::from(present), 1));
        }
        buf.push(1);
        if present {
            run(&mut buf, rows, 0, 1);
        }
        let spec = index_page(&mut codec, &buf, num_values, &mut head)?;
        let head = Bytes::from(head.into_inner()?);
        let mut meta = dict_chunk(
            &self.descr,
            self.compression,
            1,
            (
                (dict.compressed_size + spec.compressed_size) as i64,
                (dict.uncompressed_size + spec.uncompressed_size) as i64,
            ),
            self.rows,
            dict_len,
        );
        if self.stats {
            let nulls = Some(if present { 0 } else { self.rows });
            let stats = match (&self.value, self.descr.physical_type()) {
                (Const::Str(s), _) => {
                    Statistics::new(Some(s.clone()), Some(s.clone()), None, nulls, false)
                }
                (Const::I64(v), _) => Statistics::new(Some(*v), Some(*v), None, nulls, false),
                (Const::Null, PhysicalType::BYTE_ARRAY) => {
                    Statistics::new::<ByteArray>(None, None, None, nulls, false)
                }
                (Const::Null, _) => Statistics::new::<i64>(None, None, None, nulls, false),
            };
            meta = meta.set_statistics(stats);
        }
        let metadata = meta.build()?;
        let mut index = OffsetIndexBuilder::new();
        let size = i32::try_from(spec.compressed_size).unwrap_or(i32::MAX);
        index.append_offset_and_size(dict_len, size);
        index.append_row_count(i64::try_from(self.rows).unwrap_or(i64::MAX));
        let close = closed(metadata, self.rows, index);
        let tail = Tail::Mem(Bytes::new());
        Ok((Spliced { head, tail }, close))
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
/// nullable column), the indices' bit width and the indices into the dictionary.
pub(crate) fn index_page<W: Write + Send>(
    codec: &mut Codec,
    buf: &[u8],
    rows: u32,
    out: &mut TrackedWrite<W>,
) -> Result<PageWriteSpec, ParquetError> {
    let page = Page::DataPage {
        buf: codec.compress(buf)?,
        num_values: rows,
        encoding: Encoding::RLE_DICTIONARY,
        def_level_encoding: Encoding::RLE,
        rep_level_encoding: Encoding::RLE,
        statistics: None,
    };
    SerializedPageWriter::new(out).write_page(CompressedPage::new(page, buf.len()))
}
