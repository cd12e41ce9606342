//! Evaluating print-format arguments against one record, as libtraceevent 1.7 does
//! (`eval_num_arg`, `print_str_arg`): numbers are 64-bit unsigned (fields read
//! zero-extended, arithmetic wrapping), casts mask to the type's width, a field outside
//! the record reads as 0, and a string argument prints what its kind prints.

use std::borrow::Cow;

use super::cfmt;
use super::expr::{Expr, Op};
use super::pieces::Spec;
use super::{PField, ARRAY, RELATIVE};
use crate::format::Endian;

/// What a record's arguments are evaluated against: symbols and printk formats.
pub(crate) trait Symbols {
    /// The function holding `addr` and its start, as libtraceevent's `find_func` finds
    /// it (between one symbol and the next; the last one only at its own address).
    fn func(&self, addr: u64) -> Option<(Cow<'_, str>, u64)>;
    /// The address of the function named `name`, 0 when there is none.
    fn addr_of(&self, name: &str) -> u64;
    /// The trace_printk format at `addr`, as libtraceevent keeps it (quotes and a final
    /// `\n` taken off, escapes as written).
    fn printk(&self, addr: u64) -> Option<Cow<'_, str>>;
}

/// One record and what its fields mean.
pub(crate) struct Rec<'a> {
    pub data: &'a [u8],
    pub endian: Endian,
    pub long_size: usize,
    pub fields: &'a [PField],
    pub syms: &'a dyn Symbols,
}

/// C's `strtoull(s, NULL, 0)`: optional sign, `0x` hex, leading-`0` octal or decimal,
/// up to the first character that is not a digit; 0 without digits; saturating.
pub(crate) fn strtoull(s: &str) -> u64 {
    let s = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let b = s.as_bytes();
    let (radix, digits) = if (b.starts_with(b"0x") || b.starts_with(b"0X"))
        && b.get(2).is_some_and(|c| c.is_ascii_hexdigit())
    {
        (16, &b[2..])
    } else if b.first() == Some(&b'0') {
        (8, b)
    } else {
        (10, b)
    };
    let mut v: u64 = 0;
    for &c in digits {
        let Some(d) = char::from(c).to_digit(radix) else {
            break;
        };
        v = match v
            .checked_mul(u64::from(radix))
            .and_then(|v| v.checked_add(u64::from(d)))
        {
            Some(v) => v,
            None => return u64::MAX,
        };
    }
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

/// A cast of `val` to `ty` (`eval_type_str`): the fixed-width types, `char`, `short` and
/// `int` (signed or not: masked, never sign-extended) cut the value; anything else
/// (`long`, pointers, structs, typedefs) keeps it. With `pointer`, `ty` must end in `*`
/// and the type it points to is applied.
pub(crate) fn cast(val: u64, ty: &str, pointer: bool) -> u64 {
    if ty.len() < 2 {
        return val;
    }
    if pointer {
        return match ty.strip_suffix('*') {
            Some(base) => cast(val, &ty[..base.len().saturating_sub(1)], false),
            None => val,
        };
    }
    if ty.ends_with('*') || ty.starts_with("struct") {
        return val;
    }
    let ty = ty.strip_prefix("unsigned ").unwrap_or(ty);
    match ty {
        "u8" | "s8" | "char" => val & 0xff,
        "u16" | "s16" | "short" => val & 0xffff,
        "u32" | "s32" | "int" => val & 0xffff_ffff,
        _ => val,
    }
}

impl Rec<'_> {
    /// A number of `size` bytes at `off` (0 for other sizes or outside the record).
    pub(crate) fn read(&self, off: usize, size: usize) -> u64 {
        self.endian.uint(self.data, off, size).unwrap_or(0)
    }

    /// The bytes from `off` to the first NUL (or the record's end).
    pub(crate) fn cstr(&self, off: usize) -> &[u8] {
        let s = self.data.get(off..).unwrap_or(&[]);
        &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())]
    }

    /// The offset and length a dynamic field's location word gives (0, 0 when they do
    /// not fit the record), as `dynamic_offset_field` computes them.
    pub(crate) fn dyn_offset(&self, f: &PField) -> (usize, usize) {
        let size = self.data.len();
        if f.offset.saturating_add(f.size) > size {
            return (0, 0);
        }
        let val = self.read(f.offset, f.size);
        let o = (val & 0xffff) as usize;
        let l = if f.size == 2 {
            size.saturating_sub(o)
        } else {
            ((val >> 16) & 0xffff) as usize
        };
        let mut offset = if o > size { 0 } else { o };
        let len = if o + l > size { 0 } else { l };
        if f.is(RELATIVE) {
            offset += f.offset + f.size;
        }
        (offset, len)
    }

    fn field(&self, i: Option<usize>) -> Option<&PField> {
        self.fields.get(i?)
    }

    /// A field that is not a common one, by name (`tep_find_field`).
    pub(crate) fn own(&self, name: &str) -> Option<&PField> {
        self.fields.iter().find(|f| !f.common && &*f.name == name)
    }

    /// A field by name (common ones first).
    pub(crate) fn named(&self, name: &str) -> Option<&PField> {
        self.fields.iter().find(|f| &*f.name == name)
    }

    /// The value of `e` as a number (`eval_num_arg`).
    pub(crate) fn num(&self, e: &Expr) -> u64 {
        match e {
            Expr::Atom(a) => {
                let v = strtoull(a);
                if v == 0 && !a.starts_with(|c: char| c.is_ascii_digit()) {
                    self.syms.addr_of(a)
                } else {
                    v
                }
            }
            Expr::Field(_, i) => match self.field(*i) {
                Some(f) if f.offset.saturating_add(f.size) <= self.data.len() => {
                    self.read(f.offset, f.size)
                }
                _ => 0,
            },
            Expr::Cast(ty, inner) => cast(self.num(inner), ty, false),
            Expr::Unary(op, r) => {
                let r = self.num(r);
                match op {
                    Op::Neg => r.wrapping_neg(),
                    Op::Not => u64::from(r == 0),
                    Op::BitNot => !r,
                    _ => r,
                }
            }
            Expr::Binary(op, l, r) => binary(*op, self.num(l), self.num(r)),
            Expr::Cond(c, a, b) => {
                if self.num(c) != 0 {
                    self.num(a)
                } else {
                    self.num(b)
                }
            }
            Expr::Index(array, index) => self.index(array, index),
            Expr::DynArrayLen(i) => self
                .fields
                .get(*i)
                .map_or(0, |f| self.dyn_offset(f).1 as u64),
            // libtraceevent gives the address of the data in its own memory; the offset
            // in the record is the nearest thing that does not change from run to run.
            Expr::DynArray(i) => self
                .fields
                .get(*i)
                .map_or(0, |f| self.dyn_offset(f).0 as u64),
            _ => 0,
        }
    }

    /// `array[index]`: an element of a fixed array field (of its element size), or the
    /// byte `index` of a dynamic array's data read as an element (libtraceevent adds the
    /// index to the offset unscaled), cast as the array expression's outermost cast says.
    fn index(&self, array: &Expr, index: &Expr) -> u64 {
        let right = self.num(index);
        let outer_cast = match array {
            Expr::Cast(ty, _) => Some(ty),
            _ => None,
        };
        let (offset, size) = match array.uncast() {
            Expr::DynArray(i) => {
                let Some(f) = self.fields.get(*i) else {
                    return 0;
                };
                let size = if f.elementsize > 0 {
                    f.elementsize
                } else {
                    self.long_size
                };
                (self.dyn_offset(f).0 as u64 + right, size)
            }
            Expr::Field(_, i) => {
                let Some(f) = self.field(*i) else {
                    return 0;
                };
                let off = (f.offset as u64).wrapping_add(right.wrapping_mul(f.elementsize as u64));
                (off, f.elementsize)
            }
            // libtraceevent then evaluates `[` as an operator it does not know: 0.
            _ => return 0,
        };
        let Ok(offset) = usize::try_from(offset) else {
            return 0;
        };
        if offset.saturating_add(size) > self.data.len() {
            return 0;
        }
        let val = self.read(offset, size);
        match outer_cast {
            Some(ty) => cast(val, ty, true),
            None => val,
        }
    }

    /// `e` printed by a `%s` conversion `spec` (`print_str_arg`).
    pub(crate) fn string(&self, out: &mut Vec<u8>, spec: &Spec, star: Option<i64>, e: &Expr) {
        match e {
            Expr::Atom(a) => cfmt::string(out, spec, star, a.as_bytes()),
            Expr::Bstr(s) => cfmt::string(out, spec, star, s),
            Expr::Field(_, i) => {
                let Some(f) = self.field(*i) else {
                    return;
                };
                if !f.is(ARRAY) && f.size == self.long_size {
                    // A pointer: a trace_printk string it points to, else its hex.
                    let addr = if self.long_size == 8 {
                        self.data
                            .get(f.offset..f.offset + 8)
                            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                    } else {
                        self.data.get(f.offset..f.offset + 4).map_or(0, |b| {
                            u64::from(u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
                        })
                    };
                    match self.syms.printk(addr) {
                        Some(p) => out.extend_from_slice(p.as_bytes()),
                        None => out.extend_from_slice(format!("{addr:x}").as_bytes()),
                    }
                    return;
                }
                let end = if f.size == 0 {
                    self.data.len()
                } else {
                    f.offset.saturating_add(f.size).min(self.data.len())
                };
                let s = self.data.get(f.offset..end).unwrap_or(&[]);
                cfmt::string(out, spec, star, s);
            }
            Expr::Flags {
                value,
                delim,
                table,
            } => {
                let mut val = self.num(value) as i64;
                let mut printed = false;
                for (fval, name) in table {
                    let fval = *fval;
                    if val == 0 && fval < 0 {
                        cfmt::string(out, spec, star, name.as_bytes());
                        break;
                    }
                    if fval > 0 && (val & fval) == fval {
                        if printed {
                            if let Some(d) = delim {
                                out.extend_from_slice(d.as_bytes());
                            }
                        }
                        cfmt::string(out, spec, star, name.as_bytes());
                        printed = true;
                        val &= !fval;
                    }
                }
                if val != 0 {
                    if printed {
                        if let Some(d) = delim {
                            out.extend_from_slice(d.as_bytes());
                        }
                    }
                    out.extend_from_slice(format!("0x{:x}", val as u64).as_bytes());
                }
            }
            Expr::Symbolic { value, table } => {
                let val = self.num(value) as i64;
                match table.iter().find(|(v, _)| *v == val) {
                    Some((_, name)) => cfmt::string(out, spec, star, name.as_bytes()),
                    None => out.extend_from_slice(format!("0x{:x}", val as u64).as_bytes()),
                }
            }
            Expr::Hex { buf, len, joined } => {
                let Some(start) = self.buffer_start(buf) else {
                    return;
                };
                let len = self.num(len);
                let bytes = self.data.get(start..).unwrap_or(&[]);
                for (i, b) in bytes
                    .iter()
                    .take(len.min(bytes.len() as u64) as usize)
                    .enumerate()
                {
                    if i > 0 && !joined {
                        out.push(b' ');
                    }
                    out.extend_from_slice(format!("{b:02x}").as_bytes());
                }
            }
            Expr::IntArray { array, count, size } => {
                let Some(start) = self.buffer_start(array) else {
                    return;
                };
                let count = self.num(count);
                let size = self.num(size) as i32;
                let mut at = start;
                let mut i = 0u64;
                while i < count && at < self.data.len() {
                    if i > 0 {
                        out.push(b' ');
                    }
                    // libtraceevent reads the elements in the host's order.
                    let el = |n: usize| Endian::Little.uint(self.data, at, n).unwrap_or(0);
                    let step = match size {
                        1 | 2 | 4 | 8 => {
                            out.extend_from_slice(el(size as usize).to_string().as_bytes());
                            size as usize
                        }
                        _ => {
                            let b = self.data.get(at).copied().unwrap_or(0);
                            out.extend_from_slice(format!("BAD SIZE:{size} 0x{b:x}").as_bytes());
                            1
                        }
                    };
                    at += step;
                    i += 1;
                }
            }
            Expr::Str(name) => {
                let Some(f) = self.named(name) else {
                    return;
                };
                let (offset, len) = self.dyn_offset(f);
                if len == 0 {
                    return;
                }
                cfmt::string(out, spec, star, self.cstr(offset));
            }
            Expr::Bitmask(name) => {
                let Some(f) = self.named(name) else {
                    return;
                };
                let (offset, len) = self.dyn_offset(f);
                let bytes = self.data.get(offset..offset + len).unwrap_or(&[]);
                cfmt::string(out, spec, star, &bitmask(bytes, self.endian));
            }
            Expr::Cpumask(name) => {
                let Some(f) = self.named(name) else {
                    return;
                };
                let (offset, len) = self.dyn_offset(f);
                let bytes = self.data.get(offset..offset + len).unwrap_or(&[]);
                cfmt::string(out, spec, star, &cpumask(bytes, self.endian));
            }
            Expr::Cond(c, a, b) => {
                let branch = if self.num(c) != 0 { a } else { b };
                self.string(out, spec, star, branch);
            }
            // A cast, an operator, a dynamic array or its length print nothing.
            _ => {}
        }
    }

    /// Where the data of a `__print_hex` or `__print_array` argument starts: a dynamic
    /// array's, or a field's.
    fn buffer_start(&self, e: &Expr) -> Option<usize> {
        match e {
            Expr::DynArray(i) => Some(self.dyn_offset(self.fields.get(*i)?).0),
            Expr::Field(_, i) => Some(self.field(*i)?.offset),
            _ => None,
        }
    }
}

fn binary(op: Op, l: u64, r: u64) -> u64 {
    match op {
        Op::Mul => l.wrapping_mul(r),
        Op::Div => l.checked_div(r).unwrap_or(0),
        Op::Mod => l.checked_rem(r).unwrap_or(0),
        Op::Add => l.wrapping_add(r),
        Op::Sub => l.wrapping_sub(r),
        // x86 shifts by the count's low six bits.
        Op::Shl => l.wrapping_shl(r as u32),
        Op::Shr => l.wrapping_shr(r as u32),
        Op::Lt => u64::from(l < r),
        Op::Gt => u64::from(l > r),
        Op::Le => u64::from(l <= r),
        Op::Ge => u64::from(l >= r),
        Op::Eq => u64::from(l == r),
        Op::Ne => u64::from(l != r),
        Op::And => l & r,
        Op::Xor => l ^ r,
        Op::Or => l | r,
        Op::LogAnd => u64::from(l != 0 && r != 0),
        Op::LogOr => u64::from(l != 0 || r != 0),
        Op::Neg | Op::Plus | Op::Not | Op::BitNot => r,
    }
}

/// A bitmask as the kernel prints it: hex, most significant byte first, a comma every
/// 32 bits (`print_bitmask_to_seq`).
fn bitmask(bytes: &[u8], endian: Endian) -> Vec<u8> {
    let size = bytes.len();
    let nr_bits = size * 8;
    let str_size = nr_bits.div_ceil(4) + nr_bits.saturating_sub(1) / 32;
    let mut s = vec![0u8; str_size];
    let mut len = 0usize;
    let mut i = str_size as isize - 2;
    while i >= 0 {
        let index = match endian {
            Endian::Big => size - (len + 1),
            Endian::Little => len,
        };
        let hex = format!("{:02x}", bytes.get(index).copied().unwrap_or(0));
        s[i as usize..i as usize + 2].copy_from_slice(hex.as_bytes());
        len += 1;
        if len & 3 == 0 && i > 0 {
            i -= 1;
            s[i as usize] = b',';
        }
        i -= 2;
    }
    s
}

/// A CPU mask as a list of ranges (`0-3,8`), as `print_cpumask_to_seq` prints it.
fn cpumask(bytes: &[u8], endian: Endian) -> Vec<u8> {
    let size = bytes.len();
    let bit = |n: usize| {
        let byte = n / 8;
        let index = match endian {
            Endian::Big => size - (byte + 1),
            Endian::Little => byte,
        };
        ((bytes[index] >> (n % 8)) & 1) == 1
    };
    let mut out = Vec::new();
    let mut n = 0;
    while n < size * 8 {
        if !bit(n) {
            n += 1;
            continue;
        }
        let first = n;
        while n < size * 8 && bit(n) {
            n += 1;
        }
        if !out.is_empty() {
            out.push(b',');
        }
        out.extend_from_slice(first.to_string().as_bytes());
        if n - 1 > first {
            out.extend_from_slice(format!("-{}", n - 1).as_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_numbers_and_casts() {
        assert_eq!(strtoull("0x1fUL"), 31);
        assert_eq!(strtoull("1U"), 1);
        assert_eq!(strtoull("010"), 8);
        assert_eq!(strtoull("-1"), u64::MAX);
        assert_eq!(strtoull("R"), 0);
        assert_eq!(strtoull("99999999999999999999999"), u64::MAX);
        assert_eq!(cast(0x1_2345_6789, "unsigned int", false), 0x2345_6789);
        assert_eq!(cast(u64::MAX, "int", false), 0xffff_ffff);
        assert_eq!(cast(u64::MAX, "s8", false), 0xff);
        assert_eq!(cast(u64::MAX, "unsigned long", false), u64::MAX);
        assert_eq!(cast(0x1234, "u8 *", true), 0x34);
        assert_eq!(cast(0x1234, "void *", false), 0x1234);
    }

    #[test]
    fn masks() {
        assert_eq!(
            bitmask(&[0x0f, 0, 0, 0, 1, 0, 0, 0], Endian::Little),
            b"00000001,0000000f"
        );
        assert_eq!(
            cpumask(&[0b1011_0111, 0x01], Endian::Little),
            b"0-2,4-5,7-8"
        );
        assert_eq!(cpumask(&[], Endian::Little), b"");
    }
}
