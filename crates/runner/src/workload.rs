//! The recipe's `[workload]`: a process under test that runs through each run.

use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};

use jitterlab_cpuset::CpuSet;
use jitterlab_host::child::{child_command, end_child};

use crate::error::{Error, Result};

/// A running workload.
pub struct Workload {
    child: Child,
}

impl Workload {
    /// Starts `command` with `sh -c` in a process group of its own, on `cpus` when
    /// given (its threads and children inherit them).
    pub fn start(command: &str, cpus: Option<&CpuSet>) -> Result<Workload> {
        // A simple command replaces the shell, so that its pid is the workload's.
        let line = if command.contains([';', '&', '|', '\n', '(', '`', '$']) {
            command.to_string()
        } else {
            format!("exec {command}")
        };
        let mut cmd = child_command("sh");
        cmd.arg("-c")
            .arg(line)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .process_group(0);
        crate::place::pre_exec_affinity(&mut cmd, cpus);
        let child = cmd
            .spawn()
            .map_err(|e| Error::workload(format!("the workload `{command}`"), e))?;
        Ok(Workload { child })
    }

    /// Its process id (the command's, or the shell's for a compound command).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Ends it and everything it started.
    pub fn stop(&mut self) {
        let _ = end_child(&mut self.child, true);
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        self.stop();
    }
}
