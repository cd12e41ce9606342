//! The timeline's fold on a thread of its own.
//!
//! The analysis thread copies what the fold takes of each interval (a [`SliceRec`] of 48
//! bytes against a [`RunSlice`]'s 80, a [`WakeRec`] of 64 against a [`Wake`]'s 136) into a batch
//! and hands full batches to the thread, which feeds them to the fold in the order they
//! came; [`Background::into_inner`] waits for the thread and gives the fold back. The
//! timeline's fold is the one heavy analysis a report with a timeline adds to the pass
//! (docs/html.md).

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use crate::analysis::timeline::{SliceRec, TimelineFold, WakeRec};
use crate::model::{Anomaly, Blind, IrqSpan, Marker, RunSlice, SoftirqSpan, Wake};
use crate::sink::Sink;

/// One call on the fold.
enum Item {
    Begin(u64),
    Slice(SliceRec),
    Wake(WakeRec),
    Irq(IrqSpan),
    Softirq(SoftirqSpan),
    Anomaly(Anomaly),
    Marker(Marker),
    Blind(Blind),
    End(u64),
}

/// Intervals per batch: large enough that handing a batch over costs little per item.
const BATCH: usize = 8192;
/// Batches in flight before the analysis thread waits for the sink's thread.
const IN_FLIGHT: usize = 16;

/// The timeline's fold fed on a thread of its own, or inline: on a machine of two CPUs
/// (the .dat reader and the analysis already keep both busy, and a third thread made the
/// pass slower there) or when no thread could be started.
pub struct Background {
    inner: Inner,
}

enum Inner {
    Inline(Box<TimelineFold>),
    Thread {
        batch: Vec<Item>,
        send: Option<SyncSender<Vec<Item>>>,
        /// Emptied batches coming back, to be filled again.
        spare: Receiver<Vec<Item>>,
        thread: JoinHandle<TimelineFold>,
    },
}

/// CPUs the machine needs for the fold to get a thread: one beside the reader's and the
/// analysis'.
const THREAD_CPUS: usize = 3;

impl Background {
    /// `sink`, fed on a thread named `name` when the machine has [`THREAD_CPUS`] CPUs or
    /// more, else inline.
    pub fn new(sink: TimelineFold, name: &str) -> Background {
        let cpus = thread::available_parallelism().map_or(1, |n| n.get());
        if cpus >= THREAD_CPUS {
            Background::threaded(sink, name)
        } else {
            Background {
                inner: Inner::Inline(Box::new(sink)),
            }
        }
    }

    /// `sink`, fed on a thread named `name`.
    pub fn threaded(sink: TimelineFold, name: &str) -> Background {
        let (send, work) = sync_channel::<Vec<Item>>(IN_FLIGHT);
        let (give_back, spare) = sync_channel::<Vec<Item>>(IN_FLIGHT + 2);
        // The sink goes to the thread once the thread has started; until then it is ours.
        let (hand_over, take) = sync_channel::<TimelineFold>(1);
        let started = thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let mut sink = take
                    .recv()
                    .expect("the sink is handed over before any batch");
                for mut batch in work {
                    for item in batch.drain(..) {
                        feed(&mut sink, item);
                    }
                    let _ = give_back.try_send(batch);
                }
                sink
            });
        let inner = match started {
            Ok(thread) => match hand_over.send(sink) {
                Ok(()) => Inner::Thread {
                    batch: Vec::with_capacity(BATCH),
                    send: Some(send),
                    spare,
                    thread,
                },
                // The thread ended before taking it (it cannot, but then fold inline).
                Err(e) => Inner::Inline(Box::new(e.0)),
            },
            Err(_) => Inner::Inline(Box::new(sink)),
        };
        Background { inner }
    }

    /// Waits for the thread to fold what it was given, and returns the fold.
    pub fn into_inner(self) -> TimelineFold {
        match self.inner {
            Inner::Inline(s) => *s,
            Inner::Thread {
                batch,
                send,
                thread,
                ..
            } => {
                if let Some(send) = send {
                    if !batch.is_empty() {
                        // A failed send means the thread has ended: its panic comes below.
                        let _ = send.send(batch);
                    }
                }
                match thread.join() {
                    Ok(s) => s,
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
        }
    }
}

/// Adds `item` to the thread's batch, handing the batch over when full.
fn push(
    batch: &mut Vec<Item>,
    send: &mut Option<SyncSender<Vec<Item>>>,
    spare: &Receiver<Vec<Item>>,
    item: Item,
) {
    batch.push(item);
    if batch.len() >= BATCH {
        let next = spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let full = std::mem::replace(batch, next);
        // The thread ended early (a panic, raised again by into_inner): stop sending.
        if send.as_ref().is_some_and(|s| s.send(full).is_err()) {
            *send = None;
        }
    }
}

fn feed(s: &mut TimelineFold, item: Item) {
    match item {
        Item::Begin(ts) => s.begin(ts),
        Item::Slice(x) => s.slice_rec(&x),
        Item::Wake(x) => s.wake_rec(&x),
        Item::Irq(x) => s.irq(&x),
        Item::Softirq(x) => s.softirq(&x),
        Item::Anomaly(x) => s.anomaly(&x),
        Item::Marker(x) => s.marker(&x),
        Item::Blind(x) => s.blind(&x),
        Item::End(ts) => s.end(ts),
    }
}

/// Calls `$call` on the fold when it is inline, else pushes `$item` to its thread's batch.
macro_rules! pass_on {
    ($self:ident, $fold:ident => $call:expr, $item:expr) => {
        match &mut $self.inner {
            Inner::Inline($fold) => $call,
            Inner::Thread {
                batch, send, spare, ..
            } => push(batch, send, spare, $item),
        }
    };
}

impl Sink for Background {
    fn begin(&mut self, ts: u64) {
        pass_on!(self, f => f.begin(ts), Item::Begin(ts));
    }
    fn slice(&mut self, s: &RunSlice) {
        pass_on!(self, f => f.slice(s), Item::Slice(SliceRec::from(s)));
    }
    fn wake(&mut self, w: &Wake) {
        pass_on!(self, f => f.wake(w), Item::Wake(WakeRec::from(w)));
    }
    fn irq(&mut self, s: &IrqSpan) {
        pass_on!(self, f => f.irq(s), Item::Irq(s.clone()));
    }
    fn softirq(&mut self, s: &SoftirqSpan) {
        pass_on!(self, f => f.softirq(s), Item::Softirq(s.clone()));
    }
    fn anomaly(&mut self, a: &Anomaly) {
        pass_on!(self, f => f.anomaly(a), Item::Anomaly(a.clone()));
    }
    fn marker(&mut self, m: &Marker) {
        pass_on!(self, f => f.marker(m), Item::Marker(m.clone()));
    }
    fn blind(&mut self, b: &Blind) {
        pass_on!(self, f => f.blind(b), Item::Blind(b.clone()));
    }
    fn end(&mut self, ts: u64) {
        pass_on!(self, f => f.end(ts), Item::End(ts));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::timeline::TimelineOptions;
    use crate::model::{SliceEnd, SliceStart, Waker};
    use jitterlab_trace::Comm;

    /// Feeds `n` slices and wake-ups over two CPUs, a marker and an IRQ span to `sink`.
    fn feed_some(sink: &mut dyn Sink, n: u64) {
        sink.begin(0);
        for i in 0..n {
            let cpu = (i % 2) as u32;
            let start = 10 * i;
            sink.wake(&Wake {
                task: (i % 7) as u32,
                tid: 100 + (i % 7) as i32,
                comm: Comm::new("w"),
                prio: 120,
                waking_ts: start.saturating_sub(3),
                waker: Waker::Task { tid: 1 },
                waker_cpu: 1 - cpu,
                by_hrtimer: i % 3 == 0,
                wakeup_ts: Some(start.saturating_sub(2)),
                switch_in_ts: start,
                cpu,
                inferred: false,
                inferred_after: None,
                from_idle: None,
                irq_exit_ts: None,
                softirq_exit_ts: None,
                new_task: false,
            });
            sink.slice(&RunSlice {
                cpu,
                task: Some((i % 7) as u32),
                tid: 100 + (i % 7) as i32,
                comm: Comm::new("w"),
                prio: Some(120),
                start,
                end: start + 9,
                start_kind: SliceStart::Switch,
                end_kind: SliceEnd::Preempted,
                last_seen: start + 9,
            });
        }
        sink.irq(&IrqSpan {
            cpu: 0,
            irq: 24,
            name: "virtio0".into(),
            start: 5,
            end: 7,
            depth: 0,
            ret: 1,
            interrupted: Some(0),
        });
        sink.marker(&Marker {
            ts: 3,
            cpu: 1,
            tid: 9,
            text: "m".into(),
        });
        sink.end(10 * n);
    }

    #[test]
    fn the_thread_folds_every_call_in_order_as_inline_does() {
        // More than one batch, and a part of one at the end.
        let n = BATCH as u64 + 5;
        let mut inline = TimelineFold::new(TimelineOptions::default());
        feed_some(&mut inline, n);
        let mut b = Background::threaded(TimelineFold::new(TimelineOptions::default()), "test");
        feed_some(&mut b, n);
        let threaded = b.into_inner();
        assert_eq!(threaded.columns(), inline.columns());
        assert_eq!(threaded.columns()[1].slices.start.len() as u64, n / 2);
    }
}
