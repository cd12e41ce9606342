//! Kernel symbols (`/proc/kallsyms`) and trace_printk format strings
//! (`tracing/printk_formats`), as a trace file stores them: address to name lookups.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::Text;

/// A kallsyms table: symbols sorted by address, looked up by the nearest symbol at or
/// below an address. Names stay in the text they were parsed from.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    text: String,
    /// Address, and start and end of the name in `text`.
    syms: Vec<(u64, u32, u32)>,
}

impl Kallsyms {
    /// Parse `/proc/kallsyms` text (`ADDR TYPE NAME [MODULE]` per line). Lines that do not
    /// parse and zero addresses (as printed under `kptr_restrict`) are left out; of several
    /// names at one address the first listed is kept.
    pub fn parse(text: &str) -> Kallsyms {
        let text = if text.len() > u32::MAX as usize {
            &text[..0]
        } else {
            text
        };
        // About 40 bytes a line in real files; never more than the lines there are (a
        // text of one long line, or none, reserves nothing).
        let lines = memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1;
        let mut syms = Vec::with_capacity((text.len() / 40).min(lines));
        let mut line_start = 0usize;
        for line in text.split('\n') {
            let base = line_start;
            line_start += line.len() + 1;
            let mut it = line.split_ascii_whitespace();
            let (Some(addr), Some(_ty), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if addr == 0 {
                continue;
            }
            // `name` is a subslice of `line`: its offset is the pointer difference.
            let start = base + (name.as_ptr() as usize - line.as_ptr() as usize);
            syms.push((addr, start as u32, (start + name.len()) as u32));
        }
        syms.sort_by_key(|s| s.0);
        syms.dedup_by_key(|s| s.0);
        Kallsyms {
            text: text.to_string(),
            syms,
        }
    }

    /// The symbol containing `addr` and the offset into it; `None` below the first symbol.
    pub fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self.syms.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        let &(a, s, e) = self.syms.get(i)?;
        Some((self.text.get(s as usize..e as usize)?, addr - a))
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

/// kallsyms text parsed on first use, shared by every decoder of a trace.
#[derive(Clone, Debug)]
pub struct LazyKallsyms(Arc<(String, OnceLock<Arc<Kallsyms>>)>);

impl LazyKallsyms {
    /// Keep `text` for parsing when a symbol is first needed.
    pub fn new(text: String) -> LazyKallsyms {
        LazyKallsyms(Arc::new((text, OnceLock::new())))
    }

    /// An already parsed table.
    pub fn ready(table: Arc<Kallsyms>) -> LazyKallsyms {
        let cell = OnceLock::new();
        let _ = cell.set(table);
        LazyKallsyms(Arc::new((String::new(), cell)))
    }

    /// The table, parsed now if it was not yet.
    pub fn get(&self) -> &Arc<Kallsyms> {
        self.0
             .1
            .get_or_init(|| Arc::new(Kallsyms::parse(&self.0 .0)))
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
    fn printk_formats() {
        let p = PrintkFormats::parse("0xffffffff828195af : \"thaw %d\\n\"\nbad line\n");
        assert_eq!(p.get(0xffffffff828195af).map(|t| &**t), Some("thaw %d\n"));
        assert_eq!(p.len(), 1);
    }
}
