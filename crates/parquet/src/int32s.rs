//! An int32 column chunk encoded here rather than by the `parquet` crate's column writer,
//! dictionary-encoded as the string columns are (`strings.rs`): the chunk's distinct
//! values in a PLAIN dictionary page, then data pages of RLE_DICTIONARY indices, each
//! over as many batches of rows as fill it ([`Out::indices`]). A table's int32s are
//! CPUs, tids, priorities, IRQ numbers and vectors: a few distinct values each, whose
//! indices take a few bits where PLAIN took 4 bytes that zstd then had to find the
//! repeats in.

use std::collections::hash_map::Entry;

use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::statistics::Statistics;

use jitterlab_analyze::hash::FxMap;

use crate::pages::{width_of, Indices, Out, Spliced};

/// Slots of the cache of values recently found in the dictionary.
const RECENT: usize = 256;

/// No index yet.
const UNUSED: u32 = u32::MAX;

/// An int32 column's chunk of the open row group.
pub(crate) struct Int32s {
    out: Out,
    /// The chunk's dictionary: its values in order of first use.
    dict: Vec<i32>,
    /// The index of each value.
    index: FxMap<i32, u32>,
    /// Values found lately and their indices, by the value's low 8 bits (index
    /// [`UNUSED`]: empty): a column's few values are found without hashing.
    recent: Box<[(i32, u32); RECENT]>,
    /// Scratch: a page's indices.
    keys: Vec<u32>,
}

impl Int32s {
    pub(crate) fn new(out: Out) -> Int32s {
        Int32s {
            out,
            dict: Vec::new(),
            index: FxMap::default(),
            recent: Box::new([(0, UNUSED); RECENT]),
            keys: Vec::new(),
        }
    }

    /// The index of `v` in the chunk's dictionary, added if new.
    #[inline]
    fn key(&mut self, v: i32) -> u32 {
        let slot = (v as u32) as usize % RECENT;
        match self.recent[slot] {
            (r, k) if r == v && k != UNUSED => k,
            _ => {
                let k = self.find(v);
                self.recent[slot] = (v, k);
                k
            }
        }
    }

    /// [`Int32s::key`] past the cache.
    fn find(&mut self, v: i32) -> u32 {
        let next = u32::try_from(self.dict.len()).unwrap_or(UNUSED);
        match self.index.entry(v) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                e.insert(next);
                self.dict.push(v);
                next
            }
        }
    }

    /// Adds `rows` rows to the data page in the making ([`Out::indices`]): `values`,
    /// one per present row; `defs` are the definition levels of a nullable column
    /// (`None`: every row present). Returns the values' size as PLAIN (4 bytes each).
    pub(crate) fn put(
        &mut self,
        values: &[i32],
        defs: Option<&[i16]>,
        rows: usize,
    ) -> Result<usize, ParquetError> {
        if rows == 0 {
            return Ok(0);
        }
        let mut keys = std::mem::take(&mut self.keys);
        keys.clear();
        keys.extend(values.iter().map(|&v| self.key(v)));
        let width = width_of(self.dict.len());
        // Bit-packed whole: the indices of tids and CPUs seldom repeat 8 times in a row,
        // and the hybrid's looking for runs cost more than the packing (zstd finds
        // what repeats).
        let written = self.out.indices(defs, rows, &keys, width, Indices::Packed);
        self.keys = keys;
        written?;
        Ok(values.len() * 4)
    }

    /// The chunk (the dictionary page, then the data pages) and what the row group
    /// records of it.
    pub(crate) fn close(self) -> Result<(Spliced, ColumnCloseResult), ParquetError> {
        let plain: Vec<u8> = self.dict.iter().flat_map(|v| v.to_le_bytes()).collect();
        let dict = &self.dict;
        let stats = |nulls| {
            let (min, max) = (dict.iter().min().copied(), dict.iter().max().copied());
            Statistics::new(min, max, None, Some(nulls), false)
        };
        self.out.finish_dict(&plain, dict.len(), stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::Spill;
    use parquet::basic::Compression;
    use parquet::schema::parser::parse_message_type;
    use parquet::schema::types::{ColumnDescriptor, ColumnPath};
    use std::sync::Arc;

    fn chunk() -> Int32s {
        let schema = parse_message_type("message t { OPTIONAL INT32 v; }").unwrap();
        let ty = Arc::new(schema.get_fields()[0].as_ref().clone());
        let descr = ColumnDescriptor::new(ty, 1, 0, ColumnPath::from("v"));
        let spill = Spill::Mem(Vec::new(), std::env::temp_dir());
        Int32s::new(Out::new(
            Arc::new(descr),
            Compression::UNCOMPRESSED,
            true,
            spill,
        ))
    }

    #[test]
    fn values_small_and_large_get_one_index_each_in_first_use_order() {
        let mut c = chunk();
        let keys: Vec<u32> = [5, -1, 5, 70_000, 1023, 1024, -1, 70_000, 0, i32::MIN]
            .iter()
            .map(|&v| c.key(v))
            .collect();
        assert_eq!(keys, [0, 1, 0, 2, 3, 4, 1, 2, 5, 6]);
        assert_eq!(c.dict, [5, -1, 70_000, 1023, 1024, 0, i32::MIN]);
    }

    #[test]
    fn a_page_counts_its_values_and_refuses_a_mismatch() {
        let mut c = chunk();
        assert_eq!(c.put(&[3, 4], Some(&[1, 0, 1]), 3).unwrap(), 8);
        // The page is written once full, or when the chunk is.
        assert_eq!(c.out.written.pages, 0);
        c.out.flush_indices().unwrap();
        let w = &c.out.written;
        assert_eq!((c.out.nulls, w.rows, w.pages), (1, 3, 1));
        assert!(c.put(&[3], Some(&[1, 1]), 2).is_err());
    }
}
