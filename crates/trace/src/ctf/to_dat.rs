//! An LTTng trace as a trace-cmd .dat file ([`CtfTrace::write_dat`]).
//!
//! What is carried and what is not: see [`CtfTrace::write_dat`].

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use super::raw::RawValue;
use super::types::{Field, Type};
use super::{CtfTrace, EnvValue};
use crate::dat::{Compression, DatMeta, DatWriter, EncodeError, PageEncoder, Spool};
use crate::dat::{HEADER_EVENT, HEADER_PAGE};
use crate::format::Endian;
use crate::ringbuf::PageLayout;
use crate::{Error, ErrorKind, Event, EventSource, Location, Result, Text};

/// The system (the `events/SYSTEM/` folder) of the events of an LTTng trace converted to
/// .dat: the .dat decoder reads events of this system with the CTF reader's mapping of
/// LTTng's fields (`prev_tid`, priorities less 100, LTTng's `prev_state`).
pub const DAT_SYSTEM: &str = "lttng";

/// The ring-buffer page size of a converted trace.
const PAGE_SIZE: usize = 4096;

/// Whole pages an encoder keeps before they go to the writer.
const FLUSH_PAGES: usize = 64;

/// What [`CtfTrace::write_dat`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DatConversion {
    /// Events written.
    pub events: u64,
    /// Event classes (formats) written.
    pub formats: usize,
    /// Events LTTng discarded, written as missed events.
    pub lost: u64,
    /// The file's size, bytes.
    pub bytes: u64,
    /// What the .dat does not carry, for people: fields left out (and how many events
    /// had them), events too large for a page.
    pub warnings: Vec<String>,
}

/// How one field is laid out in the record.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Int {
        size: usize,
        signed: bool,
        hex: bool,
    },
    /// `char name[len]`.
    Chars { len: usize },
    /// `TYPE name[len]`.
    Ints {
        size: usize,
        signed: bool,
        len: usize,
    },
    /// `__data_loc char[] name`.
    Str,
    /// `__data_loc TYPE[] name`.
    Seq { size: usize, signed: bool },
}

#[derive(Clone, Debug)]
struct OutField {
    name: String,
    /// Indexes from the payload structure down to the value.
    path: Vec<usize>,
    offset: usize,
    kind: Kind,
}

/// One event class as an ftrace event.
#[derive(Debug)]
struct Layout {
    id: u16,
    name: Text,
    fields: Vec<OutField>,
    /// Bytes of the fixed part (the common fields included).
    fixed: usize,
    /// Fields left out, with why.
    left_out: Vec<(String, &'static str)>,
    /// The CTF payload type it was made from (to tell classes of one name apart).
    source: Option<Type>,
}

/// Bytes of an integer of `bits` bits: 1, 2, 4 or 8.
fn int_bytes(bits: u8) -> usize {
    match bits {
        0..=8 => 1,
        9..=16 => 2,
        17..=32 => 4,
        _ => 8,
    }
}

fn c_type(size: usize, signed: bool) -> String {
    format!("{}{}", if signed { 's' } else { 'u' }, size * 8)
}

impl Layout {
    fn new(id: u16, name: Text, fields: Option<&Type>) -> Layout {
        let mut l = Layout {
            id,
            name,
            fields: Vec::new(),
            fixed: 8,
            left_out: Vec::new(),
            source: fields.cloned(),
        };
        if let Some(Type::Struct(s)) = fields {
            for (i, f) in s.fields.iter().enumerate() {
                l.add(f.name.to_string(), vec![i], f);
            }
        }
        l
    }

    fn place(&mut self, name: String, path: Vec<usize>, kind: Kind, size: usize, align: usize) {
        let offset = self.fixed.div_ceil(align) * align;
        self.fixed = offset + size;
        self.fields.push(OutField {
            name,
            path,
            offset,
            kind,
        });
    }

    fn add(&mut self, name: String, path: Vec<usize>, f: &Field) {
        match &f.ty {
            Type::Int(_) | Type::Enum(_) => {
                let Some(i) = f.ty.int() else { return };
                let size = int_bytes(i.size);
                let kind = Kind::Int {
                    size,
                    signed: i.signed,
                    hex: i.base == 16,
                };
                self.place(name, path, kind, size, size);
            }
            Type::String => self.place(name, path, Kind::Str, 4, 4),
            Type::Array { elem, len } if elem.is_text_elem() => {
                let len = (*len).max(1) as usize;
                self.place(name, path, Kind::Chars { len }, len, 1);
            }
            Type::Sequence { elem, .. } if elem.is_text_elem() => {
                self.place(name, path, Kind::Str, 4, 4)
            }
            Type::Array { elem, len } if elem.is_int() && *len > 0 => {
                let Some(i) = elem.int() else { return };
                let size = int_bytes(i.size);
                let (len, signed) = (*len as usize, i.signed);
                let kind = Kind::Ints { size, signed, len };
                if len.saturating_mul(size) > PAGE_SIZE {
                    self.left_out.push((name, "an array larger than a page"));
                } else {
                    self.place(name, path, kind, len * size, size);
                }
            }
            Type::Sequence { elem, .. } if elem.is_int() => {
                let Some(i) = elem.int() else { return };
                let kind = Kind::Seq {
                    size: int_bytes(i.size),
                    signed: i.signed,
                };
                self.place(name, path, kind, 4, 4);
            }
            Type::Struct(s) => {
                for (j, m) in s.fields.iter().enumerate() {
                    let mut p = path.clone();
                    p.push(j);
                    self.add(format!("{name}_{}", m.name), p, m);
                }
            }
            Type::Float(_) => self.left_out.push((name, "a floating-point number")),
            Type::Variant { .. } => self.left_out.push((name, "a variant")),
            Type::Array { .. } | Type::Sequence { .. } => self
                .left_out
                .push((name, "an array or sequence of other than integers")),
        }
    }

    /// The `format` file.
    fn format(&self) -> String {
        let mut t = format!(
            "name: {}\nID: {}\nformat:\n\
             \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
             \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
             \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
             \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n",
            self.name, self.id
        );
        let mut fmt = Vec::new();
        let mut args = Vec::new();
        for f in &self.fields {
            let n = &f.name;
            let (decl, size, signed) = match &f.kind {
                Kind::Int { size, signed, .. } => {
                    (format!("{} {n}", c_type(*size, *signed)), *size, *signed)
                }
                Kind::Chars { len } => (format!("char {n}[{len}]"), *len, false),
                Kind::Ints { size, signed, len } => (
                    format!("{} {n}[{len}]", c_type(*size, *signed)),
                    size * len,
                    *signed,
                ),
                Kind::Str => (format!("__data_loc char[] {n}"), 4, false),
                Kind::Seq { size, signed } => (
                    format!("__data_loc {}[] {n}", c_type(*size, *signed)),
                    4,
                    *signed,
                ),
            };
            t.push_str(&format!(
                "\tfield:{decl};\toffset:{};\tsize:{size};\tsigned:{};\n",
                f.offset,
                u8::from(signed)
            ));
            let (conv, arg) = match &f.kind {
                Kind::Int { size, signed, hex } => {
                    let ll = if *size == 8 { "ll" } else { "" };
                    let c = match (hex, signed) {
                        (true, _) => format!("0x%{ll}x"),
                        (false, true) => format!("%{ll}d"),
                        (false, false) => format!("%{ll}u"),
                    };
                    (c, format!("REC->{n}"))
                }
                Kind::Chars { .. } => ("%s".into(), format!("REC->{n}")),
                Kind::Str => ("%s".into(), format!("__get_str({n})")),
                Kind::Ints { size, len, .. } => (
                    "%s".into(),
                    format!("__print_array(REC->{n}, {len}, {size})"),
                ),
                Kind::Seq { size, .. } => (
                    "%s".into(),
                    format!(
                        "__print_array(__get_dynamic_array({n}), \
                         __get_dynamic_array_len({n}) / {size}, {size})"
                    ),
                ),
            };
            fmt.push(format!("{n}={conv}"));
            args.push(arg);
        }
        t.push_str(&format!("\nprint fmt: \"{}\"", fmt.join(" ")));
        for a in args {
            t.push_str(", ");
            t.push_str(&a);
        }
        t.push('\n');
        t
    }

    /// The record of an event of this class by task `pid` with payload `fields`, into
    /// `out`; false when a value did not have the type the layout expects (it is then 0
    /// or empty).
    fn encode(&self, out: &mut Vec<u8>, pid: i32, fields: Option<&RawValue>) -> bool {
        out.clear();
        out.resize(self.fixed, 0);
        out[..2].copy_from_slice(&self.id.to_le_bytes());
        out[4..8].copy_from_slice(&pid.to_le_bytes());
        let mut ok = true;
        for f in &self.fields {
            let v = fields.and_then(|r| at(r, &f.path));
            let o = f.offset;
            match (&f.kind, v) {
                (Kind::Int { size, .. }, Some(v)) => match int(v) {
                    Some(x) => out[o..o + size].copy_from_slice(&x.to_le_bytes()[..*size]),
                    None => ok = false,
                },
                (Kind::Chars { len }, Some(RawValue::Str(s))) => {
                    let b = s.as_bytes();
                    let n = b.len().min(*len);
                    out[o..o + n].copy_from_slice(&b[..n]);
                }
                (Kind::Ints { size, len, .. }, Some(RawValue::Array(items))) => {
                    for (k, x) in items.iter().take(*len).enumerate() {
                        let x = int(x).unwrap_or_else(|| {
                            ok = false;
                            0
                        });
                        let at = o + k * size;
                        out[at..at + size].copy_from_slice(&x.to_le_bytes()[..*size]);
                    }
                }
                (Kind::Str, Some(RawValue::Str(s))) => {
                    let mut b = s.as_bytes().to_vec();
                    b.push(0);
                    dynamic(out, o, &b);
                }
                (Kind::Seq { size, .. }, Some(RawValue::Array(items))) => {
                    let mut b = Vec::with_capacity(items.len() * size);
                    for x in items {
                        let x = int(x).unwrap_or_else(|| {
                            ok = false;
                            0
                        });
                        b.extend_from_slice(&x.to_le_bytes()[..*size]);
                    }
                    dynamic(out, o, &b);
                }
                (Kind::Str | Kind::Seq { .. }, _) => {
                    ok = false;
                    dynamic(out, o, &[]);
                }
                _ => ok = false,
            }
        }
        ok
    }
}

/// Appends `data` after the record and points the `__data_loc` word at `loc` to it.
fn dynamic(out: &mut Vec<u8>, loc: usize, data: &[u8]) {
    let start = out.len();
    out.extend_from_slice(data);
    // A record fits a page, so offset and length fit 16 bits each (a longer one is
    // refused by the page encoder).
    let word = ((data.len().min(0xffff) as u32) << 16) | (start.min(0xffff) as u32);
    out[loc..loc + 4].copy_from_slice(&word.to_le_bytes());
}

/// The value at `path` in the payload `v`.
fn at<'v>(v: &'v RawValue, path: &[usize]) -> Option<&'v RawValue> {
    let mut v = v;
    for &i in path {
        match v {
            RawValue::Struct(fields) => v = &fields.get(i)?.1,
            _ => return None,
        }
    }
    Some(v)
}

/// An integer value as its two's complement bits.
fn int(v: &RawValue) -> Option<u64> {
    match v {
        RawValue::Int(i) => Some(*i as u64),
        RawValue::Uint(u) => Some(*u),
        RawValue::Enum { value, .. } => int(value),
        _ => None,
    }
}

/// The `env` block as jitterlab's LTTng option holds it: `key=value` lines, text in
/// double quotes.
pub(crate) fn env_text(env: &[(String, EnvValue)]) -> String {
    let mut t = String::new();
    for (k, v) in env {
        let k = k.replace(['\n', '\0', '='], " ");
        match v {
            EnvValue::Int(i) => t.push_str(&format!("{k}={i}\n")),
            EnvValue::Str(s) => t.push_str(&format!("{k}=\"{}\"\n", s.replace(['\n', '\0'], " "))),
        }
    }
    t
}

/// The `env` block from jitterlab's LTTng option ([`env_text`]); lines that do not
/// parse are left out.
pub(crate) fn parse_env(text: &str) -> Vec<(String, EnvValue)> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            let v = match v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
                Some(s) => EnvValue::Str(s.to_string()),
                None => EnvValue::Int(v.trim().parse().ok()?),
            };
            Some((k.to_string(), v))
        })
        .collect()
}

/// Left-out fields and their events, for the warnings.
#[derive(Default)]
struct Tally {
    /// Events with a field left out, by class name.
    left_out: HashMap<Text, u64>,
    /// Events too large for a page, by class name.
    too_large: HashMap<Text, u64>,
    /// Events whose values did not fit their class's layout.
    mismatched: u64,
}

impl CtfTrace {
    /// Writes this trace as a trace-cmd .dat file at `path`: version 6, or version 7
    /// compressed with `v7`; pages spooled in `spool` until the file is written.
    ///
    /// Each event class becomes an ftrace event of system [`DAT_SYSTEM`] with a `format`
    /// synthesized from its CTF fields, under its LTTng name (`sched_switch`,
    /// `irq_softirq_entry`...) and with LTTng's field names (`prev_tid`, `_msg_length`), so
    /// that `trace-cmd report` lines read like babeltrace2's:
    ///
    /// - an integer (or enumeration: its integer; labels are not kept) is a field of 1, 2, 4
    ///   or 8 bytes, a size in between widened to the next one, signed as in CTF; one shown
    ///   in hexadecimal by CTF (`base = 16`) prints as `0x%x`;
    /// - a string, or a sequence of text bytes, is `__data_loc char[]` (its text, up to the
    ///   first NUL, after the fixed part); an array of text bytes (`comm`) is `char name[N]`;
    /// - an array of integers is `TYPE name[N]`, a sequence of integers
    ///   `__data_loc TYPE[] name` (both print through `__print_array`: trace-cmd 3.1 shows
    ///   the elements as unsigned numbers apart, newer libtraceevents as `{0x..,0x..}`);
    /// - a structure's members are fields `parent_member`;
    /// - floating-point numbers, variants and arrays or sequences of anything else are left
    ///   out (and said so in [`DatConversion::warnings`]).
    ///
    /// Every record has the common fields ftrace's have: `common_pid` is the task the CTF
    /// reader gives the event ([`crate::Event::pid`]), `common_flags` and
    /// `common_preempt_count` are 0 (LTTng records neither). Records go into 4096-byte
    /// ring-buffer pages per CPU ([`crate::dat::PageEncoder`]), timestamps in ns since the
    /// epoch (as babeltrace2 prints them; the trace clock keeps its LTTng name); the events
    /// LTTng discarded are the next page's missed events with their count. The statedump's
    /// task names and thread groups are the saved cmdlines and jitterlab's saved-tgids
    /// option, the metadata's `env` block gives the `uname` and is kept whole in
    /// jitterlab's LTTng option, which the .dat decoder reads to map the events to typed
    /// [`crate::EventKind`]s exactly as the CTF reader does (the shared LTTng mapping).
    pub fn write_dat(
        &self,
        path: &Path,
        spool: Spool,
        v7: Option<Compression>,
    ) -> Result<DatConversion> {
        let out_name = path.display().to_string();
        let io = |e: std::io::Error| {
            Error::new(ErrorKind::Io, &out_name, Location::Whole, e.to_string())
        };
        // One layout per event name, in stream and id order.
        let mut layouts: Vec<Layout> = Vec::new();
        let mut by_name: HashMap<Text, usize> = HashMap::new();
        let mut conflicts = Vec::new();
        for s in &self.compiled.streams {
            for ev in &s.events {
                let name = &ev.class.name;
                if let Some(&i) = by_name.get(name) {
                    if layouts[i].source.as_ref() != ev.class.fields.as_ref() {
                        conflicts.push(name.to_string());
                    }
                    continue;
                }
                let id = u16::try_from(layouts.len() + 1)
                    .ok()
                    .filter(|&id| id < u16::MAX)
                    .ok_or_else(|| {
                        Error::new(
                            ErrorKind::Limit,
                            &self.name,
                            Location::Whole,
                            "expected at most 65534 event classes (a .dat event id has 16 bits)",
                        )
                    })?;
                by_name.insert(name.clone(), layouts.len());
                layouts.push(Layout::new(id, name.clone(), ev.class.fields.as_ref()));
            }
        }
        let cpus = self.meta.cpus.unwrap_or(1).max(1);
        let mut meta = DatMeta {
            big_endian: false,
            long_size: 8,
            page_size: PAGE_SIZE as u32,
            cpus,
            header_page: HEADER_PAGE.as_bytes().to_vec(),
            header_event: HEADER_EVENT.as_bytes().to_vec(),
            cmdlines: table(self.cmdlines().into_iter().map(|(p, c)| (p, c.to_string()))),
            tgids: table(self.tgids().into_iter().map(|(p, t)| (p, t.to_string()))),
            hostname: self.env_str("hostname").map(str::to_string),
            trace_clock: self.clocks().first().map(|c| format!("[{}]", c.name)),
            uname: self.uname(),
            version: Some(format!(
                "jitterlab {} (converted from {})",
                env!("CARGO_PKG_VERSION"),
                self.meta.format
            )),
            lttng_env: Some(self.env().to_vec()),
            ..DatMeta::default()
        };
        for l in &layouts {
            meta.add_format(DAT_SYSTEM, l.format().into_bytes());
        }
        let mut w = match v7 {
            None => DatWriter::new(meta, spool),
            Some(c) => DatWriter::new_v7(meta, spool, c),
        }
        .map_err(io)?;
        let layout = PageLayout::new(Endian::Little, 8, PAGE_SIZE);
        let mut enc: Vec<PageEncoder> = (0..cpus).map(|_| PageEncoder::new(layout)).collect();
        let mut typed = self.events()?;
        let mut raw = self.raw_events()?;
        let mut report = DatConversion {
            formats: layouts.len(),
            ..DatConversion::default()
        };
        let mut tally = Tally::default();
        let mut rec = Vec::new();
        while let Some(ev) = raw.next_raw()? {
            let t = typed.next_event()?;
            let Some(t) = t.filter(|t: &Event| t.ts == ev.ts && t.cpu == ev.cpu) else {
                return Err(Error::new(
                    ErrorKind::Corrupt,
                    &ev.file,
                    Location::Whole,
                    format!(
                        "the typed and the raw reading of the trace differ at {} ns on CPU {}",
                        ev.ts, ev.cpu
                    ),
                ));
            };
            let e = enc.get_mut(ev.cpu as usize).ok_or_else(|| {
                Error::new(
                    ErrorKind::Corrupt,
                    &ev.file,
                    Location::Whole,
                    format!(
                        "expected CPUs below {cpus} (the trace's first packets say), found an \
                         event at {} ns on CPU {}",
                        ev.ts, ev.cpu
                    ),
                )
            })?;
            if let Some(n) = ev.lost {
                e.lost(Some(n));
                report.lost += n;
                continue;
            }
            let Some(l) = by_name.get(&ev.name).and_then(|&i| layouts.get(i)) else {
                continue;
            };
            if !l.encode(&mut rec, t.pid, ev.fields.as_ref()) {
                tally.mismatched += 1;
            }
            match e.record(ev.ts, &rec) {
                Ok(()) => report.events += 1,
                Err(EncodeError::TooLarge { .. }) => {
                    *tally.too_large.entry(l.name.clone()).or_default() += 1;
                    continue;
                }
                Err(err) => {
                    return Err(Error::new(
                        ErrorKind::OutOfOrder,
                        &ev.file,
                        Location::Whole,
                        format!("CPU {}: {err}", ev.cpu),
                    ))
                }
            }
            if !l.left_out.is_empty() {
                *tally.left_out.entry(l.name.clone()).or_default() += 1;
            }
            if e.ready() >= FLUSH_PAGES {
                w.write_pages(0, ev.cpu, &e.take_pages()).map_err(io)?;
            }
        }
        for (cpu, e) in enc.into_iter().enumerate() {
            let pages = e.finish();
            if !pages.is_empty() {
                w.write_pages(0, cpu as u32, &pages).map_err(io)?;
            }
        }
        let file = File::create(path).map_err(io)?;
        report.bytes = w.finish(BufWriter::new(file)).map_err(io)?;
        report.warnings = warnings(&layouts, &tally, &conflicts, typed.stats().skipped);
        Ok(report)
    }
}

/// `PID VALUE` lines, by pid.
fn table(rows: impl Iterator<Item = (i32, String)>) -> Vec<u8> {
    let mut rows: Vec<(i32, String)> = rows.collect();
    rows.sort();
    rows.iter()
        .map(|(p, v)| format!("{p} {v}\n"))
        .collect::<String>()
        .into_bytes()
}

fn warnings(layouts: &[Layout], tally: &Tally, conflicts: &[String], skipped: u64) -> Vec<String> {
    let mut out = Vec::new();
    let mut classes: Vec<&Layout> = layouts.iter().filter(|l| !l.left_out.is_empty()).collect();
    classes.sort_by_key(|l| std::cmp::Reverse(tally.left_out.get(&l.name).copied().unwrap_or(0)));
    if !classes.is_empty() {
        let fields: usize = classes.iter().map(|l| l.left_out.len()).sum();
        let events: u64 = tally.left_out.values().sum();
        let examples: Vec<String> = classes
            .iter()
            .take(5)
            .flat_map(|l| {
                l.left_out
                    .iter()
                    .map(move |(f, why)| format!("{}.{f} ({why})", l.name))
            })
            .take(5)
            .collect();
        out.push(format!(
            "{fields} field{} of {} event class{} left out (a .dat field is an integer, a \
             string or an array of integers): {}{}; {events} event{} written without them",
            plural(fields as u64),
            classes.len(),
            if classes.len() == 1 { "" } else { "es" },
            examples.join(", "),
            if fields > examples.len() { ", ..." } else { "" },
            plural(events),
        ));
    }
    let too_large: u64 = tally.too_large.values().sum();
    if too_large > 0 {
        let mut names: Vec<&str> = tally.too_large.keys().map(|n| &**n).collect();
        names.sort_unstable();
        out.push(format!(
            "{too_large} event{} left out: too large for a {PAGE_SIZE}-byte ring-buffer page ({})",
            plural(too_large),
            names.join(", ")
        ));
    }
    if !conflicts.is_empty() {
        out.push(format!(
            "event classes declared more than once with different fields ({}): written with \
             the first declaration's fields; {} event{} did not fit it (values written as 0)",
            conflicts.join(", "),
            tally.mismatched,
            plural(tally.mismatched)
        ));
    }
    if skipped > 0 {
        out.push(format!(
            "{skipped} undecodable packet{} of the LTTng trace skipped",
            plural(skipped)
        ));
    }
    out
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_round_trips() {
        let env = vec![
            ("hostname".to_string(), EnvValue::Str("lager".into())),
            ("tracer_major".to_string(), EnvValue::Int(2)),
            (
                "kernel_release".to_string(),
                EnvValue::Str("3.10.31-ltsi".into()),
            ),
            ("odd".to_string(), EnvValue::Str("12".into())),
        ];
        assert_eq!(parse_env(&env_text(&env)), env);
    }

    #[test]
    fn widths() {
        assert_eq!(
            [1, 5, 8, 9, 16, 17, 27, 32, 33, 64].map(int_bytes),
            [1, 1, 1, 2, 2, 4, 4, 4, 8, 8]
        );
    }
}
