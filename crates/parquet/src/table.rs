//! One Parquet table being written: its columns, the rows buffered for the next row
//! group, and the file they go to.
//!
//! A table is declared once, as a list of [`Col`]s (name, type, nullable, meaning); the
//! provenance columns ([`PROVENANCE`]) come first in every table and are filled from the
//! [`Origin`] of the export. Rows are pushed into a [`Batch`]: column by column in
//! declared order through a [`Row`], or into a typed batch (`batch.rs`); every
//! [`BATCH_ROWS`] rows the batch is handed to the table's encoding thread, which encodes
//! it into the open row group while the next one fills (in the buffers of the one
//! before); a row group is appended to the file at [`ROW_GROUP_ROWS`] rows or
//! [`ROW_GROUP_BYTES`], so memory stays bounded (two batches raw and one row group
//! compressed, a table) whatever the trace's length.

use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;

use crate::batch::{Batch, Columns, Slot};
use crate::column::{Buf, Const, Encoder, Group, Row, Writer};
pub use crate::column::{ROW_GROUP_BYTES, ROW_GROUP_ROWS};
use crate::{Error, Origin, SCHEMA_VERSION};

/// Rows pushed before they are handed to the encoding thread (a table's last rows, if
/// fewer, are encoded by the thread that finishes it).
///
/// Two batches of a table are held raw (one filling, one being encoded): 8,192 rows of
/// the `wakeup` table are 1.3 MB. On the 14 M-event recording of the `trace` bench
/// (8 interleaved runs each): batches of 16,384 rows peaked at 45.7 MB and took 1.26x
/// the CPU time of `analyze --json`; of 8,192, 40.7 MB and 1.23x (the batch being
/// filled and the one being encoded stay in the caches); of 4,096, 38.4 MB and 1.27x
/// (twice the hand-overs). The files are 1.7 % larger (twice the pages). Earlier, with
/// 32,768 a 9 M-event export peaked at 52 MB.
pub const BATCH_ROWS: usize = 8 * 1024;

/// Bytes of a data page, uncompressed: every column of an open row group holds a page in
/// the making; with the default 1 MiB, the export of a 9 M-event trace peaked at 77 MB
/// against 61 MB.
const PAGE_BYTES: usize = 64 * 1024;

/// Bytes written to a table's file at a time: a row group's chunks are copied into it 8
/// KiB at a time (with the default 8 KiB buffer, 4,000 writes for 32 MB of files).
const FILE_BUFFER: usize = 256 * 1024;

/// A column's physical and logical type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// A 64-bit integer (times and durations in ns, counts).
    I64,
    /// A 32-bit integer (CPUs, tids, priorities, IRQ numbers).
    I32,
    /// A boolean.
    Bool,
    /// A UTF-8 string (dictionary-encoded, as every string column).
    Str,
    /// A UTF-8 string of few distinct values (a kind, a state, a severity): the ones
    /// queries filter and group on. With min/max statistics, so that an engine skips the
    /// row groups a filter excludes.
    Kind,
    /// A 64-bit float.
    F64,
    /// A wall-clock time: INT64 microseconds since 1970-01-01 UTC (`TIMESTAMP(MICROS,
    /// true)`), the one timestamp unit Spark, DuckDB, pyarrow and Polars all read
    /// without settings (Spark refuses NANOS). The nanoseconds go in an `_ns` column
    /// beside it.
    Wall,
}

impl Ty {
    fn parquet(self) -> &'static str {
        match self {
            Ty::I64 => "INT64",
            Ty::I32 => "INT32",
            Ty::Bool => "BOOLEAN",
            Ty::Str | Ty::Kind => "BYTE_ARRAY",
            Ty::F64 => "DOUBLE",
            Ty::Wall => "INT64",
        }
    }
    fn logical(self) -> &'static str {
        match self {
            Ty::Str | Ty::Kind => " (STRING)",
            Ty::Wall => " (TIMESTAMP(MICROS,true))",
            _ => "",
        }
    }
    /// The Arrow type an engine reads it as, as pyarrow writes it (docs/schema/parquet).
    pub fn arrow_name(self) -> &'static str {
        match self {
            Ty::I64 => "int64",
            Ty::I32 => "int32",
            Ty::Bool => "bool",
            Ty::Str | Ty::Kind => "string",
            Ty::F64 => "double",
            Ty::Wall => "timestamp[us, tz=UTC]",
        }
    }
    /// The name in the documentation.
    pub fn doc_name(self) -> &'static str {
        match self {
            Ty::I64 => "int64",
            Ty::I32 => "int32",
            Ty::Bool => "boolean",
            Ty::Str => "string",
            Ty::Kind => "string (dictionary)",
            Ty::F64 => "double",
            Ty::Wall => "timestamp[us, UTC]",
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

/// The columns every table starts with: where its rows came from, besides the host and
/// the run, which are the partition's path (`host=HOST/run_id=RUN`) and the file's
/// key-value metadata (`jitterlab.host`, `jitterlab.run_id`), not columns of the file:
/// a column in both the file and the path is read as two types by pyarrow (a string and
/// a dictionary) and refused.
pub const PROVENANCE: [Col; 3] = [
    opt("kernel", Ty::Str, "the kernel release (`uname -r`) of the machine, when known"),
    opt(
        "start_wall_us",
        Ty::Wall,
        "the recording's start as wall-clock time (UTC, microseconds), when the file records a clock pair (an audit: when it started)",
    ),
    opt(
        "start_wall_ns",
        Ty::I64,
        "`start_wall_us` in nanoseconds since 1970-01-01 UTC, exact",
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

/// A table being written to `DIR/NAME/host=HOST/run_id=RUN/part.parquet`, its rows
/// pushed into a [`Batch`]: [`Columns`] through a [`Row`], or a typed one.
pub(crate) struct Table<B: Batch = Columns> {
    def: &'static TableDef,
    /// The rows being filled, column by column (the provenance columns excluded).
    pub(crate) batch: B,
    rows: usize,
    written: u64,
    origin: Arc<[Const; 3]>,
    /// The file being written, until the first batch goes to the encoder.
    writer: Option<Writer>,
    /// The thread that encodes the batches into the file, from the first batch on; it
    /// gives the writer back when finished.
    encoder: Option<Encoder>,
    tmp: PathBuf,
    path: PathBuf,
}

/// A signed 64-bit value of a u64 (times in ns fit; beyond, the largest).
pub(crate) fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A u32 as int32 (CPUs, IRQs, vectors: beyond i32, the largest).
pub(crate) fn i32_of(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

impl Table {
    /// A new row; push its values in column order, then [`Row::end`].
    pub(crate) fn row(&mut self) -> Row<'_> {
        Row::new(self)
    }
}

impl<B: Batch> Table<B> {
    /// Creates the table's file (under a temporary name until [`Table::finish`]).
    pub(crate) fn create(
        dir: &Path,
        def: &'static TableDef,
        origin: &Origin,
    ) -> Result<Table<B>, Error> {
        // The names as given: checked by `dataset::check_names`, never rewritten.
        let part = crate::dataset::partition_dir(dir, def.name, origin);
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
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(level))
            .set_data_page_size_limit(PAGE_BYTES);
        for c in PROVENANCE.iter().chain(def.cols) {
            let col = ColumnPath::from(c.name);
            props = match c.ty {
                // Every int64 column is delta-packed by `ints.rs`, which takes only the
                // compression and whether to record min/max from here (times and
                // durations are mostly distinct: a dictionary would hash every value;
                // deltas of sorted times pack in a few bits). Packed, times and
                // durations are noise to zstd: not compressed (on a 2.9 M-event export,
                // zstd spent 173 M of 6,513 M instructions on them to make the files
                // 0.1 % smaller). Ids (utid) and counts keep zstd: their deltas repeat,
                // it packs them 3x.
                Ty::I64 if c.name.ends_with("_ns") => {
                    props.set_column_compression(col, Compression::UNCOMPRESSED)
                }
                // Strings are written by `strings.rs` (a dictionary of the table's own
                // indices), which takes only the compression and whether to record
                // min/max from here. Those of names prune nothing (the hive path has
                // host and run).
                Ty::Str => props.set_column_statistics_enabled(col, EnabledStatistics::None),
                // CPUs, tids, priorities: dictionary-encoded by `int32s.rs` (the
                // parquet crate's dictionary hashed every value, 6 % of an export's CPU
                // time; PLAIN left zstd 4 bytes a value to pack). No min/max: a row
                // group's span the whole range and prune nothing, and with the
                // booleans' they cost two comparisons a value (290 M of 12,420 M
                // instructions of a 2.9 M-event export).
                Ty::I32 => props.set_column_statistics_enabled(col, EnabledStatistics::None),
                Ty::Bool => props.set_column_statistics_enabled(col, EnabledStatistics::None),
                // Kinds: min/max per column chunk for the filters of docs/fleet.md and
                // parquet.md.
                Ty::Kind => props.set_column_statistics_enabled(col, EnabledStatistics::Chunk),
                _ => props,
            };
        }
        let props = props
            .set_created_by(format!("jitterlab {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(vec![
                KeyValue::new("jitterlab.table".into(), def.name.to_string()),
                KeyValue::new("jitterlab.schema".into(), SCHEMA_VERSION.to_string()),
                KeyValue::new("jitterlab.host".into(), origin.host.clone()),
                KeyValue::new("jitterlab.run_id".into(), origin.run_id.clone()),
            ]))
            .build();
        let file = File::create(&tmp).map_err(|e| Error::io(&tmp, "cannot create", e))?;
        let writer = Writer::new(
            SerializedFileWriter::new(
                BufWriter::with_capacity(FILE_BUFFER, file),
                schema,
                Arc::new(props),
            )
            .map_err(|e| Error::parquet(&path, "the header", e))?,
            &part,
        );
        let text = |s: &str| Const::text(s);
        Ok(Table {
            def,
            batch: B::new(def),
            rows: 0,
            written: 0,
            origin: Arc::new([
                origin.kernel.as_deref().map_or(Const::Null, text),
                origin
                    .start_wall_ns
                    .map_or(Const::Null, |ns| Const::int(ns.div_euclid(1000))),
                origin.start_wall_ns.map_or(Const::Null, Const::int),
            ]),
            writer: Some(writer),
            encoder: None,
            tmp,
            path,
        })
    }

    /// The slot of the row being pushed into a typed batch.
    #[inline(always)]
    pub(crate) fn slot(&self) -> Slot {
        Slot::new(self.rows)
    }

    /// The table's name.
    pub(crate) fn name(&self) -> &'static str {
        self.def.name
    }

    pub(crate) fn end_row(&mut self) -> Result<(), Error> {
        self.rows += 1;
        if self.rows >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the buffered rows to the thread that encodes them into the open row group
    /// (encoding and compressing while the trace is read on), once it encoded the batch
    /// before, whose buffers the next rows fill.
    fn flush(&mut self) -> Result<(), Error> {
        if self.rows == 0 {
            return Ok(());
        }
        if self.encoder.is_none() {
            let Some(w) = self.writer.take() else {
                return Ok(());
            };
            self.encoder = Some(Encoder::spawn(w));
        }
        let Some(encoder) = &mut self.encoder else {
            return Ok(());
        };
        let spare = encoder
            .settle()
            .map_err(|e| Error::parquet(&self.path, "a batch of rows", e))?;
        let group = self.take_group(spare);
        if let Some(encoder) = &mut self.encoder {
            encoder
                .send(group)
                .map_err(|e| Error::parquet(&self.path, "a batch of rows", e))?;
        }
        Ok(())
    }

    /// The buffered rows as a batch to encode, in `spare`'s buffers if given; they
    /// count as written.
    fn take_group(&mut self, spare: Option<Vec<Buf>>) -> Group {
        let (bufs, dicts) = self.batch.take(self.def, self.rows, spare);
        let group = Group {
            rows: self.rows,
            origin: Arc::clone(&self.origin),
            dicts,
            bufs,
        };
        self.written += self.rows as u64;
        self.rows = 0;
        group
    }

    /// Waits for the encoder, if started, to encode what it was handed: the writer comes
    /// back.
    fn writer_back(&mut self) -> Result<(), Error> {
        if let Some(e) = self.encoder.take() {
            self.writer = e
                .finish()
                .map_err(|e| Error::parquet(&self.path, "a batch of rows", e))?;
        }
        Ok(())
    }

    /// Hands over what is buffered and has the encoder's thread, if started, close the
    /// file behind it (its last row group and footer), while the caller goes on with
    /// the other tables; [`Table::finish`] then waits for it. On the 1.2 M-event
    /// export the tables were closed one after another by the calling thread: 6 of the
    /// 12 ms after the pass.
    pub(crate) fn close_behind(&mut self) -> Result<(), Error> {
        self.flush()?;
        if let Some(e) = &mut self.encoder {
            e.close()
                .map_err(|e| Error::parquet(&self.path, "a batch of rows", e))?;
        }
        Ok(())
    }

    /// Writes what is buffered and the footer, and gives the file its name. Returns the
    /// path and the rows written.
    pub(crate) fn finish(mut self) -> Result<Option<(PathBuf, u64)>, Error> {
        if self.encoder.is_none() && self.writer.is_some() && self.rows > 0 {
            // Fewer rows than a batch: encoded here, not by a thread started for them.
            let group = self.take_group(None);
            if let Some(w) = &mut self.writer {
                w.write(&group)
                    .map_err(|e| Error::parquet(&self.path, "a batch of rows", e))?;
            }
        } else {
            self.flush()?;
        }
        self.writer_back()?;
        if self.written == 0 {
            // No row: no file (an engine reads a table's files; an empty one is 230 B
            // of footer to open for nothing). The partition's directories go too when
            // nothing else is in them.
            let part = self.tmp.parent().map(Path::to_path_buf);
            drop(self);
            let mut dir = part;
            for _ in 0..3 {
                match dir {
                    Some(d) if fs::remove_dir(&d).is_ok() => {
                        dir = d.parent().map(Path::to_path_buf)
                    }
                    _ => break,
                }
            }
            return Ok(None);
        }
        if let Some(w) = self.writer.take() {
            w.close()
                .map_err(|e| Error::parquet(&self.path, "the footer", e))?;
        }
        // Never over an input of the command (the rule of every writer).
        jitterlab_trace::output::check_output(&self.path).map_err(|e| {
            Error::io(
                &self.path,
                "refusing to write",
                std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
            )
        })?;
        fs::rename(&self.tmp, &self.path)
            .map_err(|e| Error::io(&self.path, "cannot rename the finished file to", e))?;
        Ok(Some((self.path.clone(), self.written)))
    }
}

impl<B: Batch> Drop for Table<B> {
    fn drop(&mut self) {
        // Not finished (an error): leave no half-written file behind.
        let encoder = self.encoder.take().map(Encoder::finish);
        if self.writer.take().is_some() || encoder.is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}
