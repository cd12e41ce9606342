//! The kernel's symbols and trace_printk formats as libtraceevent 1.7 looks them up for
//! printing, which is not quite how the decoder does (`decode::Kallsyms`): `a`/`A`
//! (absolute) symbols and `$` names are left out, reading stops at the first line that
//! does not parse, an address past the last symbol is not that symbol's, and of several
//! names at one address the one glibc's `bsearch` meets first wins.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use super::eval::Symbols;
use crate::decode::PrintkFormats;

/// Functions by address, in the order libtraceevent's `func_map` holds them.
pub(crate) struct FuncMap {
    text: Arc<Vec<u8>>,
    /// (address, start and end of the name in `text`), sorted by address; of equal
    /// addresses, the later line first (libtraceevent prepends to its list, then sorts
    /// with glibc's stable merge sort).
    funcs: Vec<(u64, u32, u32)>,
    by_name: OnceLock<HashMap<Box<[u8]>, u64>>,
}

impl FuncMap {
    pub(crate) fn parse(text: Arc<Vec<u8>>) -> FuncMap {
        let mut funcs = Vec::new();
        if text.len() <= u32::MAX as usize {
            let mut at = 0usize;
            for line in text.split(|&b| b == b'\n') {
                let start = at;
                at += line.len() + 1;
                if line.is_empty() {
                    continue;
                }
                let Some((addr, ty, name)) = kallsyms_line(line) else {
                    // libtraceevent stops at the first line it cannot read.
                    break;
                };
                if name.first() == Some(&b'$') || ty == b'A' || ty == b'a' {
                    continue;
                }
                let off = start + (name.as_ptr() as usize - line.as_ptr() as usize);
                funcs.push((addr, off as u32, (off + name.len()) as u32));
                if funcs.len() == crate::decode::MAX_SYMBOLS {
                    break;
                }
            }
        }
        funcs.reverse();
        funcs.sort_by_key(|f| f.0);
        FuncMap {
            text,
            funcs,
            by_name: OnceLock::new(),
        }
    }

    fn name(&self, i: usize) -> Cow<'_, str> {
        let (_, s, e) = self.funcs[i];
        String::from_utf8_lossy(self.text.get(s as usize..e as usize).unwrap_or(&[]))
    }

    /// glibc's `bsearch` with libtraceevent's `func_bcmp`.
    fn find(&self, addr: u64) -> Option<usize> {
        let (mut l, mut u) = (0usize, self.funcs.len());
        while l < u {
            let idx = (l + u) / 2;
            let here = self.funcs[idx].0;
            let next = self.funcs.get(idx + 1).map_or(0, |f| f.0);
            if addr == here || (addr > here && addr < next) {
                return Some(idx);
            }
            if addr < here {
                u = idx;
            } else {
                l = idx + 1;
            }
        }
        None
    }
}

/// `ADDR TYPE NAME` as `sscanf("%16llx %c %n%*s%n")` reads it: the address (at most 16
/// hex digits), the type character, the name.
fn kallsyms_line(line: &[u8]) -> Option<(u64, u8, &[u8])> {
    let mut i = 0;
    let skip_space = |i: &mut usize| {
        while line.get(*i).is_some_and(|c| c.is_ascii_whitespace()) {
            *i += 1;
        }
    };
    skip_space(&mut i);
    let start = i;
    while i - start < 16 && line.get(i).is_some_and(|c| c.is_ascii_hexdigit()) {
        i += 1;
    }
    if i == start {
        return None;
    }
    let addr = u64::from_str_radix(std::str::from_utf8(&line[start..i]).ok()?, 16).ok()?;
    skip_space(&mut i);
    let ty = *line.get(i)?;
    i += 1;
    skip_space(&mut i);
    let name_start = i;
    while line.get(i).is_some_and(|c| !c.is_ascii_whitespace()) {
        i += 1;
    }
    if i == name_start {
        return None;
    }
    Some((addr, ty, &line[name_start..i]))
}

/// The lookups of one trace: its functions (parsed when first needed) and printk formats.
pub(crate) struct TraceSymbols {
    pub kallsyms: Option<Arc<Vec<u8>>>,
    pub funcs: OnceLock<FuncMap>,
    pub printk: Option<Arc<PrintkFormats>>,
}

impl TraceSymbols {
    fn funcs(&self) -> Option<&FuncMap> {
        let text = self.kallsyms.as_ref()?;
        Some(self.funcs.get_or_init(|| FuncMap::parse(text.clone())))
    }
}

impl Symbols for TraceSymbols {
    fn func(&self, addr: u64) -> Option<(Cow<'_, str>, u64)> {
        let m = self.funcs()?;
        let i = m.find(addr)?;
        Some((m.name(i), m.funcs[i].0))
    }

    fn addr_of(&self, name: &str) -> u64 {
        let Some(m) = self.funcs() else {
            return 0;
        };
        let by_name = m.by_name.get_or_init(|| {
            let mut map = HashMap::new();
            for &(addr, s, e) in &m.funcs {
                let name = m.text.get(s as usize..e as usize).unwrap_or(&[]);
                map.entry(Box::from(name)).or_insert(addr);
            }
            map
        });
        by_name.get(name.as_bytes()).copied().unwrap_or(0)
    }

    fn printk(&self, addr: u64) -> Option<Cow<'_, str>> {
        self.printk.as_ref()?.raw(addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_as_libtraceevent_finds_them() {
        let text = b"ffffffff81000000 T first\nffffffff81000000 t alias\n\
                     ffffffff81000100 A absolute\nffffffff81000200 T $x\n\
                     ffffffff81000300 T last\n- not a symbol\nffffffff81000400 T after_broken\n";
        let m = FuncMap::parse(Arc::new(text.to_vec()));
        assert_eq!(m.funcs.len(), 3);
        let find = |a| m.find(a).map(|i| (m.name(i).into_owned(), m.funcs[i].0));
        // Inside a function: the first listed of its names.
        assert_eq!(
            find(0xffffffff81000010),
            Some(("first".into(), 0xffffffff81000000))
        );
        // The last symbol only at its own address; nothing below the first.
        assert_eq!(find(0xffffffff81000300).map(|f| f.0), Some("last".into()));
        assert_eq!(find(0xffffffff81000301), None);
        assert_eq!(find(0x10), None);
        let syms = TraceSymbols {
            kallsyms: Some(Arc::new(text.to_vec())),
            funcs: OnceLock::new(),
            printk: None,
        };
        assert_eq!(syms.addr_of("last"), 0xffffffff81000300);
        assert_eq!(syms.addr_of("after_broken"), 0);
    }
}
