//! `jitterlab man`: the man pages, generated from the command line's definition: one
//! per command and sub-command (`jitterlab.1`, `jitterlab-latency.1`,
//! `jitterlab-irq-set.1`, ...), printed or written to a directory.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory};
use clap_mangen::Man;

use crate::cli::Cli;
use crate::exit::{Error, Exit, Result};
use crate::files::Files;

/// `jitterlab man`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  jitterlab man | man -l -                        # read jitterlab(1)\n  jitterlab man latency | man -l -                # read jitterlab-latency(1)\n  jitterlab man --dir /usr/local/share/man/man1   # install them all, then: man jitterlab-latency"
)]
pub struct ManArgs {
    /// The command whose page to print (`latency`, `irq set`); default jitterlab(1).
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Write the page of the command and of each of its sub-commands (every page, without
    /// a COMMAND) into DIR, created if need be, and print their names.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

impl ManArgs {
    /// The files it reads and writes, for [`crate::files::guard`].
    pub fn files(&self) -> Files<'_> {
        let mut f = Files::default();
        f.output_dir_opt(self.dir.as_ref());
        f
    }
}

pub fn run(args: ManArgs) -> Result {
    let mut cmd = Cli::command();
    cmd.build(); // names each sub-command `jitterlab-irq-set`
    for name in &args.command {
        cmd = match cmd.find_subcommand(name) {
            Some(sub) => sub.clone(),
            None => {
                return Err(Error::usage(format!(
                    "no command {name:?}; see jitterlab --help"
                )))
            }
        };
    }
    let mut out = io::stdout().lock();
    match &args.dir {
        None => Man::new(cmd)
            .render(&mut out)
            .map_err(crate::output::stdout_error)?,
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| anyhow::anyhow!("--dir {}: {e}", dir.display()))?;
            for path in write_pages(cmd, dir)? {
                writeln!(out, "{}", path.display()).map_err(crate::output::stdout_error)?;
            }
        }
    }
    out.flush().map_err(crate::output::stdout_error)?;
    Ok(Exit::Ok)
}

/// The pages of `cmd` and its visible sub-commands, depth first, written into `dir`.
fn write_pages(cmd: clap::Command, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        written.extend(write_pages(sub.clone(), dir)?);
    }
    let man = Man::new(cmd);
    let path = man
        .generate_to(dir)
        .map_err(|e| anyhow::anyhow!("{}: {e}", dir.join(man.get_filename()).display()))?;
    written.insert(0, path);
    Ok(written)
}
