//! The `jitterlab` binary: the command line. Each command parses its arguments, calls one
//! library entry point, hands the result model to a renderer and maps the outcome to an
//! exit status ([`exit`]); it reads nothing itself, computes nothing and formats nothing.
//! Where a command joins the engine to render's writers (`view`, `convert`), the [`app`]
//! module does it: opens the input, runs the trace's one pass into the writer, and hands
//! back the model; render itself opens nothing and runs no pass.

mod app;
mod cli;
mod cmd;
mod exit;
mod files;
mod output;
mod progress;

/// `jitterlab --version`: the version and the commit it was built from (`unknown` when
/// built outside a git clone), e.g. `0.1.0 (commit 1a2b3c4)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("JITTERLAB_COMMIT"),
    ")"
);

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    match cmd::run(cli) {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(err) if err.is_broken_pipe() => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("jitterlab: {err}");
            if err.wants_root() && !jitterlab_host::running_as_root() {
                eprintln!(
                    "jitterlab: this needs root (tracefs, /proc/irq, cpusets and real-time \
                     scheduling are root's): run it as root, e.g. with sudo"
                );
            }
            ExitCode::from(err.code())
        }
    }
}

/// Prints what clap says instead of running (help, version, a usage error) and gives its
/// status; help and version written to a full stdout are an error (status 1), to a
/// closed one a quiet success, as every command's output.
fn clap_exit(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    use std::io::Write;
    if !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        // Usage errors go to stderr, status 2.
        let _ = e.print();
        if let Some(file) = json_file_without_equals(e) {
            eprintln!(
                "\nnote: --json takes its file after `=`: --json={file} writes the JSON there \
                 (and the text to stdout); --json alone prints the JSON instead of the text"
            );
        }
        return ExitCode::from(2);
    }
    use std::io::IsTerminal;
    let mut out = std::io::stdout().lock();
    let text = if out.is_terminal() {
        e.render().ansi().to_string()
    } else {
        e.render().to_string()
    };
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("jitterlab: cannot write standard output: {err}");
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    }
}

/// The word after a `--json` that clap refused as an unexpected argument: the file of
/// `--json FILE`, the spelling `latency` and `audit` once took.
fn json_file_without_equals(e: &clap::Error) -> Option<String> {
    use clap::error::ErrorKind;
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == "--json")?;
    let next = args.get(i + 1).filter(|a| !a.starts_with('-'))?;
    e.to_string()
        .contains(&format!("'{next}'"))
        .then(|| next.clone())
}
