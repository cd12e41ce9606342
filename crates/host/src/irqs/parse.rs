//! Text parsers of /proc/interrupts and /proc/softirqs.

use std::path::Path;

use crate::error::{Error, Result};
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

/// Parses /proc/interrupts text.
pub fn parse_interrupts(path: &Path, text: &str) -> Result<Interrupts> {
    let mut lines = text.lines();
    let cpus = parse_header(path, lines.next().unwrap_or(""))?;
    let n = cpus.len();
    let mut irqs = Vec::new();
    let mut counters = Vec::new();
    for (i, line) in lines.enumerate() {
        let lineno = i + 2;
        if line.trim().is_empty() {
            continue;
        }
        let (label, mut counts, rest) = split_row(path, lineno, line, &cpus)?;
        if let Some(number) = irq_number(path, lineno, label)? {
            counts.resize(n, 0);
            let (chip, hwirq, trigger, actions) = split_description(rest);
            irqs.push(Irq {
                irq: number,
                counts,
                rates: None,
                chip,
                hwirq,
                trigger,
                actions,
                affinity: None,
                effective: None,
                affinity_hint: None,
                node: None,
                pending_move: false,
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
            counters.push(Counter {
                name: label.to_string(),
                description: rest.to_string(),
                counts,
                per_cpu,
                rates: None,
            });
        }
    }
    Ok((cpus, irqs, counters))
}

/// Splits the text after the counts of a numbered row into chip, hwirq, flow
/// or trigger, and actions. Layouts differ by architecture:
///
/// - x86: `IO-APIC   5-edge      ACPI:Ged` (hwirq and flow joined by `-`)
/// - ARM: `GICv3  27 Level     arch_timer`, `Tegra PCIe MSI   0 Edge      eth0`
///
/// The chip name may hold spaces; it ends where the hwirq starts. Actions are
/// separated by `, `. /sys/kernel/irq/N, when present, overrides all of this.
fn split_description(rest: &str) -> (String, Option<String>, Option<String>, Vec<String>) {
    let is_num = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let x86 = |t: &str| {
        t.split_once('-')
            .is_some_and(|(h, f)| is_num(h) && !f.is_empty())
    };
    let level = |t: &str| t.eq_ignore_ascii_case("level") || t.eq_ignore_ascii_case("edge");
    // The tokens are looked at two at a time, with their byte offsets, never collected:
    // a row of millions of them would cost 16 bytes each.
    let offset = |t: &str| t.as_ptr() as usize - rest.as_ptr() as usize;
    let mut it = rest.split_whitespace().enumerate().peekable();
    let mut found = None;
    while let Some((i, t)) = it.next() {
        let next = it.peek().map(|(_, n)| *n);
        if i >= 1 && (x86(t) || (is_num(t) && next.is_some_and(level))) {
            found = Some((t, next));
            break;
        }
    }
    let Some((tok, next)) = found else {
        // Not a layout we know: keep the text as the chip, claim no actions.
        return (join_words(rest), None, None, Vec::new());
    };
    let chip = join_words(&rest[..offset(tok)]);
    let (hwirq, trigger, after) = match (tok.split_once('-'), next) {
        (Some((h, f)), _) if x86(tok) => (h.to_string(), f.to_lowercase(), tok),
        (_, Some(n)) => (tok.to_string(), n.to_lowercase(), n),
        (_, None) => unreachable!("an ARM hwirq is followed by its trigger"),
    };
    let actions = join_words(&rest[offset(after) + after.len()..])
        .split(", ")
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty())
        .collect();
    (chip, Some(hwirq), Some(trigger), actions)
}

/// The words of `s` joined by single spaces.
fn join_words(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
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
    fn description_with_several_actions() {
        let (chip, hwirq, trig, actions) =
            split_description("IO-APIC  16-fasteoi   ehci_hcd:usb1, i801_smbus");
        assert_eq!(chip, "IO-APIC");
        assert_eq!(hwirq.as_deref(), Some("16"));
        assert_eq!(trig.as_deref(), Some("fasteoi"));
        assert_eq!(actions, ["ehci_hcd:usb1", "i801_smbus"]);
    }
    #[test]
    fn description_layouts() {
        let d = split_description;
        assert_eq!(
            d("IR-PCI-MSI 327680-edge      xhci_hcd"),
            (
                "IR-PCI-MSI".into(),
                Some("327680".into()),
                Some("edge".into()),
                vec!["xhci_hcd".into()]
            )
        );
        assert_eq!(
            d("GICv3  27 Level     arch_timer"),
            (
                "GICv3".into(),
                Some("27".into()),
                Some("level".into()),
                vec!["arch_timer".into()]
            )
        );
        assert_eq!(
            d("Tegra PCIe MSI   0 Edge      eth0"),
            (
                "Tegra PCIe MSI".into(),
                Some("0".into()),
                Some("edge".into()),
                vec!["eth0".into()]
            )
        );
        let (chip, hwirq, _, actions) = d("IO-APIC   9-fasteoi");
        assert_eq!((chip.as_str(), hwirq.as_deref()), ("IO-APIC", Some("9")));
        assert!(actions.is_empty(), "an IRQ with no handler has no action");
        assert_eq!(d("weird"), ("weird".into(), None, None, vec![]));
    }
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
    fn description_of_x86_vector_row() {
        let (chip, _, _, actions) =
            split_description("IR-PCI-MSIX-0000:00:14.0    0-edge      xhci_hcd");
        assert_eq!(chip, "IR-PCI-MSIX-0000:00:14.0");
        assert_eq!(actions, ["xhci_hcd"]);
    }
}
