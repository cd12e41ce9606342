//! The analyses: folds over the machine's derived intervals, one per report section.
//!
//! Each analysis is a [`Sink`] with a `report` method that builds its section once the pass
//! is over, from what it folded and what the [`Machine`] knows (task and IRQ names, counts).

pub mod blame;
pub mod cpus;
pub mod functions;
pub mod irqs;
pub mod summary;
pub mod tasks;
pub mod timeline;

use jitterlab_trace::{ReadStats, TraceMeta};

use crate::background::Background;
use crate::driver::{AnalyzeReport, Options, Section, Source};
use crate::filter::{Filtered, WakeSelect};
use crate::model::{
    Anomaly, Blind, FuncCall, Gap, IrqSpan, Marker, Migration, RunSlice, SoftirqSpan, Wake,
};
use crate::sink::Sink;
use crate::state::Machine;

/// What a section's builder may read once the pass is over.
pub struct Ctx<'a> {
    /// The machine, with its tasks, IRQ names and counts.
    pub machine: &'a Machine,
    /// The source's meta data.
    pub meta: &'a TraceMeta,
    /// The reader's counters.
    pub stats: &'a ReadStats,
    /// The options.
    pub options: &'a Options,
}

/// Every analysis the options ask for, behind one [`Sink`]. The summary and the blame's
/// per-CPU history see every interval; the other sections see what the options' [`crate::Filter`]
/// keeps (the blame section uses it to choose the wake-ups it blames).
pub struct Analyses {
    summary: Option<summary::SummaryFold>,
    blame: Option<blame::BlameFold>,
    folds: Filtered<Folds>,
}

/// The sections folded behind the filter.
struct Folds {
    cpus: Option<cpus::CpuFold>,
    tasks: Option<tasks::TaskFold>,
    irqs: Option<irqs::IrqFold>,
    functions: Option<functions::FunctionFold>,
    timeline: Option<Background>,
}

impl Analyses {
    /// The analyses of the sections `options` asks for.
    pub fn new(options: &Options) -> Analyses {
        let folds = Folds {
            cpus: options
                .wants(Section::Cpus)
                .then(|| cpus::CpuFold::new(options.load_buckets)),
            tasks: options.wants(Section::Tasks).then(tasks::TaskFold::default),
            irqs: options.wants(Section::Irqs).then(irqs::IrqFold::default),
            functions: options
                .wants(Section::Functions)
                .then(functions::FunctionFold::default),
            timeline: options
                .timeline
                .clone()
                .map(|o| Background::new(timeline::TimelineFold::new(o), "timeline")),
        };
        Analyses {
            summary: options
                .wants(Section::Summary)
                .then(summary::SummaryFold::default),
            blame: options.wants(Section::Blame).then(|| {
                blame::BlameFold::new(
                    options.blame,
                    WakeSelect::new(&options.filter, options.task.as_ref(), &options.tgids),
                    options.blame_recorded,
                )
            }),
            folds: Filtered::new(options.filter.clone(), folds),
        }
    }

    /// Builds the report.
    pub fn report(
        self,
        machine: &Machine,
        meta: &TraceMeta,
        stats: &ReadStats,
        options: &Options,
    ) -> AnalyzeReport {
        let ctx = Ctx {
            machine,
            meta,
            stats,
            options,
        };
        let f = self.folds.inner;
        AnalyzeReport {
            source: Source {
                format: meta.format.clone(),
                cpus: meta.cpus,
            },
            top: options.top,
            filter: (!options.filter.is_empty()).then(|| options.filter.clone()),
            summary: self.summary.map(|a| a.finish(&ctx)),
            cpus: f.cpus.map(|a| a.finish(&ctx)),
            tasks: f.tasks.map(|a| a.finish(&ctx)),
            irqs: f.irqs.map(|a| a.finish(&ctx)),
            blame: self.blame.map(|a| a.finish(&ctx)),
            functions: f.functions.map(|a| a.finish(&ctx)).filter(|f| {
                !f.functions.is_empty() || options.sections.contains(&Section::Functions)
            }),
            timeline: f.timeline.map(|a| a.into_inner().finish(&ctx)),
            warnings: Vec::new(),
        }
    }
}

impl Sink for Analyses {
    fn begin(&mut self, ts: u64) {
        self.folds.begin(ts);
    }
    fn slice(&mut self, s: &RunSlice) {
        if let Some(a) = &mut self.blame {
            a.slice(s);
        }
        self.folds.slice(s);
    }
    fn wake(&mut self, w: &Wake) {
        if let Some(a) = &mut self.summary {
            a.wake(w);
        }
        if let Some(a) = &mut self.blame {
            a.wake(w);
        }
        self.folds.wake(w);
    }
    fn irq(&mut self, s: &IrqSpan) {
        if let Some(a) = &mut self.blame {
            a.irq(s);
        }
        self.folds.irq(s);
    }
    fn softirq(&mut self, s: &SoftirqSpan) {
        if let Some(a) = &mut self.blame {
            a.softirq(s);
        }
        self.folds.softirq(s);
    }
    fn migration(&mut self, m: &Migration) {
        self.folds.migration(m);
    }
    fn anomaly(&mut self, a: &Anomaly) {
        self.folds.anomaly(a);
    }
    fn func(&mut self, f: &FuncCall) {
        self.folds.func(f);
    }
    fn gap(&mut self, g: &Gap) {
        if let Some(a) = &mut self.blame {
            a.gap(g);
        }
    }
    fn marker(&mut self, m: &Marker) {
        if let Some(a) = &mut self.blame {
            a.marker(m);
        }
        self.folds.marker(m);
    }
    fn blind(&mut self, b: &Blind) {
        self.folds.blind(b);
    }
    fn end(&mut self, ts: u64) {
        self.folds.end(ts);
    }
}

impl Sink for Folds {
    fn begin(&mut self, ts: u64) {
        if let Some(a) = &mut self.cpus {
            a.begin(ts);
        }
        if let Some(a) = &mut self.timeline {
            a.begin(ts);
        }
    }
    fn slice(&mut self, s: &RunSlice) {
        if let Some(a) = &mut self.cpus {
            a.slice(s);
        }
        if let Some(a) = &mut self.timeline {
            a.slice(s);
        }
        if let Some(a) = &mut self.tasks {
            a.slice(s);
        }
    }
    fn wake(&mut self, w: &Wake) {
        if let Some(a) = &mut self.tasks {
            a.wake(w);
        }
        if let Some(a) = &mut self.timeline {
            a.wake(w);
        }
        if let Some(a) = &mut self.irqs {
            a.wake(w);
        }
    }
    fn irq(&mut self, s: &IrqSpan) {
        if let Some(a) = &mut self.cpus {
            a.irq(s);
        }
        if let Some(a) = &mut self.timeline {
            a.irq(s);
        }
        if let Some(a) = &mut self.irqs {
            a.irq(s);
        }
    }
    fn softirq(&mut self, s: &SoftirqSpan) {
        if let Some(a) = &mut self.cpus {
            a.softirq(s);
        }
        if let Some(a) = &mut self.timeline {
            a.softirq(s);
        }
        if let Some(a) = &mut self.irqs {
            a.softirq(s);
        }
    }
    fn migration(&mut self, m: &Migration) {
        if let Some(a) = &mut self.tasks {
            a.migration(m);
        }
    }
    fn func(&mut self, f: &FuncCall) {
        if let Some(a) = &mut self.functions {
            a.func(f);
        }
    }
    fn blind(&mut self, b: &Blind) {
        if let Some(a) = &mut self.cpus {
            a.blind(b);
        }
        if let Some(a) = &mut self.timeline {
            a.blind(b);
        }
    }
    fn anomaly(&mut self, a: &Anomaly) {
        if let Some(t) = &mut self.timeline {
            t.anomaly(a);
        }
    }
    fn marker(&mut self, m: &Marker) {
        if let Some(a) = &mut self.timeline {
            a.marker(m);
        }
    }
    fn end(&mut self, ts: u64) {
        if let Some(a) = &mut self.timeline {
            a.end(ts);
        }
    }
}

/// Names for people: tasks by tid (their latest incarnation) and IRQs by number.
pub(crate) struct Names<'a> {
    machine: &'a Machine,
    tids: crate::hash::FxMap<i32, jitterlab_trace::Comm>,
}

impl<'a> Names<'a> {
    pub(crate) fn new(machine: &'a Machine) -> Names<'a> {
        let tids = machine.tasks().iter().map(|t| (t.tid, t.comm)).collect();
        Names { machine, tids }
    }

    /// `virtio1-req.0`, or `irq 36` when the name was never seen.
    pub(crate) fn irq(&self, irq: u32) -> String {
        self.machine
            .irq_names()
            .get(&irq)
            .map_or_else(|| format!("irq {irq}"), |n| n.to_string())
    }

    /// A waker for people: `task bash-11382`, `irq 36 virtio1-req.0`,
    /// `softirq BLOCK (irq 36 virtio1-req.0)`, `hardirq (timer/IPI)`, `idle`.
    pub(crate) fn waker(&self, w: crate::model::Waker) -> String {
        use crate::model::Waker;
        let irq = |n: u32| match self.machine.irq_names().get(&n) {
            Some(name) => format!("irq {n} {name}"),
            None => format!("irq {n}"),
        };
        match w {
            Waker::Task { tid: 0 } => "idle".to_string(),
            Waker::Task { tid } => {
                let comm = self
                    .tids
                    .get(&tid)
                    .map(|c| c.to_string())
                    .unwrap_or_default();
                format!("task {comm}-{tid}")
            }
            Waker::Hardirq { irq: Some(n) } => irq(n),
            Waker::Hardirq { irq: None } => "hardirq (timer/IPI)".to_string(),
            Waker::Softirq { vec, raised_by } => {
                let v = vec.map_or_else(|| "?".to_string(), crate::softirq_name);
                match raised_by {
                    Some(n) => format!("softirq {v} ({})", irq(n)),
                    None => format!("softirq {v}"),
                }
            }
        }
    }
}
