//! Kernel trace formats and the event model.
//!
//! This crate reads and writes the files that tracing tools produce and turns them into one
//! time-ordered stream of [`Event`]s:
//!
//! - trace-cmd `.dat` files, version 6 and version 7 (zstd and zlib compressed sections);
//! - raw tracefs ring-buffer pages, decoded with the tracefs `format` files;
//! - the kernel's ftrace text (the `trace` and `trace_pipe` files, and `trace-cmd report`);
//! - function_graph text;
//! - LTTng kernel traces, CTF 1.8 (a folder of stream files and their TSDL metadata):
//!   [`ctf`].
//!
//! A .dat or text file compressed whole with zstd, gzip or xz is opened as it is
//! ([`Trace::open`]: a .dat decompressed into memory, a text as it is read).
//!
//! It does **not** touch the host: recording (tracefs writes, `trace_pipe_raw`) lives in the
//! host crate, and analyses (scheduler state, latencies) live in the analyze crate. Every
//! reader works on bytes it is given and reports bad input as an [`Error`] that names the
//! source, the byte offset or line, and what was expected, with an [`ErrorKind`] for code
//! to match on; it never panics.
//!
//! Every reader implements [`EventSource`]: `next_event()` returns the next event in
//! timestamp order (per-CPU streams merged), `Ok(None)` at the end; [`read_ahead`] reads
//! one in a second thread while its consumer works, and [`write_behind`] writes a
//! producer's output in a second thread while it goes on.
//!
//! [`printfmt`] evaluates each event's own `print fmt:` on a .dat's records as
//! `trace-cmd report -N` prints them (the analyses never pay for it: they use the typed
//! events); [`lines`] gathers what `report`'s lines show besides the events.
#![deny(missing_docs)]

mod ahead;
mod behind;
mod error;
mod event;

pub mod ctf;
pub mod dat;
pub mod decode;
pub mod format;
pub mod hash;
pub mod lines;
mod open;
pub mod output;
pub mod printfmt;
pub mod ringbuf;
pub mod stats;
pub mod text;

use std::ops::ControlFlow;

pub use ahead::{lowest_priority, read_ahead};
pub use behind::write_behind;
pub use error::{Error, ErrorKind, Location, Result};
pub use event::{
    Comm, Event, EventJson, EventKind, Flags, Sym, TaskState, Text, Value, Wakeup, SOFTIRQ_NAMES,
};
pub use open::Trace;

/// Facts about a trace as a whole, known once its headers are read.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TraceMeta {
    /// The file format, for people: "trace-cmd .dat v7 (zstd)", "ftrace text", ...
    pub format: String,
    /// Number of CPUs the trace was recorded on, when the source says.
    pub cpus: Option<u32>,
}

/// Counters a reader keeps while it reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReadStats {
    /// Events the kernel reported lost (ring-buffer overruns), per CPU; index = CPU.
    /// `None` in a slot means "some were lost, the count is unknown".
    pub lost: Vec<Option<u64>>,
    /// Records or lines skipped because they could not be decoded (only in lenient mode).
    pub skipped: u64,
    /// The format does not record where events were lost (`perf script` text): an
    /// empty `lost` then means unknown, not none.
    pub lost_unrecorded: bool,
    /// The buffers of `trace-cmd report` text of several buffers, which names the buffer
    /// before each of its lines (`jlab_small: CPU:0 [734 EVENTS DROPPED]`), each counted on
    /// its own: the top buffer (named `""`, the lines without a name) first, then the
    /// others in the order the text first names them. Empty when the text names no
    /// buffer (and for every other format).
    pub buffers: Vec<stats::BufferStat>,
}

/// A source of events in timestamp order.
///
/// Readers are not `Iterator`s so that an event may borrow from the reader in the future
/// and so that errors carry position (as linux-perf-data does).
pub trait EventSource {
    /// The next event in timestamp order; `Ok(None)` at the end of the trace.
    fn next_event(&mut self) -> Result<Option<Event>>;
    /// Pushes the next events onto `out` until it holds `max`; `false` when the trace
    /// ended first. The events before an error are pushed, then the error is returned.
    ///
    /// The same events as [`EventSource::next_event`] gives; a .dat reader builds each
    /// in `out` (what [`read_ahead`]'s reading thread fills its batches with).
    fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<bool> {
        while out.len() < max {
            match self.next_event()? {
                Some(ev) => out.push(ev),
                None => return Ok(false),
            }
        }
        Ok(true)
    }
    /// Lends `each` the events in timestamp order until it breaks (the events after that
    /// one stay to be read) or the trace ends; the error at which the events stopped.
    ///
    /// The same events as [`EventSource::next_event`] gives, where they lie: a source
    /// that holds them in batches ([`read_ahead`]'s) lends each in place. Moving each
    /// out instead, through a returned `Result<Option<Event>>`, stalled the pass: the
    /// caller read the event back in other widths than the callee had written it.
    fn each_event(&mut self, each: &mut dyn FnMut(&Event) -> ControlFlow<()>) -> Result<()> {
        while let Some(ev) = self.next_event()? {
            if each(&ev).is_break() {
                break;
            }
        }
        Ok(())
    }
    /// Facts about the whole trace.
    fn meta(&self) -> &TraceMeta;
    /// Lost and skipped counts so far.
    fn stats(&self) -> &ReadStats;
    /// Where the last event returned came from, when the reader can say (a .dat's): its
    /// buffer and its record. `None` from the text readers.
    fn origin(&self) -> Option<Origin<'_>> {
        None
    }
}

/// Where an event of a .dat came from ([`EventSource::origin`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin<'a> {
    /// The index of its buffer in the file ([`dat::DatFile::buffers`]; 0: the top one).
    pub buffer: usize,
    /// The record's bytes (its event id first), when the reader keeps them
    /// ([`dat::DatEvents::keep_records`]); empty otherwise and for a lost-event marker.
    pub record: &'a [u8],
}
