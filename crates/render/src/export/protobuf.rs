//! The few protocol-buffer encodings the Perfetto trace needs, written by hand: varints,
//! length-delimited fields (strings, bytes, nested messages) and their tags
//! (<https://protobuf.dev/programming-guides/encoding/>).
//!
//! Nested messages are written in place: the tag, then the body, then the body's length
//! is inserted before it, so a message costs no allocation of its own.

/// Wire type of a varint field.
const VARINT: u32 = 0;
/// Wire type of a length-delimited field.
const LEN: u32 = 2;

/// A protocol-buffer message being encoded into a byte vector.
#[derive(Debug, Default)]
pub(crate) struct Pb {
    /// The encoded bytes.
    pub(crate) buf: Vec<u8>,
}

/// Appends `v` as a base-128 varint.
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

impl Pb {
    /// The key of field `field` with wire type `wire`.
    fn key(&mut self, field: u32, wire: u32) {
        put_varint(&mut self.buf, u64::from(field << 3 | wire));
    }

    /// An unsigned integer field (`uint32`, `uint64`, `bool`).
    pub(crate) fn uint(&mut self, field: u32, v: u64) {
        self.key(field, VARINT);
        put_varint(&mut self.buf, v);
    }

    /// A signed integer field (`int32`, `int64`: negative values take ten bytes, as
    /// protobuf sign-extends them to 64 bits).
    pub(crate) fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }

    /// A bytes field.
    pub(crate) fn bytes(&mut self, field: u32, v: &[u8]) {
        self.key(field, LEN);
        put_varint(&mut self.buf, v.len() as u64);
        self.buf.extend_from_slice(v);
    }

    /// A string field.
    pub(crate) fn str(&mut self, field: u32, v: &str) {
        self.bytes(field, v.as_bytes());
    }

    /// A nested message field whose body `body` writes.
    pub(crate) fn message(&mut self, field: u32, body: impl FnOnce(&mut Pb)) {
        self.key(field, LEN);
        let start = self.buf.len();
        body(self);
        let mut len = Vec::with_capacity(10);
        put_varint(&mut len, (self.buf.len() - start) as u64);
        self.buf.splice(start..start, len);
    }

    /// A nested message field whose body is already encoded.
    pub(crate) fn encoded(&mut self, field: u32, body: &[u8]) {
        self.bytes(field, body);
    }

    /// The key and length of a length-delimited field whose `len` bytes of body are
    /// written separately.
    pub(crate) fn len_header(&mut self, field: u32, len: usize) {
        self.key(field, LEN);
        put_varint(&mut self.buf, len as u64);
    }

    /// A string field holding `text` and a newline.
    pub(crate) fn str_nl(&mut self, field: u32, text: &str) {
        self.key(field, LEN);
        put_varint(&mut self.buf, text.len() as u64 + 1);
        self.buf.extend_from_slice(text.as_bytes());
        self.buf.push(b'\n');
    }

    /// Empties the buffer, keeping its allocation.
    pub(crate) fn clear(&mut self) {
        self.buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::Pb;

    #[test]
    fn encodings_match_the_protobuf_documentation() {
        // The documentation's examples: field 1 = 150 is 08 96 01; a string "testing"
        // in field 2 is 12 07 74 65 73 74 69 6e 67; -2 as int32 takes ten bytes.
        let mut pb = Pb::default();
        pb.uint(1, 150);
        assert_eq!(pb.buf, [0x08, 0x96, 0x01]);
        pb.clear();
        pb.str(2, "testing");
        assert_eq!(pb.buf, b"\x12\x07testing");
        pb.clear();
        pb.int(1, -2);
        assert_eq!(
            pb.buf,
            [0x08, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        pb.clear();
        // Field 3 holding a message with field 1 = 150: 1a 03 08 96 01.
        pb.message(3, |m| m.uint(1, 150));
        assert_eq!(pb.buf, [0x1a, 0x03, 0x08, 0x96, 0x01]);
        // A body of 200 bytes gets a two-byte length.
        pb.clear();
        pb.message(1, |m| m.bytes(2, &[0; 197]));
        assert_eq!(&pb.buf[..3], [0x0a, 0xc8, 0x01]);
        assert_eq!(pb.buf.len(), 203);
    }
}
