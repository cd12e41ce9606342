//! One stream file: its packets (packet header with magic, uuid and stream id; packet
//! context with the begin timestamp, content and packet sizes, discarded-event count and
//! CPU), and the events in each (event header, stream event context, event context,
//! payload), decoded one at a time into the reader's own buffers.

use super::decode::{Cursor, Decoder, Fault, Leaf};
use super::{Compiled, EventInfo, StreamInfo};
use crate::{Error, ErrorKind, Location, Result};

/// CPU numbers at or above this are refused (per-CPU tables are sized by them).
pub(crate) const MAX_CPUS: u32 = 65536;

/// The magic number of a CTF stream packet.
pub(crate) const PACKET_MAGIC: u64 = 0xC1FC_1FC1;

/// What [`StreamReader::next`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Item {
    /// An event, decoded in the reader (see [`StreamReader::event`]).
    Event,
    /// Events discarded before the current packet (its `events_discarded` went up).
    Lost(u64),
}

/// Reads the packets and events of one stream file in order.
pub(crate) struct StreamReader<'t> {
    pub name: &'t str,
    data: &'t [u8],
    c: &'t Compiled,
    /// The registers, clock and the last event's values.
    pub dec: Decoder,
    /// Byte offset of the next packet.
    next_packet: usize,
    /// The current packet: where its next event starts.
    cur: Option<Cursor<'t>>,
    /// Its stream class.
    stream: usize,
    /// The packet's CPU (`cpu_id`; else the file's own number).
    pub cpu: u32,
    default_cpu: u32,
    /// The packet's begin, ns.
    pub packet_ns: u64,
    discarded: Option<u64>,
    lost: u64,
    /// The last event: its class, its time (ns and clock cycles) and where it starts.
    pub event: Option<&'t EventInfo>,
    pub ts: u64,
    pub cycles: u64,
    pub at: u64,
    /// Where each top-level field of the last event's scopes starts among the leaves.
    pub fields: Vec<u32>,
    pub stream_ctx: Vec<u32>,
    pub event_ctx: Vec<u32>,
    header: Vec<u32>,
    /// Undecodable packets skipped (lenient).
    pub skipped: u64,
    lenient: bool,
}

impl<'t> StreamReader<'t> {
    pub(crate) fn new(
        name: &'t str,
        data: &'t [u8],
        c: &'t Compiled,
        default_cpu: u32,
        lenient: bool,
    ) -> StreamReader<'t> {
        StreamReader {
            name,
            data,
            c,
            dec: Decoder::new(c.meta.regs as usize),
            next_packet: 0,
            cur: None,
            stream: 0,
            cpu: default_cpu.min(MAX_CPUS - 1),
            default_cpu,
            packet_ns: 0,
            discarded: None,
            lost: 0,
            event: None,
            ts: 0,
            cycles: 0,
            at: 0,
            fields: Vec::new(),
            stream_ctx: Vec::new(),
            event_ctx: Vec::new(),
            header: Vec::new(),
            skipped: 0,
            lenient,
        }
    }

    /// The stream class of the current packet.
    pub(crate) fn stream(&self) -> &'t StreamInfo {
        &self.c.streams[self.stream]
    }

    fn error(&self, kind: ErrorKind, bit: u64, msg: String) -> Error {
        Error::new(kind, self.name, Location::Offset(bit / 8), msg)
    }

    fn fault(&self, f: Fault, packet: u64, end: u64) -> Error {
        match f {
            Fault::Short { at, what } => self.error(
                ErrorKind::Truncated,
                at,
                format!(
                    "expected {what} in the packet at byte {}, found the end of its content \
                     (byte {}): the packet is cut short or its sizes are wrong",
                    packet / 8,
                    end.div_ceil(8)
                ),
            ),
            Fault::Bad { at, msg } => self.error(
                ErrorKind::Corrupt,
                at,
                format!("in the packet at byte {}: {msg}", packet / 8),
            ),
            Fault::Limit { at, msg } => self.error(ErrorKind::Limit, at, msg),
        }
    }

    /// The next event or loss; `want` says whether to keep an event's payload (else it is
    /// skipped, fast when its size is fixed).
    pub(crate) fn next(
        &mut self,
        want: &mut dyn FnMut(&EventInfo, u32) -> bool,
    ) -> Result<Option<Item>> {
        loop {
            if self.lost > 0 {
                let n = std::mem::take(&mut self.lost);
                self.ts = self.packet_ns;
                return Ok(Some(Item::Lost(n)));
            }
            if let Some(cur) = self.cur {
                if cur.bit < cur.end {
                    match self.event(cur, want) {
                        Ok(()) => return Ok(Some(Item::Event)),
                        Err(_) if self.lenient => {
                            self.skipped += 1;
                            self.cur = None;
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                }
                self.cur = None;
            }
            if self.next_packet >= self.data.len() {
                return Ok(None);
            }
            match self.packet() {
                Ok(()) => {}
                Err(_) if self.lenient => {
                    // The packet's own sizes cannot be trusted: the rest of the file goes.
                    self.skipped += 1;
                    self.next_packet = self.data.len();
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads the headers of the packet at `next_packet`.
    fn packet(&mut self) -> Result<()> {
        let c = self.c;
        let base = self.next_packet as u64 * 8;
        let file_end = self.data.len() as u64 * 8;
        let mut cur = Cursor {
            data: self.data,
            bit: base,
            base,
            end: file_end,
        };
        self.dec.clear();
        let mut tops = std::mem::take(&mut self.header);
        let mut stream = None;
        if let Some(ph) = &c.meta.packet_header {
            self.dec
                .root(ph, &mut cur, &mut tops)
                .map_err(|f| self.fault(f, base, file_end))?;
            if let Some(magic) = c.header.magic.and_then(|i| self.uint(&tops, i)) {
                if magic != PACKET_MAGIC {
                    return Err(self.error(
                        ErrorKind::Corrupt,
                        base,
                        format!(
                            "expected a CTF packet (magic {PACKET_MAGIC:#x}), found {magic:#x}"
                        ),
                    ));
                }
            }
            if let (Some(want), Some(i)) = (c.meta.uuid, c.header.uuid) {
                let start = tops.get(i).copied().unwrap_or(0) as usize;
                let got: Vec<u8> = (0..16)
                    .map(|k| match self.dec.leaves.get(start + k) {
                        Some(Leaf::Uint(v)) => *v as u8,
                        Some(Leaf::Int(v)) => *v as u8,
                        _ => 0,
                    })
                    .collect();
                if got != want {
                    return Err(self.error(
                        ErrorKind::Corrupt,
                        base,
                        "expected the trace's UUID in the packet header (as the metadata gives it), \
                         found another: is this file from another trace?"
                            .into(),
                    ));
                }
            }
            stream = c.header.stream_id.and_then(|i| self.uint(&tops, i));
        }
        self.stream = match stream {
            Some(id) => c.streams.iter().position(|s| s.id == id).ok_or_else(|| {
                self.error(
                    ErrorKind::Corrupt,
                    base,
                    format!(
                        "the packet header names stream {id}, which the metadata does not declare"
                    ),
                )
            })?,
            None if c.streams.len() == 1 => 0,
            None => return Err(self.error(
                ErrorKind::Corrupt,
                base,
                "expected a stream_id in the packet header: the metadata declares several streams"
                    .into(),
            )),
        };
        let s = &c.streams[self.stream];
        let (mut content, mut packet) = (None, None);
        let mut discarded = None;
        if let Some(pc) = &s.packet_context {
            self.dec
                .root(pc, &mut cur, &mut tops)
                .map_err(|f| self.fault(f, base, file_end))?;
            content = s.content_size.and_then(|i| self.uint(&tops, i));
            packet = s.packet_size.and_then(|i| self.uint(&tops, i));
            if let Some(t) = s.timestamp_begin.and_then(|i| self.uint(&tops, i)) {
                self.dec.clock = t;
            }
            discarded = s
                .events_discarded
                .and_then(|(i, size)| Some((self.uint(&tops, i)?, size)));
            self.cpu = match s.cpu_id.and_then(|i| self.uint(&tops, i)) {
                Some(cpu) if cpu < u64::from(MAX_CPUS) => cpu as u32,
                Some(cpu) => {
                    return Err(self.error(
                        ErrorKind::Limit,
                        base,
                        format!(
                            "expected a CPU number below {MAX_CPUS} in the packet context, \
                             found cpu_id {cpu}"
                        ),
                    ))
                }
                None => self.default_cpu.min(MAX_CPUS - 1),
            };
        }
        self.header = tops;
        let left = file_end - base;
        let packet = packet.or(content).unwrap_or(left);
        let content = content.unwrap_or(packet);
        if content > packet || packet % 8 != 0 || packet == 0 {
            return Err(self.error(
                ErrorKind::Corrupt,
                base,
                format!(
                    "expected a packet's content size <= its packet size (bits, a multiple of 8 \
                     above 0), found content_size {content} and packet_size {packet}"
                ),
            ));
        }
        if packet > left {
            return Err(self.error(
                ErrorKind::Truncated,
                base,
                format!(
                    "expected a packet of {} bytes here (its packet_size), found {} bytes left in \
                     the file: the file is cut short",
                    packet / 8,
                    left / 8
                ),
            ));
        }
        if content < cur.bit - base {
            return Err(self.error(
                ErrorKind::Corrupt,
                base,
                format!(
                    "expected a packet's content_size to hold its headers ({} bits), found {content}",
                    cur.bit - base
                ),
            ));
        }
        cur.end = base + content;
        self.next_packet += (packet / 8) as usize;
        self.cur = Some(cur);
        self.packet_ns = self.c.ns(self.stream, self.dec.clock);
        if let Some((n, size)) = discarded {
            let prev = self.discarded.unwrap_or(0);
            let mask = if size >= 64 {
                u64::MAX
            } else {
                (1u64 << size) - 1
            };
            self.lost = n.wrapping_sub(prev) & mask;
            self.discarded = Some(n);
        }
        Ok(())
    }

    fn uint(&self, tops: &[u32], i: usize) -> Option<u64> {
        match self.dec.leaves.get(*tops.get(i)? as usize)? {
            Leaf::Uint(v) => Some(*v),
            Leaf::Int(v) => Some(*v as u64),
            _ => None,
        }
    }

    /// Decodes the event at `cur`.
    fn event(
        &mut self,
        mut cur: Cursor<'t>,
        want: &mut dyn FnMut(&EventInfo, u32) -> bool,
    ) -> Result<()> {
        let s = &self.c.streams[self.stream];
        let start = cur.bit;
        self.at = start;
        self.dec.clear();
        self.dec.id = None;
        let (packet, end) = (cur.base, cur.end);
        let mut tops = std::mem::take(&mut self.header);
        if let Some(h) = &s.event_header {
            self.dec
                .root(h, &mut cur, &mut tops)
                .map_err(|f| self.fault(f, packet, end))?;
        }
        self.header = tops;
        let id = self.dec.id.unwrap_or(0);
        let ev = s.event(id).ok_or_else(|| {
            self.error(
                ErrorKind::Corrupt,
                start,
                format!(
                    "expected an event id that stream {} of the metadata declares, found id {id}",
                    s.id
                ),
            )
        })?;
        if let Some(t) = &s.event_context {
            self.dec
                .root(t, &mut cur, &mut self.stream_ctx)
                .map_err(|f| self.fault(f, packet, end))?;
        } else {
            self.stream_ctx.clear();
        }
        if let Some(t) = &ev.class.context {
            self.dec
                .root(t, &mut cur, &mut self.event_ctx)
                .map_err(|f| self.fault(f, packet, end))?;
        } else {
            self.event_ctx.clear();
        }
        self.fields.clear();
        if let Some(t) = &ev.class.fields {
            let r = if want(ev, self.cpu) {
                self.dec.root(t, &mut cur, &mut self.fields)
            } else {
                self.dec.skip(t, ev.fixed_bits, &mut cur)
            };
            r.map_err(|f| self.fault(f, packet, end))?;
        }
        if cur.bit == start {
            return Err(self.error(
                ErrorKind::Corrupt,
                start,
                "an event of zero bits (its header and fields are empty): the packet cannot be read past it".into(),
            ));
        }
        self.cycles = self.dec.clock;
        self.ts = self.c.ns(self.stream, self.cycles);
        self.event = Some(ev);
        self.cur = Some(cur);
        Ok(())
    }
}
