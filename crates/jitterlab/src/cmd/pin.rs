//! `jitterlab pin`.

use std::os::unix::process::ExitStatusExt;

use jitterlab_host::pin::Sched;
use jitterlab_host::tasks::Policy;
use jitterlab_host::{pin_process, spawn_pinned, Error, Root};

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
        return Ok(if report.failures() > 0 {
            EXIT_FAILED
        } else {
            EXIT_OK
        });
    }
    if args.command.is_empty() {
        return Err(Error::Invalid(
            "pin needs -p PID (move a process) or -- CMD ARGS (start one)".into(),
        )
        .into());
    }
    let sched = match (args.policy, args.priority) {
        (None, None) => None,
        (policy, priority) => {
            let policy = match policy {
                Some(PolicyArg::Fifo) | None => Policy::Fifo,
                Some(PolicyArg::Rr) => Policy::Rr,
                Some(PolicyArg::Other) => Policy::Other,
                Some(PolicyArg::Batch) => Policy::Batch,
                Some(PolicyArg::Idle) => Policy::Idle,
            };
            let priority = priority.unwrap_or(if policy.is_realtime() { 50 } else { 0 });
            Some(Sched { policy, priority })
        }
    };
    let mut child = spawn_pinned(&args.command, &cpus, sched)?;
    let status = child.wait()?;
    Ok(match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(sig)) => 128 + sig as u8,
        (None, None) => EXIT_FAILED,
    })
}
