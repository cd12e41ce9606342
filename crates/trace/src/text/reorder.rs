//! The output side shared by the text readers: a bounded reorder buffer that releases events
//! in time order, and the lost-event bookkeeping.

use std::collections::VecDeque;

use super::lines::LineError;
use crate::stats::{BufferStat, CpuStat};
use crate::{ErrorKind, Event, EventKind, Flags, ReadStats};

/// The highest CPU number accepted (the kernel's largest `NR_CPUS` is 8192).
pub(crate) const MAX_CPU: u32 = 8191;

/// The most buffer names a text may give (`trace-cmd report` of several buffers); a
/// trace-cmd recording has a handful.
pub(crate) const MAX_BUFFERS: usize = 1024;

/// Events waiting to be put in time order, lost-event markers waiting for the event that
/// ends their gap, and the reader's counters.
pub(crate) struct Output {
    buf: VecDeque<Event>,
    window: usize,
    /// The timestamp of the last event released; nothing older can be released after it.
    released: Option<u64>,
    /// Per CPU: a `CPU:N [LOST ...]` line seen and not yet placed (`Some(count)`).
    pending_lost: Vec<Option<Option<u64>>>,
    /// Per CPU: the last timestamp pushed, to place a trailing lost marker.
    last_ts: Vec<u64>,
    /// The input went idle since the last push: everything waiting may be handed out.
    idle: bool,
    /// The top buffer's counts while the text has named no buffer (then they move to
    /// `stats.buffers[0]`).
    top: BufferStat,
    /// The buffer the line being read belongs to: an index into `stats.buffers` (0, the
    /// top buffer, while it is empty).
    buffer: usize,
    pub(crate) stats: ReadStats,
}

impl Output {
    pub(crate) fn new(window: usize) -> Self {
        Output {
            buf: VecDeque::new(),
            window,
            released: None,
            pending_lost: Vec::new(),
            last_ts: Vec::new(),
            idle: false,
            top: BufferStat {
                lost: Some(0),
                ..BufferStat::default()
            },
            buffer: 0,
            stats: ReadStats::default(),
        }
    }

    /// The lines that follow belong to buffer `name` (`trace-cmd report` of several
    /// buffers: `NAME: ` before the line), or to the top buffer (`None`, or `""`). Fails past
    /// [`MAX_BUFFERS`] names.
    pub(crate) fn set_buffer(&mut self, name: Option<&str>) -> Result<(), LineError> {
        let name = name.unwrap_or("");
        if name.is_empty() {
            self.buffer = 0;
            return Ok(());
        }
        if self.stats.buffers.is_empty() {
            self.stats.buffers.push(std::mem::take(&mut self.top));
        }
        self.buffer = match self.stats.buffers.iter().position(|b| b.name == name) {
            Some(i) => i,
            None if self.stats.buffers.len() > MAX_BUFFERS => {
                return Err(LineError::limit(format!(
                    "expected at most {MAX_BUFFERS} buffer names"
                )))
            }
            None => {
                self.stats.buffers.push(BufferStat {
                    name: name.to_string(),
                    lost: Some(0),
                    ..BufferStat::default()
                });
                self.stats.buffers.len() - 1
            }
        };
        Ok(())
    }

    /// The counts of `cpu` in the current buffer.
    fn buffer_cpu(&mut self, cpu: u32) -> (&mut BufferStat, usize) {
        let b = if self.stats.buffers.is_empty() {
            &mut self.top
        } else {
            &mut self.stats.buffers[self.buffer]
        };
        let i = match b.per_cpu.binary_search_by_key(&cpu, |c| c.cpu) {
            Ok(i) => i,
            Err(i) => {
                b.per_cpu.insert(
                    i,
                    CpuStat {
                        cpu,
                        lost: Some(0),
                        ..CpuStat::default()
                    },
                );
                i
            }
        };
        (b, i)
    }

    /// Sets the number of CPUs when a header tells it: every CPU gets a lost count of 0.
    pub(crate) fn set_cpus(&mut self, cpus: u32) {
        let n = cpus.min(MAX_CPU + 1) as usize;
        if self.stats.lost.len() < n {
            self.stats.lost.resize(n, Some(0));
        }
    }

    /// Records `count` lost events on `cpu` (`None`: an unknown number).
    pub(crate) fn lost(&mut self, cpu: u32, count: Option<u64>) {
        let c = cpu as usize;
        if self.stats.lost.len() <= c {
            self.stats.lost.resize(c + 1, Some(0));
        }
        let slot = &mut self.stats.lost[c];
        *slot = match (*slot, count) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
        if self.pending_lost.len() <= c {
            self.pending_lost.resize(c + 1, None);
        }
        self.pending_lost[c] = Some(match (self.pending_lost[c], count) {
            (None, n) => n,
            (Some(Some(a)), Some(b)) => Some(a.saturating_add(b)),
            (Some(_), _) => None,
        });
        let (b, i) = self.buffer_cpu(cpu);
        add_lost(&mut b.per_cpu[i].lost, count);
        add_lost(&mut b.lost, count);
    }

    /// Queues `ev` (after the lost marker its CPU may be waiting for). Fails, giving the
    /// event's time, if it is older than an event already released.
    pub(crate) fn push(&mut self, ev: Event) -> Result<(), LineError> {
        self.check(ev.ts)?;
        self.idle = false;
        let c = ev.cpu as usize;
        if let Some(Some(count)) = self.pending_lost.get_mut(c).map(Option::take) {
            self.insert(Event {
                kind: EventKind::Lost { count },
                flags: Flags(0),
                preempt_count: 0,
                ..ev
            });
        }
        if self.last_ts.len() <= c {
            self.last_ts.resize(c + 1, 0);
        }
        self.last_ts[c] = self.last_ts[c].max(ev.ts);
        let (b, i) = self.buffer_cpu(ev.cpu);
        b.total += 1;
        let cs = &mut b.per_cpu[i];
        cs.events += 1;
        cs.first_ts = Some(cs.first_ts.map_or(ev.ts, |t| t.min(ev.ts)));
        cs.last_ts = Some(cs.last_ts.map_or(ev.ts, |t| t.max(ev.ts)));
        self.insert(ev);
        Ok(())
    }

    /// Fails if an event at `ts` could no longer be placed in time order.
    pub(crate) fn check(&self, ts: u64) -> Result<(), LineError> {
        match self.released {
            Some(r) if ts < r => Err(LineError::new(
                ErrorKind::OutOfOrder,
                format!(
                    "expected time order: {ts} ns is before {r} ns, already passed on (the input \
                 is out of order by more than the reorder window of {} events)",
                    self.window
                ),
            )),
            _ => Ok(()),
        }
    }

    fn insert(&mut self, ev: Event) {
        match self.buf.back() {
            Some(last) if last.ts > ev.ts => {
                let at = self.buf.partition_point(|e| e.ts <= ev.ts);
                self.buf.insert(at, ev);
            }
            _ => self.buf.push_back(ev),
        }
    }

    /// Gives `pid` to the waiting events of `cpu` whose pid was not known (-1): a
    /// function_graph task-switch line names the task that ran before it.
    pub(crate) fn name_unknown_pid(&mut self, cpu: u32, pid: i32) {
        for e in self.buf.iter_mut().filter(|e| e.cpu == cpu && e.pid == -1) {
            e.pid = pid;
        }
    }

    /// The input went idle (a stream waits for its writer): the events waiting are handed
    /// out rather than held for a window that may not fill for a long time. An event
    /// older than these that arrives later is out of order (an error, or skipped).
    pub(crate) fn idle(&mut self) {
        self.idle = true;
    }

    /// The oldest event, if more than the window are waiting (or the input went idle).
    pub(crate) fn pop_ready(&mut self) -> Option<Event> {
        if self.buf.len() > self.window || (self.idle && !self.buf.is_empty()) {
            self.pop()
        } else {
            None
        }
    }

    /// At the end of the input: places lost markers no event followed, then releases
    /// everything, oldest first.
    pub(crate) fn pop_final(&mut self) -> Option<Event> {
        for c in 0..self.pending_lost.len() {
            if let Some(count) = self.pending_lost[c].take() {
                let ts = self.last_ts.get(c).copied().unwrap_or(0);
                let ts = ts.max(self.released.unwrap_or(0));
                self.insert(Event {
                    ts,
                    cpu: c as u32,
                    pid: -1,
                    flags: Flags(0),
                    preempt_count: 0,
                    kind: EventKind::Lost { count },
                });
            }
        }
        self.pop()
    }

    fn pop(&mut self) -> Option<Event> {
        let ev = self.buf.pop_front()?;
        self.released = Some(ev.ts);
        Some(ev)
    }
}

/// `slot + more`, saturating; unknown (`None`) once either is.
fn add_lost(slot: &mut Option<u64>, more: Option<u64>) {
    *slot = match (*slot, more) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        _ => None,
    };
}
