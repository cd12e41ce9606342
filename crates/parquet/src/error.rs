//! The export's errors: each names the file and what was expected.

use std::path::{Path, PathBuf};

/// An export that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read, created or renamed.
    #[error("{path}: {what}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The Parquet writer failed.
    #[error("{path}: writing {what}: {source}")]
    Parquet {
        /// The file being written.
        path: PathBuf,
        /// What was being written.
        what: String,
        /// The cause.
        source: parquet::errors::ParquetError,
    },
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] jitterlab_trace::Error),
    /// The dataset already holds an input's partition (an earlier export of the same host
    /// and run).
    #[error("{}: {} already holds host={host} run_id={run} (tables {tables}), from an earlier export; give another --run, or --replace to write it again", input.display(), dir.display())]
    Exists {
        /// The input.
        input: PathBuf,
        /// The dataset.
        dir: PathBuf,
        /// The host.
        host: String,
        /// The run.
        run: String,
        /// The tables that hold it.
        tables: String,
    },
    /// The dataset holds partitions of an older schema, whose layout differs.
    #[error("{}: the dataset holds a partition of schema 2 or older ({}, where schema 3 writes run_id=); export into a new directory, or export the old inputs again into it", dir.display(), found.display())]
    OlderSchema {
        /// The dataset.
        dir: PathBuf,
        /// One of its old partitions.
        found: PathBuf,
    },
    /// An input is not what was expected (a result file of another kind, a missing field).
    #[error("{}: {what}", path.display())]
    Input {
        /// The input.
        path: PathBuf,
        /// What was expected and found.
        what: String,
    },
}

impl Error {
    pub(crate) fn io(path: &Path, what: &str, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            what: what.to_string(),
            source,
        }
    }
    pub(crate) fn parquet(path: &Path, what: &str, source: parquet::errors::ParquetError) -> Error {
        Error::Parquet {
            path: path.to_path_buf(),
            what: what.to_string(),
            source,
        }
    }
    pub(crate) fn input(path: &Path, what: impl Into<String>) -> Error {
        Error::Input {
            path: path.to_path_buf(),
            what: what.into(),
        }
    }
}
