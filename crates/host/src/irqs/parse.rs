//! Text parsers of /proc/interrupts and /proc/softirqs.

use std::path::Path;

use crate::error::{Error, Result};
use crate::irqs::desc::Desc;
use crate::irqs::{Counter, Irq};

/// Parses the CPU header of /proc/interrupts or /proc/softirqs: `CPU0 CPU1 ...`.
pub(crate) fn parse_header(path: &Path, line: &str) -> Result<Vec<u32>> {
    let cpus: Option<Vec<u32>> = line
        .split_whitespace()
        .map(|t| t.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect();
    match cpus {
        Some(c) if !c.is_empty() => {
            // The kernel prints a column per online CPU, in ascending order.
            if let Some(w) = c.windows(2).find(|w| w[1] <= w[0]) {
                return Err(Error::parse(
                    path,
                    1,
                    "CPU columns in ascending order, each CPU once",
                    &format!("CPU{} after CPU{}", w[1], w[0]),
                ));
            }
            Ok(c)
        }
        _ => Err(Error::parse(
            path,
            1,
            "a header of CPU columns (CPU0 CPU1 ...)",
            line,
        )),
    }
}

/// Splits `label: n n n rest` into the label, up to one count per CPU of `cpus` and the
/// rest. A number where a count stands that is not one (above 2^64 - 1, negative) is an
/// error naming its CPU, not the start of the description.
fn split_row<'a>(
    path: &Path,
    lineno: usize,
    line: &'a str,
    cpus: &[u32],
) -> Result<(&'a str, Vec<u64>, &'a str)> {
    let Some((label, mut rest)) = line.split_once(':') else {
        return Err(Error::parse(path, lineno, "a row 'LABEL: counts...'", line));
    };
    let mut counts = Vec::with_capacity(cpus.len());
    while counts.len() < cpus.len() {
        let trimmed = rest.trim_start();
        let end = trimmed
            .find(|c: char| c.is_whitespace())
            .unwrap_or(trimmed.len());
        let token = &trimmed[..end];
        let digits = token.strip_prefix(['-', '+']).unwrap_or(token);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        match token.parse::<u64>() {
            Ok(n) if !token.starts_with('+') => {
                counts.push(n);
                rest = &trimmed[end..];
            }
            _ => {
                return Err(Error::parse(
                    path,
                    lineno,
                    format!(
                        "the count of CPU{} (column {}) to be a number from 0 to {}",
                        cpus[counts.len()],
                        counts.len() + 1,
                        u64::MAX
                    ),
                    token,
                ))
            }
        }
    }
    Ok((label.trim(), counts, rest.trim()))
}

/// An IRQ number: a label of digits only must fit the kernel's `unsigned int`.
fn irq_number(path: &Path, lineno: usize, label: &str) -> Result<Option<u32>> {
    let digits = label.strip_prefix('-').unwrap_or(label);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    match label.parse::<u32>() {
        Ok(n) => Ok(Some(n)),
        Err(_) => Err(Error::parse(
            path,
            lineno,
            "an IRQ number from 0 to 4294967295",
            label,
        )),
    }
}

type Interrupts = (Vec<u32>, Vec<Irq>, Vec<Counter>);

/// A row of /proc/interrupts below the header, checked, its counts one per CPU column
/// (or one machine-wide count).
pub(crate) enum Row<'a> {
    /// A numbered row: a device IRQ, with the text after its counts.
    Irq {
        number: u32,
        counts: Vec<u64>,
        rest: &'a str,
    },
    /// A named row (LOC, RES, ERR, ...).
    Named {
        name: &'a str,
        counts: Vec<u64>,
        per_cpu: bool,
        description: &'a str,
    },
}

/// The most rows read from /proc/interrupts or /proc/softirqs (which has ten): a table
/// with more is refused at the row past it, before any row is stored.
///
/// A row of /proc/interrupts is an IRQ with a handler (or a named counter, a few dozen
/// of them). The kernel's own bound on IRQ numbers is looser than this: `NR_IRQS + 8196`
/// until Linux 6.5 (x86's `NR_IRQS` is 256 + 64 per `NR_CPUS`, so 532,740 with
/// `CONFIG_MAXSMP`'s 8192 CPUs; arm64's is 64, so 8260), and `INT_MAX` since (commit
/// 721255b9826b, the descriptors in a maple tree, for arm64 servers whose GICv4.1 gives
/// virtual machines interrupts of their own: 256 of them made some 128,000 IRQs, whose
/// file on a server of 24 CPUs or more is over the 32 MiB read anyway). 300,000 is
/// over twice that, and from 11 CPU columns on [`MAX_COUNTS`] is the tighter bound: a
/// file with more rows is none a kernel wrote for a machine that exists.
pub const MAX_IRQ_ROWS: usize = 300_000;

/// The most counts stored from /proc/interrupts or /proc/softirqs in all: rows times CPU
/// columns, the zeros that pad a short row included. The kernel prints every count in
/// at least 11 characters (`"%10u "`, `" %10u"`), so a file of more counts than this
/// (3 Mi, 24 MiB as `u64`) is longer than the 32 MiB ([`READ_LIMIT`]) read of it: a
/// table that holds more is refused at the row past it, before any row is stored.
///
/// [`READ_LIMIT`]: crate::READ_LIMIT
pub const MAX_COUNTS: usize = 3 << 20;

/// Which of the two tables a text is: their rows differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// /proc/interrupts: numbered rows (IRQs) and named ones, some machine-wide.
    Interrupts,
    /// /proc/softirqs: named rows, every one per CPU.
    Softirqs,
}

impl Kind {
    fn file(self) -> &'static str {
        match self {
            Kind::Interrupts => "/proc/interrupts",
            Kind::Softirqs => "/proc/softirqs",
        }
    }

    fn rows(self) -> &'static str {
        match self {
            Kind::Interrupts => "IRQ rows",
            Kind::Softirqs => "softirq rows",
        }
    }
}

/// A table's CPU columns and how many rows it has of each kind, measured within
/// [`MAX_IRQ_ROWS`] and [`MAX_COUNTS`] before any row is stored: the only way to its
/// rows ([`interrupt_rows`], [`softirqs_of`]), so that no reader skips the bounds.
pub(crate) struct Table {
    /// The CPUs of the header, one per count column.
    pub cpus: Vec<u32>,
    /// Rows whose label is a number (IRQs).
    pub numbered: usize,
    /// The other rows (LOC, ERR, ..., every softirq).
    pub named: usize,
}

/// The CPU columns of a table's header (its first line).
pub(crate) fn header(path: &Path, text: &str) -> Result<Vec<u32>> {
    parse_header(path, text.lines().next().unwrap_or(""))
}

/// Counts the rows of `text` below its header, whose columns are `cpus`, and the counts
/// they would store (padded to a count per column, or one for a machine-wide row of
/// /proc/interrupts: a named row with one word after its colon): past [`MAX_IRQ_ROWS`]
/// rows or [`MAX_COUNTS`] counts, an error naming the line. Stores nothing; a row that
/// does not parse is left to the reading that follows.
pub(crate) fn measure(path: &Path, text: &str, cpus: Vec<u32>, kind: Kind) -> Result<Table> {
    let n = cpus.len();
    let (mut numbered, mut named, mut counts) = (0usize, 0usize, 0usize);
    for (i, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let lineno = i + 1;
        let rows = numbered + named + 1;
        if rows > MAX_IRQ_ROWS {
            return Err(Error::Oversized {
                path: path.into(),
                line: lineno,
                found: format!("more than {MAX_IRQ_ROWS} {}", kind.rows()),
                expected: format!("{} as a kernel writes it", kind.file()),
            });
        }
        let (label, after) = line.split_once(':').unwrap_or(("", line));
        let label = label.trim();
        let stored = if !label.is_empty() && label.bytes().all(|b| b.is_ascii_digit()) {
            numbered += 1;
            n
        } else {
            named += 1;
            let machine_wide =
                kind == Kind::Interrupts && after.split_whitespace().nth(1).is_none();
            if machine_wide {
                1
            } else {
                n
            }
        };
        counts += stored;
        if counts > MAX_COUNTS {
            return Err(Error::Oversized {
                path: path.into(),
                line: lineno,
                found: format!(
                    "more than {MAX_COUNTS} counts: {counts} in {rows} rows of {n} CPU \
                     columns, padding included"
                ),
                expected: format!(
                    "{} as a kernel writes it (every count in at least 11 characters: \
                     {MAX_COUNTS} take more than the {} MiB read of it)",
                    kind.file(),
                    crate::READ_LIMIT >> 20
                ),
            });
        }
    }
    Ok(Table {
        cpus,
        numbered,
        named,
    })
}

/// Reads the rows of /proc/interrupts text, measured as `table`, each to `f` as it is
/// read.
pub(crate) fn interrupt_rows<'a>(
    path: &Path,
    text: &'a str,
    table: &Table,
    mut f: impl FnMut(Row<'a>),
) -> Result<()> {
    let cpus = &table.cpus;
    let n = cpus.len();
    for (i, line) in text.lines().enumerate().skip(1) {
        let lineno = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (label, mut counts, rest) = split_row(path, lineno, line, cpus)?;
        if let Some(number) = irq_number(path, lineno, label)? {
            counts.resize(n, 0);
            f(Row::Irq {
                number,
                counts,
                rest,
            });
        } else {
            if label.is_empty() || counts.is_empty() {
                return Err(Error::parse(
                    path,
                    lineno,
                    "a name and at least one count",
                    line,
                ));
            }
            // ERR and MIS (x86), Err (ARM): one machine-wide count, no description.
            let per_cpu = !(counts.len() == 1 && n > 1 && rest.is_empty());
            if per_cpu {
                counts.resize(n, 0);
            }
            f(Row::Named {
                name: label,
                counts,
                per_cpu,
                description: rest,
            });
        }
    }
    Ok(())
}

/// Parses /proc/interrupts text. A table larger than a kernel writes ([`MAX_IRQ_ROWS`],
/// [`MAX_COUNTS`]) is an error before any row is stored.
pub fn parse_interrupts(path: &Path, text: &str) -> Result<Interrupts> {
    let table = measure(path, text, header(path, text)?, Kind::Interrupts)?;
    interrupts_of(path, text, table)
}

/// The IRQs and named rows of /proc/interrupts text measured as `table`.
pub(crate) fn interrupts_of(path: &Path, text: &str, table: Table) -> Result<Interrupts> {
    let mut irqs = Vec::with_capacity(table.numbered);
    let mut counters = Vec::with_capacity(table.named);
    interrupt_rows(path, text, &table, |row| match row {
        Row::Irq {
            number,
            counts,
            rest,
        } => irqs.push(Irq::from_proc(number, counts, Desc::from_proc(rest))),
        Row::Named {
            name,
            counts,
            per_cpu,
            description,
        } => counters.push(Counter {
            name: name.to_string(),
            description: description.to_string(),
            counts,
            per_cpu,
            rates: None,
        }),
    })?;
    Ok((table.cpus, irqs, counters))
}

/// Parses /proc/softirqs text. A table larger than a kernel writes ([`MAX_IRQ_ROWS`],
/// [`MAX_COUNTS`]) is an error before any row is stored.
pub fn parse_softirqs(path: &Path, text: &str) -> Result<(Vec<u32>, Vec<Counter>)> {
    let table = measure(path, text, header(path, text)?, Kind::Softirqs)?;
    softirqs_of(path, text, table)
}

/// The rows of /proc/softirqs text measured as `table`.
pub(crate) fn softirqs_of(
    path: &Path,
    text: &str,
    table: Table,
) -> Result<(Vec<u32>, Vec<Counter>)> {
    let cpus = table.cpus;
    let mut rows = Vec::with_capacity(table.numbered + table.named);
    for (i, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let (name, mut counts, rest) = split_row(path, i + 1, line, &cpus)?;
        if !rest.is_empty() || counts.is_empty() {
            return Err(Error::parse(
                path,
                i + 1,
                "a softirq name and one count per CPU",
                line,
            ));
        }
        counts.resize(cpus.len(), 0);
        rows.push(Counter {
            name: name.to_string(),
            description: String::new(),
            counts,
            per_cpu: true,
            rates: None,
        });
    }
    Ok((cpus, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm_err_row_is_machine_wide() {
        let text =
            "      CPU0   CPU1\nIPI0:   10   12   Rescheduling interrupts\nErr:          0\n";
        let (_, _, rows) = parse_interrupts(Path::new("i"), text).unwrap();
        assert!(rows[0].per_cpu);
        assert!(!rows[1].per_cpu);
        assert_eq!(rows[1].name, "Err");
    }

    #[test]
    fn rows_are_counted_before_they_are_read() {
        let text = "  CPU0\n 0: 1 IO-APIC 2-edge timer\n\n 1: 2\nNMI: 0 Non-maskable\nx\n-1: 3\n";
        let path = Path::new("i");
        let t = measure(path, text, header(path, text).unwrap(), Kind::Interrupts).unwrap();
        assert_eq!((t.cpus, t.numbered, t.named), (vec![0], 2, 3));
    }
}
