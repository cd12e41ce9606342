//! A string column chunk encoded here rather than by the `parquet` crate's column
//! writer: the values are already indices into the table's [`crate::column::Dict`], so
//! a row group's chunk is its dictionary (the strings it uses, a PLAIN page) and data
//! pages of RLE_DICTIONARY indices, without hashing, comparing or copying a string per
//! value as the crate's writer does (its dictionary hashed every kind, its statistics
//! compared every kind twice, and its plain names were 20 MB a row group to compress:
//! together 20 % of an export's instructions). The provenance columns, one value a
//! file, are written here too ([`Repeated`]).

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, Type as PhysicalType};
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::metadata::OffsetIndexBuilder;
use parquet::file::statistics::Statistics;
use parquet::file::writer::TrackedWrite;
use parquet::schema::types::ColumnDescPtr;

use crate::column::Const;
use crate::pages::{
    closed, data_page, dict_chunk, dict_page, levels, run, width_of, Codec, Indices, Out, Spliced,
    Tail,
};

/// An index not yet in the chunk's dictionary.
const UNUSED: u32 = u32::MAX;

/// A string column's chunk of the open row group.
pub(crate) struct Strings {
    out: Out,
    /// The table's strings, by index (they only grow).
    strings: Vec<ByteArray>,
    /// Per table index, its index in the chunk's dictionary ([`UNUSED`]: none yet) and
    /// its PLAIN size (the string's length and 4): one look-up a value.
    local: Vec<(u32, usize)>,
    /// The chunk's dictionary: table indices in order of first use.
    used: Vec<u32>,
    /// Scratch: a batch's indices.
    vals: Vec<u32>,
}

impl Strings {
    pub(crate) fn new(out: Out) -> Strings {
        Strings {
            out,
            strings: Vec::new(),
            local: Vec::new(),
            used: Vec::new(),
            vals: Vec::new(),
        }
    }

    /// Adds `rows` rows to the data page in the making ([`Out::indices`]): `keys` index
    /// `strings` (the table's strings so far), one per present row; `defs` are the
    /// definition levels of a nullable column (`None`: every row present). Returns the
    /// values' size as PLAIN (a string's length and 4).
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
        self.out
            .indices(defs, rows, &self.vals, width, Indices::Hybrid)?;
        Ok(bytes)
    }

    /// The chunk (the dictionary page, then the data pages) and what the row group
    /// records of it.
    pub(crate) fn close(self) -> Result<(Spliced, ColumnCloseResult), ParquetError> {
        let mut plain = Vec::new();
        let used = || {
            self.used.iter().map(|&k| {
                self.strings
                    .get(k as usize)
                    .map_or(&[][..], ByteArray::data)
            })
        };
        for s in used() {
            let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
            plain.extend_from_slice(&len.to_le_bytes());
            plain.extend_from_slice(s);
        }
        let stats = |nulls| {
            let min = used().min().map(ByteArray::from);
            let max = used().max().map(ByteArray::from);
            Statistics::new(min, max, None, Some(nulls), false)
        };
        self.out.finish_dict(&plain, self.used.len(), stats)
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
        let spec = data_page(
            &mut codec,
            &mut buf,
            num_values,
            Encoding::RLE_DICTIONARY,
            &mut head,
        )?;
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
