//! Events with their fields as the metadata declares them ([`RawValue`] trees), and the
//! flat fields of an [`crate::EventKind::Other`].

use std::sync::Arc;

use super::decode::{Decoder, Leaf};
use super::events::Merge;
use super::stream::Item;
use super::types::Type;
use super::{CtfTrace, EventInfo};
use crate::{Result, Text, Value};

/// A decoded CTF field.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum RawValue {
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    Uint(u64),
    /// A floating-point number.
    Float(f64),
    /// A string, or an array or sequence of text bytes (up to its first NUL).
    Str(String),
    /// An enumeration's value and the label it maps to.
    Enum {
        /// The integer.
        value: Box<RawValue>,
        /// Its label, when one maps it.
        label: Option<Text>,
    },
    /// An array or sequence.
    Array(Vec<RawValue>),
    /// A structure's fields (names without the leading underscore), in order. A
    /// variant is the value of the option its tag chose.
    Struct(Vec<(Text, RawValue)>),
}

/// One event with its decoded fields, or a loss.
#[derive(Clone, Debug, PartialEq)]
pub struct RawEvent {
    /// ns since the epoch.
    pub ts: u64,
    /// The stream clock's value, cycles.
    pub cycles: u64,
    /// The packet's `cpu_id`.
    pub cpu: u32,
    /// The stream file.
    pub file: String,
    /// The event's name; empty for a loss.
    pub name: Text,
    /// Events discarded before this packet (its `events_discarded` rose), for a loss.
    pub lost: Option<u64>,
    /// The stream's event context.
    pub stream_context: Option<RawValue>,
    /// The event's own context.
    pub context: Option<RawValue>,
    /// The payload.
    pub fields: Option<RawValue>,
}

/// The events of a [`CtfTrace`] in time order, with every field decoded.
pub struct RawEvents<'t> {
    merge: Merge<'t>,
}

impl<'t> RawEvents<'t> {
    pub(crate) fn new(t: &'t CtfTrace) -> RawEvents<'t> {
        RawEvents {
            merge: Merge::new(t.readers()),
        }
    }

    /// The next event; `Ok(None)` at the end.
    pub fn next_raw(&mut self) -> Result<Option<RawEvent>> {
        let Some((i, item)) = self.merge.pop(&mut |_, _| true)? else {
            return Ok(None);
        };
        let r = &self.merge.readers[i];
        let mut out = RawEvent {
            ts: r.ts,
            cycles: r.cycles,
            cpu: r.cpu,
            file: r.name.to_string(),
            name: "".into(),
            lost: None,
            stream_context: None,
            context: None,
            fields: None,
        };
        match (item, r.event) {
            (Item::Lost(n), _) => out.lost = Some(n),
            (Item::Event, Some(ev)) => {
                out.name = ev.class.name.clone();
                let scope = |t: &Option<Type>, tops: &[u32]| {
                    t.as_ref().map(|t| {
                        let mut at = tops.first().copied().unwrap_or(u32::MAX) as usize;
                        raw(t, &r.dec, &mut at)
                    })
                };
                out.stream_context = scope(&r.stream().event_context, &r.stream_ctx);
                out.context = scope(&ev.class.context, &r.event_ctx);
                out.fields = scope(&ev.class.fields, &r.fields);
            }
            (Item::Event, None) => return Ok(None),
        }
        Ok(Some(out))
    }
}

fn leaf(dec: &Decoder, at: &mut usize) -> Option<Leaf> {
    let l = dec.leaves.get(*at).copied();
    *at += 1;
    l
}

fn scalar(dec: &Decoder, l: Option<Leaf>) -> RawValue {
    match l {
        Some(Leaf::Int(v)) => RawValue::Int(v),
        Some(Leaf::Uint(v)) => RawValue::Uint(v),
        Some(Leaf::Float(v)) => RawValue::Float(v),
        Some(Leaf::Str(s, n)) => {
            RawValue::Str(String::from_utf8_lossy(dec.text(s, n)).into_owned())
        }
        Some(Leaf::Len(_) | Leaf::Pick(_)) | None => RawValue::Uint(0),
    }
}

/// The value of `t` from the leaves at `at` (moved past it).
fn raw(t: &Type, dec: &Decoder, at: &mut usize) -> RawValue {
    match t {
        Type::Int(_) | Type::Float(_) | Type::String => scalar(dec, leaf(dec, at)),
        Type::Enum(e) => {
            let l = leaf(dec, at);
            let v = match l {
                Some(Leaf::Int(v)) => i128::from(v),
                Some(Leaf::Uint(v)) => i128::from(v),
                _ => 0,
            };
            RawValue::Enum {
                value: Box::new(scalar(dec, l)),
                label: e.label(v).cloned(),
            }
        }
        Type::Struct(s) => RawValue::Struct(
            s.fields
                .iter()
                .map(|f| (f.name.clone(), raw(&f.ty, dec, at)))
                .collect(),
        ),
        Type::Array { elem, len } => elements(elem, *len, dec, at),
        Type::Sequence { elem, .. } => {
            let n = match leaf(dec, at) {
                Some(Leaf::Len(n)) => u64::from(n),
                _ => 0,
            };
            elements(elem, n, dec, at)
        }
        Type::Variant { options, .. } => match leaf(dec, at) {
            Some(Leaf::Pick(i)) => match options.get(i as usize) {
                Some(o) => raw(&o.ty, dec, at),
                None => RawValue::Struct(Vec::new()),
            },
            _ => RawValue::Struct(Vec::new()),
        },
    }
}

fn elements(elem: &Type, n: u64, dec: &Decoder, at: &mut usize) -> RawValue {
    if elem.is_text_elem() {
        return scalar(dec, leaf(dec, at));
    }
    // Bounded by the leaves there are (a decoded array has them all).
    let n = n.min(dec.leaves.len().saturating_sub(*at) as u64 + 1);
    RawValue::Array((0..n).map(|_| raw(elem, dec, at)).collect())
}

/// The payload of `ev`, decoded in `dec` (top-level fields at `tops`), as the flat
/// fields of an [`crate::EventKind::Other`]: integers, strings, byte arrays as
/// [`Value::Bytes`], floating-point numbers as text; the members of structures, arrays
/// and variants as `name.member` and `name[i]`.
pub(crate) fn other_fields(ev: &EventInfo, dec: &Decoder, tops: &[u32]) -> Vec<(Text, Value)> {
    let mut out = Vec::with_capacity(ev.names.len());
    let Some(Type::Struct(s)) = &ev.class.fields else {
        return out;
    };
    for ((f, name), &top) in s.fields.iter().zip(&ev.names).zip(tops) {
        let mut at = top as usize;
        match &f.ty {
            Type::Int(_) | Type::Enum(_) | Type::String | Type::Float(_) => {
                out.push((name.clone(), value(dec, leaf(dec, &mut at))))
            }
            t if t.is_text() => {
                if let Type::Sequence { .. } = t {
                    at += 1;
                }
                out.push((name.clone(), value(dec, leaf(dec, &mut at))))
            }
            t => {
                let v = raw(t, dec, &mut at);
                if let Some(bytes) = byte_array(t, &v) {
                    out.push((name.clone(), Value::Bytes(bytes)));
                } else {
                    flatten(name, v, &mut out);
                }
            }
        }
    }
    out
}

fn value(dec: &Decoder, l: Option<Leaf>) -> Value {
    match l {
        Some(Leaf::Int(v)) => Value::Int(v),
        Some(Leaf::Uint(v)) => Value::Uint(v),
        Some(Leaf::Float(v)) => Value::Str(v.to_string().into()),
        Some(Leaf::Str(s, n)) => Value::Str(String::from_utf8_lossy(dec.text(s, n)).into()),
        _ => Value::Uint(0),
    }
}

/// An array or sequence of unsigned 8-bit integers, as bytes.
fn byte_array(t: &Type, v: &RawValue) -> Option<Arc<[u8]>> {
    let elem = match t {
        Type::Array { elem, .. } | Type::Sequence { elem, .. } => elem,
        _ => return None,
    };
    if !matches!(&**elem, Type::Int(i) if i.size == 8 && !i.signed) {
        return None;
    }
    let RawValue::Array(items) = v else {
        return None;
    };
    items
        .iter()
        .map(|x| match x {
            RawValue::Uint(b) => Some(*b as u8),
            _ => None,
        })
        .collect()
}

fn flatten(name: &str, v: RawValue, out: &mut Vec<(Text, Value)>) {
    match v {
        RawValue::Int(i) => out.push((name.into(), Value::Int(i))),
        RawValue::Uint(u) => out.push((name.into(), Value::Uint(u))),
        RawValue::Float(f) => out.push((name.into(), Value::Str(f.to_string().into()))),
        RawValue::Str(s) => out.push((name.into(), Value::Str(s.into()))),
        RawValue::Enum { value, .. } => flatten(name, *value, out),
        RawValue::Array(items) => {
            for (i, x) in items.into_iter().enumerate() {
                flatten(&format!("{name}[{i}]"), x, out);
            }
        }
        RawValue::Struct(fields) => {
            for (k, x) in fields {
                flatten(&format!("{name}.{k}"), x, out);
            }
        }
    }
}
