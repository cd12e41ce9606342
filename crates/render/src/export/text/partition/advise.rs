//! `jitterlab advise`: the boot options of a partition and what each does.

use std::io::{self, Write};

use jitterlab_host::partition::Advice;

use crate::units::wrap;
use crate::{Col, Render, Style, Table};

impl Render for Advice {
    const SCHEMA: &'static str = "jitterlab.advise";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        writeln!(
            out,
            "{} CPU {} at boot, everything else on CPU {}",
            style.bold("isolate"),
            self.cpus,
            self.housekeeping
        )?;
        writeln!(out)?;
        writeln!(out, "add to the kernel command line:")?;
        writeln!(out, "  {}", style.good(&self.cmdline))?;
        writeln!(out)?;
        let yes_no = |b: Option<bool>| match b {
            Some(true) => "yes".to_string(),
            Some(false) => style.bad("NO"),
            None => "unknown".to_string(),
        };
        let mut t = Table::new([
            Col::left("OPTION"),
            Col::left(""),
            Col::left("NEEDS"),
            Col::left("THIS KERNEL HAS IT"),
            Col::left("BOOTED WITH IT"),
        ]);
        for p in &self.params {
            t.row([
                p.param.clone(),
                if p.optional {
                    "optional".into()
                } else {
                    String::new()
                },
                p.needs.clone().unwrap_or_else(|| "-".into()),
                yes_no(p.supported),
                if p.present {
                    style.good("yes")
                } else {
                    "no".into()
                },
            ]);
        }
        t.write(out, style)?;
        writeln!(out)?;
        for p in &self.params {
            writeln!(out, "{}", style.bold(&p.param))?;
            for l in wrap(&p.what, "  ", 96) {
                writeln!(out, "{l}")?;
            }
        }
        writeln!(out)?;
        for h in &self.how {
            for (i, l) in wrap(h, "  ", 96).into_iter().enumerate() {
                writeln!(out, "{}{}", if i == 0 { "-" } else { " " }, &l[1..])?;
            }
        }
        writeln!(out)?;
        writeln!(out, "without a reboot:")?;
        for r in &self.runtime {
            for l in wrap(r, "  ", 96) {
                writeln!(out, "{l}")?;
            }
        }
        writeln!(
            out,
            "kernel configuration: {}",
            self.kernel_config.as_deref().unwrap_or("not readable")
        )?;
        writeln!(out, "booted with: {}", self.current)?;
        for w in &self.warnings {
            writeln!(out, "{}", style.warn(&format!("warning: {w}")))?;
        }
        Ok(())
    }
}
