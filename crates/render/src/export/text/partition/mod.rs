//! `jitterlab isolate`, `revert`, `verify`, `run` and `advise`: one file per view.

mod advise;
mod plan;
mod revert;
mod verify;

use std::io::{self, Write};

use jitterlab_host::partition::Placement;

use crate::{Render, Style};

impl Render for Placement {
    const SCHEMA: &'static str = "jitterlab.run";

    fn text(&self, out: &mut dyn Write, _style: &Style) -> io::Result<()> {
        writeln!(out, "jitterlab: on CPU {}, {}", self.cpus, self.how)
    }
}

/// Wraps `text` to lines of at most `width` characters, each prefixed by `indent`.
fn wrap(text: &str, indent: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
            lines.push(format!("{indent}{line}"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(format!("{indent}{line}"));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wraps_at_words() {
        assert_eq!(
            wrap("one two three four", "  ", 12),
            ["  one two", "  three four"]
        );
        assert!(wrap("", "  ", 10).is_empty());
    }
}
