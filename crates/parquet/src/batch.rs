//! The rows of a table's next batch, as they are pushed: column by column through a
//! [`Row`](crate::column::Row) into untyped [`Columns`], or, for the tables a trace fills by
//! the million (`sched_slice`, `wakeup`), straight into a struct of typed columns
//! declared with [`batch!`].
//!
//! A [`Row`](crate::column::Row) checks each value's column, type and nullability as it
//! comes: on a 2.9 M-event export, its pushes were 930 M of 5,797 M instructions, about
//! 32 a value. A typed batch is checked once, against the table's declaration, when the
//! table is made, and its columns are arrays of [`BATCH_ROWS`] values written at the
//! row's [`Slot`]: a value costs a store (pushed on `Vec`s, 8 instructions each, the
//! export took 5,420 M; written at their slot, 5,303 M). The arrays are the memory of
//! the batch encoded before, reused as they are.

use jitterlab_trace::Comm;
use parquet::data_type::ByteArray;

use crate::column::{Buf, Dict, Val};
use crate::table::{TableDef, Ty, BATCH_ROWS};

/// The columns of the rows pushed since the last batch was handed to the encoder.
pub(crate) trait Batch: Sized {
    /// Empty columns for `def`'s. Panics if its columns are not `def`'s (names, types,
    /// nullability, order): a defect of the table's code, which every table's test meets.
    fn new(def: &TableDef) -> Self;
    /// The values pushed since the last call, as the table's columns, each followed by
    /// the strings its indices name (string columns only); the columns are left empty,
    /// with the capacity of `spare`'s (the buffers of the batch encoded before).
    fn take(
        &mut self,
        def: &TableDef,
        rows: usize,
        spare: Option<Vec<Buf>>,
    ) -> (Vec<Buf>, Vec<Option<Vec<ByteArray>>>);
}

/// Columns of any table, pushed through a [`Row`](crate::column::Row).
pub(crate) struct Columns {
    pub(crate) bufs: Vec<Buf>,
    /// The distinct strings of each string column, in every row group the same indices.
    pub(crate) dicts: Vec<Option<Dict>>,
}

impl Batch for Columns {
    fn new(def: &TableDef) -> Columns {
        Columns {
            bufs: def.cols.iter().map(Buf::new).collect(),
            dicts: def
                .cols
                .iter()
                .map(|c| matches!(c.ty, Ty::Str | Ty::Kind).then(Dict::default))
                .collect(),
        }
    }
    fn take(
        &mut self,
        def: &TableDef,
        _rows: usize,
        spare: Option<Vec<Buf>>,
    ) -> (Vec<Buf>, Vec<Option<Vec<ByteArray>>>) {
        let fresh = match spare {
            Some(mut bufs) => {
                bufs.iter_mut().for_each(Buf::clear);
                bufs
            }
            None => def.cols.iter().map(Buf::new).collect(),
        };
        let bufs = std::mem::replace(&mut self.bufs, fresh);
        // The strings so far, in index order (a few hundred names at most).
        let dicts = self
            .dicts
            .iter()
            .map(|d| d.as_ref().map(|d| d.values.clone()))
            .collect();
        (bufs, dicts)
    }
}

/// A row's place in a typed batch: below [`BATCH_ROWS`], so that the columns' arrays
/// of that length are written without a bounds check.
#[derive(Clone, Copy)]
pub(crate) struct Slot(usize);

impl Slot {
    /// The slot of row `row` of the batch (a table flushes at [`BATCH_ROWS`]).
    #[inline(always)]
    pub(crate) fn new(row: usize) -> Slot {
        if row >= BATCH_ROWS {
            full();
        }
        Slot(row)
    }
}

#[cold]
#[inline(never)]
fn full() -> ! {
    panic!("a typed batch of more than {BATCH_ROWS} rows")
}

/// An array of [`BATCH_ROWS`] values.
type Slots<T> = Box<[T; BATCH_ROWS]>;

/// `v`'s memory as an array of [`BATCH_ROWS`] values: its own (the values of a batch
/// encoded before, which every row overwrites and no row past the batch's is read),
/// then defaults. No allocation and nothing written when it is a full batch's.
fn slots<T: Copy + Default>(mut v: Vec<T>) -> Slots<T> {
    v.resize(BATCH_ROWS, T::default());
    match v.into_boxed_slice().try_into() {
        Ok(b) => b,
        Err(_) => unreachable!("resized to BATCH_ROWS"),
    }
}

/// The first `n` values of `s`, as a vector (no copy).
fn values<T>(s: Slots<T>, n: usize) -> Vec<T> {
    let s: Box<[T]> = s;
    let mut v = Vec::from(s);
    v.truncate(n);
    v
}

/// A column of a typed batch: its values written at their row's [`Slot`] (a nullable
/// column's present values one after the other).
pub(crate) trait Column {
    /// Whether it may be null.
    const NULLABLE: bool;
    /// An empty column.
    fn empty() -> Self;
    /// Whether it holds the values of a column of `ty`.
    fn fits(ty: Ty) -> bool;
    /// The values of its first `rows` rows, as a buffer; it is left empty, in `spare`'s
    /// memory.
    fn take(&mut self, rows: usize, spare: Option<Buf>) -> Buf;
    /// The strings its indices name, for a string column.
    fn strings(&self) -> Option<Vec<ByteArray>> {
        None
    }
}

/// The values of `spare` if of type `T`, and its definition levels.
fn reuse<T: Val>(spare: Option<Buf>) -> (Vec<T>, Vec<i16>) {
    match spare {
        Some(b) => (
            T::unwrap(b.vals).unwrap_or_default(),
            b.defs.unwrap_or_default(),
        ),
        None => (Vec::new(), Vec::new()),
    }
}

/// A column that is never null.
pub(crate) struct Req<T>(Slots<T>);

impl<T: Val + Copy + Default> Req<T> {
    #[inline(always)]
    pub(crate) fn put(&mut self, at: Slot, v: T) {
        self.0[at.0] = v;
    }
}

impl<T: Val + Copy + Default> Column for Req<T> {
    const NULLABLE: bool = false;
    fn empty() -> Self {
        Req(slots(Vec::new()))
    }
    fn fits(ty: Ty) -> bool {
        T::fits(ty)
    }
    fn take(&mut self, rows: usize, spare: Option<Buf>) -> Buf {
        let full = std::mem::replace(&mut self.0, slots(reuse(spare).0));
        Buf {
            vals: T::wrap(values(full, rows)),
            defs: None,
        }
    }
}

/// A column that may be null: its present values, and a definition level a row.
pub(crate) struct Opt<T> {
    vals: Slots<T>,
    /// Present values so far.
    n: usize,
    defs: Slots<i16>,
}

impl<T: Val + Copy + Default> Opt<T> {
    #[inline(always)]
    pub(crate) fn put(&mut self, at: Slot, v: Option<T>) {
        self.defs[at.0] = i16::from(v.is_some());
        if let Some(v) = v {
            // `n` is at most the row's slot.
            if let Some(x) = self.vals.get_mut(self.n) {
                *x = v;
                self.n += 1;
            }
        }
    }
}

impl<T: Val + Copy + Default> Column for Opt<T> {
    const NULLABLE: bool = true;
    fn empty() -> Self {
        Opt {
            vals: slots(Vec::new()),
            n: 0,
            defs: slots(Vec::new()),
        }
    }
    fn fits(ty: Ty) -> bool {
        T::fits(ty)
    }
    fn take(&mut self, rows: usize, spare: Option<Buf>) -> Buf {
        let (v, d) = reuse(spare);
        let vals = std::mem::replace(&mut self.vals, slots(v));
        let defs = std::mem::replace(&mut self.defs, slots(d));
        let n = std::mem::take(&mut self.n);
        Buf {
            vals: T::wrap(values(vals, n)),
            defs: Some(values(defs, rows)),
        }
    }
}

/// A string column: each row's index into the column's [`Dict`], kept as an int column
/// is ([`Req`] of a column that is never null, [`Opt`] of one that may be).
pub(crate) struct Text<K> {
    keys: K,
    dict: Dict,
    /// The names a kind column's values come from ([`Text::kind`]), and the index of
    /// each in `dict` once seen.
    names: Names,
    known: [u32; KNOWN],
}

/// The strings a kind column's values are, by index (a `static`, so that its address
/// names it).
pub(crate) type Names = &'static [&'static str];

/// Names of a kind column whose index is kept; the others are looked up.
const KNOWN: usize = 16;
/// Not seen yet.
const UNKNOWN: u32 = u32::MAX;

/// A string column that is never null.
pub(crate) type Str = Text<Req<u32>>;
/// A string column that may be null.
pub(crate) type OptStr = Text<Opt<u32>>;

/// The indices of a [`Text`] column: a present value's goes at its row.
pub(crate) trait Keys: Column {
    fn key(&mut self, at: Slot, k: u32);
}

impl Keys for Req<u32> {
    #[inline(always)]
    fn key(&mut self, at: Slot, k: u32) {
        self.put(at, k);
    }
}

impl Keys for Opt<u32> {
    #[inline(always)]
    fn key(&mut self, at: Slot, k: u32) {
        self.put(at, Some(k));
    }
}

impl<K: Keys> Text<K> {
    /// The index of `names[i]`: one comparison when seen before (on a 2.9 M-event
    /// export, a search of the literals by address was 60 M instructions).
    #[inline(always)]
    fn key_of(&mut self, names: Names, i: usize) -> u32 {
        if std::ptr::eq(self.names, names) {
            if let Some(&k) = self.known.get(i) {
                if k != UNKNOWN {
                    return k;
                }
            }
        }
        self.learn(names, i)
    }

    /// [`Text::key_of`] the first time: looked up (or added), and kept when `names` are
    /// the column's.
    #[inline(never)]
    fn learn(&mut self, names: Names, i: usize) -> u32 {
        let k = self
            .dict
            .key(names.get(i).copied().unwrap_or_default().as_bytes());
        if self.names.is_empty() {
            self.names = names;
        }
        if std::ptr::eq(self.names, names) {
            if let Some(x) = self.known.get_mut(i) {
                *x = k;
            }
        }
        k
    }

    /// `names[i]` (a kind: `names` is the one `static` array of the column's kinds).
    #[inline(always)]
    pub(crate) fn kind(&mut self, at: Slot, names: Names, i: usize) {
        let k = self.key_of(names, i);
        self.keys.key(at, k);
    }

    /// Another string.
    pub(crate) fn str(&mut self, at: Slot, s: &str) {
        let k = self.dict.key(s.as_bytes());
        self.keys.key(at, k);
    }

    /// A task name.
    #[inline(always)]
    pub(crate) fn comm(&mut self, at: Slot, c: Comm) {
        let k = self.dict.key_comm(c);
        self.keys.key(at, k);
    }
}

impl Text<Opt<u32>> {
    /// Null.
    #[inline(always)]
    pub(crate) fn null(&mut self, at: Slot) {
        self.keys.put(at, None);
    }
}

impl<K: Keys> Column for Text<K> {
    const NULLABLE: bool = K::NULLABLE;
    fn empty() -> Self {
        Text {
            keys: K::empty(),
            dict: Dict::default(),
            names: &[],
            known: [UNKNOWN; KNOWN],
        }
    }
    fn fits(ty: Ty) -> bool {
        K::fits(ty)
    }
    fn take(&mut self, rows: usize, spare: Option<Buf>) -> Buf {
        self.keys.take(rows, spare)
    }
    fn strings(&self) -> Option<Vec<ByteArray>> {
        Some(self.dict.values.clone())
    }
}

/// A typed column as [`check`] sees it: its name, whether it fits a type, whether it
/// may be null.
pub(crate) type Layout = (&'static str, fn(Ty) -> bool, bool);

/// Panics unless `cols` are `def`'s columns in order.
pub(crate) fn check(def: &TableDef, cols: &[Layout]) {
    let ok = cols.len() == def.cols.len()
        && cols
            .iter()
            .zip(def.cols)
            .all(|(&(name, fits, nullable), c)| {
                name == c.name && fits(c.ty) && nullable == c.nullable
            });
    assert!(
        ok,
        "table {}: the typed batch's columns {:?} are not the declared {:?}",
        def.name,
        cols.iter().map(|c| (c.0, c.2)).collect::<Vec<_>>(),
        def.cols
            .iter()
            .map(|c| (c.name, c.ty, c.nullable))
            .collect::<Vec<_>>()
    );
}

/// A struct of typed columns, one field a column, named and ordered as the table's
/// declaration (checked when the table is made).
macro_rules! batch {
    ($(#[$m:meta])* $name:ident { $($f:ident: $t:ty),* $(,)? }) => {
        $(#[$m])*
        pub(crate) struct $name {
            $(pub(crate) $f: $t),*
        }

        impl $crate::batch::Batch for $name {
            fn new(def: &$crate::table::TableDef) -> Self {
                use $crate::batch::Column;
                $crate::batch::check(
                    def,
                    &[$((stringify!($f), <$t>::fits as fn(_) -> bool, <$t>::NULLABLE)),*],
                );
                $name {
                    $($f: <$t>::empty()),*
                }
            }
            fn take(
                &mut self,
                _def: &$crate::table::TableDef,
                rows: usize,
                spare: Option<Vec<$crate::column::Buf>>,
            ) -> (
                Vec<$crate::column::Buf>,
                Vec<Option<Vec<parquet::data_type::ByteArray>>>,
            ) {
                use $crate::batch::Column;
                let mut spare = spare.map(Vec::into_iter);
                let mut next = || spare.as_mut().and_then(Iterator::next);
                let bufs = vec![$(self.$f.take(rows, next())),*];
                let strings = vec![$(self.$f.strings()),*];
                (bufs, strings)
            }
        }
    };
}
pub(crate) use batch;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::Vals;
    use crate::table::{opt, req};
    use crate::tables::{sched_slice, wakeup};

    batch! {
        Two {
            a: Req<i64>,
            b: OptStr,
        }
    }

    #[test]
    fn the_typed_batches_are_their_tables_columns() {
        sched_slice::Batch::new(&sched_slice::DEF);
        wakeup::Batch::new(&wakeup::DEF);
    }

    static XY: [&str; 2] = ["x", "y"];

    const TWO: TableDef = TableDef {
        name: "two",
        doc: "",
        cols: &[req("a", Ty::I64, ""), opt("b", Ty::Str, "")],
    };

    #[test]
    fn a_batch_takes_its_rows_values_and_strings_and_reuses_the_spare_buffers() {
        let mut t = Two::new(&TWO);
        let at = Slot::new;
        t.a.put(at(0), 5);
        t.b.kind(at(0), &XY, 0);
        t.a.put(at(1), 6);
        t.b.null(at(1));
        t.a.put(at(2), 7);
        t.b.str(at(2), &String::from("x"));
        let (bufs, strings) = t.take(&TWO, 3, None);
        assert!(matches!(&bufs[0], Buf { vals: Vals::I64(v), defs: None } if v == &[5, 6, 7]));
        assert!(
            matches!(&bufs[1], Buf { vals: Vals::Str(k), defs: Some(d) } if k == &[0, 0] && d == &[1, 0, 1])
        );
        assert_eq!(strings[0], None);
        assert_eq!(strings[1].as_deref(), Some(&[ByteArray::from("x")][..]));
        // The next batch, in the memory of the one before: only its own rows are taken,
        // the strings keep their indices.
        let spare = bufs;
        let keys = match &spare[1].vals {
            Vals::Str(k) => k.as_ptr(),
            _ => std::ptr::null(),
        };
        let (empty, _) = t.take(&TWO, 0, Some(spare));
        assert!(matches!(&empty[0].vals, Vals::I64(v) if v.is_empty()));
        assert!(
            matches!(&empty[1], Buf { vals: Vals::Str(k), defs: Some(d) } if k.is_empty() && d.is_empty())
        );
        t.a.put(at(0), 8);
        t.b.kind(at(0), &XY, 1);
        t.a.put(at(1), 9);
        t.b.kind(at(1), &["x", "y"], 0);
        let (bufs, strings) = t.take(&TWO, 2, None);
        assert!(matches!(&bufs[0].vals, Vals::I64(v) if v == &[8, 9]));
        assert!(
            matches!(&bufs[1], Buf { vals: Vals::Str(k), defs: Some(d) } if k == &[1, 0] && d == &[1, 1] && k.as_ptr() == keys)
        );
        assert_eq!(strings[1].as_ref().map(Vec::len), Some(2));
    }

    #[test]
    #[should_panic(expected = "a typed batch of more than")]
    fn a_row_past_the_batch_is_refused() {
        Slot::new(BATCH_ROWS);
    }

    #[test]
    #[should_panic(expected = "are not the declared")]
    fn a_batch_of_other_columns_than_declared_is_refused() {
        const SWAPPED: TableDef = TableDef {
            name: "swapped",
            doc: "",
            cols: &[opt("b", Ty::Str, ""), req("a", Ty::I64, "")],
        };
        Two::new(&SWAPPED);
    }

    #[test]
    #[should_panic(expected = "are not the declared")]
    fn a_batch_of_other_nullability_than_declared_is_refused() {
        const REQUIRED: TableDef = TableDef {
            name: "required",
            doc: "",
            cols: &[req("a", Ty::I64, ""), req("b", Ty::Str, "")],
        };
        Two::new(&REQUIRED);
    }
}
