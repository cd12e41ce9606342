//! The text readers against real captures (the same buffer as the kernel printed it and as
//! `trace-cmd report` printed it) and hand-made function_graph text; see
//! tests/data/text/README.md for where each file comes from.

#[path = "text/captures.rs"]
mod captures;
#[path = "text/errors.rs"]
mod errors;
#[path = "text/ftrace.rs"]
mod ftrace;
#[path = "text/function_graph.rs"]
mod function_graph;
#[path = "text/hostile.rs"]
mod hostile;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use jitterlab_trace::text::{
    self, detect, FgraphReader, FtraceReader, TextKind, TextOptions, GRAPH_IRQ_ENTRY,
    GRAPH_IRQ_EXIT, GRAPH_TASK_SWITCH, KERNEL_STACK,
};
use jitterlab_trace::{
    Comm, ErrorKind, Event, EventKind, EventSource, Flags, Location, ReadStats, Sym, TaskState,
    TraceMeta, Value, Wakeup,
};

pub(crate) const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/text");

pub(crate) fn data(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(DATA).join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub(crate) struct Read {
    pub(crate) events: Vec<Event>,
    pub(crate) stats: ReadStats,
    pub(crate) meta: TraceMeta,
}

pub(crate) fn drain(r: &mut dyn EventSource) -> jitterlab_trace::Result<Read> {
    let mut events = Vec::new();
    while let Some(e) = r.next_event()? {
        events.push(e);
    }
    Ok(Read {
        events,
        stats: r.stats().clone(),
        meta: r.meta().clone(),
    })
}

pub(crate) fn read_with(
    bytes: &[u8],
    kind: TextKind,
    opts: TextOptions,
) -> jitterlab_trace::Result<Read> {
    drain(&mut *text::open(bytes, kind, opts)?)
}

/// Detects the kind and reads strictly; panics on errors.
pub(crate) fn read(name: &str) -> Read {
    let bytes = data(name);
    let kind = detect(&bytes).unwrap_or_else(|| panic!("{name}: not detected"));
    read_with(&bytes, kind, TextOptions::named(name)).unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) fn counts_by_name(events: &[Event]) -> BTreeMap<String, usize> {
    let mut c = BTreeMap::new();
    for e in events {
        *c.entry(e.kind.name().to_string()).or_default() += 1;
    }
    c
}

pub(crate) fn counts_by_cpu(events: &[Event]) -> BTreeMap<u32, usize> {
    let mut c = BTreeMap::new();
    for e in events {
        *c.entry(e.cpu).or_default() += 1;
    }
    c
}

pub(crate) fn assert_time_ordered(events: &[Event]) {
    for w in events.windows(2) {
        assert!(
            w[0].ts <= w[1].ts,
            "out of order: {:?} then {:?}",
            w[0],
            w[1]
        );
    }
}

pub(crate) fn find(events: &[Event], pred: impl Fn(&Event) -> bool) -> &Event {
    events.iter().find(|e| pred(e)).expect("no such event")
}
