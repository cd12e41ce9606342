//! The text format: aligned tables and short lines for people, colour only when
//! [`Style::color`] is on. Each model's layout is its [`Render::text`], in one file per
//! command's view.

mod analyze;
mod audit;
mod change;
mod convert;
mod experiment;
mod export;
mod latency;
mod partition;
mod record;
mod show;
mod stats;
mod view;

pub use audit::AuditSummary;

use std::io::{self, Write};

use super::Exporter;
use crate::{Render, Style};

/// The text format, in a style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Text(pub Style);

impl<M: Render> Exporter<M> for Text {
    fn write(&self, model: &M, out: &mut dyn Write) -> io::Result<()> {
        model.text(out, &self.0)
    }
}

/// A lost-event count: `u64::MAX` is a saturated sum (at least that many), printed
/// `>= 18446744073709551615`.
pub(crate) fn lost_count(n: u64) -> String {
    if n == u64::MAX {
        format!(">= {n}")
    } else {
        n.to_string()
    }
}
