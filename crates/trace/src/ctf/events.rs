//! The stream files merged in time order, as typed [`Event`]s; and the first pass that
//! reads LTTng's statedump (task names, thread groups, IRQ names) and the task each CPU
//! starts with.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::lttng::{self, Fields, Plan, Statedump};
use super::stream::{Item, StreamReader};
use super::{CtfTrace, EventInfo, Scan};
use crate::{Comm, Event, EventKind, EventSource, Flags, ReadStats, Result, Text, TraceMeta};

/// A k-way merge of stream readers by timestamp (ties: the file sorted first).
pub(crate) struct Merge<'t> {
    pub readers: Vec<StreamReader<'t>>,
    pending: Vec<Option<Item>>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    started: bool,
    /// The reader whose item was handed out last: read on at the next call, so that an
    /// error there comes after the item.
    refill: Option<usize>,
}

type Want<'a> = &'a mut dyn FnMut(&EventInfo, u32) -> bool;

impl<'t> Merge<'t> {
    pub(crate) fn new(readers: Vec<StreamReader<'t>>) -> Merge<'t> {
        Merge {
            pending: readers.iter().map(|_| None).collect(),
            readers,
            heap: BinaryHeap::new(),
            started: false,
            refill: None,
        }
    }

    fn fill(&mut self, i: usize, want: Want) -> Result<()> {
        let Some(r) = self.readers.get_mut(i) else {
            return Ok(());
        };
        if let Some(item) = r.next(want)? {
            self.heap.push(Reverse((r.ts, i)));
            self.pending[i] = Some(item);
        }
        Ok(())
    }

    /// The next item and its reader (which holds the event until the next call).
    pub(crate) fn pop(&mut self, want: Want) -> Result<Option<(usize, Item)>> {
        if !self.started {
            self.started = true;
            for i in 0..self.readers.len() {
                self.fill(i, want)?;
            }
        }
        if let Some(i) = self.refill.take() {
            self.fill(i, want)?;
        }
        while let Some(Reverse((_, i))) = self.heap.pop() {
            if let Some(item) = self.pending.get_mut(i).and_then(Option::take) {
                self.refill = Some(i);
                return Ok(Some((i, item)));
            }
        }
        Ok(None)
    }

    /// Undecodable packets skipped so far.
    pub(crate) fn skipped(&self) -> u64 {
        self.readers.iter().map(|r| r.skipped).sum()
    }
}

/// The most distinct texts interned (IRQ names, exec file names); past it they are
/// allocated per event.
const MAX_INTERNED: usize = 1 << 14;

/// The typed events of a [`CtfTrace`], in time order.
///
/// An event's task ([`Event::pid`]) is its `tid` context field when LTTng recorded one
/// (`lttng add-context -k -t tid`). Without it, the reader follows sched_switch on each
/// CPU: a switch's task is its `prev_tid`, the events after it are its `next_tid`'s; the
/// events before a CPU's first switch are the `prev_tid` of that first switch (read in a
/// first pass), and -1 (unknown) on a CPU that never switches.
pub struct CtfEvents<'t> {
    trace: &'t CtfTrace,
    merge: Merge<'t>,
    /// The task running on each CPU, as the switches tell.
    current: Vec<i32>,
    first: HashMap<u32, i32>,
    texts: HashMap<Vec<u8>, Text>,
    stats: ReadStats,
    /// Build the fields of the events jitterlab has no type for (off: their `fields`
    /// are empty; their names and times stay).
    untyped: bool,
}

impl<'t> CtfEvents<'t> {
    pub(crate) fn new(
        trace: &'t CtfTrace,
        first: HashMap<u32, i32>,
        untyped: bool,
    ) -> CtfEvents<'t> {
        let cpus = trace.meta.cpus.unwrap_or(0) as usize;
        CtfEvents {
            trace,
            untyped,
            merge: Merge::new(trace.readers()),
            current: Vec::new(),
            first,
            texts: HashMap::new(),
            stats: ReadStats {
                lost: vec![Some(0); cpus],
                ..ReadStats::default()
            },
        }
    }

    fn current(&mut self, cpu: u32) -> &mut i32 {
        let i = cpu as usize;
        if self.current.len() <= i {
            let from = self.current.len();
            self.current.resize(i + 1, -1);
            for c in from..=i {
                self.current[c] = self.first.get(&(c as u32)).copied().unwrap_or(-1);
            }
        }
        &mut self.current[i]
    }
}

fn intern(texts: &mut HashMap<Vec<u8>, Text>, b: &[u8]) -> Text {
    if let Some(t) = texts.get(b) {
        return t.clone();
    }
    let t: Text = String::from_utf8_lossy(b).into();
    if texts.len() < MAX_INTERNED {
        texts.insert(b.to_vec(), t.clone());
    }
    t
}

impl EventSource for CtfEvents<'_> {
    fn next_event(&mut self) -> Result<Option<Event>> {
        let popped = self.merge.pop(&mut |_, _| true);
        self.stats.skipped = self.merge.skipped();
        let Some((i, item)) = popped? else {
            return Ok(None);
        };
        let r = &self.merge.readers[i];
        let (cpu, ts) = (r.cpu, r.ts);
        let ev = match (item, r.event) {
            (Item::Lost(n), _) => {
                if self.stats.lost.len() <= cpu as usize {
                    self.stats.lost.resize(cpu as usize + 1, Some(0));
                }
                if let Some(Some(l)) = self.stats.lost.get_mut(cpu as usize) {
                    *l = l.saturating_add(n);
                }
                return Ok(Some(Event {
                    ts,
                    cpu,
                    pid: -1,
                    flags: Flags::default(),
                    preempt_count: 0,
                    kind: EventKind::Lost { count: Some(n) },
                }));
            }
            (Item::Event, Some(ev)) => ev,
            (Item::Event, None) => return Ok(None),
        };
        let texts = &mut self.texts;
        let fields = Fields {
            dec: &r.dec,
            tops: &r.fields,
        };
        let kind = match lttng::kind(&ev.plan, &fields, &self.trace.compiled.flavor, &mut |b| {
            intern(texts, b)
        }) {
            Some(k) => k,
            None => EventKind::Other {
                name: ev.class.name.clone(),
                fields: if self.untyped {
                    super::raw::other_fields(ev, &r.dec, &r.fields)
                } else {
                    Vec::new()
                },
            },
        };
        let ctx_tid = match (r.stream().tid, ev.tid) {
            (Some(t), _) => Some(
                Fields {
                    dec: &r.dec,
                    tops: &r.stream_ctx,
                }
                .int(t) as i32,
            ),
            (None, Some(t)) => Some(
                Fields {
                    dec: &r.dec,
                    tops: &r.event_ctx,
                }
                .int(t) as i32,
            ),
            _ => None,
        };
        let pid = match (&kind, ctx_tid) {
            (_, Some(t)) => t,
            (
                EventKind::SchedSwitch {
                    prev_pid, next_pid, ..
                },
                None,
            ) => {
                *self.current(cpu) = *next_pid;
                *prev_pid
            }
            _ => *self.current(cpu),
        };
        Ok(Some(Event {
            ts,
            cpu,
            pid,
            flags: Flags::default(),
            preempt_count: 0,
            kind,
        }))
    }

    fn meta(&self) -> &TraceMeta {
        &self.trace.meta
    }

    fn stats(&self) -> &ReadStats {
        &self.stats
    }
}

/// The first pass: the statedump's task names, thread groups and IRQ names, and the
/// `prev_tid` of each CPU's first sched_switch. Only those events' fields are decoded;
/// the others are skipped (at once when their size is fixed). A trace that fails to
/// decode gives what was read before the failure (the events pass reports it).
/// The event that ends LTTng's state dump: no `lttng_statedump_*` event comes after it.
const STATEDUMP_END: &str = "lttng_statedump_end";

pub(crate) fn scan(t: &CtfTrace) -> Scan {
    let mut merge = Merge::new(t.readers());
    let mut s = Scan::default();
    let mut texts = HashMap::new();
    // It stops once the state dump is over (`lttng_statedump_end` read, or no state dump
    // event in the metadata) and every CPU's first switch is read: a trace's events
    // after that tell it nothing more.
    let classes = || t.compiled.streams.iter().flat_map(|st| st.events.iter());
    let mut dump_over = !classes().any(|ev| ev.statedump.is_some());
    let ends_dump = classes().any(|ev| &*ev.class.name == STATEDUMP_END);
    let cpus = t.meta.cpus.unwrap_or(0) as usize;
    loop {
        if dump_over && cpus > 0 && s.first.len() >= cpus {
            break;
        }
        let first = &s.first;
        let popped = merge.pop(&mut |ev, cpu| {
            ev.statedump.is_some()
                || (ends_dump && &*ev.class.name == STATEDUMP_END)
                || (matches!(ev.plan, Plan::Switch(_)) && !first.contains_key(&cpu))
        });
        let Ok(Some((i, Item::Event))) = popped else {
            match popped {
                Ok(Some(_)) => continue,
                _ => break,
            }
        };
        let r = &merge.readers[i];
        let Some(ev) = r.event else { continue };
        if &*ev.class.name == STATEDUMP_END {
            dump_over = true;
            continue;
        }
        let f = Fields {
            dec: &r.dec,
            tops: &r.fields,
        };
        if f.tops.is_empty() {
            continue;
        }
        match (&ev.statedump, &ev.plan) {
            (Some(Statedump::Process([tid, pid, name])), _) => {
                let tid = f.int(*tid) as i32;
                if tid != 0 {
                    s.names.insert(tid, Comm::from_bytes(f.text(*name)));
                    s.tgids.insert(tid, f.int(*pid) as i32);
                }
            }
            (Some(Statedump::Interrupt([irq, action])), _) => {
                s.irqs
                    .insert(f.int(*irq) as u32, intern(&mut texts, f.text(*action)));
            }
            (None, Plan::Switch([_, prev, ..])) => {
                s.first.entry(r.cpu).or_insert(f.int(*prev) as i32);
            }
            _ => {}
        }
    }
    s
}
