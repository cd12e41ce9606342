//! The CPU section: busy / idle / hardirq / softirq time per CPU and load over time.
//!
//! Definitions: a CPU's span runs from its first event to the last event of the trace (ring
//! buffers of busy CPUs may start later than others). Busy = a task other than idle was
//! current; idle = the idle task was; unknown = the state was lost (lost events) until the
//! CPU's next event; busy + idle + unknown = span. Hardirq and softirq time are the time in
//! handlers (nested handlers counted once) and overlap busy and idle. With a time window,
//! the span is the CPU's part of the window and every time is cut to it.

use serde::Serialize;

use super::Ctx;
use crate::model::{Blind, IrqSpan, RunSlice, SliceStart, SoftirqSpan};
use crate::sink::Sink;

/// The smallest load bucket, ns; buckets double from there until they fit.
const BASE_BUCKET_NS: u64 = 1_000;

/// One CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpuRow {
    /// The CPU.
    pub cpu: u32,
    /// Its first event, ns (`null`: none).
    pub first_ns: Option<u64>,
    /// From its first event to the end of the trace, ns.
    pub span_ns: u64,
    /// A task other than idle was current, ns.
    pub busy_ns: u64,
    /// The idle task was current, ns.
    pub idle_ns: u64,
    /// State unknown after lost events, ns.
    pub unknown_ns: u64,
    /// In hard IRQ handlers, ns (overlaps busy and idle).
    pub hardirq_ns: u64,
    /// In softirqs, ns (overlaps busy and idle).
    pub softirq_ns: u64,
    /// IRQ handler runs.
    pub irqs: u64,
    /// Softirq runs.
    pub softirqs: u64,
    /// Task slices (idle excluded), however they began.
    pub slices: u64,
    /// Task slices begun by a sched_switch (idle excluded).
    pub switches: u64,
    /// Task slices begun without a switch, inferred from common_pid.
    pub inferred_switches: u64,
    /// Events on the CPU.
    pub events: u64,
    /// Busy ns per load bucket, from the trace start.
    pub load: Vec<u64>,
}

/// The CPU section.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpuSection {
    /// Where load bucket 0 starts (the first event), ns.
    pub origin_ns: u64,
    /// Width of a load bucket, ns.
    pub bucket_ns: u64,
    /// Per CPU.
    pub cpus: Vec<CpuRow>,
}

/// Folds slices and spans per CPU.
pub struct CpuFold {
    max_buckets: usize,
    origin: u64,
    width: u64,
    rows: Vec<CpuRow>,
}

impl CpuFold {
    /// A fold keeping at most `max_buckets` load buckets per CPU (at least 2).
    pub fn new(max_buckets: usize) -> CpuFold {
        CpuFold {
            max_buckets: max_buckets.max(2),
            origin: 0,
            width: BASE_BUCKET_NS,
            rows: Vec::new(),
        }
    }

    fn row(&mut self, cpu: u32) -> &mut CpuRow {
        let i = cpu as usize;
        if self.rows.len() <= i {
            let n = self.rows.len();
            self.rows.extend((n..=i).map(|c| CpuRow {
                cpu: c as u32,
                ..CpuRow::default()
            }));
        }
        &mut self.rows[i]
    }

    /// Widens the buckets (merging pairs) until offset `e` (exclusive) fits. Inlined: the
    /// buckets fit `e` while `e <= max_buckets * width`, a multiplication, where a call
    /// and the division below cost ~40 Ir a slice.
    #[inline]
    fn fit(&mut self, e: u64) {
        if e > self.width.saturating_mul(self.max_buckets as u64) {
            self.widen(e);
        }
    }

    /// [`CpuFold::fit`] when `e` does not fit.
    #[cold]
    fn widen(&mut self, e: u64) {
        while e > 0 && ((e - 1) / self.width) as usize >= self.max_buckets {
            self.width *= 2;
            for r in &mut self.rows {
                r.load = r.load.chunks(2).map(|p| p.iter().sum()).collect();
            }
        }
    }

    /// Adds busy time `[start, end)` of `cpu` to the load buckets, widening them (merging
    /// pairs) until the end fits.
    fn load(&mut self, cpu: u32, start: u64, end: u64) {
        if end <= start {
            return;
        }
        let (s, e) = (
            start.saturating_sub(self.origin),
            end.saturating_sub(self.origin),
        );
        self.fit(e);
        let width = self.width;
        let row = self.row(cpu);
        let last = ((e - 1) / width) as usize;
        if row.load.len() <= last {
            row.load.resize(last + 1, 0);
        }
        for i in (s / width) as usize..=last {
            let b0 = i as u64 * width;
            let overlap = e.min(b0 + width) - s.max(b0);
            row.load[i] += overlap;
        }
    }

    /// Builds the section.
    pub fn finish(mut self, ctx: &Ctx<'_>) -> CpuSection {
        let filter = &ctx.options.filter;
        let end = ctx.machine.counts().span.map_or(0, |s| s.1);
        let end = end.min(filter.to_ns.unwrap_or(u64::MAX));
        let from = filter.from_ns.unwrap_or(0);
        let n = ctx.meta.cpus.unwrap_or(0) as usize;
        let infos = ctx.machine.cpus();
        let n = n.max(infos.len()).max(self.rows.len());
        if n > 0 {
            self.row(n as u32 - 1);
        }
        self.fit(end.saturating_sub(self.origin));
        let buckets = if end > self.origin {
            ((end - self.origin - 1) / self.width) as usize + 1
        } else {
            0
        };
        for r in &mut self.rows {
            if let Some(info) = infos.get(r.cpu as usize) {
                r.first_ns = info.first_ts;
                r.span_ns = info.first_ts.map_or(0, |f| end.saturating_sub(f.max(from)));
                r.events = info.events;
            }
            r.load.resize(buckets, 0);
        }
        self.rows.retain(|r| filter.wants_cpu(r.cpu));
        CpuSection {
            origin_ns: self.origin,
            bucket_ns: self.width,
            cpus: self.rows,
        }
    }
}

impl Sink for CpuFold {
    fn begin(&mut self, ts: u64) {
        self.origin = ts;
    }
    fn slice(&mut self, s: &RunSlice) {
        let d = s.duration();
        let row = self.row(s.cpu);
        if s.is_idle() {
            row.idle_ns += d;
            return;
        }
        row.busy_ns += d;
        row.slices += 1;
        match s.start_kind {
            SliceStart::Switch => row.switches += 1,
            SliceStart::Inferred => row.inferred_switches += 1,
            SliceStart::TraceStart => {}
        }
        self.load(s.cpu, s.start, s.end);
    }
    fn irq(&mut self, s: &IrqSpan) {
        let row = self.row(s.cpu);
        row.irqs += 1;
        if s.depth == 0 {
            row.hardirq_ns += s.end.saturating_sub(s.start);
        }
    }
    fn softirq(&mut self, s: &SoftirqSpan) {
        let row = self.row(s.cpu);
        row.softirqs += 1;
        row.softirq_ns += s.end.saturating_sub(s.start);
    }
    fn blind(&mut self, b: &Blind) {
        self.row(b.cpu).unknown_ns += b.end.saturating_sub(b.start);
    }
}
