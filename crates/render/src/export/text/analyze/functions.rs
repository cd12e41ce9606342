//! `analyze`: the functions section (function_graph traces).

use std::io::{self, Write};

use jitterlab_analyze::analysis::functions::FunctionSection;

use super::{dur, heading, more};
use crate::units::duration_ns;
use crate::{Col, Style, Table};

pub(super) fn write(
    s: &FunctionSection,
    top: usize,
    out: &mut dyn Write,
    style: &Style,
) -> io::Result<()> {
    heading(out, style, "Functions")?;
    if s.functions.is_empty() {
        return writeln!(out, "no function_graph calls in the trace");
    }
    writeln!(
        out,
        "self = inclusive minus the traced callees' inclusive time; most total self time first:"
    )?;
    let mut t = Table::new([
        Col::left("FUNCTION"),
        Col::right("CALLS"),
        Col::right("SELF TOTAL"),
        Col::right("SELF AVG"),
        Col::right("INCL AVG"),
        Col::right("INCL MAX"),
        Col::right("CALLEES"),
        Col::left("MOST CALLED"),
    ]);
    for f in s.functions.iter().take(top) {
        let (sf, inc) = (f.self_time, f.inclusive);
        let most = f
            .callees
            .first()
            .map_or_else(|| "-".to_string(), |c| format!("{} x{}", c.name, c.calls));
        t.row([
            f.name.clone(),
            f.calls.to_string(),
            dur(sf.map(|s| s.total_ns)),
            dur(sf.map(|s| s.avg_ns)),
            dur(inc.map(|s| s.avg_ns)),
            dur(inc.map(|s| s.max_ns)),
            f.distinct_callees.to_string(),
            most,
        ]);
    }
    t.write(out, style)?;
    more(out, style, top, s.functions.len(), "functions")?;
    if let Some(l) = s
        .functions
        .iter()
        .filter_map(|f| f.longest.as_ref())
        .max_by_key(|l| l.duration_ns)
    {
        writeln!(
            out,
            "longest call: {} on CPU {}: {}",
            duration_ns(l.duration_ns),
            l.cpu,
            l.path.join(" > ")
        )?;
    }
    let Some(c) = &s.comparison else {
        return Ok(());
    };
    writeln!(out)?;
    writeln!(
        out,
        "compared with {} (most changed total self time first):",
        c.other
    )?;
    let mut t = Table::new([
        Col::left("FUNCTION"),
        Col::right("CALLS"),
        Col::right("OTHER"),
        Col::right("SELF TOTAL"),
        Col::right("OTHER"),
        Col::right("SELF AVG"),
        Col::right("OTHER"),
    ]);
    for ch in c.changes.iter().take(top) {
        t.row([
            ch.name.clone(),
            ch.calls.to_string(),
            ch.other_calls.to_string(),
            duration_ns(ch.self_ns),
            duration_ns(ch.other_self_ns),
            dur(ch.self_avg_ns),
            dur(ch.other_self_avg_ns),
        ]);
    }
    t.write(out, style)?;
    more(out, style, top, c.changes.len(), "functions")
}
