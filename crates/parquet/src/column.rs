//! The columns of a table's next batch of rows, as rows are pushed ([`Row`]), and how a
//! batch is encoded into the open row group on the table's thread ([`Encoder`]), the
//! row group appended to the file when full ([`Writer`]).
//!
//! Strings are kept as indices into the table's [`Dict`] (a row costs a hash lookup and
//! no allocation), written as such by `strings.rs`; the provenance columns, the same in
//! every row of a file, are one [`Const`] each, written once a row group.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use bytes::Bytes;
use jitterlab_analyze::hash::FxMap;
use jitterlab_trace::Comm;
use parquet::basic::Type as Physical;
use parquet::column::page::{CompressedPage, PageWriteSpec, PageWriter};
use parquet::column::writer::{get_column_writer, ColumnWriter};
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::properties::EnabledStatistics;
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};

use crate::int32s::Int32s;
use crate::ints::Ints;
use crate::pages::{Out, Spliced, Tail};
use crate::strings::{Repeated, Strings};
use crate::table::{i32_of, i64_of, Col, Table, Ty, PROVENANCE};
use crate::Error;

/// The distinct strings of a string column: each once, with its index (the strings of a
/// trace are few: names, kinds, states).
#[derive(Default)]
pub(crate) struct Dict {
    index: FxMap<Box<[u8]>, u32>,
    /// Task names by value: found by hashing 16 bytes, not by a check of the UTF-8.
    comms: FxMap<Comm, u32>,
    /// The last two task names and their indices, the latest first: consecutive rows
    /// are mostly of the same task or of two taking turns (99.5 % of `sched_slice`'s on
    /// a `stress-ng --switch` trace), found without hashing (194 M instructions fewer
    /// of 8,690 M for 2 M names).
    last_comms: [Option<(Comm, u32)>; 2],
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
    #[inline]
    pub(crate) fn key_comm(&mut self, c: Comm) -> u32 {
        match self.last_comms {
            [Some((last, k)), _] if last == c => k,
            [first, Some((last, k))] if last == c => {
                self.last_comms = [Some((c, k)), first];
                k
            }
            _ => self.key_comm_hashed(c),
        }
    }

    /// [`Dict::key_comm`] of a name not among the last two.
    fn key_comm_hashed(&mut self, c: Comm) -> u32 {
        let k = match self.comms.get(&c) {
            Some(&k) => k,
            None => {
                let k = self.key(c.as_str().as_bytes());
                self.comms.insert(c, k);
                k
            }
        };
        self.last_comms = [Some((c, k)), self.last_comms[0]];
        k
    }

    /// The index of `s`, added if new.
    pub(crate) fn key(&mut self, s: &[u8]) -> u32 {
        if let Some(&k) = self.index.get(s) {
            return k;
        }
        let k = u32::try_from(self.values.len()).unwrap_or(u32::MAX);
        self.values.push(ByteArray::from(s.to_vec()));
        self.index.insert(s.into(), k);
        k
    }
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
pub(crate) trait Val: Sized {
    fn vec(v: &mut Vals) -> Option<&mut Vec<Self>>;
    /// The buffer's values, if of this type.
    fn unwrap(v: Vals) -> Option<Vec<Self>>;
    fn wrap(v: Vec<Self>) -> Vals;
    /// Whether a column of `ty` holds values of this type.
    fn fits(ty: Ty) -> bool;
}

macro_rules! val {
    ($t:ty, $variant:ident, $($ty:ident)|+) => {
        impl Val for $t {
            #[inline]
            fn vec(v: &mut Vals) -> Option<&mut Vec<$t>> {
                match v {
                    Vals::$variant(x) => Some(x),
                    _ => None,
                }
            }
            fn unwrap(v: Vals) -> Option<Vec<$t>> {
                match v {
                    Vals::$variant(x) => Some(x),
                    _ => None,
                }
            }
            fn wrap(v: Vec<$t>) -> Vals {
                Vals::$variant(v)
            }
            fn fits(ty: Ty) -> bool {
                matches!(ty, $(Ty::$ty)|+)
            }
        }
    };
}
val!(i64, I64, I64 | Wall);
val!(i32, I32, I32);
val!(bool, Bool, Bool);
val!(f64, F64, F64);
// A string column's indices into its dictionary.
val!(u32, Str, Str | Kind);

/// One column's values of the rows pushed since the last row group.
pub(crate) struct Buf {
    pub(crate) vals: Vals,
    /// Definition levels (1 = present) of a nullable column.
    pub(crate) defs: Option<Vec<i16>>,
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
    pub(crate) fn clear(&mut self) {
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

/// A value of a provenance column, the same in every row of a file.
#[derive(Clone)]
pub(crate) enum Const {
    Str(ByteArray),
    I64(i64),
    Null,
}

impl Const {
    pub(crate) fn text(s: &str) -> Const {
        Const::Str(ByteArray::from(s.as_bytes().to_vec()))
    }
    pub(crate) fn int(v: i64) -> Const {
        Const::I64(v)
    }
}

/// A batch of rows to encode: the rows' columns and what their strings are.
pub(crate) struct Group {
    pub(crate) rows: usize,
    pub(crate) origin: std::sync::Arc<[Const; 3]>,
    /// Per column, the strings its indices name (string columns only).
    pub(crate) dicts: Vec<Option<Vec<ByteArray>>>,
    pub(crate) bufs: Vec<Buf>,
}

/// Rows of a row group at most (about a million, as engines size their scans).
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// Uncompressed bytes of a row group at most (as the columns' values: 8 bytes an int64,
/// a string's length and 4), whichever of the two limits comes first.
pub const ROW_GROUP_BYTES: usize = 128 << 20;

/// Bytes of a column chunk's pages kept in memory; beyond, they wait in a file.
pub const SPILL_BYTES: usize = 64 * 1024;

/// The file a table's row groups go to, and the row group being encoded.
///
/// A Parquet row group stores each column's chunk whole, one after the other, so rows
/// pushed a batch at a time cannot stream into the file: each column's pages are
/// encoded and compressed as its batches come ([`ChunkPages`]) and wait, in memory up to
/// [`SPILL_BYTES`] and beyond in an unnamed file beside the table's ([`Spill`]), until
/// the row group is full and they are appended to the file column after column. (Held
/// in memory, the compressed pages of a row group of a million rows, 5-10 MB a table,
/// took an export's peak memory from 49 to 92 MB.)
pub(crate) struct Writer<W: Write + Send = BufWriter<File>> {
    file: SerializedFileWriter<W>,
    /// Where pages spill: the table's directory.
    dir: PathBuf,
    open: Option<Open>,
    /// A row group's rows and bytes at most ([`ROW_GROUP_ROWS`], [`ROW_GROUP_BYTES`]).
    limits: (usize, usize),
}

/// A row group being encoded.
struct Open {
    /// Each column's writer.
    cols: Vec<Chunk>,
    rows: usize,
    bytes: usize,
}

/// A column chunk's pages as they are written.
type Pages = Arc<Mutex<TrackedWrite<Spill>>>;

/// A column chunk being written: by the `parquet` crate's column writer (booleans,
/// doubles) into its pages, or by [`Strings`] (strings), [`Ints`] (int64s) or
/// [`Int32s`]; boxed, each a few hundred bytes or more.
enum Chunk {
    Values(Box<ColumnWriter<'static>>, Pages),
    Strings(Box<Strings>),
    Ints(Box<Ints>),
    Int32s(Box<Int32s>),
    Repeated(Box<Repeated>),
}

/// Where a column chunk's pages wait: in memory, then in a file of their own, written
/// [`SPILL_BYTES`] at a time (the pages come a few KiB at a time: written as they came,
/// an 8 M-event export made 6,500 writes).
pub(crate) enum Spill {
    Mem(Vec<u8>, PathBuf),
    /// The file, and what waits to be written to it.
    File(File, Vec<u8>),
}

impl Spill {
    /// The pages written, as a chunk's tail.
    pub(crate) fn into_tail(self) -> std::io::Result<Tail> {
        match self {
            Spill::Mem(v, _) => Ok(Tail::Mem(Bytes::from(v))),
            Spill::File(mut f, staged) => {
                f.write_all(&staged)?;
                Ok(Tail::File(f))
            }
        }
    }
}

impl Write for Spill {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Spill::Mem(v, dir) = self {
            if v.len() + buf.len() <= SPILL_BYTES {
                v.extend_from_slice(buf);
                return Ok(buf.len());
            }
            // Unnamed (O_TMPFILE where the file system has it): nothing is left behind
            // if the export dies.
            let mut f = tempfile::tempfile_in(&*dir)?;
            f.write_all(v)?;
            v.clear();
            *self = Spill::File(f, std::mem::take(v));
        }
        match self {
            Spill::File(f, staged) => {
                if staged.len() + buf.len() > SPILL_BYTES {
                    f.write_all(staged)?;
                    staged.clear();
                }
                if buf.len() >= SPILL_BYTES {
                    f.write_all(buf)?;
                } else {
                    staged.extend_from_slice(buf);
                }
                Ok(buf.len())
            }
            Spill::Mem(..) => Ok(0),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Spill::File(f, staged) => {
                f.write_all(staged)?;
                staged.clear();
                f.flush()
            }
            Spill::Mem(..) => Ok(()),
        }
    }
}

/// The page writer of a column chunk kept apart: each page serialized as the file
/// writer would (header and data), at offsets from the chunk's start, which
/// `append_column` moves to the chunk's place in the file.
struct ChunkPages(Pages);

impl PageWriter for ChunkPages {
    fn write_page(&mut self, page: CompressedPage) -> Result<PageWriteSpec, ParquetError> {
        let mut sink = self.0.lock().unwrap_or_else(|e| e.into_inner());
        SerializedPageWriter::new(&mut sink).write_page(page)
    }
    fn close(&mut self) -> Result<(), ParquetError> {
        let mut sink = self.0.lock().unwrap_or_else(|e| e.into_inner());
        sink.flush()?;
        Ok(())
    }
}

impl<W: Write + Send> Writer<W> {
    /// A writer whose pages spill under `dir`.
    pub(crate) fn new(file: SerializedFileWriter<W>, dir: &Path) -> Writer<W> {
        Writer::with_limits(file, dir, ROW_GROUP_ROWS, ROW_GROUP_BYTES)
    }

    fn with_limits(
        file: SerializedFileWriter<W>,
        dir: &Path,
        rows: usize,
        bytes: usize,
    ) -> Writer<W> {
        Writer {
            file,
            dir: dir.to_path_buf(),
            open: None,
            limits: (rows, bytes),
        }
    }

    /// Encodes a batch into the open row group (opening one if none is), and appends the
    /// row group to the file when it is full.
    pub(crate) fn write(&mut self, g: &Group) -> Result<(), ParquetError> {
        let open = match &mut self.open {
            Some(o) => o,
            None => {
                let props = self.file.properties();
                let cols = self
                    .file
                    .schema_descr()
                    .columns()
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let spill = Spill::Mem(Vec::new(), self.dir.clone());
                        let stats = props.statistics_enabled(d.path());
                        if let Some(c) = g.origin.get(i) {
                            return Chunk::Repeated(Box::new(Repeated::new(
                                Arc::clone(d),
                                props.compression(d.path()),
                                stats != EnabledStatistics::None,
                                c.clone(),
                            )));
                        }
                        let out = |spill| {
                            let compression = props.compression(d.path());
                            let stats = stats != EnabledStatistics::None;
                            Out::new(Arc::clone(d), compression, stats, spill)
                        };
                        match d.physical_type() {
                            Physical::BYTE_ARRAY => {
                                return Chunk::Strings(Box::new(Strings::new(out(spill))))
                            }
                            Physical::INT64 => return Chunk::Ints(Box::new(Ints::new(out(spill)))),
                            Physical::INT32 => {
                                return Chunk::Int32s(Box::new(Int32s::new(out(spill))))
                            }
                            _ => {}
                        }
                        let pages: Pages = Arc::new(Mutex::new(TrackedWrite::new(spill)));
                        let w = get_column_writer(
                            Arc::clone(d),
                            Arc::clone(props),
                            Box::new(ChunkPages(Arc::clone(&pages))),
                        );
                        Chunk::Values(Box::new(w), pages)
                    })
                    .collect();
                self.open.insert(Open {
                    cols,
                    rows: 0,
                    bytes: 0,
                })
            }
        };
        open.bytes += write_group(&mut open.cols, g)?;
        open.rows += g.rows;
        if open.rows >= self.limits.0 || open.bytes >= self.limits.1 {
            self.seal()?;
        }
        Ok(())
    }

    /// Appends the open row group, if any, to the file.
    fn seal(&mut self) -> Result<(), ParquetError> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let mut rg = self.file.next_row_group()?;
        for col in open.cols {
            let (chunk, close) = match col {
                Chunk::Strings(s) => s.close()?,
                Chunk::Ints(i) => i.close()?,
                Chunk::Int32s(i) => i.close()?,
                Chunk::Repeated(r) => r.close()?,
                Chunk::Values(w, pages) => {
                    let close = w.close()?;
                    let spill = {
                        let mut sink = pages.lock().unwrap_or_else(|e| e.into_inner());
                        sink.flush()?;
                        let dir = self.dir.clone();
                        std::mem::replace(sink.inner_mut(), Spill::Mem(Vec::new(), dir))
                    };
                    let tail = spill.into_tail()?;
                    let head = Bytes::new();
                    rg.append_column(&Spliced { head, tail }, close)?;
                    continue;
                }
            };
            rg.append_column(&chunk, close)?;
        }
        rg.close()?;
        Ok(())
    }

    /// Appends the open row group and writes the footer.
    pub(crate) fn close(mut self) -> Result<(), ParquetError> {
        self.seal()?;
        self.file.close()?;
        Ok(())
    }
}

/// The thread that encodes a table's batches into its file, one at a time, while the
/// next fill: it owns the [`Writer`] until [`Encoder::finish`] gives it back. (A
/// thread a batch cost 373 thread starts and stacks on an 8 M-event export.) It runs at
/// the lowest priority ([`jitterlab_trace::lowest_priority`]), in the time the .dat
/// reader and the analysis leave, with [`IN_FLIGHT`] batches handed over at most.
pub(crate) struct Encoder<W: Write + Send + 'static = BufWriter<File>> {
    /// Batches, then `None`: close the file (its last row group and footer).
    tx: Option<SyncSender<Option<Group>>>,
    /// Each batch's buffers (with its values), once encoded.
    back: Receiver<Vec<Buf>>,
    /// Batches handed over whose buffers have not come back.
    busy: usize,
    /// The writer back, or `None` once the thread closed the file.
    thread: Option<JoinHandle<Result<Option<Writer<W>>, ParquetError>>>,
}

/// Batches a table's encoder has been handed and not given back, at most: at the
/// lowest priority it may wait for the CPUs, and the rows go on filling the next. With
/// one, nice 19 made the export no faster (the analysis waited for it); with two, 3-5 %
/// faster than at the normal priority, for 1.6 MB more (BENCHMARKS.md).
const IN_FLIGHT: usize = 2;

impl<W: Write + Send + 'static> Encoder<W> {
    /// Starts the thread, with the table's `writer`.
    pub(crate) fn spawn(writer: Writer<W>) -> Encoder<W> {
        // The batch the thread encodes, and the one that waits.
        let (tx, rx) = sync_channel::<Option<Group>>(IN_FLIGHT - 1);
        let (done, back) = channel();
        let thread = std::thread::spawn(move || {
            jitterlab_trace::lowest_priority();
            let mut writer = writer;
            for group in rx {
                let Some(group) = group else {
                    writer.close()?;
                    return Ok(None);
                };
                writer.write(&group)?;
                // Not emptied: a typed batch reuses the values' memory as it is. The
                // table may be gone (an error): then they are dropped.
                let _ = done.send(group.bufs);
            }
            Ok(Some(writer))
        });
        Encoder {
            tx: Some(tx),
            back,
            busy: 0,
            thread: Some(thread),
        }
    }

    /// The buffers of a batch encoded, for the next: waits for one when [`IN_FLIGHT`]
    /// batches are out, takes one if any came back otherwise (none: the next batch
    /// takes new buffers). The thread's error, if it stopped on one.
    pub(crate) fn settle(&mut self) -> Result<Option<Vec<Buf>>, ParquetError> {
        if self.busy == 0 {
            return Ok(None);
        }
        if self.busy < IN_FLIGHT {
            return match self.back.try_recv() {
                Ok(bufs) => {
                    self.busy -= 1;
                    Ok(Some(bufs))
                }
                Err(TryRecvError::Empty) => Ok(None),
                // The thread stopped without sending them back: on an error.
                Err(TryRecvError::Disconnected) => self.join().map(|_| None),
            };
        }
        self.busy -= 1;
        match self.back.recv() {
            Ok(bufs) => Ok(Some(bufs)),
            // The thread stopped without sending them back: on an error.
            Err(_) => self.join().map(|_| None),
        }
    }

    /// Hands `group` to the thread (after [`Encoder::settle`]).
    pub(crate) fn send(&mut self, group: Group) -> Result<(), ParquetError> {
        let Some(tx) = &self.tx else {
            return Err(ParquetError::General(
                "a batch handed over after the file was closed".into(),
            ));
        };
        if tx.send(Some(group)).is_ok() {
            self.busy += 1;
            return Ok(());
        }
        // The thread is gone: it returned an error.
        self.join().map(drop)
    }

    /// Asks the thread to close the file once the batches handed over are encoded (its
    /// last row group and its footer), and goes on: tables closed this way close side
    /// by side. [`Encoder::finish`] then waits for it.
    pub(crate) fn close(&mut self) -> Result<(), ParquetError> {
        let asked = self.tx.take().is_some_and(|tx| tx.send(None).is_ok());
        if asked {
            return Ok(());
        }
        // The thread is gone: it returned an error.
        self.join().map(drop)
    }

    /// Waits for the batches handed over to be encoded; the writer, to close the file,
    /// or `None` when the thread closed it ([`Encoder::close`]).
    pub(crate) fn finish(mut self) -> Result<Option<Writer<W>>, ParquetError> {
        self.join()
    }

    fn join(&mut self) -> Result<Option<Writer<W>>, ParquetError> {
        self.tx = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(ParquetError::General("the writing thread panicked".into())),
            None => Err(ParquetError::General("the writing thread stopped".into())),
        }
    }
}

impl<W: Write + Send + 'static> Drop for Encoder<W> {
    fn drop(&mut self) {
        // Not finished (an error): the thread ends once the batch it has is encoded.
        if self.thread.is_some() {
            let _ = self.join();
        }
    }
}

/// A column writer of another type than its values: a defect of the table's
/// declaration, not of the input.
fn mismatch(c: usize) -> ParquetError {
    ParquetError::General(format!("column {c}: values of another type than declared"))
}

/// Encodes the batch `g` into the row group's column writers; returns its size as
/// uncompressed values (for [`ROW_GROUP_BYTES`]).
fn write_group(cols: &mut [Chunk], g: &Group) -> Result<usize, ParquetError> {
    let rows = g.rows;
    let mut bytes = 0;
    let mut cols = cols.iter_mut().enumerate();
    for _ in &PROVENANCE {
        match cols.next() {
            Some((_, Chunk::Repeated(r))) => bytes += r.put(rows),
            Some((i, _)) => return Err(mismatch(i)),
            None => break,
        }
    }
    for (b, dict) in g.bufs.iter().zip(&g.dicts) {
        let Some((i, col)) = cols.next() else {
            break;
        };
        let defs = b.defs.as_deref();
        let col = match (&b.vals, col) {
            (Vals::Str(keys), Chunk::Strings(s)) => {
                bytes += s.put(keys, defs, dict.as_deref().unwrap_or_default(), rows)?;
                continue;
            }
            (Vals::I64(v), Chunk::Ints(c)) => {
                bytes += c.put(v, defs, rows)?;
                continue;
            }
            (Vals::I32(v), Chunk::Int32s(c)) => {
                bytes += c.put(v, defs, rows)?;
                continue;
            }
            (_, Chunk::Values(col, _)) => &mut **col,
            _ => return Err(mismatch(i)),
        };
        match (&b.vals, col) {
            (Vals::I64(v), ColumnWriter::Int64ColumnWriter(w)) => {
                bytes += v.len() * 8;
                w.write_batch(v, defs, None)
            }
            (Vals::I32(v), ColumnWriter::Int32ColumnWriter(w)) => {
                bytes += v.len() * 4;
                w.write_batch(v, defs, None)
            }
            (Vals::Bool(v), ColumnWriter::BoolColumnWriter(w)) => {
                bytes += v.len();
                w.write_batch(v, defs, None)
            }
            (Vals::F64(v), ColumnWriter::DoubleColumnWriter(w)) => {
                bytes += v.len() * 8;
                w.write_batch(v, defs, None)
            }
            _ => return Err(mismatch(i)),
        }?;
    }
    Ok(bytes)
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
    #[inline(always)]
    fn next(&mut self) -> &mut Buf {
        let c = self.col;
        self.col += 1;
        if c >= self.table.batch.bufs.len() {
            too_many(self.table.name());
        }
        &mut self.table.batch.bufs[c]
    }
    /// A nullable value of a column of `T`.
    ///
    /// Inlined into the tables' `push` with its callers, the panics kept out of line:
    /// a value costs its two pushes and a check of the column's type.
    #[inline(always)]
    fn put<T: Val>(mut self, v: Option<T>) -> Self {
        let c = self.col;
        let b = self.next();
        let pushed = match (T::vec(&mut b.vals), &mut b.defs, v) {
            (Some(x), Some(d), Some(v)) => {
                d.push(1);
                x.push(v);
                true
            }
            (Some(x), None, Some(v)) => {
                x.push(v);
                true
            }
            (Some(_), Some(d), None) => {
                d.push(0);
                true
            }
            _ => false,
        };
        if !pushed {
            mismatch_row(self.table.name(), c);
        }
        self
    }
    /// A nullable int64.
    #[inline(always)]
    pub(crate) fn opt_i64(self, v: Option<i64>) -> Self {
        self.put(v)
    }
    /// A nullable int32.
    #[inline(always)]
    pub(crate) fn opt_i32(self, v: Option<i32>) -> Self {
        self.put(v)
    }
    /// A nullable boolean.
    #[inline(always)]
    pub(crate) fn put_opt_bool(self, v: Option<bool>) -> Self {
        self.put(v)
    }
    /// A nullable double.
    #[inline(always)]
    pub(crate) fn opt_f64(self, v: Option<f64>) -> Self {
        self.put(v)
    }
    /// A nullable string.
    #[inline(always)]
    pub(crate) fn opt_str(self, v: Option<&str>) -> Self {
        self.text(v.map(Text::Str))
    }
    /// A task name.
    #[inline(always)]
    pub(crate) fn comm(self, c: Comm) -> Self {
        self.text(Some(Text::Comm(c)))
    }
    /// A string value, found in the column's dictionary by how it came.
    #[inline(always)]
    fn text(mut self, v: Option<Text<'_>>) -> Self {
        let c = self.col;
        let present = v.is_some();
        let key = match (v, self.table.batch.dicts.get_mut(c)) {
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
            _ => mismatch_row(self.table.name(), c),
        }
        self
    }
    /// An int64 (or wall-clock) value.
    #[inline(always)]
    pub(crate) fn i64(self, v: i64) -> Self {
        self.opt_i64(Some(v))
    }
    /// A time or count in u64.
    #[inline(always)]
    pub(crate) fn u64(self, v: u64) -> Self {
        self.opt_i64(Some(i64_of(v)))
    }
    /// A nullable time or count.
    #[inline(always)]
    pub(crate) fn opt_u64(self, v: Option<u64>) -> Self {
        self.opt_i64(v.map(i64_of))
    }
    /// An int32.
    #[inline(always)]
    pub(crate) fn i32(self, v: i32) -> Self {
        self.opt_i32(Some(v))
    }
    /// A u32 as int32 (CPUs, IRQs, vectors: beyond i32, the largest).
    #[inline(always)]
    pub(crate) fn u32(self, v: u32) -> Self {
        self.opt_u32(Some(v))
    }
    /// A nullable u32 as int32.
    #[inline(always)]
    pub(crate) fn opt_u32(self, v: Option<u32>) -> Self {
        self.opt_i32(v.map(i32_of))
    }
    /// A boolean.
    #[inline(always)]
    pub(crate) fn bool(self, v: bool) -> Self {
        self.put_opt_bool(Some(v))
    }
    /// A string.
    #[inline(always)]
    pub(crate) fn str(self, v: &str) -> Self {
        self.opt_str(Some(v))
    }
    /// One of a few literal strings (a kind), found by address.
    #[inline(always)]
    pub(crate) fn kind(self, v: &'static str) -> Self {
        self.text(Some(Text::Literal(v)))
    }
    /// A double.
    #[inline(always)]
    pub(crate) fn f64(self, v: f64) -> Self {
        self.opt_f64(Some(v))
    }
    /// Ends the row (every column must have been pushed); writes a row group when full.
    pub(crate) fn end(self) -> Result<(), Error> {
        debug_assert_eq!(
            self.col,
            self.table.batch.bufs.len(),
            "table {}: a row of {} columns, expected {}",
            self.table.name(),
            self.col,
            self.table.batch.bufs.len()
        );
        self.table.end_row()
    }
}

/// A row of more values than its table's columns: a defect of the table's `push`.
#[cold]
#[inline(never)]
fn too_many(table: &str) -> ! {
    panic!("table {table}: a row of more columns than declared")
}

/// A value of the wrong type for its column: a defect of the table's `push`.
#[cold]
#[inline(never)]
fn mismatch_row(table: &str, col: usize) -> ! {
    panic!(
        "table {table}: column {col} pushed a value of another type, or null into a column that is not nullable"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::properties::WriterProperties;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;
    use parquet::schema::parser::parse_message_type;

    /// The value of row `i`: scattered (splitmix64), so that neither their deltas nor
    /// zstd shrink a column of them below [`SPILL_BYTES`].
    fn v(i: usize) -> i64 {
        let mut z = (i as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as i64
    }

    /// A writer of `t.parquet` in `dir`, of the provenance columns and `column`, with
    /// row groups of `rows` rows and `bytes` bytes at most.
    fn writer(dir: &Path, column: &str, rows: usize, bytes: usize) -> (PathBuf, Writer<File>) {
        let path = dir.join("t.parquet");
        let schema = parse_message_type(&format!(
            "message t {{ OPTIONAL BYTE_ARRAY kernel (STRING); OPTIONAL INT64 start_wall_us; \
             OPTIONAL INT64 start_wall_ns; {column}; }}"
        ))
        .unwrap();
        let file = SerializedFileWriter::new(
            File::create(&path).unwrap(),
            Arc::new(schema),
            Arc::new(WriterProperties::builder().build()),
        )
        .unwrap();
        (path, Writer::with_limits(file, dir, rows, bytes))
    }

    /// A file of the provenance columns and one int64 column `v` ([`v`]), written in
    /// batches of `batch` rows under the given limits; its row groups' sizes, and the
    /// largest chunk of `v` in bytes.
    fn written(total: usize, batch: usize, rows: usize, bytes: usize) -> (Vec<i64>, i64) {
        let origin = [Const::text("6.18"), Const::Null, Const::int(7)];
        written_from(origin, total, batch, rows, bytes)
    }

    /// [`written`] with the provenance columns of `origin`.
    fn written_from(
        origin: [Const; 3],
        total: usize,
        batch: usize,
        rows: usize,
        bytes: usize,
    ) -> (Vec<i64>, i64) {
        let known = [&origin[0], &origin[2]].map(|c| !matches!(c, Const::Null));
        let dir = tempfile::tempdir().unwrap();
        let (path, mut w) = writer(dir.path(), "REQUIRED INT64 v", rows, bytes);
        let origin = Arc::new(origin);
        let mut next = 0;
        while next < total {
            let n = batch.min(total - next);
            let g = Group {
                rows: n,
                origin: Arc::clone(&origin),
                dicts: vec![None],
                bufs: vec![Buf {
                    vals: Vals::I64((next..next + n).map(v).collect()),
                    defs: None,
                }],
            };
            w.write(&g).unwrap();
            next += n;
        }
        w.close().unwrap();
        // The spilled pages were in unnamed files: only the table's file is left.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1);
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        // Every value back, in order, with the provenance columns beside it.
        for (i, row) in reader.get_row_iter(None).unwrap().enumerate() {
            let row = row.unwrap();
            assert_eq!(row.get_long(3).unwrap(), v(i));
            assert_eq!(
                row.get_string(0).ok().map(String::as_str),
                known[0].then_some("6.18")
            );
            assert_eq!(row.get_long(2).ok(), known[1].then_some(7));
        }
        let meta = reader.metadata();
        assert_eq!(meta.file_metadata().num_rows(), total as i64);
        let groups = meta.row_groups();
        let v_bytes = groups.iter().map(|g| g.column(3).compressed_size());
        (
            groups.iter().map(|g| g.num_rows()).collect(),
            v_bytes.max().unwrap_or(0),
        )
    }

    fn row_groups(total: usize, batch: usize, rows: usize, bytes: usize) -> Vec<i64> {
        written(total, batch, rows, bytes).0
    }

    #[test]
    fn a_string_column_beyond_the_memory_kept_is_spilled_and_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut w) = writer(
            dir.path(),
            "OPTIONAL BYTE_ARRAY s (STRING)",
            60_000,
            usize::MAX,
        );
        let origin = Arc::new([Const::Null, Const::int(1), Const::int(2)]);
        // 30,000 distinct strings in scattered order, every 7th row null: 15-bit
        // indices that zstd cannot pack below what is kept in memory.
        let strings: Vec<ByteArray> = (0..30_000)
            .map(|i| ByteArray::from(format!("s{i}").into_bytes()))
            .collect();
        let key = |i: usize| (v(i) as u64 % 30_000) as u32;
        let (total, batch) = (100_000, 16_384);
        let mut next = 0;
        while next < total {
            let n = batch.min(total - next);
            let rows = next..next + n;
            let g = Group {
                rows: n,
                origin: Arc::clone(&origin),
                dicts: vec![Some(strings.clone())],
                bufs: vec![Buf {
                    vals: Vals::Str(rows.clone().filter(|i| i % 7 != 0).map(key).collect()),
                    defs: Some(rows.map(|i| i16::from(i % 7 != 0)).collect()),
                }],
            };
            w.write(&g).unwrap();
            next += n;
        }
        w.close().unwrap();
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        for (i, row) in reader.get_row_iter(None).unwrap().enumerate() {
            let row = row.unwrap();
            let want = (i % 7 != 0).then(|| format!("s{}", key(i)));
            assert_eq!(row.get_string(3).ok().cloned(), want, "{i}");
        }
        let meta = reader.metadata();
        assert_eq!(meta.file_metadata().num_rows(), total as i64);
        let s_bytes = meta
            .row_groups()
            .iter()
            .map(|g| g.column(3).compressed_size());
        assert!(s_bytes.max().unwrap_or(0) > 2 * SPILL_BYTES as i64);
    }

    /// A file of the provenance columns and one nullable `column` of `total` rows,
    /// `value(i)` in row `i` (made into a column's values by `vals`), written in
    /// batches of 1,000 rows; its directory (removed when dropped) and path.
    fn nullable<T>(
        column: &str,
        total: usize,
        value: impl Fn(usize) -> Option<T>,
        vals: fn(Vec<T>) -> Vals,
    ) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut w) = writer(dir.path(), column, usize::MAX, usize::MAX);
        let origin = Arc::new([Const::Null, Const::int(1), Const::int(2)]);
        for start in (0..total).step_by(1000) {
            let rows = start..start + 1000;
            let g = Group {
                rows: 1000,
                origin: Arc::clone(&origin),
                dicts: vec![None],
                bufs: vec![Buf {
                    vals: vals(rows.clone().filter_map(&value).collect()),
                    defs: Some(rows.map(|i| i16::from(value(i).is_some())).collect()),
                }],
            };
            w.write(&g).unwrap();
        }
        w.close().unwrap();
        (dir, path)
    }

    #[test]
    fn an_int64_column_with_nulls_reads_back_with_its_statistics_and_page_index() {
        use parquet::file::page_index::column_index::ColumnIndexMetaData;
        use parquet::file::serialized_reader::ReadOptionsBuilder;
        use parquet::file::statistics::Statistics;
        // Batches (pages) of 1,000 rows, every 5th null; the second all nulls.
        let value = |i: usize| (i % 5 != 0 && !(1000..2000).contains(&i)).then(|| v(i));
        let total = 3000;
        let (_dir, path) = nullable("OPTIONAL INT64 n", total, value, Vals::I64);
        let options = ReadOptionsBuilder::new().with_page_index().build();
        let file = File::open(&path).unwrap();
        let reader = SerializedFileReader::new_with_options(file, options).unwrap();
        for (i, row) in reader.get_row_iter(None).unwrap().enumerate() {
            assert_eq!(row.unwrap().get_long(3).ok(), value(i), "{i}");
        }
        let present: Vec<i64> = (0..total).filter_map(value).collect();
        let nulls = (total - present.len()) as u64;
        match reader.metadata().row_group(0).column(3).statistics() {
            Some(Statistics::Int64(s)) => {
                assert_eq!(s.min_opt(), present.iter().min());
                assert_eq!(s.max_opt(), present.iter().max());
                assert_eq!(s.null_count_opt(), Some(nulls));
            }
            s => panic!("{s:?}"),
        }
        let index = reader.metadata().column_index().expect("a column index");
        let ColumnIndexMetaData::INT64(index) = &index[0][3] else {
            panic!("{:?}", index[0][3]);
        };
        assert_eq!(index.num_pages(), 3);
        assert!(index.is_null_page(1));
        assert_eq!(index.null_count(1), Some(1000));
        for (p, rows) in [(0, 0..1000), (2, 2000..3000)] {
            let page: Vec<i64> = rows.filter_map(value).collect();
            assert!(!index.is_null_page(p));
            assert_eq!(index.min_value(p), page.iter().min(), "page {p}");
            assert_eq!(index.max_value(p), page.iter().max(), "page {p}");
            assert_eq!(index.null_count(p), Some(200));
        }
    }

    #[test]
    fn an_int32_column_with_nulls_reads_back_through_its_dictionary() {
        use parquet::basic::Encoding;
        use parquet::file::statistics::Statistics;
        // Few values, small and large, negative, some in runs; every 7th row null.
        let value = |i: usize| {
            let few = [0, 1, 120, 4_194_304, -5, i32::MAX, 31_150, 1024][i / 3 % 8];
            (i % 7 != 0).then_some(few)
        };
        let total = 5000;
        let (_dir, path) = nullable("OPTIONAL INT32 n", total, value, Vals::I32);
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        for (i, row) in reader.get_row_iter(None).unwrap().enumerate() {
            assert_eq!(row.unwrap().get_int(3).ok(), value(i), "{i}");
        }
        let col = reader.metadata().row_group(0).column(3);
        assert!(col.encodings().any(|e| e == Encoding::RLE_DICTIONARY));
        match col.statistics() {
            Some(Statistics::Int32(s)) => {
                assert_eq!((s.min_opt(), s.max_opt()), (Some(&-5), Some(&i32::MAX)));
                assert_eq!(
                    s.null_count_opt(),
                    Some((0..total).step_by(7).count() as u64)
                );
            }
            s => panic!("{s:?}"),
        }
    }

    /// Batches of any size (1 to 100 rows) share the data pages of a dictionary
    /// column's indices: values, runs of them and nulls straddle the batches' edges,
    /// some batches are all nulls, and the dictionary grows (a wider index starts a
    /// page). Every value reads back, from fewer pages than batches.
    #[test]
    fn index_pages_span_batches_of_any_size_and_read_back() {
        use parquet::file::serialized_reader::ReadOptionsBuilder;
        let strings: Vec<ByteArray> = (0..200)
            .map(|k| ByteArray::from(format!("s{k}").into_bytes()))
            .collect();
        for column in [
            "OPTIONAL INT32 n",
            "REQUIRED INT32 n",
            "OPTIONAL BYTE_ARRAY n (STRING)",
            "REQUIRED BYTE_ARRAY n (STRING)",
        ] {
            let (nullable, text) = (column.starts_with("OPTIONAL"), column.contains("STRING"));
            // Runs of 10, of more and more distinct values (up to 100: 7 bits).
            let value = |i: usize| {
                let null = nullable && (i % 11 == 0 || (400..460).contains(&i));
                (!null).then_some((i / 10 % (1 + i / 40)) as u32)
            };
            let dir = tempfile::tempdir().unwrap();
            let (path, mut w) = writer(dir.path(), column, usize::MAX, usize::MAX);
            let origin = Arc::new([Const::Null, Const::int(1), Const::int(2)]);
            let (total, mut start, mut batches) = (4000, 0, 0);
            for n in [1, 3, 7, 8, 9, 13, 37, 64, 100].into_iter().cycle() {
                let n = n.min(total - start);
                let rows = start..start + n;
                let present: Vec<u32> = rows.clone().filter_map(value).collect();
                let g = Group {
                    rows: n,
                    origin: Arc::clone(&origin),
                    dicts: vec![text.then(|| strings.clone())],
                    bufs: vec![Buf {
                        vals: match text {
                            true => Vals::Str(present),
                            false => Vals::I32(present.iter().map(|&v| v as i32 * 3).collect()),
                        },
                        defs: nullable
                            .then(|| rows.map(|i| i16::from(value(i).is_some())).collect()),
                    }],
                };
                w.write(&g).unwrap();
                (start, batches) = (start + n, batches + 1);
                if start == total {
                    break;
                }
            }
            w.close().unwrap();
            let options = ReadOptionsBuilder::new().with_page_index().build();
            let file = File::open(&path).unwrap();
            let reader = SerializedFileReader::new_with_options(file, options).unwrap();
            let mut read = 0;
            for (i, row) in reader.get_row_iter(None).unwrap().enumerate() {
                let row = row.unwrap();
                let got = match text {
                    true => row
                        .get_string(3)
                        .ok()
                        .map(|s| s[1..].parse::<u32>().unwrap()),
                    false => row.get_int(3).ok().map(|v| v as u32 / 3),
                };
                assert_eq!(got, value(i), "{column}: row {i}");
                read += 1;
            }
            assert_eq!(read, total, "{column}");
            let pages = reader.metadata().offset_index().unwrap()[0][3]
                .page_locations()
                .len();
            assert!(
                (2..batches / 4).contains(&pages),
                "{column}: {pages} pages, {batches} batches"
            );
        }
    }

    #[test]
    fn provenance_columns_of_nulls_read_back() {
        let origin = [Const::Null, Const::Null, Const::Null];
        let (groups, _) = written_from(origin, 2500, 500, 1000, usize::MAX);
        assert_eq!(groups, [1000, 1000, 500]);
    }

    #[test]
    fn a_task_name_has_one_index_however_it_is_found() {
        let mut d = Dict::default();
        let [a, b, c] = [b"alpha".as_slice(), b"beta", b"gamma"].map(Comm::from_bytes);
        // New, the latest, the one before, then names past the last two.
        let keys: Vec<u32> = [a, b, a, b, b, c, a, c, b, a]
            .map(|n| d.key_comm(n))
            .to_vec();
        assert_eq!(keys, [0, 1, 0, 1, 1, 2, 0, 2, 1, 0]);
        assert_eq!(d.values.len(), 3);
        // A name added as text before it came as a task name keeps its index.
        let mut d = Dict::default();
        assert_eq!(d.key(b"beta"), 0);
        assert_eq!((d.key_comm(a), d.key_comm(b)), (1, 0));
    }

    #[test]
    fn an_encoder_asked_to_close_writes_the_whole_file_and_takes_no_more() {
        let dir = tempfile::tempdir().unwrap();
        let (path, w) = writer(dir.path(), "REQUIRED INT64 v", 1000, usize::MAX);
        let mut e = Encoder::spawn(w);
        let origin = Arc::new([Const::Null, Const::int(1), Const::int(2)]);
        let group = |from: usize, n: usize| Group {
            rows: n,
            origin: Arc::clone(&origin),
            dicts: vec![None],
            bufs: vec![Buf {
                vals: Vals::I64((from..from + n).map(v).collect()),
                defs: None,
            }],
        };
        let mut next = 0;
        for n in [700, 700, 300] {
            e.settle().unwrap();
            e.send(group(next, n)).unwrap();
            next += n;
        }
        e.close().unwrap();
        // Closed by the thread: no writer comes back, and a batch after is refused.
        assert!(e.send(group(next, 10)).is_err());
        assert!(e.finish().unwrap().is_none());
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let got: Vec<i64> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().get_long(3).unwrap())
            .collect();
        assert_eq!(got, (0..next).map(v).collect::<Vec<_>>());
    }

    #[test]
    fn an_encoder_that_fails_says_so_at_the_next_batch() {
        // A file on a device that is always full: the first row group fails to go out
        // (the buffer holds the header until then).
        let full = match File::options().write(true).open("/dev/full") {
            Ok(f) => BufWriter::with_capacity(64, f),
            Err(e) => panic!("/dev/full: {e}"),
        };
        let schema = parse_message_type(
            "message t { OPTIONAL BYTE_ARRAY kernel (STRING); OPTIONAL INT64 start_wall_us; \
             OPTIONAL INT64 start_wall_ns; REQUIRED INT64 v; }",
        )
        .unwrap();
        let file = SerializedFileWriter::new(
            full,
            Arc::new(schema),
            Arc::new(WriterProperties::builder().build()),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut e = Encoder::spawn(Writer::with_limits(file, dir.path(), 1000, usize::MAX));
        let origin = Arc::new([Const::Null, Const::Null, Const::Null]);
        let group = |n: usize| Group {
            rows: n,
            origin: Arc::clone(&origin),
            dicts: vec![None],
            bufs: vec![Buf {
                vals: Vals::I64((0..n).map(v).collect()),
                defs: None,
            }],
        };
        assert!(matches!(e.settle(), Ok(None)));
        // The failure shows once the batches in flight are out, at the latest.
        let mut sent = 0;
        let err = loop {
            if let Err(err) = e.settle() {
                break err.to_string();
            }
            if let Err(err) = e.send(group(1000)) {
                break err.to_string();
            }
            sent += 1;
            assert!(
                sent <= IN_FLIGHT + 1,
                "{sent} batches sent to a failed encoder"
            );
        };
        assert!(err.contains("No space left on device"), "{err}");
        // The thread is gone: a batch handed over after is refused, and so is the end.
        assert!(e.send(group(10)).is_err());
        assert!(e.finish().is_err());
    }

    #[test]
    fn batches_fill_a_row_group_up_to_its_rows() {
        assert_eq!(row_groups(2500, 500, 1000, usize::MAX), [1000, 1000, 500]);
        // Under the limit: the batches are one row group.
        assert_eq!(row_groups(2500, 500, 1 << 20, usize::MAX), [2500]);
    }

    #[test]
    fn batches_fill_a_row_group_up_to_its_bytes() {
        // A row: "6.18" (4 + 4 bytes), start_wall_ns (8), v (8) = 24 bytes; the null
        // start_wall_us counts nothing.
        assert_eq!(row_groups(2000, 500, usize::MAX, 24 * 1000), [1000, 1000]);
        assert_eq!(
            row_groups(2000, 500, usize::MAX, 24 * 1000 - 1),
            [1000, 1000]
        );
        assert_eq!(
            row_groups(2000, 500, usize::MAX, 24 * 1000 + 1),
            [1500, 500]
        );
    }

    #[test]
    fn a_row_group_beyond_the_memory_kept_is_spilled_and_read_back_whole() {
        // 8 bytes a row that zstd cannot pack: 40,000 rows a row group are 320 KB,
        // more than 4 times what is kept in memory.
        let (groups, v_bytes) = written(100_000, 10_000, 40_000, usize::MAX);
        assert_eq!(groups, [40_000, 40_000, 20_000]);
        assert!(v_bytes > 4 * SPILL_BYTES as i64, "{v_bytes}");
    }
}
