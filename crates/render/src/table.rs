//! Aligned text tables.

use std::io::{self, Write};

use crate::Style;

/// Column alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

/// A column: its header and its alignment, declared together so that adding or
/// moving a column cannot shift another's alignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Col {
    header: String,
    align: Align,
}

impl Col {
    /// A left-aligned column (text).
    pub fn left(header: impl Into<String>) -> Col {
        Col {
            header: header.into(),
            align: Align::Left,
        }
    }

    /// A right-aligned column (numbers).
    pub fn right(header: impl Into<String>) -> Col {
        Col {
            header: header.into(),
            align: Align::Right,
        }
    }
}

/// A table of text cells, laid out in columns two spaces apart. The last
/// column is not padded. Cells may carry ANSI colour; widths count only the
/// visible characters.
#[derive(Clone, Debug)]
pub struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these columns.
    pub fn new(columns: impl IntoIterator<Item = Col>) -> Table {
        let (headers, align) = columns.into_iter().map(|c| (c.header, c.align)).unzip();
        Table {
            headers,
            align,
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells are blank.
    pub fn row<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows
            .push(cells.into_iter().map(|c| escape_cell(&c.into())).collect());
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Writes the table.
    pub fn write(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let n = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| visible_width(h)).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(n) {
                widths[i] = widths[i].max(visible_width(cell));
            }
        }
        let header: Vec<String> = self.headers.iter().map(|h| style.bold(h)).collect();
        self.line(out, &header, &widths)?;
        for row in &self.rows {
            self.line(out, row, &widths)?;
        }
        Ok(())
    }

    fn line(&self, out: &mut dyn Write, cells: &[String], widths: &[usize]) -> io::Result<()> {
        let mut line = String::new();
        let n = widths.len();
        for (i, (width, align)) in widths.iter().zip(&self.align).enumerate() {
            let cell = cells.get(i).map(String::as_str).unwrap_or("");
            let pad = width.saturating_sub(visible_width(cell));
            let last = i + 1 == n;
            match align {
                Align::Right => {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                }
                Align::Left => {
                    line.push_str(cell);
                    if !last {
                        line.push_str(&" ".repeat(pad));
                    }
                }
            }
            if !last {
                line.push_str("  ");
            }
        }
        writeln!(out, "{}", line.trim_end())
    }
}

/// A cell with every control character escaped ([`crate::units::escape`]) but for the
/// colour sequences ([`Style`]'s `ESC [ digits;... m`) that the renderers put around
/// text: whatever a name from the system holds cannot break a row or drive the
/// terminal, even where its renderer forgot to escape it.
fn escape_cell(cell: &str) -> String {
    if !cell.chars().any(char::is_control) {
        return cell.to_string();
    }
    let mut out = String::with_capacity(cell.len());
    let mut rest = cell;
    while let Some(i) = rest.find('\x1b') {
        out.push_str(&crate::units::escape(&rest[..i]));
        let after = &rest[i + 1..];
        let sgr = after.strip_prefix('[').and_then(|a| {
            let end = a.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
            (a[end..].starts_with('m')).then_some(end + 2)
        });
        match sgr {
            Some(len) => {
                out.push_str(&rest[i..i + 1 + len]);
                rest = &after[len..];
            }
            None => {
                out.push_str("\\x1b");
                rest = after;
            }
        }
    }
    out.push_str(&crate::units::escape(rest));
    out
}

/// Characters shown, ANSI escape sequences excluded.
pub(crate) fn visible_width(s: &str) -> usize {
    let mut width = 0;
    let mut in_escape = false;
    for c in s.chars() {
        if in_escape {
            in_escape = c != 'm';
        } else if c == '\x1b' {
            in_escape = true;
        } else {
            width += 1;
        }
    }
    width
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_escaped_but_colour_is_kept() {
        let style = Style { color: true };
        let mut t = Table::new([Col::left("A"), Col::left("B")]);
        t.row([style.warn("x"), "evil\n\x1b[2J\x1b[31mred".to_string()]);
        let mut out = Vec::new();
        t.write(&mut out, &Style::plain()).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text:?}");
        assert_eq!(lines[1], "\x1b[33mx\x1b[0m  evil\\n\\x1b[2J\x1b[31mred");
    }

    #[test]
    fn colour_does_not_break_alignment() {
        let style = Style { color: true };
        let mut t = Table::new([Col::left("A"), Col::right("B")]);
        t.row([style.warn("x"), "10".to_string()]);
        t.row(["long".to_string(), "2".to_string()]);
        let mut out = Vec::new();
        t.write(&mut out, &Style::plain()).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "A      B");
        assert_eq!(lines[1], "\x1b[33mx\x1b[0m     10");
        assert_eq!(lines[2], "long   2");
    }
}
