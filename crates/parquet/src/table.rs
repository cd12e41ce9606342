//! One Parquet table being written: its columns, the rows buffered for the next row
//! group, and the file they go to.
//!
//! A table is declared once, as a list of [`Col`]s (name, type, nullable, meaning); the
//! provenance columns ([`PROVENANCE`]) come first in every table and are filled from the
//! [`Origin`] of the export. Rows are pushed column by column in declared order through a
//! [`Row`]; every [`ROW_GROUP_ROWS`] rows the buffered columns are written as one row group
//! and the buffers emptied, so memory stays bounded whatever the trace's length.

use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::{Compression, ZstdLevel};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use crate::{Error, Origin, SCHEMA_VERSION};

/// Rows per row group.
pub const ROW_GROUP_ROWS: usize = 64 * 1024;

/// A column's physical and logical type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// A 64-bit integer (times and durations in ns, counts).
    I64,
    /// A 32-bit integer (CPUs, tids, priorities, IRQ numbers).
    I32,
    /// A boolean.
    Bool,
    /// A UTF-8 string.
    Str,
    /// A 64-bit float.
    F64,
    /// A wall-clock time: INT64 nanoseconds since 1970-01-01 UTC (`TIMESTAMP(NANOS, true)`).
    Wall,
}

impl Ty {
    fn parquet(self) -> &'static str {
        match self {
            Ty::I64 => "INT64",
            Ty::I32 => "INT32",
            Ty::Bool => "BOOLEAN",
            Ty::Str => "BYTE_ARRAY",
            Ty::F64 => "DOUBLE",
            Ty::Wall => "INT64",
        }
    }
    fn logical(self) -> &'static str {
        match self {
            Ty::Str => " (STRING)",
            Ty::Wall => " (TIMESTAMP(NANOS,true))",
            _ => "",
        }
    }
    /// The name in the documentation.
    pub fn doc_name(self) -> &'static str {
        match self {
            Ty::I64 => "int64",
            Ty::I32 => "int32",
            Ty::Bool => "boolean",
            Ty::Str => "string",
            Ty::F64 => "double",
            Ty::Wall => "timestamp[ns, UTC]",
        }
    }
}

/// A column of a table.
#[derive(Clone, Copy, Debug)]
pub struct Col {
    /// Its name.
    pub name: &'static str,
    /// Its type.
    pub ty: Ty,
    /// Whether it may be null.
    pub nullable: bool,
    /// What it holds, for the documentation.
    pub doc: &'static str,
}

/// A column that is never null.
pub(crate) const fn req(name: &'static str, ty: Ty, doc: &'static str) -> Col {
    Col {
        name,
        ty,
        nullable: false,
        doc,
    }
}

/// A column that may be null.
pub(crate) const fn opt(name: &'static str, ty: Ty, doc: &'static str) -> Col {
    Col {
        name,
        ty,
        nullable: true,
        doc,
    }
}

/// The columns every table starts with: where its rows came from.
pub const PROVENANCE: [Col; 4] = [
    req("host", Ty::Str, "the machine the data was recorded on"),
    req(
        "trace_id",
        Ty::Str,
        "the recording (trace) or result file: its name unless `--run` gave one; with `host`, unique in a dataset",
    ),
    opt("kernel", Ty::Str, "the kernel release (`uname -r`) of the machine, when known"),
    opt(
        "start_wall",
        Ty::Wall,
        "the recording's start as wall-clock time (UTC), when the file records a clock pair (an audit: when it started)",
    ),
];

/// A table's name, meaning and columns (the provenance columns excluded).
#[derive(Clone, Copy, Debug)]
pub struct TableDef {
    /// The table's name (its directory).
    pub name: &'static str,
    /// One row is ...
    pub doc: &'static str,
    /// Its columns after the provenance columns.
    pub cols: &'static [Col],
}

enum Vals {
    I64(Vec<i64>),
    I32(Vec<i32>),
    Bool(Vec<bool>),
    Str(Vec<ByteArray>),
    F64(Vec<f64>),
}

struct Buf {
    vals: Vals,
    /// Definition levels (1 = present) of a nullable column.
    defs: Option<Vec<i16>>,
}

impl Buf {
    fn new(c: &Col) -> Buf {
        Buf {
            vals: match c.ty {
                Ty::I64 | Ty::Wall => Vals::I64(Vec::new()),
                Ty::I32 => Vals::I32(Vec::new()),
                Ty::Bool => Vals::Bool(Vec::new()),
                Ty::Str => Vals::Str(Vec::new()),
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
}

/// A value for a column.
pub(crate) enum V {
    I64(i64),
    I32(i32),
    Bool(bool),
    Str(ByteArray),
    F64(f64),
    Null,
}

/// A table being written to `DIR/NAME/host=HOST/run=RUN/part.parquet`.
pub(crate) struct Table {
    def: &'static TableDef,
    bufs: Vec<Buf>,
    rows: usize,
    written: u64,
    origin: [V; 4],
    writer: Option<SerializedFileWriter<BufWriter<File>>>,
    tmp: PathBuf,
    path: PathBuf,
}

/// `s` made safe as a hive partition value: characters other than letters, digits, `.`,
/// `_` and `-` become `_`.
pub(crate) fn partition_value(s: &str) -> String {
    let v: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if v.is_empty() || v.chars().all(|c| c == '.') {
        "_".to_string()
    } else {
        v
    }
}

/// A signed 64-bit value of a u64 (times in ns fit; beyond, the largest).
pub(crate) fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A string value.
pub(crate) fn text(s: &str) -> ByteArray {
    ByteArray::from(s.as_bytes().to_vec())
}

impl Table {
    /// Creates the table's file (under a temporary name until [`Table::finish`]).
    pub(crate) fn create(
        dir: &Path,
        def: &'static TableDef,
        origin: &Origin,
    ) -> Result<Table, Error> {
        let part = dir
            .join(def.name)
            .join(format!("host={}", partition_value(&origin.host)))
            .join(format!("run={}", partition_value(&origin.trace_id)));
        fs::create_dir_all(&part).map_err(|e| Error::io(&part, "cannot create", e))?;
        let path = part.join("part.parquet");
        let tmp = part.join(".part.parquet.tmp");
        let mut schema = format!("message {} {{\n", def.name);
        for c in PROVENANCE.iter().chain(def.cols) {
            schema.push_str(&format!(
                "  {} {} {}{};\n",
                if c.nullable { "OPTIONAL" } else { "REQUIRED" },
                c.ty.parquet(),
                c.name,
                c.ty.logical()
            ));
        }
        schema.push('}');
        let schema = Arc::new(
            parse_message_type(&schema).map_err(|e| Error::parquet(&path, "the schema", e))?,
        );
        let level = ZstdLevel::try_new(1).map_err(|e| Error::parquet(&path, "zstd level", e))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(level))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_created_by(format!("jitterlab {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(vec![
                KeyValue::new("jitterlab.table".into(), def.name.to_string()),
                KeyValue::new("jitterlab.schema".into(), SCHEMA_VERSION.to_string()),
            ]))
            .build();
        let file = File::create(&tmp).map_err(|e| Error::io(&tmp, "cannot create", e))?;
        let writer = SerializedFileWriter::new(BufWriter::new(file), schema, Arc::new(props))
            .map_err(|e| Error::parquet(&path, "the header", e))?;
        Ok(Table {
            def,
            bufs: PROVENANCE.iter().chain(def.cols).map(Buf::new).collect(),
            rows: 0,
            written: 0,
            origin: [
                V::Str(text(&origin.host)),
                V::Str(text(&origin.trace_id)),
                origin
                    .kernel
                    .as_deref()
                    .map_or(V::Null, |k| V::Str(text(k))),
                origin.start_wall_ns.map_or(V::Null, V::I64),
            ],
            writer: Some(writer),
            tmp,
            path,
        })
    }

    /// A new row; push its values in column order, then [`Row::end`].
    pub(crate) fn row(&mut self) -> Row<'_> {
        for i in 0..PROVENANCE.len() {
            let v = match &self.origin[i] {
                V::Str(s) => V::Str(s.clone()),
                V::I64(v) => V::I64(*v),
                _ => V::Null,
            };
            push(&mut self.bufs[i], v, self.def.name, i);
        }
        Row {
            table: self,
            col: PROVENANCE.len(),
        }
    }

    fn end_row(&mut self) -> Result<(), Error> {
        self.rows += 1;
        if self.rows >= ROW_GROUP_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the buffered rows as one row group.
    fn flush(&mut self) -> Result<(), Error> {
        if self.rows == 0 {
            return Ok(());
        }
        let path = &self.path;
        let Some(writer) = &mut self.writer else {
            return Ok(());
        };
        let pe = |e| Error::parquet(path, "a row group", e);
        let mut rg = writer.next_row_group().map_err(pe)?;
        for b in &self.bufs {
            let Some(mut col) = rg.next_column().map_err(pe)? else {
                break;
            };
            let defs = b.defs.as_deref();
            match &b.vals {
                Vals::I64(v) => col.typed::<Int64Type>().write_batch(v, defs, None),
                Vals::I32(v) => col.typed::<Int32Type>().write_batch(v, defs, None),
                Vals::Bool(v) => col.typed::<BoolType>().write_batch(v, defs, None),
                Vals::Str(v) => col.typed::<ByteArrayType>().write_batch(v, defs, None),
                Vals::F64(v) => col.typed::<DoubleType>().write_batch(v, defs, None),
            }
            .map_err(pe)?;
            col.close().map_err(pe)?;
        }
        rg.close().map_err(pe)?;
        for b in &mut self.bufs {
            b.clear();
        }
        self.written += self.rows as u64;
        self.rows = 0;
        Ok(())
    }

    /// Writes what is buffered and the footer, and gives the file its name. Returns the
    /// path and the rows written.
    pub(crate) fn finish(mut self) -> Result<(PathBuf, u64), Error> {
        self.flush()?;
        if let Some(w) = self.writer.take() {
            w.close()
                .map_err(|e| Error::parquet(&self.path, "the footer", e))?;
        }
        fs::rename(&self.tmp, &self.path)
            .map_err(|e| Error::io(&self.path, "cannot rename the finished file to", e))?;
        Ok((self.path.clone(), self.written))
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // Not finished (an error): leave no half-written file behind.
        if self.writer.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

fn push(b: &mut Buf, v: V, table: &str, col: usize) {
    let present = !matches!(v, V::Null);
    match (&mut b.vals, v) {
        (_, V::Null) => assert!(
            b.defs.is_some(),
            "table {table}: column {col} is not nullable"
        ),
        (Vals::I64(x), V::I64(v)) => x.push(v),
        (Vals::I32(x), V::I32(v)) => x.push(v),
        (Vals::Bool(x), V::Bool(v)) => x.push(v),
        (Vals::Str(x), V::Str(v)) => x.push(v),
        (Vals::F64(x), V::F64(v)) => x.push(v),
        _ => panic!("table {table}: column {col} pushed a value of another type"),
    }
    if let Some(d) = &mut b.defs {
        d.push(i16::from(present));
    }
}

/// One row being pushed, column by column in declared order.
pub(crate) struct Row<'a> {
    table: &'a mut Table,
    col: usize,
}

impl Row<'_> {
    fn put(mut self, v: V) -> Self {
        let name = self.table.def.name;
        push(&mut self.table.bufs[self.col], v, name, self.col);
        self.col += 1;
        self
    }
    /// An int64 (or wall-clock) value.
    pub(crate) fn i64(self, v: i64) -> Self {
        self.put(V::I64(v))
    }
    /// A time or count in u64.
    pub(crate) fn u64(self, v: u64) -> Self {
        self.put(V::I64(i64_of(v)))
    }
    /// A nullable time or count.
    pub(crate) fn opt_u64(self, v: Option<u64>) -> Self {
        self.put(v.map_or(V::Null, |v| V::I64(i64_of(v))))
    }
    /// A nullable int64.
    pub(crate) fn opt_i64(self, v: Option<i64>) -> Self {
        self.put(v.map_or(V::Null, V::I64))
    }
    /// An int32.
    pub(crate) fn i32(self, v: i32) -> Self {
        self.put(V::I32(v))
    }
    /// A u32 as int32 (CPUs, IRQs, vectors: beyond i32, the largest).
    pub(crate) fn u32(self, v: u32) -> Self {
        self.put(V::I32(i32::try_from(v).unwrap_or(i32::MAX)))
    }
    /// A nullable int32.
    pub(crate) fn opt_i32(self, v: Option<i32>) -> Self {
        self.put(v.map_or(V::Null, V::I32))
    }
    /// A nullable u32 as int32.
    pub(crate) fn opt_u32(self, v: Option<u32>) -> Self {
        self.put(v.map_or(V::Null, |v| V::I32(i32::try_from(v).unwrap_or(i32::MAX))))
    }
    /// A boolean.
    pub(crate) fn bool(self, v: bool) -> Self {
        self.put(V::Bool(v))
    }
    /// A string.
    pub(crate) fn str(self, v: &str) -> Self {
        self.put(V::Str(text(v)))
    }
    /// A nullable string.
    pub(crate) fn opt_str(self, v: Option<&str>) -> Self {
        self.put(v.map_or(V::Null, |v| V::Str(text(v))))
    }
    /// A nullable boolean.
    pub(crate) fn put_opt_bool(self, v: Option<bool>) -> Self {
        self.put(v.map_or(V::Null, V::Bool))
    }
    /// A double.
    pub(crate) fn f64(self, v: f64) -> Self {
        self.put(V::F64(v))
    }
    /// A nullable double.
    pub(crate) fn opt_f64(self, v: Option<f64>) -> Self {
        self.put(v.map_or(V::Null, V::F64))
    }
    /// Ends the row (every column must have been pushed); writes a row group when full.
    pub(crate) fn end(self) -> Result<(), Error> {
        debug_assert_eq!(
            self.col,
            self.table.bufs.len(),
            "table {}: a row of {} columns, expected {}",
            self.table.def.name,
            self.col,
            self.table.bufs.len()
        );
        self.table.end_row()
    }
}
