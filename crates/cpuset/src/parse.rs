//! Parsers for the list and mask forms.

use crate::{CpuSet, MAX_CPUS};

/// Which textual form a CPU set is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `0-3,8,10-11`
    List,
    /// `ff,ffffffff`
    Mask,
}

/// A CPU list or mask that could not be parsed.
///
/// Displays as `invalid CPU list "0-x" at column 3: expected a CPU number`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid CPU {form} {input:?} at column {column}: expected {expected}")]
pub struct ParseError {
    /// `list` or `mask`.
    pub form: &'static str,
    /// The input, trimmed: all of it up to [`EXCERPT`] bytes; of a longer one the
    /// [`EXCERPT`] or so around the column, with `...` where it was cut.
    pub input: String,
    /// 1-based column (in bytes) of the first offending character.
    pub column: usize,
    /// What was expected there.
    pub expected: &'static str,
}

struct Cursor<'a> {
    form: &'static str,
    input: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// What `N` stands for at a range's ends, where it is accepted.
    last: Option<u32>,
}

impl<'a> Cursor<'a> {
    fn new(form: &'static str, input: &'a str) -> Cursor<'a> {
        Cursor {
            form,
            input,
            bytes: input.as_bytes(),
            pos: 0,
            last: None,
        }
    }

    fn error(&self, expected: &'static str) -> ParseError {
        ParseError {
            form: self.form,
            input: excerpt(self.input, self.pos),
            column: self.pos + 1,
            expected,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn number(&mut self, expected: &'static str) -> Result<u32, ParseError> {
        let start = self.pos;
        let mut value: u64 = 0;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            value = value * 10 + u64::from(d - b'0');
            if value >= u64::from(MAX_CPUS) {
                self.pos = start;
                return Err(self.error("a CPU number below 65536"));
            }
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.error(expected));
        }
        Ok(value as u32)
    }

    /// A CPU number at either end of a range: a number, or `N` where it is accepted.
    fn end(&mut self, expected: &'static str) -> Result<u32, ParseError> {
        match self.last {
            Some(last) if self.peek() == Some(b'N') => {
                self.pos += 1;
                Ok(last)
            }
            _ => self.number(expected),
        }
    }
}

/// The list form; with `last`, `N` at either end of a range stands for it.
/// The most bytes of the input a [`ParseError`] holds: a list of millions of CPUs
/// would otherwise be copied whole into its error (and its message).
pub const EXCERPT: usize = 80;

/// `input`, or when longer than [`EXCERPT`] the part around byte `pos`, marked `...`
/// where cut.
fn excerpt(input: &str, pos: usize) -> String {
    if input.len() <= EXCERPT {
        return input.to_string();
    }
    let mut start = pos.saturating_sub(EXCERPT / 2).min(input.len() - EXCERPT);
    while !input.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + EXCERPT).min(input.len());
    while !input.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = String::with_capacity(EXCERPT + 6);
    if start > 0 {
        out.push_str("...");
    }
    out.push_str(&input[start..end]);
    if end < input.len() {
        out.push_str("...");
    }
    out
}

/// The list form; with `last`, `N` at either end of a range stands for it.
pub(crate) fn list(s: &str, last: Option<u32>) -> Result<CpuSet, ParseError> {
    let s = s.trim();
    let mut set = CpuSet::new();
    if s.is_empty() {
        return Ok(set);
    }
    let mut c = Cursor::new("list", s);
    c.last = last;
    loop {
        let region_start = c.pos;
        let start = c.end("a CPU number")?;
        let mut end = start;
        if c.eat(b'-') {
            end = c.end("a CPU number after '-'")?;
            if end < start {
                c.pos = region_start;
                return Err(c.error("a range whose end is not below its start"));
            }
        }
        let (mut used, mut group) = (1, 1);
        if c.eat(b':') {
            used = c.number("the used count of a stride (the 2 in 0-7:2/4)")?;
            if !c.eat(b'/') {
                return Err(c.error("'/' in a stride (0-7:2/4)"));
            }
            group = c.number("the group size of a stride (the 4 in 0-7:2/4)")?;
            if used == 0 || group == 0 || used > group {
                c.pos = region_start;
                return Err(c.error("a stride with 0 < used <= group size"));
            }
        }
        for cpu in start..=end {
            if (cpu - start) % group < used {
                set.insert(cpu);
            }
        }
        match c.peek() {
            None => return Ok(set),
            Some(b',') => c.pos += 1,
            Some(_) => return Err(c.error("',' or '-' or the end of the list")),
        }
    }
}

pub(crate) fn mask(s: &str) -> Result<CpuSet, ParseError> {
    let s = s.trim();
    let mut c = Cursor::new("mask", s);
    if s.starts_with("0x") || s.starts_with("0X") {
        c.pos = 2;
    }
    let mut groups: Vec<u32> = Vec::new();
    loop {
        let start = c.pos;
        let mut value: u32 = 0;
        while let Some(d) = c.peek().and_then(|b| (b as char).to_digit(16)) {
            if c.pos - start == 8 {
                return Err(c.error("a ',' after at most 8 hex digits"));
            }
            value = value << 4 | d;
            c.pos += 1;
        }
        if c.pos == start {
            return Err(c.error("a hex digit"));
        }
        groups.push(value);
        match c.peek() {
            None => break,
            Some(b',') => c.pos += 1,
            Some(_) => return Err(c.error("a hex digit or ','")),
        }
    }
    // groups[0] is the most significant; CPU 0 is in the last group.
    let mut words = vec![0u64; groups.len().div_ceil(2)];
    for (i, group) in groups.iter().rev().enumerate() {
        words[i / 2] |= u64::from(*group) << ((i % 2) * 32);
    }
    let set = CpuSet::from_words(words);
    if set.last().is_some_and(|l| l >= MAX_CPUS) {
        c.pos = 0;
        return Err(c.error("a mask with no CPU at or above 65536"));
    }
    Ok(set)
}
