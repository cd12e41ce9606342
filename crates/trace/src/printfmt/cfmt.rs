//! C `printf` of one integer or string conversion, as glibc prints it: flags, width,
//! precision, and the value cut to the width its length modifier names.

use super::pieces::Spec;

/// `spec` of `val` (the raw 64 bits); `star` is the `*` argument's value, if any.
pub(crate) fn number(out: &mut Vec<u8>, spec: &Spec, star: Option<i64>, val: u64) {
    let (width, left, precision) = star_args(spec, star);
    let signed = matches!(spec.conv, b'd' | b'i');
    let bits = match spec.length {
        i32::MIN..=-2 => 8,
        -1 => 16,
        0 => 32,
        _ => 64,
    };
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let (negative, magnitude) = if signed {
        let shift = 64 - bits;
        let v = ((val << shift) as i64) >> shift;
        (v < 0, v.unsigned_abs())
    } else {
        (false, val & mask)
    };
    let mut digits = match spec.conv {
        b'x' => format!("{magnitude:x}"),
        b'X' => format!("{magnitude:X}"),
        b'o' => format!("{magnitude:o}"),
        _ => magnitude.to_string(),
    }
    .into_bytes();
    if precision == Some(0) && magnitude == 0 {
        digits.clear();
    }
    if let Some(p) = precision {
        if digits.len() < p {
            let mut d = vec![b'0'; p - digits.len()];
            d.extend_from_slice(&digits);
            digits = d;
        }
    }
    let prefix: &[u8] = match spec.conv {
        _ if negative => b"-",
        b'x' if spec.alt && magnitude != 0 => b"0x",
        b'X' if spec.alt && magnitude != 0 => b"0X",
        b'o' if spec.alt && digits.first() != Some(&b'0') => b"0",
        _ => b"",
    };
    let len = prefix.len() + digits.len();
    let pad = width.saturating_sub(len);
    if left {
        out.extend_from_slice(prefix);
        out.extend_from_slice(&digits);
        out.resize(out.len() + pad, b' ');
    } else if spec.zero && precision.is_none() {
        out.extend_from_slice(prefix);
        out.resize(out.len() + pad, b'0');
        out.extend_from_slice(&digits);
    } else {
        out.resize(out.len() + pad, b' ');
        out.extend_from_slice(prefix);
        out.extend_from_slice(&digits);
    }
}

/// `spec` of the C string `s` (its bytes before any NUL).
pub(crate) fn string(out: &mut Vec<u8>, spec: &Spec, star: Option<i64>, s: &[u8]) {
    let (width, left, precision) = star_args(spec, star);
    let s = &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())];
    let s = match precision {
        Some(p) if p < s.len() => &s[..p],
        _ => s,
    };
    let pad = width.saturating_sub(s.len());
    if !left {
        out.resize(out.len() + pad, b' ');
    }
    out.extend_from_slice(s);
    if left {
        out.resize(out.len() + pad, b' ');
    }
}

/// Width (at most 4096: a wider one prints as this one), left-justification and
/// precision, with the `*` argument applied (a negative width is a `-` flag, a negative
/// precision none).
fn star_args(spec: &Spec, star: Option<i64>) -> (usize, bool, Option<usize>) {
    let mut width = spec.width.unwrap_or(0);
    let mut left = spec.left;
    let mut precision = spec.precision;
    if let Some(v) = star {
        let v = v as i32;
        if spec.star_is_precision {
            precision = usize::try_from(v).ok();
        } else {
            if v < 0 {
                left = true;
            }
            width = v.unsigned_abs() as usize;
        }
    }
    (width.min(4096), left, precision.map(|p| p.min(4096)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printfmt::pieces::{pieces, Piece};

    fn num(fmt: &str, v: u64) -> String {
        let Piece::Num { spec, .. } = &pieces(fmt, 1).0[0] else {
            panic!()
        };
        let mut out = Vec::new();
        number(&mut out, spec, None, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn numbers_as_glibc_prints_them() {
        assert_eq!(num("%d", u64::MAX), "-1");
        assert_eq!(num("%u", u64::MAX), "4294967295");
        assert_eq!(num("%lu", u64::MAX), "18446744073709551615");
        assert_eq!(num("%hd", 0xffff), "-1");
        assert_eq!(num("%hhu", 0x1ff), "255");
        assert_eq!(num("%08lx", 0xbeef), "0000beef");
        assert_eq!(num("%-6d", 42), "42    ");
        assert_eq!(num("%#x", 255), "0xff");
        assert_eq!(num("%#x", 0), "0");
        assert_eq!(num("%#o", 8), "010");
        assert_eq!(num("%03d", (-5i64) as u64), "-05");
        assert_eq!(num("%.3d", 7), "007");
        assert_eq!(num("%.0d", 0), "");
        assert_eq!(num("%5.3x", 10), "  00a");
        assert_eq!(num("%X", 0xabc), "ABC");
    }

    #[test]
    fn strings_and_stars() {
        let Piece::Str { spec, .. } = &pieces("%-5s", 1).0[0] else {
            panic!()
        };
        let mut out = Vec::new();
        string(&mut out, spec, None, b"ab\0cd");
        assert_eq!(out, b"ab   ");
        let Piece::Str { spec, .. } = &pieces("%.*s", 2).0[0] else {
            panic!()
        };
        out.clear();
        string(&mut out, spec, Some(3), b"abcdef");
        assert_eq!(out, b"abc");
        let Piece::Num { spec, .. } = &pieces("%*d", 2).0[0] else {
            panic!()
        };
        out.clear();
        number(&mut out, spec, Some(-4), 1);
        assert_eq!(out, b"1   ");
    }
}
