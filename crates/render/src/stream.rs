//! `jitterlab report`'s event stream: the events an [`EventFilter`] keeps, one line each as
//! `trace-cmd report` prints them, or one JSON object each.

use std::io::{self, Write};

use jitterlab_analyze::EventFilter;
use jitterlab_trace::lines::Lines;
use jitterlab_trace::{EventKind, EventSource};

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
    /// Writing the JSON lines failed, where they go beside the text (`--json=FILE`).
    #[error(transparent)]
    WriteJson(io::Error),
}

/// Where [`write_events`] writes: the lines of text, one JSON object per line, or both
/// (`report --json=FILE`), in the same pass.
pub struct EventOutputs<'a> {
    /// The lines as `trace-cmd report` prints them.
    pub text: Option<&'a mut dyn Write>,
    /// One JSON object per event.
    pub json: Option<&'a mut dyn Write>,
}

/// Writes every event of `source` that `filter` keeps, as a line (task names, record
/// texts and buffer names from `lines`, whose names learn from every event, kept or not;
/// a .dat's text starts with its `cpus=N` line), as one JSON object per line, or both;
/// stops after the window's end. A loss is printed before the next line of its CPU and
/// buffer, as trace-cmd prints it. Returns the records or lines the reader skipped
/// (`--lenient`).
pub fn write_events(
    source: &mut dyn EventSource,
    filter: &EventFilter,
    mut lines: Lines,
    outputs: EventOutputs<'_>,
) -> Result<u64, StreamError> {
    let EventOutputs { mut text, mut json } = outputs;
    if let (Some(out), Some(n)) = (text.as_mut(), lines.cpus) {
        writeln!(out, "cpus={n}")?;
    }
    let width = lines.buffers.iter().map(String::len).max().unwrap_or(0);
    // Losses waiting for the next event of their (buffer, CPU).
    let mut pending: Vec<(usize, u32, Option<u64>)> = Vec::new();
    let mut info = Vec::new();
    let mut line_buf = Vec::with_capacity(256);
    while let Some(ev) = source.next_event()? {
        lines.names.learn(&ev);
        if filter.filter.past_window(ev.ts) {
            break;
        }
        if !filter.wants(&ev) {
            continue;
        }
        let (buffer, record) = match source.origin() {
            Some(o) => (o.buffer, o.record),
            None => (0, &[][..]),
        };
        let buffer_name = (!lines.buffers.is_empty())
            .then(|| (lines.buffers.get(buffer).map_or("", String::as_str), width));
        if let Some(out) = json.as_mut() {
            let printer = lines.printer.as_mut().filter(|_| !record.is_empty());
            let untyped = printer
                .map(|p| p.untyped_fields(record))
                .unwrap_or_default();
            let line = EventLine {
                buffer: buffer_name,
                untyped: &untyped,
                ..EventLine::new(&ev, lines.names.get(ev.pid))
            };
            EventsJson
                .write(&line, out)
                .map_err(StreamError::WriteJson)?;
        }
        let Some(out) = text.as_mut() else {
            continue;
        };
        let printer = lines.printer.as_mut().filter(|_| !record.is_empty());
        if let EventKind::Lost { count } = ev.kind {
            pending.push((buffer, ev.cpu, count));
            continue;
        }
        let dropped = pending
            .iter()
            .position(|p| (p.0, p.1) == (buffer, ev.cpu))
            .map(|i| pending.remove(i).2);
        info.clear();
        let printed = match printer {
            Some(p) => {
                p.print(record, &mut info);
                true
            }
            None => false,
        };
        let name = if printed {
            lines.printer.as_ref().and_then(|p| p.name(record))
        } else {
            None
        };
        let line = EventLine {
            name,
            info: printed.then_some(&info[..]),
            buffer: buffer_name,
            dropped,
            seconds: lines.seconds,
            ..EventLine::new(&ev, lines.names.get(ev.pid))
        };
        Events.write_with(&line, &mut line_buf, out)?;
    }
    if let Some(out) = json.as_mut() {
        out.flush().map_err(StreamError::WriteJson)?;
    }
    let Some(out) = text.as_mut() else {
        return Ok(source.stats().skipped);
    };
    // Losses no event of their CPU followed.
    for (buffer, cpu, count) in pending {
        let ev = jitterlab_trace::Event {
            ts: 0,
            cpu,
            pid: -1,
            flags: Default::default(),
            preempt_count: 0,
            kind: EventKind::Lost { count },
        };
        let buffer_name = (!lines.buffers.is_empty())
            .then(|| (lines.buffers.get(buffer).map_or("", String::as_str), width));
        let line = EventLine {
            buffer: buffer_name,
            ..EventLine::new(&ev, "")
        };
        Events.write(&line, out)?;
    }
    out.flush()?;
    Ok(source.stats().skipped)
}
