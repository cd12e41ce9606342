//! Text from a pipe, a FIFO or a size-less file (tracefs `trace` and `trace_pipe`): the
//! format told from the first lines as they come, then the rest read once, as it comes,
//! ending early on a cancel flag.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;

use super::{detect_lines, Cancel, Detected, TextKind};

/// How much of the start of a stream may be read to tell its format.
const DETECT_BYTES: usize = 64 * 1024;

/// How long a read waits for input before looking at the cancel flag again, ms.
const POLL_MS: i32 = 100;

/// Reads the start of `file`, as much as it has, until its format is known (its first data
/// line, or its end, or 64 KiB of headers): the bytes read and what they tell. Unlike a
/// read of a fixed size, this returns as soon as the first event line of a slow stream
/// (`trace_pipe`) has arrived.
pub(crate) fn read_head(file: &mut File) -> io::Result<(Vec<u8>, Option<TextKind>)> {
    let mut head = Vec::with_capacity(4096);
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let room = (DETECT_BYTES - head.len()).min(chunk.len());
        let n = match file.read(&mut chunk[..room]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        head.extend_from_slice(&chunk[..n]);
        let kind = match detect_lines(&head, n == 0) {
            Detected::Kind(k) => Some(k),
            Detected::NotATrace => None,
            Detected::Undecided if head.len() >= DETECT_BYTES => match detect_lines(&head, true) {
                Detected::Kind(k) => Some(k),
                _ => None,
            },
            Detected::Undecided => continue,
        };
        return Ok((head, kind));
    }
}

/// A file read that ends (as at the end of the input) once `cancel` is set, also while
/// it waits for input: it polls the file for input every 100 ms and looks at the flag in
/// between. After 100 ms without input it fails with [`io::ErrorKind::WouldBlock`] (once
/// per quiet spell), which the line reader takes as "idle": the events it holds back are
/// handed out meanwhile.
pub(crate) struct CancelRead {
    pub(crate) file: File,
    pub(crate) cancel: Cancel,
    /// Idle was reported for the current quiet spell.
    pub(crate) quiet: bool,
}

impl Read for CancelRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.cancel.is_set() {
                return Ok(0);
            }
            let mut pfd = libc::pollfd {
                fd: self.file.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, its count 1.
            let r = unsafe { libc::poll(&mut pfd, 1, POLL_MS) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if r > 0 {
                // Input, the writer gone, or an error: the read tells which.
                self.quiet = false;
                return self.file.read(buf);
            }
            if !self.quiet {
                self.quiet = true;
                return Err(io::ErrorKind::WouldBlock.into());
            }
        }
    }
}
