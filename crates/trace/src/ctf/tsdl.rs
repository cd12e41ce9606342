//! The TSDL metadata parser (CTF 1.8, section 7): the `trace`, `env`, `clock`, `stream`
//! and `event` blocks, type aliases and typedefs, named structures, enumerations and
//! variants (the blocks of integers and floating-point numbers in `tsdl/scalars.rs`);
//! then the types settled for decoding ([`super::resolve`]).
//!
//! What it does not read: `callsite` blocks (skipped), floating-point numbers other than
//! binary32 and binary64, character literals, and the `trace` block's packet header
//! given after the streams it frames (LTTng, barectf and babeltrace write it first).

use std::collections::HashMap;

use super::lex::{Lexer, Tok, Token};
use super::types::{Choices, EnumType, Field, Mapping, Ref, StructType, Type};
use crate::{Error, ErrorKind, Location, Result, Text};

mod scalars;

/// Deepest nesting of types and blocks.
const MAX_DEPTH: usize = 64;
/// Most nodes in one type after aliases are expanded, and in the whole metadata.
const MAX_NODES: usize = 1 << 16;
const MAX_ALL_NODES: usize = 1 << 22;

/// A value of the `env` block.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum EnvValue {
    /// An integer.
    Int(i64),
    /// A string.
    Str(String),
}

/// A `clock` block.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Clock {
    /// Its name (`monotonic`).
    pub name: String,
    /// Cycles per second.
    pub freq: u64,
    /// Seconds from the epoch to its zero.
    pub offset_s: i64,
    /// And cycles more.
    pub offset: i64,
    /// Its description, when given.
    pub description: Option<String>,
}

impl Clock {
    /// Nanoseconds since the epoch at `cycles` on this clock.
    pub fn ns(&self, cycles: u64) -> u64 {
        let freq = i128::from(self.freq.max(1));
        let c = i128::from(self.offset) + i128::from(cycles);
        let ns = i128::from(self.offset_s) * 1_000_000_000
            + if freq == 1_000_000_000 {
                c
            } else {
                c.div_euclid(freq) * 1_000_000_000 + c.rem_euclid(freq) * 1_000_000_000 / freq
            };
        ns.clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// An `event` block.
#[derive(Clone, Debug)]
pub(crate) struct EventClass {
    pub name: Text,
    pub id: u64,
    pub stream_id: Option<u64>,
    pub context: Option<Type>,
    pub fields: Option<Type>,
    pub line: u32,
}

/// A `stream` block, with its events.
#[derive(Clone, Debug, Default)]
pub(crate) struct StreamClass {
    pub id: u64,
    pub packet_context: Option<Type>,
    pub event_header: Option<Type>,
    pub event_context: Option<Type>,
    /// Its events by id.
    pub events: HashMap<u64, EventClass>,
}

/// All the metadata says.
#[derive(Clone, Debug, Default)]
pub(crate) struct Metadata {
    pub major: Option<u64>,
    pub minor: Option<u64>,
    /// The trace's byte order (`byte_order = be`).
    pub be: bool,
    pub uuid: Option<[u8; 16]>,
    pub packet_header: Option<Type>,
    pub env: Vec<(String, EnvValue)>,
    pub clocks: Vec<Clock>,
    pub streams: Vec<StreamClass>,
    /// The registers the integers of every scope need.
    pub regs: u32,
}

impl Metadata {
    /// An env value as text (`kernel_release`).
    pub(crate) fn env_str(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| match v {
                EnvValue::Str(s) => Some(s.as_str()),
                EnvValue::Int(_) => None,
            })
    }

    /// An env value as a number (`tracer_major`).
    pub(crate) fn env_int(&self, key: &str) -> Option<i64> {
        self.env
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| match v {
                EnvValue::Int(i) => Some(*i),
                EnvValue::Str(s) => s.parse().ok(),
            })
    }
}

/// A value on the right of `=`.
#[derive(Clone, Debug)]
enum Val {
    Int(i128),
    Str(String),
    /// An identifier or dotted path: `le`, `clock.monotonic.value`.
    Path(String),
}

/// Parses the metadata text `text` of the metadata named `name`.
pub(crate) fn parse(name: &str, text: &str) -> Result<Metadata> {
    let mut p = Parser {
        name,
        lex: Lexer::new(name, text),
        next: None,
        last_line: 1,
        lex_error: None,
        scopes: vec![Scope::default()],
        depth: 0,
        nodes: 0,
    };
    p.bump();
    let m = declarations(&mut p);
    // Text that is not TSDL stops the tokens: what the parser says of their end is moot.
    match p.lex_error.take() {
        Some(e) => Err(e),
        None => m,
    }
}

fn declarations(p: &mut Parser<'_>) -> Result<Metadata> {
    let name = p.name;
    let mut m = Metadata::default();
    let mut events = Vec::new();
    let mut byte_order_seen = false;
    while p.peek().is_some() {
        let line = p.line();
        let word = match p.peek() {
            Some(Tok::Ident(w)) => *w,
            _ => {
                return Err(
                    p.expected("a declaration (`trace`, `stream`, `event`, `typealias`, ...)")
                )
            }
        };
        match word {
            "typealias" | "typedef" => {
                p.alias_or_typedef()?;
                continue;
            }
            "trace" | "env" | "clock" | "stream" | "event" | "callsite"
                if matches!(p.after().next(), Some(Tok::Punct("{"))) =>
            {
                p.bump();
                p.bump();
                let entries = p.block()?;
                p.punct(";")?;
                match word {
                    "trace" => {
                        for (key, line, v) in entries {
                            match (key.as_str(), v) {
                                ("major", Entry::Val(Val::Int(v))) => m.major = Some(v as u64),
                                ("minor", Entry::Val(Val::Int(v))) => m.minor = Some(v as u64),
                                ("uuid", Entry::Val(Val::Str(s))) => {
                                    m.uuid = Some(uuid(&s).ok_or_else(|| {
                                        p.error_at(line, format!("expected a UUID, found {s:?}"))
                                    })?)
                                }
                                ("byte_order", Entry::Val(Val::Path(b))) => {
                                    m.be = match b.as_str() {
                                        "be" | "network" | "big_endian" => true,
                                        "le" | "little_endian" => false,
                                        _ => {
                                            return Err(p.error_at(
                                                line,
                                                format!("expected the trace's byte_order `le` or `be`, found `{b}`"),
                                            ))
                                        }
                                    };
                                    byte_order_seen = true;
                                }
                                ("packet.header", Entry::Type(t)) => m.packet_header = Some(t),
                                _ => {}
                            }
                        }
                    }
                    "env" => {
                        for (key, _, v) in entries {
                            let v = match v {
                                Entry::Val(Val::Int(i)) => EnvValue::Int(i as i64),
                                Entry::Val(Val::Str(s)) | Entry::Val(Val::Path(s)) => {
                                    EnvValue::Str(s)
                                }
                                Entry::Type(_) => continue,
                            };
                            m.env.push((key, v));
                        }
                    }
                    "clock" => {
                        let mut c = Clock {
                            name: String::new(),
                            freq: 1_000_000_000,
                            offset_s: 0,
                            offset: 0,
                            description: None,
                        };
                        for (key, line, v) in entries {
                            match (key.as_str(), v) {
                                ("name", Entry::Val(Val::Path(s) | Val::Str(s))) => c.name = s,
                                ("freq", Entry::Val(Val::Int(v))) if v > 0 => {
                                    c.freq = u64::try_from(v).unwrap_or(u64::MAX)
                                }
                                ("freq", _) => {
                                    return Err(p.error_at(line, "expected a clock's freq above 0"))
                                }
                                ("offset_s", Entry::Val(Val::Int(v))) => {
                                    c.offset_s = v.clamp(i64::MIN.into(), i64::MAX.into()) as i64
                                }
                                ("offset", Entry::Val(Val::Int(v))) => {
                                    c.offset = v.clamp(i64::MIN.into(), i64::MAX.into()) as i64
                                }
                                ("description", Entry::Val(Val::Str(s))) => c.description = Some(s),
                                _ => {}
                            }
                        }
                        if c.name.is_empty() {
                            return Err(p.error_at(line, "expected a `name` in the clock block"));
                        }
                        m.clocks.push(c);
                    }
                    "stream" => {
                        let mut s = StreamClass::default();
                        for (key, _, v) in entries {
                            match (key.as_str(), v) {
                                ("id", Entry::Val(Val::Int(v))) => s.id = v as u64,
                                ("packet.context", Entry::Type(t)) => s.packet_context = Some(t),
                                ("event.header", Entry::Type(t)) => s.event_header = Some(t),
                                ("event.context", Entry::Type(t)) => s.event_context = Some(t),
                                _ => {}
                            }
                        }
                        if m.streams.iter().any(|x| x.id == s.id) {
                            return Err(
                                p.error_at(line, format!("a second stream with id {}", s.id))
                            );
                        }
                        m.streams.push(s);
                    }
                    "event" => {
                        let mut e = EventClass {
                            name: "".into(),
                            id: 0,
                            stream_id: None,
                            context: None,
                            fields: None,
                            line,
                        };
                        for (key, _, v) in entries {
                            match (key.as_str(), v) {
                                ("name", Entry::Val(Val::Str(s) | Val::Path(s))) => {
                                    e.name = s.as_str().into()
                                }
                                ("id", Entry::Val(Val::Int(v))) => e.id = v as u64,
                                ("stream_id", Entry::Val(Val::Int(v))) => {
                                    e.stream_id = Some(v as u64)
                                }
                                ("context", Entry::Type(t)) => e.context = Some(t),
                                ("fields", Entry::Type(t)) => e.fields = Some(t),
                                _ => {}
                            }
                        }
                        events.push(e);
                    }
                    _ => {}
                }
            }
            _ => {
                // A named struct, enum or variant declared on its own: `struct s { ... };`.
                p.type_spec()?;
                p.punct(";")?;
            }
        }
    }
    if !byte_order_seen {
        return Err(Error::new(
            ErrorKind::Format,
            name,
            Location::Whole,
            "expected a `trace { byte_order = le; ... }` block (CTF 1.8 metadata), found none",
        ));
    }
    if m.streams.is_empty() {
        // A trace of one stream may leave its block out.
        m.streams.push(StreamClass::default());
    }
    for e in events {
        let sid = match e.stream_id {
            Some(id) => id,
            None if m.streams.len() == 1 => m.streams[0].id,
            None => {
                return Err(p.error_at(
                    e.line,
                    format!(
                        "expected a stream_id in event {:?}: the trace has several streams",
                        e.name
                    ),
                ))
            }
        };
        let Some(s) = m.streams.iter_mut().find(|s| s.id == sid) else {
            return Err(p.error_at(
                e.line,
                format!(
                    "event {:?} names stream {sid}, which no stream block declares",
                    e.name
                ),
            ));
        };
        if s.events.contains_key(&e.id) {
            return Err(p.error_at(
                e.line,
                format!("a second event with id {} in stream {sid}", e.id),
            ));
        }
        s.events.insert(e.id, e);
    }
    Ok(m)
}

fn uuid(s: &str) -> Option<[u8; 16]> {
    let hex: Vec<u8> = s.bytes().filter(|&b| b != b'-').collect();
    if hex.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        let pair = std::str::from_utf8(&hex[2 * i..2 * i + 2]).ok()?;
        *o = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(out)
}

/// What a block entry gives.
#[derive(Clone, Debug)]
enum Entry {
    Val(Val),
    Type(Type),
}

/// Names declared in a scope.
#[derive(Clone, Debug, Default)]
struct Scope {
    aliases: HashMap<String, Type>,
    structs: HashMap<String, Type>,
    enums: HashMap<String, Type>,
    variants: HashMap<String, Type>,
}

struct Parser<'a> {
    name: &'a str,
    /// The tokens after `next`, cut from the text as the parser goes (the text's
    /// ~50,000 tokens are never all kept).
    lex: Lexer<'a>,
    next: Option<Token<'a>>,
    /// The line of the last token cut (the line of an error at the end of the text).
    last_line: u32,
    /// Where the text stopped being TSDL: the tokens end there, and it is the error.
    lex_error: Option<Error>,
    scopes: Vec<Scope>,
    depth: usize,
    nodes: usize,
}

impl<'a> Parser<'a> {
    /// Moves past the next token.
    fn bump(&mut self) {
        self.next = match self.lex.next_token() {
            Ok(Some(t)) => {
                self.last_line = t.line;
                Some(t)
            }
            Ok(None) => None,
            Err(e) => {
                self.lex_error.get_or_insert(e);
                None
            }
        };
    }

    fn peek(&self) -> Option<&Tok<'a>> {
        self.next.as_ref().map(|t| &t.tok)
    }

    /// The tokens after the next one, cut from a copy of the lexer (the parser looks
    /// past the next token only for a block's `{` and an alias's words).
    fn after(&self) -> impl Iterator<Item = Tok<'a>> {
        let mut lex = self.lex.clone();
        std::iter::from_fn(move || lex.next_token().ok().flatten().map(|t| t.tok))
    }

    fn line(&self) -> u32 {
        self.next.as_ref().map_or(self.last_line, |t| t.line)
    }

    fn error_at(&self, line: u32, msg: impl Into<String>) -> Error {
        Error::new(
            ErrorKind::Format,
            self.name,
            Location::Line(u64::from(line)),
            msg,
        )
    }

    fn expected(&self, what: &str) -> Error {
        let found = match self.peek() {
            Some(t) => t.to_string(),
            None => "the end of the metadata".into(),
        };
        self.error_at(self.line(), format!("expected {what}, found {found}"))
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }

    fn punct(&mut self, p: &str) -> Result<()> {
        if self.is_punct(p) {
            self.bump();
            Ok(())
        } else {
            Err(self.expected(&format!("`{p}`")))
        }
    }

    fn ident(&mut self) -> Result<String> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let s = s.to_string();
                self.bump();
                Ok(s)
            }
            _ => Err(self.expected("a name")),
        }
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::new(
                ErrorKind::Limit,
                self.name,
                Location::Line(u64::from(self.line())),
                format!("types nested more than {MAX_DEPTH} deep"),
            ));
        }
        Ok(())
    }

    /// Counts the nodes of a type about to be used (aliases expand to copies).
    fn count(&mut self, t: &Type) -> Result<()> {
        let n = t.nodes();
        self.nodes += n;
        if n > MAX_NODES || self.nodes > MAX_ALL_NODES {
            return Err(Error::new(
                ErrorKind::Limit,
                self.name,
                Location::Line(u64::from(self.line())),
                format!(
                    "types of more than {MAX_NODES} nodes (or {MAX_ALL_NODES} in all) once \
                     their aliases are expanded"
                ),
            ));
        }
        Ok(())
    }

    fn lookup(&self, pick: fn(&Scope) -> &HashMap<String, Type>, name: &str) -> Option<Type> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| pick(s).get(name))
            .cloned()
    }

    fn scope(&mut self) -> &mut Scope {
        if self.scopes.is_empty() {
            self.scopes.push(Scope::default());
        }
        let last = self.scopes.len() - 1;
        &mut self.scopes[last]
    }

    /// `typealias TYPE := NAME;` or `typedef TYPE NAME;`.
    fn alias_or_typedef(&mut self) -> Result<()> {
        let kw = self.ident()?;
        let ty = self.type_spec()?;
        if kw == "typealias" {
            self.punct(":=")?;
            let mut words = Vec::new();
            while let Some(Tok::Ident(w)) = self.peek() {
                words.push(*w);
                self.bump();
            }
            if self.is_punct("*") {
                return Err(self.expected("an alias name (pointers are not CTF types)"));
            }
            if words.is_empty() {
                return Err(self.expected("the alias's name after `:=`"));
            }
            self.punct(";")?;
            self.scope().aliases.insert(words.join(" "), ty);
        } else {
            let mut words = Vec::new();
            while let Some(Tok::Ident(w)) = self.peek() {
                words.push(*w);
                self.bump();
            }
            // `typedef TYPE NAME[N];`
            let ty = self.dims(ty)?;
            if words.is_empty() {
                return Err(self.expected("the typedef's name"));
            }
            self.punct(";")?;
            self.scope().aliases.insert(words.join(" "), ty);
        }
        Ok(())
    }

    /// The entries of a `{ ... }` block up to its `}` (the `{` already read).
    fn block(&mut self) -> Result<Vec<(String, u32, Entry)>> {
        self.enter()?;
        let mut out = Vec::new();
        loop {
            if self.is_punct("}") {
                self.bump();
                break;
            }
            if matches!(self.peek(), Some(Tok::Ident(w)) if *w == "typealias" || *w == "typedef") {
                self.alias_or_typedef()?;
                continue;
            }
            let line = self.line();
            let mut key = self.ident()?;
            while self.is_punct(".") {
                self.bump();
                key.push('.');
                key.push_str(&self.ident()?);
            }
            if self.is_punct(":=") {
                self.bump();
                let t = self.type_spec()?;
                self.count(&t)?;
                out.push((key, line, Entry::Type(t)));
            } else {
                self.punct("=")?;
                let v = self.value()?;
                out.push((key, line, Entry::Val(v)));
            }
            self.punct(";")?;
        }
        self.depth -= 1;
        Ok(out)
    }

    /// An integer (maybe negative), a string or a dotted path.
    fn value(&mut self) -> Result<Val> {
        let neg = self.is_punct("-");
        if neg {
            self.bump();
        }
        match self.peek().cloned() {
            Some(Tok::Int(v)) => {
                self.bump();
                Ok(Val::Int(if neg { -i128::from(v) } else { i128::from(v) }))
            }
            Some(Tok::Str(s)) if !neg => {
                self.bump();
                Ok(Val::Str(s))
            }
            Some(Tok::Ident(_)) if !neg => {
                let mut s = self.ident()?;
                while self.is_punct(".") {
                    self.bump();
                    s.push('.');
                    s.push_str(&self.ident()?);
                }
                Ok(Val::Path(s))
            }
            _ => Err(self.expected("a value (an integer, a string or a name)")),
        }
    }

    /// A type specifier: `integer {..}`, `floating_point {..}`, `string`, `enum`,
    /// `struct`, `variant`, or an alias name (one or more words). In a field
    /// declaration the last word is the field's name, left for the caller.
    fn type_spec(&mut self) -> Result<Type> {
        self.enter()?;
        let t = self.type_spec_inner(false);
        self.depth -= 1;
        t
    }

    fn type_spec_inner(&mut self, in_field: bool) -> Result<Type> {
        let line = self.line();
        let Some(&Tok::Ident(word)) = self.peek() else {
            return Err(self.expected("a type"));
        };
        match word {
            "integer" => {
                self.bump();
                self.punct("{")?;
                let entries = self.block()?;
                self.integer(entries, line).map(Type::Int)
            }
            "floating_point" => {
                self.bump();
                self.punct("{")?;
                let entries = self.block()?;
                self.float(entries, line)
            }
            "string" => {
                self.bump();
                if self.is_punct("{") {
                    self.bump();
                    self.block()?;
                }
                Ok(Type::String)
            }
            "enum" => {
                self.bump();
                self.enumeration(line)
            }
            "struct" => {
                self.bump();
                self.structure()
            }
            "variant" => {
                self.bump();
                self.variant(line)
            }
            _ => {
                // Alias words: all of them, or in a field all but the field's name.
                let mut words = vec![word];
                words.extend(self.after().map_while(|t| match t {
                    Tok::Ident(w) => Some(w),
                    _ => None,
                }));
                let take = if in_field {
                    words.len().saturating_sub(1).max(1)
                } else {
                    words.len()
                };
                // The longest run of words that names an alias.
                for n in (1..=take).rev() {
                    let name = words[..n].join(" ");
                    if let Some(t) = self.lookup(|s| &s.aliases, &name) {
                        (0..n).for_each(|_| self.bump());
                        self.count(&t)?;
                        return Ok(t);
                    }
                }
                Err(self.error_at(
                    line,
                    format!(
                        "expected a type, found `{}` (no typealias or typedef declares it)",
                        words[..take].join(" ")
                    ),
                ))
            }
        }
    }

    fn enumeration(&mut self, line: u32) -> Result<Type> {
        let name = match self.peek() {
            Some(Tok::Ident(_)) => Some(self.ident()?),
            _ => None,
        };
        let container = if self.is_punct(":") {
            self.bump();
            Some(self.type_spec()?)
        } else {
            None
        };
        if !self.is_punct("{") {
            let name = name.ok_or_else(|| self.expected("an enumeration's `{` or name"))?;
            return self.lookup(|s| &s.enums, &name).ok_or_else(|| {
                self.error_at(line, format!("no enumeration named `{name}` is declared"))
            });
        }
        self.bump();
        let container = match container {
            Some(t) => t,
            None => self.lookup(|s| &s.aliases, "int").ok_or_else(|| {
                self.error_at(line, "expected an enumeration's container type: `enum : TYPE { ... }` (no `int` alias is declared)")
            })?,
        };
        let Type::Int(int) = container else {
            return Err(self.error_at(
                line,
                "expected an integer type as the enumeration's container",
            ));
        };
        let mut mappings = Vec::new();
        let mut next: i128 = 0;
        loop {
            if self.is_punct("}") {
                self.bump();
                break;
            }
            let label = match self.peek() {
                Some(&Tok::Ident(s)) => {
                    self.bump();
                    s.to_string()
                }
                Some(Tok::Str(s)) => {
                    let s = s.clone();
                    self.bump();
                    s
                }
                _ => return Err(self.expected("an enumeration label")),
            };
            let (lo, hi) = if self.is_punct("=") {
                self.bump();
                let lo = self.int_value()?;
                if self.is_punct("...") {
                    self.bump();
                    (lo, self.int_value()?)
                } else {
                    (lo, lo)
                }
            } else {
                (next, next)
            };
            next = hi.saturating_add(1);
            mappings.push(Mapping {
                label: label.as_str().into(),
                lo: lo.min(hi),
                hi: lo.max(hi),
            });
            if self.is_punct(",") {
                self.bump();
            } else if !self.is_punct("}") {
                return Err(self.expected("`,` or `}` in the enumeration"));
            }
        }
        let t = Type::Enum(Box::new(EnumType { int, mappings }));
        if let Some(n) = name {
            self.scope().enums.insert(n, t.clone());
        }
        Ok(t)
    }

    fn int_value(&mut self) -> Result<i128> {
        match self.value()? {
            Val::Int(v) => Ok(v),
            _ => Err(self.expected("an integer")),
        }
    }

    /// `struct [NAME] [{ FIELDS }] [align(N)]`.
    fn structure(&mut self) -> Result<Type> {
        let name = match self.peek() {
            Some(Tok::Ident(w)) if *w != "align" => Some(self.ident()?),
            _ => None,
        };
        let mut t = if self.is_punct("{") {
            self.bump();
            self.scopes.push(Scope::default());
            let fields = self.fields();
            self.scopes.pop();
            Type::Struct(StructType {
                fields: fields?,
                align: 1,
                layout: None,
            })
        } else {
            let name = name
                .clone()
                .ok_or_else(|| self.expected("a structure's `{` or name"))?;
            let line = self.line();
            return self
                .lookup(|s| &s.structs, &name)
                .ok_or_else(|| {
                    self.error_at(line, format!("no structure named `{name}` is declared"))
                })
                .and_then(|t| self.struct_align(t));
        };
        t = self.struct_align(t)?;
        if let Some(n) = name {
            self.scope().structs.insert(n, t.clone());
        }
        Ok(t)
    }

    fn struct_align(&mut self, mut t: Type) -> Result<Type> {
        if matches!(self.peek(), Some(Tok::Ident(w)) if *w == "align") {
            self.bump();
            self.punct("(")?;
            let line = self.line();
            let a = self.int_value()?;
            self.punct(")")?;
            if a <= 0 || !(a as u64).is_power_of_two() || a > 1 << 16 {
                return Err(self.error_at(
                    line,
                    format!("expected a power of two in align(), found {a}"),
                ));
            }
            if let Type::Struct(s) = &mut t {
                s.align = s.align.max(a as u32);
            }
        }
        Ok(t)
    }

    /// `variant [NAME] [<TAG>] [{ OPTIONS }]`.
    fn variant(&mut self, line: u32) -> Result<Type> {
        let name = match self.peek() {
            Some(Tok::Ident(_)) => Some(self.ident()?),
            _ => None,
        };
        let tag = if self.is_punct("<") {
            self.bump();
            let l = self.line();
            let p = self.path()?;
            self.punct(">")?;
            Some(Ref {
                path: p.as_str().into(),
                line: l,
                reg: None,
            })
        } else {
            None
        };
        let mut t = if self.is_punct("{") {
            self.bump();
            self.scopes.push(Scope::default());
            let options = self.fields();
            self.scopes.pop();
            let t = Type::Variant {
                tag: None,
                options: options?,
                choices: Choices::default(),
            };
            if let Some(n) = &name {
                self.scope().variants.insert(n.clone(), t.clone());
            }
            t
        } else {
            let name = name.ok_or_else(|| self.expected("a variant's `{` or name"))?;
            self.lookup(|s| &s.variants, &name).ok_or_else(|| {
                self.error_at(line, format!("no variant named `{name}` is declared"))
            })?
        };
        if let (Type::Variant { tag: slot, .. }, Some(tag)) = (&mut t, tag) {
            *slot = Some(tag);
        }
        Ok(t)
    }

    /// A dotted path: `a`, `stream.event.header.id`.
    fn path(&mut self) -> Result<String> {
        let mut s = self.ident()?;
        while self.is_punct(".") || self.is_punct("->") {
            self.bump();
            s.push('.');
            s.push_str(&self.ident()?);
        }
        Ok(s)
    }

    /// The fields of a structure or options of a variant, up to `}`.
    fn fields(&mut self) -> Result<Vec<Field>> {
        let mut out: Vec<Field> = Vec::new();
        loop {
            if self.is_punct("}") {
                self.bump();
                return Ok(out);
            }
            if matches!(self.peek(), Some(Tok::Ident(w)) if *w == "typealias" || *w == "typedef") {
                self.alias_or_typedef()?;
                continue;
            }
            self.enter()?;
            let ty = self.type_spec_inner(true);
            self.depth -= 1;
            let ty = ty?;
            if self.is_punct(";") {
                // A type declared on its own inside the structure.
                self.bump();
                continue;
            }
            loop {
                let line = self.line();
                let name = self.ident()?;
                let ty = self.dims(ty.clone())?;
                if out.iter().any(|f| f.raw.as_ref() == name) {
                    return Err(self.error_at(line, format!("a second field named `{name}`")));
                }
                out.push(Field::new(&name, ty));
                if self.is_punct(",") {
                    self.bump();
                    continue;
                }
                break;
            }
            self.punct(";")?;
        }
    }

    /// `[N]` and `[FIELD]` suffixes: arrays and sequences (the first one outermost).
    fn dims(&mut self, elem: Type) -> Result<Type> {
        let mut dims = Vec::new();
        while self.is_punct("[") {
            self.bump();
            let line = self.line();
            match self.peek() {
                Some(Tok::Int(n)) => {
                    dims.push(Err(*n));
                    self.bump();
                }
                _ => dims.push(Ok((self.path()?, line))),
            }
            self.punct("]")?;
        }
        let mut t = elem;
        for d in dims.into_iter().rev() {
            t = match d {
                Err(len) => Type::Array {
                    elem: Box::new(t),
                    len,
                },
                Ok((path, line)) => Type::Sequence {
                    elem: Box::new(t),
                    len: Ref {
                        path: path.as_str().into(),
                        line,
                        reg: None,
                    },
                },
            };
        }
        self.count(&t)?;
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(text: &str) -> Result<Metadata> {
        parse("metadata", text)
    }

    #[test]
    fn aliases_of_several_words_and_field_names() {
        let m = meta(
            "typealias integer { size = 32; align = 32; signed = false; } := unsigned long;
             typealias integer { size = 5; } := uint5_t;
             trace { major = 1; minor = 8; byte_order = be; uuid = \"5d079bb9-28f0-6648-8bcf-390bb7f31523\";
                     packet.header := struct { unsigned long magic; }; };
             clock { name = mono; freq = 1000; offset_s = 10; offset = 500; };
             stream { id = 3; event.header := struct { enum : uint5_t { a = 0 ... 30, b } id; } align(32); };
             event { name = \"e\"; id = 7; fields := struct { unsigned long _x[2][3]; string s; }; };",
        )
        .unwrap();
        assert!(m.be);
        assert_eq!(m.uuid.unwrap()[0], 0x5d);
        assert_eq!(m.clocks[0].ns(500), 11_000_000_000);
        let s = &m.streams[0];
        assert_eq!(s.id, 3);
        let Some(Type::Struct(h)) = &s.event_header else {
            panic!()
        };
        assert_eq!(h.align, 32);
        let Type::Enum(e) = &h.fields[0].ty else {
            panic!()
        };
        assert_eq!(e.mappings[1].lo, 31);
        let ev = &s.events[&7];
        let Some(Type::Struct(f)) = &ev.fields else {
            panic!()
        };
        assert_eq!(&*f.fields[0].name, "x");
        let Type::Array { len: 2, elem } = &f.fields[0].ty else {
            panic!()
        };
        assert!(matches!(**elem, Type::Array { len: 3, .. }));
    }

    #[test]
    fn errors_name_the_line() {
        let e = meta("trace { byte_order = le; };\n\nevent { fields := struct { foo x; }; };")
            .unwrap_err();
        assert_eq!(e.location, Location::Line(3), "{e}");
        assert!(e.message.contains("`foo`"), "{e}");
        let e = meta("trace { byte_order = middle; };").unwrap_err();
        assert_eq!(e.location, Location::Line(1), "{e}");
        let e = meta("trace { byte_order = le; };\n\n @ stream").unwrap_err();
        assert_eq!(e.location, Location::Line(3), "{e}");
        assert!(e.message.contains("TSDL token, found `@`"), "{e}");
        let e = meta("trace { byte_order = le; }").unwrap_err();
        assert!(e.message.contains("expected `;`"), "{e}");
        let e = meta("stream { id = 1; };").unwrap_err();
        assert!(e.message.contains("byte_order"), "{e}");
        let deep = format!(
            "trace {{ byte_order = le; }}; event {{ fields := {} }};",
            "struct { ".repeat(100)
        );
        assert_eq!(meta(&deep).unwrap_err().kind, ErrorKind::Limit);
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut text =
            String::from("trace { byte_order = le; }; typealias integer { size = 8; } := t0;\n");
        for i in 1..40 {
            text.push_str(&format!(
                "typealias struct {{ t{p} a; t{p} b; }} := t{i};\n",
                p = i - 1
            ));
        }
        assert_eq!(meta(&text).unwrap_err().kind, ErrorKind::Limit);
    }
}
