//! `jitterlab analyze`: sections in text and JSON, focus, errors.

use crate::util::{data, json_data, run, stderr, stdout};

#[test]
fn analyze_text_has_every_section_with_units() {
    let o = run(&["analyze", &data("cyclictest-idle.v7.dat"), "--top", "20"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for heading in [
        "== Summary ==",
        "== CPUs ==",
        "== Tasks ==",
        "== IRQs ==",
        "== IRQ -> task chains ==",
    ] {
        assert!(out.contains(heading), "{heading} missing:\n{out}");
    }
    assert!(out.contains("8324 events on 2 CPUs"), "{out}");
    assert!(out.contains("implicit_switch_in"), "{out}");
    // The cyclictest thread's wake-ups, with units, in the latency table.
    let line = out
        .lines()
        .find(|l| l.contains("cyclictest") && l.contains("1001"))
        .expect("the cyclictest wake-up row");
    assert!(line.contains(" us"), "{line}");
    assert!(out.contains("36 virtio1-req.0"), "{out}");
}

#[test]
fn analyze_json_and_focus() {
    let file = data("text/disk-irq-stress-6000.ftrace.txt");
    let o = run(&[
        "analyze",
        &file,
        "--json",
        "--section",
        "irqs",
        "--irq",
        "36",
        "--task",
        "dd",
    ]);
    let d = json_data(&o, "jitterlab.analyze");
    assert!(d.get("summary").is_none() && d.get("tasks").is_none());
    let chains = d["irqs"]["chains"].as_array().unwrap();
    assert!(!chains.is_empty());
    for c in chains {
        assert_eq!(
            (c["irq"].as_u64(), c["comm"].as_str()),
            (Some(36), Some("dd"))
        );
        assert!(c["latency"]["p50_ns"].as_u64().unwrap() > 0);
    }
    assert_eq!(d["irqs"]["focus_irq"], "36");
    let text = stdout(&run(&[
        "analyze",
        &file,
        "--section",
        "irqs",
        "--irq",
        "virtio*",
        "--task",
        "dd",
    ]));
    assert!(
        text.contains("irq_handler_exit -> switch-in:"),
        "a histogram: {text}"
    );
}

#[test]
fn analyze_errors() {
    let o = run(&[
        "analyze",
        &data("cyclictest-idle.v7.dat"),
        "--section",
        "bogus",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown section"), "{}", stderr(&o));
    let o = run(&["analyze", "Cargo.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("Cargo.toml"), "{}", stderr(&o));
}

#[test]
fn analyze_functions_compare() {
    let a = data("text/fgraph-ehci-softirq.txt");
    let b = data("text/fgraph-smi-abstime.txt");
    let o = run(&[
        "analyze",
        &a,
        "--section",
        "functions",
        "--compare",
        &b,
        "--json",
    ]);
    let d = json_data(&o, "jitterlab.analyze");
    assert_eq!(d["functions"]["functions"][0]["name"], "schedule");
    let changes = d["functions"]["comparison"]["changes"].as_array().unwrap();
    assert!(!changes.is_empty());
    // Without --section, a trace with no function_graph calls has no functions section.
    let o = run(&["analyze", &data("cyclictest-idle.v7.dat"), "--json"]);
    assert!(json_data(&o, "jitterlab.analyze")
        .get("functions")
        .is_none());
}
