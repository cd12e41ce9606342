//! What a trace's event lines show besides the events, as `trace-cmd report` shows them
//! ([`Lines`]): the `cpus=N` line a .dat's text starts with, the task names, the text of
//! a record's fields (its print format, [`Printer`]), the buffer names of a file's
//! several buffers, and whether timestamps print as seconds.

use crate::printfmt::Printer;
use crate::stats::TaskNames;
use crate::Trace;

/// See the module documentation.
pub struct Lines {
    /// The `cpus=N` line that starts a .dat's text (none for text traces).
    pub cpus: Option<u32>,
    /// The task names: a .dat's saved cmdlines only, as trace-cmd names tasks (`<idle>`
    /// for 0, `<...>` for a task they do not name); of a text trace, learnt from its
    /// events.
    pub names: TaskNames,
    /// The text of a .dat record's fields ([`Printer::print`]); `None` for text traces,
    /// whose events are printed from their decoded fields.
    pub printer: Option<Printer>,
    /// When the lines mix several buffers of a .dat, the buffers' names by index (`""`
    /// for the top buffer), which prefix each line; empty otherwise.
    pub buffers: Vec<String>,
    /// The trace clock counts nanoseconds, printed as seconds with six decimals (`local`,
    /// `global`, `uptime`, `perf`, `mono*`, `tai`, or no clock named): trace-cmd prints any
    /// other clock's (`counter`, `x86-tsc`, `boot`) timestamps as they are.
    pub seconds: bool,
}

/// The clocks trace-cmd prints as seconds (`tracecmd_parse_trace_clock`).
pub fn clock_in_seconds(clock: Option<&str>) -> bool {
    match clock {
        None => true,
        Some(c) => {
            matches!(
                c,
                "local" | "global" | "uptime" | "perf" | "tai" | "tsc2nsec"
            ) || c.starts_with("mono")
        }
    }
}

impl Trace {
    /// What the lines of [`Trace::printed_events`] show besides the events.
    pub fn lines(&self) -> Lines {
        match self {
            Trace::Dat(d) => {
                let buffers = if self.prints_every_buffer() && d.buffers().len() > 1 {
                    d.buffers().iter().map(|b| b.name.clone()).collect()
                } else {
                    Vec::new()
                };
                Lines {
                    cpus: Some(d.info().cpus),
                    names: TaskNames::saved(d.cmdlines()),
                    printer: Some(d.printer()),
                    buffers,
                    seconds: clock_in_seconds(d.info().clock.as_deref()),
                }
            }
            Trace::Ctf(c) => Lines {
                cpus: c.meta().cpus,
                names: TaskNames::new(c.cmdlines()),
                printer: None,
                buffers: Vec::new(),
                seconds: true,
            },
            Trace::Text { .. } => Lines {
                cpus: None,
                names: TaskNames::new(self.cmdlines()),
                printer: None,
                buffers: Vec::new(),
                seconds: true,
            },
        }
    }

    /// A .dat whose buffer was not named when it was opened: `report` prints every
    /// buffer, merged, as `trace-cmd report` does.
    fn prints_every_buffer(&self) -> bool {
        match self {
            Trace::Dat(d) => !d.buffer_choice().is_some_and(|c| c.by_name),
            Trace::Text { .. } | Trace::Ctf(_) => false,
        }
    }

    /// The events `report` prints: of a .dat, every buffer merged in time order (the one
    /// named when it was opened, if any), each event's record kept for [`Lines::printer`];
    /// of a text trace, its events ([`Trace::events`]).
    pub fn printed_events(&self) -> crate::Result<Box<dyn crate::EventSource + '_>> {
        match self {
            Trace::Dat(d) => {
                let buffers: Vec<usize> = if self.prints_every_buffer() {
                    (0..d.buffers().len()).collect()
                } else {
                    vec![d.chosen_buffer()]
                };
                let mut events = d.events_of(&buffers)?;
                events.keep_records();
                Ok(Box::new(events))
            }
            Trace::Text { .. } | Trace::Ctf(_) => self.events(),
        }
    }

    /// Whether [`Trace::printed_events`] reads every buffer of a .dat with several.
    pub fn prints_several_buffers(&self) -> bool {
        matches!(self, Trace::Dat(d) if d.buffers().len() > 1) && self.prints_every_buffer()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clocks_trace_cmd_prints_as_seconds() {
        use super::clock_in_seconds as s;
        assert!(s(None) && s(Some("local")) && s(Some("mono_raw")) && s(Some("tai")));
        assert!(!s(Some("counter")) && !s(Some("boot")) && !s(Some("x86-tsc")));
    }
}
