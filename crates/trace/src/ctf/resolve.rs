//! Settling the parsed types for decoding: `native` byte orders made the trace's, the
//! structures' alignments computed, clocks found by name, a register given to every
//! integer, the event header's `id` fields marked, and each sequence length and variant
//! tag resolved to the register of the field it names, by CTF 1.8's scoping rules
//! (section 7.3.2): a relative name is looked up among the fields declared before it in
//! its structure, then in the enclosing ones; an absolute one (`stream.event.header.id`)
//! in that scope.

use super::tsdl::Metadata;
use super::types::{Choices, ClockRef, Field, Layout, Type};
use crate::{Error, ErrorKind, Location, Result};

/// The dynamic scopes, in the order they are decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    PacketHeader,
    PacketContext,
    EventHeader,
    StreamEventContext,
    EventContext,
    EventFields,
}

const PREFIXES: [(&str, Scope); 6] = [
    ("trace.packet.header.", Scope::PacketHeader),
    ("stream.packet.context.", Scope::PacketContext),
    ("stream.event.header.", Scope::EventHeader),
    ("stream.event.context.", Scope::StreamEventContext),
    ("event.context.", Scope::EventContext),
    ("event.fields.", Scope::EventFields),
];

/// What a sequence or variant resolved to, in the order they are met.
struct Resolved {
    reg: u32,
    choices: Option<Choices>,
}

/// Settles every type of `m` (named `name`, for errors).
pub(crate) fn settle(name: &str, m: &mut Metadata) -> Result<()> {
    let be = m.be;
    let clocks: Vec<String> = m.clocks.iter().map(|c| c.name.clone()).collect();
    let mut regs = 0u32;
    let mut err = None;
    let mut each = |t: &mut Type| {
        t.walk_mut(&mut |node| match node {
            Type::Int(i) => {
                i.be.get_or_insert(be);
                i.reg = regs;
                regs += 1;
                settle_clock(name, &clocks, &mut i.clock, &mut err);
            }
            Type::Enum(e) => {
                e.int.be.get_or_insert(be);
                e.int.reg = regs;
                regs += 1;
                settle_clock(name, &clocks, &mut e.int.clock, &mut err);
            }
            Type::Float(f) => {
                f.be.get_or_insert(be);
            }
            _ => {}
        });
        t.settle_align();
    };
    if let Some(t) = &mut m.packet_header {
        each(t);
    }
    for s in &mut m.streams {
        for t in [
            &mut s.packet_context,
            &mut s.event_header,
            &mut s.event_context,
        ]
        .into_iter()
        .flatten()
        {
            each(t);
        }
        for e in s.events.values_mut() {
            for t in [&mut e.context, &mut e.fields].into_iter().flatten() {
                each(t);
            }
        }
        // The end of a packet is no clock update: events extend from its beginning.
        if let Some(Type::Struct(pc)) = &mut s.packet_context {
            for f in &mut pc.fields {
                if f.is_named("timestamp_end") {
                    if let Type::Int(i) = &mut f.ty {
                        i.clock = None;
                    }
                }
            }
        }
        if let Some(h) = &mut s.event_header {
            mark_ids(h);
        }
    }
    if let Some(e) = err {
        return Err(e);
    }
    m.regs = regs;

    // The references, scope by scope.
    let ph = m.packet_header.clone();
    if let Some(t) = &mut m.packet_header {
        let r = resolve_scope(
            name,
            t,
            Scope::PacketHeader,
            &[ph.as_ref(), None, None, None, None, None],
        )?;
        apply(t, r);
    }
    for s in &mut m.streams {
        let pc = s.packet_context.clone();
        let eh = s.event_header.clone();
        let sec = s.event_context.clone();
        let roots = [
            ph.as_ref(),
            pc.as_ref(),
            eh.as_ref(),
            sec.as_ref(),
            None,
            None,
        ];
        for (slot, scope) in [
            (&mut s.packet_context, Scope::PacketContext),
            (&mut s.event_header, Scope::EventHeader),
            (&mut s.event_context, Scope::StreamEventContext),
        ] {
            if let Some(t) = slot {
                let r = resolve_scope(name, t, scope, &roots)?;
                apply(t, r);
            }
        }
        for e in s.events.values_mut() {
            let ec = e.context.clone();
            let ef = e.fields.clone();
            let mut roots = roots;
            roots[4] = ec.as_ref();
            roots[5] = ef.as_ref();
            for (slot, scope) in [
                (&mut e.context, Scope::EventContext),
                (&mut e.fields, Scope::EventFields),
            ] {
                if let Some(t) = slot {
                    let r = resolve_scope(name, t, scope, &roots)?;
                    apply(t, r);
                }
            }
        }
    }
    lay_out(m);
    Ok(())
}

/// Gives every structure of whole-byte integers its [`Layout`].
fn lay_out(m: &mut Metadata) {
    let mut each = |t: &mut Type| {
        t.walk_mut(&mut |node| {
            if let Type::Struct(s) = node {
                s.layout = Layout::of(s).map(Box::new);
            }
        })
    };
    m.packet_header.iter_mut().for_each(&mut each);
    for s in &mut m.streams {
        [
            &mut s.packet_context,
            &mut s.event_header,
            &mut s.event_context,
        ]
        .into_iter()
        .flatten()
        .for_each(&mut each);
        for e in s.events.values_mut() {
            [&mut e.context, &mut e.fields]
                .into_iter()
                .flatten()
                .for_each(&mut each);
        }
    }
}

fn settle_clock(name: &str, clocks: &[String], c: &mut Option<ClockRef>, err: &mut Option<Error>) {
    if let Some(ClockRef::Named(n, line)) = c {
        match clocks.iter().position(|x| **x == **n) {
            Some(i) => *c = Some(ClockRef::Index(i)),
            None => {
                err.get_or_insert(Error::new(
                    ErrorKind::Format,
                    name,
                    Location::Line(u64::from(*line)),
                    format!("expected a clock block named `{n}` for `map = clock.{n}.value`, found none"),
                ));
            }
        }
    }
}

/// Marks the integers of an event header's fields named `id` (at any depth: LTTng's
/// extended header has one inside its variant).
fn mark_ids(t: &mut Type) {
    let fields = match t {
        Type::Struct(s) => &mut s.fields,
        Type::Variant { options, .. } => options,
        _ => return,
    };
    for f in fields {
        if f.is_named("id") {
            match &mut f.ty {
                Type::Int(i) => i.is_id = true,
                Type::Enum(e) => e.int.is_id = true,
                _ => {}
            }
        }
        mark_ids(&mut f.ty);
    }
}

/// Resolves the references of `root` (scope `scope`), in pre-order.
fn resolve_scope(
    name: &str,
    root: &Type,
    scope: Scope,
    roots: &[Option<&Type>; 6],
) -> Result<Vec<Resolved>> {
    let mut out = Vec::new();
    let mut stack: Vec<(&[Field], usize)> = Vec::new();
    visit(name, root, scope, roots, &mut stack, &mut out)?;
    Ok(out)
}

fn visit<'t>(
    name: &str,
    t: &'t Type,
    scope: Scope,
    roots: &[Option<&Type>; 6],
    stack: &mut Vec<(&'t [Field], usize)>,
    out: &mut Vec<Resolved>,
) -> Result<()> {
    match t {
        Type::Sequence { len, .. } => {
            let target = lookup(&len.path, scope, roots, stack);
            let reg = match target.and_then(Type::int) {
                Some(i) => i.reg,
                None => {
                    return Err(Error::new(
                        ErrorKind::Format,
                        name,
                        Location::Line(u64::from(len.line)),
                        format!(
                            "expected an integer field `{}` declared before the sequence to give its length, found {}",
                            len.path,
                            if target.is_some() { "a field of another type" } else { "none" }
                        ),
                    ))
                }
            };
            out.push(Resolved { reg, choices: None });
        }
        Type::Variant { tag, options, .. } => {
            let Some(tag) = tag else {
                return Err(Error::new(
                    ErrorKind::Format,
                    name,
                    Location::Whole,
                    "expected a tag for a variant (`variant <TAG> { ... }`), found a variant without one",
                ));
            };
            let target = lookup(&tag.path, scope, roots, stack);
            let Some(Type::Enum(e)) = target else {
                return Err(Error::new(
                    ErrorKind::Format,
                    name,
                    Location::Line(u64::from(tag.line)),
                    format!(
                        "expected an enumeration field `{}` declared before the variant to tag it, found {}",
                        tag.path,
                        if target.is_some() { "a field of another type" } else { "none" }
                    ),
                ));
            };
            let ranges = e
                .mappings
                .iter()
                .filter_map(|m| {
                    options
                        .iter()
                        .position(|o| o.is_named(&m.label))
                        .map(|i| (m.lo, m.hi, i))
                })
                .collect();
            out.push(Resolved {
                reg: e.int.reg,
                choices: Some(Choices {
                    ranges,
                    signed: e.int.signed,
                }),
            });
        }
        _ => {}
    }
    match t {
        Type::Struct(s) => {
            for (i, f) in s.fields.iter().enumerate() {
                stack.push((&s.fields, i));
                let r = visit(name, &f.ty, scope, roots, stack, out);
                stack.pop();
                r?;
            }
        }
        Type::Array { elem, .. } | Type::Sequence { elem, .. } => {
            visit(name, elem, scope, roots, stack, out)?
        }
        Type::Variant { options, .. } => {
            for o in options {
                visit(name, &o.ty, scope, roots, stack, out)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The field `path` names from inside the structures of `stack` (innermost last).
fn lookup<'t>(
    path: &str,
    scope: Scope,
    roots: &[Option<&'t Type>; 6],
    stack: &[(&'t [Field], usize)],
) -> Option<&'t Type> {
    for (prefix, s) in PREFIXES {
        if let Some(rest) = path.strip_prefix(prefix) {
            // A later scope is not decoded yet.
            if s as u8 > scope as u8 {
                return None;
            }
            return descend(roots[s as usize]?, rest.split('.'));
        }
    }
    let mut parts = path.split('.');
    let first = parts.next()?;
    for (fields, at) in stack.iter().rev() {
        if let Some(f) = fields.get(..*at)?.iter().rev().find(|f| f.is_named(first)) {
            return descend(&f.ty, parts);
        }
    }
    None
}

fn descend<'t, 'p>(mut t: &'t Type, parts: impl Iterator<Item = &'p str>) -> Option<&'t Type> {
    for p in parts {
        t = t.field(p)?.1;
    }
    Some(t)
}

/// Writes what [`resolve_scope`] found into the sequences and variants of `t`.
fn apply(t: &mut Type, resolved: Vec<Resolved>) {
    let mut it = resolved.into_iter();
    t.walk_mut(&mut |node| match node {
        Type::Sequence { len, .. } => {
            if let Some(r) = it.next() {
                len.reg = Some(r.reg);
            }
        }
        Type::Variant { tag, choices, .. } => {
            if let Some(r) = it.next() {
                if let Some(tag) = tag {
                    tag.reg = Some(r.reg);
                }
                *choices = r.choices.unwrap_or_default();
            }
        }
        _ => {}
    });
}
