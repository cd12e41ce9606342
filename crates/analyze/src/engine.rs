//! The engine: a trace read once, every consumer riding that one pass.
//!
//! [`pass`] takes an opened [`Trace`] (it opens nothing), reads the buffer the trace
//! chose once — a .dat decoded in a second thread, overlapped with the consumers —
//! hands each event to the raw consumer (a writer of events, a fold over raw events,
//! a progress count), then to the state machine, run once with the trace's thread
//! groups and saved task names; the machine's derived intervals go to one [`Sink`]
//! (several behind it: a tuple of sinks is a sink, see [`crate::Sink`]). `analyze`,
//! `view`, `convert`, `export`, the experiment runner and the audit all read their
//! traces through it, each asking everything it wants of a trace in one pass.
//!
//! ```
//! use std::ops::ControlFlow;
//! use jitterlab_analyze::engine::{pass, PassOptions, Tables};
//! use jitterlab_analyze::Collect;
//! use jitterlab_trace::Trace;
//!
//! let text = "  cat-1 [000] 1.000000: sched_waking: comm=cat pid=2 prio=120 target_cpu=000\n\
//!             <idle>-0 [000] 1.000005: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=cat next_pid=2 next_prio=120\n";
//! let dir = std::env::temp_dir().join(format!("jl-engine-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("t.txt");
//! std::fs::write(&path, text)?;
//! let trace = Trace::open(&path, false)?;
//! let mut first = None;
//! let mut out = Collect::default();
//! let p = pass(&trace, &Tables::of(&trace), &PassOptions::default(), &mut |ev| {
//!     first.get_or_insert(ev.ts);
//!     ControlFlow::Continue(())
//! }, &mut out)?;
//! assert_eq!((p.events, first), (2, Some(1_000_000_000)));
//! assert_eq!(out.wakes[0].latency(), 5_000);
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::ops::ControlFlow;

use jitterlab_trace::{Comm, Event, EventSource, ReadStats, Trace, TraceMeta};

use crate::sink::Sink;
use crate::state::{Machine, MachineOptions};

/// What a trace records besides its events that the machine and the analyses use:
/// its thread groups and saved task names. Read once per trace ([`Tables::of`]: for an
/// ftrace text trace that is a scan of the whole file) and handed to the pass and to
/// every [`crate::Report`] riding it.
#[derive(Clone, Debug, Default)]
pub struct Tables {
    /// Thread group ids by tid ([`Trace::tgids`]).
    pub tgids: HashMap<i32, i32>,
    /// Saved task names by tid ([`Trace::cmdlines`]).
    pub names: HashMap<i32, Comm>,
}

impl Tables {
    /// The tables `trace` records.
    pub fn of(trace: &Trace) -> Tables {
        Tables {
            tgids: trace.tgids(),
            names: trace.cmdlines(),
        }
    }
}

/// Settings of a pass.
#[derive(Clone, Debug)]
pub struct PassOptions {
    /// A stretch longer than this with no event on a CPU is a gap, ns.
    pub gap_ns: u64,
    /// Run the state machine (false: only the raw consumer sees the events, for one that
    /// needs no intervals; the sink then gets nothing).
    pub machine: bool,
    /// Build the fields of the events without a type of their own
    /// ([`jitterlab_trace::EventKind::Other`]; false: their names only, for consumers
    /// that never read their fields, where the reader can spare them: an LTTng trace's).
    pub untyped_fields: bool,
}

impl Default for PassOptions {
    fn default() -> Self {
        PassOptions {
            gap_ns: MachineOptions::default().gap_ns,
            machine: true,
            untyped_fields: true,
        }
    }
}

/// What a pass leaves besides what its consumers folded.
pub struct Pass {
    /// The machine after the pass: its tasks, IRQ names and counts (one that saw
    /// nothing when [`PassOptions::machine`] was false).
    pub machine: Machine,
    /// The source's meta data.
    pub meta: TraceMeta,
    /// The reader's counters (lost events per CPU...).
    pub stats: ReadStats,
    /// The events read (those up to where the raw consumer stopped the pass).
    pub events: u64,
}

/// Reads `trace` once: each event of its chosen buffer, in time order, to `raw` (which
/// may end the pass early with [`ControlFlow::Break`]; the event it stopped at goes no
/// further), then to the state machine, built with the trace's `tables`, whose
/// intervals go to `sink`.
pub fn pass(
    trace: &Trace,
    tables: &Tables,
    options: &PassOptions,
    raw: &mut dyn FnMut(&Event) -> ControlFlow<()>,
    sink: &mut dyn Sink,
) -> jitterlab_trace::Result<Pass> {
    let mut machine = if options.machine {
        Machine::new(MachineOptions {
            gap_ns: options.gap_ns,
            tgids: tables.tgids.clone(),
            names: tables.names.clone(),
        })
    } else {
        Machine::new(MachineOptions::default())
    };
    let run = options.machine;
    let mut go =
        |source: &mut dyn EventSource| pass_source(source, run.then_some(&mut machine), raw, sink);
    let (events, meta, stats) = match trace {
        Trace::Dat(d) => jitterlab_trace::read_ahead(d.events(d.chosen_buffer())?, go)?,
        Trace::Ctf(c) => jitterlab_trace::read_ahead(c.events_with(options.untyped_fields)?, go)?,
        _ => go(&mut *trace.events()?)?,
    };
    Ok(Pass {
        machine,
        meta,
        stats,
        events,
    })
}

/// The pass over an [`EventSource`] (a trace's events, or events made in memory):
/// each event to `raw`, then to `machine` (when given), its intervals to `sink`; the
/// events read, the source's meta data and its counters at the end.
pub fn pass_source(
    source: &mut dyn EventSource,
    mut machine: Option<&mut Machine>,
    raw: &mut dyn FnMut(&Event) -> ControlFlow<()>,
    sink: &mut dyn Sink,
) -> jitterlab_trace::Result<(u64, TraceMeta, ReadStats)> {
    let mut events = 0u64;
    // Each event is used where the source holds it (EventSource::each_event).
    source.each_event(&mut |ev| {
        events += 1;
        raw(ev)?;
        if let Some(m) = machine.as_deref_mut() {
            m.feed(ev, sink);
        }
        ControlFlow::Continue(())
    })?;
    if let Some(m) = machine {
        m.finish(sink);
    }
    Ok((events, source.meta().clone(), source.stats().clone()))
}

/// A raw consumer that wants nothing.
pub fn no_raw(_: &Event) -> ControlFlow<()> {
    ControlFlow::Continue(())
}
