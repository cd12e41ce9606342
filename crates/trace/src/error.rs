//! Reader errors: what class of problem, where in which source, and what was expected there.

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

/// What class of problem an [`Error`] reports, for code that reacts to errors (tests,
/// exit codes) without reading their message. The message says the details.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The source could not be opened, read or written: the operating system's error is
    /// in the message.
    Io,
    /// The source is not a trace this crate reads: an empty file, a .dat file without the
    /// trace-cmd magic, or text in none of the known text formats.
    UnknownFormat,
    /// A trace this crate recognises but does not read: a .dat file version other than 6
    /// or 7, a compression other than zstd or zlib, latency (non-flyrecord) data.
    Unsupported,
    /// The source ends (or a section, chunk or page ends) before a structure it
    /// announces is complete: a header, a size-prefixed block, a CPU's data, a record.
    Truncated,
    /// A field of a binary trace has an impossible value: a size, offset or page size that
    /// does not fit, a tag or section id other than the one the layout demands, an option
    /// chain that loops, a record that does not decode against the file's own formats.
    Corrupt,
    /// A tracefs format text is malformed or describes a layout this reader does not
    /// handle: an event `format` file, `header_page` or `header_event`.
    Format,
    /// Compressed data does not decompress (zstd or zlib fails), or does not inflate to
    /// the size the file gives.
    Decompress,
    /// A value is above a sanity limit of this reader: the CPU count or a CPU number, a
    /// decompressed chunk size or the chunks held at once, what the compressed sections
    /// of a file inflate to, the entries of its kallsyms, printk formats or saved
    /// cmdlines, a text line's length, a function_graph call depth.
    Limit,
    /// A line of a text trace does not parse as the format's line (prefix, event,
    /// fields).
    Syntax,
    /// A text trace's events are out of time order by more than the reorder window.
    OutOfOrder,
    /// The caller asked for something the source does not have: a buffer index out of
    /// range, the lines of a trace that is not text.
    InvalidArgument,
}

impl ErrorKind {
    /// A short name for the kind, as in the docs: "io", "truncated", ...
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Io => "io",
            ErrorKind::UnknownFormat => "unknown format",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Truncated => "truncated",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Format => "format",
            ErrorKind::Decompress => "decompress",
            ErrorKind::Limit => "limit",
            ErrorKind::Syntax => "syntax",
            ErrorKind::OutOfOrder => "out of order",
            ErrorKind::InvalidArgument => "invalid argument",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A decoding error: `SOURCE: LOCATION: expected ..., found ...`. The kind is not part of
/// the text; match on [`Error::kind`] instead of the message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {location}: {message}")]
pub struct Error {
    /// What class of problem this is.
    pub kind: ErrorKind,
    /// The file name, or a description such as "cpu 1 trace_pipe_raw".
    pub source_name: String,
    /// Where the problem is.
    pub location: Location,
    /// What was expected and what was found.
    pub message: String,
}

impl Error {
    /// An error of `kind` at `location` in `source_name`.
    pub fn new(
        kind: ErrorKind,
        source_name: impl Into<String>,
        location: Location,
        message: impl Into<String>,
    ) -> Self {
        Error {
            kind,
            source_name: source_name.into(),
            location,
            message: message.into(),
        }
    }

    /// What class of problem this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
