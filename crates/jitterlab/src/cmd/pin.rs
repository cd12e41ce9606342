//! `jitterlab pin`.

use jitterlab_host::pin::Sched;
use jitterlab_host::tasks::Policy;
use jitterlab_host::{exec_pinned, pin_process, Error, Root};

use crate::cli::{Color, Pin, PolicyArg};
use crate::output::{emit, format};
use crate::{EXIT_FAILED, EXIT_OK};

pub fn run(root: &Root, args: Pin, color: Color) -> anyhow::Result<u8> {
    if !root.is_live() {
        return Err(Error::Invalid("pin acts on live tasks; it cannot take --root".into()).into());
    }
    let cpus = super::online_cpus(root, &args.cpus)?;
    if let Some(pid) = args.pid {
        let report = pin_process(root, pid, args.tid, &cpus)?;
        emit(&report, format(args.json, color))?;
        // A refusal, or a process that exited before any thread could be moved.
        let failed = report.failures() > 0 || report.moved() == 0;
        return Ok(if failed { EXIT_FAILED } else { EXIT_OK });
    }
    if args.command.is_empty() {
        return Err(Error::Invalid(
            "pin needs -p PID (move a process) or -- CMD ARGS (start one)".into(),
        )
        .into());
    }
    exec(&args.command, &cpus, args.policy, args.priority)
}

/// Replaces this process with `argv` on `cpus`, with the policy and priority if
/// given (priority 50 for fifo and rr by default); returns only on failure, with
/// a shell's status: 127 when the command is not found, 126 when it cannot run.
pub(super) fn exec(
    argv: &[std::ffi::OsString],
    cpus: &jitterlab_cpuset::CpuSet,
    policy: Option<PolicyArg>,
    priority: Option<u32>,
) -> anyhow::Result<u8> {
    let sched = match (policy, priority) {
        (None, None) => None,
        (policy, priority) => {
            let policy = policy.map_or(Policy::Fifo, PolicyArg::policy);
            let priority = priority.unwrap_or(if policy.is_realtime() { 50 } else { 0 });
            Some(Sched { policy, priority })
        }
    };
    let err = exec_pinned(argv, cpus, sched);
    if matches!(err, Error::Invalid(_)) {
        return Err(err.into());
    }
    eprintln!("jitterlab: {err}");
    Ok(status_of(err.raw_os_error()))
}

/// A shell's status for a command that could not be started: 127 not found,
/// 126 not runnable.
pub(super) fn spawn_status(err: &std::io::Error) -> u8 {
    status_of(err.raw_os_error())
}

/// A status as a shell gives it for a command that ran: the exit code, or 128 +
/// the signal.
pub(super) fn shell_status(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(sig)) => (128 + sig) as u8,
        _ => EXIT_FAILED,
    }
}

fn status_of(errno: Option<i32>) -> u8 {
    match errno {
        Some(libc::ENOENT) => 127,
        Some(libc::EACCES) | Some(libc::ENOEXEC) => 126,
        _ => EXIT_FAILED,
    }
}
