//! `jitterlab export`: what was written, per input.

use std::io::{self, Write};

use jitterlab_parquet::ExportReport;

use crate::table::{Col, Table};
use crate::{Render, Style};

impl Render for ExportReport {
    const SCHEMA: &'static str = "jitterlab.export";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let mut t = Table::new([
            Col::left("INPUT"),
            Col::left("HOST"),
            Col::left("RUN ID"),
            Col::left("KERNEL"),
            Col::right("TABLES"),
            Col::right("ROWS"),
            Col::right("BYTES"),
        ]);
        let (mut rows, mut bytes) = (0u64, 0u64);
        for s in &self.exports {
            let r: u64 = s.files.iter().map(|f| f.rows).sum();
            let b: u64 = s.files.iter().map(|f| f.bytes).sum();
            rows += r;
            bytes += b;
            t.row([
                s.input.clone(),
                s.host.clone(),
                s.run_id.clone(),
                s.kernel.clone().unwrap_or_else(|| "-".into()),
                s.files.len().to_string(),
                r.to_string(),
                b.to_string(),
            ]);
        }
        t.write(out, style)?;
        writeln!(
            out,
            "{} inputs, {rows} rows, {bytes} bytes under {}/TABLE/host=HOST/run_id=RUN/part.parquet",
            self.exports.len(),
            self.dir.display()
        )
    }
}
