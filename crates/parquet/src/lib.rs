//! Traces and results as Parquet tables, laid out hive-style so that the exports of many
//! machines are one dataset for DuckDB, Spark, Trino or BigQuery.
//!
//! - [`export_trace`] runs the scheduler/IRQ state machine of `jitterlab-analyze` once over
//!   a trace and writes its derived intervals as rows, as they end: `sched_slice`, `wakeup`,
//!   `irq_chain`, `irq`, `softirq`, `migration`, `lost`, `anomaly`, `marker`, then `thread`,
//!   `cpu` and `trace` (names after Perfetto's tables where one exists). Every
//!   [`ROW_GROUP_ROWS`] rows of a table are written as a row group, so memory is bounded as
//!   `analyze`'s is.
//! - [`export_result`] writes a `jitterlab latency --json`, `jitterlab experiment --json`
//!   or `jitterlab audit --json` file as tables (`latency_run`, `latency_histogram`,
//!   `latency_spike`; `experiment_cell`, `experiment_run`, `experiment_verdict`;
//!   `audit_cpu`, `audit_finding`, `audit_latency`, `audit_noise`).
//! - Every file is `DIR/TABLE/host=HOST/run_id=RUN/part.parquet`: the host and the run
//!   id are columns of the dataset by its path (and in each file's key-value metadata,
//!   `jitterlab.host` and `jitterlab.run_id`), not of the file; every row starts with the
//!   [`PROVENANCE`] columns, `kernel`, `start_wall_us` and `start_wall_ns` (the
//!   recording's start, wall-clock), from an [`Origin`].
//! - The columns are listed by [`TRACE_TABLES`] and [`RESULT_TABLES`] and documented in
//!   `docs/parquet.md`; [`SCHEMA_VERSION`] is written in every file's key-value metadata
//!   and in the `trace` table.
//!
//! This crate does **not** compute statistics (the rows are the analyses' own intervals
//! and the results' own figures), parse trace text or touch the host; it writes files
//! under the directory it is given, with the `parquet` crate of arrow-rs.
//!
//! ```
//! use jitterlab_parquet::{TRACE_TABLES, PROVENANCE};
//! let slice = TRACE_TABLES.iter().find(|t| t.name == "sched_slice").unwrap();
//! assert_eq!(PROVENANCE[0].name, "kernel");
//! assert!(slice.cols.iter().any(|c| c.name == "dur_ns"));
//! ```
#![deny(missing_docs)]

mod column;
mod dataset;
mod error;
mod origin;
mod result;
mod table;
pub mod tables;
mod trace;

pub use dataset::{check_partitions, partition_name_problem};
pub use error::Error;
pub use origin::{
    check_envelope, is_json_result, origin_of_result, origin_of_trace, read_result, OriginOptions,
    EXPORTABLE, RESULT_LIMIT, RESULT_VERSION,
};
pub use result::{export_result, result_origin, ResultOrigin, RESULT_TABLES};
pub use table::{Col, TableDef, Ty, PROVENANCE, ROW_GROUP_ROWS};
pub use trace::{export_trace, trace_origin, ExportSummary, FileWritten, TraceFacts, TRACE_TABLES};

/// What `jitterlab export` wrote: one summary per input, in the order given.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ExportReport {
    /// The directory the tables were written under.
    pub dir: std::path::PathBuf,
    /// One per input.
    pub exports: Vec<ExportSummary>,
}

/// The version of the tables' schema: raised when a column is renamed, removed or changes
/// meaning (adding one is noted in docs/parquet.md's changelog without a raise).
pub const SCHEMA_VERSION: u32 = 3;

/// Called with (done, total) as an export goes: events read and 0 while a trace is read
/// (its total is not known ahead), then (events, events) when it is read.
pub type Progress<'a> = &'a dyn Fn(u64, u64);

/// Where the rows of one export came from: the values of the provenance columns and of
/// the hive partition directories.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The machine.
    pub host: String,
    /// The recording or result: unique per host in a dataset.
    pub run_id: String,
    /// The kernel release, when known.
    pub kernel: Option<String>,
    /// The recording's start as wall-clock time, ns since 1970-01-01 UTC, when known.
    pub start_wall_ns: Option<i64>,
}

/// The name of `path` without its directory and its trace or JSON extensions
/// (`.zst`, `.dat`, `.json`, `.txt`): the default run id.
pub fn default_run_id(path: &std::path::Path) -> String {
    let mut name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".to_string());
    for ext in [".zst", ".dat", ".json", ".txt"] {
        if let Some(s) = name.strip_suffix(ext) {
            if !s.is_empty() {
                name = s.to_string();
            }
        }
    }
    name
}
