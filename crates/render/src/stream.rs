//! `jitterlab report`'s event stream: the events an [`EventFilter`] keeps, one line each as
//! `trace-cmd report` prints them, or one JSON object each.

use std::io::{self, Write};

use jitterlab_analyze::EventFilter;
use jitterlab_trace::stats::TaskNames;
use jitterlab_trace::EventSource;

use crate::export::{EventLine, Events, EventsJson, Exporter};

/// Why the stream stopped early.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// Reading the trace failed.
    #[error(transparent)]
    Read(#[from] jitterlab_trace::Error),
    /// Writing failed (a closed pipe: `jitterlab report ... | head`).
    #[error(transparent)]
    Write(#[from] io::Error),
}

/// Writes every event of `source` that `filter` keeps, as a line (task names from
/// `names`, which learns from every event, kept or not) or, with `json`, as one JSON
/// object per line; stops after the window's end. Returns the records or lines the
/// reader skipped (`--lenient`).
pub fn write_events(
    source: &mut dyn EventSource,
    filter: &EventFilter,
    mut names: TaskNames,
    json: bool,
    out: &mut dyn Write,
) -> Result<u64, StreamError> {
    while let Some(ev) = source.next_event()? {
        names.learn(&ev);
        if filter.filter.past_window(ev.ts) {
            break;
        }
        if !filter.wants(&ev) {
            continue;
        }
        let line = EventLine {
            event: &ev,
            comm: names.get(ev.pid),
        };
        if json {
            EventsJson.write(&line, out)?;
        } else {
            Events.write(&line, out)?;
        }
    }
    out.flush()?;
    Ok(source.stats().skipped)
}
