//! `show tasks`.

use std::io::{self, Write};

use jitterlab_host::tasks::Task;
use jitterlab_host::TaskList;

use super::kind;
use crate::units::{cpu_time, escape, names, opt};
use crate::{Col, Render, Style, Table};

/// Longest command line shown in text; JSON has it whole.
const MAX_COMMAND: usize = 72;

fn task_row(t: &Task, threads: bool) -> Vec<String> {
    let mut cells = vec![t.pid.to_string()];
    if threads {
        cells.push(t.tid.to_string());
    }
    let cmdline = t.cmdline.as_ref().map(|c| c.replace(char::is_control, " "));
    let name = match (&cmdline, threads) {
        (Some(c), false) if c.chars().count() > MAX_COMMAND => {
            format!("{}...", c.chars().take(MAX_COMMAND - 3).collect::<String>())
        }
        (Some(c), false) if !c.is_empty() => c.clone(),
        _ if t.kind.is_kthread() => format!("[{}]", escape(&t.comm)),
        _ => escape(&t.comm),
    };
    cells.extend([
        t.policy.short().to_string(),
        if t.policy.is_realtime() {
            t.rt_priority.to_string()
        } else {
            "-".into()
        },
        if t.policy.is_realtime() {
            "-".into()
        } else {
            t.nice.to_string()
        },
        t.state.to_string(),
        t.allowed.to_string(),
        t.last_cpu.to_string(),
        opt(t.cpuset.as_deref()),
        cpu_time(t.cpu_time_ns),
        kind(t.kind).to_string(),
        name,
    ]);
    cells
}

impl Render for TaskList {
    const SCHEMA: &'static str = "jitterlab.show.tasks";

    fn text(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let mut cols = vec![Col::right("PID")];
        if self.threads {
            cols.push(Col::right("TID"));
        }
        cols.extend([
            Col::left("POL"),
            Col::right("RTPRIO"),
            Col::right("NI"),
            Col::left("S"),
            Col::left("ALLOWED"),
            Col::right("LAST"),
            Col::left("CPUSET"),
            Col::left("TIME"),
            Col::left("KIND"),
            Col::left(if self.threads { "COMM" } else { "COMMAND" }),
        ]);
        let mut t = Table::new(cols);
        for task in &self.tasks {
            t.row(task_row(task, self.threads));
        }
        t.write(out, style)?;
        if let (Some(pid), Some(groups)) = (self.pid, &self.mask_groups) {
            if groups.len() > 1 {
                writeln!(out)?;
                writeln!(
                    out,
                    "{}",
                    style.warn(&format!(
                        "warning: the threads of process {pid} do not share one CPU mask:"
                    ))
                )?;
                for g in groups {
                    let tids: Vec<String> = g.tids.iter().map(u32::to_string).collect();
                    writeln!(
                        out,
                        "  {:<12} {} thread(s): {}",
                        g.allowed.to_string(),
                        g.tids.len(),
                        names(&tids, 12)
                    )?;
                }
                writeln!(
                    out,
                    "  `taskset -p` changes one thread only; `jitterlab pin CPUS -p {pid}` moves them all."
                )?;
            }
        }
        Ok(())
    }
}
