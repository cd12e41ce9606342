//! `ftrace:bprint` (trace_printk with arguments): the format is `%ps: ` and the
//! trace_printk format the record's `fmt` points to; the arguments are the record's `ip`
//! and the values packed in its `buf`, read as libtraceevent 1.7's `make_bprint_args`
//! reads them (which is not always as the kernel packed them: it reads no argument for a
//! conversion with `-`, `h` or a space, where the printing takes one).

use super::eval::Rec;
use super::expr::Expr;
use super::pieces::pieces;

/// Prints one bprint record; false when its format has more conversions than arguments
/// (libtraceevent then marks the event unparsable for the records after it).
pub(super) fn print(rec: &Rec<'_>, out: &mut Vec<u8>) -> bool {
    let (Some(fmt_field), Some(buf), Some(ip)) = (rec.own("fmt"), rec.own("buf"), rec.own("ip"))
    else {
        return true;
    };
    let addr = rec.read(fmt_field.offset, fmt_field.size);
    let format = match rec.syms.printk(addr) {
        Some(p) => format!("%ps: {p}"),
        None => format!("%ps: (NO FORMAT FOUND at {addr:x})\n"),
    };
    let ip = rec.read(ip.offset, ip.size);
    let args = packed_args(rec, &format, buf.offset, ip);
    let (pieces, error) = pieces(&format, args.len());
    super::print_pieces(rec, out, &pieces, &args);
    error.is_none()
}

/// The arguments: `ip`, then one per conversion of `format` (after its `%ps: `), read
/// from the record at `at` on: numbers 4-byte aligned (a `*` width too), strings inline.
fn packed_args(rec: &Rec<'_>, format: &str, mut at: usize, ip: u64) -> Vec<Expr> {
    let f = format.as_bytes();
    let c = |i: usize| f.get(i).copied().unwrap_or(0);
    let mut args = vec![Expr::Atom((ip as i64).to_string())];
    let mut p = 5;
    while at < rec.data.len() && p < f.len() {
        if c(p) == b'%' {
            let mut ls = 0i32;
            loop {
                p += 1;
                let ch = c(p);
                let string = match ch {
                    b'%' => break,
                    b'l' => {
                        ls += 1;
                        continue;
                    }
                    b'L' => {
                        ls = 2;
                        continue;
                    }
                    b'0'..=b'9' | b'.' | b'#' => continue,
                    b'z' | b'Z' => {
                        ls = 1;
                        continue;
                    }
                    b'p' => {
                        ls = 1;
                        if c(p + 1).is_ascii_alphanumeric() {
                            p += 1;
                            let plain = match c(p) {
                                b's' | b'S' | b'x' => true,
                                b'f' | b'F' => c(p + 1) != b'w',
                                _ => false,
                            };
                            // Older kernels print a dereferenced pointer's data inline.
                            !plain && rec.data.get(at).is_some_and(|&b| (0x20..0x7f).contains(&b))
                        } else {
                            false
                        }
                    }
                    b'd' | b'u' | b'i' | b'x' | b'X' | b'o' | b'*' => false,
                    b's' => true,
                    _ => break,
                };
                if string {
                    let s = rec.cstr(at).to_vec();
                    at += s.len() + 1;
                    args.push(Expr::Bstr(s));
                    break;
                }
                let size = if ch == b'*' {
                    4
                } else {
                    match ls {
                        0 => 4,
                        1 => rec.long_size,
                        2 => 8,
                        n => n.max(0) as usize,
                    }
                };
                at = (at + 3) & !3;
                let val = rec.read(at, size);
                at += size;
                args.push(Expr::Atom((val as i64).to_string()));
                if ch != b'*' {
                    break;
                }
            }
        }
        p += 1;
    }
    args
}
