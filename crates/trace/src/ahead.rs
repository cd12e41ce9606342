//! Reading ahead: an event source read and decoded in a second thread and handed over in
//! batches, so that reading a trace overlaps what the consumer does with its events (the
//! analyses). The consumer sees the same events in the same order, and an error after the
//! same events.

use std::ops::ControlFlow;
use std::sync::mpsc::{sync_channel, Receiver};

use crate::{Event, EventSource, ReadStats, Result, TraceMeta};

/// Events per batch handed over.
const BATCH: usize = 4096;
/// Batches read ahead at most.
const DEPTH: usize = 4;

/// A batch, with the reader's counters once it was read.
type Batch = Result<(Vec<Event>, ReadStats)>;

/// Runs `consume` on the events of `source`, which is read in a second thread meanwhile;
/// returns what `consume` returns. [`EventSource::stats`] of the source given to
/// `consume` is the reader's as of the last batch handed over (at the end: the reader's
/// final counts). With one CPU to run on (`taskset -c 0`), `source` is read in this
/// thread: a second one would only add switches (measured: 20 % slower).
pub fn read_ahead<S, R>(mut source: S, consume: impl FnOnce(&mut dyn EventSource) -> R) -> R
where
    S: EventSource + Send,
{
    if !std::thread::available_parallelism().is_ok_and(|n| n.get() > 1) {
        return consume(&mut source);
    }
    let meta = source.meta().clone();
    let stats = source.stats().clone();
    std::thread::scope(|scope| {
        let (tx, rx) = sync_channel::<Batch>(DEPTH);
        scope.spawn(move || {
            loop {
                let mut events = Vec::with_capacity(BATCH);
                let end = match source.fill(&mut events, BATCH) {
                    Ok(more) => !more,
                    Err(e) => {
                        // The events before the error first, as the reader gives them.
                        let _ = tx.send(Ok((events, source.stats().clone())));
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                // A closed channel: the consumer stopped early.
                if tx.send(Ok((events, source.stats().clone()))).is_err() || end {
                    return;
                }
            }
        });
        let mut ahead = Ahead {
            rx,
            batch: Vec::new().into_iter(),
            meta,
            stats,
        };
        consume(&mut ahead)
        // Dropping `ahead` closes the channel: a reader still going stops at its next batch.
    })
}

/// Puts the calling thread at the lowest priority (nice 19), for work beside a pass that
/// need not be done before the pass is: compressing what it made (the HTML report's
/// chunks, the Parquet tables' batches). The .dat reader and the analysis keep two CPUs
/// about busy; such a thread at the normal priority takes its share of them, where at
/// nice 19 it runs when they wait (BENCHMARKS.md). Linux sets a thread's nice value by
/// its tid; where that fails the thread keeps its priority.
pub fn lowest_priority() {
    // SAFETY: gettid and setpriority take no pointers; `who` is this thread.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
    }
}

/// The consumer's side.
struct Ahead {
    rx: Receiver<Batch>,
    batch: std::vec::IntoIter<Event>,
    meta: TraceMeta,
    stats: ReadStats,
}

impl Ahead {
    /// The next batch, once this one is done; `false` at the end.
    fn refill(&mut self) -> Result<bool> {
        // A closed channel is the end: the reader sent its last batch and stopped.
        let Ok(batch) = self.rx.recv() else {
            return Ok(false);
        };
        let (events, stats) = batch?;
        self.stats = stats;
        self.batch = events.into_iter();
        Ok(true)
    }
}

impl EventSource for Ahead {
    fn next_event(&mut self) -> Result<Option<Event>> {
        loop {
            if let Some(ev) = self.batch.next() {
                return Ok(Some(ev));
            }
            if !self.refill()? {
                return Ok(None);
            }
        }
    }

    fn each_event(&mut self, each: &mut dyn FnMut(&Event) -> ControlFlow<()>) -> Result<()> {
        loop {
            let mut lent = 0;
            let mut stop = false;
            for ev in self.batch.as_slice() {
                lent += 1;
                if each(ev).is_break() {
                    stop = true;
                    break;
                }
            }
            // The events lent are done with; the rest stay for the next call.
            if lent > 0 {
                self.batch.nth(lent - 1);
            }
            if stop || !self.refill()? {
                return Ok(());
            }
        }
    }

    fn meta(&self) -> &TraceMeta {
        &self.meta
    }

    fn stats(&self) -> &ReadStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, ErrorKind, EventKind, Location};

    /// `n` events, then an error when `fail`.
    struct Numbers {
        next: u64,
        n: u64,
        fail: bool,
        meta: TraceMeta,
        stats: ReadStats,
    }

    impl EventSource for Numbers {
        fn next_event(&mut self) -> Result<Option<Event>> {
            if self.next == self.n {
                if self.fail {
                    return Err(Error::new(
                        ErrorKind::Io,
                        "numbers",
                        Location::Offset(self.n),
                        "a test",
                    ));
                }
                self.stats.skipped = 7;
                return Ok(None);
            }
            self.next += 1;
            Ok(Some(Event {
                ts: self.next,
                cpu: 0,
                pid: 1,
                flags: Default::default(),
                preempt_count: 0,
                kind: EventKind::Lost { count: None },
            }))
        }
        fn meta(&self) -> &TraceMeta {
            &self.meta
        }
        fn stats(&self) -> &ReadStats {
            &self.stats
        }
    }

    fn numbers(n: u64, fail: bool) -> Numbers {
        Numbers {
            next: 0,
            n,
            fail,
            meta: TraceMeta::default(),
            stats: ReadStats::default(),
        }
    }

    #[test]
    fn same_events_in_order_then_the_final_stats() {
        let n = BATCH as u64 * 3 + 5;
        let (ts, skipped) = read_ahead(numbers(n, false), |s| {
            let mut ts = Vec::new();
            while let Some(ev) = s.next_event().unwrap() {
                ts.push(ev.ts);
            }
            (ts, s.stats().skipped)
        });
        assert_eq!(ts, (1..=n).collect::<Vec<_>>());
        assert_eq!(skipped, 7);
    }

    #[test]
    fn an_error_comes_after_the_events_before_it() {
        let n = BATCH as u64 + 10;
        let (seen, err) = read_ahead(numbers(n, true), |s| {
            let mut seen = 0;
            loop {
                match s.next_event() {
                    Ok(Some(_)) => seen += 1,
                    Ok(None) => return (seen, None),
                    Err(e) => return (seen, Some(e)),
                }
            }
        });
        assert_eq!(seen, n);
        let err = err.expect("the source's error");
        assert_eq!(
            (err.kind, err.location),
            (ErrorKind::Io, Location::Offset(n))
        );
    }

    #[test]
    fn events_lent_are_the_events_read_and_a_break_leaves_the_rest() {
        let n = BATCH as u64 * 2 + 9;
        let stop = BATCH as u64 + 3;
        let (lent, then, rest, skipped) = read_ahead(numbers(n, false), |s| {
            let mut lent = Vec::new();
            s.each_event(&mut |ev| {
                lent.push(ev.ts);
                if ev.ts == stop {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
            // The event after the one that broke comes next, whichever way is asked.
            let then = s.next_event().unwrap().map(|e| e.ts);
            let mut rest = Vec::new();
            s.each_event(&mut |ev| {
                rest.push(ev.ts);
                ControlFlow::Continue(())
            })
            .unwrap();
            (lent, then, rest, s.stats().skipped)
        });
        assert_eq!(lent, (1..=stop).collect::<Vec<_>>());
        assert_eq!(then, Some(stop + 1));
        assert_eq!(rest, (stop + 2..=n).collect::<Vec<_>>());
        assert_eq!(skipped, 7);
    }

    #[test]
    fn a_source_read_here_lends_the_same_events() {
        // The trait's own each_event (a reader not read ahead: one CPU, or text).
        let mut source = numbers(10, false);
        let mut lent = Vec::new();
        source
            .each_event(&mut |ev| {
                lent.push(ev.ts);
                if ev.ts == 4 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
        assert_eq!(lent, [1, 2, 3, 4]);
        assert_eq!(source.next_event().unwrap().map(|e| e.ts), Some(5));
    }

    #[test]
    fn events_lent_end_at_the_error_after_them() {
        let n = BATCH as u64 + 10;
        let mut lent = 0;
        let err = read_ahead(numbers(n, true), |s| {
            s.each_event(&mut |_| {
                lent += 1;
                ControlFlow::Continue(())
            })
        })
        .expect_err("the source's error");
        assert_eq!(lent, n);
        assert_eq!(
            (err.kind, err.location),
            (ErrorKind::Io, Location::Offset(n))
        );
    }

    #[test]
    fn a_consumer_may_stop_early() {
        let first = read_ahead(numbers(1 << 20, false), |s| s.next_event().unwrap());
        assert_eq!(first.map(|e| e.ts), Some(1));
    }
}
