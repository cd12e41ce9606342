//! The HTML report: one self-contained file with the viewer (`web/`) and the model inside.
//!
//! The file is laid out as docs/html.md says: the CSS, a `jl-meta` JSON element (the
//! model's JSON envelope, exactly what `--json` writes, and the timeline's small tables),
//! two `jl-data-K` elements per CPU with that CPU's timeline columns (byte-planar in as
//! few planes as the values need, raw deflate, two bytes per UTF-16 unit of the page,
//! which is UTF-16LE when it has blocks: htmltext.rs): what the timeline draws, which
//! the page inflates before its first paint, and the details, and the viewer's
//! JavaScript modules concatenated into one module script. A Content-Security-Policy
//! forbids every network request.
//!
//! The exporter encodes (deltas, byte planes, compression); every number it encodes comes
//! from the model. The zoom-out summaries the viewer draws are built in the page.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use jitterlab_analyze::analysis::timeline::{
    IrqColumns, LeftOut, OverviewColumns, SliceColumns, SoftirqColumns, Timeline, TimelineBlind,
    TimelineIrq, TimelineLost, TimelineMarker, TimelineTask, WakeColumns,
};
use jitterlab_analyze::AnalyzeReport;
use jitterlab_experiment::ExperimentReport;
use jitterlab_latency::LatencyReport;
use rayon::prelude::*;
use serde::Serialize;
use zlib_rs::{compress_bound, Deflate, DeflateConfig, DeflateFlush, Strategy};

use super::htmltext::{html_block_text, utf16le};
use super::json::Envelope;
use super::spill::{PageSpill, Spilled};
use super::{escape_markup, Exporter};
use crate::Render;

/// The viewer's modules, in the order they are concatenated, and its style sheet.
mod web {
    include!(concat!(env!("OUT_DIR"), "/web.rs"));
}

/// The format of the embedded data; the viewer refuses others.
pub const HTML_FORMAT: u32 = 3;

/// The HTML report format.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Html {
    /// The page's title (usually the input's file name).
    pub title: String,
    /// Thread rows the timeline opens with: search queries (`iperf3`, `tid:42`), each
    /// pinning the tasks it finds (`view --pin`).
    pub pins: Vec<String>,
}

impl Html {
    /// A report titled `title`.
    pub fn titled(title: impl Into<String>) -> Html {
        Html {
            title: title.into(),
            pins: Vec::new(),
        }
    }
}

/// A model the HTML report shows: its JSON envelope and, for a trace, its timeline.
pub trait HtmlModel {
    /// Writes the model's JSON envelope (what `--json` writes).
    fn envelope(&self, out: &mut Vec<u8>) -> serde_json::Result<()>;
    /// The timeline, for a trace.
    fn timeline(&self) -> Option<&Timeline> {
        None
    }
    /// A compare page's titles, A's then B's, and B's model ([`Compared`]).
    fn compared(&self) -> Option<(&str, &str, &dyn HtmlModel)> {
        None
    }
}

/// Two analyses on one page (`jitterlab view A B`): A's report and timeline as a
/// single trace's page has them, B's in the meta's `compare` (docs/html.md), its
/// blocks numbered after A's. The viewer shows both timelines on one time axis and
/// every table as A, B and B/A.
pub struct Compared<'a> {
    /// A, the reference.
    pub a: &'a dyn HtmlModel,
    /// A's title (its file name).
    pub a_title: String,
    /// B, compared with A.
    pub b: &'a dyn HtmlModel,
    /// B's title.
    pub b_title: String,
}

impl HtmlModel for Compared<'_> {
    fn envelope(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        self.a.envelope(out)
    }
    fn timeline(&self) -> Option<&Timeline> {
        self.a.timeline()
    }
    fn compared(&self) -> Option<(&str, &str, &dyn HtmlModel)> {
        Some((&self.a_title, &self.b_title, self.b))
    }
}

fn envelope_of<M: Render>(m: &M, out: &mut Vec<u8>) -> serde_json::Result<()> {
    serde_json::to_writer(
        out,
        &Envelope {
            schema: M::SCHEMA,
            version: M::VERSION,
            data: m,
        },
    )
}

impl HtmlModel for AnalyzeReport {
    fn envelope(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        envelope_of(self, out)
    }
    fn timeline(&self) -> Option<&Timeline> {
        self.timeline.as_ref()
    }
}

impl HtmlModel for LatencyReport {
    fn envelope(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        envelope_of(self, out)
    }
}

/// `jitterlab experiment --html FILE`: the experiment page (web/experiment.js) draws the
/// envelope; a traced run's explanation links to its trace's report, `TRACE.html`
/// beside the trace (relative to the experiment's directory).
impl HtmlModel for ExperimentReport {
    fn envelope(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        envelope_of(self, out)
    }
}

/// `jitterlab audit --html FILE`: the audit page (web/audit.js) draws the envelope.
impl HtmlModel for jitterlab_audit::AuditReport {
    fn envelope(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        envelope_of(self, out)
    }
}

/// A result saved by `--json` (`jitterlab view run.json`): its envelope as it was read.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedResult {
    /// The whole envelope (`schema`, `version`, `data`).
    pub envelope: serde_json::Value,
}

impl HtmlModel for SavedResult {
    fn envelope(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        serde_json::to_writer(out, &self.envelope)
    }
}

/// Where a column is (docs/html.md, "Columns").
#[derive(Clone, Copy, Debug, Serialize)]
struct ColumnRef {
    #[serde(rename = "type")]
    kind: &'static str,
    /// The data block (`jl-data-K`) holding it.
    block: usize,
    offset: usize,
    count: usize,
    /// `u32`, `u32x`: the byte planes stored (the lowest ones; 1 to 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    planes: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    big: Option<usize>,
    /// `end`: a start column holds each start minus the previous interval's end.
    #[serde(skip_serializing_if = "Option::is_none")]
    delta: Option<&'static str>,
}

/// Where a column's values come from: the model's columns, read when a piece of the
/// block is written (the block itself is never held uncompressed).
#[derive(Clone, Copy)]
enum Source<'a> {
    U8(&'a [u8]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    /// `v[i] - v[i - 1]` (`v[0] - first`); the values are in time order.
    Deltas(&'a [u64], u64),
    /// `v[i] - v[i - 1]` (`v[0] - first`), of indices in order.
    Deltas32(&'a [u32], u32),
    /// Each start minus the previous interval's end (the first: minus `first`), where no
    /// interval starts before the previous one ends ([`ends_before_starts`]).
    Gaps(&'a [u64], &'a [u64], u64),
}

impl Source<'_> {
    fn len(&self) -> usize {
        match *self {
            Source::U8(v) => v.len(),
            Source::U32(v) | Source::Deltas32(v, _) => v.len(),
            Source::U64(v) | Source::Deltas(v, _) | Source::Gaps(v, _, _) => v.len(),
        }
    }

    /// `f` of each value into `out`, one byte each (the plain columns in loops the
    /// compiler vectorizes).
    #[inline(always)]
    fn bytes_into(&self, out: &mut [u8], f: impl Fn(u64) -> u8) {
        match *self {
            Source::U8(v) => out
                .iter_mut()
                .zip(v)
                .for_each(|(o, &x)| *o = f(u64::from(x))),
            Source::U32(v) => out
                .iter_mut()
                .zip(v)
                .for_each(|(o, &x)| *o = f(u64::from(x))),
            Source::U64(v) => out.iter_mut().zip(v).for_each(|(o, &x)| *o = f(x)),
            _ => {
                let mut o = out.iter_mut();
                self.each(|x| {
                    if let Some(slot) = o.next() {
                        *slot = f(x);
                    }
                });
            }
        }
    }

    /// Calls `f` with each value, in order.
    #[inline(always)]
    fn each(&self, mut f: impl FnMut(u64)) {
        match *self {
            Source::U8(v) => v.iter().for_each(|&x| f(u64::from(x))),
            Source::U32(v) => v.iter().for_each(|&x| f(u64::from(x))),
            Source::U64(v) => v.iter().for_each(|&x| f(x)),
            Source::Deltas(v, first) => {
                let mut prev = first;
                for &x in v {
                    f(x.saturating_sub(prev));
                    prev = x;
                }
            }
            Source::Deltas32(v, first) => {
                let mut prev = first;
                for &x in v {
                    f(u64::from(x.saturating_sub(prev)));
                    prev = x;
                }
            }
            Source::Gaps(start, dur, first) => {
                let mut prev_end = first;
                for (&s, &d) in start.iter().zip(dur) {
                    f(s.saturating_sub(prev_end));
                    prev_end = s + d;
                }
            }
        }
    }
}

/// What a segment of a block holds of its column.
#[derive(Clone, Copy)]
enum Part {
    /// Each value as a byte (a `u8` column).
    Bytes,
    /// Byte `shift / 8` of each value, values over `cap` written as `cap`.
    Plane { shift: u32, cap: u64 },
    /// The values at or over `escape`, as f64s (a `u32x` column's escaped values).
    Big { escape: u64 },
}

/// A stretch of a block: one plane of a column, a `u8` column, or a column's escaped
/// values; the block is compressed in pieces of whole segments ([`pieces`]).
#[derive(Clone, Copy)]
struct Segment<'a> {
    source: Source<'a>,
    part: Part,
    len: usize,
}

impl Segment<'_> {
    /// Appends the segment's bytes to `out`.
    fn write(&self, out: &mut Vec<u8>) {
        let base = out.len();
        out.resize(base + self.len, 0);
        let out = &mut out[base..];
        match self.part {
            Part::Bytes => self.source.bytes_into(out, |x| x as u8),
            Part::Plane { shift, cap } => {
                self.source.bytes_into(out, |x| (x.min(cap) >> shift) as u8)
            }
            Part::Big { escape } => {
                let mut o = out.chunks_exact_mut(8);
                self.source.each(|x| {
                    if x >= escape {
                        if let Some(slot) = o.next() {
                            slot.copy_from_slice(&(x as f64).to_le_bytes());
                        }
                    }
                });
            }
        }
    }
}

/// One block of columns: where each column is, and the segments that make its bytes.
pub(super) struct Block<'a> {
    /// Bytes, uncompressed.
    size: usize,
    columns: BTreeMap<&'static str, ColumnRef>,
    segments: Vec<Segment<'a>>,
}

/// The byte planes needed for values up to `max`.
fn planes_for(max: u64) -> u8 {
    match max {
        0..=0xFF => 1,
        0x100..=0xFFFF => 2,
        0x1_0000..=0xFF_FFFF => 3,
        _ => 4,
    }
}

/// The escape of a `u32x` column of `planes` planes: its all-ones value.
fn escape_of(planes: u8) -> u64 {
    (1u64 << (8 * u32::from(planes))) - 1
}

impl<'a> Block<'a> {
    fn new() -> Block<'a> {
        Block {
            size: 0,
            columns: BTreeMap::new(),
            segments: Vec::new(),
        }
    }

    fn add(&mut self, name: &'static str, kind: &'static str, count: usize) -> &mut ColumnRef {
        let r = ColumnRef {
            kind,
            block: 0,
            offset: self.size,
            count,
            planes: None,
            big: None,
            delta: None,
        };
        self.columns.entry(name).or_insert(r)
    }

    fn segment(&mut self, source: Source<'a>, part: Part, len: usize) {
        if len > 0 {
            self.segments.push(Segment { source, part, len });
            self.size += len;
        }
    }

    fn u8s(&mut self, name: &'static str, v: &'a [u8]) {
        self.add(name, "u8", v.len());
        self.segment(Source::U8(v), Part::Bytes, v.len());
    }

    /// The lowest `planes` byte planes of `source`, values over `cap` written as `cap`.
    fn planes(&mut self, source: Source<'a>, planes: u8, cap: u64) {
        for p in 0..u32::from(planes) {
            let part = Part::Plane { shift: 8 * p, cap };
            self.segment(source, part, source.len());
        }
    }

    fn u32s(&mut self, name: &'static str, source: Source<'a>) {
        let mut max = 0;
        source.each(|x| max = max.max(x));
        let planes = planes_for(max);
        self.add(name, "u32", source.len()).planes = Some(planes);
        self.planes(source, planes, u64::MAX);
    }

    /// A `u32x` column: the planes that make it smallest, values at or over the escape
    /// (the planes' all-ones value) written as f64s after them.
    fn u32x(&mut self, name: &'static str, source: Source<'a>) -> &mut ColumnRef {
        let count = source.len();
        let mut over = [0usize; 4];
        source.each(|x| {
            over[0] += usize::from(x >= escape_of(1));
            over[1] += usize::from(x >= escape_of(2));
            over[2] += usize::from(x >= escape_of(3));
            over[3] += usize::from(x >= escape_of(4));
        });
        // The fewest planes that leave at most 1 % of the values escaped: an f64
        // compresses far worse than a plane that is mostly zeros.
        let planes = (1..=4u8)
            .find(|&p| over[usize::from(p) - 1] * 100 <= count)
            .unwrap_or(4);
        let escape = escape_of(planes);
        let big = over[usize::from(planes) - 1];
        let offset = self.size;
        self.planes(source, planes, escape);
        self.segment(source, Part::Big { escape }, 8 * big);
        let r = self.add(name, "u32x", count);
        r.offset = offset;
        r.planes = Some(planes);
        r.big = Some(big);
        r
    }

    /// The block's bytes, uncompressed (what the page inflates).
    #[cfg(test)]
    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for s in &self.segments {
            s.write(&mut out);
        }
        out
    }
}

/// Whether no interval starts before the previous one ends (the first not before
/// `first`): then a start column holds gaps ([`Source::Gaps`]).
fn ends_before_starts(start: &[u64], dur: &[u64], first: u64) -> bool {
    let mut prev_end = first;
    for (&s, &d) in start.iter().zip(dur) {
        if s < prev_end {
            return false;
        }
        prev_end = s + d;
    }
    true
}

/// What a CPU's chunks before ended with: the last task slice's start and end, and the
/// last wake-up's slice (the first chunk's: the origin, and 0).
#[derive(Clone, Copy, Debug)]
pub(super) struct After {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) slice: u32,
}

impl After {
    pub(super) fn origin(origin: u64) -> After {
        After {
            start: origin,
            end: origin,
            slice: 0,
        }
    }

    /// After `s` too.
    pub(super) fn slices(self, s: &SliceColumns) -> After {
        match (s.start.last(), s.dur.last()) {
            (Some(&start), Some(&dur)) => After {
                start,
                end: start + dur,
                ..self
            },
            _ => self,
        }
    }

    /// After `w` too.
    pub(super) fn wakes(self, w: &WakeColumns) -> After {
        match w.slice.last() {
            Some(&slice) => After { slice, ..self },
            None => self,
        }
    }
}

/// The rows of one chunk of a CPU's timeline: task slices, or wake-ups (spilled during
/// the pass), or what the CPU's lanes held at the end, with its IRQs, softirqs and
/// overview.
#[derive(Clone, Copy, Default)]
pub(super) struct Rows<'a> {
    pub(super) slices: Option<&'a SliceColumns>,
    pub(super) wakes: Option<&'a WakeColumns>,
    pub(super) irqs: Option<&'a IrqColumns>,
    pub(super) softirqs: Option<&'a SoftirqColumns>,
    pub(super) overview: Option<&'a OverviewColumns>,
}

/// A chunk's draw block: what the timeline draws, which the page inflates before the
/// first paint. `origin`: the timeline's; `after`: the CPU's chunks before.
fn draw_block<'a>(r: &Rows<'a>, origin: u64, after: After) -> Block<'a> {
    let mut b = Block::new();
    if let Some(s) = r.slices {
        if ends_before_starts(&s.start, &s.dur, after.end) {
            let gaps = Source::Gaps(&s.start, &s.dur, after.end);
            b.u32x("slices.start", gaps).delta = Some("end");
        } else {
            b.u32x("slices.start", Source::Deltas(&s.start, after.start));
        }
        b.u32x("slices.dur", Source::U64(&s.dur));
        b.u32s("slices.task", Source::U32(&s.task));
    }
    if let Some(w) = r.wakes {
        b.u32s("wakes.slice", Source::Deltas32(&w.slice, after.slice));
        b.u32x("wakes.lat", Source::U64(&w.lat));
    }
    if let Some(i) = r.irqs {
        b.u32x("irqs.start", Source::Deltas(&i.start, origin));
        b.u32x("irqs.dur", Source::U64(&i.dur));
    }
    if let Some(s) = r.softirqs {
        b.u32x("softirqs.start", Source::Deltas(&s.start, origin));
        b.u32x("softirqs.dur", Source::U64(&s.dur));
    }
    if let Some(o) = r.overview {
        b.u32x("overview.busy", Source::U64(&o.busy));
        b.u32x("overview.max_dur", Source::U64(&o.max_dur));
        b.u32x("overview.max_lat", Source::U64(&o.max_lat));
        b.u32x("overview.count", Source::U64(&o.count));
    }
    b
}

/// A chunk's detail block: the columns the timeline does not draw.
fn detail_block<'a>(r: &Rows<'a>) -> Block<'a> {
    let mut d = Block::new();
    if let Some(s) = r.slices {
        d.u8s("slices.prio", &s.prio);
        d.u8s("slices.flags", &s.flags);
    }
    if let Some(w) = r.wakes {
        d.u8s("wakes.waker", &w.waker);
        d.u32s("wakes.waker_cpu", Source::U32(&w.waker_cpu));
        d.u32s("wakes.waker_id", Source::U32(&w.waker_id));
        d.u8s("wakes.vec", &w.vec);
        d.u32x("wakes.irq_exit", Source::U64(&w.irq_exit));
        d.u32x("wakes.wakeup", Source::U64(&w.wakeup));
        d.u8s("wakes.flags", &w.flags);
    }
    if let Some(i) = r.irqs {
        d.u32s("irqs.irq", Source::U32(&i.irq));
        d.u8s("irqs.depth", &i.depth);
    }
    if let Some(s) = r.softirqs {
        d.u8s("softirqs.vec", &s.vec);
        d.u32s("softirqs.raised_by", Source::U32(&s.raised_by));
        d.u32x("softirqs.raise", Source::U64(&s.raise));
    }
    d
}

/// A chunk, compressed: its two blocks and its rows.
pub(super) struct Chunk {
    pub(super) draw: Packed,
    pub(super) detail: Packed,
    slices: usize,
    wakes: usize,
    irqs: usize,
    softirqs: usize,
}

impl Chunk {
    /// The chunk of `rows`, compressed, its pieces on rayon's threads when `parallel`.
    pub(super) fn pack(
        rows: &Rows,
        origin: u64,
        after: After,
        parallel: bool,
    ) -> io::Result<Chunk> {
        let blocks = vec![draw_block(rows, origin, after), detail_block(rows)];
        let mut packed = pack(blocks, parallel)?.into_iter();
        let (Some(draw), Some(detail)) = (packed.next(), packed.next()) else {
            return Err(io::Error::other("a chunk packed to fewer than two blocks"));
        };
        Ok(Chunk {
            draw,
            detail,
            slices: rows.slices.map_or(0, |s| s.start.len()),
            wakes: rows.wakes.map_or(0, |w| w.lat.len()),
            irqs: rows.irqs.map_or(0, |i| i.start.len()),
            softirqs: rows.softirqs.map_or(0, |s| s.start.len()),
        })
    }
}

/// A chunk in a CPU's `chunks`.
#[derive(Serialize)]
struct ChunkMeta {
    block: usize,
    detail_block: usize,
    slices: usize,
    wakes: usize,
    irqs: usize,
    softirqs: usize,
    columns: BTreeMap<&'static str, ColumnRef>,
}

/// A CPU in `meta.timeline.cpus`.
#[derive(Serialize)]
struct CpuMeta {
    cpu: u32,
    first: Option<u64>,
    last: u64,
    slices: usize,
    wakes: usize,
    irqs: usize,
    softirqs: usize,
    /// Its rows, in order, chunk by chunk.
    chunks: Vec<ChunkMeta>,
}

/// `meta.timeline`: times relative to `origin_ns`.
#[derive(Serialize)]
struct TimelineMeta<'a> {
    origin_ns: u64,
    end: u64,
    overview_ns: u64,
    cpus: Vec<CpuMeta>,
    tasks: &'a [TimelineTask],
    irqs: &'a [TimelineIrq],
    softirqs: &'static [&'static str],
    states: &'a [String],
    markers: Vec<TimelineMarker>,
    blinds: Vec<TimelineBlind>,
    lost: Vec<TimelineLost>,
    left_out: Option<LeftOut>,
    /// The thread rows to open with (`view --pin`).
    pins: &'a [String],
}

#[derive(Serialize)]
struct Meta<'a> {
    format: u32,
    title: &'a str,
    generator: String,
    report: &'a serde_json::value::RawValue,
    timeline: Option<TimelineMeta<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    compare: Option<CompareMeta<'a>>,
}

/// A compare page's B (docs/html.md, "Compare pages").
#[derive(Serialize)]
struct CompareMeta<'a> {
    /// A's title and B's.
    a: &'a str,
    b: &'a str,
    report: Box<serde_json::value::RawValue>,
    timeline: Option<TimelineMeta<'a>>,
}

/// A model's envelope, as raw JSON.
fn report_of(model: &dyn HtmlModel) -> io::Result<Box<serde_json::value::RawValue>> {
    let mut envelope = Vec::new();
    model.envelope(&mut envelope)?;
    serde_json::from_slice(&envelope).map_err(io::Error::other)
}

/// A timeline's meta and its blocks, numbered from `base`: each CPU's chunks spilled
/// during the pass ([`PageSpill`]), then the chunk of what its lanes held.
fn timeline_side<'a>(
    t: &'a Timeline,
    pins: &'a [String],
    base: usize,
) -> io::Result<(TimelineMeta<'a>, Vec<Packed>)> {
    let o = t.origin;
    let mut spilled = match &t.spill {
        Some(s) => match s.0.as_any().downcast_ref::<PageSpill>() {
            Some(page) => page.take()?,
            None => return Err(io::Error::other("a timeline spilled to another encoder")),
        },
        None => Spilled::default(),
    };
    let lasts: Vec<Chunk> = t
        .cpus
        .par_iter()
        .map(|c| {
            let rows = Rows {
                slices: Some(&c.slices),
                wakes: Some(&c.wakes),
                irqs: Some(&c.irqs),
                softirqs: Some(&c.softirqs),
                overview: Some(&c.overview),
            };
            let after = spilled.after(c.cpu, o);
            Chunk::pack(&rows, o, after, true)
        })
        .collect::<io::Result<_>>()?;
    let mut blocks = Vec::new();
    let mut cpus = Vec::with_capacity(t.cpus.len());
    for (c, last) in t.cpus.iter().zip(lasts) {
        let mut chunks = Vec::new();
        for chunk in spilled.take_cpu(c.cpu).into_iter().chain([last]) {
            let Chunk {
                mut draw,
                mut detail,
                slices,
                wakes,
                irqs,
                softirqs,
            } = chunk;
            let (block, detail_block) = (base + blocks.len(), base + blocks.len() + 1);
            draw.number(block);
            detail.number(detail_block);
            chunks.push(ChunkMeta {
                block,
                detail_block,
                slices,
                wakes,
                irqs,
                softirqs,
                columns: draw
                    .columns
                    .iter()
                    .chain(&detail.columns)
                    .map(|(k, v)| (*k, *v))
                    .collect(),
            });
            blocks.push(draw);
            blocks.push(detail);
        }
        cpus.push(CpuMeta {
            cpu: c.cpu,
            first: c.first.map(|f| rel(f, o)),
            last: rel(c.last, o),
            slices: c.slice_count(),
            wakes: c.wake_count(),
            irqs: c.irqs.start.len(),
            softirqs: c.softirqs.start.len(),
            chunks,
        });
    }
    let meta = TimelineMeta {
        origin_ns: o,
        end: rel(t.end, o),
        overview_ns: t.overview_ns,
        cpus,
        tasks: &t.tasks,
        irqs: &t.irqs,
        softirqs: &jitterlab_analyze::SOFTIRQ_NAMES,
        states: &t.states,
        markers: t
            .markers
            .iter()
            .map(|m| TimelineMarker {
                ts: rel(m.ts, o),
                ..m.clone()
            })
            .collect(),
        blinds: t
            .blinds
            .iter()
            .map(|b| TimelineBlind {
                start: rel(b.start, o),
                end: rel(b.end, o),
                ..*b
            })
            .collect(),
        lost: t
            .lost
            .iter()
            .map(|l| TimelineLost {
                ts: rel(l.ts, o),
                ..*l
            })
            .collect(),
        left_out: t.left_out.map(|l| LeftOut {
            after: rel(l.after, o),
            ..l
        }),
        pins,
    };
    Ok((meta, blocks))
}

fn rel(ts: u64, origin: u64) -> u64 {
    ts.saturating_sub(origin)
}

/// A block compressed: its number (`jl-data-K`), its columns, its size inflated and its
/// element's text.
pub(super) struct Packed {
    index: usize,
    columns: BTreeMap<&'static str, ColumnRef>,
    size: usize,
    pub(super) text: BlockText,
}

/// A block's text: in memory, or where [`PageSpill`] stored it.
pub(super) enum BlockText {
    Bytes(Vec<u8>),
    Stored {
        file: Arc<File>,
        offset: u64,
        len: usize,
    },
}

impl BlockText {
    fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        match self {
            BlockText::Bytes(b) => out.write_all(b),
            BlockText::Stored { file, offset, len } => {
                let mut buf = vec![0u8; (*len).min(1 << 20)];
                let mut done = 0;
                while done < *len {
                    let n = buf.len().min(len - done);
                    file.read_exact_at(&mut buf[..n], offset + done as u64)?;
                    out.write_all(&buf[..n])?;
                    done += n;
                }
                Ok(())
            }
        }
    }
}

impl Packed {
    /// Makes it block `index`.
    fn number(&mut self, index: usize) {
        self.index = index;
        for c in self.columns.values_mut() {
            c.block = index;
        }
    }
}

/// A piece is at least this long, unless it is a block's last (smaller segments are
/// compressed together, so that each costs little for its own Huffman tables).
const PIECE_MIN: usize = 64 << 10;

/// The deflate level of a piece that compresses.
const LEVEL: i32 = 2;

/// A block's pieces: ranges of whole segments, each at least [`PIECE_MIN`] bytes long
/// but the last.
fn pieces(b: &Block) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut from, mut len) = (0, 0);
    for (i, s) in b.segments.iter().enumerate() {
        len += s.len;
        if len >= PIECE_MIN {
            out.push(from..i + 1);
            (from, len) = (i + 1, 0);
        }
    }
    if from < b.segments.len() || out.is_empty() {
        out.push(from..b.segments.len());
    }
    out
}

/// The order-0 entropy of `bytes`, bits a byte, on a sample of at most [`PIECE_MIN`]
/// bytes spread over them.
fn entropy(bytes: &[u8]) -> f64 {
    let step = bytes.len().div_ceil(PIECE_MIN).max(1);
    let mut counts = [0u32; 256];
    let mut n = 0u32;
    for &b in bytes.iter().step_by(step) {
        counts[usize::from(b)] += 1;
        n += 1;
    }
    let n = f64::from(n.max(1));
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// The bytes of the middle of a piece deflated to judge whether string matching finds
/// anything in it.
const TRIAL: usize = 32 << 10;

/// Raw deflate of `bytes` with `config`, ending in a sync flush (byte-aligned, no final
/// block), so that pieces compressed apart are one stream when concatenated.
fn deflate_with(bytes: &[u8], config: DeflateConfig) -> io::Result<Vec<u8>> {
    let mut z = Deflate::new_with_config(config);
    let mut out = vec![0u8; compress_bound(bytes.len()) + 64];
    loop {
        let (i, o) = (z.total_in() as usize, z.total_out() as usize);
        z.compress(&bytes[i..], &mut out[o..], DeflateFlush::SyncFlush)
            .map_err(|e| io::Error::other(format!("deflate: {}", e.as_str())))?;
        let (i, o) = (z.total_in() as usize, z.total_out() as usize);
        // The flush is complete once all input is in and the output did not fill up.
        if i == bytes.len() && o < out.len() {
            out.truncate(o);
            return Ok(out);
        }
        out.resize(2 * out.len(), 0);
    }
}

fn config(level: i32, strategy: Strategy) -> DeflateConfig {
    DeflateConfig {
        level,
        strategy,
        // Negative: raw deflate, no zlib header.
        window_bits: -15,
        ..DeflateConfig::default()
    }
}

/// How a piece is compressed. The low byte planes of durations and latencies are near
/// noise: string matching finds nothing there (level 2 spent 36 ms on one to gain 1 %).
/// So a piece of [`PIECE_MIN`] bytes or more whose byte frequencies carry 6.5 bits a byte
/// or more, and whose middle [`TRIAL`] bytes deflate to no less than 97 % of what those
/// frequencies promise, is coded by byte frequency alone (within 0.1 % of level 2, in a
/// third of its time), or stored from 7.8 bits (at most 2.5 % larger, in no time: coding
/// a 1.4 MB plane of 7.9 bits by frequency took 10 ms to save 1.2 %).
/// Anything else (a counter's planes have every byte as often, but repeat) is deflated at
/// [`LEVEL`].
fn piece_config(bytes: &[u8]) -> io::Result<DeflateConfig> {
    let deflate = config(LEVEL, Strategy::Default);
    if bytes.len() < PIECE_MIN {
        return Ok(deflate);
    }
    let e = entropy(bytes);
    if e < 6.5 {
        return Ok(deflate);
    }
    let mid = bytes.len() / 2 - TRIAL / 2;
    let trial = deflate_with(&bytes[mid..mid + TRIAL], deflate)?.len() as f64;
    Ok(if trial < 0.97 * e / 8.0 * TRIAL as f64 {
        deflate
    } else if e >= 7.8 {
        config(0, Strategy::Default)
    } else {
        config(LEVEL, Strategy::HuffmanOnly)
    })
}

/// A piece as raw deflate ending in a sync flush, compressed as [`piece_config`] says.
fn deflate_piece(bytes: &[u8]) -> io::Result<Vec<u8>> {
    deflate_with(bytes, piece_config(bytes)?)
}

/// The end of a stream of sync-flushed pieces: an empty final block (fixed Huffman,
/// its end code).
const FINAL_BLOCK: [u8; 2] = [0x03, 0x00];

/// `blocks`, compressed: the pieces of every block written and compressed (on rayon's
/// threads when `parallel`; each worker writes its piece into a buffer of its own,
/// reused), then put back together in order.
fn pack(blocks: Vec<Block>, parallel: bool) -> io::Result<Vec<Packed>> {
    // (block, segments, bytes), the longest first so that the last piece to finish is
    // short.
    let mut work: Vec<(usize, std::ops::Range<usize>, usize)> = blocks
        .iter()
        .enumerate()
        .flat_map(|(i, b)| {
            pieces(b).into_iter().map(move |r| {
                let len = b.segments[r.clone()].iter().map(|s| s.len).sum();
                (i, r, len)
            })
        })
        .collect();
    work.sort_by_key(|w| std::cmp::Reverse(w.2));
    let piece = |buf: &mut Vec<u8>, (i, r, _): &(usize, std::ops::Range<usize>, usize)| {
        buf.clear();
        for s in &blocks[*i].segments[r.clone()] {
            s.write(buf);
        }
        Ok((*i, r.start, deflate_piece(buf)?))
    };
    let mut done: Vec<(usize, usize, Vec<u8>)> = if parallel {
        work.par_iter()
            .map_init(Vec::new, piece)
            .collect::<io::Result<_>>()?
    } else {
        let mut buf = Vec::new();
        work.iter()
            .map(|w| piece(&mut buf, w))
            .collect::<io::Result<_>>()?
    };
    done.sort_by_key(|&(i, first, _)| (i, first));
    let mut streams: Vec<Vec<u8>> = blocks.iter().map(|_| Vec::new()).collect();
    for (i, _, z) in done {
        streams[i].extend_from_slice(&z);
    }
    Ok(blocks
        .into_iter()
        .zip(streams)
        .map(|(b, mut z)| {
            z.extend_from_slice(&FINAL_BLOCK);
            let mut text = Vec::new();
            html_block_text(&z, &mut text);
            Packed {
                index: 0,
                columns: b.columns,
                size: b.size,
                text: BlockText::Bytes(text),
            }
        })
        .collect())
}

/// The viewer's modules as one script: `import` lines dropped, `export ` removed.
fn viewer_script() -> String {
    let mut out = String::new();
    for (name, text) in web::MODULES {
        out.push_str("// ---- web/");
        out.push_str(name);
        out.push('\n');
        for line in text.lines() {
            if line.starts_with("import ") {
                continue;
            }
            out.push_str(line.strip_prefix("export ").unwrap_or(line));
            out.push('\n');
        }
    }
    // A script element ends at the first `</script`, whatever the JavaScript says.
    out.replace("</script", "<\\/script")
}

/// The viewer's style sheets as one.
fn style_sheet() -> String {
    let mut out = String::new();
    for (name, text) in web::STYLES {
        out.push_str(&format!("/* ---- web/{name} */\n{text}\n"));
    }
    out.replace("</style", "<\\/style")
}

/// JSON made safe inside a `<script>` element: every `<` (only ever inside a string)
/// written `\u003c`.
fn script_safe(json: String) -> String {
    if json.contains('<') {
        json.replace('<', "\\u003c")
    } else {
        json
    }
}

const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data: blob:";

impl<M: HtmlModel> Exporter<M> for Html {
    fn write(&self, model: &M, out: &mut dyn Write) -> io::Result<()> {
        let report = report_of(model)?;
        let (timeline, mut blocks) = match model.timeline() {
            Some(t) => {
                let (meta, blocks) = timeline_side(t, &self.pins, 0)?;
                (Some(meta), blocks)
            }
            None => (None, Vec::new()),
        };
        let compare = match model.compared() {
            Some((a_title, b_title, b)) => {
                let timeline = match b.timeline() {
                    Some(t) => {
                        let (meta, more) = timeline_side(t, &self.pins, blocks.len())?;
                        blocks.extend(more);
                        Some(meta)
                    }
                    None => None,
                };
                Some(CompareMeta {
                    a: a_title,
                    b: b_title,
                    report: report_of(b)?,
                    timeline,
                })
            }
            None => None,
        };
        let meta = Meta {
            format: HTML_FORMAT,
            title: &self.title,
            generator: format!("jitterlab {}", env!("CARGO_PKG_VERSION")),
            report: &report,
            timeline,
            compare,
        };
        let meta = script_safe(serde_json::to_string(&meta)?);

        // With data blocks the page is UTF-16LE, its byte-order mark first (htmltext.rs);
        // without, UTF-8.
        let cs = Charset {
            utf16: !blocks.is_empty(),
        };
        cs.write(
            &format!(
                "{}<!doctype html>\n<html lang=\"en\">\n<head>\n{}\
                 <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
                 <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
                 <title>{} — jitterlab</title>\n<style>\n{}</style>\n</head>\n<body>\n",
                if cs.utf16 { "\u{FEFF}" } else { "" },
                if cs.utf16 {
                    ""
                } else {
                    "<meta charset=\"utf-8\">\n"
                },
                escape_markup(&self.title),
                style_sheet()
            ),
            out,
        )?;
        cs.write("<script type=\"application/json\" id=\"jl-meta\">", out)?;
        cs.write(&meta, out)?;
        cs.write("</script>\n", out)?;
        drop(meta);
        for b in &blocks {
            cs.write(
                &format!(
                    "<script type=\"application/octet-stream\" id=\"jl-data-{}\" data-bytes=\"{}\">",
                    b.index, b.size
                ),
                out,
            )?;
            b.text.write_to(out)?;
            cs.write("</script>\n", out)?;
        }
        cs.write("<script type=\"module\">\n", out)?;
        cs.write(&viewer_script(), out)?;
        cs.write("</script>\n</body>\n</html>\n", out)?;
        Ok(())
    }
}

/// How the page's text is written: UTF-16LE when it carries data blocks, else UTF-8.
#[derive(Clone, Copy)]
struct Charset {
    utf16: bool,
}

impl Charset {
    fn write(self, s: &str, out: &mut dyn Write) -> io::Result<()> {
        if self.utf16 {
            let mut units = Vec::new();
            utf16le(s, &mut units);
            out.write_all(&units)
        } else {
            out.write_all(s.as_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn u32x_escapes_values_past_its_planes() {
        let mut b = Block::new();
        b.u32x("t", Source::U64(&[1u64, 0x1_0000_0000, 2]));
        let c = b.columns["t"];
        // A third of the values past u32: four planes, the big one escaped.
        assert_eq!((c.count, c.planes, c.big), (3, Some(4), Some(1)));
        let bytes = b.bytes();
        assert_eq!(bytes.len(), b.size);
        assert_eq!(&bytes[..3], &[1, 0xFF, 2]);
        assert_eq!(
            f64::from_le_bytes(bytes[12..20].try_into().unwrap()),
            4294967296.0
        );
        // Under 1 % past three planes: three planes, the rest escaped.
        let mut b = Block::new();
        let v = [300u64, 0x1_0000_0000, 70_000, 255];
        let v: Vec<u64> = v.into_iter().chain(std::iter::repeat_n(7, 96)).collect();
        b.u32x("t", Source::U64(&v));
        let c = b.columns["t"];
        assert_eq!((c.planes, c.big), (Some(3), Some(1)));
        let c = c.count;
        let u = [5, 256];
        b.u32s("u", Source::U32(&u));
        assert_eq!(b.columns["u"].planes, Some(2));
        let bytes = b.bytes();
        assert_eq!(bytes.len(), b.size);
        // Planes: lowest bytes first.
        assert_eq!(&bytes[..4], &[44, 0xFF, 0x70, 255]);
        assert_eq!(&bytes[c..c + 4], &[1, 0xFF, 0x11, 0]);
        assert_eq!(&bytes[2 * c..2 * c + 4], &[0, 0xFF, 1, 0]);
        assert_eq!(&bytes[b.columns["u"].offset..], &[5, 0, 0, 1]);
    }

    #[test]
    fn pieces_compressed_apart_inflate_as_one_stream() {
        // A noise plane (stored), a skewed one (Huffman only), a repetitive one
        // (deflated) and small columns merged into a last piece.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut noise = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let n = 3 * PIECE_MIN;
        let mut b = Block::new();
        let random: Vec<u8> = (0..n).map(|_| noise() as u8).collect();
        b.u8s("random", &random);
        let skewed: Vec<u8> = (0..n).map(|_| (noise() % 150) as u8).collect();
        b.u8s("skewed", &skewed);
        let counter: Vec<u32> = (0..n as u32).map(|i| i / 3).collect();
        b.u32s("counter", Source::U32(&counter));
        b.u8s("small", &[1, 2, 3]);
        b.u32s("tiny", Source::U32(&[7, 300]));
        let e: Vec<f64> = [&random[..], &skewed[..]]
            .iter()
            .map(|v| entropy(v))
            .collect();
        assert!(e[0] >= 7.8 && (6.5..7.8).contains(&e[1]), "{e:?}");
        assert_eq!(piece_config(&random).unwrap().level, 0);
        assert_eq!(
            piece_config(&skewed).unwrap().strategy,
            Strategy::HuffmanOnly
        );
        // Every byte as often, but a counter's: deflated.
        let plane0: Vec<u8> = counter.iter().map(|&c| c as u8).collect();
        assert!(entropy(&plane0) > 7.9);
        assert_eq!(piece_config(&plane0).unwrap().level, LEVEL);
        let p = pieces(&b);
        // random, skewed, the counter's 2 planes, then the small columns together.
        assert_eq!(p, [0..1, 1..2, 2..3, 3..4, 4..7]);
        let mut stream = Vec::new();
        for r in &p {
            let mut piece = Vec::new();
            for s in &b.segments[r.clone()] {
                s.write(&mut piece);
            }
            stream.extend(deflate_piece(&piece).unwrap());
        }
        stream.extend_from_slice(&FINAL_BLOCK);
        // Stored noise costs under 0.1 % more than its bytes, the skewed plane about
        // 7.23 bits a byte (0.904 n), the counter's 3n bytes next to nothing.
        assert!(stream.len() * 100 < 193 * n, "{} of {n}", stream.len());
        let mut inflated = Vec::new();
        flate2::read::DeflateDecoder::new(&stream[..])
            .read_to_end(&mut inflated)
            .unwrap();
        assert_eq!(inflated, b.bytes());
    }

    fn values(s: Source) -> Vec<u64> {
        let mut v = Vec::new();
        s.each(|x| v.push(x));
        v
    }

    #[test]
    fn slice_starts_are_gaps_unless_slices_overlap() {
        let (start, dur) = ([105, 110, 130], [5, 10, 1]);
        assert!(ends_before_starts(&start, &dur, 100));
        assert_eq!(values(Source::Gaps(&start, &dur, 100)), [5, 0, 10]);
        assert!(!ends_before_starts(&[105, 108], &[5, 1], 100));
        assert!(!ends_before_starts(&[99], &[1], 100));
    }

    #[test]
    fn deltas_start_from_the_origin() {
        let d = values(Source::Deltas(&[105, 110, 110, 200], 100));
        assert_eq!(d, [5, 5, 0, 90]);
        assert_eq!(values(Source::Deltas32(&[0, 3, 3, 9], 0)), [0, 3, 0, 6]);
        assert_eq!(values(Source::Deltas32(&[5, 6], 4)), [1, 1]);
    }

    #[test]
    fn json_in_a_script_cannot_close_it() {
        let s = script_safe(r#"{"a":"</script><b>"}"#.into());
        assert_eq!(s, r#"{"a":"\u003c/script>\u003cb>"}"#);
        assert_eq!(escape_markup("a<b>&\"c"), "a&lt;b&gt;&amp;&quot;c");
    }
}
