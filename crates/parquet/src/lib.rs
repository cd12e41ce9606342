//! Traces and results as Parquet tables, laid out hive-style so that the exports of many
//! machines are one dataset for DuckDB, Spark, Trino or BigQuery.
//!
//! - [`export_trace`] runs the scheduler/IRQ state machine of `jitterlab-analyze` once over
//!   a trace and writes its derived intervals as rows, as they end: `sched_slice`, `wakeup`,
//!   `irq_chain`, `irq`, `softirq`, `migration`, `lost`, `anomaly`, `marker`, then `thread`,
//!   `cpu` and `trace` (names after Perfetto's tables where one exists). A table's rows
//!   are encoded a batch of [`BATCH_ROWS`] at a time into row groups of [`ROW_GROUP_ROWS`]
//!   rows or [`ROW_GROUP_BYTES`] at most, so memory is bounded as `analyze`'s is.
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

mod batch;
mod column;
mod dataset;
mod error;
mod int32s;
mod ints;
mod origin;
mod pages;
mod result;
mod strings;
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
pub use table::{Col, TableDef, Ty, BATCH_ROWS, PROVENANCE, ROW_GROUP_BYTES, ROW_GROUP_ROWS};
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

/// The run id an export gets when `--run` gives none: `PREFIX` (`trace`, `latency`,
/// `experiment`, `audit`), the run's start in UTC when the input records it
/// (`20261129T062548Z`), and 8 hex digits of the input's content hash (see
/// [`content_hash`]): `trace-20261129T062548Z-3fa9c2d1`. It starts with a letter, is
/// neither a date nor a number to any engine, and two exports get the same one only for
/// the same input.
///
/// ```
/// use jitterlab_parquet::minted_run_id;
/// assert_eq!(
///     minted_run_id("trace", Some(1_764_324_903_123_456_789), 0x3fa9c2d1),
///     "trace-20251128T101503Z-3fa9c2d1"
/// );
/// assert_eq!(minted_run_id("latency", None, 0xab), "latency-000000ab");
/// ```
pub fn minted_run_id(prefix: &str, start_wall_ns: Option<i64>, hash: u64) -> String {
    match start_wall_ns {
        Some(ns) => format!("{prefix}-{}-{:08x}", utc_compact(ns), hash & 0xffff_ffff),
        None => format!("{prefix}-{:08x}", hash & 0xffff_ffff),
    }
}

/// `ns` since 1970-01-01 UTC as `YYYYMMDDTHHMMSSZ`.
fn utc_compact(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The content hash of a default run id: xxHash64 of the file's size and of its first
/// and last MiB (a trace's header, first and last events; a result file whole), read
/// from `path`. Two recordings differ there (their times do); the same file hashes the
/// same on every machine. A folder (an LTTng trace) hashes the names and hashes of its
/// files, in name order (its subfolders, such as LTTng's `index/`, left out).
pub fn content_hash(path: &std::path::Path) -> std::io::Result<u64> {
    use std::io::{Read, Seek, SeekFrom};
    const PART: u64 = 1 << 20;
    if path.is_dir() {
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(path)?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .collect();
        files.sort();
        let mut bytes = Vec::new();
        for f in files {
            bytes.extend_from_slice(f.file_name().unwrap_or_default().as_encoded_bytes());
            bytes.extend_from_slice(&content_hash(&f)?.to_le_bytes());
        }
        return Ok(twox_hash::XxHash64::oneshot(0, &bytes));
    }
    let mut f = std::fs::File::open(path)?;
    let size = f.metadata()?.len();
    let mut bytes = size.to_le_bytes().to_vec();
    f.by_ref().take(PART).read_to_end(&mut bytes)?;
    if size > PART {
        f.seek(SeekFrom::Start(size.saturating_sub(PART).max(PART)))?;
        f.take(PART).read_to_end(&mut bytes)?;
    }
    Ok(twox_hash::XxHash64::oneshot(0, &bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_in_a_run_id_is_utc() {
        assert_eq!(utc_compact(0), "19700101T000000Z");
        // A leap day, the last second of a year, and a time before 1970.
        assert_eq!(utc_compact(1_709_164_800_000_000_000), "20240229T000000Z");
        assert_eq!(utc_compact(1_735_689_599_999_999_999), "20241231T235959Z");
        assert_eq!(utc_compact(-1), "19691231T235959Z");
    }

    #[test]
    fn the_same_content_hashes_the_same_and_another_differs() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        // Over 2 MiB: the middle is not read, the ends are.
        let mut bytes = vec![7u8; 3 << 20];
        std::fs::write(&a, &bytes).unwrap();
        std::fs::write(&b, &bytes).unwrap();
        *bytes.last_mut().unwrap() = 8;
        std::fs::write(&c, &bytes).unwrap();
        let h = |p: &std::path::Path| content_hash(p).unwrap();
        assert_eq!(h(&a), h(&b));
        assert_ne!(h(&a), h(&c));
    }
}
