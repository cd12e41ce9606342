//! Line input for the text readers: one reused buffer, line numbers, a length cap, lossy
//! UTF-8 for the rare line that is not valid UTF-8 (a comm cut inside a character), lines
//! ended by `\n`, `\r\n` or a lone `\r`, and an end on cancel.

use std::io::BufRead;

use super::reorder::Output;
use super::{Cancel, TextOptions};
use crate::{Error, ErrorKind, Event, Location, Result};

/// The longest line read; a longer one is an error (and is skipped whole in lenient mode).
pub(crate) const MAX_LINE: usize = 1 << 20;

/// One line read.
pub(crate) enum Line<'a> {
    /// A line (number, text without its `\n`, `\r\n` or `\r`).
    Text(u64, &'a str),
    /// A line longer than [`MAX_LINE`] (number); it was consumed and dropped.
    TooLong(u64),
    /// No input for a while (a stream waiting for its writer): what waits may be handed
    /// out. A line begun is kept for the next call.
    Idle,
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

/// Lines of a `BufRead`, without their `\n`, `\r\n` or `\r`.
pub(crate) struct Lines<R> {
    input: R,
    buf: Vec<u8>,
    lossy: String,
    line_no: u64,
    /// The first line ended with `\r`: a `\n` right after it belongs to it.
    after_cr: bool,
    /// How this input ends its lines, told by its first line.
    ends: Ends,
    /// `buf` holds the start of a line, read before the input went idle.
    partial: bool,
    cancel: Cancel,
}

impl<R: BufRead> Lines<R> {
    /// Lines of `input`; once `cancel` is set they end (before the next line, and a line
    /// cut short by the cancel is dropped).
    pub(crate) fn new(input: R, cancel: Cancel) -> Self {
        Lines {
            input,
            buf: Vec::with_capacity(256),
            lossy: String::new(),
            line_no: 0,
            after_cr: false,
            ends: Ends::Unknown,
            partial: false,
            cancel,
        }
    }

    /// The next line and its 1-based number, `None` at the end (or once cancelled). Fails
    /// only on read errors.
    pub(crate) fn next_line(&mut self, source: &str) -> Result<Option<Line<'_>>> {
        if self.cancel.is_set() {
            return Ok(None);
        }
        if !std::mem::take(&mut self.partial) {
            self.buf.clear();
        }
        let cap = (MAX_LINE + 1).saturating_sub(self.buf.len());
        match read_line(
            &mut self.input,
            &mut self.buf,
            cap,
            &mut self.ends,
            &mut self.after_cr,
        ) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                self.partial = !self.buf.is_empty();
                return Ok(Some(Line::Idle));
            }
            Err(e) => return Err(self.io_error(source, e)),
        }
        if self.buf.is_empty() {
            return Ok(None);
        }
        let ended = matches!(self.buf.last(), Some(b'\n' | b'\r'));
        if !ended && self.cancel.is_set() {
            // The read ended because of the cancel, inside a line.
            return Ok(None);
        }
        self.line_no += 1;
        if ended {
            if self.buf.pop() == Some(b'\n') && self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        } else if self.buf.len() > MAX_LINE {
            loop {
                self.buf.clear();
                let n = match read_line(
                    &mut self.input,
                    &mut self.buf,
                    MAX_LINE,
                    &mut self.ends,
                    &mut self.after_cr,
                ) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    r => r.map_err(|e| self.io_error(source, e))?,
                };
                if n == 0 || self.cancel.is_set() || matches!(self.buf.last(), Some(b'\n' | b'\r'))
                {
                    break;
                }
            }
            return Ok(Some(Line::TooLong(self.line_no)));
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

/// How an input ends its lines: `\n` (or `\r\n`), or a lone `\r` (old Mac style). Told
/// by the first line end, so that a `\r` inside a line of a `\n` file (a trace_marker
/// text) stays in its line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ends {
    /// Not seen yet.
    Unknown,
    /// `\n` or `\r\n`.
    Lf,
    /// A lone `\r`.
    Cr,
}

/// Reads one line into `buf`, its end included, at most `cap` bytes; the bytes read, 0 at
/// the end of the input. The first line end tells `ends` (a `\r` is told apart from a
/// `\r\n` at the next call, through `after_cr`).
fn read_line<R: BufRead>(
    input: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
    ends: &mut Ends,
    after_cr: &mut bool,
) -> std::io::Result<usize> {
    let mut n = 0;
    while n < cap {
        let avail = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            break;
        }
        if std::mem::take(after_cr) {
            if avail[0] == b'\n' {
                // The first line ended with `\r\n`.
                *ends = Ends::Lf;
                input.consume(1);
                continue;
            }
            *ends = Ends::Cr;
        }
        let look = &avail[..avail.len().min(cap - n)];
        let end = match *ends {
            Ends::Unknown => memchr::memchr2(b'\n', b'\r', look),
            Ends::Lf => memchr::memchr(b'\n', look),
            Ends::Cr => memchr::memchr(b'\r', look),
        };
        match end {
            Some(i) => {
                if *ends == Ends::Unknown {
                    if look[i] == b'\n' {
                        *ends = Ends::Lf;
                    } else {
                        *after_cr = true;
                    }
                }
                buf.extend_from_slice(&look[..=i]);
                input.consume(i + 1);
                return Ok(n + i + 1);
            }
            None => {
                let len = look.len();
                buf.extend_from_slice(look);
                input.consume(len);
                n += len;
            }
        }
    }
    Ok(n)
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
        Some(Line::Idle) => {
            st.out().idle();
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
