//! A cell's settings on the host: its setup command, IRQ affinity, partition and load,
//! applied before a run and undone after it, in the reverse order.

use std::process::Stdio;
use std::sync::atomic::AtomicBool;

use jitterlab_cpuset::CpuSet;
use jitterlab_experiment::recipe::{IrqLevel, Load, Partition, Settings};
use jitterlab_host::child::child_command;
use jitterlab_host::irqs::IrqMap;
use jitterlab_host::partition::{apply_live, build_plan, MethodChoice, Request};
use jitterlab_host::{set_irq_affinity, Root};
use jitterlab_latency::load::{self, LoadSpec, Loads};

use crate::error::{Error, Result};
use crate::restore::{IrqBefore, StateDir};

/// What a cell changed, to undo after its run.
#[derive(Default)]
pub struct Applied {
    teardown: Option<String>,
    irqs: bool,
    partition: bool,
    loads: Option<Loads>,
    /// The CPUs left for everything else when a partition is on.
    pub housekeeping: Option<CpuSet>,
    /// The isolated CPUs when a partition is on.
    pub isolated: Option<CpuSet>,
    /// The IRQs whose masks the cell wrote (its IRQ setting, its partition's moves).
    pub irqs_written: Vec<u32>,
}

impl Applied {
    /// The processes of the cell's load (a command load), which are the experiment's
    /// own tools.
    pub fn load_pids(&self) -> Vec<u32> {
        self.loads.as_ref().map(Loads::pids).unwrap_or_default()
    }
}

/// Runs `command` with `sh -c`, its output to stderr; a failure names `what`.
pub fn shell(what: &str, command: &str) -> Result<()> {
    let status = child_command("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .map_err(|e| Error::workload(format!("{what} `{command}`"), e))?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::workload(format!("{what} `{command}`"), status))
    }
}

/// Applies `settings`; on an error, what was applied so far is undone before it
/// returns.
pub fn apply(
    root: &Root,
    state: &StateDir,
    settings: &Settings,
    cancel: &AtomicBool,
) -> Result<Applied> {
    let mut applied = Applied::default();
    match apply_into(root, state, settings, cancel, &mut applied) {
        Ok(()) => Ok(applied),
        Err(e) => {
            let _ = undo(root, state, applied);
            Err(e)
        }
    }
}

fn apply_into(
    root: &Root,
    state: &StateDir,
    settings: &Settings,
    cancel: &AtomicBool,
    applied: &mut Applied,
) -> Result<()> {
    if let Some(s) = &settings.setup {
        applied.teardown = s.teardown.clone();
        if let Some(cmd) = &s.setup {
            shell(&format!("setup {:?}", s.name), cmd)?;
        }
    }
    if let IrqLevel::Set { selector, cpus } = &settings.irq {
        let map = IrqMap::read(root)?;
        let irqs = map.select(selector)?;
        if irqs.is_empty() {
            return Err(Error::Invalid(format!("no IRQ matches {selector:?}")));
        }
        let before: Vec<IrqBefore> = irqs
            .iter()
            .filter_map(|i| {
                i.affinity().map(|a| IrqBefore {
                    irq: i.irq,
                    affinity: a.clone(),
                })
            })
            .collect();
        state.record_irqs(&before)?;
        applied.irqs = true;
        applied.irqs_written.extend(irqs.iter().map(|i| i.irq));
        for irq in irqs {
            let change = set_irq_affinity(root, irq, cpus);
            if let Some(error) = change.error {
                return Err(Error::Invalid(format!(
                    "IRQ {} ({}) to CPU {cpus}: {error}",
                    irq.irq,
                    irq.label()
                )));
            }
        }
    }
    if let Partition::On(cpus) = &settings.partition {
        let req = Request {
            cpus: cpus.clone(),
            method: MethodChoice::Auto,
            excludes: Vec::new(),
            move_init: false,
            stop_irqbalance: false,
            sysctl: false,
            idle_latency_us: None,
            state_dir: state.partition_dir(),
            privileged: jitterlab_host::running_as_root(),
        };
        let plan = build_plan(root, &req)?;
        if !plan.ok() {
            let failed: Vec<String> = plan
                .checks
                .iter()
                .filter(|c| !c.ok)
                .map(|c| format!("{}: {}", c.name, c.detail))
                .collect();
            return Err(Error::Invalid(format!(
                "cannot isolate CPU {cpus}: {}",
                failed.join("; ")
            )));
        }
        applied.partition = true;
        applied
            .irqs_written
            .extend(plan.steps.iter().filter_map(|s| s.action.irq()));
        let report = apply_live(root, &plan, &state.partition_dir(), cancel)?;
        if !report.applied || report.failures() > 0 {
            return Err(Error::Invalid(format!(
                "isolating CPU {cpus} failed ({} of its steps); the partition is rolled back",
                report.failures()
            )));
        }
        applied.housekeeping = Some(plan.housekeeping.clone());
        applied.isolated = Some(cpus.clone());
    }
    let spec = match &settings.load {
        Load::None => None,
        Load::Cpu(n) => Some(LoadSpec::Cpu(*n)),
        Load::Io(n) => Some(LoadSpec::Io(*n)),
        Load::Mem(n) => Some(LoadSpec::Mem(*n)),
        Load::Cmd(c) => Some(LoadSpec::Cmd(c.clone())),
    };
    if let Some(spec) = spec {
        // Inside a partition the loads stay on the housekeeping CPUs, as every other
        // task does.
        let cpus = match &applied.housekeeping {
            Some(h) => h.clone(),
            None => jitterlab_host::cpus::online(root)?,
        };
        applied.loads = Some(load::start(&[spec], &cpus)?);
        // Let the generators reach their steady state before measuring.
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    Ok(())
}

impl Applied {
    /// Stops the cell's load, if it has one: what each generator did, a command's output
    /// and whether it ended before it was stopped.
    pub fn stop_loads(&mut self) -> Vec<load::LoadResult> {
        self.loads.take().map(Loads::stop).unwrap_or_default()
    }
}

/// Undoes what [`apply`] did, in the reverse order; every undo is tried, and the
/// failures are returned in words.
pub fn undo(root: &Root, state: &StateDir, applied: Applied) -> Vec<String> {
    let mut failed = Vec::new();
    if let Some(loads) = applied.loads {
        loads.stop();
    }
    if applied.partition {
        match state.revert_partition() {
            Ok(Some(r)) if r.failures() > 0 => failed.push(format!(
                "reverting the partition of CPU {}: {} undo steps failed",
                r.cpus,
                r.failures()
            )),
            Ok(_) => {}
            Err(e) => failed.push(format!("reverting the partition: {e}")),
        }
    }
    if applied.irqs {
        match state.restore_irqs(root) {
            Ok(f) => failed.extend(f),
            Err(e) => failed.push(format!("restoring IRQ affinities: {e}")),
        }
    }
    if let Some(cmd) = applied.teardown {
        if let Err(e) = shell("teardown", &cmd) {
            failed.push(e.to_string());
        }
    }
    failed
}
