//! The HTML report's timeline compressed while the pass runs: [`PageSpill`] takes each
//! chunk of task slices or wake-ups the timeline's fold hands out
//! ([`jitterlab_analyze::analysis::timeline::Spill`]) and compresses it (in a
//! [`PageWork`] that `view` runs on a thread at the lowest priority) into the chunk's
//! two data blocks (docs/html.md, "Chunks"). The timeline then
//! holds a chunk or two per CPU, and the page's blocks are its only copy of the rest:
//! `view`'s memory stays about that of `analyze`, whatever the trace's length.

use std::any::Any;
use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use jitterlab_analyze::analysis::timeline::{SliceColumns, Spill, SpillTo, WakeColumns};

use super::html::{After, BlockText, Chunk, Rows};

/// Rows per chunk: 16,384 task slices hold 352 KiB, as many wake-ups 624 KiB, which
/// the compression reads from the CPU's cache. Measured on 14.2 M events (BENCHMARKS.md):
/// chunks of 65,536 rows took 9 % more CPU time and 12 MB more memory, of 8,192 made
/// the page 10 % larger.
pub const CHUNK_ROWS: usize = 1 << 14;

/// One chunk to compress: a CPU's, of a timeline of origin `origin`.
struct Job {
    cpu: u32,
    origin: u64,
    rows: JobRows,
}

enum JobRows {
    Slices(SliceColumns),
    Wakes(WakeColumns),
}

/// A CPU's chunks compressed, in order, and what they ended with.
struct CpuChunks {
    chunks: Vec<Chunk>,
    after: After,
}

/// The chunks compressed during a pass, by CPU, and where their text waits for the page.
#[derive(Default)]
pub(super) struct Spilled {
    cpus: BTreeMap<u32, CpuChunks>,
    store: Store,
}

/// Where the compressed chunks' text waits: an unnamed temporary file (deleted when
/// closed), so that the page cache holds it rather than the process; in memory when no
/// file can be made or written.
#[derive(Default)]
struct Store {
    file: Option<Arc<File>>,
    at: u64,
    /// No file to try again.
    failed: bool,
}

impl Store {
    fn put(&mut self, text: &mut BlockText) {
        let BlockText::Bytes(bytes) = text else {
            return;
        };
        if self.file.is_none() && !self.failed {
            match tempfile::tempfile() {
                Ok(f) => self.file = Some(Arc::new(f)),
                Err(_) => self.failed = true,
            }
        }
        let Some(file) = &self.file else {
            return;
        };
        if file.write_all_at(bytes, self.at).is_err() {
            // A full disk: this one and the rest stay in memory.
            self.file = None;
            self.failed = true;
            return;
        }
        let len = bytes.len();
        *text = BlockText::Stored {
            file: file.clone(),
            offset: self.at,
            len,
        };
        self.at += len as u64;
    }
}

impl Spilled {
    /// What `cpu`'s chunks ended with (a timeline of origin `origin`).
    pub(super) fn after(&self, cpu: u32, origin: u64) -> After {
        self.cpus
            .get(&cpu)
            .map_or(After::origin(origin), |c| c.after)
    }

    /// `cpu`'s chunks, in order.
    pub(super) fn take_cpu(&mut self, cpu: u32) -> Vec<Chunk> {
        self.cpus.remove(&cpu).map_or_else(Vec::new, |c| c.chunks)
    }

    fn add(&mut self, job: Job) -> io::Result<()> {
        let Job { cpu, origin, rows } = job;
        let c = self.cpus.entry(cpu).or_insert_with(|| CpuChunks {
            chunks: Vec::new(),
            after: After::origin(origin),
        });
        let (r, after) = match &rows {
            JobRows::Slices(s) => (
                Rows {
                    slices: Some(s),
                    ..Rows::default()
                },
                c.after.slices(s),
            ),
            JobRows::Wakes(w) => (
                Rows {
                    wakes: Some(w),
                    ..Rows::default()
                },
                c.after.wakes(w),
            ),
        };
        let mut chunk = Chunk::pack(&r, origin, c.after, false)?;
        self.store.put(&mut chunk.draw.text);
        self.store.put(&mut chunk.detail.text);
        c.chunks.push(chunk);
        c.after = after;
        Ok(())
    }
}

/// The HTML report's chunk encoder: give [`PageSpill::spill_to`] as the timeline's
/// [`jitterlab_analyze::analysis::timeline::TimelineOptions::spill`], and write the
/// report of that pass with [`super::Html`], which takes the chunks back.
///
/// Made [`PageSpill::with_worker`], it hands the chunks to a [`PageWork`] that the
/// caller runs on a thread of its own (render starts none), at the lowest priority
/// (`view` does: `jitterlab_trace::lowest_priority`): the .dat reader and the analysis
/// keep two CPUs about busy, and the compression takes the time they leave, or waits
/// for them to leave it (at most 4 chunks wait, then the fold does). At the
/// normal priority it took its share from the reader and the analysis, and `view` was no
/// faster than compressing on the analysis thread (BENCHMARKS.md). Made
/// [`PageSpill::with_rows`], or when its work is dropped unrun, it compresses each
/// chunk as it comes.
pub struct PageSpill {
    rows: usize,
    /// The work's queue, while it may run.
    send: Mutex<Option<SyncSender<Job>>>,
    /// What the work compressed, once it has run.
    done: Mutex<Option<Receiver<io::Result<Spilled>>>>,
    /// A chunk went to the work.
    sent: AtomicBool,
    /// The chunks compressed here, or why one failed; none once taken.
    spilled: Mutex<Option<io::Result<Spilled>>>,
}

/// The compression of a [`PageSpill`]'s chunks, for a thread of the caller's: it ends
/// when the spill's report is written, or when the spill is dropped.
pub struct PageWork {
    work: Receiver<Job>,
    done: SyncSender<io::Result<Spilled>>,
}

impl PageWork {
    /// Compresses every chunk as it comes.
    pub fn run(self) {
        let mut spilled = Spilled::default();
        let mut result = Ok(());
        for job in self.work {
            // After an error, the rest is only taken off the queue.
            if result.is_ok() {
                result = spilled.add(job);
            }
        }
        let _ = self.done.send(result.map(|()| spilled));
    }
}

/// Chunks handed to the work and not compressed yet, at most.
const IN_FLIGHT: usize = 4;

impl PageSpill {
    /// An encoder of `rows` rows a chunk ([`CHUNK_ROWS`] for a report), whose work the
    /// caller runs.
    pub fn with_worker(rows: usize) -> (PageSpill, PageWork) {
        let (send, work) = sync_channel::<Job>(IN_FLIGHT);
        let (done, result) = sync_channel(1);
        let spill = PageSpill {
            send: Mutex::new(Some(send)),
            done: Mutex::new(Some(result)),
            ..PageSpill::with_rows(rows)
        };
        (spill, PageWork { work, done })
    }

    /// An encoder of `rows` rows a chunk that compresses each as it comes.
    pub fn with_rows(rows: usize) -> PageSpill {
        PageSpill {
            rows: rows.max(1),
            send: Mutex::new(None),
            done: Mutex::new(None),
            sent: AtomicBool::new(false),
            spilled: Mutex::new(Some(Ok(Spilled::default()))),
        }
    }

    /// Itself as a timeline's spill.
    pub fn spill_to(self: &Arc<PageSpill>) -> SpillTo {
        SpillTo(self.clone())
    }

    fn add(&self, job: Job) {
        let send = self.send.lock().ok().and_then(|s| s.clone());
        let job = match send {
            Some(s) => match s.send(job) {
                Ok(()) => {
                    self.sent.store(true, Ordering::Relaxed);
                    return;
                }
                // The work was dropped unrun (no thread could run it), or stopped: this
                // chunk and the rest are compressed here (`take` tells the two apart).
                Err(back) => {
                    if let Ok(mut s) = self.send.lock() {
                        s.take();
                    }
                    back.0
                }
            },
            None => job,
        };
        let Ok(mut spilled) = self.spilled.lock() else {
            return;
        };
        if let Some(Ok(s)) = spilled.as_mut() {
            if let Err(e) = s.add(job) {
                *spilled = Some(Err(e));
            }
        }
    }

    /// The chunks compressed (once: a second call is an error, the chunks being in the
    /// page written first).
    pub(super) fn take(&self) -> io::Result<Spilled> {
        // The work ends once its queue is closed and emptied.
        if let Ok(mut s) = self.send.lock() {
            s.take();
        }
        let done = self.done.lock().ok().and_then(|mut d| d.take());
        let here = self.spilled.lock().ok().and_then(|mut s| s.take());
        let Some(here) = here else {
            return Err(io::Error::other(
                "the timeline's chunks went into a report written before",
            ));
        };
        match done.map(|d| d.recv()) {
            // The work ran: every chunk went to it (a chunk comes here only once it
            // stopped taking them, and it takes them to its queue's end).
            Some(Ok(result)) => result,
            // It took chunks and stopped without a word (a panic): they are lost.
            Some(Err(_)) if self.sent.load(Ordering::Relaxed) => Err(io::Error::other(
                "the page's compression stopped before the end of the timeline",
            )),
            // No work, or dropped unrun: the chunks were compressed here.
            None | Some(Err(_)) => here,
        }
    }
}

impl Spill for PageSpill {
    fn rows(&self) -> usize {
        self.rows
    }
    fn slices(&self, cpu: u32, origin: u64, rows: SliceColumns) {
        let rows = JobRows::Slices(rows);
        self.add(Job { cpu, origin, rows });
    }
    fn wakes(&self, cpu: u32, origin: u64, rows: WakeColumns) {
        let rows = JobRows::Wakes(rows);
        self.add(Job { cpu, origin, rows });
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
