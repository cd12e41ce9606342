//! The tokens of a `print fmt:` line, cut as libtraceevent cuts them (`__read_token` in
//! event-parse.c): words, operators, the delimiters `(`, `)` and `,`, and quoted strings.
//!
//! Quoted strings keep their backslash escapes as written (the format string's are undone
//! when it is cut into pieces; a string argument is printed as written), and adjacent
//! double-quoted strings are one token. A character that is not printable ASCII outside a
//! string, or inside one unescaped, ends the input, as it ends libtraceevent's.

/// One token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Tok {
    /// The end of the input (or a character that cannot start a token).
    End,
    /// An operator: one to three characters (`->`, `<<=`, `!=`, `{`, `*`, ...).
    Op(String),
    /// `(`, `)` or `,`.
    Delim(char),
    /// A run of letters, digits and `_`: a number, a name, a type word.
    Item(String),
    /// A double-quoted string (adjacent ones joined), without its quotes.
    Str(String),
    /// A single-quoted character literal, without its quotes.
    Char(String),
}

impl Tok {
    /// A word or a quoted string or character: what libtraceevent calls an item
    /// (`event_item_type`).
    pub(super) fn is_item(&self) -> bool {
        matches!(self, Tok::Item(_) | Tok::Str(_) | Tok::Char(_))
    }

    pub(super) fn is_op(&self, op: &str) -> bool {
        matches!(self, Tok::Op(o) if o == op)
    }

    pub(super) fn is_delim(&self, c: char) -> bool {
        *self == Tok::Delim(c)
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn is_print(c: u8) -> bool {
    (0x20..0x7f).contains(&c)
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The tokens of one line, one at a time.
pub(super) struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    pub(super) fn new(s: &'a str) -> Lexer<'a> {
        Lexer {
            s: s.as_bytes(),
            pos: 0,
        }
    }

    /// Whether the next character after spaces is `c` (without reading it).
    pub(super) fn next_is(&self, c: u8) -> bool {
        self.s[self.pos..]
            .iter()
            .find(|&&b| !is_space(b))
            .is_some_and(|&b| b == c)
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    /// The next token, spaces and newlines skipped.
    pub(super) fn next(&mut self) -> Tok {
        while self.peek().is_some_and(is_space) {
            self.pos += 1;
        }
        let Some(c) = self.bump() else {
            return Tok::End;
        };
        match c {
            b'(' | b')' | b',' => Tok::Delim(char::from(c)),
            b'"' => self.quoted(b'"'),
            b'\'' => self.quoted(b'\''),
            c if is_word(c) => {
                let start = self.pos - 1;
                while self.peek().is_some_and(is_word) {
                    self.pos += 1;
                }
                let word = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
                // Old kernels' mac80211 formats use macros the kernel did not expand;
                // libtraceevent reads them as the strings they stand for.
                match word.as_str() {
                    "LOCAL_PR_FMT" => Tok::Str("%s".into()),
                    "STA_PR_FMT" => Tok::Str(" sta:%pM".into()),
                    "VIF_PR_FMT" => Tok::Str(" vif:%p(%d)".into()),
                    _ => Tok::Item(word),
                }
            }
            c if !is_print(c) => Tok::End,
            c => Tok::Op(self.op(c)),
        }
    }

    /// An operator starting with `c`: `->`, a doubled `+ - | & > <`, any of those or
    /// `! =` followed by `=`; any other character alone.
    fn op(&mut self, c: u8) -> String {
        let mut op = String::from(char::from(c));
        match c {
            b'-' if self.peek() == Some(b'>') => {
                self.pos += 1;
                op.push('>');
                return op;
            }
            b'+' | b'-' | b'|' | b'&' | b'>' | b'<' => {
                if self.peek() == Some(c) {
                    self.pos += 1;
                    op.push(char::from(c));
                    if !matches!(c, b'>' | b'<') {
                        return op;
                    }
                }
            }
            b'!' | b'=' => {}
            _ => return op,
        }
        if self.peek() == Some(b'=') {
            self.pos += 1;
            op.push('=');
        }
        op
    }

    /// A quoted string: up to the closing quote (a quote or unprintable character after a
    /// backslash does not close it), without it; a double-quoted string continues into
    /// the next one after spaces. As libtraceevent's loop, a backslash pair "cancels"
    /// only for the second backslash itself: the character after it is still escaped.
    fn quoted(&mut self, quote: u8) -> Tok {
        let mut buf = Vec::new();
        let mut ch: i32 = i32::from(quote);
        loop {
            loop {
                let mut last = ch;
                ch = self.bump().map_or(-1, |c| i32::from(c as i8));
                buf.push(ch);
                if ch == i32::from(b'\\') && last == i32::from(b'\\') {
                    last = 0;
                }
                if ch <= 0 {
                    // The end, a NUL or a byte past ASCII: no token.
                    return Tok::End;
                }
                let printable = is_print(ch as u8);
                if !((ch != i32::from(quote) && printable)
                    || last == i32::from(b'\\')
                    || ch == i32::from(b'\n'))
                {
                    break;
                }
            }
            // The closing quote (or the unprintable character that ended the string).
            buf.pop();
            if quote == b'"' {
                let save = self.pos;
                while self.peek().is_some_and(is_space) {
                    self.pos += 1;
                }
                if self.peek() == Some(b'"') {
                    self.pos += 1;
                    ch = i32::from(b'"');
                    continue;
                }
                self.pos = save;
            }
            let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
            let s = String::from_utf8_lossy(&bytes).into_owned();
            return if quote == b'"' {
                Tok::Str(s)
            } else {
                Tok::Char(s)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(s: &str) -> Vec<Tok> {
        let mut l = Lexer::new(s);
        let mut v = Vec::new();
        loop {
            let t = l.next();
            if t == Tok::End {
                return v;
            }
            v.push(t);
        }
    }

    #[test]
    fn cuts_as_libtraceevent() {
        use Tok::*;
        assert_eq!(
            all(r#""a=%d" "b\"c\\x", REC->x >> 2 ? 'c' : -1"#),
            [
                Str(r#"a=%db\"c\\x"#.into()),
                Delim(','),
                Item("REC".into()),
                Op("->".into()),
                Item("x".into()),
                Op(">>".into()),
                Item("2".into()),
                Op("?".into()),
                Char("c".into()),
                Op(":".into()),
                Op("-".into()),
                Item("1".into()),
            ]
        );
        assert_eq!(
            all("a<<=b!=c&&d||e<=f{}"),
            [
                Item("a".into()),
                Op("<<=".into()),
                Item("b".into()),
                Op("!=".into()),
                Item("c".into()),
                Op("&&".into()),
                Item("d".into()),
                Op("||".into()),
                Item("e".into()),
                Op("<=".into()),
                Item("f".into()),
                Op("{".into()),
                Op("}".into()),
            ]
        );
        // An unterminated string, or a byte past ASCII, ends the input.
        assert_eq!(all(r#"x "abc"#), [Item("x".into())]);
        assert_eq!(all("x \u{e9} y"), [Item("x".into())]);
        assert_eq!(all("LOCAL_PR_FMT"), [Str("%s".into())]);
        // libtraceevent's quirk: after an escaped backslash, a quote is still escaped.
        assert_eq!(all(r#""a\\" b"#), []);
    }
}
