//! SVG drawings: the latency histogram of `latency --plot`.
//!
//! One panel per CPU sharing a logarithmic latency axis, with logarithmic counts, so a
//! run's bulk and its rare spikes both show; the deadline, p99 and maximum are marked.
//! Self-contained SVG 1.1 (no script, no external font), readable in any browser and
//! pasteable into a report.

use std::io::{self, Write};

use jitterlab_latency::plot::{LatencyPlot, Series};

use super::{escape_markup, Exporter};
use crate::units::duration_ns;

const WIDTH: f64 = 960.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const HEADER: f64 = 70.0;
const PANEL: f64 = 190.0;
const GAP: f64 = 70.0;
/// The count axis starts half a sample down so that bins of one sample are visible.
const Y_FLOOR: f64 = 0.5;
const BAR: &str = "#3b6ea8";
const DEADLINE: &str = "#c0392b";
const P99: &str = "#d68910";
const MAX: &str = "#1c2833";

/// A decade of ns as a tick label: `1 us`, `10 us`, `100 us`, `1 ms`.
fn decade_label(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 => format!("{} s", n / 1_000_000_000),
        n if n >= 1_000_000 => format!("{} ms", n / 1_000_000),
        n if n >= 1_000 => format!("{} us", n / 1_000),
        n => format!("{n} ns"),
    }
}

/// Maps latency (ns) to x on a log axis.
struct XAxis {
    lo: f64,
    hi: f64,
}

impl XAxis {
    fn x(&self, ns: f64) -> f64 {
        let span = self.hi.log10() - self.lo.log10();
        LEFT + (ns.max(self.lo).log10() - self.lo.log10()) / span * (WIDTH - LEFT - RIGHT)
    }
}

/// Maps a count to y on a log axis inside a panel whose top is `top`.
struct YAxis {
    top: f64,
    max: f64,
}

impl YAxis {
    fn y(&self, count: f64) -> f64 {
        let span = self.max.log10() - Y_FLOOR.log10();
        self.top + PANEL - (count.max(Y_FLOOR).log10() - Y_FLOOR.log10()) / span * PANEL
    }
}

/// The SVG latency plot format.
#[derive(Clone, Copy, Debug, Default)]
pub struct Svg;

impl Exporter<LatencyPlot> for Svg {
    fn write(&self, plot: &LatencyPlot, out: &mut dyn Write) -> io::Result<()> {
        document(plot, out)
    }
}

/// Writes `plot` as an SVG document: the same as [`Svg`]'s [`Exporter::write`].
pub fn write_latency_plot(plot: &LatencyPlot, out: &mut dyn Write) -> io::Result<()> {
    document(plot, out)
}

/// The document: a header, then one panel per CPU.
fn document(plot: &LatencyPlot, out: &mut dyn Write) -> io::Result<()> {
    let panels = plot.series.len().max(1) as f64;
    let height = HEADER + panels * (PANEL + GAP) + 10.0;
    writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    )?;
    writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#)?;
    writeln!(
        out,
        r#"<text x="{LEFT}" y="26" font-size="16" font-weight="bold">{}</text>"#,
        escape_markup(&plot.title)
    )?;
    writeln!(
        out,
        r##"<text x="{LEFT}" y="46" fill="#555">{}</text>"##,
        escape_markup(&plot.subtitle)
    )?;
    let x = XAxis {
        lo: plot.x_lo_ns as f64,
        hi: plot.x_hi_ns as f64,
    };
    let y_max = 10f64.powf((plot.y_max.max(1) as f64).log10().ceil().max(1.0));
    for (i, s) in plot.series.iter().enumerate() {
        let top = HEADER + i as f64 * (PANEL + GAP) + 20.0;
        panel(out, s, &x, &YAxis { top, max: y_max }, plot.deadline_ns)?;
    }
    writeln!(out, "</svg>")
}

/// One CPU's panel: frame, grid, bars, markers, axis labels.
fn panel(
    out: &mut dyn Write,
    s: &Series,
    x: &XAxis,
    y: &YAxis,
    deadline_ns: u64,
) -> io::Result<()> {
    let (top, bottom) = (y.top, y.top + PANEL);
    let (left, right) = (LEFT, WIDTH - RIGHT);
    writeln!(
        out,
        r#"<text x="{left}" y="{}" font-weight="bold">CPU {}: {} samples, min {}, avg {}, p99 {}, p99.99 {}, max {}</text>"#,
        top - 8.0,
        s.cpu,
        s.samples,
        duration_ns(s.min_ns),
        duration_ns(s.avg_ns as u64),
        duration_ns(s.p99_ns),
        duration_ns(s.p99_99_ns),
        duration_ns(s.max_ns)
    )?;
    // Grid and tick labels: decades of latency and of counts.
    let mut decade = x.lo;
    while decade <= x.hi * 1.0001 {
        let gx = x.x(decade);
        writeln!(
            out,
            r##"<line x1="{gx:.1}" y1="{top}" x2="{gx:.1}" y2="{bottom}" stroke="#ddd"/>"##
        )?;
        writeln!(
            out,
            r#"<text x="{gx:.1}" y="{}" text-anchor="middle">{}</text>"#,
            bottom + 16.0,
            decade_label(decade as u64)
        )?;
        for m in 2..10 {
            let mx = x.x(decade * f64::from(m));
            if decade * f64::from(m) < x.hi {
                writeln!(
                    out,
                    r##"<line x1="{mx:.1}" y1="{bottom}" x2="{mx:.1}" y2="{}" stroke="#999"/>"##,
                    bottom + 4.0
                )?;
            }
        }
        decade *= 10.0;
    }
    let mut count = 1.0;
    while count <= y.max * 1.0001 {
        let gy = y.y(count);
        writeln!(
            out,
            r##"<line x1="{left}" y1="{gy:.1}" x2="{right}" y2="{gy:.1}" stroke="#eee"/>"##
        )?;
        writeln!(
            out,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            left - 6.0,
            gy + 4.0,
            count as u64
        )?;
        count *= 10.0;
    }
    // Bars.
    for b in &s.bins {
        let (x0, x1) = (x.x(b.lo_ns as f64), x.x(b.hi_ns as f64));
        let y0 = y.y(b.count as f64);
        writeln!(
            out,
            r#"<rect x="{x0:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="{BAR}"><title>{} to {}: {} samples</title></rect>"#,
            (x1 - x0 - 0.5).max(0.5),
            bottom - y0,
            duration_ns(b.lo_ns),
            duration_ns(b.hi_ns),
            b.count
        )?;
    }
    // Markers, labelled at the top of the panel.
    let marks = [
        ("deadline", deadline_ns, DEADLINE, "6,3"),
        ("p99", s.p99_ns, P99, "3,3"),
        ("max", s.max_ns, MAX, "none"),
    ];
    for (k, (label, ns, color, dash)) in marks.iter().enumerate() {
        let mx = x.x(*ns as f64);
        if mx > right + 0.5 {
            continue;
        }
        writeln!(
            out,
            r#"<line x1="{mx:.1}" y1="{top}" x2="{mx:.1}" y2="{bottom}" stroke="{color}" stroke-width="1.5" stroke-dasharray="{dash}"/>"#
        )?;
        // Labels near the right edge go on the left of their line.
        let (tx, anchor) = if mx > right - 110.0 {
            (mx - 4.0, "end")
        } else {
            (mx + 4.0, "start")
        };
        writeln!(
            out,
            r#"<text x="{tx:.1}" y="{:.1}" fill="{color}" text-anchor="{anchor}">{label} {}</text>"#,
            top + 14.0 + 14.0 * k as f64,
            duration_ns(*ns)
        )?;
    }
    writeln!(
        out,
        r##"<rect x="{left}" y="{top}" width="{}" height="{PANEL}" fill="none" stroke="#333"/>"##,
        right - left
    )?;
    writeln!(
        out,
        r#"<text x="{:.1}" y="{}" text-anchor="middle">wake-up latency (log scale)</text>"#,
        (left + right) / 2.0,
        bottom + 34.0
    )?;
    writeln!(
        out,
        r#"<text x="18" y="{:.1}" text-anchor="middle" transform="rotate(-90 18 {:.1})">samples (log scale)</text>"#,
        top + PANEL / 2.0,
        top + PANEL / 2.0
    )
}
