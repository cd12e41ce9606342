//! Errors of reading and writing the host.

use std::io;
use std::path::PathBuf;

/// A failure to read, parse or change the host's state.
///
/// Every variant names the file (and line, where it applies) or the task it
/// concerns, and what was expected, so that the message alone tells a user
/// what to look at.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or written.
    #[error("{}: {cause}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said (shown in the message, so not a `source()`).
        cause: io::Error,
    },
    /// A file's content was not what the kernel writes there.
    #[error("{}:{line}: expected {expected}, found {found:?}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number (1 for one-line files).
        line: usize,
        /// What the parser expected.
        expected: String,
        /// The offending text (shortened).
        found: String,
    },
    /// A table with more rows or values than the kernel writes in its file (a `--root`
    /// tree's made-up /proc/interrupts): refused at the line that crosses the bound,
    /// before any row is stored.
    #[error("{}:{line}: {found}; expected {expected}", path.display())]
    Oversized {
        /// The file.
        path: PathBuf,
        /// 1-based line number of the row past the bound.
        line: usize,
        /// What was found: `more than 300000 IRQ rows`.
        found: String,
        /// What the kernel writes there.
        expected: String,
    },
    /// A file is larger than the bound its reader allows: no /proc or /sys file is
    /// (a `--root` tree's file may be a link to `/dev/zero`, or just a huge file).
    #[error("{}: more than {limit} bytes, the most read from this file (not a kernel file?)", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The bound, in bytes.
        limit: u64,
    },
    /// A file that is not a regular file (a FIFO, a device, a socket, a directory):
    /// /proc and /sys files are regular files, and reading a FIFO could block forever
    /// or a device never end.
    #[error("{}: {kind}, not a regular file: refused (/proc and /sys files are regular files)", path.display())]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is: `a FIFO`, `a character device`, ...
        kind: &'static str,
    },
    /// A CPU set in a file or argument did not parse.
    #[error("{}: {cause}", path.display())]
    CpuSet {
        /// The file the set was read from.
        path: PathBuf,
        /// The parse failure, with its column.
        cause: jitterlab_cpuset::ParseError,
    },
    /// A request that cannot be honoured, found before anything was changed.
    #[error("{0}")]
    Invalid(String),
    /// A system call on a task or IRQ failed.
    #[error("{what}: {cause}")]
    Sys {
        /// What was being done, e.g. `sched_setaffinity(tid 1234, 0-1)`.
        what: String,
        /// The errno.
        cause: io::Error,
    },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Io {
            path: path.into(),
            cause: source,
        }
    }

    pub(crate) fn parse(
        path: impl Into<PathBuf>,
        line: usize,
        expected: impl Into<String>,
        found: &str,
    ) -> Error {
        let mut found = found.to_string();
        if found.len() > 80 {
            let mut cut = 77;
            while !found.is_char_boundary(cut) {
                cut -= 1;
            }
            found.truncate(cut);
            found.push_str("...");
        }
        Error::Parse {
            path: path.into(),
            line,
            expected: expected.into(),
            found,
        }
    }

    /// The OS error number behind this error, if any.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::Io { cause, .. } | Error::Sys { cause, .. } => cause.raw_os_error(),
            _ => None,
        }
    }

    /// Whether the file or task did not exist (ENOENT, ESRCH).
    pub fn is_not_found(&self) -> bool {
        matches!(self.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH))
            || matches!(self, Error::Io { cause, .. } if cause.kind() == io::ErrorKind::NotFound)
    }
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
