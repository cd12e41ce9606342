//! Line input for the text readers: one reused buffer, line numbers, a length cap, and
//! lossy UTF-8 for the rare line that is not valid UTF-8.

use std::io::{BufRead, Read};

use crate::{Error, Location, Result};

/// The longest line read; a longer one is an error (and is skipped whole in lenient mode).
pub(crate) const MAX_LINE: usize = 1 << 20;

/// One line read.
pub(crate) enum Line<'a> {
    /// A line (number, text without its `\n` / `\r\n`).
    Text(u64, &'a str),
    /// A line longer than [`MAX_LINE`] (number); it was consumed and dropped.
    TooLong(u64),
}

/// Lines of a `BufRead`, without their `\n` / `\r\n`.
pub(crate) struct Lines<R> {
    input: R,
    buf: Vec<u8>,
    lossy: String,
    line_no: u64,
}

impl<R: BufRead> Lines<R> {
    pub(crate) fn new(input: R) -> Self {
        Lines {
            input,
            buf: Vec::with_capacity(256),
            lossy: String::new(),
            line_no: 0,
        }
    }

    /// The next line and its 1-based number, `None` at the end. Fails only on read errors.
    pub(crate) fn next_line(&mut self, source: &str) -> Result<Option<Line<'_>>> {
        self.buf.clear();
        let n = read_capped(&mut self.input, &mut self.buf, MAX_LINE + 1)
            .map_err(|e| self.io_error(source, e))?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        } else if self.buf.len() > MAX_LINE {
            loop {
                self.buf.clear();
                let n = read_capped(&mut self.input, &mut self.buf, MAX_LINE)
                    .map_err(|e| self.io_error(source, e))?;
                if n == 0 || self.buf.last() == Some(&b'\n') {
                    break;
                }
            }
            return Ok(Some(Line::TooLong(self.line_no)));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        let no = self.line_no;
        match std::str::from_utf8(&self.buf) {
            Ok(s) => Ok(Some(Line::Text(no, s))),
            Err(_) => {
                self.lossy = String::from_utf8_lossy(&self.buf).into_owned();
                Ok(Some(Line::Text(no, &self.lossy)))
            }
        }
    }

    fn io_error(&self, source: &str, e: std::io::Error) -> Error {
        Error::new(
            source,
            Location::Line(self.line_no + 1),
            format!("read error: {e}"),
        )
    }
}

/// `read_until(b'\n')` of at most `cap` bytes.
fn read_capped<R: BufRead>(input: &mut R, buf: &mut Vec<u8>, cap: usize) -> std::io::Result<usize> {
    input.by_ref().take(cap as u64).read_until(b'\n', buf)
}
