//! `jitterlab revert`.

use std::path::PathBuf;

use clap::Args;
use jitterlab_host::partition::{revert, LiveSystem, DEFAULT_STATE_DIR};
use jitterlab_host::{Error, Root};

use crate::cli::Color;
use crate::output::{emit, format};
use crate::{EXIT_FAILED, EXIT_OK};

/// `jitterlab revert`.
#[derive(Args, Debug)]
pub struct RevertArgs {
    /// Where the journal is.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(root: &Root, args: RevertArgs, color: Color) -> anyhow::Result<u8> {
    if !root.is_live() {
        return Err(Error::Invalid(
            "revert changes the live machine; it cannot take --root".into(),
        )
        .into());
    }
    let report = revert(&mut LiveSystem::new(), &args.state_dir)?;
    emit(&report, format(args.json, color))?;
    Ok(match report {
        Some(r) if r.failures() > 0 || !r.differences.is_empty() => EXIT_FAILED,
        _ => EXIT_OK,
    })
}
