//! The CTF 1.8 type model: what the TSDL metadata declares and the decoder walks.
//!
//! A type is a tree ([`Type`]). Type aliases are expanded where they are used (each use is
//! its own copy), so that every integer of every scope is one node with its own register
//! ([`IntType::reg`]): sequences read their length and variants their tag from the
//! register of the field they name, resolved once when the metadata is read
//! ([`super::tsdl`]), never looked up by name while decoding.

use crate::Text;

/// Bits of a byte, for alignments.
pub(crate) const BYTE: u32 = 8;

/// How an integer's value is printed (`base`), kept for the raw fields' consumers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// Plain numbers.
    None,
    /// Text (an array or sequence of 8-bit integers is a string).
    Text,
}

/// `integer { size; align; signed; byte_order; base; encoding; map; }`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IntType {
    /// Bits, 1 to 64.
    pub size: u8,
    /// Alignment, bits (a power of two).
    pub align: u32,
    /// Two's complement.
    pub signed: bool,
    /// Big-endian; `None` (native) until resolved to the trace's byte order.
    pub be: Option<bool>,
    /// The display base (2, 8, 10 or 16).
    pub base: u8,
    /// Whether it holds text.
    pub encoding: Encoding,
    /// The clock it maps to (`map = clock.NAME.value`): its index in the trace's clocks
    /// once resolved; the name and the metadata line before that.
    pub clock: Option<ClockRef>,
    /// The register its value goes to when decoded (unique per node).
    pub reg: u32,
    /// An event header's `id` field: its value is the event id.
    pub is_id: bool,
}

/// A clock an integer maps to.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ClockRef {
    /// Named in the metadata, at this line.
    Named(Text, u32),
    /// Resolved: the clock's index.
    Index(usize),
}

impl IntType {
    /// The default for `size` bits: byte-aligned when a multiple of 8, else packed.
    pub(crate) fn new(size: u8) -> IntType {
        IntType {
            size,
            align: if size % 8 == 0 { BYTE } else { 1 },
            signed: false,
            be: None,
            base: 10,
            encoding: Encoding::None,
            clock: None,
            reg: 0,
            is_id: false,
        }
    }
}

/// `floating_point { exp_dig; mant_dig; byte_order; align; }`: IEEE 754 binary32
/// (8, 24) and binary64 (11, 53) only.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FloatType {
    /// Total bits: 32 or 64.
    pub size: u8,
    /// Alignment, bits.
    pub align: u32,
    /// Big-endian; `None` until resolved.
    pub be: Option<bool>,
}

/// One label of an enumeration: the values `lo..=hi` (as the container reads them,
/// signed ones sign-extended into an i128).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Mapping {
    pub label: Text,
    pub lo: i128,
    pub hi: i128,
}

/// `enum : CONTAINER { LABEL = VALUE, LABEL = LO ... HI, ... }`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EnumType {
    pub int: IntType,
    pub mappings: Vec<Mapping>,
}

impl EnumType {
    /// The first label whose range holds `v`.
    pub(crate) fn label(&self, v: i128) -> Option<&Text> {
        self.mappings
            .iter()
            .find(|m| m.lo <= v && v <= m.hi)
            .map(|m| &m.label)
    }
}

/// A named member of a structure or an option of a variant.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Field {
    /// The name as the metadata spells it (`_prev_comm`).
    pub raw: Text,
    /// The name without the one leading underscore CTF 1.8 strips (`prev_comm`).
    pub name: Text,
    pub ty: Type,
}

impl Field {
    pub(crate) fn new(raw: &str, ty: Type) -> Field {
        let name = raw.strip_prefix('_').unwrap_or(raw);
        Field {
            raw: raw.into(),
            name: name.into(),
            ty,
        }
    }

    /// Whether a reference spelled `name` (in the metadata) names this field.
    pub(crate) fn is_named(&self, name: &str) -> bool {
        *self.raw == *name || *self.name == *name
    }
}

/// `struct { FIELDS } align(N)`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StructType {
    pub fields: Vec<Field>,
    /// The `align(N)` attribute (bits), then the largest of it and the fields'.
    pub align: u32,
    /// Where its fields are when they are all whole-byte integers (set once the types
    /// are settled: [`Layout::of`]).
    pub layout: Option<Box<Layout>>,
}

/// A structure whose fields are all integers (or enumerations) of 8, 16, 32 or 64 bits
/// on byte boundaries: each field's byte offset from the structure's start is fixed, so
/// it is read without walking its type (LTTng's payloads are mostly such). The
/// structure's alignment is the largest of its fields', so offsets counted from its
/// aligned start are the ones counted from the packet's.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Layout {
    /// Its size, bytes.
    pub bytes: usize,
    /// One per field, in order.
    pub slots: Vec<Slot>,
}

/// One field of a [`Layout`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Slot {
    /// Bytes from the structure's start.
    pub at: usize,
    /// 1, 2, 4 or 8.
    pub len: usize,
    pub signed: bool,
    pub be: bool,
    /// [`IntType::reg`].
    pub reg: u32,
    pub is_id: bool,
    /// Whether it maps to a clock.
    pub clock: bool,
}

impl Layout {
    /// The layout of `s`, settled (byte orders, alignments and registers set), when its
    /// fields are all whole-byte integers on byte boundaries.
    pub(crate) fn of(s: &StructType) -> Option<Layout> {
        let mut at = 0u64;
        let mut slots = Vec::with_capacity(s.fields.len());
        for f in &s.fields {
            let i = f.ty.int()?;
            if i.size % 8 != 0 {
                return None;
            }
            at = align_up(at, i.align)?;
            if at % 8 != 0 {
                return None;
            }
            slots.push(Slot {
                at: usize::try_from(at / 8).ok()?,
                len: usize::from(i.size / 8),
                signed: i.signed,
                be: i.be?,
                reg: i.reg,
                is_id: i.is_id,
                clock: matches!(i.clock, Some(ClockRef::Index(_))),
            });
            at += u64::from(i.size);
        }
        Some(Layout {
            bytes: usize::try_from(at / 8).ok()?,
            slots,
        })
    }
}

/// The field a sequence's length or a variant's tag is read from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Ref {
    /// As the metadata spells it: `len`, `stream.event.header.id`.
    pub path: Text,
    /// The metadata line, for errors.
    pub line: u32,
    /// The register of the integer field it names, once resolved.
    pub reg: Option<u32>,
}

/// A variant's options by tag value, resolved from the tag enumeration's labels.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Choices {
    /// (lo, hi, option index), from the tag's mappings whose label names an option.
    pub ranges: Vec<(i128, i128, usize)>,
    /// Whether the tag is signed (its register holds a sign-extended value).
    pub signed: bool,
}

impl Choices {
    pub(crate) fn pick(&self, raw: u64) -> Option<usize> {
        let v = if self.signed {
            i128::from(raw as i64)
        } else {
            i128::from(raw)
        };
        self.ranges
            .iter()
            .find(|(lo, hi, _)| *lo <= v && v <= *hi)
            .map(|r| r.2)
    }
}

/// A CTF type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Type {
    Int(IntType),
    Float(FloatType),
    Enum(Box<EnumType>),
    /// A NUL-terminated string.
    String,
    Struct(StructType),
    /// `T name[LEN]`.
    Array {
        elem: Box<Type>,
        len: u64,
    },
    /// `T name[FIELD]`.
    Sequence {
        elem: Box<Type>,
        len: Ref,
    },
    /// `variant <TAG> { OPTIONS }`.
    Variant {
        tag: Option<Ref>,
        options: Vec<Field>,
        choices: Choices,
    },
}

impl Type {
    /// Alignment in bits (a variant's is its chosen option's, applied when decoded: 1).
    pub(crate) fn align(&self) -> u32 {
        match self {
            Type::Int(i) => i.align,
            Type::Float(f) => f.align,
            Type::Enum(e) => e.int.align,
            Type::String => BYTE,
            Type::Struct(s) => s.align,
            Type::Array { elem, .. } | Type::Sequence { elem, .. } => elem.align(),
            Type::Variant { .. } => 1,
        }
    }

    /// The text element of an array or sequence of 8-bit text integers (a string).
    pub(crate) fn is_text_elem(&self) -> bool {
        matches!(self, Type::Int(i) if i.size == 8 && i.encoding == Encoding::Text)
    }

    /// Whether a decoded field of this type is text: a string, or an array or sequence
    /// of 8-bit text integers.
    pub(crate) fn is_text(&self) -> bool {
        match self {
            Type::String => true,
            Type::Array { elem, .. } | Type::Sequence { elem, .. } => elem.is_text_elem(),
            _ => false,
        }
    }

    /// Whether a decoded field of this type is one integer (an enumeration's too).
    pub(crate) fn is_int(&self) -> bool {
        matches!(self, Type::Int(_) | Type::Enum(_))
    }

    /// The integer of an integer or enumeration.
    pub(crate) fn int(&self) -> Option<&IntType> {
        match self {
            Type::Int(i) => Some(i),
            Type::Enum(e) => Some(&e.int),
            _ => None,
        }
    }

    /// Bits this type always takes when it starts aligned on [`Type::align`]; `None` when
    /// it varies (strings, sequences, variants). Lets a reader skip a payload it does not
    /// want without decoding it.
    pub(crate) fn fixed_bits(&self) -> Option<u64> {
        match self {
            Type::Int(i) => Some(u64::from(i.size)),
            Type::Float(f) => Some(u64::from(f.size)),
            Type::Enum(e) => Some(u64::from(e.int.size)),
            Type::String | Type::Sequence { .. } | Type::Variant { .. } => None,
            Type::Struct(s) => {
                let mut at = 0u64;
                for f in &s.fields {
                    at = align_up(at, f.ty.align())?.checked_add(f.ty.fixed_bits()?)?;
                }
                Some(at)
            }
            Type::Array { elem, len } => {
                if *len == 0 {
                    return Some(0);
                }
                let size = elem.fixed_bits()?;
                let stride = align_up(size, elem.align())?;
                stride.checked_mul(len - 1)?.checked_add(size)
            }
        }
    }

    /// The fewest bits a value of this type takes (0 for what may be empty), to bound
    /// the elements an array or sequence can have in what is left of a packet.
    pub(crate) fn min_bits(&self) -> u64 {
        match self {
            Type::String => 8,
            Type::Sequence { .. } => 0,
            Type::Variant { options, .. } => {
                options.iter().map(|o| o.ty.min_bits()).min().unwrap_or(0)
            }
            Type::Struct(s) => s
                .fields
                .iter()
                .fold(0u64, |a, f| a.saturating_add(f.ty.min_bits())),
            Type::Array { elem, len } => elem.min_bits().saturating_mul(*len),
            t => t.fixed_bits().unwrap_or(0),
        }
    }

    /// Nodes in the tree, to bound what aliases expand to.
    pub(crate) fn nodes(&self) -> usize {
        1 + match self {
            Type::Struct(s) => s.fields.iter().map(|f| f.ty.nodes()).sum(),
            Type::Array { elem, .. } | Type::Sequence { elem, .. } => elem.nodes(),
            Type::Variant { options, .. } => options.iter().map(|f| f.ty.nodes()).sum(),
            _ => 0,
        }
    }

    /// Calls `f` on every node, parents first.
    pub(crate) fn walk_mut(&mut self, f: &mut impl FnMut(&mut Type)) {
        f(self);
        match self {
            Type::Struct(s) => s.fields.iter_mut().for_each(|x| x.ty.walk_mut(f)),
            Type::Array { elem, .. } | Type::Sequence { elem, .. } => elem.walk_mut(f),
            Type::Variant { options, .. } => options.iter_mut().for_each(|x| x.ty.walk_mut(f)),
            _ => {}
        }
    }

    /// Sets the structures' alignments to the largest of their own and their fields'
    /// (children first).
    pub(crate) fn settle_align(&mut self) {
        match self {
            Type::Struct(s) => {
                for f in &mut s.fields {
                    f.ty.settle_align();
                }
                s.align = s
                    .fields
                    .iter()
                    .map(|f| f.ty.align())
                    .fold(s.align, u32::max);
            }
            Type::Array { elem, .. } | Type::Sequence { elem, .. } => elem.settle_align(),
            Type::Variant { options, .. } => options.iter_mut().for_each(|o| o.ty.settle_align()),
            _ => {}
        }
    }

    /// The top-level field named `name` of a structure: its index and type.
    pub(crate) fn field(&self, name: &str) -> Option<(usize, &Type)> {
        match self {
            Type::Struct(s) => s
                .fields
                .iter()
                .enumerate()
                .find(|(_, f)| f.is_named(name))
                .map(|(i, f)| (i, &f.ty)),
            _ => None,
        }
    }
}

/// `at` rounded up to a multiple of `align` (a power of two, or 0/1 for none).
pub(crate) fn align_up(at: u64, align: u32) -> Option<u64> {
    let a = u64::from(align.max(1));
    at.checked_add(a - 1).map(|v| v / a * a)
}
