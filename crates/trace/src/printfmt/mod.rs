//! Each event's `print fmt:` evaluated against its records: what `trace-cmd report -N`
//! (trace-cmd 3.1, libtraceevent 1.7, no plugins) prints after an event's name.
//!
//! A format is parsed once ([`PrintFmt::parse`]): the format string cut into literal text
//! and conversions (`pieces.rs`), its arguments into expression trees (`expr.rs`, over
//! the tokens of `lex.rs`). A [`Printer`] keeps the parsed formats of a trace by event id
//! and prints a record's text (`eval.rs`: numbers, casts, operators, `__print_flags`,
//! `__print_symbolic`, `__get_str`, hex, arrays, bitmasks; `cfmt.rs`: C `printf`;
//! `pointer.rs`: `%pS`, `%pI4`, `%pM`, ...). A format libtraceevent cannot parse prints as
//! it prints one, `[FAILED TO PARSE]` and the raw fields (`raw.rs`); `ftrace:bprint`
//! formats its trace_printk format and packed arguments (`bprint.rs`).
//!
//! Nothing here panics on a format or a record: a field outside the record reads as 0
//! (or nothing, for text), and every loop is bounded by the record.

mod bprint;
mod cfmt;
mod eval;
mod expr;
mod lex;
mod pieces;
mod pointer;
mod raw;
mod state;
mod symbols;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::decode::PrintkFormats;
use crate::format::{Endian, EventFormat, Field, FieldKind, Formats};
use crate::{Text, Value};
use eval::Rec;
use expr::Expr;
use pieces::Piece;
pub(crate) use state::StateTable;
use symbols::TraceSymbols;

/// libtraceevent's field flags (`TEP_FIELD_IS_*`).
pub(crate) const ARRAY: u16 = 1;
pub(crate) const POINTER: u16 = 1 << 1;
pub(crate) const SIGNED: u16 = 1 << 2;
pub(crate) const STRING: u16 = 1 << 3;
pub(crate) const DYNAMIC: u16 = 1 << 4;
pub(crate) const LONG: u16 = 1 << 5;
pub(crate) const RELATIVE: u16 = 1 << 6;

/// A field as libtraceevent sees it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PField {
    pub name: Text,
    pub offset: usize,
    pub size: usize,
    pub flags: u16,
    /// The size of one element of an array (of a dynamic one, of the element type when
    /// it is `char`, `u8` ... `s64`, else 0); a scalar's own size.
    pub elementsize: usize,
    pub common: bool,
}

impl PField {
    fn new(f: &Field, common: bool, long_size: usize) -> PField {
        let ty = f.type_name.as_str();
        let dynamic = matches!(f.kind, FieldKind::DataLoc | FieldKind::RelLoc);
        let mut flags = 0;
        let mut array = f.kind != FieldKind::Scalar;
        let mut string = array && (ty.contains("char") || ty.contains("u8") || ty.contains("s8"));
        if dynamic && f.size == 2 {
            array = true;
            string = true;
        }
        for (on, flag) in [
            (array, ARRAY),
            (ty.contains('*'), POINTER),
            (f.signed, SIGNED),
            (string, STRING),
            (dynamic, DYNAMIC),
            (ty.contains("long"), LONG),
            (f.kind == FieldKind::RelLoc, RELATIVE),
        ] {
            if on {
                flags |= flag;
            }
        }
        let elementsize = if array || dynamic {
            if let Some(e) = f.size.checked_div(f.array_len) {
                e
            } else if dynamic {
                element_size(ty)
            } else if string {
                1
            } else if ty.contains("long") {
                long_size
            } else {
                0
            }
        } else {
            f.size
        };
        PField {
            name: f.name.clone(),
            offset: f.offset,
            size: f.size,
            flags,
            elementsize,
            common,
        }
    }

    pub(crate) fn is(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }
}

/// C's `strtoul(s, NULL, 0)` of an array count, when it has digits.
pub(crate) fn leading_number(s: &str) -> Option<usize> {
    s.trim_start()
        .starts_with(|c: char| c.is_ascii_digit())
        .then(|| eval::strtoull(s) as usize)
}

/// The element size of a dynamic array's type (`__data_loc u32[]`): that of its last
/// word when it is one of the fixed-width types or `char`, else 0.
fn element_size(ty: &str) -> usize {
    let base = ty.split('[').next().unwrap_or(ty);
    match base.split_whitespace().last().unwrap_or("") {
        "u8" | "s8" | "char" => 1,
        "u16" | "s16" => 2,
        "u32" | "s32" => 4,
        "u64" | "s64" => 8,
        _ => 0,
    }
}

/// An event's print format, parsed.
#[derive(Clone, Debug)]
pub struct PrintFmt {
    fields: Vec<PField>,
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    /// The format's pieces and arguments.
    Pieces(Vec<Piece>, Vec<Expr>),
    /// libtraceevent cannot parse it: why.
    Failed(String),
    /// `ftrace:bprint`: formatted from the trace_printk format its record points to.
    Bprint,
}

impl PrintFmt {
    /// Parse `format`'s print format for a trace with `long_size`-byte longs.
    pub fn parse(format: &EventFormat, long_size: usize) -> PrintFmt {
        let fields: Vec<PField> = format
            .common
            .iter()
            .map(|f| PField::new(f, true, long_size))
            .chain(
                format
                    .fields
                    .iter()
                    .map(|f| PField::new(f, false, long_size)),
            )
            .collect();
        let ftrace = &*format.system == "ftrace";
        if ftrace && &*format.name == "bprint" {
            return PrintFmt {
                fields,
                kind: Kind::Bprint,
            };
        }
        let parsed = expr::Parser::new(&format.print_fmt, &fields, long_size).print_fmt();
        let kind = match parsed {
            Ok((fmt, mut args)) => {
                // Old ftrace formats name no arguments: the fields are, in order.
                if ftrace && args.is_empty() {
                    args = fields
                        .iter()
                        .enumerate()
                        .filter(|(_, f)| !f.common)
                        .map(|(i, f)| Expr::Field(f.name.to_string(), Some(i)))
                        .collect();
                }
                match pieces::pieces(&fmt, args.len()) {
                    (p, None) => Kind::Pieces(p, args),
                    (_, Some(e)) => Kind::Failed(e),
                }
            }
            Err(e) => Kind::Failed(e),
        };
        PrintFmt { fields, kind }
    }

    /// Why libtraceevent (and so this) cannot parse the format; `None` when it can.
    pub fn error(&self) -> Option<&str> {
        match &self.kind {
            Kind::Failed(e) => Some(e),
            _ => None,
        }
    }
}

/// What a trace's records print after their event's name in `trace-cmd report -N`.
pub struct Printer {
    formats: Arc<Formats>,
    endian: Endian,
    long_size: usize,
    syms: TraceSymbols,
    parsed: HashMap<u16, Parsed>,
}

/// A parsed format and what libtraceevent learns while printing it.
struct Parsed {
    fmt: PrintFmt,
    /// The fields its typed event does not keep, once asked for.
    untyped: Option<Vec<Field>>,
    /// String fields it no longer prints as strings (see `raw.rs`).
    not_strings: Vec<usize>,
    /// A bprint record's format failed: it prints `[FAILED TO PARSE]` from then on.
    failed: bool,
}

impl Printer {
    /// A printer for records of `formats` from a machine of `endian` byte order and
    /// `long_size`-byte longs (the file header's).
    pub fn new(endian: Endian, long_size: usize, formats: Arc<Formats>) -> Printer {
        Printer {
            formats,
            endian,
            long_size,
            syms: TraceSymbols {
                kallsyms: None,
                funcs: OnceLock::new(),
                printk: None,
            },
            parsed: HashMap::new(),
        }
    }

    /// Resolve functions (`%pS`) with this kallsyms text, read when first needed.
    pub fn with_kallsyms(mut self, text: Arc<Vec<u8>>) -> Printer {
        self.syms.kallsyms = Some(text);
        self
    }

    /// Look trace_printk formats up in `printk` (bputs strings, bprint formats).
    pub fn with_printk(mut self, printk: Arc<PrintkFormats>) -> Printer {
        self.syms.printk = Some(printk);
        self
    }

    /// Appends to `out` what `trace-cmd report -N` prints after the event name of
    /// `record` (the event's raw bytes, its id first). An id without a format prints
    /// nothing.
    pub fn print(&mut self, record: &[u8], out: &mut Vec<u8>) {
        let Some(id) = self.endian.u16(record, 0) else {
            return;
        };
        let Some(format) = self.formats.get(id) else {
            return;
        };
        let long_size = self.long_size;
        let p = self.parsed.entry(id).or_insert_with(|| Parsed {
            fmt: PrintFmt::parse(format, long_size),
            untyped: None,
            not_strings: Vec::new(),
            failed: false,
        });
        let rec = Rec {
            data: record,
            endian: self.endian,
            long_size,
            fields: &p.fmt.fields,
            syms: &self.syms,
        };
        match &p.fmt.kind {
            Kind::Failed(_) => failed(&rec, out, &mut p.not_strings),
            Kind::Bprint if p.failed => failed(&rec, out, &mut p.not_strings),
            Kind::Bprint => p.failed = !bprint::print(&rec, out),
            Kind::Pieces(pieces, args) => print_pieces(&rec, out, pieces, args),
        }
    }
}

impl Printer {
    /// The name of `record`'s event, as its format names it (`bputs`, not `print`).
    pub fn name(&self, record: &[u8]) -> Option<&str> {
        let id = self.endian.u16(record, 0)?;
        self.formats.name(id).map(|(_, n)| &**n)
    }

    /// The values of the fields of `record` that its typed [`crate::EventKind`] does not
    /// keep (sched_wakeup's `success` of older kernels, sched_process_exit's
    /// `group_dead`), in the format's order; none for events it keeps whole.
    pub fn untyped_fields(&mut self, record: &[u8]) -> Vec<(Text, Value)> {
        let Some(id) = self.endian.u16(record, 0) else {
            return Vec::new();
        };
        let Some(format) = self.formats.get(id) else {
            return Vec::new();
        };
        let long_size = self.long_size;
        let p = self.parsed.entry(id).or_insert_with(|| Parsed {
            fmt: PrintFmt::parse(format, long_size),
            untyped: None,
            not_strings: Vec::new(),
            failed: false,
        });
        let fields = p
            .untyped
            .get_or_insert_with(|| crate::decode::untyped_fields(format));
        let e = self.endian;
        fields
            .iter()
            .filter_map(|f| {
                let v = if f.is_string() {
                    Value::Str(Text::from(f.str(e, record)?))
                } else {
                    f.value(e, record)?
                };
                Some((f.name.clone(), v))
            })
            .collect()
    }
}

fn failed(rec: &Rec<'_>, out: &mut Vec<u8>, not_strings: &mut Vec<usize>) {
    out.extend_from_slice(b"[FAILED TO PARSE]");
    raw::fields(rec, out, not_strings);
}

fn print_pieces(rec: &Rec<'_>, out: &mut Vec<u8>, pieces: &[Piece], args: &[Expr]) {
    let arg = |i: usize| args.get(i);
    for p in pieces {
        match p {
            Piece::Lit(b) => out.extend_from_slice(b),
            Piece::Num { spec, arg: a, star } => {
                let star = star.and_then(arg).map(|e| rec.num(e) as i64);
                if let Some(e) = arg(*a) {
                    cfmt::number(out, spec, star, rec.num(e));
                }
            }
            Piece::Str { spec, arg: a, star } => {
                let star = star.and_then(arg).map(|e| rec.num(e) as i64);
                if let Some(e) = arg(*a) {
                    rec.string(out, spec, star, e);
                }
            }
            Piece::Ptr { ext, arg: a, star } => {
                let star = star.and_then(arg).map(|e| rec.num(e) as i64);
                if let Some(e) = arg(*a) {
                    pointer::pointer(rec, out, ext, star, e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
