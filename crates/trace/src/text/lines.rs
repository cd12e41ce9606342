//! Line input for the text readers: one reused buffer, line numbers, a length cap, and
//! lossy UTF-8 for the rare line that is not valid UTF-8.

use std::io::{BufRead, Read};

use super::reorder::Output;
use super::TextOptions;
use crate::{Error, ErrorKind, Event, Location, Result};

/// The longest line read; a longer one is an error (and is skipped whole in lenient mode).
pub(crate) const MAX_LINE: usize = 1 << 20;

/// One line read.
pub(crate) enum Line<'a> {
    /// A line (number, text without its `\n` / `\r\n`).
    Text(u64, &'a str),
    /// A line longer than [`MAX_LINE`] (number); it was consumed and dropped.
    TooLong(u64),
}

/// Why a line does not decode: the kind of [`Error`] it becomes (a plain message is
/// [`ErrorKind::Syntax`]) and what was expected.
#[derive(Debug)]
pub(crate) struct LineError {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
}

impl LineError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> LineError {
        LineError {
            kind,
            message: message.into(),
        }
    }

    /// A value above one of the readers' sanity limits.
    pub(crate) fn limit(message: impl Into<String>) -> LineError {
        LineError::new(ErrorKind::Limit, message)
    }
}

impl From<String> for LineError {
    fn from(message: String) -> LineError {
        LineError::new(ErrorKind::Syntax, message)
    }
}

impl From<&str> for LineError {
    fn from(message: &str) -> LineError {
        LineError::new(ErrorKind::Syntax, message)
    }
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
            ErrorKind::Io,
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

/// What the line-oriented readers' states offer to the shared driver ([`step`],
/// [`skip_to_data`], [`next_event`]).
pub(crate) trait LineState {
    /// Decodes one line; true if it is a data line (not a header or a comment).
    fn line(&mut self, line: &str) -> std::result::Result<bool, LineError>;
    /// The input has ended.
    fn finish(&mut self);
    /// Whether the input has ended.
    fn at_eof(&self) -> bool;
    /// The reader's options (the input's name, lenient or not).
    fn opts(&self) -> &TextOptions;
    /// Where decoded events wait to be handed out in time order.
    fn out(&mut self) -> &mut Output;
    /// An event that can be handed out now.
    fn pop_ready(&mut self) -> Option<Event> {
        self.out().pop_ready()
    }
}

/// Reads and decodes one line of `lines` into `st`; true if it was a data line. A line that
/// cannot be decoded (or is longer than [`MAX_LINE`]) is an error naming the input, the
/// line number and what was expected, or with `lenient` is skipped and counted.
pub(crate) fn step<R: BufRead, S: LineState>(lines: &mut Lines<R>, st: &mut S) -> Result<bool> {
    let (no, res) = match lines.next_line(&st.opts().source_name)? {
        None => {
            st.finish();
            return Ok(false);
        }
        Some(Line::TooLong(no)) => (
            no,
            Err(LineError::limit(format!(
                "expected a line of at most {MAX_LINE} bytes"
            ))),
        ),
        Some(Line::Text(no, line)) => (
            no,
            st.line(line).map_err(|e| LineError {
                message: format!("{}, in {}", e.message, super::excerpt(line)),
                ..e
            }),
        ),
    };
    match res {
        Ok(data) => Ok(data),
        Err(_) if st.opts().lenient => {
            st.out().stats.skipped += 1;
            Ok(true)
        }
        Err(e) => Err(Error::new(
            e.kind,
            &st.opts().source_name,
            Location::Line(no),
            e.message,
        )),
    }
}

/// Reads up to and including the first data line (headers before it), or to the end.
pub(crate) fn skip_to_data<R: BufRead, S: LineState>(
    lines: &mut Lines<R>,
    st: &mut S,
) -> Result<()> {
    while !st.at_eof() {
        if step(lines, st)? {
            break;
        }
    }
    Ok(())
}

/// The next event in time order, reading lines as needed: [`EventSource::next_event`] of
/// the line-oriented readers.
///
/// [`EventSource::next_event`]: crate::EventSource::next_event
pub(crate) fn next_event<R: BufRead, S: LineState>(
    lines: &mut Lines<R>,
    st: &mut S,
) -> Result<Option<Event>> {
    loop {
        if let Some(ev) = st.pop_ready() {
            return Ok(Some(ev));
        }
        if st.at_eof() {
            return Ok(st.out().pop_final());
        }
        step(lines, st)?;
    }
}
