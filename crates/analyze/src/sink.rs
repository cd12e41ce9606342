//! The consumer of derived intervals.

use crate::model::{
    Anomaly, Blind, FuncCall, Gap, HandlerSpan, IrqSpan, Marker, Migration, RunSlice, SoftirqSpan,
    Wake,
};

/// Receives the derived intervals of the [`crate::Machine`], as ripgrep's searcher pushes
/// matches into a `Sink`. Every method has an empty default, so an analysis implements only
/// what it folds. The machine calls them in the order the intervals end.
///
/// Analyses never fail, so the methods return nothing.
pub trait Sink {
    /// The first event's timestamp, before any interval.
    fn begin(&mut self, _ts: u64) {}
    /// A task's (or the idle task's) time on a CPU.
    fn slice(&mut self, _s: &RunSlice) {}
    /// A wake-up, at its switch-in.
    fn wake(&mut self, _w: &Wake) {}
    /// A hard interrupt handler's run.
    fn irq(&mut self, _s: &IrqSpan) {}
    /// A softirq's run.
    fn softirq(&mut self, _s: &SoftirqSpan) {}
    /// An hrtimer callback's or an irq_vectors handler's run.
    fn handler(&mut self, _h: &HandlerSpan) {}
    /// A task moved between CPUs.
    fn migration(&mut self, _m: &Migration) {}
    /// A correction or an unexplained event.
    fn anomaly(&mut self, _a: &Anomaly) {}
    /// A trace_marker write.
    fn marker(&mut self, _m: &Marker) {}
    /// A stretch with no events on a CPU.
    fn gap(&mut self, _g: &Gap) {}
    /// A stretch where a CPU's state is unknown (lost events).
    fn blind(&mut self, _b: &Blind) {}
    /// A completed function_graph call.
    fn func(&mut self, _f: &FuncCall) {}
    /// The last event's timestamp, after every interval.
    fn end(&mut self, _ts: u64) {}
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn begin(&mut self, ts: u64) {
        (**self).begin(ts)
    }
    fn slice(&mut self, s: &RunSlice) {
        (**self).slice(s)
    }
    fn wake(&mut self, w: &Wake) {
        (**self).wake(w)
    }
    fn irq(&mut self, s: &IrqSpan) {
        (**self).irq(s)
    }
    fn softirq(&mut self, s: &SoftirqSpan) {
        (**self).softirq(s)
    }
    fn handler(&mut self, h: &HandlerSpan) {
        (**self).handler(h)
    }
    fn migration(&mut self, m: &Migration) {
        (**self).migration(m)
    }
    fn anomaly(&mut self, a: &Anomaly) {
        (**self).anomaly(a)
    }
    fn marker(&mut self, m: &Marker) {
        (**self).marker(m)
    }
    fn gap(&mut self, g: &Gap) {
        (**self).gap(g)
    }
    fn blind(&mut self, b: &Blind) {
        (**self).blind(b)
    }
    fn func(&mut self, f: &FuncCall) {
        (**self).func(f)
    }
    fn end(&mut self, ts: u64) {
        (**self).end(ts)
    }
}

/// Wants nothing: a pass whose consumers are all raw.
impl Sink for () {}

/// An absent sink gets nothing.
impl<S: Sink> Sink for Option<S> {
    fn begin(&mut self, ts: u64) {
        if let Some(s) = self {
            s.begin(ts)
        }
    }
    fn slice(&mut self, x: &RunSlice) {
        if let Some(s) = self {
            s.slice(x)
        }
    }
    fn wake(&mut self, x: &Wake) {
        if let Some(s) = self {
            s.wake(x)
        }
    }
    fn irq(&mut self, x: &IrqSpan) {
        if let Some(s) = self {
            s.irq(x)
        }
    }
    fn softirq(&mut self, x: &SoftirqSpan) {
        if let Some(s) = self {
            s.softirq(x)
        }
    }
    fn handler(&mut self, x: &HandlerSpan) {
        if let Some(s) = self {
            s.handler(x)
        }
    }
    fn migration(&mut self, x: &Migration) {
        if let Some(s) = self {
            s.migration(x)
        }
    }
    fn anomaly(&mut self, x: &Anomaly) {
        if let Some(s) = self {
            s.anomaly(x)
        }
    }
    fn marker(&mut self, x: &Marker) {
        if let Some(s) = self {
            s.marker(x)
        }
    }
    fn gap(&mut self, x: &Gap) {
        if let Some(s) = self {
            s.gap(x)
        }
    }
    fn blind(&mut self, x: &Blind) {
        if let Some(s) = self {
            s.blind(x)
        }
    }
    fn func(&mut self, x: &FuncCall) {
        if let Some(s) = self {
            s.func(x)
        }
    }
    fn end(&mut self, ts: u64) {
        if let Some(s) = self {
            s.end(ts)
        }
    }
}

/// Two sinks on one pass: each interval to the first, then to the second (nest the
/// pairs for more).
impl<A: Sink, B: Sink> Sink for (A, B) {
    fn begin(&mut self, ts: u64) {
        self.0.begin(ts);
        self.1.begin(ts);
    }
    fn slice(&mut self, x: &RunSlice) {
        self.0.slice(x);
        self.1.slice(x);
    }
    fn wake(&mut self, x: &Wake) {
        self.0.wake(x);
        self.1.wake(x);
    }
    fn irq(&mut self, x: &IrqSpan) {
        self.0.irq(x);
        self.1.irq(x);
    }
    fn softirq(&mut self, x: &SoftirqSpan) {
        self.0.softirq(x);
        self.1.softirq(x);
    }
    fn handler(&mut self, x: &HandlerSpan) {
        self.0.handler(x);
        self.1.handler(x);
    }
    fn migration(&mut self, x: &Migration) {
        self.0.migration(x);
        self.1.migration(x);
    }
    fn anomaly(&mut self, x: &Anomaly) {
        self.0.anomaly(x);
        self.1.anomaly(x);
    }
    fn marker(&mut self, x: &Marker) {
        self.0.marker(x);
        self.1.marker(x);
    }
    fn gap(&mut self, x: &Gap) {
        self.0.gap(x);
        self.1.gap(x);
    }
    fn blind(&mut self, x: &Blind) {
        self.0.blind(x);
        self.1.blind(x);
    }
    fn func(&mut self, x: &FuncCall) {
        self.0.func(x);
        self.1.func(x);
    }
    fn end(&mut self, ts: u64) {
        self.0.end(ts);
        self.1.end(ts);
    }
}

/// Collects every interval in vectors: for tests and small traces (memory grows with the
/// trace).
#[derive(Clone, Debug, Default)]
pub struct Collect {
    /// Run slices.
    pub slices: Vec<RunSlice>,
    /// Wake-ups.
    pub wakes: Vec<Wake>,
    /// IRQ spans.
    pub irqs: Vec<IrqSpan>,
    /// Softirq spans.
    pub softirqs: Vec<SoftirqSpan>,
    /// hrtimer callback and irq_vectors handler spans.
    pub handlers: Vec<HandlerSpan>,
    /// Migrations.
    pub migrations: Vec<Migration>,
    /// Anomalies.
    pub anomalies: Vec<Anomaly>,
    /// Markers.
    pub markers: Vec<Marker>,
    /// Gaps.
    pub gaps: Vec<Gap>,
    /// Blind stretches.
    pub blinds: Vec<Blind>,
    /// Function calls.
    pub funcs: Vec<FuncCall>,
}

impl Sink for Collect {
    fn slice(&mut self, s: &RunSlice) {
        self.slices.push(s.clone())
    }
    fn wake(&mut self, w: &Wake) {
        self.wakes.push(w.clone())
    }
    fn irq(&mut self, s: &IrqSpan) {
        self.irqs.push(s.clone())
    }
    fn softirq(&mut self, s: &SoftirqSpan) {
        self.softirqs.push(s.clone())
    }
    fn handler(&mut self, h: &HandlerSpan) {
        self.handlers.push(h.clone())
    }
    fn migration(&mut self, m: &Migration) {
        self.migrations.push(m.clone())
    }
    fn anomaly(&mut self, a: &Anomaly) {
        self.anomalies.push(a.clone())
    }
    fn marker(&mut self, m: &Marker) {
        self.markers.push(m.clone())
    }
    fn gap(&mut self, g: &Gap) {
        self.gaps.push(g.clone())
    }
    fn blind(&mut self, b: &Blind) {
        self.blinds.push(b.clone())
    }
    fn func(&mut self, f: &FuncCall) {
        self.funcs.push(f.clone())
    }
}
