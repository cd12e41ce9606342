//! Line syntax both text readers share: timestamps, the irq-info flags column, lost-event
//! lines, and `key=value` field lists.

use crate::Flags;

/// A text timestamp (`976.348313`, `976.348313123`, or a bare counter value) in ns.
pub(crate) fn parse_ts(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.').unwrap_or((s, ""));
    if secs.is_empty() || secs.len() > 19 || !secs.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if s.contains('.') && (frac.is_empty() || frac.len() > 9) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    if frac.is_empty() {
        return Some(secs);
    }
    let mut ns: u64 = frac.parse().ok()?;
    for _ in frac.len()..9 {
        ns *= 10;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// The irq-info column (`dNh2.`, `d.h1.`, `....`) as the kernel's flag bits and the
/// `preempt_count` byte (preempt depth low nibble, migrate-disable high nibble), per
/// `trace_print_lat_fmt` in kernel/trace/trace_output.c. `X` (irqs-off not supported) sets
/// no bit.
pub(crate) fn parse_flags(s: &str) -> Option<(Flags, u8)> {
    let b = s.as_bytes();
    if !(4..=8).contains(&b.len()) {
        return None;
    }
    let mut f = match b[0] {
        b'.' | b'X' => 0,
        b'd' => Flags::IRQS_OFF,
        b'D' => Flags::IRQS_OFF | Flags::BH_OFF,
        b'b' => Flags::BH_OFF,
        _ => return None,
    };
    f |= match b[1] {
        b'.' => 0,
        b'N' => Flags::NEED_RESCHED | Flags::PREEMPT_RESCHED,
        b'n' => Flags::NEED_RESCHED,
        b'p' => Flags::PREEMPT_RESCHED,
        b'L' => Flags::NEED_RESCHED_LAZY | Flags::PREEMPT_RESCHED,
        b'b' => Flags::NEED_RESCHED | Flags::NEED_RESCHED_LAZY,
        b'l' => Flags::NEED_RESCHED_LAZY,
        b'B' => Flags::NEED_RESCHED | Flags::NEED_RESCHED_LAZY | Flags::PREEMPT_RESCHED,
        _ => return None,
    };
    f |= match b[2] {
        b'.' => 0,
        b'Z' => Flags::NMI | Flags::HARDIRQ,
        b'z' => Flags::NMI,
        b'H' => Flags::HARDIRQ | Flags::SOFTIRQ,
        b'h' => Flags::HARDIRQ,
        b's' => Flags::SOFTIRQ,
        _ => return None,
    };
    let nibble = |c: u8| match c {
        b'.' => Some(0),
        c => (c as char).to_digit(16).map(|d| d as u8),
    };
    let mut pc = nibble(b[3])?;
    if let Some(&m) = b.get(4) {
        pc |= nibble(m)? << 4;
    }
    // Columns past the fifth (RT kernels' extra counters) are checked, not kept.
    if !b[5.min(b.len())..]
        .iter()
        .all(|c| *c == b'.' || c.is_ascii_hexdigit())
    {
        return None;
    }
    Some((Flags(f), pc))
}

/// A lost-events line: `CPU:1 [LOST 42 EVENTS]`, `CPU:1 [LOST EVENTS]` (kernel) or
/// `CPU:1 [42 EVENTS DROPPED]`, `CPU:1 [EVENTS DROPPED]` (trace-cmd), possibly after the
/// name of the buffer it is about (`trace-cmd report` of several buffers:
/// `jlab_small: CPU:0 [734 EVENTS DROPPED]`). `Some((cpu, count))`; a count above
/// `u64::MAX` is `u64::MAX` (saturated: at least that many).
pub(crate) fn parse_lost(line: &str) -> Option<(u32, Option<u64>)> {
    let line = line.trim();
    let rest = match line.strip_prefix("CPU:") {
        Some(rest) => rest,
        None => {
            // `BUFFER: CPU:N [...]`: an instance name is one word.
            let (buffer, rest) = line.split_once(": ")?;
            if buffer.is_empty() || buffer.contains(char::is_whitespace) {
                return None;
            }
            rest.trim_start().strip_prefix("CPU:")?
        }
    };
    let (cpu, rest) = rest.split_once(' ')?;
    let cpu: u32 = cpu.parse().ok()?;
    let inner = rest.trim().strip_prefix('[')?.strip_suffix(']')?;
    if inner == "LOST EVENTS" || inner == "EVENTS DROPPED" {
        return Some((cpu, None));
    }
    let count = inner
        .strip_prefix("LOST ")
        .and_then(|n| n.strip_suffix(" EVENTS"))
        .or_else(|| inner.strip_suffix(" EVENTS DROPPED"))?;
    if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((cpu, Some(count.parse().unwrap_or(u64::MAX))))
}

/// `NAME: REST` -> `(NAME, REST)`: a line of `trace-cmd report` of several buffers, which
/// prints the buffer's name before each of its lines (right-aligned, the top buffer's lines
/// with blanks instead). NAME is the line's first word, ending in `:`; whether REST is a
/// line is for the caller to check.
pub(crate) fn split_buffer(line: &str) -> Option<(&str, &str)> {
    let line = line.trim_start();
    let (word, rest) = line.split_once(|c: char| c.is_ascii_whitespace())?;
    let name = word.strip_suffix(':')?;
    if name.is_empty() {
        return None;
    }
    Some((name, rest.trim_start()))
}

/// `key=value` pairs of an event body. A value runs up to the next ` key=` (so comms with
/// spaces and `4 [action=BLOCK]` stay whole).
pub(crate) struct Fields<'a> {
    rest: &'a str,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(body: &'a str) -> Self {
        Fields { rest: body }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<(&'a str, &'a str)> {
        let s = self.rest.trim_start();
        let eq = s.find('=')?;
        let after = &s[eq + 1..];
        let end = next_key(after);
        self.rest = &after[end..];
        Some((&s[..eq], after[..end].trim_end()))
    }
}

/// Where the next ` key=` starts in `s`, or its length.
fn next_key(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(p) = b[i..].iter().position(|&c| c == b' ') {
        let sp = i + p;
        let mut j = sp + 1;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
            j += 1;
        }
        if j > sp + 1 && b.get(j) == Some(&b'=') {
            return sp;
        }
        i = sp + 1;
    }
    b.len()
}

pub(crate) fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// True when `body` is a `key=value ...` list.
pub(crate) fn is_key_values(body: &str) -> bool {
    body.split_once('=').is_some_and(|(k, _)| is_ident(k))
}
