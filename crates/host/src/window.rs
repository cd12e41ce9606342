//! Sampling windows given on the command line (`--interval 2s`, read by
//! `jitterlab_units::parse_duration_ns`): checked against a range before anything
//! sleeps that long.

use std::time::Duration;

use jitterlab_units::format_ns;

use crate::error::{Error, Result};

/// The longest sampling window any command takes: one hour.
pub const MAX_WINDOW_NS: u64 = 3_600_000_000_000;

/// `ns` of `option` as a duration, when it is in range: above 0 (or 0 itself when
/// `zero_ok`) and at most [`MAX_WINDOW_NS`]; else [`Error::Invalid`] naming the option,
/// the value and the range.
pub fn interval(option: &str, ns: u64, zero_ok: bool) -> Result<Duration> {
    if (ns == 0 && !zero_ok) || ns > MAX_WINDOW_NS {
        let range = if zero_ok {
            "from 0 to"
        } else {
            "above 0 and at most"
        };
        return Err(Error::Invalid(format!(
            "{option} {}: expected {range} {}",
            format_ns(ns),
            format_ns(MAX_WINDOW_NS)
        )));
    }
    Ok(Duration::from_nanos(ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_and_messages() {
        assert_eq!(
            interval("--i", 500_000_000, false).unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(interval("--i", 0, true).unwrap(), Duration::ZERO);
        assert_eq!(
            interval("--i", MAX_WINDOW_NS, true).unwrap().as_secs(),
            3600
        );
        let msg = |ns: u64, z: bool| interval("--interval", ns, z).unwrap_err().to_string();
        assert_eq!(
            msg(MAX_WINDOW_NS + 1, true),
            "--interval 3600000000001ns: expected from 0 to 3600s"
        );
        assert_eq!(
            msg(u64::MAX, false),
            "--interval 18446744073709551615ns: expected above 0 and at most 3600s"
        );
        assert_eq!(
            msg(0, false),
            "--interval 0ns: expected above 0 and at most 3600s"
        );
    }
}
