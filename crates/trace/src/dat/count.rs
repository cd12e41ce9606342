//! Counting records without decoding them: each page carries its own base timestamp, so
//! the pages (and the compressed chunks) of every CPU can be read in parallel. Each task
//! holds one decompressed chunk at a time; at most as many run at once as chunks of the
//! buffer fit in [`CHUNKS_HELD`].

use rayon::prelude::*;

use super::pages::{chunk_limit, ChunkPool, CpuReader, Item, CHUNKS_HELD};
use super::DatFile;
use crate::{Result, Text};

/// Bytes of CPU data per parallel task.
pub(crate) const SEGMENT: usize = 4 << 20;

/// How many records of one event a buffer has.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EventCount {
    /// The event id.
    pub id: u16,
    /// `system:name`, or `unknown:ID` when the file has no format for the id.
    pub name: Text,
    /// Number of records.
    pub count: u64,
}

/// The records of one CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CpuCount {
    /// The CPU.
    pub cpu: u32,
    /// Number of records.
    pub events: u64,
    /// Pages read.
    pub pages: u64,
    /// Events the kernel lost on this CPU; `None` when some loss had no count.
    pub lost: Option<u64>,
    /// Pages with the missed-events flag.
    pub lost_markers: u64,
    /// Timestamp of the first record, ns.
    pub first_ts: Option<u64>,
    /// Timestamp of the last record, ns.
    pub last_ts: Option<u64>,
}

/// What [`DatFile::count_events`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EventCounts {
    /// The file format, for people.
    pub format: String,
    /// The buffer's name (`""` = top buffer).
    pub buffer: String,
    /// Records per event, most frequent first (ties by id).
    pub by_event: Vec<EventCount>,
    /// Records per CPU, by CPU number.
    pub per_cpu: Vec<CpuCount>,
    /// All records.
    pub total: u64,
    /// Earliest record timestamp, ns.
    pub first_ts: Option<u64>,
    /// Latest record timestamp, ns.
    pub last_ts: Option<u64>,
    /// Pages, chunks or records skipped (lenient mode).
    pub skipped: u64,
}

#[derive(Default)]
struct Part {
    cpu: u32,
    by_id: Vec<u64>,
    c: CpuCount,
    skipped: u64,
}

fn merge_opt(a: Option<u64>, b: Option<u64>, f: fn(u64, u64) -> u64) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(f(x, y)),
        (x, None) => x,
        (None, y) => y,
    }
}

pub(crate) fn count(dat: &DatFile<'_>, buffer: usize, segment: usize) -> Result<EventCounts> {
    let b = dat.buffer(buffer)?;
    let lenient = dat.options.lenient;
    let mut tasks = Vec::new();
    let mut skipped = dat.format_errors;
    for cpu in &b.cpus {
        match dat.segments(b, cpu, segment) {
            Ok(segs) => tasks.extend(segs.into_iter().map(|s| (cpu.cpu, s))),
            Err(_) if lenient => skipped += 1,
            Err(e) => return Err(e),
        }
    }
    let endian = dat.endian;
    let shift = dat.info.ts_offset;
    // Tasks that hold a chunk each: no more at once than CHUNKS_HELD has room for (each
    // parallel job runs at least `per_job` tasks in turn).
    let per_job = if b.compressed {
        let at_once = (CHUNKS_HELD / chunk_limit(b.page_size).max(1)).max(1);
        tasks.len().div_ceil(at_once).max(1)
    } else {
        1
    };
    let parts: Vec<Result<Part>> = tasks
        .into_par_iter()
        .with_min_len(per_job)
        .map(|(cpu, seg)| {
            let mut pool = ChunkPool::new(dat.info.compression);
            let mut r = CpuReader::new(cpu, dat.source(b, seg), dat.layout_for(b), lenient);
            let mut p = Part {
                cpu,
                ..Part::default()
            };
            p.c.cpu = cpu;
            let (mut first, mut last) = (None::<u64>, 0u64);
            while let Some(item) = r.next(&mut pool)? {
                match item {
                    Item::Record { ts, data, .. } => {
                        let id = r.backing().get(data).and_then(|d| endian.u16(d, 0));
                        let Some(id) = id else {
                            p.skipped += 1;
                            continue;
                        };
                        let id = usize::from(id);
                        if id >= p.by_id.len() {
                            p.by_id.resize(id + 1, 0);
                        }
                        p.by_id[id] += 1;
                        p.c.events += 1;
                        first.get_or_insert(ts);
                        last = ts;
                    }
                    Item::Lost { .. } => p.c.lost_markers += 1,
                }
            }
            p.c.first_ts = first.map(|t| t.wrapping_add_signed(shift));
            p.c.last_ts = first.map(|_| last.wrapping_add_signed(shift));
            p.c.pages = r.pages;
            p.c.lost = r.lost;
            p.skipped += r.skipped;
            Ok(p)
        })
        .collect();
    let mut by_id: Vec<u64> = Vec::new();
    // Every CPU of the buffer, those without data included.
    let mut per_cpu: Vec<CpuCount> = b
        .cpus
        .iter()
        .map(|c| CpuCount {
            cpu: c.cpu,
            lost: Some(0),
            ..CpuCount::default()
        })
        .collect();
    for part in parts {
        let p = part?;
        skipped += p.skipped;
        if by_id.len() < p.by_id.len() {
            by_id.resize(p.by_id.len(), 0);
        }
        for (a, n) in by_id.iter_mut().zip(&p.by_id) {
            *a += n;
        }
        let slot = match per_cpu.iter_mut().find(|c| c.cpu == p.cpu) {
            Some(s) => s,
            None => {
                per_cpu.push(CpuCount {
                    cpu: p.cpu,
                    lost: Some(0),
                    ..CpuCount::default()
                });
                per_cpu.last_mut().expect("just pushed")
            }
        };
        slot.events += p.c.events;
        slot.pages += p.c.pages;
        slot.lost_markers += p.c.lost_markers;
        slot.lost = match (slot.lost, p.c.lost) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        slot.first_ts = merge_opt(slot.first_ts, p.c.first_ts, u64::min);
        slot.last_ts = merge_opt(slot.last_ts, p.c.last_ts, u64::max);
    }
    per_cpu.sort_by_key(|c| c.cpu);
    let decoder_names = |id: u16| match dat.formats.name(id) {
        Some((system, name)) => Text::from(format!("{system}:{name}")),
        None => Text::from(format!("unknown:{id}")),
    };
    let mut by_event: Vec<EventCount> = by_id
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(id, &count)| EventCount {
            id: id as u16,
            name: decoder_names(id as u16),
            count,
        })
        .collect();
    by_event.sort_by(|a, b| b.count.cmp(&a.count).then(a.id.cmp(&b.id)));
    Ok(EventCounts {
        format: dat.meta.format.clone(),
        buffer: b.name.clone(),
        total: per_cpu.iter().map(|c| c.events).sum(),
        first_ts: per_cpu.iter().filter_map(|c| c.first_ts).min(),
        last_ts: per_cpu.iter().filter_map(|c| c.last_ts).max(),
        by_event,
        per_cpu,
        skipped,
    })
}
