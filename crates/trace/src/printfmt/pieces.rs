//! The format string cut into literal text and conversions, each conversion bound to its
//! argument (and to a `*` width's), as libtraceevent 1.7's `parse_args` cuts it.
//!
//! Its rules, kept here because `trace-cmd report -N` prints by them: `\n`, `\t`, `\r`,
//! `\\` and `\X` (X) are undone in the literal text; a conversion is `%`, then any of
//! `# - . 0-9 * h l L z Z`, then `d i u x X o` (a number), `s` (a string) or `p` (a
//! pointer, with its extension: `S`, `s`, `F`, `f`, `M`, `m` (`R`, `F`), `I`/`i` (`4`,
//! `6`, `S`, ...), `U` (`L`, `l`, `B`, `b`), `h` (`C`, `D`, `N`)). Any other character
//! ends the conversion as the literal text `>X<` and takes no argument — `%c`, `% d`
//! and `%+d` among them. A conversion without an argument left, or with more than two
//! `h` or `l`, makes the whole event unparsable.

/// How a conversion prints its argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    /// `-`: left-justified.
    pub left: bool,
    /// `0`: padded with zeros.
    pub zero: bool,
    /// `#`: `0x` before hex, `0` before octal.
    pub alt: bool,
    /// The field width, when written as digits.
    pub width: Option<usize>,
    /// The precision, when written as digits (`.` alone: 0).
    pub precision: Option<usize>,
    /// Which of width and precision the `*` argument gives (true: precision).
    pub star_is_precision: bool,
    /// `h` (-1 each), `l` (+1 each), `L` (2), `z` (1).
    pub length: i32,
    /// The conversion character.
    pub conv: u8,
}

/// A piece of the output.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Piece {
    /// Text printed as is.
    Lit(Vec<u8>),
    /// A number conversion of argument `arg`; `star`: the argument giving the width or
    /// precision.
    Num {
        spec: Spec,
        arg: usize,
        star: Option<usize>,
    },
    /// A string conversion.
    Str {
        spec: Spec,
        arg: usize,
        star: Option<usize>,
    },
    /// A pointer conversion and its extension (`S`, `I4`, `ISpc`, `MR`, ...).
    Ptr {
        ext: Vec<u8>,
        arg: usize,
        star: Option<usize>,
    },
}

/// The pieces of `format` for `nargs` arguments, and the first reason the event cannot
/// be printed, if any (the pieces are cut on past it, as libtraceevent cuts them: a
/// conversion without an argument adds nothing).
pub(crate) fn pieces(format: &str, nargs: usize) -> (Vec<Piece>, Option<String>) {
    let b = format.as_bytes();
    let mut out = Vec::new();
    let mut next_arg = 0usize;
    let mut i = 0;
    let mut lit = Vec::new();
    let mut error = None;
    while i < b.len() {
        if b[i] == b'%' && b.get(i + 1) != Some(&b'%') {
            if !lit.is_empty() {
                out.push(Piece::Lit(std::mem::take(&mut lit)));
            }
            let (next, e) = conversion(b, i, nargs, &mut next_arg, &mut out);
            i = next;
            if error.is_none() {
                error = e;
            }
            continue;
        }
        match b[i] {
            b'%' => {
                lit.push(b'%');
                i += 2;
            }
            b'\\' => {
                match b.get(i + 1) {
                    Some(b'n') => lit.push(b'\n'),
                    Some(b't') => lit.push(b'\t'),
                    Some(b'r') => lit.push(b'\r'),
                    Some(&c) => lit.push(c),
                    None => {}
                }
                i += 2;
            }
            c => {
                lit.push(c);
                i += 1;
            }
        }
    }
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    (out, error)
}

/// The conversion at `b[start]` (a `%`): its piece pushed; returns where the text goes
/// on, and what makes the event unprintable, if anything. Out of arguments, the text goes
/// on at the character that wanted one (libtraceevent then prints it as text).
fn conversion(
    b: &[u8],
    start: usize,
    nargs: usize,
    next_arg: &mut usize,
    out: &mut Vec<Piece>,
) -> (usize, Option<String>) {
    let mut take = || {
        let a = *next_arg;
        if a >= nargs {
            return Err("no argument matches a conversion".to_string());
        }
        *next_arg += 1;
        Ok(a)
    };
    let mut error = None;
    let mut spec = Spec {
        left: false,
        zero: false,
        alt: false,
        width: None,
        precision: None,
        star_is_precision: false,
        length: 0,
        conv: 0,
    };
    let mut star = None;
    let mut in_precision = false;
    let mut i = start + 1;
    while let Some(&c) = b.get(i) {
        i += 1;
        match c {
            b'#' => spec.alt = true,
            b'h' => spec.length -= 1,
            b'l' => spec.length += 1,
            b'L' => spec.length = 2,
            b'z' | b'Z' => spec.length = 1,
            b'-' => spec.left = true,
            b'.' => {
                in_precision = true;
                spec.precision = Some(0);
            }
            b'0'..=b'9' => {
                let d = usize::from(c - b'0');
                if in_precision {
                    let p = spec.precision.unwrap_or(0);
                    spec.precision = Some(p.saturating_mul(10).saturating_add(d));
                } else if c == b'0' && spec.width.is_none() {
                    spec.zero = true;
                } else {
                    let w = spec.width.unwrap_or(0);
                    spec.width = Some(w.saturating_mul(10).saturating_add(d));
                }
            }
            b'*' => {
                if star.is_some() {
                    return (i - 1, Some("two `*` in one conversion".into()));
                }
                match take() {
                    Ok(a) => star = Some(a),
                    Err(e) => return (i - 1, Some(e)),
                }
                spec.star_is_precision = in_precision;
            }
            b'p' => {
                let ext_len = pointer_ext(&b[i..]);
                let ext = b[i..i + ext_len].to_vec();
                return match take() {
                    Ok(arg) => {
                        out.push(Piece::Ptr { ext, arg, star });
                        (i + ext_len, None)
                    }
                    Err(e) => (i - 1, Some(e)),
                };
            }
            b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b's' => {
                if c != b's' && !(-2..=2).contains(&spec.length) {
                    error = Some("a conversion with more than two `h` or `l`".into());
                }
                if i - start > if c == b's' { 31 } else { 30 } {
                    error = Some("a conversion longer than 30 characters".into());
                }
                spec.conv = c;
                let arg = match take() {
                    Ok(a) => a,
                    Err(e) => return (i - 1, Some(e)),
                };
                out.push(if c == b's' {
                    Piece::Str { spec, arg, star }
                } else {
                    Piece::Num { spec, arg, star }
                });
                return (i, error);
            }
            other => {
                out.push(Piece::Lit(vec![b'>', other, b'<']));
                return (i, None);
            }
        }
    }
    // The format ended inside the conversion: nothing is printed for it.
    (i, None)
}

/// How many characters after `%p` name its kind (`parse_arg_format_pointer`).
fn pointer_ext(f: &[u8]) -> usize {
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    match at(0) {
        b'F' | b'S' | b'f' | b's' => 1,
        b'M' | b'm' => 1 + usize::from(matches!(at(1), b'R' | b'F')),
        b'I' | b'i' => {
            let mut n = 0;
            let mut index = 2;
            let version = at(1);
            if version == b'S' {
                while matches!(at(index), b'p' | b'f' | b's') {
                    n += 1;
                    index += 1;
                }
            }
            if matches!(version, b'S' | b'4' | b'6') {
                if version != b'6' && matches!(at(index), b'h' | b'n' | b'l' | b'b') {
                    n += 1;
                    index += 1;
                }
                if version == b'4' {
                    n += 1;
                } else {
                    if at(index) == b'c' {
                        n += 1;
                    }
                    n += 1;
                }
            }
            n + 1
        }
        b'U' => 1 + usize::from(matches!(at(1), b'L' | b'l' | b'B' | b'b')),
        b'h' => 1 + usize::from(matches!(at(1), b'C' | b'D' | b'N')),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Piece {
        Piece::Lit(s.as_bytes().to_vec())
    }

    #[test]
    fn cuts_text_and_conversions() {
        let (p, e) = pieces(r"a=%-08lx\tb%%=%.*s %pS|%pISpc|%pI4%c", 6);
        assert_eq!(e, None);
        assert_eq!(p[0], lit("a="));
        let Piece::Num {
            spec,
            arg: 0,
            star: None,
        } = &p[1]
        else {
            panic!("{:?}", p[1]);
        };
        assert_eq!(
            (spec.left, spec.zero, spec.width, spec.length, spec.conv),
            (true, true, Some(8), 1, b'x')
        );
        assert_eq!(p[2], lit("\tb%="));
        let Piece::Str {
            spec,
            arg: 2,
            star: Some(1),
        } = &p[3]
        else {
            panic!("{:?}", p[3]);
        };
        assert!(spec.star_is_precision);
        assert_eq!(
            p[5],
            Piece::Ptr {
                ext: b"S".to_vec(),
                arg: 3,
                star: None
            }
        );
        assert_eq!(
            p[7],
            Piece::Ptr {
                ext: b"ISpc".to_vec(),
                arg: 4,
                star: None
            }
        );
        assert_eq!(
            p[9],
            Piece::Ptr {
                ext: b"I4".to_vec(),
                arg: 5,
                star: None
            }
        );
        assert_eq!(p[10], lit(">c<"));
        // Out of arguments: the event cannot be printed.
        let (p, e) = pieces(r"%d %d.", 1);
        assert!(e.is_some());
        assert_eq!(p[1..], [lit(" "), lit("d.")], "the text goes on at the `d`");
        assert!(pieces(r"%llld", 1).1.is_some());
        // `%c` takes no argument: `>c<`.
        assert_eq!(
            pieces("%c%d", 1).0,
            [lit(">c<"), pieces("%d", 1).0[0].clone()]
        );
        assert_eq!(pointer_ext(b"I6c"), 3);
        assert_eq!(pointer_ext(b"I4h"), 3);
        assert_eq!(pointer_ext(b"MR"), 2);
        assert_eq!(pointer_ext(b"K"), 0);
    }
}
