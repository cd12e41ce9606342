//! What `jitterlab convert` wrote ([`Conversion`]; its text is in
//! `export/text/convert.rs`). The conversion itself (the input's one pass into render's
//! Perfetto writers, or a .dat copy) is the binary's (`app/convert.rs`).

use serde::Serialize;

use crate::export::{PerfettoCounts, PftraceCounts};

/// The result of a conversion.
#[derive(Clone, Debug, Serialize)]
pub struct Conversion {
    /// The input file.
    pub input: String,
    /// Its format, as the reader describes it.
    pub input_format: String,
    /// The output file.
    pub output: String,
    /// Its format.
    pub output_format: String,
    /// Bytes written.
    pub bytes: u64,
    /// What the Chrome JSON holds, for that output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perfetto: Option<PerfettoCounts>,
    /// What the Perfetto protobuf trace holds, for that output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pftrace: Option<PftraceCounts>,
    /// What the user should know about the output (an export that holds nothing).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}
