//! `jitterlab verify`: per CPU, the verdict and what still disturbs it.

use std::io::{self, Write};

use jitterlab_host::partition::{Isolation, Level, Observation, VerifyReport};

use crate::units::wrap;
use crate::units::{duration_ns, names};
use crate::{Render, Style};

fn verdict(style: &Style, v: Isolation) -> String {
    match v {
        Isolation::Isolated => style.good("ISOLATED"),
        Isolation::Noisy => {
            style.warn("NOISY: isolated, with noise that only boot options or the kernel remove")
        }
        Isolation::NotIsolated => style.bad("NOT ISOLATED"),
    }
}

fn write_findings(out: &mut dyn Write, style: &Style, findings: &[Observation]) -> io::Result<()> {
    for f in findings {
        let tag = match f.level {
            Level::Fail => style.bad("FAIL"),
            Level::Warn => style.warn("warn"),
            Level::Info => style.dim("info"),
        };
        let mut lines = wrap(&f.what, "", 88).into_iter();
        writeln!(out, "  {tag}  {}", lines.next().unwrap_or_default())?;
        for l in lines {
            writeln!(out, "        {l}")?;
        }
        if let Some(fix) = &f.fix {
            for l in wrap(&format!("fix: {fix}"), "        ", 96) {
                writeln!(out, "{}", style.dim(&l))?;
            }
        }
    }
    Ok(())
}

impl Render for VerifyReport {
    const SCHEMA: &'static str = "jitterlab.verify";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        writeln!(
            out,
            "{} CPU {} ({}{}), {}",
            style.bold("verify"),
            self.cpus,
            self.source,
            self.partition
                .as_ref()
                .map(|p| format!(", method {}", p.method.name()))
                .unwrap_or_default(),
            if self.interval_ns == 0 {
                "one reading, no window".to_string()
            } else {
                format!("window {}", duration_ns(self.interval_ns))
            }
        )?;
        if let Some(p) = &self.partition {
            for r in &p.runs {
                writeln!(
                    out,
                    "started with jitterlab run: pid {} on CPU {}: {}",
                    r.pid,
                    r.cpus,
                    r.argv.join(" ")
                )?;
            }
        }
        for v in &self.verdicts {
            writeln!(out)?;
            writeln!(
                out,
                "{} {}",
                style.bold(&format!("CPU {}:", v.cpu)),
                verdict(style, v.verdict)
            )?;
            write_findings(out, style, &v.findings)?;
            let counts = |c: &[jitterlab_host::partition::Count]| -> Vec<String> {
                c.iter()
                    .map(|c| {
                        if self.interval_ns > 0 {
                            format!("{} {} ({:.0}/s)", c.name, c.count, c.per_s)
                        } else {
                            format!("{} {}", c.name, c.count)
                        }
                    })
                    .collect()
            };
            if !v.interrupts.is_empty() {
                writeln!(
                    out,
                    "  interrupts here: {}",
                    names(&counts(&v.interrupts), 10)
                )?;
            }
            if !v.softirqs.is_empty() {
                writeln!(
                    out,
                    "  softirqs here:   {}",
                    names(&counts(&v.softirqs), 10)
                )?;
            }
            let ran: Vec<String> = v
                .ran
                .iter()
                .map(|t| {
                    format!(
                        "{} [{}] x{} {}",
                        t.comm,
                        t.class,
                        t.runs,
                        duration_ns(t.runtime_ns)
                    )
                })
                .collect();
            if !ran.is_empty() {
                writeln!(out, "  ran here:        {}", names(&ran, 10))?;
            }
        }
        if !self.machine.is_empty() {
            writeln!(out)?;
            writeln!(out, "{}", style.bold("machine"))?;
            write_findings(out, style, &self.machine)?;
        }
        writeln!(out)?;
        writeln!(out, "verdict: {}", verdict(style, self.verdict))
    }
}
