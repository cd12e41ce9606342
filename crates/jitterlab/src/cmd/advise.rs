//! `jitterlab advise`.

use clap::Args;
use jitterlab_host::partition::advise;
use jitterlab_host::Root;

use crate::cli::{Color, JsonOut};
use crate::exit::{Exit, Result};
use crate::output::emit;

/// `jitterlab advise`.
#[derive(Args, Debug)]
pub struct AdviseArgs {
    /// The CPUs to isolate at boot.
    #[arg(value_name = "CPUS")]
    pub cpus: String,
    #[command(flatten)]
    pub json: JsonOut,
}

pub fn run(root: &Root, args: AdviseArgs, color: Color) -> Result {
    let cpus = super::online_cpus(root, &args.cpus)?;
    emit(&advise(root, &cpus)?, &args.json, color)?;
    Ok(Exit::Ok)
}
