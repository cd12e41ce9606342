//! The recorder: one thread per traced CPU streaming that CPU's `trace_pipe_raw` pages
//! into a spool file, so that the buffer is emptied as fast as the kernel fills it.
//!
//! The first mistake of the ftrace latency hunt (`cat trace_pipe` losing events) is a
//! recorder starved by the workload it records: these threads run at nice -20 (where
//! permitted) and, when some online CPUs are not traced, only on those. Each thread waits in `poll(2)` with a short timeout and then reads
//! every full page there is; at the end the pipes are drained, partial pages included.

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
                    record_cpu(cpu, pipe, file, path, page_size, stream, &stop)
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

/// Reads every page available now; returns how many.
fn drain(pipe: &mut File, out: &mut BufWriter<File>, page: &mut [u8], path: &Path) -> Result<u64> {
    let mut pages = 0;
    loop {
        match pipe.read(page) {
            Ok(0) => return Ok(pages),
            Ok(n) => {
                // A short read is a partial page: pad it so pages stay page-aligned.
                page[n..].fill(0);
                out.write_all(page).map_err(|e| Error::io(path, e))?;
                pages += 1;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(pages),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
}

fn record_cpu(
    cpu: u32,
    mut pipe: File,
    file: File,
    path: PathBuf,
    page_size: usize,
    stream: bool,
    stop: &AtomicBool,
) -> Result<Spool> {
    let mut out = BufWriter::with_capacity(16 * page_size, file);
    let mut page = vec![0u8; page_size];
    let mut pages = 0;
    while !stop.load(Ordering::SeqCst) {
        if stream {
            let mut fd = libc::pollfd {
                fd: pipe.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut fd, 1, POLL_MS) };
            pages += drain(&mut pipe, &mut out, &mut page, &path)?;
        } else {
            std::thread::sleep(std::time::Duration::from_millis(POLL_MS as u64));
        }
    }
    pages += drain(&mut pipe, &mut out, &mut page, &path)?;
    out.flush().map_err(|e| Error::io(&path, e))?;
    Ok(Spool { cpu, path, pages })
}

/// What a recording did, per CPU: pages written and what the kernel says it lost.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecordedCpu {
    /// The CPU.
    pub cpu: u32,
    /// Ring-buffer pages written to the file.
    pub pages: u64,
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
