//! Reader errors: where in which source, and what was expected there.

use std::fmt;

/// Where in a source a problem was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// A byte offset from the start of the file (binary formats).
    Offset(u64),
    /// A 1-based line number (text formats).
    Line(u64),
    /// The whole source (e.g. it is empty).
    Whole,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Offset(o) => write!(f, "byte offset {o}"),
            Location::Line(l) => write!(f, "line {l}"),
            Location::Whole => f.write_str("start"),
        }
    }
}

/// A decoding error: `SOURCE: LOCATION: expected ..., found ...`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {location}: {message}")]
pub struct Error {
    /// The file name, or a description such as "cpu 1 trace_pipe_raw".
    pub source_name: String,
    /// Where the problem is.
    pub location: Location,
    /// What was expected and what was found.
    pub message: String,
}

impl Error {
    /// An error at `location` in `source_name`.
    pub fn new(
        source_name: impl Into<String>,
        location: Location,
        message: impl Into<String>,
    ) -> Self {
        Error {
            source_name: source_name.into(),
            location,
            message: message.into(),
        }
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
