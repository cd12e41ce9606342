//! The recorder: one thread per traced CPU streaming that CPU's `trace_pipe_raw` pages
//! into a spool file, so that the buffer is emptied as fast as the kernel fills it.
//!
//! The first mistake of the ftrace latency hunt (`cat trace_pipe` losing events) is a
//! recorder starved by the workload it records: these threads run at nice -20 (where
//! permitted) and, when some online CPUs are not traced, only on those. Each thread waits
//! in `poll(2)` with a short timeout and then reads every full page there is; at the end
//! the pipes are drained, partial pages included.
//!
//! A reader never writes to disk: its pages go in chunks to a writer thread of its own,
//! up to a share of [`QUEUE_BYTES`] ahead of it. A write blocked by the disk (dirty-page
//! throttling, after a build or another recording) stalls only the writer; the reader
//! holding a 256 KiB ring buffer empty has a few milliseconds before the kernel drops
//! events, a write can block for hundreds.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use jitterlab_cpuset::CpuSet;

use super::session::Session;
use crate::error::{Error, Result};

/// How long a recorder thread waits in poll before it checks for the stop flag, ms.
const POLL_MS: i32 = 100;

/// One CPU's recorded pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spool {
    /// The CPU.
    pub cpu: u32,
    /// The file holding its pages back to back, each `page_size` bytes.
    pub path: PathBuf,
    /// Pages written.
    pub pages: u64,
}

/// The running recorder threads.
pub struct Recorder {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Result<Spool>>>,
}

impl Recorder {
    /// Starts a thread per traced CPU of `session`, spooling into `dir` (which must
    /// exist). With `stream` false (a flight recorder) the threads only wait, and read
    /// the buffer once, at the end.
    pub fn start(
        session: &Session,
        dir: &Path,
        page_size: usize,
        stream: bool,
    ) -> Result<Recorder> {
        let stop = Arc::new(AtomicBool::new(false));
        let online = session.online().clone();
        let traced = CpuSet::from_iter(session.cpus().iter().copied());
        let elsewhere = online.difference(&traced);
        let limit = queue_chunks(session.cpus().len(), page_size);
        let mut threads = Vec::new();
        for &cpu in session.cpus() {
            let pipe = session.raw_pipe(cpu)?;
            let path = dir.join(format!("cpu{cpu}.pages"));
            let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
            let stop = Arc::clone(&stop);
            let place = (!elsewhere.is_empty()).then(|| elsewhere.clone());
            let handle = std::thread::Builder::new()
                .name(format!("jitterlab-rec/{cpu}"))
                .spawn(move || {
                    if let Some(set) = place {
                        let _ = crate::sched::set_affinity(0, &set);
                    }
                    // SAFETY: setpriority on the calling thread.
                    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -20) };
                    let reader = Reader {
                        cpu,
                        page_size,
                        limit,
                        stream,
                    };
                    reader.record(pipe, file, path, &stop)
                })
                .map_err(|e| Error::Sys {
                    what: format!("spawning the recorder thread of CPU {cpu}"),
                    cause: e,
                })?;
            threads.push(handle);
        }
        Ok(Recorder { stop, threads })
    }

    /// Stops the threads after they have drained their pipes (turn tracing off first, so
    /// that the drain ends) and returns the spools in CPU order.
    pub fn finish(self) -> Result<Vec<Spool>> {
        self.stop.store(true, Ordering::SeqCst);
        let mut spools = Vec::new();
        let mut first = None;
        for t in self.threads {
            match t.join() {
                Ok(Ok(s)) => spools.push(s),
                Ok(Err(e)) => {
                    first.get_or_insert(e);
                }
                Err(_) => {
                    first.get_or_insert(Error::Invalid("a recorder thread panicked".into()));
                }
            }
        }
        match first {
            Some(e) => Err(e),
            None => Ok(spools),
        }
    }
}

/// Pages travel from a reader to its writer in chunks of this many.
const CHUNK_PAGES: usize = 64;

/// The memory all of a recording's readers may fill ahead of their writers, bytes: what
/// a disk that stalls (dirty-page throttling, a journal commit) can leave unwritten
/// before the readers wait, and the kernel's ring buffer fills.
const QUEUE_BYTES: usize = 512 << 20;

/// Chunks one CPU's reader may have filled and not yet seen written: its share of
/// [`QUEUE_BYTES`], and at least 4.
fn queue_chunks(cpus: usize, page_size: usize) -> usize {
    (QUEUE_BYTES / cpus.max(1) / (CHUNK_PAGES * page_size).max(1)).max(4)
}

/// A reader's side of its writer: full chunks go to the writer, which hands them back
/// empty; only while the writer lags by more than `limit` chunks does the reader wait.
struct Pump {
    full: std::sync::mpsc::SyncSender<Vec<u8>>,
    empty: std::sync::mpsc::Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    capacity: usize,
    page_size: usize,
    /// Pages read.
    pages: u64,
}

impl Pump {
    /// Starts the writer thread draining into `out` and returns the reader's side and the
    /// writer, which gives back the pages it wrote.
    fn start<W: Write + Send + 'static>(
        mut out: W,
        path: PathBuf,
        page_size: usize,
        limit: usize,
        name: String,
    ) -> Result<(Pump, JoinHandle<Result<u64>>)> {
        let (full, chunks) = std::sync::mpsc::sync_channel::<Vec<u8>>(limit);
        let (back, empty) = std::sync::mpsc::channel();
        let capacity = CHUNK_PAGES * page_size;
        let writer = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                // Back to the default nice (the reader's -20 is inherited): the writer has
                // the queue to fall behind into, the reader only its ring buffer.
                // SAFETY: setpriority on the calling thread.
                unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 0) };
                let mut bytes = 0u64;
                for mut chunk in chunks {
                    out.write_all(&chunk).map_err(|e| Error::io(&path, e))?;
                    bytes += chunk.len() as u64;
                    chunk.clear();
                    // The reader may be gone (it ended on an error): the chunk is dropped.
                    let _ = back.send(chunk);
                }
                out.flush().map_err(|e| Error::io(&path, e))?;
                Ok(bytes / page_size.max(1) as u64)
            })
            .map_err(|e| Error::Sys {
                what: format!("spawning {name}"),
                cause: e,
            })?;
        let pump = Pump {
            full,
            empty,
            chunk: Vec::with_capacity(capacity),
            capacity,
            page_size,
            pages: 0,
        };
        Ok((pump, writer))
    }

    /// The next page's bytes, zeroed, at the end of the current chunk.
    fn next_page(&mut self) -> &mut [u8] {
        let at = self.chunk.len();
        self.chunk.resize(at + self.page_size, 0);
        &mut self.chunk[at..]
    }

    /// Keeps the page [`Pump::next_page`] gave (a short read stays zero-padded, so pages
    /// stay page-aligned), or drops it; sends the chunk once full. False when the writer
    /// has ended (on an error, which its join returns).
    fn keep(&mut self, kept: bool) -> bool {
        if !kept {
            self.chunk.truncate(self.chunk.len() - self.page_size);
            return true;
        }
        self.pages += 1;
        self.chunk.len() < self.capacity || self.send()
    }

    /// Hands the current chunk to the writer and takes a fresh one.
    fn send(&mut self) -> bool {
        let next = self
            .empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(self.capacity));
        let chunk = std::mem::replace(&mut self.chunk, next);
        chunk.is_empty() || self.full.send(chunk).is_ok()
    }
}

/// Reads every page available now into `pump`. False when the writer has ended.
fn drain(pipe: &mut File, pump: &mut Pump, path: &Path) -> Result<bool> {
    loop {
        match pipe.read(pump.next_page()) {
            Ok(0) => return Ok(pump.keep(false)),
            Ok(_) => {
                if !pump.keep(true) {
                    return Ok(false);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(pump.keep(false)),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                pump.keep(false);
            }
            Err(e) => {
                pump.keep(false);
                return Err(Error::io(path, e));
            }
        }
    }
}

/// What one CPU's recorder thread reads, and how.
struct Reader {
    cpu: u32,
    page_size: usize,
    /// Chunks the reader may be ahead of its writer.
    limit: usize,
    /// False for a flight recorder: read once, at the end.
    stream: bool,
}

impl Reader {
    /// Reads the pipe until `stop`, the pages going through a [`Pump`] to a writer thread
    /// of their own: a write that blocks on the disk does not stop the reading.
    fn record(
        &self,
        mut pipe: File,
        file: File,
        path: PathBuf,
        stop: &AtomicBool,
    ) -> Result<Spool> {
        let cpu = self.cpu;
        let out = BufWriter::with_capacity(CHUNK_PAGES * self.page_size, file);
        let (mut pump, writer) = Pump::start(
            out,
            path.clone(),
            self.page_size,
            self.limit,
            format!("jitterlab-wr/{cpu}"),
        )?;
        let mut open = true;
        let read = (|| {
            while open && !stop.load(Ordering::SeqCst) {
                if self.stream {
                    let mut fd = libc::pollfd {
                        fd: pipe.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: one valid pollfd.
                    unsafe { libc::poll(&mut fd, 1, POLL_MS) };
                    open = drain(&mut pipe, &mut pump, &path)?;
                } else {
                    std::thread::sleep(std::time::Duration::from_millis(POLL_MS as u64));
                }
            }
            if open {
                open = drain(&mut pipe, &mut pump, &path)? && pump.send();
            }
            Ok(())
        })();
        let read_pages = pump.pages;
        drop(pump);
        let written = writer
            .join()
            .map_err(|_| Error::Invalid(format!("the spool writer of CPU {cpu} panicked")))?;
        // The writer's error first: it is why the reader stopped.
        let pages = written?;
        read?;
        debug_assert!(!open || pages == read_pages);
        Ok(Spool { cpu, path, pages })
    }
}

/// What a recording did, per CPU: pages written and what the kernel says it lost.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecordedCpu {
    /// The CPU.
    pub cpu: u32,
    /// Ring-buffer pages written to the file.
    pub pages: u64,
    /// Events read from the ring buffer, as the kernel counts them: the file holds
    /// exactly these.
    pub events: u64,
    /// Events overwritten before they were read (flight-recorder mode).
    pub overrun: u64,
    /// Events dropped because the buffer was full.
    pub dropped: u64,
    /// Events lost to a nested write over the commit page.
    pub commit_overrun: u64,
}

/// A finished recording, for people and for `--json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecordSummary {
    /// The file written.
    pub output: String,
    /// Its format.
    pub format: String,
    /// Its size, bytes.
    pub bytes: u64,
    /// The events enabled.
    pub events: Vec<String>,
    /// How long tracing was on, ns.
    pub wall_ns: u64,
    /// What ended it: `duration`, `command`, `signal`, `tracing off`.
    pub stopped_by: String,
    /// How the command ended, when there was one.
    pub command_exit: Option<String>,
    /// Whether the ring buffer was a flight recorder (overwrite mode, read at the end).
    pub flight_recorder: bool,
    /// Per traced CPU.
    pub cpus: Vec<RecordedCpu>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    const PAGE: usize = 64;

    /// A sink that holds its first write until told to go on, then keeps every byte.
    struct Stalled {
        go: mpsc::Receiver<()>,
        started: bool,
        bytes: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Stalled {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if !self.started {
                self.started = true;
                let _ = self.go.recv();
            }
            self.bytes.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn pump_into<W: Write + Send + 'static>(
        out: W,
        limit: usize,
    ) -> (Pump, JoinHandle<Result<u64>>) {
        Pump::start(
            out,
            PathBuf::from("spool"),
            PAGE,
            limit,
            "test-writer".into(),
        )
        .unwrap()
    }

    fn mark(i: usize) -> u8 {
        (i % 251) as u8 + 1
    }

    /// Page `i` read in full, or `short` bytes of it.
    fn read_page(pump: &mut Pump, i: usize, short: Option<usize>) -> bool {
        let page = pump.next_page();
        let n = short.unwrap_or(PAGE);
        page[..n].fill(mark(i));
        pump.keep(true)
    }

    #[test]
    fn the_reader_goes_on_while_the_writer_is_blocked() {
        let (go, wait) = mpsc::channel();
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let sink = Stalled {
            go: wait,
            started: false,
            bytes: Arc::clone(&bytes),
        };
        let limit = 4;
        let (mut pump, writer) = pump_into(sink, limit);
        // The writer holds one chunk in its stalled write and `limit` wait in the queue:
        // all of them are read without waiting for the disk.
        let pages = (limit + 1) * CHUNK_PAGES;
        let (done, finished) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for i in 0..pages {
                assert!(read_page(&mut pump, i, None));
            }
            done.send(()).unwrap();
            pump
        });
        let waited = finished.recv_timeout(Duration::from_secs(20));
        go.send(()).unwrap();
        assert!(waited.is_ok(), "the reader waited for a stalled writer");
        let mut pump = reader.join().unwrap();
        assert!(pump.send());
        drop(pump);
        assert_eq!(writer.join().unwrap().unwrap(), pages as u64);
        assert_eq!(bytes.lock().unwrap().len(), pages * PAGE);
    }

    #[test]
    fn pages_arrive_in_order_and_short_ones_padded() {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let (go, wait) = mpsc::channel();
        go.send(()).unwrap();
        let sink = Stalled {
            go: wait,
            started: false,
            bytes: Arc::clone(&bytes),
        };
        let (mut pump, writer) = pump_into(sink, 1);
        let pages = CHUNK_PAGES * 3 + 5;
        for i in 0..pages {
            assert!(read_page(&mut pump, i, (i % 7 == 3).then_some(PAGE / 2)));
        }
        // A read that found nothing leaves no page.
        pump.next_page();
        assert!(pump.keep(false));
        assert!(pump.send());
        drop(pump);
        assert_eq!(writer.join().unwrap().unwrap(), pages as u64);
        let bytes = bytes.lock().unwrap();
        assert_eq!(bytes.len(), pages * PAGE);
        for (i, page) in bytes.chunks(PAGE).enumerate() {
            let full = if i % 7 == 3 { PAGE / 2 } else { PAGE };
            assert!(page[..full].iter().all(|&b| b == mark(i)), "page {i}");
            assert!(page[full..].iter().all(|&b| b == 0), "page {i}'s padding");
        }
    }

    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_stops_the_reader_and_names_the_spool() {
        let (mut pump, writer) = pump_into(Full, 1);
        let mut stopped = false;
        for i in 0..CHUNK_PAGES * 8 {
            if !read_page(&mut pump, i, None) {
                stopped = true;
                break;
            }
        }
        assert!(stopped, "the reader went on after the writer failed");
        drop(pump);
        let e = writer.join().unwrap().unwrap_err().to_string();
        assert!(e.contains("spool"), "{e}");
    }

    #[test]
    fn the_queue_is_shared_by_the_cpus() {
        assert_eq!(
            queue_chunks(2, 4096),
            QUEUE_BYTES / 2 / (CHUNK_PAGES * 4096)
        );
        assert_eq!(queue_chunks(100_000, 4096), 4);
        assert!(queue_chunks(0, 0) >= 4);
    }
}
