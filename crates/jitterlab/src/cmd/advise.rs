//! `jitterlab advise`.

use clap::Args;
use jitterlab_host::partition::advise;
use jitterlab_host::Root;

use crate::cli::Color;
use crate::exit::{Exit, Result};
use crate::output::{emit, format};

/// `jitterlab advise`.
#[derive(Args, Debug)]
pub struct AdviseArgs {
    /// The CPUs to isolate at boot.
    #[arg(value_name = "CPUS")]
    pub cpus: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(root: &Root, args: AdviseArgs, color: Color) -> Result {
    let cpus = super::online_cpus(root, &args.cpus)?;
    emit(&advise(root, &cpus)?, format(args.json, color))?;
    Ok(Exit::Ok)
}
