//! Seconds given as a float on the command line (`--interval 2.5`): checked against
//! a range before anything turns them into a [`Duration`] (which panics past about
//! 1.8e19 s, and sleeps forever below that).

use std::time::Duration;

use crate::error::{Error, Result};

/// The longest sampling window any command takes: one hour.
pub const MAX_INTERVAL_SECS: f64 = 3600.0;

/// `seconds` of `option` as a duration, when it is in range: above 0 (or 0 itself when
/// `zero_ok`) and at most [`MAX_INTERVAL_SECS`]; anything else (NaN, infinite,
/// negative, too long) is [`Error::Invalid`] naming the option, the value as
/// [`short`] prints it and the range.
pub fn interval(option: &str, seconds: f64, zero_ok: bool) -> Result<Duration> {
    let low_ok = if zero_ok {
        seconds >= 0.0
    } else {
        seconds > 0.0
    };
    if !(low_ok && seconds <= MAX_INTERVAL_SECS) {
        let range = if zero_ok {
            "from 0 to"
        } else {
            "above 0 and at most"
        };
        return Err(Error::Invalid(format!(
            "{option} {}: expected seconds {range} {MAX_INTERVAL_SECS}",
            short(seconds)
        )));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// A float as a person reads it in a message: as Rust prints it when that is short
/// (`2.5`, `-1`, `NaN`), else in scientific notation (`1e300`, not 301 digits).
pub fn short(v: f64) -> String {
    let plain = v.to_string();
    if plain.len() <= 16 {
        plain
    } else {
        format!("{v:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_and_messages() {
        assert_eq!(
            interval("--i", 0.5, false).unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(interval("--i", 0.0, true).unwrap(), Duration::ZERO);
        assert_eq!(interval("--i", 3600.0, true).unwrap().as_secs(), 3600);
        let msg = |v: f64, z: bool| interval("--interval", v, z).unwrap_err().to_string();
        assert_eq!(
            msg(1e20, true),
            "--interval 1e20: expected seconds from 0 to 3600"
        );
        assert_eq!(
            msg(1e300, false),
            "--interval 1e300: expected seconds above 0 and at most 3600"
        );
        assert_eq!(
            msg(0.0, false),
            "--interval 0: expected seconds above 0 and at most 3600"
        );
        assert!(msg(f64::NAN, true).starts_with("--interval NaN:"));
        assert!(msg(f64::INFINITY, true).starts_with("--interval inf:"));
        assert!(msg(-1.0, true).starts_with("--interval -1:"));
        assert!(msg(3600.001, true).starts_with("--interval 3600.001:"));
        assert_eq!(short(1e19), "1e19");
        assert_eq!(short(0.1 + 0.2), "3.0000000000000004e-1");
    }
}
