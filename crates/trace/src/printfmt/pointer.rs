//! `%p` and its extensions, as libtraceevent 1.7 prints them (`print_arg_pointer`):
//! `%pS`/`%pF` a function and the offset into it (`name+0x0`), `%ps`/`%pf` its name,
//! `%pM` a MAC address, `%pI4`/`%pI6`/`%pI6c`/`%pIS` IP addresses (`%pISpc` with the
//! port), `%pU` a UUID, `%ph` bytes in hex; any other `%p` the address as glibc prints a
//! pointer (`0x1234`, `(nil)`).

use super::eval::Rec;
use super::expr::Expr;

/// Print argument `e` for the pointer conversion with extension `ext`; `star` is the
/// `*` argument (the byte count of `%*ph`).
pub(crate) fn pointer(rec: &Rec<'_>, out: &mut Vec<u8>, ext: &[u8], star: Option<i64>, e: &Expr) {
    if let Expr::Bstr(s) = e {
        out.extend_from_slice(s);
        return;
    }
    let at = |i: usize| ext.get(i).copied().unwrap_or(0);
    match at(0) {
        c @ (b'F' | b'f' | b'S' | b's') => {
            let val = rec.num(e);
            match rec.syms.func(val) {
                Some((name, start)) => {
                    out.extend_from_slice(name.as_bytes());
                    if matches!(c, b'F' | b'S') {
                        push(out, format!("+0x{:x}", val.wrapping_sub(start)));
                    }
                }
                None => push(out, format!("0x{val:x}")),
            }
        }
        b'M' | b'm' => mac(rec, out, ext, e),
        b'I' | b'i' => ip(rec, out, ext, e),
        b'U' => uuid(rec, out, ext, e),
        b'h' => hex_buffer(rec, out, ext, star.unwrap_or(1), e),
        _ => match rec.num(e) {
            0 => out.extend_from_slice(b"(nil)"),
            v => push(out, format!("0x{v:x}")),
        },
    }
}

fn push(out: &mut Vec<u8>, s: String) {
    out.extend_from_slice(s.as_bytes());
}

/// The field under the casts of `e`, or what libtraceevent prints instead: the kind of a
/// non-field argument, nothing for a field the event lacks.
fn field_bytes(rec: &Rec<'_>, out: &mut Vec<u8>, e: &Expr) -> Option<(usize, usize)> {
    match e.uncast() {
        Expr::Field(_, i) => {
            let f = rec.fields.get((*i)?)?;
            Some((f.offset, f.size))
        }
        other => {
            push(
                out,
                format!("ARG TYPE NOT FIELD BUT {}", other.type_number()),
            );
            None
        }
    }
}

fn bytes<'r>(rec: &'r Rec<'_>, offset: usize, n: usize) -> &'r [u8] {
    rec.data
        .get(offset..offset.saturating_add(n))
        .unwrap_or(&[])
}

fn mac(rec: &Rec<'_>, out: &mut Vec<u8>, ext: &[u8], e: &Expr) {
    let Some((offset, size)) = field_bytes(rec, out, e) else {
        return;
    };
    if size != 6 {
        out.extend_from_slice(b"INVALIDMAC");
        return;
    }
    let mut b = bytes(rec, offset, 6).to_vec();
    b.resize(6, 0);
    if ext.get(1) == Some(&b'R') {
        b.reverse();
    }
    let sep = match (ext[0], ext.get(1)) {
        (b'm', _) => "",
        (_, Some(b'F')) => "-",
        _ => ":",
    };
    let parts: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    push(out, parts.join(sep));
}

/// `%pi4`/`%pI4`: four bytes, `reverse`d for the `h` (host order, on a little-endian
/// file) and `l` suffixes; `i` pads each to three digits.
fn ip4(out: &mut Vec<u8>, i: u8, reverse: bool, b: &[u8]) {
    let mut b = [
        b.first().copied().unwrap_or(0),
        b.get(1).copied().unwrap_or(0),
        b.get(2).copied().unwrap_or(0),
        b.get(3).copied().unwrap_or(0),
    ];
    if reverse {
        b.reverse();
    }
    if i == b'i' {
        push(
            out,
            format!("{:03}.{:03}.{:03}.{:03}", b[0], b[1], b[2], b[3]),
        );
    } else {
        push(out, format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3]));
    }
}

/// The byte-order suffix of an IPv4 conversion: (reversed, characters read).
fn ip4_order(rec: &Rec<'_>, c: u8) -> bool {
    match c {
        b'h' => rec.endian == crate::format::Endian::Little,
        b'l' => true,
        _ => false,
    }
}

/// An IPv6 address: `%pI6` as eight colon-separated groups of four digits, `%pi6`
/// without colons, `%pI6c` compressed (the longest run of zero groups as `::`, a
/// v4-mapped or ISATAP address ending in dotted IPv4).
fn ip6(out: &mut Vec<u8>, i: u8, compressed: bool, b: &[u8]) {
    let mut a = [0u8; 16];
    for (d, s) in a.iter_mut().zip(b) {
        *d = *s;
    }
    if !compressed {
        for j in (0..16).step_by(2) {
            push(out, format!("{:02x}{:02x}", a[j], a[j + 1]));
            if i == b'I' && j < 14 {
                out.push(b':');
            }
        }
        return;
    }
    let word = |k: usize| u16::from_be_bytes([a[2 * k], a[2 * k + 1]]);
    let v4mapped = a[..10].iter().all(|&x| x == 0) && a[10] == 0xff && a[11] == 0xff;
    let isatap = (a[8] | 0x02) == 0x02 && a[9] == 0 && a[10] == 0x5e && a[11] == 0xfe;
    let use_v4 = v4mapped || isatap;
    let range = if use_v4 { 6 } else { 8 };
    let mut zeros = [0usize; 8];
    for (k, z) in zeros.iter_mut().enumerate().take(range) {
        *z = (k..range).take_while(|&j| word(j) == 0).count();
    }
    let mut longest = 1;
    let mut colonpos = None;
    for (k, &z) in zeros.iter().enumerate().take(range) {
        if z > longest {
            longest = z;
            colonpos = Some(k);
        }
    }
    let mut needcolon = false;
    let mut k = 0;
    while k < range {
        if Some(k) == colonpos {
            if needcolon || k == 0 {
                out.push(b':');
            }
            out.push(b':');
            needcolon = false;
            k += longest;
            continue;
        }
        if needcolon {
            out.push(b':');
        }
        let w = word(k);
        let (hi, lo) = (w >> 8, w & 0xff);
        if hi != 0 {
            push(out, format!("{hi:x}{lo:02x}"));
        } else {
            push(out, format!("{lo:x}"));
        }
        needcolon = true;
        k += 1;
    }
    if use_v4 {
        if needcolon {
            out.push(b':');
        }
        ip4(out, b'I', false, &a[12..16]);
    }
}

fn ip(rec: &Rec<'_>, out: &mut Vec<u8>, ext: &[u8], e: &Expr) {
    let at = |i: usize| ext.get(i).copied().unwrap_or(0);
    let i = at(0);
    match at(1) {
        b'4' => {
            let reverse = ip4_order(rec, at(2));
            let Some((offset, size)) = field_bytes(rec, out, e) else {
                return;
            };
            if size != 4 {
                out.extend_from_slice(b"INVALIDIPv4");
                return;
            }
            ip4(out, i, reverse, bytes(rec, offset, 4));
        }
        b'6' => {
            let compressed = i == b'I' && at(2) == b'c';
            let Some((offset, size)) = field_bytes(rec, out, e) else {
                return;
            };
            if size != 16 {
                out.extend_from_slice(b"INVALIDIPv6");
                return;
            }
            ip6(out, i, compressed, bytes(rec, offset, 16));
        }
        b'S' => {
            let mut k = 2;
            let (mut port, mut compressed) = (false, false);
            if i == b'I' {
                if at(k) == b'p' {
                    port = true;
                    k += 1;
                }
                if at(k) == b'c' {
                    compressed = true;
                    k += 1;
                }
            }
            let reverse = ip4_order(rec, at(k));
            let (offset, len) = match e.uncast() {
                Expr::Field(_, f) => match f.and_then(|f| rec.fields.get(f)) {
                    Some(f) => (f.offset, f.size),
                    None => return,
                },
                Expr::DynArray(f) => match rec.fields.get(*f) {
                    Some(f) => rec.dyn_offset(f),
                    None => return,
                },
                other => {
                    push(
                        out,
                        format!(
                            "ARG NOT FIELD NOR DYNAMIC ARRAY BUT TYPE {}",
                            other.type_number()
                        ),
                    );
                    return;
                }
            };
            let sa = bytes(rec, offset, len.max(2));
            let family = u16::from_le_bytes([
                sa.first().copied().unwrap_or(0),
                sa.get(1).copied().unwrap_or(0),
            ]);
            let port_of = |sa: &[u8]| {
                u16::from_be_bytes([
                    sa.get(2).copied().unwrap_or(0),
                    sa.get(3).copied().unwrap_or(0),
                ])
            };
            match family {
                2 => {
                    if len < 16 {
                        out.extend_from_slice(b"INVALIDIPv4");
                        return;
                    }
                    ip4(out, i, reverse, sa.get(4..8).unwrap_or(&[]));
                    if port {
                        push(out, format!(":{}", port_of(sa)));
                    }
                }
                10 => {
                    if len < 28 {
                        out.extend_from_slice(b"INVALIDIPv6");
                        return;
                    }
                    if port {
                        out.push(b'[');
                    }
                    ip6(out, i, compressed, sa.get(8..24).unwrap_or(&[]));
                    if port {
                        push(out, format!("]:{}", port_of(sa)));
                    }
                }
                _ => {}
            }
        }
        _ => {}
    }
}

fn uuid(rec: &Rec<'_>, out: &mut Vec<u8>, ext: &[u8], e: &Expr) {
    const GUID: [usize; 16] = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
    let (guid, upper) = match ext.get(1) {
        Some(b'L') => (true, true),
        Some(b'l') => (true, false),
        Some(b'B') => (false, true),
        _ => (false, false),
    };
    let Some((offset, size)) = field_bytes(rec, out, e) else {
        return;
    };
    if size != 16 {
        out.extend_from_slice(b"INVALIDUUID");
        return;
    }
    let b = bytes(rec, offset, 16);
    for (k, &g) in GUID.iter().enumerate() {
        let x = b.get(if guid { g } else { k }).copied().unwrap_or(0);
        if upper {
            push(out, format!("{x:02X}"));
        } else {
            push(out, format!("{x:02x}"));
        }
        if matches!(k, 3 | 5 | 7 | 9) {
            out.push(b'-');
        }
    }
}

/// `%*ph`: the first `n` bytes of a dynamic array in hex, apart by a space (`C`: `:`,
/// `D`: `-`, `N`: nothing).
fn hex_buffer(rec: &Rec<'_>, out: &mut Vec<u8>, ext: &[u8], n: i64, e: &Expr) {
    let delim: &[u8] = match ext.get(1) {
        Some(b'C') => b":",
        Some(b'D') => b"-",
        Some(b'N') => b"",
        _ => b" ",
    };
    let Expr::DynArray(f) = e else {
        push(out, format!("ARG TYPE NOT FIELD BUT {}", e.type_number()));
        return;
    };
    let Some(f) = rec.fields.get(*f) else {
        return;
    };
    let (offset, len) = rec.dyn_offset(f);
    let n = (n as i32).min(len as i32);
    if n < 1 {
        return;
    }
    for (k, b) in bytes(rec, offset, n as usize).iter().enumerate() {
        if k > 0 {
            out.extend_from_slice(delim);
        }
        push(out, format!("{b:02x}"));
    }
}
