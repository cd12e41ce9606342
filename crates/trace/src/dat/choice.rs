//! Which buffer of a multi-buffer file (`trace-cmd record -B`, instances) the event
//! stream reads, and the note naming the buffers it leaves out.
//!
//! The rule: the buffer asked for by name (`""` or `top` for the top buffer, unless an
//! instance is called `top`); without a name, the top buffer when it holds any event,
//! else the buffer with the most events (the first in the file on a tie). Every other
//! buffer is counted (events and losses) so that the note can say what is not read.

use std::fmt;

use super::DatFile;
use crate::{Error, ErrorKind, Location, Result};

/// One buffer of a file, counted.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BufferSummary {
    /// The instance name; empty for the top buffer.
    pub name: String,
    /// Its records (loss markers not counted).
    pub events: u64,
    /// Events the kernel lost in it, all CPUs (`None`: some, count unknown).
    pub lost: Option<u64>,
}

impl BufferSummary {
    fn label(&self) -> String {
        if self.name.is_empty() {
            "the top buffer".into()
        } else {
            format!("buffer {}", self.name)
        }
    }
}

impl fmt::Display for BufferSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} events", self.label(), self.events)?;
        match self.lost {
            Some(0) => {}
            Some(n) => write!(f, ", {n} lost")?,
            None => write!(f, ", some lost")?,
        }
        f.write_str(")")
    }
}

/// The buffer the events come from, and the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferChoice {
    /// The index of the buffer read, in [`DatFile::buffers`].
    pub index: usize,
    /// The buffer read, counted (when the file has other buffers).
    pub read: Option<BufferSummary>,
    /// The buffers not read, counted.
    pub others: Vec<BufferSummary>,
    /// Chosen by name, not by the default rule.
    pub by_name: bool,
}

impl BufferChoice {
    /// The note for people when the default rule left out buffers that hold events or
    /// losses: which buffer is read, which are not, and how to choose.
    pub fn note(&self) -> Option<String> {
        if self.by_name
            || self
                .others
                .iter()
                .all(|o| o.events == 0 && o.lost == Some(0))
        {
            return None;
        }
        let read = self.read.as_ref()?;
        let others: Vec<String> = self.others.iter().map(|o| o.to_string()).collect();
        Some(format!(
            "reading {read}; not read: {} (choose with --buffer NAME; report --stats counts every buffer)",
            others.join(", ")
        ))
    }
}

impl DatFile<'_> {
    /// Chooses the buffer that [`DatFile::chosen_buffer`] then names: `name` (`""` or `top` for the
    /// top buffer), or by the default rule (see the module documentation). A name the file
    /// does not have is an [`ErrorKind::InvalidArgument`] listing the names it has.
    pub fn choose_buffer(&mut self, name: Option<&str>) -> Result<BufferChoice> {
        let index = match name {
            Some(n) => self
                .buffer_index(n)
                .or_else(|| (n == "top").then(|| self.buffer_index("")).flatten())
                .ok_or_else(|| {
                    let names: Vec<String> = self
                        .buffers()
                        .iter()
                        .map(|b| {
                            if b.name.is_empty() {
                                "top".to_string()
                            } else {
                                b.name.clone()
                            }
                        })
                        .collect();
                    Error::new(
                        ErrorKind::InvalidArgument,
                        self.name(),
                        Location::Whole,
                        format!(
                            "expected a buffer of the file ({}), found {n:?}",
                            names.join(", ")
                        ),
                    )
                })?,
            None => 0,
        };
        let mut choice = BufferChoice {
            index,
            read: None,
            others: Vec::new(),
            by_name: name.is_some(),
        };
        if self.buffers().len() > 1 {
            let mut all = Vec::new();
            for i in 0..self.buffers().len() {
                all.push(self.summary(i)?);
            }
            if name.is_none() {
                let top = self.buffer_index("").filter(|&i| all[i].events > 0);
                choice.index = top.unwrap_or_else(|| {
                    // The most events; the first on a tie.
                    let most = all.iter().map(|s| s.events).max().unwrap_or(0);
                    all.iter().position(|s| s.events == most).unwrap_or(0)
                });
            }
            for (i, s) in all.into_iter().enumerate() {
                if i == choice.index {
                    choice.read = Some(s);
                } else {
                    choice.others.push(s);
                }
            }
        }
        self.choice = Some(choice.clone());
        Ok(choice)
    }

    /// The buffer that [`DatFile::choose_buffer`] chose (0 until it is called).
    pub fn chosen_buffer(&self) -> usize {
        self.choice.as_ref().map_or(0, |c| c.index)
    }

    /// What [`DatFile::choose_buffer`] chose, once called.
    pub fn buffer_choice(&self) -> Option<&BufferChoice> {
        self.choice.as_ref()
    }

    /// Buffer `i`'s events and losses, counted without decoding.
    pub fn summary(&self, i: usize) -> Result<BufferSummary> {
        let c = self.count_events(i)?;
        let lost = c
            .per_cpu
            .iter()
            .try_fold(0u64, |a, p| Some(a.saturating_add(p.lost?)));
        Ok(BufferSummary {
            name: c.buffer,
            events: c.total,
            lost,
        })
    }
}
