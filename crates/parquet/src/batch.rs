//! The rows of a table's next batch, as they are pushed: column by column through a
//! [`Row`](crate::column::Row) into untyped [`Columns`], or, for the tables a trace fills by
//! the million (`sched_slice`, `wakeup`), straight into a struct of typed columns
//! declared with [`batch!`].
//!
//! A [`Row`](crate::column::Row) checks each value's column, type and nullability as it
//! comes: on a 2.9 M-event export, its pushes were 930 M of 5,797 M instructions, about
//! 32 a value. A typed batch is checked once, against the table's declaration, when the
//! table is made; a value then costs its `Vec::push`.

use jitterlab_trace::Comm;
use parquet::data_type::ByteArray;

use crate::column::{Buf, Dict, Val, Vals};
use crate::table::{TableDef, Ty};

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
        spare: Option<Vec<Buf>>,
    ) -> (Vec<Buf>, Vec<Option<Vec<ByteArray>>>) {
        let fresh = spare.unwrap_or_else(|| def.cols.iter().map(Buf::new).collect());
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

/// A column of a typed batch.
pub(crate) trait Column: Default {
    /// Whether it may be null.
    const NULLABLE: bool;
    /// Whether it holds the values of a column of `ty`.
    fn fits(ty: Ty) -> bool;
    /// Its values, as a buffer; it is left empty, with `spare`'s capacity.
    fn take(&mut self, spare: Option<Buf>) -> Buf;
    /// The strings its indices name, for a string column.
    fn strings(&self) -> Option<Vec<ByteArray>> {
        None
    }
}

/// The values of `spare` if of type `T`, else an empty vector.
fn reuse<T: Val>(spare: Option<Buf>) -> (Vec<T>, Option<Vec<i16>>) {
    match spare {
        Some(b) => (T::unwrap(b.vals).unwrap_or_default(), b.defs),
        None => (Vec::new(), None),
    }
}

/// A column that is never null.
pub(crate) struct Req<T>(Vec<T>);

impl<T> Default for Req<T> {
    fn default() -> Self {
        Req(Vec::new())
    }
}

impl<T: Val> Req<T> {
    #[inline(always)]
    pub(crate) fn push(&mut self, v: T) {
        self.0.push(v);
    }
}

impl<T: Val> Column for Req<T> {
    const NULLABLE: bool = false;
    fn fits(ty: Ty) -> bool {
        T::fits(ty)
    }
    fn take(&mut self, spare: Option<Buf>) -> Buf {
        let v = std::mem::replace(&mut self.0, reuse(spare).0);
        Buf {
            vals: T::wrap(v),
            defs: None,
        }
    }
}

/// A column that may be null: its present values, and a definition level a row.
pub(crate) struct Opt<T> {
    vals: Vec<T>,
    defs: Vec<i16>,
}

impl<T> Default for Opt<T> {
    fn default() -> Self {
        Opt {
            vals: Vec::new(),
            defs: Vec::new(),
        }
    }
}

impl<T: Val> Opt<T> {
    #[inline(always)]
    pub(crate) fn push(&mut self, v: Option<T>) {
        self.defs.push(i16::from(v.is_some()));
        if let Some(v) = v {
            self.vals.push(v);
        }
    }
}

impl<T: Val> Column for Opt<T> {
    const NULLABLE: bool = true;
    fn fits(ty: Ty) -> bool {
        T::fits(ty)
    }
    fn take(&mut self, spare: Option<Buf>) -> Buf {
        let (v, d) = reuse(spare);
        Buf {
            vals: T::wrap(std::mem::replace(&mut self.vals, v)),
            defs: Some(std::mem::replace(&mut self.defs, d.unwrap_or_default())),
        }
    }
}

/// A string column: each row's index into the column's [`Dict`], and whether present
/// (`defs`, a nullable column's).
#[derive(Default)]
pub(crate) struct Text<const NULLABLE: bool> {
    keys: Vec<u32>,
    defs: Vec<i16>,
    dict: Dict,
}

/// A string column that is never null.
pub(crate) type Str = Text<false>;
/// A string column that may be null.
pub(crate) type OptStr = Text<true>;

impl Text<false> {
    /// A task name.
    #[inline(always)]
    pub(crate) fn comm(&mut self, c: Comm) {
        let k = self.dict.key_comm(c);
        self.keys.push(k);
    }
    /// One of a few literal strings (a kind), found by address.
    #[inline(always)]
    pub(crate) fn lit(&mut self, s: &'static str) {
        let k = self.dict.key_static(s);
        self.keys.push(k);
    }
}

impl Text<true> {
    /// One of a few literal strings or another string, or null.
    #[inline(always)]
    pub(crate) fn put(&mut self, v: Option<std::borrow::Cow<'static, str>>) {
        use std::borrow::Cow;
        let k = match v {
            Some(Cow::Borrowed(s)) => self.dict.key_static(s),
            Some(Cow::Owned(s)) => self.dict.key(s.as_bytes()),
            None => {
                self.defs.push(0);
                return;
            }
        };
        self.defs.push(1);
        self.keys.push(k);
    }
}

impl<const NULLABLE: bool> Column for Text<NULLABLE> {
    const NULLABLE: bool = NULLABLE;
    fn fits(ty: Ty) -> bool {
        matches!(ty, Ty::Str | Ty::Kind)
    }
    fn take(&mut self, spare: Option<Buf>) -> Buf {
        let (keys, defs) = match spare {
            Some(Buf {
                vals: Vals::Str(k),
                defs,
            }) => (k, defs),
            _ => (Vec::new(), None),
        };
        let keys = std::mem::replace(&mut self.keys, keys);
        let defs = std::mem::replace(&mut self.defs, defs.unwrap_or_default());
        Buf {
            vals: Vals::Str(keys),
            defs: NULLABLE.then_some(defs),
        }
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
        #[derive(Default)]
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
                Self::default()
            }
            fn take(
                &mut self,
                _def: &$crate::table::TableDef,
                spare: Option<Vec<$crate::column::Buf>>,
            ) -> (
                Vec<$crate::column::Buf>,
                Vec<Option<Vec<parquet::data_type::ByteArray>>>,
            ) {
                use $crate::batch::Column;
                let mut spare = spare.map(Vec::into_iter);
                let mut next = || spare.as_mut().and_then(Iterator::next);
                let bufs = vec![$(self.$f.take(next())),*];
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

    const TWO: TableDef = TableDef {
        name: "two",
        doc: "",
        cols: &[req("a", Ty::I64, ""), opt("b", Ty::Str, "")],
    };

    #[test]
    fn a_batch_takes_its_values_and_strings_and_reuses_the_spare_buffers() {
        let mut t = Two::new(&TWO);
        t.a.push(5);
        t.b.put(Some("x".into()));
        t.b.put(None);
        t.a.push(6);
        t.b.put(Some(String::from("x").into()));
        let (bufs, strings) = t.take(&TWO, None);
        assert!(matches!(&bufs[0], Buf { vals: Vals::I64(v), defs: None } if v == &[5, 6]));
        assert!(
            matches!(&bufs[1], Buf { vals: Vals::Str(k), defs: Some(d) } if k == &[0, 0] && d == &[1, 0, 1])
        );
        assert_eq!(strings[0], None);
        assert_eq!(strings[1].as_deref(), Some(&[ByteArray::from("x")][..]));
        // The spare buffers' capacity comes back; the strings keep their indices.
        let cap = match &bufs[0].vals {
            Vals::I64(v) => v.capacity(),
            _ => 0,
        };
        let mut spare = bufs;
        for b in &mut spare {
            b.clear();
        }
        let (again, _) = t.take(&TWO, Some(spare));
        assert!(matches!(&again[0].vals, Vals::I64(v) if v.is_empty()));
        assert!(matches!(&t.a.0, v if v.capacity() == cap));
        t.b.put(Some("y".into()));
        t.b.put(Some("x".into()));
        let (bufs, strings) = t.take(&TWO, None);
        assert!(matches!(&bufs[1].vals, Vals::Str(k) if k == &[1, 0]));
        assert_eq!(strings[1].as_ref().map(Vec::len), Some(2));
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
