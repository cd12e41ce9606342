//! One file per command: each turns parsed arguments into library calls and
//! hands the result model to the renderer.

pub mod advise;
pub mod analyze;
pub mod convert;
mod irq;
pub mod isolate;
mod latency;
pub mod load;
mod pin;
pub mod record;
pub mod report;
pub mod revert;
pub mod run;
mod show;
pub mod verify;

use jitterlab_cpuset::CpuSet;
use jitterlab_host::{Error, Root};

use crate::cli::{Cli, Command};

/// Runs a command; the exit status on success.
pub fn run(cli: Cli) -> anyhow::Result<u8> {
    let root = match &cli.root {
        Some(dir) => Root::at(dir),
        None => Root::live(),
    };
    match cli.command {
        Command::Show(args) => show::run(&root, args, cli.color),
        Command::Pin(args) => pin::run(&root, args, cli.color),
        Command::Irq(args) => irq::run(&root, args, cli.color),
        Command::Latency(args) => latency::run(&root, args, cli.color),
        Command::Load(args) => load::run(&root, args, cli.color),
        Command::Isolate(args) => isolate::run(&root, args, cli.color),
        Command::Revert(args) => revert::run(&root, args, cli.color),
        Command::Verify(args) => verify::run(&root, args, cli.color),
        Command::Run(args) => run::run(&root, args),
        Command::Advise(args) => advise::run(&root, args, cli.color),
        Command::Record(args) => record::run(&root, args, cli.color),
        Command::Report(args) => report::run(args, cli.color),
        Command::Analyze(args) => analyze::run(args, cli.color),
        Command::Convert(args) => convert::run(args, cli.color),
    }
}

/// Parses a CPU list argument and checks that every CPU exists and is online.
fn online_cpus(root: &Root, arg: &str) -> anyhow::Result<CpuSet> {
    let set = CpuSet::parse_list(arg).map_err(|e| Error::Invalid(e.to_string()))?;
    jitterlab_host::cpus::check_online(root, &set)?;
    Ok(set)
}

/// What ended a run that waits on a command (`record -- CMD`, `load -- CMD`).
pub(crate) struct Ended {
    /// `signal`, `duration`, `command`, or what `more` said.
    pub by: &'static str,
    /// The command's status when it ended by itself.
    pub exit: Option<std::process::ExitStatus>,
}

/// Waits, polling every 20 ms, until a signal arrives (`cancel`), the deadline
/// passes, the command ends, or `more` names another reason to stop.
pub(crate) fn wait_for_end(
    cancel: &std::sync::atomic::AtomicBool,
    deadline: Option<std::time::Instant>,
    child: Option<&mut std::process::Child>,
    mut more: impl FnMut() -> anyhow::Result<Option<&'static str>>,
) -> anyhow::Result<Ended> {
    let mut child = child;
    loop {
        if cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(Ended {
                by: "signal",
                exit: None,
            });
        }
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Ok(Ended {
                by: "duration",
                exit: None,
            });
        }
        if let Some(c) = child.as_deref_mut() {
            if let Some(status) = c.try_wait()? {
                return Ok(Ended {
                    by: "command",
                    exit: Some(status),
                });
            }
        }
        if let Some(by) = more()? {
            return Ok(Ended { by, exit: None });
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
