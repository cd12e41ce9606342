//! The table layout: colour changes no column's width or alignment.

use jitterlab_render::{Col, Style, Table};

use crate::check;

/// Removes ANSI colour sequences.
fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut in_escape = false;
    for c in s.chars() {
        if in_escape {
            in_escape = c != 'm';
        } else if c == '\x1b' {
            in_escape = true;
        } else {
            out.push(c);
        }
    }
    out
}

fn table(style: &Style) -> String {
    let mut t = Table::new([
        Col::right("CPU"),
        Col::left("STATE"),
        Col::right("IRQS"),
        Col::left("NOTE"),
    ]);
    t.row([
        "0".into(),
        style.good("isolated"),
        style.warn("12345"),
        "-".into(),
    ]);
    t.row([
        "1".into(),
        style.bad("busy"),
        "7".into(),
        style.dim("housekeeping"),
    ]);
    t.row(["10".into(), "".into(), style.bad("0"), "".into()]);
    let mut out = Vec::new();
    t.write(&mut out, style).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn colour_keeps_the_alignment() {
    let plain = table(&Style::plain());
    let coloured = table(&Style { color: true });
    assert_ne!(plain, coloured, "the colour is there");
    assert_eq!(strip_ansi(&coloured), plain);
    check("table_plain.txt", &plain);
}

/// `value`'s text with and without colour.
fn plain_and_coloured<T: jitterlab_render::Render>(value: &T) -> (String, String) {
    let write = |color| {
        let mut out = Vec::new();
        value.text(&mut out, &Style { color }).unwrap();
        String::from_utf8(out).unwrap()
    };
    (write(false), write(true))
}

#[test]
fn colour_keeps_the_layout_of_every_view() {
    use jitterlab_cpuset::CpuSet;
    use jitterlab_host::{read_tasks, Cgroups, CpuMap, Filter, IrqMap, TaskList, TaskQuery};

    let root = crate::vm2();
    let cpus = CpuMap::read(&root, &CpuSet::new()).unwrap();
    let irqs = IrqMap::read(&root).unwrap();
    let threads = read_tasks(&root, TaskQuery::all_threads()).unwrap();
    let overview = jitterlab_host::Overview::build(&cpus, &irqs, &threads, &Filter::default());
    let tasks = TaskList::new(threads, true, None, &Filter::default());
    let cgroups = Cgroups::read(&root).unwrap();
    let analyzed = super::trace::analyzed(
        "disk-irq-stress.v7.dat",
        &jitterlab_analyze::Options::default(),
    );
    let views = [
        plain_and_coloured(&cpus),
        plain_and_coloured(&irqs),
        plain_and_coloured(&overview),
        plain_and_coloured(&tasks),
        plain_and_coloured(&cgroups),
        plain_and_coloured(&super::latency::report()),
        plain_and_coloured(&analyzed),
    ];
    let mut coloured_views = 0;
    for (plain, coloured) in views {
        assert_eq!(strip_ansi(&coloured), plain);
        if coloured != plain {
            coloured_views += 1;
        }
    }
    assert!(coloured_views >= 4, "colour shows in most views");
}
