//! One file per command: its arguments (`XxxArgs`) and `run`, which calls one library
//! entry point, hands the result model to a renderer and returns the exit status.
//! Commands do not call each other; what several need is here or in `cli`.

pub mod advise;
pub mod analyze;
pub mod audit;
pub mod completions;
pub mod convert;
pub mod experiment;
pub mod export;
pub mod irq;
pub mod isolate;
pub mod latency;
pub mod load;
pub mod man;
pub mod pin;
pub mod record;
pub mod report;
pub mod revert;
pub mod run;
pub mod show;
pub mod verify;
pub mod view;

use jitterlab_cpuset::CpuSet;
use jitterlab_host::Root;

use crate::cli::{Cli, Command, JsonOut};
use crate::exit::{Error, Exit, Result};
use crate::files::Files;

/// Runs a command; the exit status on success.
pub fn run(cli: Cli) -> Result {
    let root = match &cli.root {
        Some(dir) => Root::at(dir),
        None => Root::live(),
    };
    let color = cli.color;
    crate::progress::init(cli.quiet);
    crate::files::guard(&files(&cli.command))?;
    match cli.command {
        Command::Show(args) => show::run(&root, args, color),
        Command::Pin(args) => pin::run(&root, args, color),
        Command::Irq(args) => irq::run(&root, args, color),
        Command::Latency(args) => latency::run(&root, args, color),
        Command::Load(args) => load::run(&root, args, color),
        Command::Isolate(args) => isolate::run(&root, args, color),
        Command::Revert(args) => revert::run(&root, args, color),
        Command::Verify(args) => verify::run(&root, args, color),
        Command::Run(args) => run::run(&root, args),
        Command::Advise(args) => advise::run(&root, args, color),
        Command::Record(args) => record::run(&root, args, color),
        Command::Report(args) => report::run(args, color),
        Command::Analyze(args) => analyze::run(args, color),
        Command::Convert(args) => convert::run(args, color),
        Command::View(args) => view::run(args, color),
        Command::Experiment(args) => experiment::run(&root, args, color),
        Command::Audit(args) => audit::run(&root, args, color),
        Command::Export(args) => export::run(args, color),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
        Command::Help(args) => help(&args.command),
    }
}

/// The files a command reads and writes, as its arguments name them, with the file of
/// its `--json=FILE`.
fn files(command: &Command) -> Files<'_> {
    let mut files = own_files(command);
    files.output_opt(json(command).and_then(JsonOut::file));
    files
}

/// The `--json[=FILE]` of a command that prints a result.
fn json(command: &Command) -> Option<&JsonOut> {
    Some(match command {
        Command::Show(a) => &a.json,
        Command::Pin(a) => &a.json,
        Command::Irq(a) => match &a.action {
            irq::IrqAction::Set { json, .. } | irq::IrqAction::Default { json, .. } => json,
        },
        Command::Latency(a) => &a.json,
        Command::Load(a) => &a.json,
        Command::Isolate(a) => &a.json,
        Command::Revert(a) => &a.json,
        Command::Verify(a) => &a.json,
        Command::Run(a) => &a.json,
        Command::Advise(a) => &a.json,
        Command::Record(a) => &a.json,
        Command::Report(a) => &a.json,
        Command::Analyze(a) => &a.json,
        Command::Convert(a) => &a.json,
        Command::View(a) => &a.json,
        Command::Experiment(a) => &a.json,
        Command::Audit(a) => &a.json,
        Command::Export(a) => &a.json,
        Command::Completions(_) | Command::Man(_) | Command::Help(_) => return None,
    })
}

/// The files of a command's own options and arguments.
fn own_files(command: &Command) -> Files<'_> {
    match command {
        Command::Analyze(a) => a.files(),
        Command::Audit(a) => a.files(),
        Command::Convert(a) => a.files(),
        Command::Experiment(a) => a.files(),
        Command::Export(a) => a.files(),
        Command::Latency(a) => a.files(),
        Command::Man(a) => a.files(),
        Command::Record(a) => a.files(),
        Command::Report(a) => a.files(),
        Command::View(a) => a.files(),
        _ => Files::default(),
    }
}

/// `jitterlab help [COMMAND...]`: the long help of the command named.
fn help(path: &[String]) -> Result {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    cmd.build(); // names every sub-command as `jitterlab show irqs` in its usage
    for name in path {
        cmd = match cmd.find_subcommand(name) {
            Some(sub) => sub.clone(),
            None => {
                return Err(Error::usage(format!(
                    "no command {name:?}; see jitterlab --help"
                )))
            }
        };
    }
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    write!(out, "{}", cmd.render_long_help())
        .and_then(|()| out.flush())
        .map_err(crate::output::stdout_error)?;
    Ok(Exit::Ok)
}

/// A CPU list argument whose CPUs must all exist and be online.
fn online_cpus(root: &Root, arg: &str) -> Result<CpuSet> {
    let set = CpuSet::parse_list(arg).map_err(|e| Error::usage(e.to_string()))?;
    jitterlab_host::cpus::check_online(root, &set)?;
    Ok(set)
}

/// `pin -- CMD` and `run -- CMD`: this process replaced by the command on `cpus`;
/// returns only when it could not start, with a shell's status (127 not found, 126 not
/// runnable).
fn exec(
    argv: &[std::ffi::OsString],
    cpus: &CpuSet,
    sched: Option<jitterlab_host::pin::Sched>,
) -> Result {
    match jitterlab_host::exec_pinned(argv, cpus, sched) {
        jitterlab_host::Error::Invalid(m) => Err(Error::Usage(m)),
        err => {
            eprintln!("jitterlab: {err}");
            Ok(jitterlab_host::exec_status(&err).into())
        }
    }
}
