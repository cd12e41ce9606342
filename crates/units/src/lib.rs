//! Durations as jitterlab reads and writes them, in one place: every option, recipe key
//! and message that takes or shows a span of time goes through [`parse_duration_ns`] and
//! [`format_ns`].
//!
//! A duration is a number and a unit: `500ns`, `100us` (or `100µs`), `1.5ms`, `10s`,
//! `2m` (or `2min`), `1h`. A bare number is refused everywhere, with the units in the
//! message: `latency --break 200` once meant 200 µs and `verify --interval 10` 10 s, and
//! a reader of a script cannot tell which. Zero alone is taken: it is zero in every unit.
//! Durations are kept in integer nanoseconds.
//!
//! ```
//! use jitterlab_units::{format_ns, parse_duration_ns};
//! assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
//! assert_eq!(format_ns(1_500_000), "1500us");
//! assert!(parse_duration_ns("200").unwrap_err().contains("200us"));
//! ```
//!
//! A histogram of durations is written as [`Bucket`]s, the same way everywhere.
//!
//! What it does not do: read the clock, or parse trace timestamps (`--from 976.30` is a
//! point on a trace's own clock, read by the analyze crate).

#![deny(missing_docs)]

/// The units [`parse_duration_ns`] takes, as its messages list them.
pub const UNITS: &str = "ns, us, ms, s, m, h";

/// The longest duration taken: about 292 years, half of `u64::MAX` nanoseconds, so
/// that a sum of two stays in range.
pub const MAX_NS: u64 = u64::MAX / 2;

/// Parses a duration: a decimal number and a unit (`ns`, `us` or `µs`, `ms`, `s`, `m`
/// or `min`, `h`), with or without a space between; nanoseconds, rounded to the nearest.
/// `0` needs no unit. Any other bare number, an unknown unit, a negative, non-finite or longer-than-[`MAX_NS`]
/// value is an error that says what was expected.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if unit.is_empty()
        && !num.is_empty()
        && num.chars().all(|c| c == '0' || c == '.')
        && num.contains('0')
    {
        return Ok(0);
    }
    let expected = || format!("{s:?}: expected a number and a unit ({UNITS}), e.g. 100us, 10s");
    let scale: u128 = match unit.trim() {
        _ if num.is_empty() => return Err(expected()),
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" => {
            return Err(format!(
                "{s:?}: give a unit ({UNITS}), e.g. {num}us or {num}s; a bare number is not taken"
            ))
        }
        u => return Err(format!("{s:?}: unknown unit {u:?} ({UNITS})")),
    };
    // Exact decimal arithmetic: the digits as one integer and a power of ten to divide
    // by (a float would lose nanoseconds past 2^53).
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if (whole.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(expected());
    }
    let too_long = || format!("{s:?}: too long (at most {} h)", MAX_NS / 3_600_000_000_000);
    let whole = whole.trim_start_matches('0');
    if whole.len() > 20 {
        return Err(too_long());
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| expected())?
    };
    // Past 18 digits a fraction only rounds below a nanosecond.
    let frac = &frac[..frac.len().min(18)];
    let div = 10u128.pow(frac.len() as u32);
    let part: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| expected())?
    };
    let ns = whole * scale + (part * scale + div / 2) / div;
    u64::try_from(ns)
        .ok()
        .filter(|&ns| ns <= MAX_NS)
        .ok_or_else(too_long)
}

/// Nanoseconds in the largest unit that keeps them whole: `10s`, `1ms`, `300us`,
/// `1500ns`; [`parse_duration_ns`] reads it back to the same value.
pub fn format_ns(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 && n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

/// One bucket of a histogram of durations: `count` values above the previous bucket's
/// bound and at most `le_ns`. The same type for the analysis's fixed 1-2-5 buckets
/// (whose last bucket is open: `le_ns` is `None`) and the latency probe's HDR buckets
/// (each bound the highest value equivalent at 3 significant digits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Bucket {
    /// The bucket's upper bound, ns; `None` for a last bucket above every bound.
    pub le_ns: Option<u64>,
    /// How many values.
    pub count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_reads_as_its_nanoseconds() {
        for (s, ns) in [
            ("500ns", 500),
            ("100us", 100_000),
            ("100µs", 100_000),
            ("1.5ms", 1_500_000),
            ("10s", 10_000_000_000),
            ("10 s", 10_000_000_000),
            (" 2m ", 120_000_000_000),
            ("2min", 120_000_000_000),
            ("1h", 3_600_000_000_000),
            ("0s", 0),
            ("0", 0),
            ("0.0", 0),
            ("0.0000005s", 500),
            ("1.0000000005s", 1_000_000_001),
            ("1.000000000000000000000000000000000001s", 1_000_000_000),
            (".5s", 500_000_000),
            ("5.s", 5_000_000_000),
            ("9223372036854775807ns", MAX_NS),
        ] {
            assert_eq!(parse_duration_ns(s), Ok(ns), "{s}");
        }
    }

    #[test]
    fn a_bare_number_is_refused_with_the_units_to_give() {
        assert!(parse_duration_ns("0.5").is_err());
        let e = parse_duration_ns("200").unwrap_err();
        assert_eq!(
            e,
            "\"200\": give a unit (ns, us, ms, s, m, h), e.g. 200us or 200s; a bare number is not taken"
        );
    }

    #[test]
    fn what_is_not_a_duration_says_what_was_expected() {
        for (s, says) in [
            ("", "expected a number and a unit"),
            ("us", "expected a number and a unit"),
            ("-1s", "expected a number and a unit"),
            ("1..2s", "expected a number and a unit"),
            (".s", "expected a number and a unit"),
            ("9223372036854775808ns", "too long"),
            ("10 parsecs", "unknown unit \"parsecs\""),
            ("10S", "unknown unit \"S\""),
            ("1e3s", "unknown unit \"e3s\""),
            ("999999999999h", "too long"),
        ] {
            let e = parse_duration_ns(s).unwrap_err();
            assert!(e.contains(says), "{s}: {e}");
        }
    }

    #[test]
    fn format_is_the_largest_whole_unit() {
        assert_eq!(format_ns(0), "0ns");
        assert_eq!(format_ns(1_500), "1500ns");
        assert_eq!(format_ns(300_000), "300us");
        assert_eq!(format_ns(1_000_000), "1ms");
        assert_eq!(format_ns(90_000_000_000), "90s");
    }

    proptest::proptest! {
        #[test]
        fn formatted_reads_back(ns in 0u64..MAX_NS) {
            proptest::prop_assert_eq!(parse_duration_ns(&format_ns(ns)), Ok(ns));
        }
    }
}
