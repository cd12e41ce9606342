//! The tracefs `format` files: what an event's bytes mean.
//!
//! Every event has a format file (`events/SYSTEM/NAME/format`) that names its id and lists
//! its fields with offset, size and signedness; `events/header_page` describes the
//! ring-buffer page header the same way. This module parses that text into [`EventFormat`]s,
//! keeps them in a [`Formats`] registry by id, and reads field values out of raw record
//! bytes with bounds-checked helpers ([`Endian`]) that return `None` instead of panicking.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::{Text, Value};

/// Byte order of the traced machine, chosen once per file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Least significant byte first (x86, most arm64).
    Little,
    /// Most significant byte first.
    Big,
}

impl Endian {
    /// `size` bytes (1, 2, 4 or 8) at `off` as an unsigned number; `None` when out of bounds
    /// or for another size.
    #[inline]
    pub fn uint(self, data: &[u8], off: usize, size: usize) -> Option<u64> {
        let b = data.get(off..off.checked_add(size)?)?;
        Some(match (size, self) {
            (1, _) => u64::from(b[0]),
            (2, Endian::Little) => u64::from(u16::from_le_bytes(b.try_into().ok()?)),
            (2, Endian::Big) => u64::from(u16::from_be_bytes(b.try_into().ok()?)),
            (4, Endian::Little) => u64::from(u32::from_le_bytes(b.try_into().ok()?)),
            (4, Endian::Big) => u64::from(u32::from_be_bytes(b.try_into().ok()?)),
            (8, Endian::Little) => u64::from_le_bytes(b.try_into().ok()?),
            (8, Endian::Big) => u64::from_be_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }

    /// `size` bytes at `off` as a signed number, sign-extended.
    #[inline]
    pub fn int(self, data: &[u8], off: usize, size: usize) -> Option<i64> {
        let v = self.uint(data, off, size)?;
        let bits = size * 8;
        Some(if bits >= 64 {
            v as i64
        } else {
            let shift = 64 - bits;
            ((v << shift) as i64) >> shift
        })
    }

    /// A `u16` at `off`.
    #[inline]
    pub fn u16(self, data: &[u8], off: usize) -> Option<u16> {
        let b: [u8; 2] = data.get(off..off.checked_add(2)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        })
    }

    /// A `u32` at `off`.
    #[inline]
    pub fn u32(self, data: &[u8], off: usize) -> Option<u32> {
        let b: [u8; 4] = data.get(off..off.checked_add(4)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        })
    }

    /// A `u64` at `off`.
    #[inline]
    pub fn u64(self, data: &[u8], off: usize) -> Option<u64> {
        let b: [u8; 8] = data.get(off..off.checked_add(8)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        })
    }
}

/// How a field's bytes are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// A number (or pointer) of `size` bytes.
    Scalar,
    /// A fixed array (`char comm[16]`, `unsigned long args[6]`) of `size` bytes.
    Array,
    /// `__data_loc TYPE[] name`: a 32-bit word whose low 16 bits are the offset from the
    /// record start and high 16 bits the length of the data.
    DataLoc,
    /// `__rel_loc TYPE[] name`: like [`FieldKind::DataLoc`], the offset counted from the end
    /// of the field.
    RelLoc,
    /// `TYPE name[]` with size 0: the data runs from the offset to the end of the record.
    Tail,
}

/// One field of an event format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The field name (`prev_comm`).
    pub name: Text,
    /// The C type as written, without the array suffix (`char`, `void *`, `__data_loc char[]`).
    pub type_name: String,
    /// Byte offset from the start of the record.
    pub offset: usize,
    /// Size in bytes (of the whole array for arrays; 4 for `__data_loc`).
    pub size: usize,
    /// True for signed numbers.
    pub signed: bool,
    /// Layout.
    pub kind: FieldKind,
    /// The element count written in an array's brackets (`16` of `char comm[16]`); 0
    /// for `[]`, for a count that is not a number, and for scalars.
    pub array_len: usize,
}

impl Field {
    /// True when the field holds text (`char[]`, `__data_loc char[]`, `char name[]`).
    pub fn is_string(&self) -> bool {
        self.kind != FieldKind::Scalar && self.type_name.contains("char")
    }

    /// The bytes of an array, string or dynamic field (the scalar's own bytes otherwise);
    /// `None` when the record is too short or a location word points outside it.
    pub fn bytes<'a>(&self, endian: Endian, record: &'a [u8]) -> Option<&'a [u8]> {
        match self.kind {
            FieldKind::Scalar | FieldKind::Array => {
                record.get(self.offset..self.offset.checked_add(self.size)?)
            }
            FieldKind::DataLoc | FieldKind::RelLoc => {
                let word = endian.u32(record, self.offset)? as usize;
                let mut start = word & 0xffff;
                let len = word >> 16;
                if self.kind == FieldKind::RelLoc {
                    start += self.offset + self.size;
                }
                record.get(start..start.checked_add(len)?)
            }
            FieldKind::Tail => record.get(self.offset..),
        }
    }

    /// A scalar field as an unsigned number (sign bits kept as they are).
    #[inline]
    pub fn uint(&self, endian: Endian, record: &[u8]) -> Option<u64> {
        endian.uint(record, self.offset, self.size)
    }

    /// A scalar field as a signed number (sign-extended when the field is signed).
    #[inline]
    pub fn int(&self, endian: Endian, record: &[u8]) -> Option<i64> {
        if self.signed {
            endian.int(record, self.offset, self.size)
        } else {
            self.uint(endian, record).map(|v| v as i64)
        }
    }

    /// A text field, cut at the first NUL; invalid UTF-8 is replaced.
    pub fn str<'a>(&self, endian: Endian, record: &'a [u8]) -> Option<std::borrow::Cow<'a, str>> {
        let raw = self.bytes(endian, record)?;
        let raw = match raw.iter().position(|&b| b == 0) {
            Some(n) => &raw[..n],
            None => raw,
        };
        Some(String::from_utf8_lossy(raw))
    }

    /// The field as a generic [`Value`]: numbers by signedness, text for `char` arrays,
    /// bytes for other arrays.
    pub fn value(&self, endian: Endian, record: &[u8]) -> Option<Value> {
        if self.kind == FieldKind::Scalar && matches!(self.size, 1 | 2 | 4 | 8) {
            return Some(if self.signed {
                Value::Int(self.int(endian, record)?)
            } else {
                Value::Uint(self.uint(endian, record)?)
            });
        }
        if self.is_string() {
            return Some(Value::Str(Text::from(self.str(endian, record)?)));
        }
        Some(Value::Bytes(Arc::from(self.bytes(endian, record)?)))
    }
}

/// One event's format file, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// The event id (`common_type` of its records).
    pub id: u16,
    /// The system (directory under `events/`), e.g. `sched`; `ftrace` for ftrace's own.
    pub system: Text,
    /// The event name, e.g. `sched_switch`.
    pub name: Text,
    /// The `common_*` fields.
    pub common: Vec<Field>,
    /// The event's own fields, in file order.
    pub fields: Vec<Field>,
    /// What follows `print fmt:`, unparsed (to the end of the text: a format string may
    /// hold a newline).
    pub print_fmt: String,
}

impl EventFormat {
    /// Parse a format file. `system` is the directory it came from (format files do not
    /// name it). Errors say which line is wrong.
    pub fn parse(system: &str, text: &str) -> Result<EventFormat, String> {
        let mut name = None;
        let mut id = None;
        let mut common = Vec::new();
        let mut fields = Vec::new();
        let mut print_fmt = String::new();
        let mut at = 0;
        for (n, raw) in text.split_inclusive('\n').enumerate() {
            let start = at;
            at += raw.len();
            let line = raw.trim_end_matches(['\n', '\r']);
            let t = line.trim();
            if let Some(v) = t.strip_prefix("name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = t.strip_prefix("ID:") {
                let v = v.trim();
                id = Some(v.parse::<u16>().map_err(|_| {
                    format!(
                        "line {}: expected an event id (0..=65535), found {v:?}",
                        n + 1
                    )
                })?);
            } else if t.starts_with("field:") {
                let f = parse_field(t).map_err(|e| format!("line {}: {e}", n + 1))?;
                if f.name.starts_with("common_") {
                    common.push(f);
                } else {
                    fields.push(f);
                }
            } else if t.starts_with("print fmt:") {
                // The rest of the text: a format string may hold a newline (ext4's do).
                let from = start + line.find("print fmt:").unwrap_or(0) + "print fmt:".len();
                print_fmt = text.get(from..).unwrap_or("").trim().to_string();
                break;
            }
        }
        let name = name.ok_or("expected a `name:` line")?;
        let id = id.ok_or("expected an `ID:` line")?;
        Ok(EventFormat {
            id,
            system: Text::from(system),
            name: Text::from(name.as_str()),
            common,
            fields,
            print_fmt,
        })
    }

    /// A field (common or not) by name.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields
            .iter()
            .chain(self.common.iter())
            .find(|f| &*f.name == name)
    }
}

/// Parse a `field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;` line (also the header_page
/// form `field: u64 timestamp;`).
pub fn parse_field(line: &str) -> Result<Field, String> {
    let rest = line
        .trim()
        .strip_prefix("field:")
        .ok_or("expected `field:`")?;
    let mut parts = rest.split(';');
    let decl = parts.next().unwrap_or("").trim();
    let (mut offset, mut size, mut signed) = (None, None, false);
    for p in parts {
        let Some((k, v)) = p.split_once(':') else {
            continue;
        };
        let v = v.trim();
        let num = || {
            v.parse::<usize>()
                .map_err(|_| format!("expected a number for `{}`, found {v:?}", k.trim()))
        };
        match k.trim() {
            "offset" => offset = Some(num()?),
            "size" => size = Some(num()?),
            "signed" => signed = v == "1",
            _ => {}
        }
    }
    let offset = offset.ok_or("expected `offset:`")?;
    let size = size.ok_or("expected `size:`")?;
    // The name is the last word; an array suffix may sit on the name or on the type.
    let split = decl
        .rfind(|c: char| c.is_whitespace() || c == '*')
        .ok_or_else(|| format!("expected `TYPE NAME`, found {decl:?}"))?;
    let (ty, name) = (decl[..=split].trim(), decl[split + 1..].trim());
    let (name, array) = match name.find('[') {
        Some(i) => (&name[..i], Some(&name[i..])),
        None => (name, None),
    };
    if name.is_empty() {
        return Err(format!("expected a field name in {decl:?}"));
    }
    let kind = if ty.starts_with("__data_loc") {
        FieldKind::DataLoc
    } else if ty.starts_with("__rel_loc") {
        FieldKind::RelLoc
    } else if let Some(a) = array {
        if a == "[]" || size == 0 {
            FieldKind::Tail
        } else {
            FieldKind::Array
        }
    } else {
        FieldKind::Scalar
    };
    // As libtraceevent counts it: the number that is the last word in the brackets.
    let array_len = array
        .and_then(|a| a.trim_end_matches(']').rsplit(['[', ' ']).next())
        .and_then(crate::printfmt::leading_number)
        .unwrap_or(0);
    Ok(Field {
        name: Text::from(name),
        type_name: ty.to_string(),
        offset,
        size,
        signed,
        kind,
        array_len,
    })
}

/// All event formats of a trace, by id. Format files are kept as text and parsed when an
/// event id is first asked for, so opening a trace with a thousand formats costs only a
/// scan for their names and ids.
#[derive(Clone, Debug, Default)]
pub struct Formats {
    by_id: HashMap<u16, usize>,
    entries: Vec<Entry>,
}

#[derive(Clone, Debug)]
struct Entry {
    id: u16,
    system: Text,
    name: Text,
    text: Box<str>,
    parsed: OnceLock<Result<Arc<EventFormat>, String>>,
}

impl Entry {
    fn get(&self) -> &Result<Arc<EventFormat>, String> {
        self.parsed
            .get_or_init(|| EventFormat::parse(&self.system, &self.text).map(Arc::new))
    }
}

impl Formats {
    /// An empty registry.
    pub fn new() -> Formats {
        Formats::default()
    }

    fn insert(&mut self, e: Entry) {
        match self.by_id.get(&e.id) {
            Some(&i) => self.entries[i] = e,
            None => {
                self.by_id.insert(e.id, self.entries.len());
                self.entries.push(e);
            }
        }
    }

    /// Add a parsed format; a later format with the same id replaces the earlier one.
    pub fn add(&mut self, format: EventFormat) {
        let parsed = OnceLock::new();
        let e = Entry {
            id: format.id,
            system: format.system.clone(),
            name: format.name.clone(),
            text: Box::from(""),
            parsed,
        };
        let _ = e.parsed.set(Ok(Arc::new(format)));
        self.insert(e);
    }

    /// Add the format file `text` of `system`. Only its `name:` and `ID:` lines are read
    /// now (and must be there); the fields are parsed on first use.
    pub fn add_text(&mut self, system: &str, text: &str) -> Result<(), String> {
        let (mut name, mut id) = (None, None);
        for (n, line) in text.lines().enumerate().take(8) {
            let t = line.trim();
            if let Some(v) = t.strip_prefix("name:") {
                name = Some(v.trim());
            } else if let Some(v) = t.strip_prefix("ID:") {
                let v = v.trim();
                id = Some(v.parse::<u16>().map_err(|_| {
                    format!(
                        "line {}: expected an event id (0..=65535), found {v:?}",
                        n + 1
                    )
                })?);
            }
        }
        let name = name.ok_or("expected a `name:` line")?;
        let id = id.ok_or("expected an `ID:` line")?;
        self.insert(Entry {
            id,
            system: Text::from(system),
            name: Text::from(name),
            text: Box::from(text),
            parsed: OnceLock::new(),
        });
        Ok(())
    }

    /// The format of event `id` (parsed now if need be); `None` when the trace has no
    /// format for it or the format does not parse ([`Formats::error`] says why).
    #[inline]
    pub fn get(&self, id: u16) -> Option<&Arc<EventFormat>> {
        let i = *self.by_id.get(&id)?;
        self.entries.get(i)?.get().as_ref().ok()
    }

    /// Why the format of `id` does not parse.
    pub fn error(&self, id: u16) -> Option<&str> {
        let i = *self.by_id.get(&id)?;
        self.entries
            .get(i)?
            .get()
            .as_ref()
            .err()
            .map(String::as_str)
    }

    /// System and name of event `id`, without parsing its fields.
    pub fn name(&self, id: u16) -> Option<(&Text, &Text)> {
        let e = self.entries.get(*self.by_id.get(&id)?)?;
        Some((&e.system, &e.name))
    }

    /// The ids, in the order the formats were added.
    pub fn ids(&self) -> impl Iterator<Item = u16> + '_ {
        self.entries.iter().map(|e| e.id)
    }

    /// The format of `system:name`.
    pub fn by_name(&self, system: &str, name: &str) -> Option<&Arc<EventFormat>> {
        let e = self
            .entries
            .iter()
            .find(|e| &*e.system == system && &*e.name == name)?;
        e.get().as_ref().ok()
    }

    /// All formats that parse, in the order they were added (parses them all).
    pub fn iter(&self) -> impl Iterator<Item = &Arc<EventFormat>> {
        self.entries.iter().filter_map(|e| e.get().as_ref().ok())
    }

    /// Number of formats.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;\n\
\tfield:void * function;\toffset:32;\tsize:8;\tsigned:0;\n\
\tfield:char buf[];\toffset:40;\tsize:0;\tsigned:0;\n\n\
print fmt: \"prev_comm=%s\", REC->prev_comm\n";

    #[test]
    fn parses_fields_by_kind() {
        let f = EventFormat::parse("sched", SWITCH).unwrap();
        assert_eq!((f.id, &*f.system, &*f.name), (372, "sched", "sched_switch"));
        assert_eq!(f.common.len(), 4);
        let names: Vec<_> = f.fields.iter().map(|f| (&*f.name, f.kind)).collect();
        assert_eq!(
            names,
            [
                ("prev_comm", FieldKind::Array),
                ("prev_pid", FieldKind::Scalar),
                ("name", FieldKind::DataLoc),
                ("function", FieldKind::Scalar),
                ("buf", FieldKind::Tail)
            ]
        );
        assert_eq!(f.field("function").unwrap().type_name, "void *");
        assert_eq!(f.field("name").unwrap().type_name, "__data_loc char[]");
        assert!(f.print_fmt.starts_with("\"prev_comm"));
    }

    #[test]
    fn reads_values_without_panicking() {
        let f = EventFormat::parse("sched", SWITCH).unwrap();
        let mut rec = vec![0u8; 48];
        rec[8..12].copy_from_slice(b"bash");
        rec[24..28].copy_from_slice(&(-5i32).to_le_bytes());
        rec[28..32].copy_from_slice(&((3u32 << 16) | 44).to_le_bytes());
        rec[44..47].copy_from_slice(b"abc");
        let e = Endian::Little;
        assert_eq!(f.field("prev_comm").unwrap().str(e, &rec).unwrap(), "bash");
        assert_eq!(f.field("prev_pid").unwrap().int(e, &rec), Some(-5));
        assert_eq!(f.field("name").unwrap().str(e, &rec).unwrap(), "abc");
        assert_eq!(f.field("buf").unwrap().bytes(e, &rec).unwrap().len(), 8);
        // Out of bounds: None, never a panic.
        assert_eq!(f.field("prev_pid").unwrap().int(e, &rec[..20]), None);
        rec[28..32].copy_from_slice(&((300u32 << 16) | 44).to_le_bytes());
        assert_eq!(f.field("name").unwrap().bytes(e, &rec), None);
    }

    #[test]
    fn rejects_bad_lines() {
        assert!(parse_field("field:int x;\toffset:a;\tsize:4;").is_err());
        assert!(parse_field("field:;\toffset:0;\tsize:4;").is_err());
        assert!(EventFormat::parse("s", "name: x\nID: 99999\n").is_err());
        assert!(EventFormat::parse("s", "ID: 3\n").is_err());
    }

    #[test]
    fn registry_parses_on_demand() {
        let mut r = Formats::new();
        r.add_text("sched", SWITCH).unwrap();
        r.add_text(
            "bad",
            "name: broken\nID: 9\nformat:\n\tfield:int x;\toffset:zz;\tsize:4;\n",
        )
        .unwrap();
        assert!(r.add_text("bad", "no header").is_err());
        assert_eq!(r.len(), 2);
        assert_eq!(
            r.name(9).map(|(s, n)| (&**s, &**n)),
            Some(("bad", "broken"))
        );
        assert!(r.get(9).is_none());
        assert!(r.error(9).unwrap().contains("line 4"));
        assert_eq!(r.get(372).unwrap().fields.len(), 5);
        assert_eq!(r.by_name("sched", "sched_switch").unwrap().id, 372);
        assert_eq!(r.iter().count(), 1);
    }

    #[test]
    fn header_page_fields() {
        let f = parse_field("\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;").unwrap();
        assert_eq!(
            (&*f.name, f.offset, f.size, f.signed),
            ("commit", 8, 8, true)
        );
    }
}
