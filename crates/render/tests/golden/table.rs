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
