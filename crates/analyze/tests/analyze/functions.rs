//! The functions section over the trace crate's function_graph fixtures, checked against
//! the durations the kernel printed in them.

use std::path::PathBuf;

use jitterlab_analyze::analysis::functions::FunctionSection;
use jitterlab_analyze::{analyze, Options, Section};
use jitterlab_trace::text;

fn functions(name: &str) -> (String, FunctionSection) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../trace/tests/data/text")
        .join(name);
    let bytes = std::fs::read(&path).expect("fixture");
    let kind = text::detect(&bytes).expect("function_graph text");
    let o = Options {
        sections: vec![Section::Functions],
        ..Options::default()
    };
    let r = {
        let mut src = text::open(&bytes[..], kind, text::TextOptions::named(name)).expect("open");
        analyze(&mut *src, &o).expect("analyze")
    };
    let text = String::from_utf8(bytes).expect("text");
    (text, r.functions.expect("the section asked for"))
}

/// The durations printed on `NAME();` leaf lines, in ns.
fn leaf_durations(text: &str, name: &str) -> Vec<u64> {
    text.lines()
        .filter(|l| l.trim_end().ends_with(&format!("{name}();")))
        .map(|l| {
            let d = l.split(')').nth(1).unwrap().split("us").next().unwrap();
            let d = d
                .trim()
                .trim_start_matches(['+', '!', '#', '*', '@', '$', ' ']);
            let (us, frac) = d.split_once('.').unwrap_or((d, "0"));
            us.trim().parse::<u64>().unwrap() * 1000
                + format!("{frac:0<3}")[..3].parse::<u64>().unwrap()
        })
        .collect()
}

#[test]
fn calls_inclusive_and_self_time() {
    let (text, f) = functions("fgraph-ehci-softirq.txt");
    let row = |n: &str| {
        f.functions
            .iter()
            .find(|r| r.name == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    let qh = leaf_durations(&text, "qh_completions");
    assert_eq!(qh.len(), 12);
    let q = row("qh_completions");
    assert_eq!(q.calls, 12);
    assert_eq!(q.inclusive.unwrap().total_ns, qh.iter().sum::<u64>());
    assert_eq!(q.self_time.unwrap().total_ns, qh.iter().sum::<u64>());
    assert_eq!(
        q.longest.as_ref().unwrap().path.last().map(String::as_str),
        Some("qh_completions")
    );
    // ehci_work() { free_cached_itd_list(); 12 x qh_completions(); } = 49.250 us
    let e = row("ehci_work");
    let free: u64 = leaf_durations(&text, "free_cached_itd_list").iter().sum();
    assert_eq!(e.inclusive.unwrap().total_ns, 49_250);
    assert_eq!(
        e.self_time.unwrap().total_ns,
        49_250 - free - qh.iter().sum::<u64>()
    );
    assert_eq!(e.distinct_callees, 2);
    assert_eq!(
        (e.callees[0].name.as_str(), e.callees[0].calls),
        ("qh_completions", 12)
    );
    // schedule() spans a task switch: its return comes after idle ran on the CPU.
    let s = row("schedule");
    assert_eq!(s.inclusive.unwrap().total_ns, 2_497_250);
    assert_eq!(s.self_time.unwrap().total_ns, 2_497_250 - 1_000);
    assert_eq!(f.functions[0].name, "schedule", "most self time first");
}

#[test]
fn compare_two_traces() {
    let (_, a) = functions("fgraph-ehci-softirq.txt");
    let (_, b) = functions("fgraph-smi-abstime.txt");
    let same = a.compare(&a, "itself");
    assert!(same
        .changes
        .iter()
        .all(|c| c.self_ns == c.other_self_ns && c.calls == c.other_calls));
    let c = a.compare(&b, "smi");
    assert_eq!(c.other, "smi");
    let d: Vec<u64> = c
        .changes
        .iter()
        .map(|c| c.self_ns.abs_diff(c.other_self_ns))
        .collect();
    assert!(
        d.windows(2).all(|w| w[0] >= w[1]),
        "sorted by change: {d:?}"
    );
    let names: std::collections::HashSet<&str> =
        c.changes.iter().map(|c| c.name.as_str()).collect();
    assert!(a
        .functions
        .iter()
        .chain(&b.functions)
        .all(|r| names.contains(r.name.as_str())));
}
