//! Checked reads over a byte slice that turn running out of data into an [`Error`] naming
//! the file, the byte offset and what was being read.

use crate::format::Endian;
use crate::{Error, ErrorKind, Location, Result};

/// Where a slice being read came from, so that errors point into the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The slice starts at this file offset.
    File(u64),
    /// The slice is the decompressed content of the section (or chunk) at this file offset.
    Inflated(u64),
}

impl Origin {
    /// The error location and a note for a position `pos` within the slice.
    pub(crate) fn locate(self, pos: usize) -> (Location, String) {
        match self {
            Origin::File(base) => (
                Location::Offset(base.saturating_add(pos as u64)),
                String::new(),
            ),
            Origin::Inflated(at) => (
                Location::Offset(at),
                format!("at byte {pos} of the data decompressed from here: "),
            ),
        }
    }
}

/// An error of `kind` at `pos` of a slice from `origin`.
pub(crate) fn error_at(
    kind: ErrorKind,
    name: &str,
    origin: Origin,
    pos: usize,
    message: impl AsRef<str>,
) -> Error {
    let (loc, note) = origin.locate(pos);
    Error::new(kind, name, loc, format!("{note}{}", message.as_ref()))
}

/// A forward reader over `data`.
pub(crate) struct Cursor<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) pos: usize,
    pub(crate) origin: Origin,
    pub(crate) endian: Endian,
    pub(crate) name: &'a str,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(name: &'a str, data: &'a [u8], origin: Origin, endian: Endian) -> Cursor<'a> {
        Cursor {
            data,
            pos: 0,
            origin,
            endian,
            name,
        }
    }

    /// A cursor at file offset `at` of the whole file `data`.
    pub(crate) fn at(name: &'a str, data: &'a [u8], at: u64, endian: Endian) -> Result<Cursor<'a>> {
        let mut c = Cursor::new(name, data, Origin::File(0), endian);
        match usize::try_from(at).ok().filter(|&a| a <= data.len()) {
            Some(a) => {
                c.pos = a;
                Ok(c)
            }
            None => Err(c.err_at(
                ErrorKind::Truncated,
                data.len(),
                format!(
                    "expected data at byte offset {at}, but the file ends at {} (truncated?)",
                    data.len()
                ),
            )),
        }
    }

    /// An error of `kind` at `pos` of the slice.
    pub(crate) fn err_at(&self, kind: ErrorKind, pos: usize, message: impl AsRef<str>) -> Error {
        error_at(kind, self.name, self.origin, pos, message)
    }

    /// An error of `kind` at the cursor.
    pub(crate) fn err(&self, kind: ErrorKind, message: impl AsRef<str>) -> Error {
        self.err_at(kind, self.pos, message)
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    pub(crate) fn bytes(&mut self, n: u64, what: &str) -> Result<&'a [u8]> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|&e| e <= self.data.len());
        match end {
            Some(end) => {
                let b = &self.data[self.pos..end];
                self.pos = end;
                Ok(b)
            }
            None => Err(self.err(
                ErrorKind::Truncated,
                format!(
                    "expected {what} ({n} bytes), found only {} bytes before the end (truncated?)",
                    self.remaining()
                ),
            )),
        }
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.bytes(1, what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &str) -> Result<u16> {
        let at = self.pos;
        let b = self.bytes(2, what)?;
        self.endian
            .u16(b, 0)
            .ok_or_else(|| self.err_at(ErrorKind::Truncated, at, what))
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32> {
        let at = self.pos;
        let b = self.bytes(4, what)?;
        self.endian
            .u32(b, 0)
            .ok_or_else(|| self.err_at(ErrorKind::Truncated, at, what))
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64> {
        let at = self.pos;
        let b = self.bytes(8, what)?;
        self.endian
            .u64(b, 0)
            .ok_or_else(|| self.err_at(ErrorKind::Truncated, at, what))
    }

    /// A NUL-terminated string (the NUL is consumed, not returned).
    pub(crate) fn cstr(&mut self, what: &str) -> Result<String> {
        let rest = self.data.get(self.pos..).unwrap_or(&[]);
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                let s = String::from_utf8_lossy(&rest[..n]).into_owned();
                self.pos += n + 1;
                Ok(s)
            }
            None => Err(self.err(
                ErrorKind::Truncated,
                format!("expected {what} ending in a NUL byte, found the end"),
            )),
        }
    }

    /// Exactly `tag`, or an error saying what was there instead.
    pub(crate) fn tag(&mut self, tag: &[u8], what: &str) -> Result<()> {
        let at = self.pos;
        let b = self.bytes(tag.len() as u64, what)?;
        if b == tag {
            Ok(())
        } else {
            Err(self.err_at(
                ErrorKind::Corrupt,
                at,
                format!(
                    "expected {what} {:?}, found {:?}",
                    String::from_utf8_lossy(tag),
                    String::from_utf8_lossy(b)
                ),
            ))
        }
    }
}
