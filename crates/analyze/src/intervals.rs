//! Time intervals `(start, end)`, ns.

/// Intervals sorted by start, merged where they overlap or touch (an interval starting
/// where the previous one ends joins it).
pub(crate) fn merge(sorted: impl Iterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (s, e) in sorted {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}
