//! trace_printk's binary form (`ftrace:bprint`): a format string kept in the kernel and the
//! arguments packed as `vbin_printf` packs them, formatted back into text.
//!
//! Packing: numbers of 8 bytes take two 32-bit words aligned to 4; smaller ones are aligned
//! to their own size; `%s` strings are stored inline with their NUL. Only what a format
//! names is read; a short buffer ends the text with `[truncated]` instead of failing.

use crate::format::Endian;

/// Format `fmt` with the packed `args`, resolving `%pS`-style pointers with `sym`.
pub fn format(
    fmt: &str,
    args: &[u8],
    endian: Endian,
    long_size: usize,
    sym: &dyn Fn(u64, bool) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(fmt.len() + 16);
    let mut pos = 0usize;
    let b = fmt.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c != b'%' {
            // Copy a run of plain text (UTF-8 safe: '%' is ASCII).
            let end = b[i..]
                .iter()
                .position(|&x| x == b'%')
                .map_or(b.len(), |n| i + n);
            out.push_str(&fmt[i..end]);
            i = end;
            continue;
        }
        i += 1;
        if b.get(i) == Some(&b'%') {
            out.push('%');
            i += 1;
            continue;
        }
        // Flags, width, precision.
        let spec_start = i;
        while i < b.len() && b"-+ #0".contains(&b[i]) {
            i += 1;
        }
        let flags = &fmt[spec_start..i];
        let mut width = None;
        let mut prec = None;
        let num = |i: &mut usize| {
            let s = *i;
            while *i < b.len() && b[*i].is_ascii_digit() {
                *i += 1;
            }
            fmt[s..*i].parse::<usize>().ok()
        };
        if b.get(i) == Some(&b'*') {
            i += 1;
            width = take(args, &mut pos, 4, endian).map(|v| v as i32 as usize);
        } else {
            width = num(&mut i).or(width);
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if b.get(i) == Some(&b'*') {
                i += 1;
                prec = take(args, &mut pos, 4, endian).map(|v| v as usize);
            } else {
                prec = Some(num(&mut i).unwrap_or(0));
            }
        }
        // Length modifiers.
        let mut size = 4;
        loop {
            match b.get(i) {
                Some(b'h') => size = if size == 2 { 1 } else { 2 },
                Some(b'l') => size = if size == long_size { 8 } else { long_size },
                Some(b'z') | Some(b't') | Some(b'j') => size = long_size,
                Some(b'L') | Some(b'q') => size = 8,
                _ => break,
            }
            i += 1;
        }
        let Some(&conv) = b.get(i) else {
            break;
        };
        if !conv.is_ascii() {
            // Not a conversion; leave the character to the plain-text copy.
            out.push('%');
            continue;
        }
        i += 1;
        let left = flags.contains('-');
        let zero = flags.contains('0') && !left;
        let text = match conv {
            b'd' | b'i' => match take(args, &mut pos, size, endian) {
                Some(v) => {
                    let bits = size * 8;
                    let v = if bits >= 64 {
                        v as i64
                    } else {
                        ((v << (64 - bits)) as i64) >> (64 - bits)
                    };
                    let s = v.to_string();
                    if flags.contains('+') && v >= 0 {
                        format!("+{s}")
                    } else {
                        s
                    }
                }
                None => return truncated(out),
            },
            b'u' => match take(args, &mut pos, size, endian) {
                Some(v) => v.to_string(),
                None => return truncated(out),
            },
            b'x' | b'X' | b'o' => match take(args, &mut pos, size, endian) {
                Some(v) => {
                    let s = match conv {
                        b'x' => format!("{v:x}"),
                        b'X' => format!("{v:X}"),
                        _ => format!("{v:o}"),
                    };
                    if flags.contains('#') && v != 0 {
                        format!("{}{s}", if conv == b'o' { "0" } else { "0x" })
                    } else {
                        s
                    }
                }
                None => return truncated(out),
            },
            b'c' => match take(args, &mut pos, 1, endian) {
                Some(v) => char::from(v as u8).to_string(),
                None => return truncated(out),
            },
            b's' => {
                let rest = args.get(pos..).unwrap_or(&[]);
                let n = rest.iter().position(|&x| x == 0).unwrap_or(rest.len());
                pos += n + 1;
                let s = String::from_utf8_lossy(&rest[..n]).into_owned();
                match prec {
                    Some(p) => s.chars().take(p).collect(),
                    None => s,
                }
            }
            b'p' => {
                let Some(v) = take(args, &mut pos, long_size, endian) else {
                    return truncated(out);
                };
                // Extensions: S/s/F/f/B print symbols; others are shown as the address.
                let ext = b.get(i).copied();
                match ext {
                    Some(e @ (b'S' | b's' | b'F' | b'f' | b'B')) => {
                        i += 1;
                        let with_off = matches!(e, b'S' | b'F' | b'B');
                        sym(v, with_off).unwrap_or_else(|| format!("{v:#x}"))
                    }
                    Some(e) if e.is_ascii_alphanumeric() => {
                        i += 1;
                        while i < b.len() && b[i].is_ascii_alphanumeric() {
                            i += 1;
                        }
                        format!("{v:#x}")
                    }
                    _ => format!("{v:#x}"),
                }
            }
            other => format!("%{}", char::from(other)),
        };
        pad(
            &mut out,
            &text,
            width,
            left,
            zero && !matches!(conv, b's' | b'c' | b'p'),
        );
    }
    out
}

fn truncated(mut out: String) -> String {
    out.push_str("[truncated]");
    out
}

fn pad(out: &mut String, text: &str, width: Option<usize>, left: bool, zero: bool) {
    let w = width.unwrap_or(0).min(4096);
    let n = text.chars().count();
    if n >= w {
        out.push_str(text);
    } else if left {
        out.push_str(text);
        out.extend(std::iter::repeat_n(' ', w - n));
    } else if zero {
        let (sign, digits) = match text.strip_prefix('-') {
            Some(d) => ("-", d),
            None => ("", text),
        };
        out.push_str(sign);
        out.extend(std::iter::repeat_n('0', w - n));
        out.push_str(digits);
    } else {
        out.extend(std::iter::repeat_n(' ', w - n));
        out.push_str(text);
    }
}

/// The next packed number of `size` bytes (aligned as vbin_printf aligns it).
fn take(args: &[u8], pos: &mut usize, size: usize, endian: Endian) -> Option<u64> {
    let align = if size == 8 { 4 } else { size };
    let at = pos.checked_add(align - 1)? / align * align;
    let v = if size == 8 {
        let lo = u64::from(endian.u32(args, at)?);
        let hi = u64::from(endian.u32(args, at + 4)?);
        match endian {
            Endian::Little => lo | (hi << 32),
            Endian::Big => (lo << 32) | hi,
        }
    } else {
        endian.uint(args, at, size)?
    };
    *pos = at + size;
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn formats_packed_args() {
        let mut args = words(&[7, 0xffff_fffe, 0x10, 0, 0x1234, 0]);
        args.extend_from_slice(b"hi\0");
        let sym = |a: u64, _| (a == 0x1234).then(|| "fn+0x4".to_string());
        let s = format(
            "a=%d b=%d c=%lx p=%pS s=%s %%",
            &args,
            Endian::Little,
            8,
            &sym,
        );
        assert_eq!(s, "a=7 b=-2 c=10 p=fn+0x4 s=hi %");
        assert_eq!(
            format(
                "%5d|%-3u|%05d",
                &words(&[42, 1, 3]),
                Endian::Little,
                8,
                &sym
            ),
            "   42|1  |00003"
        );
        assert_eq!(
            format("%d %d", &words(&[1]), Endian::Little, 8, &sym),
            "1 [truncated]"
        );
        assert_eq!(
            format("%\u{e9}%c", b"A", Endian::Little, 8, &sym),
            "%\u{e9}A"
        );
    }
}
