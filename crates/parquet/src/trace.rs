//! The export of a trace: one pass of the state machine, its derived intervals written
//! as rows as they end.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use jitterlab_analyze::engine::{self, PassOptions};
use jitterlab_analyze::hash::TidMap;
use jitterlab_analyze::{
    Anomaly, Blind, IrqSpan, Marker, Migration, RunSlice, Sink, SoftirqSpan, Wake,
};
use jitterlab_trace::dat::ClockPair;
use jitterlab_trace::Trace;
use serde::Serialize;

use crate::batch::Batch;
use crate::table::{Table, TableDef};
use crate::tables::{
    anomaly, chain, cpu, irq, lost, marker, migration, sched_slice, softirq, thread, trace_info,
    wakeup,
};
use crate::{Error, Origin};

/// The tables a trace is exported to, in the order they are documented.
pub const TRACE_TABLES: [&TableDef; 12] = [
    &trace_info::DEF,
    &thread::DEF,
    &cpu::DEF,
    &sched_slice::DEF,
    &wakeup::DEF,
    &chain::DEF,
    &irq::DEF,
    &softirq::DEF,
    &migration::DEF,
    &lost::DEF,
    &anomaly::DEF,
    &marker::DEF,
];

/// The facts of a trace that its `trace` row holds.
#[derive(Clone, Debug, Default)]
pub struct TraceFacts {
    /// The file as given.
    pub file: String,
    /// The format, for people.
    pub format: String,
    /// The `uname` text the file records.
    pub uname: Option<String>,
    /// The trace clock.
    pub clock: Option<String>,
    /// CPUs of the recording.
    pub cpus: Option<u32>,
    /// First event, ns.
    pub first_ts: Option<u64>,
    /// Last event, ns.
    pub last_ts: Option<u64>,
    /// Events read.
    pub events: u64,
    /// Events lost (known counts).
    pub lost_events: u64,
    /// The clock pair of the recording's start.
    pub clocks: Option<ClockPair>,
    /// The .dat buffer exported (`top`, or an instance's name); `None` for a text trace.
    pub buffer: Option<String>,
    /// The .dat's other buffers, not exported, with their counts (`buffer tracing-a
    /// (2460 events)`); empty when there are none.
    pub buffers_not_exported: Vec<String>,
}

/// One file written.
#[derive(Clone, Debug, Serialize)]
pub struct FileWritten {
    /// The table.
    pub table: String,
    /// The file.
    pub path: PathBuf,
    /// Its rows.
    pub rows: u64,
    /// Its size, bytes.
    pub bytes: u64,
}

/// What an export of one input wrote.
#[derive(Clone, Debug, Serialize)]
pub struct ExportSummary {
    /// The input.
    pub input: String,
    /// The host, run and kernel its rows carry.
    pub host: String,
    /// The trace or run id.
    pub run_id: String,
    /// The kernel release, when known.
    pub kernel: Option<String>,
    /// Events read (traces; 0 for result files).
    pub events: u64,
    /// The files, one per table.
    pub files: Vec<FileWritten>,
}

/// The tables of a trace being written.
struct Tables {
    slice: Table<sched_slice::Batch>,
    wakeup: Table<wakeup::Batch>,
    chain: Table,
    irq: Table,
    softirq: Table,
    migration: Table,
    lost: Table,
    anomaly: Table,
    marker: Table,
}

/// The [`Sink`] that writes each interval as a row; the first error stops the writing and
/// is returned at the end (the sink's methods cannot fail).
struct RowSink {
    t: Tables,
    /// Thread groups by tid (a lookup a row).
    tgids: TidMap<Option<i32>>,
    irq_names: HashMap<u32, jitterlab_trace::Text>,
    err: Option<Error>,
}

impl RowSink {
    fn put(&mut self, f: impl FnOnce(&mut Tables, &TidMap<Option<i32>>) -> Result<(), Error>) {
        if self.err.is_none() {
            if let Err(e) = f(&mut self.t, &self.tgids) {
                self.err = Some(e);
            }
        }
    }
}

impl Sink for RowSink {
    fn slice(&mut self, s: &RunSlice) {
        self.put(|t, g| sched_slice::push(&mut t.slice, s, g.get(s.tid).flatten()));
    }
    fn wake(&mut self, w: &Wake) {
        let name = w.irq().and_then(|n| self.irq_names.get(&n).cloned());
        self.put(|t, g| {
            wakeup::push(&mut t.wakeup, w, g.get(w.tid).flatten())?;
            chain::push(&mut t.chain, w, name.as_deref())
        });
    }
    fn irq(&mut self, s: &IrqSpan) {
        self.irq_names
            .entry(s.irq)
            .or_insert_with(|| s.name.clone());
        self.put(|t, _| irq::push(&mut t.irq, s));
    }
    fn softirq(&mut self, s: &SoftirqSpan) {
        self.put(|t, _| softirq::push(&mut t.softirq, s));
    }
    fn migration(&mut self, m: &Migration) {
        self.put(|t, _| migration::push(&mut t.migration, m));
    }
    fn anomaly(&mut self, a: &Anomaly) {
        self.put(|t, _| anomaly::push(&mut t.anomaly, a));
    }
    fn marker(&mut self, m: &Marker) {
        self.put(|t, _| marker::push(&mut t.marker, m));
    }
    fn blind(&mut self, b: &Blind) {
        self.put(|t, _| lost::push(&mut t.lost, b));
    }
}

/// The host name, kernel release and clocks a trace file records, for an [`Origin`]:
/// jitterlab's clocks option (host name, clock pair) and the `uname` text (trace-cmd
/// writes `Linux NODENAME RELEASE MACHINE`, `jitterlab record` `Linux RELEASE VERSION
/// MACHINE`).
pub fn trace_origin(trace: &Trace) -> (Option<String>, Option<String>, Option<ClockPair>) {
    if let Trace::Ctf(c) = trace {
        // LTTng's env block names the host and the kernel; its clock is in ns since the
        // epoch already.
        let env = |k| c.env_str(k).map(String::from);
        return (env("hostname"), env("kernel_release"), None);
    }
    let Trace::Dat(d) = trace else {
        return (None, None, None);
    };
    let info = d.info();
    let words: Vec<&str> = info
        .uname
        .as_deref()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let is_release = |w: &str| w.starts_with(|c: char| c.is_ascii_digit()) && w.contains('.');
    let kernel = words
        .iter()
        .copied()
        .find(|w| is_release(w))
        .map(String::from);
    let node = match words.as_slice() {
        [_, node, release, ..] if is_release(release) && !is_release(node) => {
            Some(node.to_string())
        }
        _ => None,
    };
    (info.hostname.clone().or(node), kernel, info.clocks)
}

/// The buffer of a .dat that `trace` reads: `top` or an instance's name; `None` for a
/// text trace.
pub(crate) fn buffer_name(trace: &Trace) -> Option<&str> {
    match trace {
        Trace::Dat(d) => d.buffers().get(d.chosen_buffer()).map(|b| {
            if b.name.is_empty() {
                "top"
            } else {
                b.name.as_str()
            }
        }),
        _ => None,
    }
}

/// Exports the derived tables of `trace` (opened from `file`) under `dir`, hive-style
/// (`DIR/TABLE/host=HOST/run_id=RUN/part.parquet`), in one pass of the state machine:
/// each interval is a row when it ends, and a table's rows are encoded a batch of
/// [`crate::BATCH_ROWS`] at a time into row groups of at most [`crate::ROW_GROUP_ROWS`],
/// so memory grows with tasks and IRQs as `analyze`'s
/// does, never with events. How far it is, is the trace's progress counter
/// ([`Trace::set_progress`]). A table's file gets its name only once complete; on an
/// error, the files of this trace are left unfinished and removed.
pub fn export_trace(
    trace: &Trace,
    file: &str,
    origin: &Origin,
    dir: &Path,
) -> Result<ExportSummary, Error> {
    crate::dataset::check_names(Path::new(file), origin)?;
    // Read once: the rows' thread groups and the machine's.
    let tables = engine::Tables::of(trace);
    let mk = |def: &'static TableDef| Table::create(dir, def, origin);
    let mut sink = RowSink {
        t: Tables {
            slice: Table::create(dir, &sched_slice::DEF, origin)?,
            wakeup: Table::create(dir, &wakeup::DEF, origin)?,
            chain: mk(&chain::DEF)?,
            irq: mk(&irq::DEF)?,
            softirq: mk(&softirq::DEF)?,
            migration: mk(&migration::DEF)?,
            lost: mk(&lost::DEF)?,
            anomaly: mk(&anomaly::DEF)?,
            marker: mk(&marker::DEF)?,
        },
        tgids: {
            let mut m = TidMap::new(None);
            for (&tid, &tgid) in &tables.tgids {
                m.insert(tid, Some(tgid));
            }
            m
        },
        irq_names: HashMap::new(),
        err: None,
    };
    let pass = engine::pass(
        trace,
        &tables,
        // The tables hold the machine's intervals: no untyped event's fields.
        &PassOptions {
            untyped_fields: false,
            ..PassOptions::default()
        },
        &mut engine::no_raw,
        &mut sink,
    )?;
    let (events, stats, machine) = (pass.events, pass.stats, pass.machine);
    if let Some(e) = sink.err {
        return Err(e);
    }
    let mut t = sink.t;
    // The busy tables' files are closed by their encoders while the others are made.
    t.slice.close_behind()?;
    t.wakeup.close_behind()?;
    let mut threads = mk(&thread::DEF)?;
    for (utid, info) in machine.tasks().iter().enumerate() {
        thread::push(&mut threads, utid, info)?;
    }
    let mut cpus = mk(&cpu::DEF)?;
    for c in machine.cpus() {
        let lost = match stats.lost.get(c.cpu as usize) {
            Some(Some(n)) => Some(*n),
            Some(None) => None,
            None => Some(0),
        };
        cpu::push(&mut cpus, &c, lost)?;
    }
    let (_, _, clocks) = trace_origin(trace);
    let span = machine.counts().span;
    let facts = TraceFacts {
        file: file.to_string(),
        format: trace.format(),
        uname: match trace {
            Trace::Dat(d) => d.info().uname.clone(),
            Trace::Ctf(c) => c.uname(),
            _ => None,
        },
        clock: match trace {
            Trace::Dat(d) => d.info().clock.clone(),
            Trace::Ctf(c) => c.clocks().first().map(|k| k.name.clone()),
            _ => None,
        },
        cpus: match trace {
            Trace::Dat(d) => Some(d.info().cpus),
            Trace::Ctf(c) => c.meta().cpus,
            _ => None,
        },
        first_ts: span.map(|s| s.0),
        last_ts: span.map(|s| s.1),
        events,
        lost_events: stats.lost.iter().flatten().sum(),
        clocks,
        buffer: buffer_name(trace).map(String::from),
        buffers_not_exported: match trace {
            Trace::Dat(d) => d
                .buffer_choice()
                .map(|c| c.others.iter().map(|o| o.to_string()).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        },
    };
    let mut info = mk(&trace_info::DEF)?;
    trace_info::push(&mut info, &facts)?;
    let mut files = Vec::new();
    for (def, table) in [
        (&trace_info::DEF, info),
        (&thread::DEF, threads),
        (&cpu::DEF, cpus),
    ] {
        files.extend(finish(def, table)?);
    }
    let mut rest = Vec::new();
    for (def, table) in [
        (&chain::DEF, t.chain),
        (&irq::DEF, t.irq),
        (&softirq::DEF, t.softirq),
        (&migration::DEF, t.migration),
        (&lost::DEF, t.lost),
        (&anomaly::DEF, t.anomaly),
        (&marker::DEF, t.marker),
    ] {
        rest.extend(finish(def, table)?);
    }
    // Last, the busy tables (their encoders had the longest to go), listed in their
    // place.
    files.extend(finish(&sched_slice::DEF, t.slice)?);
    files.extend(finish(&wakeup::DEF, t.wakeup)?);
    files.extend(rest);
    crate::dataset::remove_stale(dir, origin, &written(&files))?;
    Ok(ExportSummary {
        input: file.to_string(),
        host: origin.host.clone(),
        run_id: origin.run_id.clone(),
        kernel: origin.kernel.clone(),
        events,
        files,
    })
}

/// The tables of `files`.
pub(crate) fn written(files: &[FileWritten]) -> Vec<&str> {
    files.iter().map(|f| f.table.as_str()).collect()
}

/// Finishes a table's file; `None` for a table without rows, which writes no file.
pub(crate) fn finish<B: Batch>(
    def: &TableDef,
    table: Table<B>,
) -> Result<Option<FileWritten>, Error> {
    let Some((path, rows)) = table.finish()? else {
        return Ok(None);
    };
    let bytes = std::fs::metadata(&path)
        .map_err(|e| Error::io(&path, "cannot read the size of", e))?
        .len();
    Ok(Some(FileWritten {
        table: def.name.to_string(),
        path,
        rows,
        bytes,
    }))
}
