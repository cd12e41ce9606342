//! The use cases that join the engine to render's writers: each opens its input, runs
//! the trace's one pass (`jitterlab_analyze::engine`) with render's sinks or hands the
//! analysis to render's HTML page, and returns the model of what it wrote. The commands
//! call these as they call a library entry point; render below them only writes bytes.

pub mod convert;
pub mod view;

use std::io;
use std::path::PathBuf;

/// Why a use case wrote nothing, or not all of it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request contradicts itself, or the input is not what the use case takes
    /// (nothing was written).
    #[error("{0}")]
    Invalid(String),
    /// This input cannot be written in that format (nothing was written).
    #[error("{0}")]
    Unsupported(String),
    /// Reading the trace failed.
    #[error(transparent)]
    Trace(#[from] jitterlab_trace::Error),
    /// Reading the input or writing the output failed.
    #[error("{}: {cause}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        cause: io::Error,
    },
}
