//! `jitterlab isolate`, `revert`, `verify`, `run` and `advise`: one file per view.

mod advise;
mod plan;
mod revert;
mod verify;

use std::io::{self, Write};

use jitterlab_host::partition::Placement;

use crate::{Render, Style};

impl Render for Placement {
    const SCHEMA: &'static str = "jitterlab.run";

    fn text(&self, out: &mut dyn Write, _style: &Style) -> io::Result<()> {
        writeln!(out, "jitterlab: on CPU {}, {}", self.cpus, self.how)
    }
}
