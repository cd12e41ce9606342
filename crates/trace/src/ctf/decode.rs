//! Reading CTF fields from stream bytes: a bit cursor (any size from 1 to 64 bits, at any
//! bit, either byte order, as CTF 1.8 lays bit fields out), and the walk of a [`Type`]
//! that turns bytes into [`Leaf`] values in reusable buffers.
//!
//! Little-endian fields take their bits from the least significant bit of each byte
//! first, big-endian ones from the most significant (CTF 1.8, section 4.1.5). Alignments
//! are counted from the start of the packet.

use super::types::{align_up, IntType, Layout, Type, BYTE};

/// What went wrong at a bit of a stream file; the reader adds the file's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The packet's content ends at `end` (a bit of the file) before `what` at bit `at`.
    Short { at: u64, what: &'static str },
    /// A value that cannot be: the message says which.
    Bad { at: u64, msg: String },
    /// Over a bound of this reader.
    Limit { at: u64, msg: String },
}

pub(crate) type Res<T> = std::result::Result<T, Fault>;

/// A position in a stream file's bytes: the current bit, the bit its packet starts at
/// (alignments count from there) and the bit its content ends at.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor<'a> {
    pub data: &'a [u8],
    pub bit: u64,
    pub base: u64,
    pub end: u64,
}

impl<'a> Cursor<'a> {
    /// Moves to the next multiple of `align` bits from the packet's start.
    #[inline]
    pub(crate) fn align(&mut self, align: u32, what: &'static str) -> Res<()> {
        if align > 1 {
            let rel =
                align_up(self.bit - self.base, align).ok_or(Fault::Short { at: self.bit, what })?;
            let at = self.base.saturating_add(rel);
            if at > self.end {
                return Err(Fault::Short { at: self.bit, what });
            }
            self.bit = at;
        }
        Ok(())
    }

    /// Skips `bits`.
    pub(crate) fn skip(&mut self, bits: u64, what: &'static str) -> Res<()> {
        match self.bit.checked_add(bits) {
            Some(at) if at <= self.end => {
                self.bit = at;
                Ok(())
            }
            _ => Err(Fault::Short { at: self.bit, what }),
        }
    }

    /// Reads `size` bits (1..=64) as an unsigned number.
    #[inline]
    pub(crate) fn bits(&mut self, size: u8, be: bool, what: &'static str) -> Res<u64> {
        let size64 = u64::from(size);
        let start = self.bit;
        if start + size64 > self.end {
            return Err(Fault::Short { at: start, what });
        }
        let byte = (start / 8) as usize;
        let shift = (start % 8) as u32;
        let v = if shift == 0 && size % 8 == 0 {
            let n = usize::from(size / 8);
            let raw = self
                .data
                .get(byte..byte + n)
                .ok_or(Fault::Short { at: start, what })?;
            load(raw, be)
        } else {
            let n = (shift as usize + usize::from(size)).div_ceil(8);
            let raw = self
                .data
                .get(byte..byte + n)
                .ok_or(Fault::Short { at: start, what })?;
            let mut acc: u128 = 0;
            if be {
                for &b in raw {
                    acc = (acc << 8) | u128::from(b);
                }
                let drop = (n * 8) as u32 - shift - u32::from(size);
                (acc >> drop) as u64
            } else {
                for &b in raw.iter().rev() {
                    acc = (acc << 8) | u128::from(b);
                }
                (acc >> shift) as u64
            }
        };
        self.bit = start + size64;
        Ok(if size == 64 {
            v
        } else {
            v & ((1u64 << size) - 1)
        })
    }

    /// Reads an integer field (aligned first); the value sign-extended when signed.
    #[inline]
    pub(crate) fn int(&mut self, t: &IntType, what: &'static str) -> Res<u64> {
        self.align(t.align, what)?;
        let v = self.bits(t.size, t.be.unwrap_or(false), what)?;
        Ok(if t.signed && t.size < 64 {
            let s = 64 - u32::from(t.size);
            (((v << s) as i64) >> s) as u64
        } else {
            v
        })
    }

    /// The bytes from the current bit (which must be on a byte) up to a NUL, without it;
    /// moves past the NUL.
    fn cstring(&mut self) -> Res<&'a [u8]> {
        let at = self.bit;
        let from = (at / 8) as usize;
        let to = (self.end / 8) as usize;
        let rest = self
            .data
            .get(from..to)
            .ok_or(Fault::Short { at, what: "string" })?;
        let n = memchr::memchr(0, rest).ok_or(Fault::Short {
            at,
            what: "string (no NUL before the end of the packet's content)",
        })?;
        self.bit = at + (n as u64 + 1) * 8;
        Ok(&rest[..n])
    }
}

/// The number in `raw` (1 to 8 bytes) in either byte order.
#[inline]
fn load(raw: &[u8], be: bool) -> u64 {
    // The usual sizes without a copy of variable length (a call to memcpy each).
    match (raw.len(), be) {
        (1, _) => u64::from(raw[0]),
        (2, false) => raw
            .first_chunk()
            .map_or(0, |b| u16::from_le_bytes(*b).into()),
        (2, true) => raw
            .first_chunk()
            .map_or(0, |b| u16::from_be_bytes(*b).into()),
        (4, false) => raw
            .first_chunk()
            .map_or(0, |b| u32::from_le_bytes(*b).into()),
        (4, true) => raw
            .first_chunk()
            .map_or(0, |b| u32::from_be_bytes(*b).into()),
        (8, false) => raw.first_chunk().map_or(0, |b| u64::from_le_bytes(*b)),
        (8, true) => raw.first_chunk().map_or(0, |b| u64::from_be_bytes(*b)),
        (n, _) => {
            let n = n.min(8);
            let mut buf = [0u8; 8];
            if be {
                buf[8 - n..].copy_from_slice(&raw[..n]);
                u64::from_be_bytes(buf)
            } else {
                buf[..n].copy_from_slice(&raw[..n]);
                u64::from_le_bytes(buf)
            }
        }
    }
}

/// One decoded value. Strings are ranges of [`Decoder::bytes`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Leaf {
    /// A signed integer (or enumeration).
    Int(i64),
    /// An unsigned integer (or enumeration).
    Uint(u64),
    /// A floating-point number.
    Float(f64),
    /// Text: `bytes[start..start + len]` (cut at the first NUL).
    Str(u32, u32),
    /// The element count of a sequence (its elements follow).
    Len(u32),
    /// The option a variant chose (its value follows).
    Pick(u32),
}

/// The most values one event may decode to: bounds the memory an absurd sequence
/// length could ask for.
pub(crate) const MAX_LEAVES: usize = 1 << 20;

/// Decodes types into reusable buffers, keeping the registers (the last value of each
/// integer node), the stream's clock and the event id met in a header.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The last value decoded of each integer node, by [`IntType::reg`].
    pub regs: Vec<u64>,
    /// The stream's clock, in cycles (updated by the integers mapped to a clock).
    pub clock: u64,
    /// The event id an event header gave (its `id` fields, the last one decoded).
    pub id: Option<u64>,
    /// The values decoded, unless `record` is off.
    pub leaves: Vec<Leaf>,
    /// The text of the strings among `leaves`.
    pub bytes: Vec<u8>,
    /// Keep values (off: only registers, clock and id are updated).
    pub record: bool,
}

impl Decoder {
    pub(crate) fn new(regs: usize) -> Decoder {
        Decoder {
            regs: vec![0; regs],
            record: true,
            ..Decoder::default()
        }
    }

    /// Forgets the values decoded (the registers stay).
    pub(crate) fn clear(&mut self) {
        self.leaves.clear();
        self.bytes.clear();
    }

    fn push(&mut self, leaf: Leaf, at: u64) -> Res<()> {
        if self.record {
            if self.leaves.len() >= MAX_LEAVES {
                return Err(Fault::Limit {
                    at,
                    msg: format!("an event of more than {MAX_LEAVES} values"),
                });
            }
            self.leaves.push(leaf);
        }
        Ok(())
    }

    fn push_str(&mut self, s: &[u8], at: u64) -> Res<()> {
        if self.record {
            let s = match memchr::memchr(0, s) {
                Some(n) => &s[..n],
                None => s,
            };
            let start = self.bytes.len() as u32;
            self.bytes.extend_from_slice(s);
            self.push(Leaf::Str(start, s.len() as u32), at)?;
        }
        Ok(())
    }

    /// The text of a [`Leaf::Str`].
    pub(crate) fn text(&self, start: u32, len: u32) -> &[u8] {
        self.bytes
            .get(start as usize..start as usize + len as usize)
            .unwrap_or(&[])
    }

    /// Decodes a structure at the top of a scope, pushing the index of each top-level
    /// field's first leaf to `tops` (so a field is found by its index in the type).
    pub(crate) fn root(&mut self, ty: &Type, cur: &mut Cursor, tops: &mut Vec<u32>) -> Res<()> {
        tops.clear();
        match ty {
            Type::Struct(s) => {
                cur.align(s.align, "structure")?;
                let first = self.leaves.len() as u32;
                if let Some(l) = &s.layout {
                    if self.laid_out(l, cur) {
                        // One value per field.
                        let step = u32::from(self.record);
                        tops.extend((0..l.slots.len() as u32).map(|i| first + i * step));
                        return Ok(());
                    }
                }
                for f in &s.fields {
                    tops.push(self.leaves.len() as u32);
                    self.value(&f.ty, cur)?;
                }
                Ok(())
            }
            t => {
                tops.push(self.leaves.len() as u32);
                self.value(t, cur)
            }
        }
    }

    /// Moves past a value of `ty` without keeping it: at once when its size is fixed,
    /// else by decoding it with `record` off.
    pub(crate) fn skip(&mut self, ty: &Type, fixed: Option<u64>, cur: &mut Cursor) -> Res<()> {
        match fixed {
            Some(bits) => {
                cur.align(ty.align(), "event payload")?;
                cur.skip(bits, "event payload")
            }
            None => {
                let was = std::mem::replace(&mut self.record, false);
                let r = self.value(ty, cur);
                self.record = was;
                r
            }
        }
    }

    /// Reads a structure of [`Layout`] `l` at `cur` (aligned): its fields at their
    /// offsets, with what [`Decoder::value`] does for each integer. `false` (nothing
    /// read) when the structure does not start on a byte or does not fit in the packet's
    /// content, or its values would pass [`MAX_LEAVES`]: the walk of its type reads it
    /// then, or names the fault.
    #[inline]
    fn laid_out(&mut self, l: &Layout, cur: &mut Cursor) -> bool {
        let bits = l.bytes as u64 * 8;
        if cur.bit % 8 != 0 || cur.end.saturating_sub(cur.bit) < bits {
            return false;
        }
        if self.record && self.leaves.len() + l.slots.len() > MAX_LEAVES {
            return false;
        }
        let from = (cur.bit / 8) as usize;
        let Some(bytes) = cur.data.get(from..from + l.bytes) else {
            return false;
        };
        for s in &l.slots {
            let raw = bytes.get(s.at..s.at + s.len).unwrap_or(&[]);
            let mut v = load(raw, s.be);
            if s.signed && s.len < 8 {
                let shift = 64 - 8 * s.len as u32;
                v = (((v << shift) as i64) >> shift) as u64;
            }
            if let Some(r) = self.regs.get_mut(s.reg as usize) {
                *r = v;
            }
            if s.is_id {
                self.id = Some(v);
            }
            if s.clock {
                self.clock = extend(self.clock, v, (s.len * 8) as u8);
            }
            if self.record {
                self.leaves.push(if s.signed {
                    Leaf::Int(v as i64)
                } else {
                    Leaf::Uint(v)
                });
            }
        }
        cur.bit += bits;
        true
    }

    fn int(&mut self, t: &IntType, cur: &mut Cursor) -> Res<u64> {
        let v = cur.int(t, "integer")?;
        if let Some(r) = self.regs.get_mut(t.reg as usize) {
            *r = v;
        }
        if t.is_id {
            self.id = Some(v);
        }
        if let Some(super::types::ClockRef::Index(_)) = t.clock {
            self.clock = extend(self.clock, v, t.size);
        }
        Ok(v)
    }

    /// Decodes one value of `ty`.
    pub(crate) fn value(&mut self, ty: &Type, cur: &mut Cursor) -> Res<()> {
        let at = cur.bit;
        match ty {
            Type::Int(t) => {
                let v = self.int(t, cur)?;
                self.push(
                    if t.signed {
                        Leaf::Int(v as i64)
                    } else {
                        Leaf::Uint(v)
                    },
                    at,
                )
            }
            Type::Enum(e) => {
                let v = self.int(&e.int, cur)?;
                let signed = e.int.signed;
                self.push(
                    if signed {
                        Leaf::Int(v as i64)
                    } else {
                        Leaf::Uint(v)
                    },
                    at,
                )
            }
            Type::Float(f) => {
                cur.align(f.align, "floating-point number")?;
                let v = cur.bits(f.size, f.be.unwrap_or(false), "floating-point number")?;
                let x = if f.size == 32 {
                    f64::from(f32::from_bits(v as u32))
                } else {
                    f64::from_bits(v)
                };
                self.push(Leaf::Float(x), at)
            }
            Type::String => {
                cur.align(BYTE, "string")?;
                let s = cur.cstring()?;
                self.push_str(s, at)
            }
            Type::Struct(s) => {
                cur.align(s.align, "structure")?;
                if let Some(l) = &s.layout {
                    if self.laid_out(l, cur) {
                        return Ok(());
                    }
                }
                for f in &s.fields {
                    self.value(&f.ty, cur)?;
                }
                Ok(())
            }
            Type::Array { elem, len } => self.elements(elem, *len, cur, false),
            Type::Sequence { elem, len } => {
                let n = len
                    .reg
                    .and_then(|r| self.regs.get(r as usize))
                    .copied()
                    .unwrap_or(0);
                self.elements(elem, n, cur, true)
            }
            Type::Variant {
                options, choices, ..
            } => {
                let tag = match ty {
                    Type::Variant { tag: Some(t), .. } => t.reg,
                    _ => None,
                };
                let raw = tag
                    .and_then(|r| self.regs.get(r as usize))
                    .copied()
                    .ok_or_else(|| Fault::Bad {
                        at,
                        msg: "a variant without a tag".into(),
                    })?;
                let pick = choices
                    .pick(raw)
                    .filter(|&i| i < options.len())
                    .ok_or_else(|| Fault::Bad {
                        at,
                        msg: format!(
                            "the tag value {} selects no option of the variant",
                            if choices.signed {
                                (raw as i64).to_string()
                            } else {
                                raw.to_string()
                            }
                        ),
                    })?;
                self.push(Leaf::Pick(pick as u32), at)?;
                self.value(&options[pick].ty, cur)
            }
        }
    }

    fn elements(&mut self, elem: &Type, n: u64, cur: &mut Cursor, counted: bool) -> Res<()> {
        let at = cur.bit;
        let left = cur.end.saturating_sub(cur.bit);
        let min = elem.min_bits();
        if min > 0 && n.saturating_mul(min) > left {
            return Err(Fault::Short {
                at,
                what: "array or sequence (its length is past the end of the packet's content)",
            });
        }
        if min == 0 && n > MAX_LEAVES as u64 {
            return Err(Fault::Limit {
                at,
                msg: format!("an array or sequence of {n} empty elements"),
            });
        }
        if counted {
            self.push(Leaf::Len(n as u32), at)?;
        }
        if elem.is_text_elem() {
            cur.align(elem.align(), "text")?;
            let from = (cur.bit / 8) as usize;
            let bytes = cur
                .data
                .get(from..from + n as usize)
                .ok_or(Fault::Short { at, what: "text" })?;
            cur.skip(n * 8, "text")?;
            return self.push_str(bytes, at);
        }
        for _ in 0..n {
            self.value(elem, cur)?;
        }
        Ok(())
    }
}

/// A clock value of `size` bits extended from the previous full value, as CTF 1.8
/// (section 8) says: the low bits replaced, plus one wrap when they went down.
pub(crate) fn extend(prev: u64, v: u64, size: u8) -> u64 {
    if size >= 64 {
        return v;
    }
    let mask = (1u64 << size) - 1;
    let mut new = (prev & !mask) | (v & mask);
    if v & mask < prev & mask {
        new = new.wrapping_add(1u64 << size);
    }
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cur(data: &[u8]) -> Cursor<'_> {
        Cursor {
            data,
            bit: 0,
            base: 0,
            end: data.len() as u64 * 8,
        }
    }

    #[test]
    fn bit_fields_in_both_byte_orders() {
        // Little-endian: 5 bits then 27 bits from the least significant bits up.
        let word: u32 = (0x123_4567 << 5) | 0x1f;
        let le = word.to_le_bytes();
        let mut c = cur(&le);
        assert_eq!(c.bits(5, false, "").unwrap(), 0x1f);
        assert_eq!(c.bits(27, false, "").unwrap(), 0x123_4567);
        // Big-endian: the first field is in the most significant bits.
        let word: u32 = (0x1f << 27) | 0x123_4567;
        let be = word.to_be_bytes();
        let mut c = cur(&be);
        assert_eq!(c.bits(5, true, "").unwrap(), 0x1f);
        assert_eq!(c.bits(27, true, "").unwrap(), 0x123_4567);
        assert!(matches!(
            c.bits(1, true, ""),
            Err(Fault::Short { at: 32, .. })
        ));
        // 64 bits at an odd bit.
        let mut data = [0u8; 9];
        let v: u64 = 0xfedc_ba98_7654_3210;
        let wide = (u128::from(v) << 3) | 0b101;
        data.copy_from_slice(&wide.to_le_bytes()[..9]);
        let mut c = cur(&data);
        assert_eq!(c.bits(3, false, "").unwrap(), 0b101);
        assert_eq!(c.bits(64, false, "").unwrap(), v);
    }

    #[test]
    fn laid_out_structures_read_as_their_walk_does() {
        use super::super::types::{Field, StructType};
        let int = |size: u8, signed: bool, be: bool, reg: u32| {
            let mut i = IntType::new(size);
            i.signed = signed;
            i.align = u32::from(size);
            i.be = Some(be);
            i.reg = reg;
            Type::Int(i)
        };
        for be in [false, true] {
            let s = StructType {
                fields: vec![
                    Field::new("_a", int(8, true, be, 0)),
                    Field::new("_b", int(32, false, be, 1)),
                    Field::new("_c", int(16, true, be, 2)),
                    Field::new("_d", int(64, false, be, 3)),
                ],
                align: 64,
                layout: None,
            };
            let layout = Layout::of(&s).map(Box::new);
            assert_eq!(layout.as_ref().map(|l| l.bytes), Some(24));
            let walked = Type::Struct(s.clone());
            let laid = Type::Struct(StructType { layout, ..s });
            let data: Vec<u8> = (0..40u8).map(|b| b.wrapping_mul(37) | 0x80).collect();
            for (start, len) in [(0u64, 40usize), (64, 40), (8, 40), (64, 20), (0, 23)] {
                let run = |t: &Type| {
                    let mut d = Decoder::new(4);
                    let mut c = Cursor {
                        data: &data[..len],
                        bit: start,
                        base: 0,
                        end: len as u64 * 8,
                    };
                    let mut tops = Vec::new();
                    let r = d.root(t, &mut c, &mut tops);
                    (r, c.bit, d.leaves, d.regs, tops)
                };
                assert_eq!(run(&laid), run(&walked), "be {be}, at {start}, {len} bytes");
            }
        }
        let packed = StructType {
            fields: vec![Field::new("x", int(5, false, false, 0))],
            align: 1,
            layout: None,
        };
        assert_eq!(Layout::of(&packed), None);
    }

    #[test]
    fn clocks_extend_over_wraps() {
        assert_eq!(extend(0, 5, 27), 5);
        assert_eq!(extend((1 << 27) - 2, 3, 27), (1 << 27) + 3);
        assert_eq!(extend(7 << 27 | 100, 100, 27), 7 << 27 | 100);
        assert_eq!(extend(123, 9, 64), 9);
    }
}
