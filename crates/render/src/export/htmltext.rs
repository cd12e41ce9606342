//! The text of the HTML report's data blocks (docs/html.md, "The file"). A page with data
//! blocks is written in UTF-16LE (with a byte-order mark), so that each two bytes of a
//! compressed block are one UTF-16 code unit of the page: the block costs about 3 % more
//! than its bytes, where base64 cost a third more, and Chromium reads UTF-16 as fast as
//! ASCII (a single-byte charset such as windows-1252 would cost 1.6 % but takes it three
//! times as long to parse). A page without blocks stays UTF-8.
//!
//! A block's units go into a `<script>` element as they are, but for those the HTML
//! parser would alter or that would end the element: U+0000 (replaced by U+FFFD), U+000D
//! (turned into a line feed), `<` (the start of `</script`, or of `<!--`, which changes
//! how the parser looks for the end tag), the surrogates U+D800-U+DFFF (a lone one
//! becomes U+FFFD) and `=`, the escape itself. Each of these is written as `=` and the
//! unit XOR 0x8000. A block of odd length ends with `=` and 0x0100 plus its last byte.
//! The page (web/data.js) undoes this before it inflates the block.

/// The escape unit of a block's text.
const ESCAPE: u16 = b'=' as u16;

/// What the unit after an escape is XORed with.
const FLIP: u16 = 0x8000;

/// After an escape: 0x0100 plus a block's odd last byte.
const LAST_BYTE: u16 = 0x0100;

/// Whether a block's unit `u` is written escaped.
fn escaped(u: u16) -> bool {
    matches!(u, 0x0000 | 0x000D | 0x003C | ESCAPE | 0xD800..=0xDFFF)
}

/// Appends the text of a `jl-data-K` element carrying `bytes` (a compressed block) to
/// `out`, as UTF-16LE: each two bytes one code unit (the first the low byte), but
/// U+0000, U+000D, `<`, `=` and the surrogates written `=` and the unit XOR 0x8000; an
/// odd last byte written `=` and 0x0100 plus the byte.
pub fn html_block_text(bytes: &[u8], out: &mut Vec<u8>) {
    // About 2,052 units in 65,536 are escaped.
    out.reserve(bytes.len() + bytes.len() / 28 + 8);
    let mut unit = |u: u16| out.extend_from_slice(&u.to_le_bytes());
    let pairs = bytes.chunks_exact(2);
    let last = pairs.remainder().first().copied();
    for p in pairs {
        let u = u16::from_le_bytes([p[0], p[1]]);
        if escaped(u) {
            unit(ESCAPE);
            unit(u ^ FLIP);
        } else {
            unit(u);
        }
    }
    if let Some(b) = last {
        unit(ESCAPE);
        unit(LAST_BYTE | u16::from(b));
    }
}

/// Appends `s` to `out` as UTF-16LE.
pub(super) fn utf16le(s: &str, out: &mut Vec<u8>) {
    out.reserve(2 * s.len());
    for u in s.encode_utf16() {
        out.extend_from_slice(&u.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Undoes `html_block_text`, as web/data.js does once the browser has decoded the
    /// page: None when the text is not a block's.
    fn unescape(text: &[u16]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let mut it = text.iter().copied();
        while let Some(u) = it.next() {
            if escaped(u) && u != ESCAPE {
                return None;
            }
            let u = match u {
                ESCAPE => match it.next()? {
                    n if n & 0xFF00 == LAST_BYTE => {
                        out.push(n as u8);
                        return it.next().is_none().then_some(out);
                    }
                    n => n ^ FLIP,
                },
                u => u,
            };
            out.extend_from_slice(&u.to_le_bytes());
        }
        Some(out)
    }

    fn units(bytes: &[u8]) -> Vec<u16> {
        let mut text = Vec::new();
        html_block_text(bytes, &mut text);
        assert_eq!(text.len() % 2, 0);
        text.chunks_exact(2)
            .map(|p| u16::from_le_bytes([p[0], p[1]]))
            .collect()
    }

    #[test]
    fn every_unit_and_byte_goes_through_a_block_and_back() {
        // Every unit, so every byte in both places, and `</script`-like text in UTF-16.
        let mut bytes: Vec<u8> = (0..=u16::MAX).flat_map(u16::to_le_bytes).collect();
        let mut tail = Vec::new();
        utf16le("</script></SCRIPT <!--<script>\r\n\r\0\0==", &mut tail);
        bytes.extend_from_slice(&tail);
        let text = units(&bytes);
        // 2048 surrogates and 4 others escaped, and in the tail 4 `<`, 2 CR, 2 NUL, 2 `=`.
        assert_eq!(text.len(), bytes.len() / 2 + 2052 + 10);
        for u in &text {
            assert!(
                !matches!(u, 0x0000 | 0x000D | 0x003C | 0xD800..=0xDFFF),
                "{u:#x}"
            );
        }
        assert_eq!(&text[..3], [ESCAPE, 0x8000, 0x0001]);
        assert_eq!(&text[14..17], [ESCAPE, 0x800D, 0x000E]);
        assert_eq!(unescape(&text).as_deref(), Some(&bytes[..]));
        // An odd length: the last byte after an escape, itself any byte.
        for last in [0u8, b'<', b'=', 0xD8, 0xFF] {
            let odd = [b'a', b'b', last];
            let text = units(&odd);
            assert_eq!(text, [0x6261, ESCAPE, 0x0100 | u16::from(last)]);
            assert_eq!(unescape(&text).as_deref(), Some(&odd[..]));
        }
        assert!(units(&[]).is_empty());
    }

    #[test]
    fn text_is_utf16le() {
        let mut out = Vec::new();
        utf16le("a€😀", &mut out);
        assert_eq!(out, [0x61, 0, 0xAC, 0x20, 0x3D, 0xD8, 0x00, 0xDE]);
    }
}
