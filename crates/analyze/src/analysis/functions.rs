//! The functions section (function_graph traces): per function the calls, inclusive and
//! exclusive (self) time, its callees and the call path of its longest instance; and the
//! comparison of two traces (as the ftrace latency hunt does: compare the same function
//! across runs, count the callees, remove the callees' time to get a function's own time).

use std::collections::HashMap;

use jitterlab_trace::Text;
use serde::Serialize;

use super::Ctx;
use crate::hash::FxMap;
use crate::model::FuncCall;
use crate::sink::Sink;
use crate::stats::{DurationStats, Stats};

/// Callees listed per function; the JSON and the text keep the most called ones.
const CALLEES_KEPT: usize = 10;

/// A callee and how often it was called.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Callee {
    /// The callee.
    pub name: String,
    /// Calls from this function.
    pub calls: u64,
}

/// The longest instance of a function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Longest {
    /// Its inclusive duration, ns.
    pub duration_ns: u64,
    /// Its entry, ns (relative times for function_graph text without timestamps).
    pub start_ns: u64,
    /// The CPU.
    pub cpu: u32,
    /// The task, when known.
    pub tid: Option<i32>,
    /// The call path, outermost first, ending with the function.
    pub path: Vec<String>,
}

/// One function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FunctionRow {
    /// Its name.
    pub name: String,
    /// Completed calls.
    pub calls: u64,
    /// Inclusive time per call.
    pub inclusive: Option<Stats>,
    /// Exclusive (self) time per call: inclusive minus the traced callees' inclusive time.
    pub self_time: Option<Stats>,
    /// Distinct traced callees.
    pub distinct_callees: u64,
    /// The most called callees.
    pub callees: Vec<Callee>,
    /// Its longest instance.
    pub longest: Option<Longest>,
}

/// How one function changed between two traces.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FunctionChange {
    /// The function.
    pub name: String,
    /// Calls in this trace.
    pub calls: u64,
    /// Calls in the other trace.
    pub other_calls: u64,
    /// Total self time in this trace, ns.
    pub self_ns: u64,
    /// Total self time in the other trace, ns.
    pub other_self_ns: u64,
    /// Mean self time per call in this trace, ns (`null`: no call).
    pub self_avg_ns: Option<u64>,
    /// Mean self time per call in the other trace, ns.
    pub other_self_avg_ns: Option<u64>,
}

/// The comparison with another trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// The other trace, as named.
    pub other: String,
    /// Functions whose total self time or call count changed most, first.
    pub changes: Vec<FunctionChange>,
}

/// The functions section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FunctionSection {
    /// Functions, most total self time first.
    pub functions: Vec<FunctionRow>,
    /// With `--compare`.
    pub comparison: Option<Comparison>,
}

#[derive(Default)]
struct Acc {
    inclusive: DurationStats,
    self_time: DurationStats,
    callees: FxMap<Text, u64>,
    longest: Option<FuncCall>,
}

/// Folds completed function_graph calls per function.
#[derive(Default)]
pub struct FunctionFold {
    acc: HashMap<Text, Acc>,
}

impl Sink for FunctionFold {
    fn func(&mut self, f: &FuncCall) {
        let a = self.acc.entry(f.func.clone()).or_default();
        a.inclusive.record(f.duration, f.start);
        a.self_time.record(f.self_ns, f.start);
        if a.longest.as_ref().is_none_or(|l| f.duration > l.duration) {
            a.longest = Some(f.clone());
        }
        if let Some(p) = &f.parent {
            let pa = self.acc.entry(p.clone()).or_default();
            *pa.callees.entry(f.func.clone()).or_insert(0) += 1;
        }
    }
}

impl FunctionFold {
    /// Builds the section.
    pub fn finish(self, _ctx: &Ctx<'_>) -> FunctionSection {
        let mut functions: Vec<FunctionRow> = self
            .acc
            .into_iter()
            .filter(|(_, a)| a.inclusive.count() > 0)
            .map(|(name, a)| {
                let mut callees: Vec<Callee> = a
                    .callees
                    .iter()
                    .map(|(n, &calls)| Callee {
                        name: n.to_string(),
                        calls,
                    })
                    .collect();
                callees.sort_by(|x, y| y.calls.cmp(&x.calls).then_with(|| x.name.cmp(&y.name)));
                let distinct_callees = callees.len() as u64;
                callees.truncate(CALLEES_KEPT);
                FunctionRow {
                    name: name.to_string(),
                    calls: a.inclusive.count(),
                    inclusive: a.inclusive.summary(),
                    self_time: a.self_time.summary(),
                    distinct_callees,
                    callees,
                    longest: a.longest.map(|l| Longest {
                        duration_ns: l.duration,
                        start_ns: l.start,
                        cpu: l.cpu,
                        tid: l.tid,
                        path: l.path.iter().map(|t| t.to_string()).collect(),
                    }),
                }
            })
            .collect();
        functions.sort_by(|x, y| {
            let t = |r: &FunctionRow| r.self_time.map_or(0, |s| s.total_ns);
            t(y).cmp(&t(x)).then_with(|| x.name.cmp(&y.name))
        });
        FunctionSection {
            functions,
            comparison: None,
        }
    }
}

impl FunctionSection {
    /// Compares this trace's functions with `other`'s (named `other_name`): every function
    /// of either, ordered by the change of its total self time, then of its call count.
    pub fn compare(&self, other: &FunctionSection, other_name: &str) -> Comparison {
        let total = |r: &FunctionRow| r.self_time.map_or(0, |s| s.total_ns);
        let avg = |r: &FunctionRow| r.self_time.map(|s| s.avg_ns);
        let mine: HashMap<&str, &FunctionRow> = self
            .functions
            .iter()
            .map(|r| (r.name.as_str(), r))
            .collect();
        let theirs: HashMap<&str, &FunctionRow> = other
            .functions
            .iter()
            .map(|r| (r.name.as_str(), r))
            .collect();
        let mut names: Vec<&str> = mine.keys().chain(theirs.keys()).copied().collect();
        names.sort_unstable();
        names.dedup();
        let mut changes: Vec<FunctionChange> = names
            .into_iter()
            .map(|n| {
                let (a, b) = (mine.get(n), theirs.get(n));
                FunctionChange {
                    name: n.to_string(),
                    calls: a.map_or(0, |r| r.calls),
                    other_calls: b.map_or(0, |r| r.calls),
                    self_ns: a.map_or(0, |r| total(r)),
                    other_self_ns: b.map_or(0, |r| total(r)),
                    self_avg_ns: a.and_then(|r| avg(r)),
                    other_self_avg_ns: b.and_then(|r| avg(r)),
                }
            })
            .collect();
        changes.sort_by(|x, y| {
            let d = |c: &FunctionChange| {
                (
                    c.self_ns.abs_diff(c.other_self_ns),
                    c.calls.abs_diff(c.other_calls),
                )
            };
            d(y).cmp(&d(x)).then_with(|| x.name.cmp(&y.name))
        });
        Comparison {
            other: other_name.to_string(),
            changes,
        }
    }
}
