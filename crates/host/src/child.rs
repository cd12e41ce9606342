//! Child processes and signals: the one place where jitterlab blocks SIGINT and
//! SIGTERM in itself (so that a run ends cleanly with its results), starts
//! commands with every signal unblocked again, waits for a run to end, and ends a
//! command it started (SIGTERM, then SIGKILL).
//!
//! `record -- CMD`, `load -- CMD`, the load generators' `cmd:` loads and the
//! partition's restart of irqbalance use it; `pin -- CMD` and `run -- CMD` replace
//! the process instead ([`crate::pin::exec_pinned`]) and give the shell's status of
//! a command that could not start ([`spawn_status`]).

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it
/// starts afterwards) and returns a flag that a waiting thread sets when one
/// arrives: the run then ends cleanly, with its results. Call it before starting
/// any thread.
pub fn cancel_on_signals() -> Arc<AtomicBool> {
    let cancel = Arc::new(AtomicBool::new(false));
    // SAFETY: plain signal-set manipulation on a zeroed sigset_t.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let flag = Arc::clone(&cancel);
    std::thread::spawn(move || {
        let mut sig = 0;
        // SAFETY: set is a valid, initialised sigset_t.
        if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
            flag.store(true, Ordering::Relaxed);
        }
    });
    cancel
}

/// A command for `program` whose process starts with no signal blocked, whatever
/// the caller blocked: the CLI blocks SIGINT and SIGTERM in itself to end its runs
/// cleanly, and a child would keep that mask across `exec` and ignore Ctrl-C.
pub fn child_command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(unblock_signals);
    }
    cmd
}

/// Ends a child: SIGTERM (to its process group when `group`, as for a child put in
/// a group of its own), then SIGKILL after 1 s; returns how it ended. A child that
/// has ended already is only reaped.
pub fn end_child(
    child: &mut std::process::Child,
    group: bool,
) -> io::Result<std::process::ExitStatus> {
    if let Some(status) = child.try_wait()? {
        return Ok(status);
    }
    let target = if group {
        -(child.id() as libc::pid_t)
    } else {
        child.id() as libc::pid_t
    };
    // SAFETY: signalling our own child (or its group), not reaped yet.
    unsafe { libc::kill(target, libc::SIGTERM) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            // SAFETY: as above.
            unsafe { libc::kill(target, libc::SIGKILL) };
            break child.wait()?;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    if group {
        // SAFETY: as above; ends any member of the group still running.
        unsafe { libc::kill(target, libc::SIGKILL) };
    }
    Ok(status)
}

/// Unblocks every signal in the calling thread; async-signal-safe, for `pre_exec`.
pub fn unblock_signals() -> io::Result<()> {
    // SAFETY: an emptied sigset_t, passed by pointer to sigprocmask.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// What ended a run that waits on a command (`record -- CMD`, `load -- CMD`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndedBy {
    /// SIGINT or SIGTERM (Ctrl-C).
    Signal,
    /// The duration asked for passed.
    Duration,
    /// The command ended by itself.
    Command,
    /// Tracing was turned off (by `latency --break`, or by hand).
    TracingOff,
}

impl EndedBy {
    /// The name the result models give it: `signal`, `duration`, `command`, `tracing off`.
    pub fn name(self) -> &'static str {
        match self {
            EndedBy::Signal => "signal",
            EndedBy::Duration => "duration",
            EndedBy::Command => "command",
            EndedBy::TracingOff => "tracing off",
        }
    }
}

/// How a run that waits on a command ended.
#[derive(Debug)]
pub struct Ended {
    /// What ended it.
    pub by: EndedBy,
    /// The command's status when it ended by itself.
    pub exit: Option<ExitStatus>,
}

/// Waits, polling every 20 ms, until a signal arrives (`cancel`), the deadline
/// passes, the command ends, or `more` names another reason to stop.
pub fn wait_for_end(
    cancel: &AtomicBool,
    deadline: Option<Instant>,
    mut child: Option<&mut Child>,
    mut more: impl FnMut() -> crate::Result<Option<EndedBy>>,
) -> crate::Result<Ended> {
    loop {
        if cancel.load(Ordering::Relaxed) {
            return Ok(Ended {
                by: EndedBy::Signal,
                exit: None,
            });
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Ended {
                by: EndedBy::Duration,
                exit: None,
            });
        }
        if let Some(c) = child.as_deref_mut() {
            let waited = c.try_wait().map_err(|cause| crate::Error::Sys {
                what: "waiting for the command".into(),
                cause,
            })?;
            if let Some(status) = waited {
                return Ok(Ended {
                    by: EndedBy::Command,
                    exit: Some(status),
                });
            }
        }
        if let Some(by) = more()? {
            return Ok(Ended { by, exit: None });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A shell's status for a command that could not be started: 127 not found, 126
/// not runnable, else 1.
pub fn spawn_status(err: &io::Error) -> u8 {
    match err.raw_os_error() {
        Some(libc::ENOENT) => 127,
        Some(libc::EACCES) | Some(libc::ENOEXEC) => 126,
        _ => 1,
    }
}

/// A status as a shell gives it for a command that ran: its exit code, or 128 +
/// the signal that ended it.
pub fn shell_status(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(sig)) => (128 + sig) as u8,
        _ => 1,
    }
}
