//! Every change a cell makes to the host, written down before it is made, and undone
//! after the run, on Ctrl-C and, after a crash, by the next experiment.
//!
//! Two records live in the experiment's state directory (`/run/jitterlab/experiment`,
//! a tmpfs gone at reboot with the state it describes):
//!
//! - `irq.json`: the IRQ affinities a cell changed, each with the value it had, written
//!   and `fsync`ed before the first write;
//! - `partition/`: the partition journal of `jitterlab isolate`, undone by the same
//!   revert as `jitterlab revert`.
//!
//! [`recover`] undoes whatever a previous experiment left there.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use jitterlab_cpuset::CpuSet;
use jitterlab_host::irqs::PutBack;
use jitterlab_host::partition::{revert, Difference, LiveSystem, RevertReport, Snapshot};
use jitterlab_host::Root;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One IRQ's affinity before a cell changed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqBefore {
    /// The IRQ.
    pub irq: u32,
    /// Its `smp_affinity_list` before.
    pub affinity: CpuSet,
}

/// The experiment's state directory and what is recorded there.
#[derive(Clone, Debug)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    /// The experiment's records under `state_dir` (`/run/jitterlab`).
    pub fn new(state_dir: &Path) -> StateDir {
        StateDir {
            dir: state_dir.join("experiment"),
        }
    }

    /// The directory of the partition journal.
    pub fn partition_dir(&self) -> PathBuf {
        self.dir.join("partition")
    }

    fn irq_file(&self) -> PathBuf {
        self.dir.join("irq.json")
    }

    /// Records the IRQ affinities about to change, durably, before they change.
    pub fn record_irqs(&self, before: &[IrqBefore]) -> Result<()> {
        let path = self.irq_file();
        let io = |e| Error::Io {
            path: path.display().to_string(),
            cause: e,
        };
        fs::create_dir_all(&self.dir).map_err(io)?;
        let text = serde_json::to_string(before).map_err(|e| Error::Io {
            path: path.display().to_string(),
            cause: e.into(),
        })?;
        let mut f = fs::File::create(&path).map_err(io)?;
        f.write_all(text.as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)
    }

    /// Writes the recorded IRQ affinities back and forgets them; what could not be
    /// restored is returned (the record is kept then, for the next try).
    pub fn restore_irqs(&self, root: &Root) -> Result<Vec<String>> {
        let path = self.irq_file();
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(Error::Io {
                    path: path.display().to_string(),
                    cause: e,
                })
            }
        };
        // A torn file (a crash while writing it) was written before any change.
        let before: Vec<IrqBefore> = serde_json::from_str(&text).unwrap_or_default();
        let mut failed = Vec::new();
        for b in &before {
            let file = format!("/proc/irq/{}/smp_affinity_list", b.irq);
            let current = root.read_cpu_list_opt(&file).ok().flatten();
            if current.as_ref() == Some(&b.affinity) {
                continue;
            }
            if let Err(e) = root.write(&file, &b.affinity.to_string()) {
                // An IRQ that went away needs nothing.
                if root.exists(&file) {
                    failed.push(format!("IRQ {} back to {}: {e}", b.irq, b.affinity));
                }
            }
        }
        if failed.is_empty() {
            fs::remove_file(&path).map_err(|e| Error::Io {
                path: path.display().to_string(),
                cause: e,
            })?;
        }
        Ok(failed)
    }

    /// Reverts the partition journal, if there is one.
    pub fn revert_partition(&self) -> Result<Option<RevertReport>> {
        Ok(revert(&mut LiveSystem::new(), &self.partition_dir())?)
    }

    /// Undoes what an earlier experiment left (it crashed or was killed): the IRQ
    /// affinities and the partition. Returns what was done, in words.
    pub fn recover(&self, root: &Root) -> Result<Vec<String>> {
        let mut done = Vec::new();
        if self.irq_file().exists() {
            let failed = self.restore_irqs(root)?;
            if !failed.is_empty() {
                return Err(Error::Invalid(format!(
                    "cannot restore the IRQ affinities an earlier experiment changed ({}): {}",
                    self.irq_file().display(),
                    failed.join("; ")
                )));
            }
            done.push("restored the IRQ affinities an earlier experiment changed".to_string());
        }
        if let Some(report) = self.revert_partition()? {
            if report.failures() > 0 {
                return Err(Error::Invalid(format!(
                    "cannot revert the partition an earlier experiment left in {}: run \
                     `jitterlab revert --state-dir {}`",
                    report.journal,
                    self.partition_dir().display()
                )));
            }
            done.push(format!(
                "reverted the partition of CPU {} an earlier experiment (pid {}) left",
                report.cpus, report.isolated_by
            ));
        }
        Ok(done)
    }
}

/// How long an IRQ is given to move to the CPU it is pinned to: an edge IRQ moves when
/// it next fires.
const MOVE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Puts back the IRQs among `written` (those whose masks the cells wrote) whose mask
/// the experiment restored but whose effective CPU it moved (a cell narrowed the mask;
/// widened back, the kernel left the IRQ where the narrow one put it): pin, wait for
/// the move, widen (`jitterlab_host::irqs::restore_effective`). An IRQ no cell touched
/// is the kernel's to move, and left alone. What was put back is said in `notes`; what
/// could not be is a difference left over, and the experiment ends non-zero.
pub fn effective_cpus(
    root: &Root,
    before: &Snapshot,
    now: &Snapshot,
    written: &BTreeSet<u32>,
    notes: &mut Vec<String>,
) -> Vec<Difference> {
    let mut left = Vec::new();
    for m in before.effective_moves(now, written) {
        let what = format!("IRQ {} effective_affinity_list", m.irq);
        let left_over = |after: String| Difference {
            what: what.clone(),
            before: m.before.to_string(),
            after,
        };
        // x86 delivers an IRQ to one CPU: that one is put back; a wider effective set
        // (other architectures) is left to the kernel, and said.
        let (Some(cpu), 1) = (m.before.first(), m.before.len()) else {
            left.push(left_over(m.now.to_string()));
            continue;
        };
        match jitterlab_host::irqs::restore_effective(root, m.irq, cpu, &m.affinity, MOVE_WAIT) {
            Ok(PutBack {
                effective: Some(after),
                ..
            }) if after == m.before => notes.push(format!(
                "IRQ {}: put back on CPU {cpu} (its mask {} was restored, but it had stayed on CPU {})",
                m.irq, m.affinity, m.now
            )),
            Ok(PutBack { effective, .. }) => left.push(left_over(format!(
                "{} (it did not move back to CPU {cpu} within {} s: did it fire?)",
                effective.map_or_else(|| "-".to_string(), |a| a.to_string()),
                MOVE_WAIT.as_secs()
            ))),
            Err(e) => left.push(left_over(format!("{} (putting it back: {e})", m.now))),
        }
    }
    left
}
