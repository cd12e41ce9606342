//! The TSDL metadata as text: packetized metadata unwrapped (the `0x75D11D57` packet
//! headers of CTF 1.8 section 7.1), then cut into tokens with their line numbers.

use crate::{Error, ErrorKind, Location, Result};

/// The magic number of a metadata packet.
pub(crate) const METADATA_MAGIC: u32 = 0x75D1_1D57;

/// The bytes of a metadata packet's header (magic, uuid, checksum, content and packet
/// sizes, compression, encryption and checksum schemes, major, minor).
const PACKET_HEADER: usize = 37;

/// The most metadata text read (LTTng kernel traces have about 200 kB).
pub(crate) const MAX_METADATA: usize = 64 << 20;

/// Whether `head` (the start of a `metadata` file) is CTF metadata: a metadata packet's
/// magic in either byte order, or the `/* CTF` signature of plain text metadata.
pub fn is_metadata(head: &[u8]) -> bool {
    let magic = head.first_chunk::<4>().copied();
    magic.is_some_and(|m| {
        u32::from_le_bytes(m) == METADATA_MAGIC || u32::from_be_bytes(m) == METADATA_MAGIC
    }) || head.starts_with(b"/* CTF")
}

/// The metadata text of `bytes`: the packets' contents one after the other, or the
/// bytes themselves when they are plain text.
pub(crate) fn metadata_text(name: &str, bytes: &[u8]) -> Result<String> {
    let Some(&magic) = bytes.first_chunk::<4>() else {
        return text(name, bytes.to_vec());
    };
    let be = if u32::from_le_bytes(magic) == METADATA_MAGIC {
        false
    } else if u32::from_be_bytes(magic) == METADATA_MAGIC {
        true
    } else {
        return text(name, bytes.to_vec());
    };
    let u32_at = |at: usize| -> Option<u32> {
        let b = *bytes.get(at..at + 4)?.first_chunk::<4>()?;
        Some(if be {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    };
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let bad =
            |msg: String| Error::new(ErrorKind::Corrupt, name, Location::Offset(at as u64), msg);
        if bytes.len() - at < PACKET_HEADER {
            return Err(Error::new(
                ErrorKind::Truncated,
                name,
                Location::Offset(at as u64),
                format!(
                    "expected a metadata packet header of {PACKET_HEADER} bytes, found {} bytes",
                    bytes.len() - at
                ),
            ));
        }
        if u32_at(at) != Some(METADATA_MAGIC) {
            return Err(bad(format!(
                "expected a metadata packet (magic {METADATA_MAGIC:#x}), found {:#x}",
                u32_at(at).unwrap_or(0)
            )));
        }
        let content = u32_at(at + 24).unwrap_or(0) as usize;
        let packet = u32_at(at + 28).unwrap_or(0) as usize;
        let schemes = bytes.get(at + 32..at + 35).unwrap_or(&[]);
        if schemes.iter().any(|&s| s != 0) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                name,
                Location::Offset(at as u64 + 32),
                "a compressed, encrypted or checksummed metadata packet (its schemes are not 0): \
                 not read; `babeltrace2 -o ctf-metadata` prints its text",
            ));
        }
        if content % 8 != 0
            || packet % 8 != 0
            || content < PACKET_HEADER * 8
            || packet < content
            || packet / 8 > bytes.len() - at
        {
            return Err(Error::new(
                ErrorKind::Corrupt,
                name,
                Location::Offset(at as u64 + 24),
                format!(
                    "expected a metadata packet's content size and packet size (bits, multiples \
                     of 8, content >= {} <= packet <= the {} bytes left), found {content} and {packet}",
                    PACKET_HEADER * 8,
                    bytes.len() - at
                ),
            ));
        }
        out.extend_from_slice(&bytes[at + PACKET_HEADER..at + content / 8]);
        if out.len() > MAX_METADATA {
            return Err(Error::new(
                ErrorKind::Limit,
                name,
                Location::Offset(at as u64),
                format!("metadata of more than {} MiB", MAX_METADATA >> 20),
            ));
        }
        at += packet / 8;
    }
    text(name, out)
}

fn text(name: &str, bytes: Vec<u8>) -> Result<String> {
    if bytes.len() > MAX_METADATA {
        return Err(Error::new(
            ErrorKind::Limit,
            name,
            Location::Whole,
            format!("metadata of more than {} MiB", MAX_METADATA >> 20),
        ));
    }
    // Stray NULs pad the last packet of some writers.
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let mut bytes = bytes;
    bytes.truncate(end);
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        Error::new(
            ErrorKind::Format,
            name,
            Location::Line(line as u64),
            "expected metadata text (UTF-8), found other bytes",
        )
    })
}

/// A token of TSDL.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok<'a> {
    /// An identifier or keyword, borrowed from the metadata's text.
    Ident(&'a str),
    /// An integer literal (its sign is a separate `-`).
    Int(u64),
    /// A string literal, unescaped.
    Str(String),
    /// Punctuation: `{ } [ ] ( ) < > ; : , = := ... . -> + - *`.
    Punct(&'static str),
}

impl std::fmt::Display for Tok<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "`{s}`"),
            Tok::Int(v) => write!(f, "`{v}`"),
            Tok::Str(s) => write!(f, "{s:?}"),
            Tok::Punct(p) => write!(f, "`{p}`"),
        }
    }
}

/// A token and its line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token<'a> {
    pub tok: Tok<'a>,
    pub line: u32,
}

/// The punctuation that starts with byte `c`, longest first.
fn punct(c: u8) -> &'static [&'static str] {
    match c {
        b'.' => &["...", "."],
        b':' => &[":=", ":"],
        b'-' => &["->", "-"],
        b'{' => &["{"],
        b'}' => &["}"],
        b'[' => &["["],
        b']' => &["]"],
        b'(' => &["("],
        b')' => &[")"],
        b'<' => &["<"],
        b'>' => &[">"],
        b';' => &[";"],
        b',' => &[","],
        b'=' => &["="],
        b'+' => &["+"],
        b'*' => &["*"],
        _ => &[],
    }
}

/// The tokens of a metadata text, cut one at a time as the parser asks for them:
/// LTTng's TSDL has a token per 3.6 bytes (49,790 in the test trace's 180 kB), which
/// are never all kept.
#[derive(Clone)]
pub(crate) struct Lexer<'a> {
    name: &'a str,
    text: &'a str,
    at: usize,
    line: u32,
}

impl<'a> Lexer<'a> {
    /// The tokens of `text`, from the metadata named `name` (for errors).
    pub(crate) fn new(name: &'a str, text: &'a str) -> Lexer<'a> {
        Lexer {
            name,
            text,
            at: 0,
            line: 1,
        }
    }

    fn err(&self, line: u32, msg: String) -> Error {
        Error::new(
            ErrorKind::Format,
            self.name,
            Location::Line(u64::from(line)),
            msg,
        )
    }

    /// The next token, comments and whitespace skipped; `None` at the end of the text.
    pub(crate) fn next_token(&mut self) -> Result<Option<Token<'a>>> {
        let text = self.text;
        let b = text.as_bytes();
        let mut i = self.at;
        while i < b.len() {
            let c = b[i];
            if c == b'\n' {
                self.line += 1;
                i += 1;
            } else if c.is_ascii_whitespace() {
                i += 1;
            } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
                let start = self.line;
                let end = memchr::memmem::find(&b[i + 2..], b"*/").ok_or_else(|| {
                    self.err(start, "expected `*/` to end the comment opened here".into())
                })?;
                self.line += b[i..i + 2 + end].iter().filter(|&&x| x == b'\n').count() as u32;
                i += end + 4;
            } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
                i = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |n| i + n);
            } else {
                break;
            }
        }
        let Some(&c) = b.get(i) else {
            self.at = i;
            return Ok(None);
        };
        let line = self.line;
        let s = i;
        let tok = if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            Tok::Ident(&text[s..i])
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let lit = &text[s..i];
            let digits = lit.trim_end_matches(['u', 'U', 'l', 'L']);
            let v = if let Some(h) = digits
                .strip_prefix("0x")
                .or_else(|| digits.strip_prefix("0X"))
            {
                u64::from_str_radix(h, 16)
            } else if digits.len() > 1 && digits.starts_with('0') {
                u64::from_str_radix(&digits[1..], 8)
            } else {
                digits.parse::<u64>()
            }
            .map_err(|_| self.err(line, format!("expected an integer literal, found `{lit}`")))?;
            Tok::Int(v)
        } else if c == b'"' {
            let mut s = Vec::new();
            i += 1;
            loop {
                let Some(&ch) = b.get(i) else {
                    return Err(
                        self.err(line, "expected `\"` to end the string opened here".into())
                    );
                };
                i += 1;
                match ch {
                    b'"' => break,
                    b'\\' => {
                        let Some(&e) = b.get(i) else { continue };
                        i += 1;
                        s.push(match e {
                            b'n' => b'\n',
                            b't' => b'\t',
                            b'r' => b'\r',
                            b'0' => 0,
                            other => other,
                        });
                    }
                    b'\n' => {
                        self.line += 1;
                        s.push(ch);
                    }
                    _ => s.push(ch),
                }
            }
            Tok::Str(String::from_utf8_lossy(&s).into_owned())
        } else if let Some(p) = punct(c).iter().find(|p| b[i..].starts_with(p.as_bytes())) {
            i += p.len();
            Tok::Punct(p)
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err(self.err(line, format!("expected a TSDL token, found `{ch}`")));
        };
        self.at = i;
        Ok(Some(Token { tok, line }))
    }
}

/// All the tokens of `text`.
#[cfg(test)]
pub(crate) fn tokens<'a>(name: &'a str, text: &'a str) -> Result<Vec<Token<'a>>> {
    let mut lex = Lexer::new(name, text);
    let mut out = Vec::new();
    while let Some(t) = lex.next_token()? {
        out.push(t);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_know_lines_and_literals() {
        let t = tokens("m", "a /* x\ny */ 0x1F 017 42UL \"s\\\"q\" := ...\n// c\nb").unwrap();
        let toks: Vec<_> = t.iter().map(|t| (t.tok.clone(), t.line)).collect();
        assert_eq!(
            toks,
            vec![
                (Tok::Ident("a"), 1),
                (Tok::Int(31), 2),
                (Tok::Int(15), 2),
                (Tok::Int(42), 2),
                (Tok::Str("s\"q".into()), 2),
                (Tok::Punct(":="), 2),
                (Tok::Punct("..."), 2),
                (Tok::Ident("b"), 4),
            ]
        );
        let e = tokens("m", "a\n\"open").unwrap_err();
        assert_eq!(e.location, Location::Line(2));
        let e = tokens("m", "a\n @").unwrap_err();
        assert_eq!(e.to_string(), "m: line 2: expected a TSDL token, found `@`");
    }

    #[test]
    fn packets_are_unwrapped() {
        let mut bytes = Vec::new();
        for (i, part) in ["/* CTF 1.8 */ trace ", "{ };"].iter().enumerate() {
            let content = 37 + part.len();
            let packet = content + 3 * i;
            bytes.extend_from_slice(&METADATA_MAGIC.to_be_bytes());
            bytes.extend_from_slice(&[0; 16]);
            bytes.extend_from_slice(&0u32.to_be_bytes());
            bytes.extend_from_slice(&(content as u32 * 8).to_be_bytes());
            bytes.extend_from_slice(&(packet as u32 * 8).to_be_bytes());
            bytes.extend_from_slice(&[0, 0, 0, 1, 8]);
            bytes.extend_from_slice(part.as_bytes());
            bytes.resize(bytes.len() + packet - content, 0);
        }
        assert!(is_metadata(&bytes));
        assert_eq!(
            metadata_text("m", &bytes).unwrap(),
            "/* CTF 1.8 */ trace { };"
        );
        let cut = &bytes[..bytes.len() - 1];
        let e = metadata_text("m", cut).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Corrupt, "{e}");
    }
}
