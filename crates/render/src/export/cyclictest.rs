//! cyclictest's `-h` histogram text (`latency --histogram-cyclictest FILE`), which
//! OSADL-style plotting scripts read: one row per microsecond, a column per thread, then
//! the Total / Min / Avg / Max / Overflows trailer. Overflow cycle numbers are not
//! tracked, so every overflow is listed as one of the "others".

use std::io::{self, Write};

use jitterlab_latency::CyclictestHistogram;

use super::Exporter;

/// The cyclictest histogram format.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cyclictest;

impl Exporter<CyclictestHistogram> for Cyclictest {
    fn write(&self, h: &CyclictestHistogram, out: &mut dyn Write) -> io::Result<()> {
        histogram(h, out)
    }
}

/// Writes `h` in cyclictest's format: the same as [`Cyclictest`]'s [`Exporter::write`].
pub fn write_cyclictest_histogram(h: &CyclictestHistogram, out: &mut dyn Write) -> io::Result<()> {
    histogram(h, out)
}

fn histogram(h: &CyclictestHistogram, out: &mut dyn Write) -> io::Result<()> {
    let cols =
        |v: &[u64], width: usize| -> String { v.iter().map(|n| format!(" {n:0width$}")).collect() };
    writeln!(out, "# Histogram")?;
    for (us, row) in h.rows.iter().enumerate() {
        let cells: Vec<String> = row.iter().map(|n| format!("{n:06}")).collect();
        writeln!(out, "{us:06} {}", cells.join("\t"))?;
    }
    let totals: Vec<u64> = (0..h.overflows.len())
        .map(|t| h.rows.iter().map(|r| r[t]).sum())
        .collect();
    writeln!(out, "# Total:{}", cols(&totals, 9))?;
    writeln!(out, "# Min Latencies:{}", cols(&h.min_us, 5))?;
    writeln!(out, "# Avg Latencies:{}", cols(&h.avg_us, 5))?;
    writeln!(out, "# Max Latencies:{}", cols(&h.max_us, 5))?;
    writeln!(out, "# Histogram Overflows:{}", cols(&h.overflows, 5))?;
    writeln!(out, "# Histogram Overflow at cycle number:")?;
    for (t, o) in h.overflows.iter().enumerate() {
        if *o > 0 {
            writeln!(out, "# Thread {t}: # {o:05} others")?;
        } else {
            writeln!(out, "# Thread {t}:")?;
        }
    }
    Ok(())
}
