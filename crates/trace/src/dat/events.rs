//! The time-ordered event stream of one buffer (or several): a k-way merge of the
//! per-CPU readers, decoding only the record it returns.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::cursor::{error_at, Origin};
use super::pages::{ChunkPool, CpuReader, Item};
use super::DatFile;
use crate::decode::Decoder;
use crate::{Error, ErrorKind, Event, EventKind, EventSource, Flags, ReadStats, Result, TraceMeta};

/// The events of one buffer of a [`DatFile`] (or of several, merged), in timestamp order
/// (ties: the buffer listed first, then the lower CPU, as `trace-cmd report` orders
/// them).
///
/// Lost events (the missed-events flag of a page) become [`EventKind::Lost`] events, at
/// the timestamp and with the pid of the first record after the loss (-1 when none), and
/// are added to [`ReadStats::lost`].
pub struct DatEvents<'f> {
    name: &'f str,
    readers: Vec<CpuReader<'f>>,
    /// The buffer of each reader.
    reader_buffer: Vec<usize>,
    /// Keep a copy of each record returned ([`DatEvents::keep_records`]).
    keep: bool,
    /// The buffer of the last event returned and, when kept, its record's bytes.
    last_buffer: usize,
    last_record: Vec<u8>,
    /// The decompressor and the chunk memory the readers share.
    pool: ChunkPool,
    /// The next item of each reader, once peeked.
    pending: Vec<Option<Item>>,
    /// The event [`EventSource::next_event`] returns, built here (its memory kept).
    one: Vec<Event>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    decoder: Decoder,
    ts_offset: i64,
    lenient: bool,
    meta: TraceMeta,
    stats: ReadStats,
    started: bool,
}

impl<'f> DatEvents<'f> {
    pub(crate) fn new(dat: &'f DatFile<'_>, buffers: &[usize]) -> Result<DatEvents<'f>> {
        let lenient = dat.options.lenient;
        let mut readers = Vec::new();
        let mut reader_buffer = Vec::new();
        let mut skipped = 0;
        let mut cpus = dat.info.cpus as usize;
        for &buffer in buffers {
            let b = dat.buffer(buffer)?;
            for cpu in &b.cpus {
                let segs = match dat.segments(b, cpu, usize::MAX) {
                    Ok(s) => s,
                    Err(_) if lenient => {
                        skipped += 1;
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                for seg in segs {
                    readers.push(CpuReader::new(
                        cpu.cpu,
                        dat.source(b, seg),
                        dat.layout_for(b),
                        lenient,
                    ));
                    reader_buffer.push(buffer);
                }
            }
            cpus = cpus.max(b.cpus.iter().map(|c| c.cpu as usize + 1).max().unwrap_or(0));
        }
        let stats = ReadStats {
            lost: vec![Some(0); cpus],
            skipped: skipped + dat.format_errors,
            lost_unrecorded: false,
            buffers: Vec::new(),
        };
        Ok(DatEvents {
            name: &dat.name,
            pending: readers.iter().map(|_| None).collect(),
            one: Vec::with_capacity(1),
            readers,
            reader_buffer,
            keep: false,
            last_buffer: buffers.first().copied().unwrap_or(0),
            last_record: Vec::new(),
            pool: ChunkPool::new(dat.info.compression),
            heap: BinaryHeap::new(),
            decoder: dat.decoder(),
            ts_offset: dat.info.ts_offset,
            lenient,
            meta: dat.meta.clone(),
            stats,
            started: false,
        })
    }

    /// Reads the next item of reader `i` into `pending`; returns its timestamp, `None`
    /// when the reader is done.
    fn read(&mut self, i: usize) -> Result<Option<u64>> {
        let Some(r) = self.readers.get_mut(i) else {
            return Ok(None);
        };
        let before = r.skipped;
        let slot = &mut self.pending[i];
        let read = r.next_into(&mut self.pool, slot);
        self.stats.skipped += r.skipped - before;
        read?;
        Ok(match slot {
            Some(Item::Record { ts, .. } | Item::Lost { ts, .. }) => Some(*ts),
            None => None,
        })
    }

    /// Peeks the next item of reader `i` into `pending` and the heap.
    fn prime(&mut self, i: usize) -> Result<()> {
        if let Some(ts) = self.read(i)? {
            self.heap.push(Reverse((ts, i)));
        }
        Ok(())
    }

    /// Moves reader `i`, whose item was the heap's top and is taken, to its next item:
    /// the top is replaced in place (one sift down, where a pop and a push sift twice:
    /// 150 M of 6,404 M instructions of an `analyze` of a 2.9 M-event trace), or removed
    /// when the reader is done.
    fn advance(&mut self, i: usize) -> Result<()> {
        match self.read(i) {
            Ok(Some(ts)) => {
                if let Some(mut top) = self.heap.peek_mut() {
                    *top = Reverse((ts, i));
                }
                Ok(())
            }
            Ok(None) => {
                self.heap.pop();
                Ok(())
            }
            Err(e) => {
                self.heap.pop();
                Err(e)
            }
        }
    }

    fn shift(&self, ts: u64) -> u64 {
        ts.wrapping_add_signed(self.ts_offset)
    }

    /// From now on, keep a copy of each event's record, for [`EventSource::origin`] (what
    /// `report` prints from: a record's print format is evaluated on its bytes). The
    /// analyses do not pay for it: they never ask.
    pub fn keep_records(&mut self) {
        self.keep = true;
    }
}

impl DatEvents<'_> {
    /// Pushes the next event onto `out`; `false` at the end. In lenient mode a record
    /// the decoder rejects is counted and skipped, and the next one pushed.
    fn step(&mut self, out: &mut Vec<Event>) -> Result<bool> {
        if !self.started {
            self.started = true;
            for i in 0..self.readers.len() {
                self.prime(i)?;
            }
        }
        loop {
            // The top stays until `advance` replaces it with the reader's next item.
            let Some(&Reverse((_, i))) = self.heap.peek() else {
                return Ok(false);
            };
            let Some(item) = self.pending.get_mut(i).and_then(Option::take) else {
                self.heap.pop();
                continue;
            };
            let cpu = self.readers[i].cpu;
            self.last_buffer = self.reader_buffer.get(i).copied().unwrap_or(0);
            self.last_record.clear();
            match item {
                Item::Lost { ts, count } => {
                    if let Some(slot) = self.stats.lost.get_mut(cpu as usize) {
                        *slot = match (*slot, count) {
                            (Some(a), Some(b)) => Some(a.saturating_add(b)),
                            _ => None,
                        };
                    }
                    // The task of the record after the loss, as the text readers give it.
                    self.advance(i)?;
                    let pid = match &self.pending[i] {
                        Some(Item::Record { data, .. }) => {
                            let bytes = self.readers[i].backing().get(data.clone()).unwrap_or(&[]);
                            self.decoder.pid(bytes).unwrap_or(-1)
                        }
                        _ => -1,
                    };
                    out.push(Event {
                        ts: self.shift(ts),
                        cpu,
                        pid,
                        flags: Flags::default(),
                        preempt_count: 0,
                        kind: EventKind::Lost { count },
                    });
                    return Ok(true);
                }
                Item::Record {
                    ts,
                    data,
                    origin,
                    at,
                } => {
                    let bytes = self.readers[i].backing().get(data).unwrap_or(&[]);
                    if self.keep {
                        self.last_record.extend_from_slice(bytes);
                    }
                    let ts = self.shift(ts);
                    let decoded = match self.decoder.decode_into(cpu, ts, bytes, out) {
                        Ok(()) => true,
                        Err(_) if self.lenient => {
                            self.stats.skipped += 1;
                            false
                        }
                        Err(msg) => return Err(record_error(self.name, origin, at, cpu, &msg)),
                    };
                    self.advance(i)?;
                    if decoded {
                        return Ok(true);
                    }
                }
            }
        }
    }
}

impl EventSource for DatEvents<'_> {
    fn next_event(&mut self) -> Result<Option<Event>> {
        let mut one = std::mem::take(&mut self.one);
        let r = self.step(&mut one);
        let ev = one.pop();
        self.one = one;
        r.map(|_| ev)
    }

    fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<bool> {
        while out.len() < max {
            if !self.step(out)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn meta(&self) -> &TraceMeta {
        &self.meta
    }

    fn stats(&self) -> &ReadStats {
        &self.stats
    }

    fn origin(&self) -> Option<crate::Origin<'_>> {
        Some(crate::Origin {
            buffer: self.last_buffer,
            record: &self.last_record,
        })
    }
}

/// A record the decoder rejects: its event id has no format in the file, or it is shorter
/// than its format, so the file contradicts itself.
fn record_error(name: &str, origin: Origin, at: usize, cpu: u32, msg: &str) -> Error {
    error_at(
        ErrorKind::Corrupt,
        name,
        origin,
        at,
        format!("CPU {cpu}: in the record here: {msg}"),
    )
}
