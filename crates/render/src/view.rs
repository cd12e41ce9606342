//! What `jitterlab view` shows and wrote: a saved result read from its bytes
//! ([`SavedResult::from_json`]), the model of what was written ([`Viewed`]; its text is in
//! `export/text/view.rs`), and [`write_html`], a model as one HTML report ([`Html`]).
//! Opening the input and running the pass are the binary's (`app/view.rs`).

use std::path::{Path, PathBuf};

use jitterlab_analyze::analysis::timeline::LeftOut;
use serde::Serialize;

use crate::export::{Exporter, Html, HtmlModel, SavedResult, Target};

/// The schemas of saved results the viewer shows.
pub const VIEWABLE: [&str; 4] = [
    "jitterlab.latency",
    "jitterlab.analyze",
    "jitterlab.experiment",
    "jitterlab.audit",
];

impl SavedResult {
    /// A result saved by `--json`, named `name` in errors: an envelope of one of the
    /// [`VIEWABLE`] schemas at version 1.
    pub fn from_json(name: &str, bytes: &[u8]) -> Result<SavedResult, String> {
        let envelope: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            let at = format!(" at line {} column {}", e.line(), e.column());
            let what = e.to_string();
            format!(
                "{name}: line {}, column {}: {}; expected a result saved with --json",
                e.line(),
                e.column(),
                what.strip_suffix(&at).unwrap_or(&what)
            )
        })?;
        jitterlab_parquet::check_envelope(&envelope, &VIEWABLE)
            .map_err(|e| format!("{name}: {e}"))?;
        Ok(SavedResult { envelope })
    }
}

/// What `view` wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Viewed {
    /// The report.
    pub output: PathBuf,
    /// Its size, bytes.
    pub bytes: u64,
    /// What it shows (of A, on a compare page).
    #[serde(flatten)]
    pub shown: Shown,
    /// A compare page's B (`view A B`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compared: Option<Box<Shown>>,
}

/// What a report shows of one input.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Shown {
    /// The input's name, on a compare page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The schema of the result shown (`jitterlab.analyze` for a trace).
    pub schema: String,
    /// CPUs in the timeline (0 for a saved result).
    pub cpus: usize,
    /// Task slices in the timeline.
    pub slices: u64,
    /// Wake-ups in the timeline.
    pub wakes: u64,
    /// IRQ and softirq spans in the timeline.
    pub spans: u64,
    /// What did not fit under `max_slices`.
    pub left_out: Option<LeftOut>,
}

/// Writes `model` as the HTML report `page` (its title, its pinned rows) to `output`
/// (`-`: stdout); returns the bytes written.
pub fn write_html<M: HtmlModel>(
    model: &M,
    page: &Html,
    output: &Path,
) -> Result<u64, crate::ExportError> {
    let target = Target::from_arg(output);
    let err = |source| crate::ExportError {
        target: target.clone(),
        source,
    };
    let mut out = target.create().map_err(err)?;
    page.write(model, &mut out).map_err(err)?;
    out.finish().map_err(err)
}
