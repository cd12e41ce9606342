//! The blocks of TSDL's scalar types, `integer { ... }` and `floating_point { ... }`,
//! and byte orders: their entries read into [`IntType`] and [`FloatType`].

use super::{Entry, Parser, Val};
use crate::ctf::types::{ClockRef, Encoding, FloatType, IntType, Type, BYTE};
use crate::{Error, ErrorKind, Location, Result};

impl Parser<'_> {
    pub(super) fn integer(&self, entries: Vec<(String, u32, Entry)>, line: u32) -> Result<IntType> {
        let mut size = None;
        let mut t = IntType::new(8);
        let mut align = None;
        for (key, l, v) in entries {
            let bad =
                |what: &str| self.error_at(l, format!("expected {what} for the integer's {key}"));
            match (key.as_str(), v) {
                ("size", Entry::Val(Val::Int(n))) if (1..=64).contains(&n) => size = Some(n as u8),
                ("size", _) => return Err(bad("a size of 1 to 64 bits")),
                ("align", Entry::Val(Val::Int(n)))
                    if n > 0 && (n as u64).is_power_of_two() && n <= 1 << 16 =>
                {
                    align = Some(n as u32)
                }
                ("align", _) => return Err(bad("a power of two")),
                ("signed", Entry::Val(v)) => {
                    t.signed = match v {
                        Val::Int(n) => n != 0,
                        Val::Path(p) if p.eq_ignore_ascii_case("true") => true,
                        Val::Path(p) if p.eq_ignore_ascii_case("false") => false,
                        _ => return Err(bad("true or false")),
                    }
                }
                ("byte_order", Entry::Val(Val::Path(b))) => t.be = self.byte_order(&b, l)?,
                ("base", Entry::Val(v)) => {
                    t.base = match v {
                        Val::Int(n @ (2 | 8 | 10 | 16)) => n as u8,
                        Val::Path(p) => match p.as_str() {
                            "decimal" | "dec" | "d" | "i" | "u" => 10,
                            "hexadecimal" | "hex" | "x" | "X" | "p" => 16,
                            "octal" | "oct" | "o" => 8,
                            "binary" | "b" => 2,
                            _ => return Err(bad("a base (2, 8, 10, 16, hex, ...)")),
                        },
                        _ => return Err(bad("a base (2, 8, 10, 16, hex, ...)")),
                    }
                }
                ("encoding", Entry::Val(Val::Path(e))) => {
                    t.encoding = match e.as_str() {
                        "none" => Encoding::None,
                        "UTF8" | "utf8" | "ASCII" | "ascii" => Encoding::Text,
                        _ => return Err(bad("none, UTF8 or ASCII")),
                    }
                }
                ("map", Entry::Val(Val::Path(p))) => {
                    let clock = p
                        .strip_prefix("clock.")
                        .and_then(|c| c.strip_suffix(".value"))
                        .ok_or_else(|| bad("`clock.NAME.value`"))?;
                    t.clock = Some(ClockRef::Named(clock.into(), l));
                }
                _ => {}
            }
        }
        let size = size.ok_or_else(|| self.error_at(line, "expected a `size` in the integer"))?;
        t.size = size;
        t.align = align.unwrap_or(if size % 8 == 0 { BYTE } else { 1 });
        Ok(t)
    }

    pub(super) fn byte_order(&self, b: &str, line: u32) -> Result<Option<bool>> {
        Ok(match b {
            "native" => None,
            "be" | "network" | "big_endian" => Some(true),
            "le" | "little_endian" => Some(false),
            _ => {
                return Err(self.error_at(
                    line,
                    format!("expected a byte_order (native, le, be, network), found `{b}`"),
                ))
            }
        })
    }

    pub(super) fn float(&self, entries: Vec<(String, u32, Entry)>, line: u32) -> Result<Type> {
        let (mut exp, mut mant, mut align, mut be) = (0, 0, None, None);
        for (key, l, v) in entries {
            match (key.as_str(), v) {
                ("exp_dig", Entry::Val(Val::Int(n))) => exp = n,
                ("mant_dig", Entry::Val(Val::Int(n))) => mant = n,
                ("align", Entry::Val(Val::Int(n)))
                    if n > 0 && (n as u64).is_power_of_two() && n <= 1 << 16 =>
                {
                    align = Some(n as u32)
                }
                ("byte_order", Entry::Val(Val::Path(b))) => be = self.byte_order(&b, l)?,
                _ => {}
            }
        }
        let size = match (exp, mant) {
            (8, 24) => 32,
            (11, 53) => 64,
            _ => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    self.name,
                    Location::Line(u64::from(line)),
                    format!(
                        "a floating_point of exp_dig {exp} and mant_dig {mant}: only binary32 \
                         (8, 24) and binary64 (11, 53) are read"
                    ),
                ))
            }
        };
        Ok(Type::Float(FloatType {
            size,
            align: align.unwrap_or(BYTE),
            be,
        }))
    }
}
