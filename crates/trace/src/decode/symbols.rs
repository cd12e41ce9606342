//! Kernel symbols (`/proc/kallsyms`) and trace_printk format strings
//! (`tracing/printk_formats`), as a trace file stores them: address to name lookups.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// The most symbols a kallsyms table holds: 1,048,576 (2^20). A kernel's
/// `/proc/kallsyms` lists some 100,000 to 300,000 (the committed traces', 121,899), a
/// distribution kernel's with its modules loaded toward the upper end. A trace file whose
/// kallsyms lists more is refused when opened (issue 13: dense hostile text, a symbol
/// every 6 bytes, would otherwise make a table several times its size); a table parsed
/// from such text anyway keeps the first ones.
pub const MAX_SYMBOLS: usize = 1 << 20;

/// The most trace_printk formats kept: 65,536. A kernel's `printk_formats` lists some
/// hundreds (the committed traces', 65 lines); a trace file listing more is refused when
/// opened (issue 13), a table parsed anyway keeps the first ones.
pub const MAX_PRINTK_FORMATS: usize = 1 << 16;

/// A kallsyms table: symbols sorted by address, looked up by the nearest symbol at or
/// below an address. Names stay in the text they were parsed from (shared with the file
/// that holds it, not copied); an entry is 12 bytes.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    text: Arc<Vec<u8>>,
    syms: Vec<Sym>,
}

/// A symbol: its address and the start of its name in the text (the name runs to the
/// next ASCII whitespace). Packed to 12 bytes: at [`MAX_SYMBOLS`], 12 MiB.
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
struct Sym {
    addr: u64,
    name: u32,
}

/// The lines of `text` as `str::lines` cuts them (`\n` or `\r\n` ends a line; the last
/// line's end is optional), each with its offset in `text`.
pub(crate) fn lines(text: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut at = 0;
    text.split_inclusive(|&b| b == b'\n').map(move |l| {
        let start = at;
        at += l.len();
        let l = match l.strip_suffix(b"\n") {
            Some(l) => l.strip_suffix(b"\r").unwrap_or(l),
            None => l,
        };
        (start, l)
    })
}

/// How many entries `text` holds (lines for which `entry` is true) when that may be more
/// than `max`: `None` when its lines are `max` or fewer (the text of a real kernel: one
/// pass of `memchr`), else the count.
pub(crate) fn count_past(text: &[u8], max: usize, entry: impl Fn(&[u8]) -> bool) -> Option<usize> {
    if memchr::memchr_iter(b'\n', text).count() < max {
        return None;
    }
    let n = lines(text).filter(|(_, l)| entry(l)).count();
    (n > max).then_some(n)
}

/// Whether a kallsyms line is a symbol (it parses, its address is not zero).
pub(crate) fn is_symbol(line: &[u8]) -> bool {
    symbol(words(line)).is_some()
}

/// Whether a printk_formats line is a format (an address, then `:`).
pub(crate) fn is_printk_format(line: &[u8]) -> bool {
    printk_format(line).is_some()
}

fn words(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty())
}

impl Kallsyms {
    /// Parse `/proc/kallsyms` text (`ADDR TYPE NAME [MODULE]` per line). Lines that do not
    /// parse and zero addresses (as printed under `kptr_restrict`) are left out; of several
    /// names at one address the first listed is kept; past [`MAX_SYMBOLS`], the rest.
    pub fn parse(text: &str) -> Kallsyms {
        Kallsyms::parse_shared(Arc::new(text.as_bytes().to_vec()))
    }

    /// [`Kallsyms::parse`] of text as bytes (a trace file's, which need not be UTF-8),
    /// kept without a copy. Names that are not UTF-8 are made valid when looked up (each
    /// bad sequence a U+FFFD).
    pub(crate) fn parse_shared(text: Arc<Vec<u8>>) -> Kallsyms {
        let text = if text.len() > u32::MAX as usize {
            Arc::default()
        } else {
            text
        };
        let bytes = text.as_slice();
        // A symbol a line in real files: never more than the lines there are, nor than
        // kept.
        let lines_n = memchr::memchr_iter(b'\n', bytes).count() + 1;
        let mut syms = Vec::with_capacity(lines_n.min(MAX_SYMBOLS));
        for (start, line) in lines(bytes) {
            if syms.len() == MAX_SYMBOLS {
                break;
            }
            let Some((addr, name)) = symbol(words(line)) else {
                continue;
            };
            // `name` is a subslice of `line`: its offset is the pointer difference.
            let name = start + (name.as_ptr() as usize - line.as_ptr() as usize);
            syms.push(Sym {
                addr,
                name: name as u32,
            });
        }
        // By address, then as listed (names start in line order): in place.
        syms.sort_unstable_by_key(|s| (s.addr, s.name));
        syms.dedup_by_key(|s| s.addr);
        syms.shrink_to_fit();
        Kallsyms { text, syms }
    }

    /// The symbol containing `addr` and the offset into it; `None` below the first symbol.
    pub fn lookup(&self, addr: u64) -> Option<(Cow<'_, str>, u64)> {
        let i = self
            .syms
            .partition_point(|s| s.addr <= addr)
            .checked_sub(1)?;
        let sym = *self.syms.get(i)?;
        let name = self.text.get(sym.name as usize..)?;
        let end = name
            .iter()
            .position(u8::is_ascii_whitespace)
            .unwrap_or(name.len());
        Some((String::from_utf8_lossy(&name[..end]), addr - sym.addr))
    }

    /// `name` when `addr` is a symbol's start, `name+0xOFF` inside it; `None` when unknown.
    pub fn resolve(&self, addr: u64) -> Option<String> {
        let (name, off) = self.lookup(addr)?;
        Some(if off == 0 {
            name.into_owned()
        } else {
            format!("{name}+{off:#x}")
        })
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }
}

/// The address and name of a kallsyms line cut into `words` (`ADDR TYPE NAME ...`);
/// `None` for a line that does not parse or a zero address.
fn symbol<'a>(mut words: impl Iterator<Item = &'a [u8]>) -> Option<(u64, &'a [u8])> {
    let (Some(addr), Some(_ty), Some(name)) = (words.next(), words.next(), words.next()) else {
        return None;
    };
    let addr = u64::from_str_radix(std::str::from_utf8(addr).ok()?, 16).ok()?;
    (addr != 0).then_some((addr, name))
}

/// kallsyms text parsed on first use, shared by every decoder of a trace.
#[derive(Clone, Debug)]
pub struct LazyKallsyms(Arc<Lazy>);

/// The text, and the table once parsed from it (which shares the text).
#[derive(Debug)]
struct Lazy {
    text: Arc<Vec<u8>>,
    table: OnceLock<Arc<Kallsyms>>,
}

impl LazyKallsyms {
    /// Keep `text` for parsing when a symbol is first needed.
    pub fn new(text: String) -> LazyKallsyms {
        LazyKallsyms::shared(Arc::new(text.into_bytes()))
    }

    /// Keep `text` (bytes, UTF-8 or not), shared with the table once parsed.
    pub(crate) fn shared(text: Arc<Vec<u8>>) -> LazyKallsyms {
        LazyKallsyms(Arc::new(Lazy {
            text,
            table: OnceLock::new(),
        }))
    }

    /// An already parsed table.
    pub fn ready(table: Arc<Kallsyms>) -> LazyKallsyms {
        let cell = OnceLock::new();
        let _ = cell.set(table);
        LazyKallsyms(Arc::new(Lazy {
            text: Arc::default(),
            table: cell,
        }))
    }

    /// The text the table is (or will be) parsed from; empty for a table given ready.
    pub fn text(&self) -> Arc<Vec<u8>> {
        self.0.text.clone()
    }

    /// The table, parsed now if it was not yet.
    pub fn get(&self) -> &Arc<Kallsyms> {
        self.0
            .table
            .get_or_init(|| Arc::new(Kallsyms::parse_shared(self.0.text.clone())))
    }
}

/// trace_printk format strings by address (`0xADDR : "format"` per line). The formats
/// stay in the text they were parsed from (shared with the file that holds it); C escapes
/// are undone when one is looked up.
#[derive(Clone, Debug, Default)]
pub struct PrintkFormats {
    text: Arc<Vec<u8>>,
    /// Start and end in `text` of what follows the address's `:`, by address.
    by_addr: HashMap<u64, (u32, u32)>,
}

/// The address of a printk_formats line and the offset of what follows its `:`.
fn printk_format(line: &[u8]) -> Option<(u64, usize)> {
    let colon = memchr::memchr(b':', line)?;
    let addr = std::str::from_utf8(&line[..colon]).ok()?.trim();
    let addr = addr.strip_prefix("0x").unwrap_or(addr);
    Some((u64::from_str_radix(addr, 16).ok()?, colon + 1))
}

impl PrintkFormats {
    /// Parse `printk_formats` text (of a later address, the last line listed is kept;
    /// past [`MAX_PRINTK_FORMATS`] lines, the rest are left out).
    pub fn parse(text: &str) -> PrintkFormats {
        PrintkFormats::parse_shared(Arc::new(text.as_bytes().to_vec()))
    }

    /// [`PrintkFormats::parse`] of text as bytes (UTF-8 or not), kept without a copy.
    pub(crate) fn parse_shared(text: Arc<Vec<u8>>) -> PrintkFormats {
        let text = if text.len() > u32::MAX as usize {
            Arc::default()
        } else {
            text
        };
        let mut by_addr = HashMap::new();
        let mut n = 0;
        for (start, line) in lines(&text) {
            let Some((addr, fmt)) = printk_format(line) else {
                continue;
            };
            if n == MAX_PRINTK_FORMATS {
                break;
            }
            n += 1;
            by_addr.insert(addr, ((start + fmt) as u32, (start + line.len()) as u32));
        }
        PrintkFormats { text, by_addr }
    }

    /// The format string at `addr` (its quotes taken off, its C escapes undone).
    pub fn get(&self, addr: u64) -> Option<Cow<'_, str>> {
        let &(s, e) = self.by_addr.get(&addr)?;
        let fmt = String::from_utf8_lossy(self.text.get(s as usize..e as usize)?);
        let t = fmt.trim();
        let t = t
            .strip_prefix('"')
            .and_then(|f| f.strip_suffix('"'))
            .unwrap_or(t);
        // `t` is a subslice of `fmt`.
        let a = t.as_ptr() as usize - fmt.as_ptr() as usize;
        let b = a + t.len();
        Some(match fmt {
            Cow::Borrowed(f) if !f[a..b].contains('\\') => Cow::Borrowed(&f[a..b]),
            f => Cow::Owned(unescape(&f[a..b])),
        })
    }

    /// The format string at `addr` as libtraceevent keeps it for printing: the
    /// character after the `:` dropped, then a leading `"`, and a trailing `"` with a
    /// `\n` escape before it; other escapes as written.
    pub fn raw(&self, addr: u64) -> Option<Cow<'_, str>> {
        let &(s, e) = self.by_addr.get(&addr)?;
        let b = self.text.get(s as usize..e as usize)?;
        let b = b.get(1..).unwrap_or(&[]);
        let b = b.strip_prefix(b"\"").unwrap_or(b);
        let b = match b.strip_suffix(b"\"") {
            Some(b) => b.strip_suffix(b"\\n").unwrap_or(b),
            None => b,
        };
        Some(String::from_utf8_lossy(b))
    }

    /// Number of formats.
    pub fn len(&self) -> usize {
        self.by_addr.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.by_addr.is_empty()
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_lookup() {
        let k = Kallsyms::parse(
            "ffffffff81000100 T b\nffffffff81000000 T a\nffffffff81000000 t a_alias\n\
             junk\n0000000000000000 T zero\nffffffffc0000000 t m\t[mod]\n",
        );
        assert_eq!(k.len(), 3);
        assert_eq!(k.resolve(0xffffffff81000000).as_deref(), Some("a"));
        assert_eq!(k.resolve(0xffffffff81000155).as_deref(), Some("b+0x55"));
        assert_eq!(k.resolve(0xffffffffc0000010).as_deref(), Some("m+0x10"));
        assert_eq!(k.resolve(0x1000), None);
    }

    #[test]
    fn kallsyms_names_that_are_not_utf8_read_as_the_lossy_text_gave_them() {
        let text = b"ffffffff81000000 T ok\nffffffff81000100 T bad\xff\xe2\x82name\t[m\xff]\n\
                     ffffffff8100\xff200 T skipped\n"
            .to_vec();
        let k = Kallsyms::parse_shared(Arc::new(text.clone()));
        assert_eq!(k.len(), 2);
        assert_eq!(k.resolve(0xffffffff81000000).as_deref(), Some("ok"));
        assert_eq!(
            k.resolve(0xffffffff81000104).as_deref(),
            Some("bad\u{fffd}\u{fffd}name+0x4")
        );
        // As the whole text made valid first (what the reader did before) reads.
        let lossy = Kallsyms::parse(&String::from_utf8_lossy(&text));
        for addr in [0xffffffff81000000, 0xffffffff81000104, 0xffffffff81000200] {
            assert_eq!(k.resolve(addr), lossy.resolve(addr));
        }
    }

    #[test]
    fn printk_formats() {
        let p = PrintkFormats::parse("0xffffffff828195af : \"thaw %d\\n\"\nbad line\n");
        assert_eq!(p.get(0xffffffff828195af).as_deref(), Some("thaw %d\n"));
        assert_eq!(p.raw(0xffffffff828195af).as_deref(), Some("thaw %d"));
        assert_eq!(p.len(), 1);
    }
}
