//! `jitterlab revert`.

use std::path::PathBuf;

use clap::Args;
use jitterlab_host::partition::{revert, revert_status, LiveSystem, DEFAULT_STATE_DIR};
use jitterlab_host::Root;

use crate::cli::{Color, JsonOut};
use crate::exit::{Error, Result};
use crate::output::emit;

/// `jitterlab revert`.
#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: 0 when everything was undone or there was nothing to undo, 1 when an undo failed or something differs from before isolate."
)]
pub struct RevertArgs {
    /// Where the journal is.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    #[command(flatten)]
    pub json: JsonOut,
}

pub fn run(root: &Root, args: RevertArgs, color: Color) -> Result {
    if !root.is_live() {
        return Err(Error::usage(
            "revert changes the live machine; it cannot take --root",
        ));
    }
    let report = revert(&mut LiveSystem::new(), &args.state_dir)?;
    emit(&report, &args.json, color)?;
    Ok(revert_status(report.as_ref()).into())
}
