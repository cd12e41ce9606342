//! A [`Sink`] folded on a thread of its own.
//!
//! The analysis thread copies each interval into a batch and hands full batches to the
//! thread, which feeds them to the sink in the order they came; [`Background::into_inner`]
//! waits for the thread and gives the sink back. Used for the timeline, whose fold is the
//! one heavy analysis a report with a timeline adds to the pass (docs/html.md).

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use crate::model::{Anomaly, Blind, IrqSpan, Marker, RunSlice, SoftirqSpan, Wake};
use crate::sink::Sink;

/// One call on the sink.
enum Item {
    Begin(u64),
    Slice(RunSlice),
    Wake(Wake),
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

/// A sink fed on a thread of its own, or inline when no thread could be started. Only the
/// calls listed in [`Item`] are passed on (those the timeline's fold takes).
pub struct Background<S> {
    inner: Inner<S>,
}

enum Inner<S> {
    Inline(S),
    Thread {
        batch: Vec<Item>,
        send: Option<SyncSender<Vec<Item>>>,
        /// Emptied batches coming back, to be filled again.
        spare: Receiver<Vec<Item>>,
        thread: JoinHandle<S>,
    },
}

impl<S: Sink + Send + 'static> Background<S> {
    /// `sink`, fed on a thread named `name`.
    pub fn new(sink: S, name: &str) -> Background<S> {
        let (send, work) = sync_channel::<Vec<Item>>(IN_FLIGHT);
        let (give_back, spare) = sync_channel::<Vec<Item>>(IN_FLIGHT + 2);
        // The sink goes to the thread once the thread has started; until then it is ours.
        let (hand_over, take) = sync_channel::<S>(1);
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
                Err(e) => Inner::Inline(e.0),
            },
            Err(_) => Inner::Inline(sink),
        };
        Background { inner }
    }

    /// Waits for the thread to fold what it was given, and returns the sink.
    pub fn into_inner(self) -> S {
        match self.inner {
            Inner::Inline(s) => s,
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

    fn push(&mut self, item: Item) {
        match &mut self.inner {
            Inner::Inline(s) => feed(s, item),
            Inner::Thread {
                batch, send, spare, ..
            } => {
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
        }
    }
}

fn feed<S: Sink>(s: &mut S, item: Item) {
    match item {
        Item::Begin(ts) => s.begin(ts),
        Item::Slice(x) => s.slice(&x),
        Item::Wake(x) => s.wake(&x),
        Item::Irq(x) => s.irq(&x),
        Item::Softirq(x) => s.softirq(&x),
        Item::Anomaly(x) => s.anomaly(&x),
        Item::Marker(x) => s.marker(&x),
        Item::Blind(x) => s.blind(&x),
        Item::End(ts) => s.end(ts),
    }
}

impl<S: Sink + Send + 'static> Sink for Background<S> {
    fn begin(&mut self, ts: u64) {
        self.push(Item::Begin(ts));
    }
    fn slice(&mut self, s: &RunSlice) {
        self.push(Item::Slice(s.clone()));
    }
    fn wake(&mut self, w: &Wake) {
        self.push(Item::Wake(w.clone()));
    }
    fn irq(&mut self, s: &IrqSpan) {
        self.push(Item::Irq(s.clone()));
    }
    fn softirq(&mut self, s: &SoftirqSpan) {
        self.push(Item::Softirq(s.clone()));
    }
    fn anomaly(&mut self, a: &Anomaly) {
        self.push(Item::Anomaly(a.clone()));
    }
    fn marker(&mut self, m: &Marker) {
        self.push(Item::Marker(m.clone()));
    }
    fn blind(&mut self, b: &Blind) {
        self.push(Item::Blind(b.clone()));
    }
    fn end(&mut self, ts: u64) {
        self.push(Item::End(ts));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the order of the calls it gets.
    #[derive(Default)]
    struct Log(Vec<u64>);

    impl Sink for Log {
        fn begin(&mut self, ts: u64) {
            self.0.push(ts);
        }
        fn end(&mut self, ts: u64) {
            self.0.push(ts);
        }
    }

    #[test]
    fn the_thread_sees_every_call_in_order_and_gives_the_sink_back() {
        let mut b = Background::new(Log::default(), "test");
        // More than one batch, and a part of one at the end.
        let n = BATCH as u64 * 2 + 5;
        for ts in 0..n {
            if ts % 2 == 0 {
                b.begin(ts);
            } else {
                b.end(ts);
            }
        }
        let log = b.into_inner();
        assert_eq!(log.0, (0..n).collect::<Vec<_>>());
    }
}
