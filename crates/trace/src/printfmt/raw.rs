//! An event whose print format cannot be parsed: `[FAILED TO PARSE]`, then ` name=value`
//! for each of its own fields, as libtraceevent's `print_field_raw` prints them.

use super::eval::Rec;
use super::{PField, ARRAY, DYNAMIC, LONG, POINTER, SIGNED, STRING};

/// A string whose bytes, up to a NUL, are printable or space (`is_printable_array`).
fn printable(b: &[u8]) -> bool {
    b.iter()
        .take_while(|&&c| c != 0)
        .all(|&c| (0x20..0x7f).contains(&c) || matches!(c, b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
}

/// ` name=value` of each field. `not_strings` names the string fields libtraceevent
/// stopped printing as strings (it clears a field's string flag once its bytes were not
/// printable, for every later record); the ones found here are added.
pub(crate) fn fields(rec: &Rec<'_>, out: &mut Vec<u8>, not_strings: &mut Vec<usize>) {
    for (i, f) in rec.fields.iter().enumerate() {
        if f.common {
            continue;
        }
        out.push(b' ');
        out.extend_from_slice(f.name.as_bytes());
        out.push(b'=');
        field(rec, out, i, f, not_strings);
    }
}

fn field(rec: &Rec<'_>, out: &mut Vec<u8>, i: usize, f: &PField, not_strings: &mut Vec<usize>) {
    if f.is(ARRAY) {
        let (offset, len) = if f.is(DYNAMIC) {
            rec.dyn_offset(f)
        } else {
            (f.offset, f.size)
        };
        let bytes = rec
            .data
            .get(offset..offset.saturating_add(len).min(rec.data.len()))
            .unwrap_or(&[]);
        if f.is(STRING) && !not_strings.contains(&i) && printable(bytes) {
            out.extend_from_slice(rec.cstr(offset));
        } else {
            out.extend_from_slice(b"ARRAY[");
            for (k, b) in bytes.iter().enumerate() {
                if k > 0 {
                    out.extend_from_slice(b", ");
                }
                out.extend_from_slice(format!("{b:02x}").as_bytes());
            }
            out.push(b']');
            if !not_strings.contains(&i) {
                not_strings.push(i);
            }
        }
        return;
    }
    let val = rec.read(f.offset, f.size);
    let text = if f.is(POINTER) {
        format!("0x{val:x}")
    } else if f.is(SIGNED) {
        match f.size {
            4 if f.is(LONG) => format!("0x{:x}", val as u32),
            4 => (val as u32 as i32).to_string(),
            2 => format!("{:2}", val as u16 as i16),
            1 => (val as u8 as i8).to_string(),
            _ => (val as i64).to_string(),
        }
    } else if f.is(LONG) {
        format!("0x{val:x}")
    } else {
        val.to_string()
    };
    out.extend_from_slice(text.as_bytes());
}
