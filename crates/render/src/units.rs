//! Unit formatting: every figure printed says its unit; absent data prints `-`.

/// A duration in ns as `850 ns`, `12.3 us`, `4.56 ms`, `1.23 s`, `2h03m`.
pub fn duration_ns(ns: u64) -> String {
    let f = ns as f64;
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.1} us", f / 1e3),
        1_000_000..=999_999_999 => format!("{:.2} ms", f / 1e6),
        1_000_000_000..=3_599_999_999_999 => format!("{:.2} s", f / 1e9),
        _ => {
            let s = ns / 1_000_000_000;
            format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
        }
    }
}

/// A CPU time in ns, at the clock-tick resolution /proc gives: `0:01.24`
/// (minutes:seconds) as `ps` prints it, hours when needed.
pub fn cpu_time(ns: u64) -> String {
    let cs = ns / 10_000_000;
    let (s, cs) = (cs / 100, cs % 100);
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s % 3600) / 60, s % 60)
    } else {
        format!("{}:{:02}.{cs:02}", s / 60, s % 60)
    }
}

/// An optional value, or `-`.
pub fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// A rate per second with a sensible number of digits: `0`, `0.4/s`, `12/s`, `1.2k/s`.
pub fn rate(per_s: f64) -> String {
    if per_s == 0.0 {
        "0".to_string()
    } else if per_s < 10.0 {
        format!("{per_s:.1}/s")
    } else if per_s < 10_000.0 {
        format!("{per_s:.0}/s")
    } else {
        format!("{:.1}k/s", per_s / 1e3)
    }
}

/// A frequency in kHz as `2.40 GHz` or `800 MHz`.
pub fn khz(k: u64) -> String {
    if k >= 1_000_000 {
        format!("{:.2} GHz", k as f64 / 1e6)
    } else {
        format!("{} MHz", k / 1000)
    }
}

/// A name from the system (a task's comm, an IRQ action, a cgroup path) made safe to
/// print on a terminal: control characters are escaped as Rust writes them (`\n`,
/// `\t`, `\r`, `\x1b`, `\u{85}`), everything else is kept (a backslash too: systemd
/// names hold `\x2d`). A thread may name itself with any byte; printed raw, a newline
/// breaks a table's rows and an ESC drives the terminal.
pub fn escape(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() && (c as u32) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// A list of names, at most `max` shown, then `(+N more)`.
pub fn names(items: &[String], max: usize) -> String {
    if items.is_empty() {
        return "-".to_string();
    }
    let shown = items[..items.len().min(max)].join(", ");
    if items.len() > max {
        format!("{shown} (+{} more)", items.len() - max)
    } else {
        shown
    }
}

/// A size for people: `812 bytes`, `12.5 KiB`, `3.4 MiB`, `1.2 GiB`.
pub fn bytes(n: u64) -> String {
    const K: f64 = 1024.0;
    let x = n as f64;
    if n < 1024 {
        format!("{n} bytes")
    } else if x < K * K {
        format!("{:.1} KiB", x / K)
    } else if x < K * K * K {
        format!("{:.1} MiB", x / (K * K))
    } else {
        format!("{:.1} GiB", x / (K * K * K))
    }
}

/// How the figures of one metric are printed: a unit chosen for the largest of them
/// (`ns` as `us`, `ms` or `s`; `bit/s` and `B/s` with an SI prefix, `Gbit/s`; any
/// other unit as it is) and the decimals that give it three significant digits.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    /// What a value is divided by.
    pub div: f64,
    /// The unit of the divided values.
    pub unit: String,
    /// Decimals printed.
    pub decimals: usize,
}

impl Scale {
    /// The scale for values of `unit` up to `largest` (in magnitude).
    pub fn new(unit: &str, largest: f64) -> Scale {
        let m = if largest.is_finite() {
            largest.abs()
        } else {
            0.0
        };
        let (div, unit) = match unit {
            "ns" => [(1e9, "s"), (1e6, "ms"), (1e3, "us")]
                .into_iter()
                .find(|&(d, _)| m >= d)
                .map_or((1.0, "ns".to_string()), |(d, u)| (d, u.to_string())),
            "bit/s" | "B/s" => [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
                .into_iter()
                .find(|&(d, _)| m >= d)
                .map_or((1.0, unit.to_string()), |(d, p)| (d, format!("{p}{unit}"))),
            _ => (1.0, unit.to_string()),
        };
        Scale {
            decimals: decimals_for(m / div),
            div,
            unit,
        }
    }

    /// The same unit, with the decimals that give `smallest` (in magnitude, 0
    /// ignored) three significant digits, when it needs more than `largest`.
    pub fn precise_to(mut self, smallest: f64) -> Scale {
        let m = smallest.abs() / self.div;
        if m.is_finite() && m > 0.0 {
            self.decimals = self.decimals.max(decimals_for(m));
        }
        self
    }

    /// `v` in this scale, without the unit: `12.3`; an infinite value `inf`, NaN `-`.
    pub fn number(&self, v: f64) -> String {
        if v.is_nan() {
            "-".to_string()
        } else if v.is_infinite() {
            if v > 0.0 { "inf" } else { "-inf" }.to_string()
        } else {
            format!("{:.*}", self.decimals, v / self.div)
        }
    }

    /// `v` in this scale with the unit: `12.3 us`.
    pub fn with_unit(&self, v: f64) -> String {
        if self.unit.is_empty() {
            self.number(v)
        } else {
            format!("{} {}", self.number(v), self.unit)
        }
    }
}

/// The decimals that give `x` three significant digits, at most two.
fn decimals_for(x: f64) -> usize {
    if x < 10.0 {
        2
    } else if x < 100.0 {
        1
    } else {
        0
    }
}

/// One value of a metric in `unit`, in its own scale: `12.3 us`, `9.41 Gbit/s`,
/// `98812 msg/s`.
pub fn value(v: f64, unit: &str) -> String {
    Scale::new(unit, v).with_unit(v)
}

/// A ratio of medians: three decimals (`1.083`); unbounded, `inf`.
pub fn ratio(r: f64) -> String {
    if r.is_infinite() {
        "inf".to_string()
    } else if r.is_nan() {
        "-".to_string()
    } else {
        format!("{r:.3}")
    }
}

/// A p-value: `0.034`, `1.2e-5` under 0.001.
pub fn p_value(p: f64) -> String {
    if p.is_nan() {
        "-".to_string()
    } else if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

/// Wraps `text` to lines of at most `width` characters, each prefixed by `indent`.
pub fn wrap(text: &str, indent: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
            lines.push(format!("{indent}{line}"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(format!("{indent}{line}"));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_words() {
        assert_eq!(
            wrap("one two three four", "  ", 12),
            ["  one two", "  three four"]
        );
        assert!(wrap("", "  ", 10).is_empty());
    }

    #[test]
    fn escapes_control_characters_only() {
        assert_eq!(escape("kworker/0:1"), "kworker/0:1");
        assert_eq!(escape("a\nb\x1b[2Jc\t\r"), "a\\nb\\x1b[2Jc\\t\\r");
        assert_eq!(escape("\u{7f}\u{85}é"), "\\x7f\\u{85}é");
        assert_eq!(escape("dev-disk-by\\x2duuid"), "dev-disk-by\\x2duuid");
    }

    #[test]
    fn units() {
        assert_eq!(duration_ns(850), "850 ns");
        assert_eq!(duration_ns(12_345), "12.3 us");
        assert_eq!(duration_ns(4_560_000), "4.56 ms");
        assert_eq!(duration_ns(1_230_000_000), "1.23 s");
        assert_eq!(cpu_time(1_690_000_000), "0:01.69");
        assert_eq!(cpu_time(3_725_000_000_000), "1:02:05");
        assert_eq!(rate(0.0), "0");
        assert_eq!(rate(0.44), "0.4/s");
        assert_eq!(rate(1234.0), "1234/s");
        assert_eq!(rate(12_345.0), "12.3k/s");
        assert_eq!(khz(2_400_000), "2.40 GHz");
        assert_eq!(opt::<u32>(None), "-");
        let n: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(names(&n, 2), "a, b (+1 more)");
        assert_eq!(value(12_345.0, "ns"), "12.3 us");
        assert_eq!(value(850.0, "ns"), "850 ns");
        assert_eq!(value(9.41e9, "bit/s"), "9.41 Gbit/s");
        assert_eq!(value(98_812.4, "msg/s"), "98812 msg/s");
        assert_eq!(value(3.0, "periods"), "3.00 periods");
        let s = Scale::new("ns", 150_000.0);
        assert_eq!((s.number(12_345.0), s.unit.as_str()), ("12".into(), "us"));
        assert_eq!(s.number(f64::INFINITY), "inf");
        assert_eq!(s.precise_to(12_345.0).number(12_345.0), "12.3");
        assert_eq!(ratio(1.0834), "1.083");
        assert_eq!(p_value(0.0341), "0.034");
        assert_eq!(p_value(0.000012), "1.2e-5");
    }
}
