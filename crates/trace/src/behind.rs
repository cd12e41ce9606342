//! Writing behind: the bytes a producer writes are handed in large pieces to a second
//! thread, which writes them to the output while the producer goes on (the mirror of
//! [`crate::read_ahead`]). The output gets the same bytes in the same order; the first
//! error writing it is the one returned.

use std::io::{self, Write};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};

/// Bytes a piece handed over.
const PIECE: usize = 1 << 20;
/// Pieces handed over and not yet written, at most (besides the one being written).
const DEPTH: usize = 4;

/// Runs `produce` with a writer whose bytes reach `out` from a second thread, in pieces
/// of a MiB, then flushes `out`; returns what `produce` returned, or the first error
/// writing `out` (a producer's write after it fails gets an error too, and what
/// `produce` returned is dropped). With one CPU to run on, `out` is written in this
/// thread, through a buffer of the same size.
///
/// Writing a 655 MB Perfetto JSON to a tmpfs, the system calls' copy into the page
/// cache was a fifth of the thread that formats it; behind it, the conversion took 491
/// ms where it took 550 (BENCHMARKS.md).
pub fn write_behind<W, R>(out: W, produce: impl FnOnce(&mut dyn Write) -> R) -> io::Result<R>
where
    W: Write + Send,
{
    if !std::thread::available_parallelism().is_ok_and(|n| n.get() > 1) {
        let mut out = io::BufWriter::with_capacity(PIECE, out);
        let r = produce(&mut out);
        out.flush()?;
        return Ok(r);
    }
    std::thread::scope(|scope| {
        let (tx, rx) = sync_channel::<Vec<u8>>(DEPTH);
        let (back, spare) = channel::<Vec<u8>>();
        // At the normal priority: at nice 19 (as the Parquet encoders run) the pass
        // waited for it, and the conversion was 4 % slower.
        let writer = scope.spawn(move || write_pieces(out, rx, back));
        let mut behind = Behind {
            piece: Vec::with_capacity(PIECE),
            tx: Some(tx),
            spare,
        };
        let r = produce(&mut behind);
        let handed = behind.hand_over_last();
        // The thread's error first: a failed hand-over only says that it stopped.
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the writing thread panicked")));
        written?;
        handed?;
        Ok(r)
    })
}

/// The writing thread: each piece to `out`, then back for reuse; `out` flushed at the
/// end. Stops at the first error (the producer's next hand-over then fails).
fn write_pieces<W: Write>(
    mut out: W,
    pieces: Receiver<Vec<u8>>,
    back: Sender<Vec<u8>>,
) -> io::Result<()> {
    for mut piece in pieces {
        out.write_all(&piece)?;
        piece.clear();
        // The producer may be done: then the memory is dropped.
        let _ = back.send(piece);
    }
    out.flush()
}

/// The producer's side: fills a piece, hands it over when full.
struct Behind {
    piece: Vec<u8>,
    /// `None` once the writing thread stopped on an error.
    tx: Option<SyncSender<Vec<u8>>>,
    spare: Receiver<Vec<u8>>,
}

impl Behind {
    /// Hands the piece over; a written one (or a new one) takes its place.
    fn hand_over(&mut self) -> io::Result<()> {
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(PIECE));
        let full = std::mem::replace(&mut self.piece, next);
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(full).is_ok());
        if !sent {
            self.tx = None;
            return Err(stopped());
        }
        Ok(())
    }

    /// Hands over what is left and closes the channel: the thread ends once it has
    /// written everything.
    fn hand_over_last(&mut self) -> io::Result<()> {
        let r = if self.piece.is_empty() {
            Ok(())
        } else {
            self.hand_over()
        };
        self.tx = None;
        r
    }
}

fn stopped() -> io::Error {
    io::Error::other("the output's writing thread stopped on an error")
}

impl Write for Behind {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.tx.is_none() {
            return Err(stopped());
        }
        let room = PIECE - self.piece.len().min(PIECE);
        let n = buf.len().min(room);
        self.piece.extend_from_slice(&buf[..n]);
        if self.piece.len() >= PIECE {
            self.hand_over()?;
        }
        Ok(n)
    }

    /// The pieces are written as they fill; the output is flushed at the end.
    fn flush(&mut self) -> io::Result<()> {
        if self.tx.is_none() {
            return Err(stopped());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes into a vector, failing after `fail_after` bytes when given.
    struct Sink<'a> {
        got: &'a mut Vec<u8>,
        fail_after: Option<usize>,
        flushed: &'a mut bool,
    }

    impl Write for Sink<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self
                .fail_after
                .is_some_and(|n| self.got.len() + buf.len() > n)
            {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "full"));
            }
            self.got.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            *self.flushed = true;
            Ok(())
        }
    }

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn the_output_gets_the_same_bytes_in_order_and_flushed() {
        let data = bytes(3 * PIECE + 12_345);
        let (mut got, mut flushed) = (Vec::new(), false);
        let sink = Sink {
            got: &mut got,
            fail_after: None,
            flushed: &mut flushed,
        };
        let r = write_behind(sink, |w| {
            // Small writes and large ones, across the pieces' ends.
            let (a, rest) = data.split_at(10);
            w.write_all(a).unwrap();
            let (b, rest) = rest.split_at(PIECE + 5);
            w.write_all(b).unwrap();
            for chunk in rest.chunks(4093) {
                w.write_all(chunk).unwrap();
            }
            w.flush().unwrap();
            42
        })
        .unwrap();
        assert_eq!(r, 42);
        assert_eq!(got.len(), data.len());
        assert!(got == data, "the bytes differ");
        assert!(flushed);
    }

    #[test]
    fn an_error_writing_the_output_is_returned_and_later_writes_fail() {
        let (mut got, mut flushed) = (Vec::new(), false);
        let sink = Sink {
            got: &mut got,
            fail_after: Some(PIECE + 100),
            flushed: &mut flushed,
        };
        let mut later = None;
        let err = write_behind(sink, |w| {
            let piece = bytes(PIECE);
            // The second piece fails in the thread; a few more hand-overs find it gone.
            for _ in 0..(DEPTH + 8) {
                if let Err(e) = w.write_all(&piece) {
                    later = Some(e);
                    break;
                }
            }
        })
        .expect_err("the output's error");
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
        assert!(later.is_some(), "a write after the failure succeeded");
        assert!(!flushed);
    }
}
