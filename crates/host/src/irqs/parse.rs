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

/// How many numbered and named rows /proc/interrupts text has, at most: what the
/// readers allocate for at once (a Vec grown by doubling holds up to three times its
/// rows while it moves).
pub(crate) fn count_rows(text: &str) -> (usize, usize) {
    let (mut numbered, mut named) = (0, 0);
    for line in text.lines().skip(1) {
        let label = line.split_once(':').map_or("", |(l, _)| l.trim());
        if !label.is_empty() && label.bytes().all(|b| b.is_ascii_digit()) {
            numbered += 1;
        } else if !line.trim().is_empty() {
            named += 1;
        }
    }
    (numbered, named)
}

/// Reads the rows of /proc/interrupts text, each to `f` as it is read; returns the
/// CPUs of the header.
pub(crate) fn interrupt_rows<'a>(
    path: &Path,
    text: &'a str,
    mut f: impl FnMut(Row<'a>),
) -> Result<Vec<u32>> {
    let mut lines = text.lines();
    let cpus = parse_header(path, lines.next().unwrap_or(""))?;
    let n = cpus.len();
    for (i, line) in lines.enumerate() {
        let lineno = i + 2;
        if line.trim().is_empty() {
            continue;
        }
        let (label, mut counts, rest) = split_row(path, lineno, line, &cpus)?;
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
    Ok(cpus)
}

/// Parses /proc/interrupts text.
pub fn parse_interrupts(path: &Path, text: &str) -> Result<Interrupts> {
    let (numbered, named) = count_rows(text);
    let mut irqs = Vec::with_capacity(numbered);
    let mut counters = Vec::with_capacity(named);
    let cpus = interrupt_rows(path, text, |row| match row {
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
    Ok((cpus, irqs, counters))
}

/// Parses /proc/softirqs text.
pub fn parse_softirqs(path: &Path, text: &str) -> Result<(Vec<u32>, Vec<Counter>)> {
    let mut lines = text.lines();
    let cpus = parse_header(path, lines.next().unwrap_or(""))?;
    let mut rows = Vec::new();
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (name, mut counts, rest) = split_row(path, i + 2, line, &cpus)?;
        if !rest.is_empty() || counts.is_empty() {
            return Err(Error::parse(
                path,
                i + 2,
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
        assert_eq!(count_rows(text), (2, 3));
    }
}
