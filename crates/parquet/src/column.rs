//! The columns of a table's next row group, as rows are pushed ([`Row`]), and how a
//! row group of them is written, on a thread of its own ([`Pending`]).
//!
//! Strings are kept as indices into the table's [`Dict`] (a row costs a hash lookup and
//! no allocation); the provenance columns, the same in every row of a file, are one
//! [`Const`] each, repeated when written.

use std::borrow::Cow;
use std::io::BufWriter;
use std::sync::Mutex;
use std::thread::JoinHandle;

use bytes::Bytes;
use jitterlab_analyze::hash::FxMap;
use jitterlab_trace::Comm;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::writer::SerializedFileWriter;

use crate::table::{i64_of, Col, Table, Ty, PROVENANCE};
use crate::Error;

/// The writer of a table's file.
pub(crate) type Writer = SerializedFileWriter<BufWriter<std::fs::File>>;

/// The distinct strings of a string column: each once, with its index (the strings of a
/// trace are few: names, kinds, states).
#[derive(Default)]
pub(crate) struct Dict {
    index: FxMap<Box<[u8]>, u32>,
    /// Task names by value: found by hashing 16 bytes, not by a check of the UTF-8.
    comms: FxMap<Comm, u32>,
    pub(crate) values: Vec<ByteArray>,
    /// Static strings (kinds, states) by address and length: found without hashing.
    statics: Vec<(usize, usize, u32)>,
}

impl Dict {
    /// The index of a static string, added if new.
    fn key_static(&mut self, s: &'static str) -> u32 {
        let at = (s.as_ptr() as usize, s.len());
        if let Some(&(_, _, k)) = self.statics.iter().find(|&&(a, l, _)| (a, l) == at) {
            return k;
        }
        let k = self.key(s.as_bytes());
        if self.statics.len() < 16 {
            self.statics.push((at.0, at.1, k));
        }
        k
    }

    /// The index of a task name, added if new.
    fn key_comm(&mut self, c: Comm) -> u32 {
        if let Some(&k) = self.comms.get(&c) {
            return k;
        }
        let k = self.key(c.as_str().as_bytes());
        self.comms.insert(c, k);
        k
    }

    /// The index of `s`, added if new.
    fn key(&mut self, s: &[u8]) -> u32 {
        if let Some(&k) = self.index.get(s) {
            return k;
        }
        let k = u32::try_from(self.values.len()).unwrap_or(u32::MAX);
        self.values.push(ByteArray::from(lasting(s)));
        self.index.insert(s.into(), k);
        k
    }
}

/// The strings of the dictionaries, each distinct one kept once for the life of the
/// process (names, kinds, states: hundreds, not one per row).
static LASTING: Mutex<Option<FxMap<&'static [u8], ()>>> = Mutex::new(None);

/// `s` as bytes that live as long as the process: the writer takes one `ByteArray` per
/// value, and a clone of static `Bytes` copies a pointer where a clone of shared ones
/// counts references atomically (two atomic operations a value, 6 % of an export).
fn lasting(s: &[u8]) -> Bytes {
    let mut set = LASTING.lock().unwrap_or_else(|e| e.into_inner());
    let set = set.get_or_insert_with(FxMap::default);
    let kept = match set.get_key_value(s) {
        Some((&k, ())) => k,
        None => {
            let k: &'static [u8] = Box::leak(s.into());
            set.insert(k, ());
            k
        }
    };
    Bytes::from_static(kept)
}

pub(crate) enum Vals {
    I64(Vec<i64>),
    I32(Vec<i32>),
    Bool(Vec<bool>),
    /// Indices into the column's [`Dict`].
    Str(Vec<u32>),
    F64(Vec<f64>),
}

/// A type of column values, and its buffer in [`Vals`].
trait Val: Sized {
    fn vec(v: &mut Vals) -> Option<&mut Vec<Self>>;
}

macro_rules! val {
    ($t:ty, $variant:ident) => {
        impl Val for $t {
            fn vec(v: &mut Vals) -> Option<&mut Vec<$t>> {
                match v {
                    Vals::$variant(x) => Some(x),
                    _ => None,
                }
            }
        }
    };
}
val!(i64, I64);
val!(i32, I32);
val!(bool, Bool);
val!(f64, F64);

/// One column's values of the rows pushed since the last row group.
pub(crate) struct Buf {
    vals: Vals,
    /// Definition levels (1 = present) of a nullable column.
    defs: Option<Vec<i16>>,
}

impl Buf {
    pub(crate) fn new(c: &Col) -> Buf {
        Buf {
            vals: match c.ty {
                Ty::I64 | Ty::Wall => Vals::I64(Vec::new()),
                Ty::I32 => Vals::I32(Vec::new()),
                Ty::Bool => Vals::Bool(Vec::new()),
                Ty::Str | Ty::Kind => Vals::Str(Vec::new()),
                Ty::F64 => Vals::F64(Vec::new()),
            },
            defs: c.nullable.then(Vec::new),
        }
    }
    fn clear(&mut self) {
        match &mut self.vals {
            Vals::I64(v) => v.clear(),
            Vals::I32(v) => v.clear(),
            Vals::Bool(v) => v.clear(),
            Vals::Str(v) => v.clear(),
            Vals::F64(v) => v.clear(),
        }
        if let Some(d) = &mut self.defs {
            d.clear();
        }
    }
    /// Notes a value present (`true`) or null in a nullable column.
    fn def(&mut self, present: bool) {
        if let Some(d) = &mut self.defs {
            d.push(i16::from(present));
        }
    }
}

/// A value of a provenance column, the same in every row of a file, as [`CHUNK`] copies
/// written again and again.
pub(crate) enum Const {
    Str(Vec<ByteArray>),
    I64(Vec<i64>),
    Null,
}

/// Values of a provenance column written at a time: a few copies shared by every row
/// group (1,024 strings are 32 KiB), not a copy per row.
const CHUNK: usize = 1024;

/// Definition levels of [`CHUNK`] present and null values.
static PRESENT: [i16; CHUNK] = [1; CHUNK];
static NULL: [i16; CHUNK] = [0; CHUNK];

impl Const {
    pub(crate) fn text(s: &str) -> Const {
        Const::Str(vec![ByteArray::from(s.as_bytes().to_vec()); CHUNK])
    }
    pub(crate) fn int(v: i64) -> Const {
        Const::I64(vec![v; CHUNK])
    }
}

/// A row group to write: the rows' columns and what their strings are.
pub(crate) struct Group {
    pub(crate) rows: usize,
    pub(crate) origin: std::sync::Arc<[Const; 3]>,
    /// Per column, the strings its indices name (string columns only).
    pub(crate) dicts: Vec<Option<Vec<ByteArray>>>,
    pub(crate) bufs: Vec<Buf>,
}

/// A row group being written on its own thread.
pub(crate) struct Pending(JoinHandle<Result<(Writer, Vec<Buf>), ParquetError>>);

impl Pending {
    /// Starts writing `group` with `writer`.
    pub(crate) fn spawn(writer: Writer, group: Group) -> Pending {
        Pending(std::thread::spawn(move || {
            let mut writer = writer;
            let mut group = group;
            write_group(&mut writer, &group)?;
            for b in &mut group.bufs {
                b.clear();
            }
            Ok((writer, group.bufs))
        }))
    }

    /// The writer and the emptied buffers, once the row group is written.
    pub(crate) fn join(self) -> Result<(Writer, Vec<Buf>), ParquetError> {
        self.0
            .join()
            .unwrap_or_else(|_| Err(ParquetError::General("the writing thread panicked".into())))
    }
}

/// Writes `g` as one row group.
fn write_group(writer: &mut Writer, g: &Group) -> Result<(), ParquetError> {
    let rows = g.rows;
    let mut rg = writer.next_row_group()?;
    for (c, p) in g.origin.iter().zip(&PROVENANCE) {
        let Some(mut col) = rg.next_column()? else {
            break;
        };
        let mut left = rows;
        while left > 0 {
            let n = left.min(CHUNK);
            let present = p.nullable.then_some(&PRESENT[..n]);
            match c {
                Const::Str(v) => col
                    .typed::<ByteArrayType>()
                    .write_batch(&v[..n], present, None),
                Const::I64(v) => col.typed::<Int64Type>().write_batch(&v[..n], present, None),
                // Every provenance column may be null: `kernel` (a string) and the start times.
                Const::Null if p.ty == Ty::Str => {
                    col.typed::<ByteArrayType>()
                        .write_batch(&[], Some(&NULL[..n]), None)
                }
                Const::Null => col
                    .typed::<Int64Type>()
                    .write_batch(&[], Some(&NULL[..n]), None),
            }?;
            left -= n;
        }
        col.close()?;
    }
    let mut strs: Vec<ByteArray> = Vec::new();
    for (b, dict) in g.bufs.iter().zip(&g.dicts) {
        let Some(mut col) = rg.next_column()? else {
            break;
        };
        let defs = b.defs.as_deref();
        match &b.vals {
            Vals::I64(v) => col.typed::<Int64Type>().write_batch(v, defs, None),
            Vals::I32(v) => col.typed::<Int32Type>().write_batch(v, defs, None),
            Vals::Bool(v) => col.typed::<BoolType>().write_batch(v, defs, None),
            Vals::Str(keys) => {
                // A chunk of rows at a time: the strings are copies of the dictionary's
                // (static bytes: a pointer each), made for the writer and dropped after it.
                let values = dict.as_deref().unwrap_or_default();
                let mut at = 0;
                for start in (0..rows).step_by(CHUNK) {
                    let levels = defs.map(|d| &d[start..d.len().min(start + CHUNK)]);
                    let n = match levels {
                        Some(l) => l.iter().filter(|&&d| d == 1).count(),
                        None => CHUNK.min(rows - start),
                    };
                    strs.clear();
                    for &k in keys.get(at..at + n).unwrap_or_default() {
                        let Some(v) = values.get(k as usize) else {
                            return Err(ParquetError::General(format!(
                                "string {k} of no dictionary"
                            )));
                        };
                        strs.push(v.clone());
                    }
                    at += n;
                    col.typed::<ByteArrayType>()
                        .write_batch(&strs, levels, None)?;
                }
                Ok(rows)
            }
            Vals::F64(v) => col.typed::<DoubleType>().write_batch(v, defs, None),
        }?;
        col.close()?;
    }
    rg.close()?;
    Ok(())
}

/// A string value and how it came: a literal (found by address), a task name (by its
/// 16 bytes), other text.
enum Text<'s> {
    Literal(&'static str),
    Comm(Comm),
    Str(&'s str),
}

/// One row being pushed, column by column in declared order.
pub(crate) struct Row<'a> {
    table: &'a mut Table,
    col: usize,
}

impl<'a> Row<'a> {
    pub(crate) fn new(table: &'a mut Table) -> Row<'a> {
        Row { table, col: 0 }
    }
    /// The next column's buffer.
    fn next(&mut self) -> &mut Buf {
        let c = self.col;
        self.col += 1;
        let name = self.table.name();
        match self.table.bufs.get_mut(c) {
            Some(b) => b,
            None => panic!("table {name}: a row of more columns than declared"),
        }
    }
    fn mismatch(&self) -> ! {
        panic!(
            "table {}: column {} pushed a value of another type, or null into a column that is not nullable",
            self.table.name(),
            self.col - 1
        )
    }
    /// A nullable value of a column of `T`.
    fn put<T: Val>(mut self, v: Option<T>) -> Self {
        let b = self.next();
        b.def(v.is_some());
        let nullable = b.defs.is_some();
        match (T::vec(&mut b.vals), v) {
            (Some(x), Some(v)) => x.push(v),
            (Some(_), None) if nullable => {}
            _ => self.mismatch(),
        }
        self
    }
    /// A nullable int64.
    pub(crate) fn opt_i64(self, v: Option<i64>) -> Self {
        self.put(v)
    }
    /// A nullable int32.
    pub(crate) fn opt_i32(self, v: Option<i32>) -> Self {
        self.put(v)
    }
    /// A nullable boolean.
    pub(crate) fn put_opt_bool(self, v: Option<bool>) -> Self {
        self.put(v)
    }
    /// A nullable double.
    pub(crate) fn opt_f64(self, v: Option<f64>) -> Self {
        self.put(v)
    }
    /// A nullable string.
    pub(crate) fn opt_str(self, v: Option<&str>) -> Self {
        self.text(v.map(Text::Str))
    }
    /// A nullable string that is mostly one of a few literals (a state): those are found
    /// by address.
    pub(crate) fn put_str(self, v: Option<Cow<'static, str>>) -> Self {
        match v {
            Some(Cow::Borrowed(s)) => self.text(Some(Text::Literal(s))),
            v => self.text(v.as_deref().map(Text::Str)),
        }
    }
    /// A task name.
    pub(crate) fn comm(self, c: Comm) -> Self {
        self.text(Some(Text::Comm(c)))
    }
    /// A string value, found in the column's dictionary by how it came.
    fn text(mut self, v: Option<Text<'_>>) -> Self {
        let c = self.col;
        let present = v.is_some();
        let key = match (v, self.table.dicts.get_mut(c)) {
            (Some(Text::Literal(l)), Some(Some(d))) => Some(d.key_static(l)),
            (Some(Text::Comm(n)), Some(Some(d))) => Some(d.key_comm(n)),
            (Some(Text::Str(s)), Some(Some(d))) => Some(d.key(s.as_bytes())),
            _ => None,
        };
        let b = self.next();
        b.def(present);
        match (&mut b.vals, key, b.defs.is_some()) {
            (Vals::Str(x), Some(k), _) => x.push(k),
            (Vals::Str(_), None, true) if !present => {}
            _ => self.mismatch(),
        }
        self
    }
    /// An int64 (or wall-clock) value.
    pub(crate) fn i64(self, v: i64) -> Self {
        self.opt_i64(Some(v))
    }
    /// A time or count in u64.
    pub(crate) fn u64(self, v: u64) -> Self {
        self.opt_i64(Some(i64_of(v)))
    }
    /// A nullable time or count.
    pub(crate) fn opt_u64(self, v: Option<u64>) -> Self {
        self.opt_i64(v.map(i64_of))
    }
    /// An int32.
    pub(crate) fn i32(self, v: i32) -> Self {
        self.opt_i32(Some(v))
    }
    /// A u32 as int32 (CPUs, IRQs, vectors: beyond i32, the largest).
    pub(crate) fn u32(self, v: u32) -> Self {
        self.opt_u32(Some(v))
    }
    /// A nullable u32 as int32.
    pub(crate) fn opt_u32(self, v: Option<u32>) -> Self {
        self.opt_i32(v.map(|v| i32::try_from(v).unwrap_or(i32::MAX)))
    }
    /// A boolean.
    pub(crate) fn bool(self, v: bool) -> Self {
        self.put_opt_bool(Some(v))
    }
    /// A string.
    pub(crate) fn str(self, v: &str) -> Self {
        self.opt_str(Some(v))
    }
    /// One of a few literal strings (a kind).
    pub(crate) fn kind(self, v: &'static str) -> Self {
        self.put_str(Some(Cow::Borrowed(v)))
    }
    /// A double.
    pub(crate) fn f64(self, v: f64) -> Self {
        self.opt_f64(Some(v))
    }
    /// Ends the row (every column must have been pushed); writes a row group when full.
    pub(crate) fn end(self) -> Result<(), Error> {
        debug_assert_eq!(
            self.col,
            self.table.bufs.len(),
            "table {}: a row of {} columns, expected {}",
            self.table.name(),
            self.col,
            self.table.bufs.len()
        );
        self.table.end_row()
    }
}
