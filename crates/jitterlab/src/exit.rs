//! How a command ends: the documented exit statuses, and the one error type of the
//! binary, which carries its status.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | partly failed (a thread or IRQ was refused, an IRQ's mask altered or unknown, an `isolate` step or an undo failed, an experiment interrupted or not restored), or a runtime failure |
//! | 2 | usage error or invalid request: nothing was changed |
//! | 3 | a limit was hit: a latency above `--fail-above`, a run ended by `--break`, a CPU that `verify` finds not isolated, an RT CPU `audit` finds unfit |
//! | N | `load -- CMD`, `pin -- CMD`, `run -- CMD`: the command's own status (127 not found, 126 not runnable, 128 + signal) |
//!
//! Which of them a result gives is the result model's to say (its `status()`, a
//! [`Status`]); a command maps it with `Exit::from` and never works it out itself.

use std::fmt;
use std::io;

use jitterlab_host::Status;

/// A command's documented exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: success.
    Ok,
    /// 1: partly failed.
    Failed,
    /// 2: the request is invalid, and the result shown says why (`isolate`'s plan with
    /// its refusals); nothing was changed.
    Invalid,
    /// 3: a limit was hit.
    Limit,
    /// A started command's own status, as a shell gives it.
    Command(u8),
}

impl Exit {
    /// The process exit status.
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Failed => 1,
            Exit::Invalid => 2,
            Exit::Limit => 3,
            Exit::Command(c) => c,
        }
    }
}

/// A result model's own status, as the process exit status: the one mapping from what
/// a command's result says of it ([`Status`], from the model's `status()`) to the
/// documented statuses above. The commands never work it out from a model's contents.
impl From<Status> for Exit {
    fn from(status: Status) -> Exit {
        match status {
            Status::Ok => Exit::Ok,
            Status::Failed => Exit::Failed,
            Status::Invalid => Exit::Invalid,
            Status::Limit => Exit::Limit,
            Status::Command(c) => Exit::Command(c),
        }
    }
}

/// Why a command failed, with the status it exits with.
#[derive(Debug)]
pub enum Error {
    /// Status 2: a usage error or an invalid request, found before anything changed.
    Usage(String),
    /// Status 1: a runtime failure.
    Failed(anyhow::Error),
}

impl Error {
    /// A usage error.
    pub fn usage(message: impl Into<String>) -> Error {
        Error::Usage(message.into())
    }

    /// The exit status.
    pub fn code(&self) -> u8 {
        match self {
            Error::Usage(_) => 2,
            Error::Failed(_) => 1,
        }
    }

    /// Whether the failure is the kernel refusing an unprivileged user (EACCES, EPERM on
    /// tracefs, /proc/irq, cgroups...) and the message does not already say what to do.
    pub fn wants_root(&self) -> bool {
        let Error::Failed(e) = self else {
            return false;
        };
        let denied = |code: Option<i32>| matches!(code, Some(libc::EACCES) | Some(libc::EPERM));
        let refused = e.chain().any(|e| {
            e.downcast_ref::<io::Error>().is_some_and(|e| {
                e.kind() == io::ErrorKind::PermissionDenied || denied(e.raw_os_error())
            }) || e
                .downcast_ref::<jitterlab_host::Error>()
                .is_some_and(|e| denied(e.raw_os_error()))
        });
        refused && !format!("{e:#}").contains("root")
    }

    /// Whether the failure is a closed stdout (`jitterlab show | head`), which is not a
    /// failure.
    pub fn is_broken_pipe(&self) -> bool {
        match self {
            Error::Usage(_) => false,
            Error::Failed(e) => e.chain().any(|e| {
                e.downcast_ref::<io::Error>()
                    .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            }),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => f.write_str(m),
            Error::Failed(e) => write!(f, "{e:#}"),
        }
    }
}

impl From<jitterlab_host::Error> for Error {
    fn from(e: jitterlab_host::Error) -> Error {
        match e {
            jitterlab_host::Error::Invalid(m) => Error::Usage(m),
            e => Error::Failed(e.into()),
        }
    }
}

impl From<jitterlab_latency::Error> for Error {
    fn from(e: jitterlab_latency::Error) -> Error {
        match e {
            jitterlab_latency::Error::Invalid(m) => Error::Usage(m),
            jitterlab_latency::Error::Host(h) => h.into(),
            e => Error::Failed(e.into()),
        }
    }
}

impl From<jitterlab_parquet::Error> for Error {
    fn from(e: jitterlab_parquet::Error) -> Error {
        match e {
            // An input that is not what export takes, or lacks what it needs (a host
            // name): found before anything is written.
            e @ (jitterlab_parquet::Error::Input { .. }
            | jitterlab_parquet::Error::Exists { .. }
            | jitterlab_parquet::Error::OlderSchema { .. }) => Error::Usage(e.to_string()),
            jitterlab_parquet::Error::Trace(t) => t.into(),
            e => Error::Failed(e.into()),
        }
    }
}

impl From<jitterlab_runner::Error> for Error {
    fn from(e: jitterlab_runner::Error) -> Error {
        match e {
            jitterlab_runner::Error::Invalid(m) => Error::Usage(m),
            e @ jitterlab_runner::Error::Recipe(_) => Error::Usage(e.to_string()),
            jitterlab_runner::Error::Host(h) => h.into(),
            jitterlab_runner::Error::Latency(l) => l.into(),
            e => Error::Failed(e.into()),
        }
    }
}

impl From<jitterlab_render::stream::StreamError> for Error {
    fn from(e: jitterlab_render::stream::StreamError) -> Error {
        use jitterlab_render::stream::StreamError;
        match e {
            StreamError::Read(e) => Error::Failed(e.into()),
            // The events go to stdout.
            StreamError::Write(e) => Error::Failed(crate::output::stdout_error(e).into()),
            // JSON lines on stdout (`report --json`); a file's error is named by report.
            StreamError::WriteJson(e) => Error::Failed(crate::output::stdout_error(e).into()),
        }
    }
}

impl From<crate::app::Error> for Error {
    fn from(e: crate::app::Error) -> Error {
        match e {
            crate::app::Error::Trace(e) => e.into(),
            // A request that contradicts itself, or an input that is not what the use
            // case takes (as export's Input): nothing written.
            crate::app::Error::Invalid(m) => Error::Usage(m),
            e => Error::Failed(e.into()),
        }
    }
}

impl From<jitterlab_trace::Error> for Error {
    fn from(e: jitterlab_trace::Error) -> Error {
        match e.kind {
            // Asked for what the trace does not have (a --buffer it lacks): exit 2.
            jitterlab_trace::ErrorKind::InvalidArgument => Error::Usage(e.to_string()),
            _ => Error::Failed(e.into()),
        }
    }
}

/// Errors that are always runtime failures (status 1).
macro_rules! failed_from {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::Failed(e.into())
            }
        }
    )*};
}

failed_from!(jitterlab_render::ExportError, io::Error, anyhow::Error);
failed_from!(serde_json::Error);

/// The result of a command.
pub type Result<T = Exit> = std::result::Result<T, Error>;
