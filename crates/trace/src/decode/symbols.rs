//! Kernel symbols (`/proc/kallsyms`) and trace_printk format strings
//! (`tracing/printk_formats`), as a trace file stores them: address to name lookups.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::Text;

/// A kallsyms table: symbols sorted by address, looked up by the nearest symbol at or
/// below an address. Names stay in the text they were parsed from (shared with the file
/// that holds it, not copied).
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    text: Arc<Vec<u8>>,
    /// Address, and start and end of the name in `text`.
    syms: Vec<(u64, u32, u32)>,
    /// The names that are not UTF-8, made valid (each bad sequence a U+FFFD), by the
    /// start of the name in `text`.
    lossy: HashMap<u32, String>,
}

impl Kallsyms {
    /// Parse `/proc/kallsyms` text (`ADDR TYPE NAME [MODULE]` per line). Lines that do not
    /// parse and zero addresses (as printed under `kptr_restrict`) are left out; of several
    /// names at one address the first listed is kept.
    pub fn parse(text: &str) -> Kallsyms {
        Kallsyms::parse_shared(Arc::new(text.as_bytes().to_vec()))
    }

    /// [`Kallsyms::parse`] of text as bytes (a trace file's, which need not be UTF-8),
    /// kept without a copy.
    pub(crate) fn parse_shared(text: Arc<Vec<u8>>) -> Kallsyms {
        let text = if text.len() > u32::MAX as usize {
            Arc::default()
        } else {
            text
        };
        let bytes = text.as_slice();
        // About 40 bytes a line in real files; never more than the lines there are (a
        // text of one long line, or none, reserves nothing).
        let lines = memchr::memchr_iter(b'\n', bytes).count() + 1;
        let mut syms = Vec::with_capacity((bytes.len() / 40).min(lines));
        let mut lossy = HashMap::new();
        let utf8 = std::str::from_utf8(bytes).ok();
        let mut add = |line_start: usize, line: &[u8], found: Option<(u64, &[u8])>| {
            let Some((addr, name)) = found else {
                return;
            };
            // `name` is a subslice of `line`: its offset is the pointer difference.
            let start = line_start + (name.as_ptr() as usize - line.as_ptr() as usize);
            if utf8.is_none() && std::str::from_utf8(name).is_err() {
                lossy.insert(start as u32, String::from_utf8_lossy(name).into_owned());
            }
            syms.push((addr, start as u32, (start + name.len()) as u32));
        };
        let mut line_start = 0usize;
        if let Some(text) = utf8 {
            for line in text.split('\n') {
                let words = line.split_ascii_whitespace().map(str::as_bytes);
                add(line_start, line.as_bytes(), symbol(words));
                line_start += line.len() + 1;
            }
        } else {
            // The same words, cut from the bytes (ASCII whitespace is never part of a
            // UTF-8 sequence): names that are not UTF-8 are made valid on their own.
            for line in bytes.split(|&b| b == b'\n') {
                let words = line
                    .split(u8::is_ascii_whitespace)
                    .filter(|w| !w.is_empty());
                add(line_start, line, symbol(words));
                line_start += line.len() + 1;
            }
        }
        syms.sort_by_key(|s| s.0);
        syms.dedup_by_key(|s| s.0);
        Kallsyms { text, syms, lossy }
    }

    /// The symbol containing `addr` and the offset into it; `None` below the first symbol.
    pub fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self.syms.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        let &(a, s, e) = self.syms.get(i)?;
        let name = self.text.get(s as usize..e as usize)?;
        let name = match std::str::from_utf8(name) {
            Ok(n) => n,
            Err(_) => self.lossy.get(&s)?.as_str(),
        };
        Some((name, addr - a))
    }

    /// `name` when `addr` is a symbol's start, `name+0xOFF` inside it; `None` when unknown.
    pub fn resolve(&self, addr: u64) -> Option<String> {
        let (name, off) = self.lookup(addr)?;
        Some(if off == 0 {
            name.to_string()
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

    /// The table, parsed now if it was not yet.
    pub fn get(&self) -> &Arc<Kallsyms> {
        self.0
            .table
            .get_or_init(|| Arc::new(Kallsyms::parse_shared(self.0.text.clone())))
    }
}

/// trace_printk format strings by address (`0xADDR : "format"` per line).
#[derive(Clone, Debug, Default)]
pub struct PrintkFormats {
    by_addr: HashMap<u64, Text>,
}

impl PrintkFormats {
    /// Parse `printk_formats` text; C escapes in the quoted strings are undone.
    pub fn parse(text: &str) -> PrintkFormats {
        let mut by_addr = HashMap::new();
        for line in text.lines() {
            let Some((addr, fmt)) = line.split_once(':') else {
                continue;
            };
            let addr = addr.trim();
            let addr = addr.strip_prefix("0x").unwrap_or(addr);
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            let fmt = fmt.trim();
            let fmt = fmt
                .strip_prefix('"')
                .and_then(|f| f.strip_suffix('"'))
                .unwrap_or(fmt);
            by_addr.insert(addr, Text::from(unescape(fmt)));
        }
        PrintkFormats { by_addr }
    }

    /// The format string at `addr`.
    pub fn get(&self, addr: u64) -> Option<&Text> {
        self.by_addr.get(&addr)
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
        assert_eq!(p.get(0xffffffff828195af).map(|t| &**t), Some("thaw %d\n"));
        assert_eq!(p.len(), 1);
    }
}
