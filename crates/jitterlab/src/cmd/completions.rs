//! `jitterlab completions SHELL`: the shell's completion script, generated from the
//! command line's definition (so every command and option is in it).

use std::io::{self, Write};

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::cli::Cli;
use crate::exit::{Exit, Result};

/// `jitterlab completions`.
#[derive(Args, Debug)]
#[command(
    after_help = "Install (one of):\n  jitterlab completions bash > /etc/bash_completion.d/jitterlab\n  jitterlab completions bash > ~/.local/share/bash-completion/completions/jitterlab\n  jitterlab completions zsh > \"${fpath[1]}/_jitterlab\"      # a directory in $fpath\n  jitterlab completions fish > ~/.config/fish/completions/jitterlab.fish\n\nOr for this shell only:\n  source <(jitterlab completions bash)"
)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(args: CompletionsArgs) -> Result {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "jitterlab", &mut script);
    let mut out = io::stdout().lock();
    out.write_all(&script)
        .and_then(|()| out.flush())
        .map_err(crate::output::stdout_error)?;
    Ok(Exit::Ok)
}
